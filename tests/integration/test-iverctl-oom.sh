#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# iverctl checks its allocations: a reply larger than the memory iverctl may
# use ends with "iverctl: out of memory" and exit status 1 (iverctl(1)), not
# a crash. The real daemon measures 10,000 files with long names, so that
# `iverctl list` gets a reply of ~3 MB; iverctl then runs under an address
# space limit (ulimit -v) just large enough for `iverctl status` to work.
# `iverctl log` reads the list from the fd the daemon passes, an entry at a
# time: under the same limit it prints the whole list.
set -euo pipefail
BUILD=${IVER_BUILD_DIR:-/work/main/build}
D=$(mktemp -d /tmp/iver-test-ctloom.XXXXXX)
IVERD_PID=
cleanup() {
        if [ -n "$IVERD_PID" ]; then
                kill "$IVERD_PID" 2>/dev/null || true
                for _ in $(seq 50); do kill -0 "$IVERD_PID" 2>/dev/null || break; sleep 0.1; done
                kill -9 "$IVERD_PID" 2>/dev/null || true
        fi
        rm -rf "$D"
}
trap cleanup EXIT
trap "exit 1" INT TERM HUP
fail() { echo "FAIL: $*"; tail -5 "$D/iverd.log" 2>/dev/null; exit 1; }
export IVERD_SOCKET=$D/s.sock

mkdir -m 0700 "$D/run" "$D/state" "$D/tree"
python3 - "$D/tree" <<'PY'
import os, sys
for i in range(10000):
    with open(os.path.join(sys.argv[1], "n" * 200 + "%05d" % i), "w") as f:
        f.write(str(i))
PY
echo "measure path=\"$D/tree/**\"" >"$D/p.policy"
IVERD_LOG_STDERR=1 "$BUILD/iverd" --config /dev/null --policy "$D/p.policy" --runtime-dir "$D/run" \
        --state-dir "$D/state" --socket "$D/s.sock" --tpm none >"$D/iverd.log" 2>&1 &
IVERD_PID=$!
for _ in $(seq 100); do "$BUILD/iverctl" status >/dev/null 2>&1 && break; sleep 0.05; done
"$BUILD/iverctl" settle --timeout 120 >/dev/null || fail "settle"
bytes=$("$BUILD/iverctl" log | wc -c)
echo "  iverctl log without a limit: $bytes bytes"
[ "$bytes" -gt 3000000 ] || fail "the list is only $bytes bytes"

# the smallest limit (1 MiB steps) at which iverctl status works
lim=
for kb in $(seq 4096 1024 131072); do
        if (ulimit -v "$kb"; "$BUILD/iverctl" status >/dev/null 2>&1); then lim=$kb; break; fi
done
[ -n "$lim" ] || fail "iverctl status does not run under any limit up to 128 MiB"
lbytes=$("$BUILD/iverctl" list | wc -c)
echo "  iverctl list without a limit: $lbytes bytes"
rc=0
(ulimit -v "$lim"; exec "$BUILD/iverctl" list) >/dev/null 2>"$D/err" || rc=$?
echo "  ulimit -v $lim KiB: iverctl list exit $rc: $(head -c 200 "$D/err")"
[ "$rc" -lt 128 ] || fail "iverctl list crashed (exit $rc) when out of memory"
[ "$rc" -eq 1 ] && grep -q "^iverctl: out of memory" "$D/err" || fail "expected 'iverctl: out of memory' and exit 1"
rc=0
(ulimit -v "$lim"; exec "$BUILD/iverctl" log) >"$D/log.txt" 2>"$D/err" || rc=$?
echo "  ulimit -v $lim KiB: iverctl log exit $rc, $(wc -c <"$D/log.txt") bytes"
[ "$rc" -eq 0 ] || fail "iverctl log failed under the limit (exit $rc): $(head -c 200 "$D/err")"
cmp -s "$D/log.txt" "$D/run/ascii_runtime_measurements" || fail "iverctl log under the limit is not the list"
echo PASS
