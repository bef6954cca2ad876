#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# PCR 10 shared with the kernel's IMA (issue 21 item 1), against a fake kernel:
# a securityfs-like directory (fake_kernel_ima.py writes the kernel's binary and
# ASCII lists and runtime_measurements_count) that iverd reads through its test
# knob IVERD_TEST_KERNEL_IMA_DIR, and swtpm's PCR 10 extended with tpm2_pcrextend
# for every kernel entry in all four banks, as the kernel does.
#   1  stock kernel (boot_aggregate only), Pcr=auto: iverd shares PCR 10, its
#      list starts with the kernel's line verbatim, then its own; the quote
#      over PCR 10 in sha1, sha256, sha384 and sha512 verifies (tpm2_checkquote,
#      iverctl verify, keylime_verify.py: every entry replayed in every bank);
#      policy export --keylime on the merged list, and the list accepted by it
#   2  the kernel's templates: ima-ng, ima-sig, ima-buf, the sha1 "ima"
#      template and a violation listed by the kernel while iverd is stopped:
#      the restarted iverd continues the list with them (each once), then
#      lists its restart gap entry, replays
#   3  a measuring kernel: the kernel lists and extends 40 entries while iverd
#      measures 40 new files: the served list holds both, the kernel's in its
#      order, each where the TPM received it, and replays PCR 10 in every bank
#   4  fail loud: an extend of PCR 10 that no list holds: iverd marks the
#      evidence broken (desynced, quotes refused) and the PCR replays from no
#      prefix of the list
# Needs root, swtpm and tpm2-tools (skips with 77 without swtpm).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-fleet.sh
source "$here/lib-fleet.sh"
VERIFY=$here/keylime_verify.py
FAKE=$here/fake_kernel_ima.py
BANKS=sha1,sha256,sha384,sha512
SEL=sha1:10+sha256:10+sha384:10+sha512:10

for t in python3 tpm2_checkquote tpm2_pcrextend tpm2_pcrread openssl; do command -v $t >/dev/null || fail "$t not installed"; done
fleet_init kernel-ima
fleet_start_swtpm
export TPM2TOOLS_TCTI="swtpm:path=$D/tpm/swtpm.sock"
export IVERD_TEST_KERNEL_IMA_DIR=$D/kima
mkdir -p "$D/kima"
LIST=$D/run/ascii_runtime_measurements
KLIST=$D/kima/ascii_runtime_measurements

kernel() { # KIND ARGS…: the kernel lists an entry, then extends PCR 10
        local spec
        spec=$(python3 "$FAKE" "$D/kima" "$@")
        tpm2_pcrextend "$spec" >/dev/null || fail "tpm2_pcrextend $spec"
}

js() { ctl status --json | python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }

# quote DIR: a quote over PCR 10 in all four banks, checked three ways
quote() {
        local nonce; nonce=$(openssl rand -hex 16)
        rm -rf "$1"
        ctl quote --nonce "$nonce" --out "$1" >/dev/null || fail "iverctl quote failed"
        tpm2_checkquote -u "$1/ak.pub.pem" -m "$1/quote.msg" -s "$1/quote.sig" -f "$1/pcrs.out" \
                -l "$SEL" -g sha256 -q "$nonce" >"$D/checkquote.out" 2>&1 ||
                { cat "$D/checkquote.out"; fail "tpm2_checkquote rejected the quote"; }
        ctl verify "$1" >"$D/verify.txt" || { cat "$D/verify.txt"; fail "iverctl verify rejected the quote"; }
        python3 "$VERIFY" --pcr 10 --banks $BANKS --keylime-split "$LIST" "$1/pcrs.out" | tee "$D/kv.out"
        local n; n=$(wc -l <"$LIST")
        grep -q "replay of the first $n of $n entries" "$D/kv.out" || fail "the quote does not replay the whole list"
}

