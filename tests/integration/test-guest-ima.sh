#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# iverd on a real kernel (issue 21 item 4): Debian's stock kernel in QEMU with
# swtpm as its TPM (lib-guest.sh), iverd on the kernel's resource manager
# (TCTI device:/dev/tpmrm0) with the SHIPPED iverd.conf (Pcr=auto), the
# kernel's real IMA in PCR 10. Each guest's quote and lists come back to the
# host and are checked there: tpm2_checkquote (signature, nonce, PCR digest),
# iverctl verify (OpenSSL), keylime_verify.py (Keylime's split and replay,
# every entry into PCR 10 in every bank).
#   1  stock kernel (no IMA policy: boot_aggregate only): iverd starts, its list
#      begins with the kernel's boot_aggregate line verbatim, the quote verifies
#      with every entry replayed; then a file changes: listed again, and the
#      runtime policy exported before the change (its old digest) rejects it
# The transcripts (first lines of the list, PCR 10 replayed, quote verified)
# are printed and saved to $IVER_GUEST_EVIDENCE when set.
# Needs root, qemu-system-x86_64, swtpm, busybox-static, cpio (skips with 77);
# the kernel package is fetched once into build/guest-cache.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-guest.sh
source "$here/lib-guest.sh"
VERIFY=$here/keylime_verify.py
BANKS=sha1,sha256
SEL=sha1:10+sha256:10

for t in python3 tpm2_checkquote openssl; do command -v $t >/dev/null || fail "$t not installed"; done
guest_init guest-ima
EVID=${IVER_GUEST_EVIDENCE:-}
[ -n "$EVID" ] && mkdir -p "$EVID"

js() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }

# check_quote DIR LIST NONCE: the quote verified on the host three ways, and the
# whole LIST replayed into PCR 10. Prints the transcript.
check_quote() {
        local q=$1 list=$2 nonce=$3 n
        tpm2_checkquote -u "$q/ak.pub.pem" -m "$q/quote.msg" -s "$q/quote.sig" -f "$q/pcrs.out" \
                -l "$SEL" -g sha256 -q "$nonce" >"$q/checkquote.out" 2>&1 ||
                { cat "$q/checkquote.out"; fail "tpm2_checkquote rejected the quote of $q"; }
        echo "tpm2_checkquote: signature, nonce and PCR 10 digest ($SEL) OK"
        "$IVERCTL" verify "$q" --nonce "$nonce" >"$q/verify.out" 2>&1 ||
                { cat "$q/verify.out"; fail "iverctl verify rejected $q"; }
        echo "iverctl verify: $(tail -1 "$q/verify.out")"
        python3 "$VERIFY" --pcr 10 --banks $BANKS --keylime-split "$list" "$q/pcrs.out" | tee "$q/keylime.out"
        n=$(wc -l <"$list")
        grep -q "^ACCEPTED" "$q/keylime.out" || fail "keylime_verify rejected $list"
        grep -q "replay of the first $n of $n entries" "$q/keylime.out" || fail "the quote does not replay all $n entries of $list"
}

# evidence NAME FILE…: the transcript of a case, printed and kept
evidence() {
        local name=$1; shift
        { for f in "$@"; do cat "$f"; done; } >"$D/$name.txt"
        [ -z "$EVID" ] || cp "$D/$name.txt" "$EVID/$name.txt"
}

