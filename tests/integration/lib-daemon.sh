#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Shared by the tests that drive one real iverd on a loop mount (test-alias,
# test-atomic, test-interp, test-storm). After `source lib-daemon.sh`:
#   daemon_test_init TOOL…   checks the build and the tools (skips, exit 77,
#                            when a tool is truly missing), mounts' work dir in
#                            $W, and a cleanup trap that runs the test's own
#                            test_cleanup_more (if it defines one), keeps the
#                            daemon log in $KEEP_LOG if set, stops $IVERD_PID
#                            and $SWTPM_PID, removes the test user $SU and
#                            every mount, whatever failed
#   stop_pid PID, fail MSG (counts in $FAILS), ctl ARGS (iverctl on
#   $IVERD_SOCKET), js FIELD (a field of `status --json`, 0 when absent)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck disable=SC2034  # read by lib-mounts.sh (a 512 MB sparse image)
IVER_IMAGE_MB=${IVER_IMAGE_MB:-512}
# shellcheck source=lib-mounts.sh
source "$here/lib-mounts.sh"
BUILD=${IVER_BUILD_DIR:-/work/main/build}
IVERD_PID="" SWTPM_PID="" SU="" FAILS=0

daemon_test_init() {
        local b t
        for b in "$BUILD/iverd" "$BUILD/iverctl"; do [[ -x $b ]] || { echo "FAIL: $b not built"; exit 1; }; done
        for t in "$@"; do command -v "$t" >/dev/null || iver_skip "$t missing"; done
        iver_mounts_init
        W=$IVER_WORKDIR
        trap daemon_test_cleanup EXIT
        export TSS2_LOG=all+none IVERD_SOCKET=$W/run/iverd.sock
}

stop_pid() {
        local p=$1
        [ -n "$p" ] || return 0
        kill -CONT "$p" 2>/dev/null || true
        kill "$p" 2>/dev/null || true
        for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || return 0; sleep 0.1; done
        kill -9 "$p" 2>/dev/null || true
}

daemon_test_cleanup() {
        local rc=$?
        set +e # cleanup goes on whatever fails; (exit "$rc") below must not end it under set -e
        declare -F test_cleanup_more >/dev/null && test_cleanup_more
        [ -n "${KEEP_LOG:-}" ] && cp "$W/iverd.log" "$KEEP_LOG" 2>/dev/null
        stop_pid "$IVERD_PID"
        stop_pid "$SWTPM_PID"
        [ -n "$SU" ] && userdel "$SU" 2>/dev/null
        (exit "$rc")
        iver_mounts_cleanup
}

fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
ctl() { "$BUILD/iverctl" "$@"; }
js() { ctl status --json | python3 -c "import json,sys; print(json.load(sys.stdin).get('$1', 0))"; }
