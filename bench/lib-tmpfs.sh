# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# Sourced by the bench scripts that run a daemon on a private tmpfs.
# bench_tmpfs BASE NAME SUBDIR SIZE: D, a new directory under BASE, with a
# tmpfs of SIZE mounted at $D/SUBDIR (BENCH_MNT); on exit the daemon ($PID,
# if set) is stopped, the tmpfs unmounted and D removed.
bench_tmpfs() {
        [[ $(id -u) -eq 0 ]] || { echo "needs root (tmpfs mount)" >&2; exit 77; }
        D=$(mktemp -d "$1/iver-bench-$2.XXXXXX")
        BENCH_MNT=$D/$3
        BENCH_SIZE=$4
        PID=
        trap bench_cleanup EXIT
        mkdir -p "$BENCH_MNT"
        bench_mount
}

# (Re)mount the tmpfs: what it held is gone.
bench_mount() {
        mountpoint -q "$BENCH_MNT" && umount "$BENCH_MNT"
        mount -t tmpfs -o "size=$BENCH_SIZE" iver-bench "$BENCH_MNT"
}

bench_cleanup() {
        [[ -n $PID ]] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
        mountpoint -q "$BENCH_MNT" && umount "$BENCH_MNT"
        rm -rf --one-file-system -- "$D"
}
