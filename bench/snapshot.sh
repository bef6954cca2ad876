#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# bench/snapshot.sh [BUILD_DIR] [FILES] — what the cache snapshot costs the
# daemon at FILES (default 200,000) small files on a private tmpfs, the state
# directory under /var/tmp (a disk): the daemon's peak RSS across the periodic
# snapshot (written within a minute of a change; VmHWM reset first), the
# longest status call while it waits for it (the loop's stall), the snapshot's
# size, then the peak RSS of a daemon restarted from it, and its restore time.
# Everything it starts is stopped by pid and the tmpfs is unmounted on exit.
set -u
BUILD=$(realpath "${1:-${IVER_BUILD_DIR:-build}}")
N=${2:-200000}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../tests/integration" && pwd)
[[ $(id -u) -eq 0 ]] || { echo "needs root (tmpfs mount)" >&2; exit 77; }
W=$(mktemp -d /var/tmp/iver-snapshot.XXXXXX); M=$W/mnt; mkdir -p "$M" "$W/state" "$W/run"; chmod 755 "$W/run"
mount -t tmpfs -o size=3g iver-snapshot "$M" || exit 1
P=
stop() { [[ -n $P ]] || return 0; kill "$P" 2>/dev/null; for _ in $(seq 100); do kill -0 "$P" 2>/dev/null || break; sleep 0.1; done; kill -9 "$P" 2>/dev/null; wait "$P" 2>/dev/null; P=; }
cleanup() { set +e; stop; umount "$M"; rm -rf "$W"; }
trap cleanup EXIT
python3 "$here/scale-tree.py" "$M/tree" "$N" 0 >/dev/null
printf 'measure path="%s/tree/**"\n' "$M" >"$W/p.policy"; : >"$W/iverd.conf"
export IVERD_SOCKET=$W/run/s IVERCTL_NO_PROGRESS=1
start() {
        "$BUILD/iverd" --config "$W/iverd.conf" --policy "$W/p.policy" --runtime-dir "$W/run" --state-dir "$W/state" \
                --socket "$IVERD_SOCKET" --tpm none --on-access none >>"$W/iverd.log" 2>&1 &
        P=$!
        for _ in $(seq 100); do "$BUILD/iverctl" status >/dev/null 2>&1 && break; sleep 0.05; done
        "$BUILD/iverctl" settle --timeout 600 >/dev/null
}
kb() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$P/status"; }
start
echo "settled: $N files, RSS $(kb VmRSS) kB, HWM $(kb VmHWM) kB"
echo 5 >"/proc/$P/clear_refs"
python3 - "$BUILD/iverctl" "$W/state" <<'PY'
import os, subprocess, sys, time
ctl, state = sys.argv[1], sys.argv[2]
worst, n, end = 0.0, 0, time.time() + 75
while time.time() < end:
    s = time.monotonic()
    subprocess.run([ctl, "status"], stdout=subprocess.DEVNULL)
    worst, n = max(worst, time.monotonic() - s), n + 1
    time.sleep(0.02)
print(f"status calls while waiting for the snapshot: {n}, the longest {worst * 1000:.0f} ms")
PY
echo "snapshot: $(stat -c %s "$W/state/cache.snap" 2>/dev/null || echo none) bytes"
echo "across the snapshot: RSS $(kb VmRSS) kB, HWM $(kb VmHWM) kB"
stop
start
echo "restarted from it and settled: RSS $(kb VmRSS) kB, HWM $(kb VmHWM) kB"
grep -a -o "Restored .*" "$W/iverd.log"