step "1: stock kernel: boot_aggregate only"
kernel boot_aggregate
cat "$KLIST"
mkdir -p "$D/tree"
for i in $(seq 1 8); do printf 'file %d\n' "$i" >"$D/tree/f$i"; done
cat >"$D/policy" <<EOF
measure path=$D/tree/** hash=sha256 template=ima-ng
EOF
fleet_start_iverd "$D/policy" --tpm "swtpm:path=$D/tpm/swtpm.sock"
ctl settle --timeout 60
[ "$(js pcr)" = 10 ] || fail "Pcr=auto did not choose PCR 10"
[ "$(js pcr_shared_with_kernel)" = True ] || fail "PCR 10 not shared with the kernel's IMA"
[ "$(js banks)" = "['sha1', 'sha256', 'sha384', 'sha512']" ] || fail "not every active bank is extended: $(js banks)"
head -3 "$LIST"
cmp -s <(head -1 "$LIST") "$KLIST" || fail "the list does not start with the kernel's boot_aggregate line"
[ "$(wc -l <"$LIST")" = 9 ] || fail "expected 1 kernel + 8 iverd entries, got $(wc -l <"$LIST")"
quote "$D/q1"
ctl log --ascii >"$D/log.txt"
cmp -s "$D/log.txt" "$LIST" || fail "iverctl log is not the merged list"
ctl policy export --keylime --out "$D/policy.json"
python3 -c "import json,sys; d=json.load(open(sys.argv[1]))['digests']; assert 'boot_aggregate' in d, d.keys()" "$D/policy.json" ||
        fail "the exported policy lacks the kernel's boot_aggregate"
python3 "$VERIFY" --pcr 10 --banks $BANKS --policy "$D/policy.json" "$LIST" "$D/q1/pcrs.out" | tail -2
grep -q "^ACCEPTED" <(python3 "$VERIFY" --pcr 10 --banks $BANKS --policy "$D/policy.json" "$LIST" "$D/q1/pcrs.out") ||
        fail "the merged list is not accepted with its exported policy"

step "2: the kernel lists every template while iverd is stopped; iverd continues"
fleet_stop_pid "$IVERD_PID"
kernel ng /usr/bin/env
kernel sig "/usr/lib/a name with spaces"
kernel buf kexec-cmdline "root=/dev/vda ro quiet"
kernel ima /usr/sbin/init
kernel violation /var/log/busy
tail -5 "$KLIST"
fleet_start_iverd "$D/policy" --tpm "swtpm:path=$D/tpm/swtpm.sock"
ctl settle --timeout 60
[ "$(js kernel_entries)" = 6 ] || fail "iverd sees $(js kernel_entries) kernel entries, not 6"
[ "$(grep -c boot_aggregate "$LIST")" = 1 ] || fail "boot_aggregate listed more than once"
# the kernel extended its entries while iverd was stopped: they come first, in
# extend order, then the restart's gap entry, iverd's first of the new run
cmp -s <(tail -6 "$LIST" | head -5) <(tail -5 "$KLIST") || fail "the kernel's new entries are not at the end of the list, verbatim"
tail -1 "$LIST" | grep -Eq '^10 0{40} ima-ng sha256:0{64} iverd-gap:[0-9]+-[0-9]+$' ||
        fail "the restart's gap entry does not follow the kernel's entries: $(tail -1 "$LIST")"
printf 'file 9\n' >"$D/tree/f9"
ctl settle --timeout 60
tail -1 "$LIST" | grep -q "$D/tree/f9\$" || fail "f9 not listed after the kernel's entries"
quote "$D/q2"
[ "$(js desynced)" = False ] || fail "desynced after a clean restart"

step "3: a measuring kernel: kernel and iverd extend PCR 10 at the same time"
( for i in $(seq 1 40); do kernel ng "/usr/bin/prog$i"; sleep 0.1; done ) &
KPID=$!
FLEET_PIDS+=("$KPID")
# iverd's new files over the same seconds as the kernel's entries, each from a
# process of its own: a file is listed once at rest (iverd(8), "Names at
# rest": its own and its writer's quiet interval), so one writer's 40 files
# would all be listed after the kernel's last entry
for i in $(seq 10 49); do (printf 'file %d\n' "$i" >"$D/tree/f$i"); sleep 0.08; done
wait "$KPID" || fail "the fake kernel failed"
ctl settle --timeout 60
nk=$(wc -l <"$KLIST")
for _ in $(seq 100); do [ "$(js kernel_entries)" = "$nk" ] && break; sleep 0.05; done
[ "$(js kernel_entries)" = "$nk" ] || fail "the served list holds $(js kernel_entries) of the kernel's $nk entries"
[ "$(wc -l <"$LIST")" = $((nk + 50)) ] || fail "expected $nk kernel + 49 iverd entries + the gap, got $(wc -l <"$LIST")"
# the kernel's lines, in the kernel's order, are a subsequence of the served list
python3 - "$KLIST" "$LIST" <<'PY' || fail "the kernel's entries are not in the served list in its order"
import sys
k = open(sys.argv[1], "rb").read().splitlines()
s = open(sys.argv[2], "rb").read().splitlines()
it = iter(s)
sys.exit(0 if all(any(x == y for y in it) for x in k) else 1)
PY
# how the two writers interleaved (k kernel, i iverd) in the last 80 entries
python3 - "$LIST" <<'PY' || fail "the kernel's and iverd's extends did not interleave: nothing was merged"
import sys
t = ["k" if b"/usr/bin/prog" in l else "i" for l in open(sys.argv[1], "rb").read().splitlines()[-80:]]
o = "".join(t)
print("order of the last 80 entries:", o)
sys.exit(0 if "ki" in o and "ik" in o else 1)
PY
quote "$D/q3"
[ "$(js evidence_broken)" = False ] || fail "evidence broken by a measuring kernel"

step "4: an extend of PCR 10 that no list holds (fail loud)"
tpm2_pcrextend "10:sha256=$(printf 'rogue' | sha256sum | cut -d' ' -f1)" >/dev/null
for _ in $(seq 100); do [ "$(js desynced)" = True ] && break; sleep 0.05; done
[ "$(js desynced)" = True ] || fail "iverd did not notice an extend it cannot place"
[ "$(js evidence_broken)" = True ] || fail "the evidence is not marked broken"
if ctl quote --nonce "$(openssl rand -hex 16)" --out "$D/q4" >/dev/null 2>&1; then
        fail "iverd quoted a PCR its list does not replay"
fi
echo "iverctl quote refused; evidence_broken: $(js evidence_broken)"
tpm2_pcrread -o "$D/pcr4.bin" "$SEL" >/dev/null
if python3 "$VERIFY" --pcr 10 --banks $BANKS "$LIST" "$D/pcr4.bin" | tee "$D/kv4.out"; then
        fail "the list replays a PCR holding an extend it does not list"
fi
echo
echo "PASS"
