#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Long fuzzing runs of the libFuzzer targets (not CI: CI runs only the seed
# corpora, `ctest -L fuzz`). Build first:
#   CC=clang cmake -S . -B build-fuzz -DIVER_FUZZ=ON -DIVER_SANITIZE=ON \
#         -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g"   # asserts stay on
#   cmake --build build-fuzz
# Usage: scripts/fuzz-run.sh SECONDS TARGET...   (TARGET: policy conf request
#        imalog-binary imalog-ascii snapshot). One process per target, all at
#        once: pass at most as many targets as there are free cores.
# New inputs go to build-fuzz/fuzz-work/<target>/ (the seed corpus in
# tests/fuzz/corpus/ is read, never written); crashes to
# build-fuzz/fuzz-artifacts/<target>/; logs to build-fuzz/fuzz-logs/<target>.log.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
build=${IVER_FUZZ_BUILD:-$here/build-fuzz}
secs=${1:?usage: fuzz-run.sh SECONDS TARGET...}
shift
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
pids=()
targets=("$@")
for t in "$@"; do
        bin=$build/fuzz/fuzz-$t
        [[ -x $bin ]] || { echo "no $bin" >&2; exit 1; }
        mkdir -p "$build/fuzz-work/$t" "$build/fuzz-artifacts/$t" "$build/fuzz-logs"
        dict=()
        [[ -f $here/tests/fuzz/$t.dict ]] && dict=(-dict="$here/tests/fuzz/$t.dict")
        case $t in
                snapshot|imalog-binary|imalog-ascii) maxlen=8192 ;;
                *) maxlen=4096 ;;
        esac
        "$bin" -max_total_time="$secs" -max_len=$maxlen -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
                "${dict[@]}" -artifact_prefix="$build/fuzz-artifacts/$t/" \
                "$build/fuzz-work/$t" "$here/tests/fuzz/corpus/$t" >"$build/fuzz-logs/$t.log" 2>&1 &
        pids+=($!)
done
rc=0
for i in "${!pids[@]}"; do
        if ! wait "${pids[$i]}"; then
                t=${targets[$i]}
                echo "fuzz-$t: FAILED, see $build/fuzz-logs/$t.log and $build/fuzz-artifacts/$t/" >&2
                rc=1
        fi
done
for t in "$@"; do
        printf '%-14s ' "$t"
        grep -E '^stat::number_of_executed_units|^stat::average_exec_per_sec|^stat::new_units_added' \
                "$build/fuzz-logs/$t.log" | tr '\n' ' '
        grep -c -E 'ERROR: |runtime error|deadly signal' "$build/fuzz-logs/$t.log" | sed 's/^/findings-lines=/'
done
exit $rc
