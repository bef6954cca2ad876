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
#      runtime policy exported before the change (its old digest) rejects it;
#      then, in the same boot, the kernel starts measuring while iverd runs
#      (the IMA policy "measure func=BPRM_CHECK" loaded, files executed): its
#      new entries are merged into iverd's list at their place in the extend
#      order, and the list replays PCR 10
#   2  a kernel measuring from before iverd starts (policy loaded, execs, then
#      iverd, then more execs): the list begins with the kernel's entries,
#      holds the later ones merged, and replays PCR 10
# The transcripts (first lines of the list, PCR 10 replayed, quote verified)
# are printed and saved to $IVER_GUEST_EVIDENCE when set.
# Needs root, qemu-system-x86_64, swtpm, busybox-static, cpio (skips with 77);
# the kernel package is fetched once into build/guest-cache.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The TPM's active banks (lib-guest.sh GUEST_PCR_BANKS): all four by default
# (sha1 and sha256, what most TPMs have, and sha384, sha512: banks Debian's
# kernel has no hash for when its IMA starts, so it pads SHA-1 into them);
# every one is quoted and replayed.
GUEST_PCR_BANKS=${GUEST_PCR_BANKS:-all}
# shellcheck source=lib-guest.sh
source "$here/lib-guest.sh"
VERIFY=$here/keylime_verify.py
BANKS=$GUEST_PCR_BANKS
[ "$BANKS" = all ] && BANKS=sha1,sha256,sha384,sha512
SEL=$(echo "$BANKS" | sed 's/,/:10+/g; s/$/:10/')

for t in python3 tpm2_checkquote openssl; do command -v $t >/dev/null || fail "$t not installed"; done
guest_init guest-ima
EVID=${IVER_GUEST_EVIDENCE:-}
[ -n "$EVID" ] && mkdir -p "$EVID"

js() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }

# check_merged KLIST LIST: the kernel's lines, in the kernel's order, are a
# subsequence of iverd's served list; prints the list's make-up (k: an entry
# of the kernel's, i: iverd's own).
check_merged() {
        python3 - "$1" "$2" <<'PY' || fail "the kernel's entries are not in iverd's list in the kernel's order"
import sys
k = open(sys.argv[1], "rb").read().splitlines()
s = open(sys.argv[2], "rb").read().splitlines()
j = 0
for x in k:
        while j < len(s) and s[j] != x:
                j += 1
        if j == len(s):
                print("not in the served list, or not in the kernel's order:", x.decode(errors="replace"))
                sys.exit(1)
        j += 1
ks = set(k)
print("the kernel's %d entries are in the served list of %d, in the kernel's order" % (len(k), len(s)))
print("served list (k: the kernel's entry, i: iverd's): " + "".join("k" if l in ks else "i" for l in s))
PY
}

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
        grep -E '^(Verified|PADDED)' "$q/verify.out" | sed 's/^/iverctl verify: /'
        grep -q '^Verified' "$q/verify.out" || fail "iverctl verify printed no Verified line for $q"
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

# In the guest: snap NAME NONCE: once nothing is pending, a quote, then the
# kernel's list, then iverd's served list (so the served list holds every
# kernel entry copied), status; all returned as NAME/.
cat >"$D/snap.sh" <<'EOF'
set -e
K=/sys/kernel/security/ima
settle() { # quietly: on the console iverctl settle draws a progress bar
        iverctl settle --timeout 90 >/tmp/settle.out 2>&1 || { cat /tmp/settle.out; return 1; }
}
snap() {
        settle
        sleep 1         # the kernel's new entries are looked for every 100 ms
        mkdir -p /tmp/$1
        iverctl quote --nonce $2 --out /tmp/$1 >/dev/null
        cp $K/ascii_runtime_measurements /tmp/$1/kernel.txt
        cp /run/iverd/ascii_runtime_measurements /tmp/$1/list.txt
        iverctl status --json >/tmp/$1/status.json
        ret_dir /tmp/$1
}
tools() { # FROM TO: new executables in /opt/bin, measured by iverd's policy
        i=$1
        while [ $i -le $2 ]; do
                printf '#!/bin/sh\necho tool %d\n' $i >/opt/bin/tool$i
                chmod 755 /opt/bin/tool$i
                i=$((i + 1))
        done
}
mkdir -p /opt/tree /opt/bin
for i in 1 2 3 4 5 6; do echo "file $i" >/opt/tree/f$i; done
EOF

# case_checks NAME DIR NONCE: the host's checks of a snap
snap_checks() {
        local o=$1 nonce=$2
        [ "$(js "$o/status.json" pcr)" = 10 ] || fail "$o: Pcr=auto did not choose PCR 10"
        [ "$(js "$o/status.json" pcr_shared_with_kernel)" = True ] || fail "$o: PCR 10 not shared with the kernel's IMA"
        [ "$(js "$o/status.json" desynced)" = False ] || fail "$o: iverd is desynced"
        [ "$(js "$o/status.json" evidence_broken)" = False ] || fail "$o: iverd's evidence is broken"
        check_merged "$o/kernel.txt" "$o/list.txt"
        check_quote "$o" "$o/list.txt" "$nonce"
        check_padded "$o"
}