step "1: stock kernel, shipped iverd.conf"
N1=$(openssl rand -hex 16)
N2=$(openssl rand -hex 16)
cat >"$D/stock.sh" <<EOF
set -e
K=/sys/kernel/security/ima
echo "== the kernel's list"; cat \$K/ascii_runtime_measurements
ret \$K/ascii_runtime_measurements kernel.txt
mkdir -p /opt/tree
for i in 1 2 3 4 5 6; do echo "file \$i" >/opt/tree/f\$i; done
echo "== iverd with the shipped iverd.conf (keys set:" \$(grep -c '^[A-Za-z]' /etc/iverd/iverd.conf) ")"
iverd_start || { echo "iverd exited with \$IVERD_RC"; cat /run/iverd.log; exit 1; }
iverctl settle --timeout 60
iverctl status --json >/tmp/status.json
ret /tmp/status.json
iverctl quote --nonce $N1 --out /tmp/q1 >/dev/null
cp /run/iverd/ascii_runtime_measurements /tmp/list1.txt
ret /tmp/list1.txt
ret_dir /tmp/q1
iverctl policy export --keylime --out /tmp/policy.json
ret /tmp/policy.json
echo "== /opt/tree/f3 changes"
echo changed >>/opt/tree/f3
iverctl settle --timeout 60
iverctl quote --nonce $N2 --out /tmp/q2 >/dev/null
cp /run/iverd/ascii_runtime_measurements /tmp/list2.txt
ret /tmp/list2.txt
ret_dir /tmp/q2
iverd_stop
cat /run/iverd.log
EOF
guest_run "$D/stock.sh" "$D/o1" || fail "the stock-kernel guest failed"
O=$D/o1
[ "$(wc -l <"$O/kernel.txt")" = 1 ] || fail "the stock kernel's list is not one line"
grep -Eq '^10 [0-9a-f]{40} ima-sig sha256:[0-9a-f]{64} boot_aggregate ?$' "$O/kernel.txt" ||
        fail "the kernel's list is not its boot_aggregate"
[ "$(js "$O/status.json" pcr)" = 10 ] || fail "Pcr=auto did not choose PCR 10"
[ "$(js "$O/status.json" pcr_shared_with_kernel)" = True ] || fail "PCR 10 not shared with the kernel's IMA"
[ "$(js "$O/status.json" desynced)" = False ] || fail "iverd is desynced on the stock kernel"
cmp -s <(head -1 "$O/list1.txt") "$O/kernel.txt" || fail "iverd's list does not begin with the kernel's boot_aggregate line"
[ "$(wc -l <"$O/list1.txt")" = 7 ] || fail "expected boot_aggregate + 6 files, got $(wc -l <"$O/list1.txt") lines"
{
        echo "# stock kernel ($(basename "$GUEST_KERNEL")), shipped iverd.conf: the served list"
        head -4 "$O/list1.txt"; echo "… $(wc -l <"$O/list1.txt") lines"
        check_quote "$O/q1" "$O/list1.txt" "$N1"
} | tee "$D/stock-1.txt"
evidence stock "$D/stock-1.txt"

step "1b: a changed file is listed, and the policy of its old digest rejects it"
old=$(awk '$5 == "/opt/tree/f3" { print $4 }' "$O/list1.txt")
new=$(awk '$5 == "/opt/tree/f3" { d = $4 } END { print d }' "$O/list2.txt")
[ -n "$old" ] && [ -n "$new" ] && [ "$old" != "$new" ] || fail "the change of /opt/tree/f3 is not listed ($old → $new)"
echo "/opt/tree/f3: $old → $new"
check_quote "$O/q2" "$O/list2.txt" "$N2" >/dev/null
echo "the list with the change replays PCR 10 (tpm2_checkquote, iverctl verify, keylime_verify)"
python3 -c "import json,sys; d=json.load(open(sys.argv[1]))['digests']; assert 'boot_aggregate' in d, list(d)" "$O/policy.json" ||
        fail "the exported policy lacks the kernel's boot_aggregate"
if python3 "$VERIFY" --pcr 10 --banks $BANKS --policy "$O/policy.json" "$O/list2.txt" "$O/q2/pcrs.out" >"$D/reject.out"; then
        cat "$D/reject.out"; fail "the changed file was accepted by the policy of its old digest"
fi
grep -E 'policy: entry|REJECTED' "$D/reject.out" | tee "$D/stock-2.txt"
grep -q "policy: entry .*/opt/tree/f3 ${new#sha256:}" "$D/reject.out" || fail "rejected, but not for /opt/tree/f3"
grep -q "^REJECTED: 1 entries not allowed" "$D/reject.out" || fail "more than the changed file was rejected"
evidence stock-changed "$D/stock-2.txt"

echo
echo "PASS"
