#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Rescan-only directories (watch limit reached: here every inotify_add_watch
# fails with ENOSPC, and fanotify_init fails, through an LD_PRELOAD shim): a file deleted, one created
# and one changed between two rescans are all noticed — the deleted one
# leaves `iverctl list` (mark and sweep), the others are measured.
set -euo pipefail
# not a test of names at rest: a settle after a change need not wait the 2 s
# a name takes to come to rest (IVERD_TEST_REST_SETTLE_MS, iverd(8))
export IVERD_TEST_REST_SETTLE_MS=${IVERD_TEST_REST_SETTLE_MS:-300}
BUILD=${IVER_BUILD_DIR:-/work/main/build}
command -v cc >/dev/null || { echo "SKIP: no C compiler for the shim"; exit 77; }
D=$(mktemp -d /tmp/iver-test-sweep.XXXXXX)
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null; rm -rf "$D"; }
trap cleanup EXIT
trap "exit 1" INT TERM HUP
fail() { echo "FAIL: $*"; cat "$D/iverd.log"; exit 1; }
cat >"$D/nowatch.c" <<'C'
#include <errno.h>
#include <stdint.h>
int inotify_add_watch(int fd, const char *path, uint32_t mask) {
        (void) fd; (void) path; (void) mask;
        errno = ENOSPC;
        return -1;
}
int fanotify_init(unsigned flags, unsigned event_f_flags) {  /* no whole-filesystem tracking either */
        (void) flags; (void) event_f_flags;
        errno = ENOSYS;
        return -1;
}
C
cc -shared -fPIC -o "$D/nowatch.so" "$D/nowatch.c"
mkdir -p "$D/tree/sub" "$D/run"
for i in 1 2 3; do echo "file $i" >"$D/tree/sub/f$i"; done
printf 'measure path="%s/tree/**"\n' "$D" >"$D/p.policy"
export IVERD_SOCKET=$D/run/iverd.sock
ctl() { "$BUILD/iverctl" "$@"; }
IVERD_LOG_STDERR=1 LD_PRELOAD="$D/nowatch.so" "$BUILD/iverd" --on-access none --policy "$D/p.policy" --runtime-dir "$D/run" \
        --state-dir "$D/run" --tpm none >"$D/iverd.log" 2>&1 &
PID=$!
for _ in $(seq 100); do ctl status >/dev/null 2>&1 && break; sleep 0.05; done
ctl settle
[ "$(ctl status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["unwatched_dirs"])')" -gt 0 ] \
        || fail "the shim did not take: directories are watched"
[ "$(ctl list "$D/tree" | wc -l)" = 3 ] || fail "initial scan did not measure 3 files"
rm "$D/tree/sub/f2"
echo new >"$D/tree/sub/f4"
echo changed >"$D/tree/sub/f3"
ctl rescan
ctl settle
ctl list "$D/tree" | tee "$D/list.txt"
grep -q "/sub/f2\$" "$D/list.txt" && fail "deleted file still listed after a rescan"
for f in f1 f3 f4; do
        h=$(sha256sum "$D/tree/sub/$f" | cut -d' ' -f1)
        grep -q "^sha256:$h .*/sub/$f\$" "$D/list.txt" || fail "$f not measured with its current digest"
done
echo PASS