# check_padded DIR: the banks the kernel pads (from its config: a hash not
# built in has no tfm when IMA starts; sha384 and sha512 come from
# CONFIG_CRYPTO_SHA512) are the banks iverd found padded (status
# banks_padded), those iverctl verify and keylime_verify replayed padded.
padded_expected() {
        local cfg b out=
        cfg=$(dirname "$GUEST_KERNEL")/config-$(basename "$GUEST_KERNEL" | sed 's/^vmlinuz-//')
        [ -r "$cfg" ] || { echo "?"; return; }
        for b in ${BANKS//,/ }; do
                case $b in
                sha384 | sha512) grep -q '^CONFIG_CRYPTO_SHA512=y' "$cfg" || out="$out $b" ;;
                esac
        done
        echo "${out# }"
}
check_padded() {
        local o=$1 want got v k
        want=$(padded_expected)
        got=$(python3 -c "import json,sys; print(' '.join(json.load(open(sys.argv[1]))['banks_padded']))" "$o/status.json")
        v=$(sed -n 's/^PADDED banks\? \([^:]*\):.*/\1/p' "$o/verify.out")
        k=$(sed -n 's/^PADDED bank \([a-z0-9]*\):.*/\1/p' "$o/keylime.out" | xargs)
        echo "banks in the kernel's padded SHA-1 form: iverd '$got', iverctl verify '$v', keylime_verify '$k' (kernel config: '$want')"
        [ "$want" = "?" ] || [ "$got" = "$want" ] || fail "iverd found the banks '$got' padded; the kernel pads '$want'"
        [ "$v" = "$got" ] && [ "$k" = "$got" ] || fail "the verifiers disagree with iverd on the padded banks"
}

N1=$(openssl rand -hex 16) N2=$(openssl rand -hex 16) N3=$(openssl rand -hex 16)
cat "$D/snap.sh" - >"$D/stock.sh" <<EOF
echo "== the kernel's list"; cat \$K/ascii_runtime_measurements
ret \$K/ascii_runtime_measurements kernel0.txt
echo "== iverd with the shipped iverd.conf (keys set:" \$(grep -c '^[A-Za-z]' /etc/iverd/iverd.conf) ")"
iverd_start || { echo "iverd exited with \$IVERD_RC"; cat /run/iverd.log; exit 1; }
snap s1 $N1
iverctl policy export --keylime --out /tmp/policy.json
ret /tmp/policy.json
echo "== /opt/tree/f3 changes"
echo changed >>/opt/tree/f3
snap s2 $N2
echo "== the kernel starts measuring while iverd runs: measure func=BPRM_CHECK; execs"
echo "measure func=BPRM_CHECK" >\$K/policy
tools 1 4
for i in 1 2 3 4; do /opt/bin/tool\$i; echo "new \$i" >/opt/tree/n\$i; done
tools 5 6
settle
/opt/bin/tool5; /opt/bin/tool6
snap s3 $N3
iverd_stop
cat /run/iverd.log
EOF

step "1: stock kernel, shipped iverd.conf"
guest_run "$D/stock.sh" "$D/o1" || fail "the stock-kernel guest failed"
O=$D/o1
[ "$(wc -l <"$O/kernel0.txt")" = 1 ] || fail "the stock kernel's list is not one line"
grep -Eq '^10 [0-9a-f]{40} ima-sig sha256:[0-9a-f]{64} boot_aggregate ?$' "$O/kernel0.txt" ||
        fail "the kernel's list is not its boot_aggregate"
cmp -s "$O/s1/kernel.txt" "$O/kernel0.txt" || fail "the stock kernel's list grew without a policy"
cmp -s <(head -1 "$O/s1/list.txt") "$O/kernel0.txt" || fail "iverd's list does not begin with the kernel's boot_aggregate line"
[ "$(wc -l <"$O/s1/list.txt")" = 7 ] || fail "expected boot_aggregate + 6 files, got $(wc -l <"$O/s1/list.txt") lines"
{
        echo "# stock kernel ($(basename "$GUEST_KERNEL"), no IMA policy), shipped iverd.conf, TPM banks $BANKS: the served list"
        head -4 "$O/s1/list.txt"; echo "… $(wc -l <"$O/s1/list.txt") lines"
        snap_checks "$O/s1" "$N1"
} | tee "$D/stock-1.txt"
evidence stock "$D/stock-1.txt"

