#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# bench/syscalls.sh [BUILD_DIR] [FILES] — syscalls per measured file (issue 14
# item 1): iverd under `strace -c -f` during the initial measurement of FILES
# (default 20,000) small files on a private tmpfs, list on tmpfs, no TPM.
# Prints the strace table and total syscalls / file. Everything it starts is
# stopped by pid and the tmpfs is unmounted on exit.
set -euo pipefail
BUILD=${1:-${IVER_BUILD_DIR:-build}}
N=${2:-20000}
[[ $(id -u) -eq 0 ]] || { echo "needs root (tmpfs mount)" >&2; exit 77; }
command -v strace >/dev/null || { echo "strace not installed" >&2; exit 77; }
D=$(mktemp -d /tmp/iver-bench-sys.XXXXXX)
PID=
DPID=
# strace -o FILE PROG blocks fatal signals: stop the daemon itself, strace follows
stop() { [[ -n $DPID ]] && kill "$DPID" 2>/dev/null; [[ -n $PID ]] && wait "$PID" 2>/dev/null; PID=; DPID=; }
cleanup() {
        stop
        mountpoint -q "$D/tree" && umount "$D/tree"
        rm -rf --one-file-system -- "$D"
}
trap cleanup EXIT
mkdir -p "$D/tree" "$D/run"
mount -t tmpfs -o size=256m iver-bench "$D/tree"
python3 - "$D/tree" "$N" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(root, "d%03d" % (i // 1000))
    if i % 1000 == 0:
        os.mkdir(d)
    with open(os.path.join(d, "f%05d" % i), "wb") as f:
        f.write(b"x" * (10 + i % 190))
PY
# a file written within the rest interval (2 s) is checked again when its name
# comes to rest (iverd(8), Names at rest): start from a tree at rest, as a host
# is, or the count holds those second looks
sleep 2.2
printf 'measure path="%s/tree/**"\n' "$D" >"$D/p.policy"
export IVERD_SOCKET=$D/run/iverd.sock
IVERD_LOG_STDERR=1 strace -c -f -o "$D/strace.txt" "$BUILD/iverd" --policy "$D/p.policy" --runtime-dir "$D/run" \
        --state-dir "$D/run" --tpm none >"$D/iverd.log" 2>&1 &
PID=$!
for _ in $(seq 100); do DPID=$(pgrep -P "$PID" -x iverd) && break; sleep 0.05; done
for _ in $(seq 400); do "$BUILD/iverctl" status >/dev/null 2>&1 && break; sleep 0.05; done
"$BUILD/iverctl" settle --timeout 600 >/dev/null
n=$("$BUILD/iverctl" list "$D/tree" | wc -l)
stop
head -30 "$D/strace.txt"
total=$(awk '$NF == "total" { print $(NF-2) }' "$D/strace.txt")
echo "measured files: $n; syscalls: $total; per measured file: $(python3 -c "print(round($total / max($n, 1), 2))")"
