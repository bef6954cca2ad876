#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A walk that has read every directory but still waits for a statx batch at
# the workers (a slow or hung filesystem: here an LD_PRELOAD shim makes the
# statx of any name starting "slow" take 3 s) leaves the event loop asleep:
# the loop thread spends under 0.3 s of CPU over 1.5 s of that wait (a walk
# step run every loop iteration until the batch is back spins it at ~100 %).
# The file is measured once the batch is back. Fails with the walk's defer
# source left on while only statx batches are outstanding.
set -euo pipefail
BUILD=${IVER_BUILD_DIR:-/work/main/build}
command -v cc >/dev/null || { echo "SKIP: no C compiler for the shim"; exit 77; }
D=$(mktemp -d /tmp/iver-test-walk-wait.XXXXXX)
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null; rm -rf "$D"; }
trap cleanup EXIT
trap "exit 1" INT TERM HUP
fail() { echo "FAIL: $*"; cat "$D/iverd.log"; exit 1; }
cat >"$D/slowstat.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
int statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *buf) {
        static int (*real)(int, const char *, int, unsigned, struct statx *);
        if (!real)
                real = (int (*)(int, const char *, int, unsigned, struct statx *)) dlsym(RTLD_NEXT, "statx");
        const char *base = strrchr(path, '/');
        if (strncmp(base ? base + 1 : path, "slow", 4) == 0)
                sleep(3);
        return real(dirfd, path, flags, mask, buf);
}
C
cc -shared -fPIC -o "$D/slowstat.so" "$D/slowstat.c" -ldl
mkdir -p "$D/tree/sub" "$D/run"
for i in 1 2 3; do echo "file $i" >"$D/tree/sub/f$i"; done
echo "slow file" >"$D/tree/sub/slow1"
printf 'measure path="%s/tree/**"\n' "$D" >"$D/p.policy"
export IVERD_SOCKET=$D/run/iverd.sock
IVERD_LOG_STDERR=1 LD_PRELOAD="$D/slowstat.so" "$BUILD/iverd" --on-access none --policy "$D/p.policy" \
        --runtime-dir "$D/run" --state-dir "$D/run" --tpm none >"$D/iverd.log" 2>&1 &
PID=$!
for _ in $(seq 100); do [ -S "$IVERD_SOCKET" ] && break; sleep 0.05; done
[ -S "$IVERD_SOCKET" ] || fail "no control socket"
sleep 0.5 # the walk has read the tree; the batch with slow1 is at a worker
cpu() { awk '{ print $1 }' "/proc/$PID/task/$PID/schedstat"; }
c0=$(cpu)
sleep 1.5
c1=$(cpu)
used=$(( (c1 - c0) / 1000000 ))
echo "loop thread CPU over 1.5 s of waiting for the statx batch: $used ms"
[ "$used" -lt 300 ] || fail "the loop thread spun while the walk waited for its statx batch ($used ms of CPU in 1.5 s)"
"$BUILD/iverctl" settle --timeout 30 >/dev/null || fail "no settle"
"$BUILD/iverctl" list "$D/tree/sub/slow1" | grep -q "slow1" || fail "slow1 not measured once its statx was back"
echo "PASS"
