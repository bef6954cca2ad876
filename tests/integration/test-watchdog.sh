#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The watchdog is fed only while the hashing workers make progress
# (worker-health.c): every file of the tree is held at open by a fanotify
# permission group of the test's (FAN_OPEN_PERM, never answered), so every
# worker stalls in its first open while files wait. Asserted, against the real
# daemon with WATCHDOG_USEC and NOTIFY_SOCKET read by the test:
#  (a) WATCHDOG=1 stops (no ping for 2.5 s) and one error line names the stall
#      and a file a worker is stuck at;
#  (b) the group closed, the workers go on: pings resume within 5 s, and every
#      file reaches the list;
#  (c) the walk's statx thread held in the open of a directory: the stall line
#      names that directory, and its file is listed once the open goes on.
# Fails with a watchdog fed by the loop alone (pings every second throughout).
set -euo pipefail
BUILD=${IVER_BUILD_DIR:-/work/main/build}
SRC=${IVER_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
[ "$(id -u)" = 0 ] || { echo "SKIP: fanotify permission events need root"; exit 77; }
D=$(mktemp -d /tmp/iver-test-watchdog.XXXXXX)
IVERD_PID= NOTIFY_PID= HOLD_PID=
stop() { local p=$1; [ -n "$p" ] || return 0; kill "$p" 2>/dev/null || true; for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || return 0; sleep 0.1; done; kill -9 "$p" 2>/dev/null || true; }
fail() { echo "FAIL: $*"; [ -f "$D/iverd.log" ] && tail -20 "$D/iverd.log"; exit 1; }
step() { echo; echo "== $*"; }
# the holder first: a worker waits in open until its group is gone
cleanup() { stop "$HOLD_PID"; stop "$IVERD_PID"; stop "$NOTIFY_PID"; rm -rf "$D"; }
trap cleanup EXIT
trap "exit 1" INT TERM HUP
export IVERD_SOCKET=$D/run/iverd.sock
mkdir -p "$D/tree" "$D/run" "$D/state"
FILES=40
for i in $(seq 1 $FILES); do echo "file $i" >"$D/tree/f$i"; done
printf 'measure path="%s/tree/**"\n' "$D" >"$D/p.policy"

# the service manager's side of sd_notify: every message with its time
python3 "$(dirname "${BASH_SOURCE[0]}")/notify-sink.py" "$D/notify.sock" "$D/notify.log" &
NOTIFY_PID=$!
for _ in $(seq 100); do [ -S "$D/notify.sock" ] && break; sleep 0.05; done
[ -S "$D/notify.sock" ] || fail "notify socket did not come up"

# a permission group on every PATH, never answered: opens wait until it
# closes (directories too: FAN_ONDIR)
hold() { # PATH...
        rm -f "$D/held"
        python3 - "$D/held" "$@" <<'PY' &
import ctypes, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.fanotify_mark.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_uint64, ctypes.c_int, ctypes.c_char_p]
FAN_CLOEXEC, FAN_CLASS_CONTENT, FAN_MARK_ADD, FAN_OPEN_PERM, FAN_ONDIR, AT_FDCWD = 0x1, 0x4, 0x1, 0x10000, 0x40000000, -100
fd = libc.fanotify_init(FAN_CLOEXEC | FAN_CLASS_CONTENT, os.O_RDONLY)
if fd < 0:
    sys.exit("fanotify_init: " + os.strerror(ctypes.get_errno()))
for p in sys.argv[2:]:
    if libc.fanotify_mark(fd, FAN_MARK_ADD, FAN_OPEN_PERM | FAN_ONDIR, AT_FDCWD, p.encode()) < 0:
        sys.exit("fanotify_mark %s: %s" % (p, os.strerror(ctypes.get_errno())))
open(sys.argv[1], "w").close()
while True:
    signal.pause()
PY
        HOLD_PID=$!
        for _ in $(seq 100); do [ -e "$D/held" ] && break; sleep 0.05; done
        [ -e "$D/held" ] || fail "the permission group did not come up"
}
hold "$D"/tree/f*

