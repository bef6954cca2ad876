#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# On-access latency: open()+close() of a measured, unchanged file with no
# fanotify, with a bare fanotify permission round trip, and with iverd running
# in on-access mode (fanotify filesystem mark, notification class). A private
# tmpfs keeps the marks off the rest of the system. Needs root.
#   bash bench/onaccess.sh [BUILD_DIR]
set -euo pipefail
B=${1:-build}
[ -x "$B/bench/bench-onaccess_latency" ] || { echo "build first: cmake --build $B"; exit 1; }
D=$(mktemp -d /tmp/iver-bench-oa.XXXXXX)
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null; mountpoint -q "$D/mnt" && umount "$D/mnt"; rm -rf "$D"; }
trap cleanup EXIT INT TERM
mkdir -p "$D/mnt" "$D/run"
mount -t tmpfs -o size=64m tmpfs "$D/mnt"
mkdir -p "$D/mnt/tree"; head -c 65536 /dev/urandom > "$D/mnt/tree/file"
F=$D/mnt/tree/file
plain=$("$B/bench/bench-onaccess_latency" plain "$F")
perm=$("$B/bench/bench-onaccess_latency" perm "$F")
printf 'measure path="%s/mnt/tree/**"\n' "$D" > "$D/p.policy"
for mode in exec open; do
        IVERD_LOG_STDERR=1 "$B/iverd" --policy "$D/p.policy" --runtime-dir "$D/run" --state-dir "$D/run" --tpm none \
                --on-access $mode 2>"$D/iverd.log" &
        PID=$!
        for _ in $(seq 100); do "$B/iverctl" --socket "$D/run/iverd.sock" status >/dev/null 2>&1 && break; sleep 0.05; done
        "$B/iverctl" --socket "$D/run/iverd.sock" settle >/dev/null
        eval "iverd_$mode=\$(\"$B/bench/bench-onaccess_latency\" plain \"\$F\")"
        kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
done
echo "machine: $(nproc) cores, $(uname -r)"
printf '| setup | open()+close() median | vs no fanotify | vs bare permission round trip |\n|---|---|---|---|\n'
row() { printf '| %s | %.2f µs | %.2f× | %.2f× |\n' "$1" "$(echo "$2/1000" | bc -l)" "$(echo "$2/$plain" | bc -l)" "$(echo "$2/$perm" | bc -l)"; }
row "no fanotify" "$plain"
row "bare fanotify FAN_OPEN_PERM listener (answers at once)" "$perm"
row "iverd --on-access exec (file measured, unchanged)" "$iverd_exec"
row "iverd --on-access open (file measured, unchanged)" "$iverd_open"
