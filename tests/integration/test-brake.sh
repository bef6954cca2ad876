#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The storm brake (brake.h) on both change trackers: the fanotify filesystem
# mark, and inotify watches (fanotify_init failing, as without CAP_SYS_ADMIN:
# an LD_PRELOAD shim). In each, a writer writes a measured file a byte at a
# time without closing it for 2 s, then gives it its final content and closes
# it. Checked: the tracker's reads paused (the kernel merged the storm's
# events: fewer events than writes), and the final content is listed under the
# file's name once the writer is done (a pause never loses the last event).
# Printed: writes, events, pauses, the daemon's CPU (% of a core; a figure,
# not asserted: bench/storm.sh). Needs root.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-faults.sh
source "$here/lib-faults.sh"
faults_init brake
command -v cc >/dev/null || die "cc not found"

cc -shared -fPIC -o "$D/nofan.so" "$here/shim-nofanotify.c" || die "cannot build the shim"
printf 'measure path="%s/tree/**"\n' "$D" >"$D/p.policy"
IVERD_TPM_ARGS=(--tpm none)
# the sum of a status counter over both trackers
count() { ctl status | awk -v a="tracking_$1" -v b="inotify_$1" '$1 == a || $1 == b { n += $2 } END { print n + 0 }'; }
hz=$(getconf CLK_TCK)

storm() { # mode (fanotify | inotify)
        local mode=$1 f=$D/tree/busy-$1
        echo seed >"$f"
        if [[ $mode == inotify ]]; then LD_PRELOAD=$D/nofan.so start_iverd; else start_iverd; fi
        ctl settle --timeout 60 >/dev/null || die "$mode: no settle"
        local tracking
        tracking=$(ctl status --json | python3 -c "import json,sys; print(' '.join(sorted({t['mode'] for t in json.load(sys.stdin)['tracking']})))")
        [[ " $tracking " == *" ${mode/fanotify/fanotify-fid} "* ]] || die "$mode: tracking is '$tracking'"
        local e0 p0 c0 c1 w
        e0=$(count events); p0=$(count pauses); c0=$(awk '{ print $14 + $15 }' "/proc/$IVERD_PID/stat")
        w=$(python3 - "$f" "$mode" <<'PY'
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)
end, n = time.monotonic() + 2, 0
while time.monotonic() < end:
    for _ in range(500):
        os.pwrite(fd, b"x", n % 4096)
        n += 1
os.ftruncate(fd, 0)
os.pwrite(fd, ("final %s\n" % sys.argv[2]).encode(), 0)
os.close(fd)
print(n)
PY
)
        c1=$(awk '{ print $14 + $15 }' "/proc/$IVERD_PID/stat")
        local events pauses
        events=$(($(count events) - e0)); pauses=$(($(count pauses) - p0))
        echo "$mode: writes $w, events $events, pauses $pauses, daemon CPU $(((c1 - c0) * 100 / hz / 2)) % of a core"
        ((pauses > 0)) || fail "$mode: the tracker never paused under the storm"
        ((events < w / 2)) || fail "$mode: $events events for $w writes: the storm's events were not merged"
        local want
        want=$(printf 'final %s\n' "$mode" | sha256sum | cut -d' ' -f1)
        for _ in $(seq 100); do
                ctl settle --timeout 30 >/dev/null
                ctl log --ascii | grep -q "sha256:$want $f\$" && break
                sleep 0.1
        done
        ctl log --ascii | grep -q "sha256:$want $f\$" || fail "$mode: the final content was not listed after the storm"
        stop_iverd
        rm -rf "$D/state" "$D/run"; mkdir -p "$D/state" "$D/run"
}

storm fanotify
storm inotify
[[ $FAILS -eq 0 ]] || exit 1
echo PASS
