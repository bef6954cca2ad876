#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# iverd with a real (software) TPM: every measurement reaches the PCR in list
# order; quotes verify with tpm2_checkquote and `iverctl verify`; after a
# kill -9 mid-burst the restarted daemon replays the list against the PCR and
# extends what is missing (no entry lost or duplicated); with swtpm killed the
# daemon keeps measuring and listing, reports pending extends, and catches up
# when the TPM comes back. Uses PCR 23 (a test PCR).
set -euo pipefail
# not a test of names at rest: a settle after a change need not wait the 2 s
# a name takes to come to rest (IVERD_TEST_REST_SETTLE_MS, iverd(8))
export IVERD_TEST_REST_SETTLE_MS=${IVERD_TEST_REST_SETTLE_MS:-300}
BUILD=${IVER_BUILD_DIR:-/work/main/build}
command -v swtpm >/dev/null || { echo "SKIP: swtpm not installed"; exit 77; }
D=$(mktemp -d /tmp/iver-test-dtpm.XXXXXX)
SWTPM_PID= IVERD_PID=
source "$(dirname "$0")/lib-tpmd.sh"
cleanup() { stop "$IVERD_PID"; stop "$SWTPM_PID"; rm -rf "$D"; }
trap cleanup EXIT
trap "exit 1" INT TERM HUP
export TSS2_LOG=all+none IVERD_SOCKET=$D/run/iverd.sock

start_iverd() {
        IVERD_LOG_STDERR=1 "$BUILD/iverd" --on-access none --policy "$D/p.policy" --runtime-dir "$D/run" --state-dir "$D/state" \
                --tpm "swtpm:path=$D/swtpm.sock" --pcr 23 >>"$D/iverd.log" 2>&1 &
        IVERD_PID=$!
        for _ in $(seq 100); do ctl status >/dev/null 2>&1 && return 0; sleep 0.05; done
        fail "iverd did not start"
}
no_duplicates() {
        local total uniq
        # violation entries all carry a zero template digest: the kernel's dedup skips them too
        total=$(awk '$2 !~ /^0+$/' "$D/run/ascii_runtime_measurements" | wc -l)
        uniq=$(awk '$2 !~ /^0+$/ {print $2}' "$D/run/ascii_runtime_measurements" | sort -u | wc -l)
        [ "$total" = "$uniq" ] || fail "duplicate template digests in the list ($total lines, $uniq distinct)"
        echo "list: $total entries, no duplicates"
}
all_measured() {   # every file's current digest is in the list (one sha256sum for all: the names have no spaces)
        local missing
        missing=$(find "$D/tree" -type f -print0 | xargs -0 sha256sum | awk '
                NR == FNR { listed[$4 " " $NF] = 1; next }
                !(("sha256:" $1 " " $2) in listed) { print "not in list: " $2 > "/dev/stderr"; n++ }
                END { print n + 0 }' "$D/run/ascii_runtime_measurements" -)
        [ "$missing" = 0 ] || fail "$missing files missing from the list"
}

mkdir -p "$D/tree" "$D/tpm" "$D/run" "$D/state"
for i in $(seq 1 50); do echo "file $i" >"$D/tree/f$i"; done
printf 'measure path="%s/tree/**"\n' "$D" >"$D/p.policy"
start_swtpm
start_iverd

step "initial measurement reaches the PCR; quote verifies"
ctl settle --timeout 60
[ "$(js pending_extends)" = 0 ] || fail "pending extends after settle"
verify_quote
no_duplicates

step "kill -9 in the middle of a burst of 300 new files, restart"
( for i in $(seq 1 300); do echo "burst $i" >"$D/tree/b$i"; done ) &
BURST=$!
sleep 0.15
kill -9 "$IVERD_PID"; wait "$IVERD_PID" 2>/dev/null || true; IVERD_PID=
wait $BURST
# whole records of the binary list (its ASCII twin may lag by the write the kill cut off)
N0=$(python3 - "$D/run/binary_runtime_measurements" <<'PY'
import struct, sys
b, off, n = open(sys.argv[1], "rb").read(), 0, 0
while off + 28 <= len(b):
    nl, = struct.unpack_from("<I", b, off + 24)
    o = off + 28 + nl
    if o + 4 > len(b):
        break
    dl, = struct.unpack_from("<I", b, o)
    if o + 4 + dl > len(b):
        break
    off, n = o + 4 + dl, n + 1
print(n)
PY
)
echo "list before restart: $N0 entries"
start_iverd
ctl settle --timeout 60
# the crash continued this boot's list: its first new entry is the gap, the only one
sed -n "$((N0 + 1))p" "$D/run/ascii_runtime_measurements" | grep -Eq '^23 0{40} ima-ng sha256:0{64} iverd-gap:[0-9]+-[0-9]+$' ||
        fail "entry $((N0 + 1)), the first after the crash, is not the gap"
[ "$(grep -c ' iverd-gap:' "$D/run/ascii_runtime_measurements")" = 1 ] || fail "not exactly one gap entry after one restart"
[ "$(js desynced)" = False ] || fail "desynced after restart"
[ "$(js pending_extends)" = 0 ] || fail "pending extends after restart"
verify_quote
no_duplicates
all_measured

step "swtpm killed: the daemon keeps measuring, extends wait"
stop "$SWTPM_PID"; SWTPM_PID=
for i in $(seq 1 40); do echo "offline $i" >"$D/tree/o$i"; done
ctl settle --timeout 30
for _ in $(seq 50); do [ "$(js tpm)" = unavailable ] && [ "$(js pending_extends)" -ge 40 ] && break; sleep 0.1; done
ctl status --json | grep -E '"(tpm|pending_extends|list_length)"'
[ "$(js tpm)" = unavailable ] || fail "status does not say the TPM is unavailable"
[ "$(js pending_extends)" -ge 40 ] || fail "extends not pending while the TPM is down"
all_measured

step "swtpm back (PCRs reset by startup-clear): the daemon catches up"
start_swtpm
for _ in $(seq 100); do [ "$(js tpm)" = connected ] && [ "$(js pending_extends)" = 0 ] && break; sleep 0.1; done
[ "$(js tpm)" = connected ] || fail "did not reconnect"
[ "$(js pending_extends)" = 0 ] || fail "extends still pending after reconnect"
verify_quote
no_duplicates
echo; echo "PASS"
