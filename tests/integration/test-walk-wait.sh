#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A walk that has read every directory but still waits for a statx batch at
# the workers (a slow or hung filesystem: here an LD_PRELOAD shim makes the
# statx of any name starting "slow" take 3 s) leaves the event loop asleep:
# the loop thread spends under 0.3 s of CPU over 1.5 s of that wait (a walk
# step run every loop iteration until the batch is back spins it at ~100 %).
# The file is measured once the batch is back. Fails with the walk's defer
# source left on while only statx batches are outstanding. Needs root.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-faults.sh
source "$here/lib-faults.sh"
command -v cc >/dev/null || { echo "SKIP: no C compiler for the shim"; exit 77; }
faults_init walk-wait

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
cc -shared -fPIC -o "$D/slowstat.so" "$D/slowstat.c" -ldl || die "cannot build the shim"
mkdir -p "$D/tree/sub"
for i in 1 2 3; do echo "file $i" >"$D/tree/sub/f$i"; done
echo "slow file" >"$D/tree/sub/slow1"
printf 'measure path="%s/tree/**"\n' "$D" >"$D/p.policy"
IVERD_TPM_ARGS=(--tpm none)
LD_PRELOAD="$D/slowstat.so" start_iverd
sleep 0.5 # the walk has read the tree; the batch with slow1 is at a worker
cpu() { awk '{ print $1 }' "/proc/$IVERD_PID/task/$IVERD_PID/schedstat"; }
c0=$(cpu)
sleep 1.5
c1=$(cpu)
used=$(( (c1 - c0) / 1000000 ))
echo "loop thread CPU over 1.5 s of waiting for the statx batch: $used ms"
((used < 300)) || fail "the loop thread spun while the walk waited for its statx batch ($used ms of CPU in 1.5 s)"
ctl settle --timeout 30 >/dev/null || die "no settle"
ctl list "$D/tree/sub/slow1" | grep -q "slow1" || fail "slow1 not measured once its statx was back"
[[ $FAILS -eq 0 ]] || exit 1
echo PASS
