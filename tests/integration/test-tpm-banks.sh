#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Every PCR the list uses is covered, in the banks Banks= names (issue 16
# item 3), against swtpm (sha1, sha256, sha384, sha512 active):
#  - Banks=sha256 sha384: extends go to those banks only (the sha1 bank of
#    the PCR stays zero); a quote defaults to them; --bank sha256 gives a
#    sha256-only quote that tpm2_checkquote accepts and whose PCR values are
#    all sha256 (a verifier keeping one value per PCR gets the bank it asked
#    for); --bank sha1 (not extended) is refused with a clear error;
#  - a rule with pcr=16 next to the daemon's PCR 23: the quote covers both
#    PCRs and verifies; kill -9 and restart resyncs over both (nothing extended
#    twice); PCR 16 reset alone behind iverd's back is noticed by the health
#    check: desynced (its entries are spread through the list), quotes refused;
#    PCR 23 reset too (as a TPM reset does): resynced, re-extended, verified.
set -euo pipefail
# not a test of names at rest: a settle after a change need not wait the 2 s
# a name takes to come to rest (IVERD_TEST_REST_SETTLE_MS, iverd(8))
export IVERD_TEST_REST_SETTLE_MS=${IVERD_TEST_REST_SETTLE_MS:-300}
BUILD=${IVER_BUILD_DIR:-/work/main/build}
command -v swtpm >/dev/null || { echo "SKIP: swtpm not installed"; exit 77; }
command -v tpm2_checkquote >/dev/null || { echo "SKIP: tpm2-tools not installed"; exit 77; }
D=$(mktemp -d /tmp/iver-test-tpmbanks.XXXXXX)
SWTPM_PID= IVERD_PID=
source "$(dirname "$0")/lib-tpmd.sh"
cleanup() { stop "$IVERD_PID"; stop "$SWTPM_PID"; rm -rf "$D"; }
trap cleanup EXIT
trap "exit 1" INT TERM HUP
export TSS2_LOG=all+none IVERD_SOCKET=$D/run/iverd.sock
TCTI="swtpm:path=$D/swtpm.sock"

mkdir -p "$D/tree" "$D/tpm" "$D/run" "$D/state"
start_swtpm
for i in $(seq 1 20); do echo "file $i" >"$D/tree/f$i"; done
mkdir "$D/tree/sub"
for i in $(seq 1 5); do echo "sub $i" >"$D/tree/sub/s$i"; done
printf 'measure path="%s/tree/sub/**" pcr=16\nmeasure path="%s/tree/**"\n' "$D" "$D" >"$D/p.policy"
printf '[TPM]\nBanks=sha256 sha384\n' >"$D/iverd.conf"
start_iverd() {
        IVERD_LOG_STDERR=1 "$BUILD/iverd" --config "$D/iverd.conf" --policy "$D/p.policy" --runtime-dir "$D/run" \
                --state-dir "$D/state" --tpm "$TCTI" --pcr 23 >>"$D/iverd.log" 2>&1 &
        IVERD_PID=$!
        for _ in $(seq 100); do ctl status >/dev/null 2>&1 && return 0; sleep 0.05; done
        fail "iverd did not start"
}
quote() {   # quote NONCE [--bank ALGO]: prints the selection
        rm -rf "$D/q"
        ctl quote --nonce "$@" --out "$D/q" | sed -n 's/.*selection \([^)]*\)).*/\1/p'
}
verify() {   # verify NONCE SELECTION
        tpm2_checkquote -u "$D/q/ak.pub.pem" -m "$D/q/quote.msg" -s "$D/q/quote.sig" -f "$D/q/pcrs.out" \
                -l "$2" -g sha256 -q "$1" >/dev/null || fail "tpm2_checkquote rejected the quote ($2)"
        ctl verify "$D/q" | tee "$D/verify.txt" || fail "iverctl verify rejected the quote ($2)"
        grep -qE "list of ([0-9]+) entries, \1 replayed" "$D/verify.txt" || fail "the PCRs do not hold the whole list"
}
pcr() { tpm2_pcrread -T "$TCTI" "$1" | awk '/0x/ {print $2}'; }

start_iverd
ctl settle --timeout 60 >/dev/null
[ "$(js pending_extends)" = 0 ] || fail "pending extends after settle"

