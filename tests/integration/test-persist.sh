#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Boot-scoped snapshots with the HMAC key in the real kernel keyring:
# a clean restart re-hashes nothing and the ledger continues (and lists exactly
# one gap entry, as every restart on the same list does); after kill -9
# the state up to the last snapshot holds and changes made since are caught;
# a flipped byte, a truncation, a snapshot under another key, and a missing key
# (as after a reboot) and a fresh measurement list are each detected, the snapshot discarded and everything
# re-measured. Also: time to ready with many cached files.
set -euo pipefail
# not a test of names at rest: a settle after a change need not wait the 2 s
# a name takes to come to rest (IVERD_TEST_REST_SETTLE_MS, iverd(8))
export IVERD_TEST_REST_SETTLE_MS=${IVERD_TEST_REST_SETTLE_MS:-300}
BUILD=${IVER_BUILD_DIR:-/work/main/build}
command -v keyctl >/dev/null || { echo "FAIL: keyctl (package keyutils) missing"; exit 1; }
D=$(mktemp -d /var/tmp/iver-test-persist.XXXXXX)
IVERD_PID=
# The boot key is one per host (iverd:snapshot-hmac in root's @u): removing or
# replacing it, as the tamper cases below do, would make every other iverd
# running now (another test's, the host's own) discard its next snapshot. This
# test's daemons use a key of their own, removed at exit.
DESC=iverd:snapshot-hmac-test-$$
export IVERD_TEST_SNAPSHOT_KEY=$DESC
restore_key_absent() { while id=$(keyctl search @u user $DESC 2>/dev/null); do keyctl unlink "$id" @u >/dev/null 2>&1 || break; done; }
stop() { local p=$1; [ -n "$p" ] || return 0; kill "$p" 2>/dev/null || true; for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || return 0; sleep 0.1; done; kill -9 "$p" 2>/dev/null || true; }
cleanup() { stop "$IVERD_PID"; restore_key_absent; rm -rf "$D"; }
trap cleanup EXIT
trap "exit 1" INT TERM HUP
fail() { echo "FAIL: $*"; tail -20 "$D/iverd.log"; exit 1; }
export IVERD_SOCKET=$D/run/iverd.sock
ctl() { "$BUILD/iverctl" "$@"; }
stat_of() { ctl stats --json | python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
# A start on an existing list (a restart) lists exactly one gap entry, right
# after the previous run's entries; a start on a fresh list none.
GAPS=0
start() {
        local t0 n0=-1 g; t0=$(date +%s.%N)
        [ -e "$D/run/binary_runtime_measurements" ] && n0=$(wc -l <"$D/run/ascii_runtime_measurements")
        IVERD_LOG_STDERR=1 "$BUILD/iverd" --on-access none --policy "$D/p.policy" --runtime-dir "$D/run" --state-dir "$D/state" \
                --tpm none >>"$D/iverd.log" 2>&1 &
        IVERD_PID=$!
        for _ in $(seq 400); do ctl status >/dev/null 2>&1 && break; sleep 0.02; done
        ctl settle --timeout 120
        READY_S=$(echo "$(date +%s.%N) - $t0" | bc)
        if [ "$n0" -ge 0 ]; then
                GAPS=$((GAPS + 1))
                sed -n "$((n0 + 1))p" "$D/run/ascii_runtime_measurements" |
                        grep -Eq '^10 0{40} ima-ng sha256:0{64} iverd-gap:[0-9]+-[0-9]+$' ||
                        fail "restart: entry $((n0 + 1)) is not the gap: $(sed -n "$((n0 + 1))p" "$D/run/ascii_runtime_measurements")"
        else
                GAPS=0
        fi
        g=$(grep -c ' iverd-gap:' "$D/run/ascii_runtime_measurements" || true)
        [ "$g" = "$GAPS" ] || fail "$g gap entries in the list, $GAPS expected (one a restart on this list)"
}
mkdir -p "$D/tree" "$D/run" "$D/state"
N=${IVER_PERSIST_FILES:-5000}
python3 - "$D/tree" "$N" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(root, "d%03d" % (i // 500))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%06d" % i), "w") as f:
        f.write("file %d\n" % i)
PY
printf 'measure path="%s/tree/**"\n' "$D" >"$D/p.policy"
restore_key_absent   # a fresh "boot"

echo "== first start: $N files measured"
start
B1=$(stat_of bytes_hashed); C1=$(stat_of checks)
echo "ready+settled in ${READY_S}s, bytes_hashed=$B1 checks=$C1"
stop "$IVERD_PID"; IVERD_PID=
[ -s "$D/state/cache.snap" ] || fail "no snapshot written at stop"

echo "== clean restart: nothing re-hashed, ledger continues"
start
B2=$(stat_of bytes_hashed); C2=$(stat_of checks); R2=$(stat_of remeasured); F2=$(stat_of first_seen)
echo "time to ready+settled with $N cached files: ${READY_S}s; bytes_hashed $B1 -> $B2, checks $C1 -> $C2"
[ "$B2" = "$B1" ] || fail "files were re-hashed after a clean restart"
[ "$C2" -gt "$C1" ] || fail "ledger did not continue"
[ "$F2" = "$N" ] || fail "first_seen changed: $F2"

echo "== kill -9 after changes: the last snapshot holds, the changes are caught"
stop "$IVERD_PID"; IVERD_PID=     # clean stop: snapshot now
start
echo changed >"$D/tree/d000/f000001"
ctl settle
kill -9 "$IVERD_PID"; wait "$IVERD_PID" 2>/dev/null || true; IVERD_PID=
echo changed-again >"$D/tree/d000/f000002"
start
grep -q "changed-again" "$D/tree/d000/f000002"
for f in f000001 f000002; do
        h=$(sha256sum "$D/tree/d000/$f" | cut -d' ' -f1)
        ctl list "$D/tree/d000/$f" | grep -q "sha256:$h" || fail "$f: digest after kill -9 restart is not the file's"
done
B3=$(stat_of bytes_hashed)
echo "after kill -9: bytes_hashed $B2 -> $B3 (the two changed files only, plus whatever the snapshot missed)"

tamper() {   # name, action
        stop "$IVERD_PID"; IVERD_PID=
        eval "$2"
        : >"$D/iverd.log.new"; mv "$D/iverd.log" "$D/iverd.log.old"
        start
        local why; why=$(grep -o "Discarding snapshot [^:]*: .*" "$D/iverd.log" | head -1 || true)
        [ -n "$why" ] || fail "$1: tampered snapshot not discarded"
        [ "$(stat_of first_seen)" = "$N" ] || fail "$1: not everything re-measured"
        printf '  %-22s detected: %s\n' "$1" "${why#*: }"
}
echo "== tampering"
tamper "flipped byte" 'printf "\\x55" | dd of="$D/state/cache.snap" bs=1 seek=$(( $(stat -c %s "$D/state/cache.snap") / 2 )) conv=notrunc status=none'
tamper "truncated" 'truncate -s $(( $(stat -c %s "$D/state/cache.snap") - 7 )) "$D/state/cache.snap"'
tamper "another key" 'restore_key_absent; id=$(head -c 32 /dev/urandom | keyctl padd user $DESC @u); keyctl setperm $id 0x3f0b0000'
tamper "no key (new boot)" 'restore_key_absent'
# the operator's recovery from broken evidence: a fresh list next to the
# snapshot. A cached file must be listed again, not left out of the new list.
tamper "fresh list" 'rm -f "$D/run/binary_runtime_measurements" "$D/run/ascii_runtime_measurements"'
listed=$(wc -l <"$D/run/ascii_runtime_measurements")
[ "$listed" -ge "$N" ] || fail "fresh list holds $listed entries for $N measured files"
echo "  fresh list: $listed entries for $N files, no gap"
echo; echo PASS