step "1b: a changed file is listed, and the policy of its old digest rejects it"
old=$(awk '$5 == "/opt/tree/f3" { print $4 }' "$O/s1/list.txt")
new=$(awk '$5 == "/opt/tree/f3" { d = $4 } END { print d }' "$O/s2/list.txt")
[ -n "$old" ] && [ -n "$new" ] && [ "$old" != "$new" ] || fail "the change of /opt/tree/f3 is not listed ($old → $new)"
{
        echo "/opt/tree/f3: $old → $new"
        snap_checks "$O/s2" "$N2" >/dev/null
        echo "the list with the change replays PCR 10 (tpm2_checkquote, iverctl verify, keylime_verify)"
} | tee "$D/stock-2.txt"
python3 -c "import json,sys; d=json.load(open(sys.argv[1]))['digests']; assert 'boot_aggregate' in d, list(d)" "$O/policy.json" ||
        fail "the exported policy lacks the kernel's boot_aggregate"
if python3 "$VERIFY" --pcr 10 --banks $BANKS --policy "$O/policy.json" "$O/s2/list.txt" "$O/s2/pcrs.out" >"$D/reject.out"; then
        cat "$D/reject.out"; fail "the changed file was accepted by the policy of its old digest"
fi
grep -E 'policy: entry|REJECTED' "$D/reject.out" | tee -a "$D/stock-2.txt"
grep -q "policy: entry .*/opt/tree/f3 ${new#sha256:}" "$D/reject.out" || fail "rejected, but not for /opt/tree/f3"
grep -q "^REJECTED: 1 entries not allowed" "$D/reject.out" || fail "more than the changed file was rejected"
evidence stock-changed "$D/stock-2.txt"

step "1c: the kernel starts measuring while iverd runs"
nk=$(wc -l <"$O/s3/kernel.txt")
[ "$nk" -ge 7 ] || fail "the measuring kernel listed $nk entries, fewer than boot_aggregate and the 6 tools"
for i in 1 2 3 4 5 6; do
        grep -Eq "^10 [0-9a-f]{40} ima-(ng|sig) sha256:[0-9a-f]{64} /opt/bin/tool$i ?\$" "$O/s3/kernel.txt" || fail "the kernel did not measure /opt/bin/tool$i"
done
{
        echo "# the kernel measuring from while iverd runs (measure func=BPRM_CHECK): the kernel's list"
        cat "$O/s3/kernel.txt"
        echo "# iverd's served list (first lines)"
        head -12 "$O/s3/list.txt"; echo "… $(wc -l <"$O/s3/list.txt") lines"
        snap_checks "$O/s3" "$N3"
} | tee "$D/running.txt"
# merged, not appended: an entry of the kernel's after one of iverd's, and one of iverd's after that
grep -q 'served list (k: .*): k*i\+k\+i' "$D/running.txt" || fail "the kernel's entries and iverd's did not interleave"
evidence measuring-while-running "$D/running.txt"

N4=$(openssl rand -hex 16) N5=$(openssl rand -hex 16)
cat "$D/snap.sh" - >"$D/measuring.sh" <<EOF
echo "== a measuring kernel before iverd starts: measure func=BPRM_CHECK; execs"
echo "measure func=BPRM_CHECK" >\$K/policy
tools 1 3
/opt/bin/tool1; /opt/bin/tool2; /opt/bin/tool3
iverctl --help >/dev/null 2>&1 || true
cat \$K/ascii_runtime_measurements
ret \$K/ascii_runtime_measurements kernel0.txt
iverd_start || { echo "iverd exited with \$IVERD_RC"; cat /run/iverd.log; exit 1; }
snap m1 $N4
echo "== more execs while iverd runs"
tools 4 6
for i in 4 5 6; do /opt/bin/tool\$i; echo "new \$i" >/opt/tree/n\$i; done
snap m2 $N5
iverd_stop
cat /run/iverd.log
EOF

step "2: a kernel measuring from before iverd starts"
guest_run "$D/measuring.sh" "$D/o2" || fail "the measuring-kernel guest failed"
O=$D/o2
[ "$(wc -l <"$O/kernel0.txt")" -ge 4 ] || fail "the measuring kernel listed fewer than boot_aggregate + 3 tools"
cmp -s <(head -n "$(wc -l <"$O/kernel0.txt")" "$O/m1/list.txt") "$O/kernel0.txt" ||
        fail "iverd's list does not begin with the kernel's entries of before its start"
{
        echo "# the kernel measuring from before iverd starts: iverd's served list (first lines)"
        head -12 "$O/m1/list.txt"; echo "… $(wc -l <"$O/m1/list.txt") lines"
        snap_checks "$O/m1" "$N4"
        echo "# after more execs while iverd runs"
        snap_checks "$O/m2" "$N5"
} | tee "$D/before.txt"
for i in 4 5 6; do
        grep -Eq " /opt/bin/tool$i ?\$" "$O/m2/kernel.txt" || fail "the kernel did not measure /opt/bin/tool$i"
done
evidence measuring-before-start "$D/before.txt"

echo
echo "PASS"