step "Banks=sha256 sha384: extended banks, default quote"
ctl status --json | python3 -c "import json,sys; b=json.load(sys.stdin)['banks']; print('banks', b); sys.exit(0 if b == ['sha256', 'sha384'] else 1)" ||
        fail "status banks are not sha256+sha384"
[ "$(pcr sha1:23)" = "0x0000000000000000000000000000000000000000" ] || fail "the sha1 bank was extended: $(pcr sha1:23)"
[ "$(pcr sha256:23)" != "0x$(printf '0%.0s' $(seq 64))" ] || fail "the sha256 bank was not extended"
sel=$(quote 0a1b)
[ "$sel" = "sha256:16,23+sha384:16,23" ] || fail "default quote selection is '$sel'"
verify 0a1b "$sel"
[ "$(awk '$1 == 16' "$D/run/ascii_runtime_measurements" | wc -l)" = 5 ] || fail "the pcr=16 rule did not list 5 entries in PCR 16"

step "--bank sha256: a sha256-only quote"
sel=$(quote 0a1c --bank sha256)
[ "$sel" = "sha256:16,23" ] || fail "--bank sha256 gave '$sel'"
verify 0a1c "$sel"
[ "$(stat -c %s "$D/q/pcrs.out")" = 64 ] || fail "pcrs.out is not two sha256 values"
[ "$(od -An -tx1 -v "$D/q/pcrs.out" | tr -d ' \n' | tail -c 64)" = "$(pcr sha256:23 | sed 's/^0x//' | tr 'A-F' 'a-f')" ] ||
        fail "pcrs.out does not hold PCR 23's sha256 value"
if out=$(ctl quote --nonce 0a1d --out "$D/q" --bank sha1 2>&1); then fail "a quote of a bank iverd does not extend was made"; fi
echo "--bank sha1: $out"
grep -q "not one iverd extends" <<<"$out" || fail "no clear error for an unextended bank"

step "kill -9 and restart: resync over PCRs 16 and 23"
for i in $(seq 1 5); do echo "more $i" >"$D/tree/sub/m$i"; echo "more $i" >"$D/tree/m$i"; done
ctl settle --timeout 60 >/dev/null
kill -9 "$IVERD_PID"; wait "$IVERD_PID" 2>/dev/null || true; IVERD_PID=
start_iverd
ctl settle --timeout 60 >/dev/null
[ "$(js desynced)" = False ] || fail "desynced after restart"
[ "$(js pending_extends)" = 0 ] || fail "pending extends after restart"
# the crash is listed once, in the default PCR (a violation: all-0xFF in each extended bank)
[ "$(grep -cE '^23 0{40} ima-ng sha256:0{64} iverd-gap:[0-9]+-[0-9]+$' "$D/run/ascii_runtime_measurements")" = 1 ] ||
        fail "not exactly one gap entry in PCR 23 after one restart"
sel=$(quote 0b01)
verify 0b01 "$sel"

step "PCR 16 reset behind iverd's back: no point of the list matches, quotes refused"
# PCR 16's entries are spread through the list: with PCR 16 zero and PCR 23
# full no prefix replays to both (an extender other than iverd)
r0=$(js pcr_resyncs)
tpm2_pcrreset -T "$TCTI" 16
for _ in $(seq 50); do [ "$(js desynced)" = True ] && break; sleep 0.1; done
[ "$(js desynced)" = True ] || fail "a reset of PCR 16 alone was not noticed"
if out=$(ctl quote --nonce 0b02 --out "$D/q" 2>&1); then fail "a quote was made while desynced"; fi
echo "quote while desynced: $out"
grep -q "out of sync" <<<"$out" || fail "no clear error for a quote while desynced"

step "PCRs 16 and 23 reset (as a TPM reset does): resynced to the start, re-extended, the quote verifies"
tpm2_pcrreset -T "$TCTI" 23
for _ in $(seq 50); do [ "$(js desynced)" = False ] && [ "$(js pending_extends)" = 0 ] && break; sleep 0.1; done
[ "$(js desynced)" = False ] || fail "still desynced after both PCRs were reset"
[ "$(js pending_extends)" = 0 ] || fail "extends pending after the reset"
[ "$(js pcr_resyncs)" -gt "$r0" ] || fail "no resync counted"
sel=$(quote 0b03)
verify 0b03 "$sel"
echo; echo "PASS"
