#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Sanitizer runs (issue 9). Needs root, like the integration tests.
#
#   scripts/test-sanitize.sh          ASan+UBSan build (build-asan, gcc, -Werror):
#                                     unit tests, then integration tests
#   scripts/test-sanitize.sh --tsan   also a ThreadSanitizer build (build-tsan) and
#                                     iverd's worker pool under it (TSAN=1 likewise)
#   scripts/test-sanitize.sh --tsan-only
#
# Every sanitizer report of every process (the tests, and the iverd/iverctl
# they start in the background) goes to a log file in $IVER_SAN_LOGS
# (default <build>/sanitizer-logs): the run fails if any test fails or any
# report was written, and prints the reports. Extra arguments go to ctest.
# IVER_SAN_EXCLUDE: ctest -E regex of integration tests to leave out of the
# ASan run (default: integration/test-service, see below).
# Typical times on 2 cores: ASan build 1-2 min, unit 0.5 min, integration
# 4 min; --tsan adds about 1.5 min.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(pwd)

asan=1 tsan=${TSAN:-0}
args=()
for a in "$@"; do
        case $a in
                --tsan) tsan=1 ;;
                --tsan-only) tsan=1 asan=0 ;;
                *) args+=("$a") ;;
        esac
done
jobs=$(nproc)
rc=0

# Reports of all processes into one directory; the test fails on any file there.
san_env() {
        local logs=$1
        rm -rf "$logs"
        mkdir -p "$logs"
        chmod 1777 "$logs"   # tests may run iverctl as a non-root user
        # quarantine_size_mb: ASan keeps freed memory (256 MB by default) to catch
        # use-after-free; 16 MB still catches it soon after the free, and keeps
        # the RSS bounds of the load tests (128 MiB) meaningful.
        # verify_asan_link_order=0: tests LD_PRELOAD small fault shims (e.g.
        # test-rescan-sweep's inotify_add_watch → ENOSPC) ahead of the ASan
        # runtime; they intercept nothing ASan does.
        export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:quarantine_size_mb=16:thread_local_quarantine_size_kb=256:verify_asan_link_order=0:log_path=$logs/asan"
        export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$logs/ubsan"
        export TSAN_OPTIONS="halt_on_error=1:abort_on_error=1:second_deadlock_stack=1:log_path=$logs/tsan"
}
san_check() {
        local logs=$1 what=$2 f n=0
        for f in "$logs"/*; do
                [[ -e $f ]] || continue
                n=$((n + 1))
                echo "==== $what sanitizer report: $f" >&2
                cat "$f" >&2
        done
        if ((n > 0)); then
                echo "FAIL: $n $what sanitizer report(s)" >&2
                return 1
        fi
        echo "$what: zero sanitizer reports"
}

if ((asan)); then
        B=${IVER_ASAN_BUILD:-build-asan}
        LOGS=${IVER_SAN_LOGS:-$src/$B/sanitizer-logs}
        start=$SECONDS
        cmake -S . -B "$B" -DIVER_SANITIZE=ON -DIVER_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
                -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" >/dev/null   # -O1, asserts on
        cmake --build "$B" -j"$jobs"
        echo "ASan+UBSan build: $((SECONDS - start)) s"
        san_env "$LOGS"
        start=$SECONDS
        ctest --test-dir "$B" --output-on-failure -L unit -j"$jobs" "${args[@]}" || rc=1
        echo "ASan+UBSan unit tests: $((SECONDS - start)) s"
        start=$SECONDS
        # test-service runs the programs inside the hardened unit, whose
        # SystemCallFilter=~@debug denies ptrace: LeakSanitizer cannot stop the
        # world at exit and every sanitized iverctl/iverd exits 1 there. The
        # unit is tested by the normal build; here it is left out.
        ctest --test-dir "$B" --output-on-failure -L integration -E "${IVER_SAN_EXCLUDE:-^integration/test-service\$}" \
                "${args[@]}" || rc=1
        echo "ASan+UBSan integration tests: $((SECONDS - start)) s"
        san_check "$LOGS" "ASan+UBSan" || rc=1
fi

if ((tsan)); then
        B=${IVER_TSAN_BUILD:-build-tsan}
        LOGS=${IVER_SAN_LOGS_TSAN:-$src/$B/sanitizer-logs}
        start=$SECONDS
        cmake -S . -B "$B" -DIVER_TSAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
                -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" >/dev/null
        cmake --build "$B" -j"$jobs" --target iverd iverctl
        echo "TSan build: $((SECONDS - start)) s"
        san_env "$LOGS"
        start=$SECONDS
        # The worker pool under TSan: iverd (4 workers) measures a tree while it
        # is being written to, settles, re-measures on request, reloads, stops.
        IVER_BUILD_DIR=$src/$B bash scripts/tsan-workers.sh || rc=1
        echo "TSan worker-pool run: $((SECONDS - start)) s"
        san_check "$LOGS" "TSan" || rc=1
fi

if ((rc)); then
        echo "test-sanitize: FAILED" >&2
else
        echo "test-sanitize: passed"
fi
exit $rc
