#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# bench/storm.sh [BUILD_DIR] [SECONDS] — what a write storm in a measured tree
# costs the daemon: one writer (python, pwrite) writes a byte at a time to a file of
# the measured tree on a private tmpfs for SECONDS (default 5), against iverd
# with and without its storm brake (IVERD_TEST_NO_BRAKE, iverd(8)). Prints
# for each: the writes made, the tracker's events and pauses, the daemon's CPU
# in % of one core; then the same where the filesystem is tracked by inotify
# watches (fanotify_init failing, as without CAP_SYS_ADMIN: an LD_PRELOAD
# shim). Everything it starts is stopped by pid and the tmpfs is unmounted on
# exit.
set -euo pipefail
BUILD=${1:-${IVER_BUILD_DIR:-build}}
S=${2:-5}
# shellcheck source=bench/lib-tmpfs.sh
source "$(dirname "$0")/lib-tmpfs.sh"
bench_tmpfs /tmp storm mnt 256m
tick=$(getconf CLK_TCK)
cc -shared -fPIC -o "$D/nofan.so" "$(dirname "$0")/../tests/integration/shim-nofanotify.c"
run() { # label, env...
        local label=$1; shift
        rm -rf "${D:?}/mnt/"* "$D/state"
        mkdir -p "$D/mnt/tree" "$D/mnt/run" "$D/state"
        for i in $(seq 100); do echo "$i" >"$D/mnt/tree/f$i"; done
        printf 'measure path="%s/mnt/tree/**"\n' "$D" >"$D/p.policy"
        : >"$D/c.conf"
        # without fanotify there is no on-access listener either
        [[ "$*" != *nofan.so* ]] || printf '[Measure]\nOnAccess=none\n' >"$D/c.conf"
        export IVERD_SOCKET=$D/mnt/run/iverd.sock IVERCTL_NO_PROGRESS=1
        env "$@" IVERD_LOG_STDERR=1 "$BUILD/iverd" --config "$D/c.conf" --policy "$D/p.policy" \
                --runtime-dir "$D/mnt/run" --state-dir "$D/state" --tpm none >"$D/iverd.log" 2>&1 &
        PID=$!
        for _ in $(seq 200); do "$BUILD/iverctl" status >/dev/null 2>&1 && break; sleep 0.05; done
        "$BUILD/iverctl" settle --timeout 60 >/dev/null
        local c0 c1 e0 e1 w
        c0=$(awk '{ print $14 + $15 }' "/proc/$PID/stat")
        e0=$("$BUILD/iverctl" status | awk '$1 == "tracking_events" || $1 == "inotify_events" { n += $2 } END { print n }')
        w=$(python3 - "$D/mnt/tree/busy" "$S" <<'PY'
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
end, n = time.monotonic() + float(sys.argv[2]), 0
while time.monotonic() < end:
    for _ in range(1000):
        os.pwrite(fd, b"x", n % (1 << 20))
        n += 1
os.close(fd)
print(n)
PY
)
        c1=$(awk '{ print $14 + $15 }' "/proc/$PID/stat")
        e1=$("$BUILD/iverctl" status | awk '$1 == "tracking_events" || $1 == "inotify_events" { n += $2 } END { print n }')
        local pauses
        pauses=$("$BUILD/iverctl" status | awk '$1 == "tracking_pauses" || $1 == "inotify_pauses" { n += $2 } END { print n }')
        "$BUILD/iverctl" settle --timeout 60 >/dev/null || { echo "FAIL: no settle after the storm" >&2; exit 1; }
        kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
        printf '%-12s writes %10s  events %9s  pauses %6s  daemon CPU %5.1f %% of a core\n' "$label" "$w" \
                $((e1 - e0)) "${pauses:-0}" "$(python3 -c "print(100 * ($c1 - $c0) / $tick / $S)")"
}
echo "one writer, a byte at a time, ${S} s, measured file on tmpfs:"
run "no brake" IVERD_TEST_NO_BRAKE=1
run "brake"
echo "the same, tracked by inotify watches (no fanotify):"
run "no brake" IVERD_TEST_NO_BRAKE=1 LD_PRELOAD="$D/nofan.so"
run "brake" LD_PRELOAD="$D/nofan.so"