step "(a) every worker held in open: the watchdog goes unfed"
WATCHDOG_USEC=4000000 NOTIFY_SOCKET="$D/notify.sock" IVERD_LOG_STDERR=1 "$BUILD/iverd" --policy "$D/p.policy" \
        --runtime-dir "$D/run" --state-dir "$D/state" --tpm none --on-access none >>"$D/iverd.log" 2>&1 &
IVERD_PID=$!
for _ in $(seq 300); do grep -q "made no progress" "$D/iverd.log" && break; sleep 0.05; done
grep -q "made no progress.*at: [^)]*$D/tree/f" "$D/iverd.log" || fail "no stall line naming a held file within 15 s"
grep "made no progress" "$D/iverd.log"
sleep 3
python3 - "$D/notify.log" <<'PY' || fail "WATCHDOG=1 went on while the workers were stalled"
import sys, time
now = time.monotonic()
t = [float(l.split()[0]) for l in open(sys.argv[1]) if "WATCHDOG=1" in l]
print("pings before the stall: %d, last %.1f s ago" % (len(t), now - t[-1] if t else -1))
sys.exit(0 if t and now - t[-1] >= 2.5 else 1)
PY
[ "$(grep -c "made no progress" "$D/iverd.log")" = 1 ] || fail "the stall was logged more than once"
kill -0 "$IVERD_PID" || fail "iverd ended"

step "(b) the permission group closed: the workers go on, the watchdog is fed again"
T=$(python3 -c 'import time; print(time.monotonic())')
stop "$HOLD_PID"; HOLD_PID=
for _ in $(seq 100); do
        python3 - "$D/notify.log" "$T" <<'PY' && break
import sys
sys.exit(0 if any(float(l.split()[0]) > float(sys.argv[2]) for l in open(sys.argv[1]) if "WATCHDOG=1" in l) else 1)
PY
        sleep 0.05
done
python3 - "$D/notify.log" "$T" <<'PY' || fail "WATCHDOG=1 did not resume within 5 s of the workers going on"
import sys
sys.exit(0 if any(float(l.split()[0]) > float(sys.argv[2]) for l in open(sys.argv[1]) if "WATCHDOG=1" in l) else 1)
PY
grep -q "progress again" "$D/iverd.log" || fail "no line saying the workers progress again"
for _ in $(seq 200); do [ "$(grep -c "$D/tree/f" "$D/run/ascii_runtime_measurements" 2>/dev/null)" -ge $FILES ] && break; sleep 0.05; done
n=$(grep -c "$D/tree/f" "$D/run/ascii_runtime_measurements" || true)
[ "$n" -ge $FILES ] || fail "$n of $FILES files listed after the workers went on"
echo "all $FILES files listed"

step "(c) the walk's statx thread held in a directory's open: the stall line names the directory"
stop "$IVERD_PID"; IVERD_PID=
mkdir -p "$D/tree2/sub"
echo "file" >"$D/tree2/sub/g"
printf 'measure path="%s/tree/**"\nmeasure path="%s/tree2/**"\n' "$D" "$D" >"$D/p.policy"
hold "$D/tree2/sub"
: >"$D/iverd.log"
WATCHDOG_USEC=4000000 NOTIFY_SOCKET="$D/notify.sock" IVERD_LOG_STDERR=1 "$BUILD/iverd" --policy "$D/p.policy" \
        --runtime-dir "$D/run" --state-dir "$D/state" --tpm none --on-access none >>"$D/iverd.log" 2>&1 &
IVERD_PID=$!
for _ in $(seq 300); do grep -q "made no progress" "$D/iverd.log" && break; sleep 0.05; done
grep "made no progress" "$D/iverd.log" || true
grep -q "made no progress.*at: [^)]*$D/tree2/sub" "$D/iverd.log" || fail "no stall line naming the held directory within 15 s"
stop "$HOLD_PID"; HOLD_PID=
for _ in $(seq 200); do grep -q "$D/tree2/sub/g" "$D/run/ascii_runtime_measurements" 2>/dev/null && break; sleep 0.05; done
grep -q "$D/tree2/sub/g" "$D/run/ascii_runtime_measurements" || fail "the file in the held directory was not listed after it went on"
echo "the held directory's file listed once it went on"
echo; echo "PASS"
