#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# TPM errors by class (issue 24 item 6), against swtpm behind tpm-proxy.py:
#  (a) transient: the proxy answers 12 commands TPM_RC_RETRY; ESAPI resubmits
#      a few at once, iverd retries the rest in place (tpm_retries counts
#      them): no reconnect, no "TPM lost", every entry extended, the quote
#      verifies;
#  (b) lost: swtpm killed and started again (PCRs reset): iverd reconnects
#      (tpm_connects moves on) and extends what came meanwhile;
#  (c) permanent: a policy rule puts entries in PCR 17, which the TPM extends
#      only from localities 2-4 (swtpm answers 0x907 TPM_RC_LOCALITY at
#      locality 0): status reports tpm_error_permanent (the command and the
#      decoded rc), the error is logged once, the extends stop (the entries
#      stay pending; no quote passes them off as in the PCRs),
#      settle returns, and over 4 s no reconnect and no retry loop (connects
#      unchanged, a handful of TPM commands: the health check's reads).
set -euo pipefail
BUILD=${IVER_BUILD_DIR:-/work/main/build}
SRC=${IVER_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
command -v swtpm >/dev/null || { echo "SKIP: swtpm not installed"; exit 77; }
command -v tpm2_checkquote >/dev/null || { echo "SKIP: tpm2-tools not installed"; exit 77; }
D=$(mktemp -d /tmp/iver-test-tpmerr.XXXXXX)
SWTPM_PID= IVERD_PID= PROXY_PID=
source "$(dirname "$0")/lib-tpmd.sh"
cleanup() { stop "$IVERD_PID"; stop "$PROXY_PID"; stop "$SWTPM_PID"; rm -rf "$D"; }
trap cleanup EXIT
trap "exit 1" INT TERM HUP
export TSS2_LOG=all+none IVERD_SOCKET=$D/run/iverd.sock

mkdir -p "$D/tree/locked" "$D/tpm" "$D/run" "$D/state" "$D/ctl"
for i in $(seq 1 20); do echo "file $i" >"$D/tree/f$i"; done
# first match wins: tree/locked/ goes to PCR 17, the rest to the daemon's PCR 23
printf 'measure path="%s/tree/locked/**" pcr=17\nmeasure path="%s/tree/**"\n' "$D" "$D" >"$D/p.policy"
start_swtpm
python3 "$SRC/tests/integration/tpm-proxy.py" "$D/proxy.sock" "$D/swtpm.sock" "$D/ctl" 2>>"$D/proxy.log" &
PROXY_PID=$!
for _ in $(seq 100); do [ -S "$D/proxy.sock" ] && break; sleep 0.05; done
[ -S "$D/proxy.sock" ] || fail "proxy did not start"
# listed at once (no names-at-rest wait): (b') needs extends right after a restart
IVERD_TEST_REST_SETTLE_MS=0 IVERD_LOG_STDERR=1 "$BUILD/iverd" --on-access none --policy "$D/p.policy" --runtime-dir "$D/run" --state-dir "$D/state" \
        --tpm "swtpm:path=$D/proxy.sock" --pcr 23 >>"$D/iverd.log" 2>&1 &
IVERD_PID=$!
for _ in $(seq 100); do ctl status >/dev/null 2>&1 && break; sleep 0.05; done
ctl status >/dev/null 2>&1 || fail "iverd did not start"
wait_extended() {
        for _ in $(seq 200); do [ "$(js tpm)" = connected ] && [ "$(js pending_extends)" = 0 ] && return 0; sleep 0.05; done
        fail "not connected with every entry extended (tpm $(js tpm), pending $(js pending_extends))"
}
ctl settle --timeout 60
wait_extended
verify_quote
C0=$(js tpm_connects)
[ "$C0" = 1 ] || fail "tpm_connects $C0 after a clean start, expected 1"

step "(a) transient: 12 commands answered TPM_RC_RETRY"
echo 12 >"$D/ctl/retry"
for i in $(seq 1 10); do echo "retry $i" >"$D/tree/r$i"; done
ctl settle --timeout 60
for _ in $(seq 100); do [ "$(cat "$D/ctl/retry")" = 0 ] && break; sleep 0.05; done
[ "$(cat "$D/ctl/retry")" = 0 ] || fail "the proxy still holds $(cat "$D/ctl/retry") RETRY answers"
wait_extended
R=$(js tpm_retries)
echo "tpm_retries $R, tpm_connects $(js tpm_connects)"
[ "$R" -ge 1 ] || fail "no retry in place counted"
[ "$(js tpm_connects)" = "$C0" ] || fail "a transient error reconnected (tpm_connects $(js tpm_connects))"
! grep -q "TPM lost" "$D/iverd.log" || fail "a transient error was taken for a lost TPM"
verify_quote

step "(b) lost: swtpm killed and started again"
stop "$SWTPM_PID"; SWTPM_PID=
for _ in $(seq 100); do [ "$(js tpm)" = unavailable ] && break; sleep 0.05; done
[ "$(js tpm)" = unavailable ] || fail "the TPM not seen lost"
for i in $(seq 1 10); do echo "offline $i" >"$D/tree/o$i"; done
ctl settle --timeout 30
[ "$(js pending_extends)" -ge 10 ] || fail "extends not pending while the TPM is away"
start_swtpm
wait_extended
C1=$(js tpm_connects)
echo "tpm_connects $C1"
[ "$C1" -gt "$C0" ] || fail "no reconnect counted"
grep -q "TPM lost" "$D/iverd.log" || fail "the lost TPM not logged"
verify_quote

step "(b') reset unseen: swtpm killed and started again between two commands, 3 times"
# swtpm's TCTI connects per command: a restart between commands shows no
# error, only PCRs back at zero. Extends on top of them would leave PCRs no
# prefix of the list replays to (desynced, every later quote refused): the
# reset count is read before an extend that follows a pause.
for k in 1 2 3; do
        kill -9 "$SWTPM_PID"; wait "$SWTPM_PID" 2>/dev/null || true; SWTPM_PID=
        rm -f "$D/swtpm.sock"
        start_swtpm
        for i in $(seq 1 5); do echo "after reset $k $i" >"$D/tree/z$k-$i"; done
        ctl settle --timeout 30
        wait_extended
        [ "$(js desynced)" = False ] || fail "reset $k: desynced"
        verify_quote
done
echo "3 restarts between commands: in sync, quotes verify (pcr_resyncs $(js pcr_resyncs))"

step "(c) permanent: an entry in PCR 17, which locality 0 may not extend"
echo locked >"$D/tree/locked/a"
for _ in $(seq 100); do [ "$(js tpm_extends_refused)" = True ] && break; sleep 0.05; done
ctl status --json | grep -E '"(tpm|tpm_error_permanent|tpm_extends_refused|tpm_connects|pending_extends)"'
[ "$(js tpm_extends_refused)" = True ] || fail "the refused extend not reported"
P=$(js tpm_error_permanent)
case "$P" in *PCR_Extend*0x907*) ;; *) fail "tpm_error_permanent '$P' does not name the command and its rc" ;; esac
[ "$(js tpm)" = connected ] || fail "a refused command dropped the connection"
echo "one more" >"$D/tree/after-locked"
timeout 30 "$BUILD/iverctl" settle --timeout 20 || fail "settle waits for extends the TPM refused"
[ "$(js pending_extends)" -ge 2 ] || fail "the entries after the refused one are not pending"
C2=$(js tpm_connects) N2=$(js tpm_commands) E2=$(js extend_failures)
sleep 4
C3=$(js tpm_connects) N3=$(js tpm_commands) E3=$(js extend_failures)
echo "over 4 s: connects $C2 -> $C3, TPM commands $N2 -> $N3, extend failures $E2 -> $E3"
[ "$C3" = "$C2" ] || fail "reconnecting in a loop after a permanent error"
[ "$E3" = "$E2" ] || fail "the refused extend is retried"
[ $((N3 - N2)) -le 20 ] || fail "$((N3 - N2)) TPM commands in 4 s: a retry loop"
L=$(grep -c "refused a command for good" "$D/iverd.log" || true)
[ "$L" = 1 ] || fail "the permanent error logged $L times, expected once"
# the evidence stays honest: no quote passes the list off as in the PCRs.
# PCR 17 starts at all-ones (a locality PCR), so no prefix of a list that
# names it replays: iverd says desynced and refuses the quote; were it in
# sync, the quote would verify a prefix only (the refused entries pending)
rm -rf "$D/q"
if ctl quote --nonce "$(openssl rand -hex 16)" --out "$D/q" >"$D/quote.txt" 2>&1; then
        ctl verify "$D/q" >"$D/verify.txt" 2>&1 || true
        cat "$D/verify.txt"
        python3 - "$D/verify.txt" <<'PY' || fail "the quote passes the refused entries off as in the PCRs"
import re, sys
t = open(sys.argv[1]).read()
m = re.search(r"list of (\d+) entries, (\d+) replayed", t)
sys.exit(0 if not m or int(m.group(2)) < int(m.group(1)) else 1)
PY
else
        cat "$D/quote.txt"
        grep -q "out of sync" "$D/quote.txt" || fail "the quote failed for another reason"
        [ "$(js desynced)" = True ] || fail "quote refused as out of sync, status not desynced"
fi
echo; echo "PASS"
