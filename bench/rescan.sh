#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# bench/rescan.sh [BUILD_DIR] [SMALL] [LARGE] [K] — the cost of a rescan of
# cached, unchanged files per file, on a small tree and on a large one (issue
# 23 item 4: the small tree's cost per file at most 2x the large one's).
# Each tree (tests/integration/scale-tree.py, on a private tmpfs, left to come
# to rest) is measured by a fresh iverd (--tpm none --on-access none, no
# periodic rescan); then K rescans (`iverctl rescan; iverctl settle`), each
# timed as the CPU the daemon's threads spent (schedstat, ns). Prints the
# median per file of each tree and the ratio. Everything it starts is
# stopped by pid and the tmpfs is unmounted on exit.
set -euo pipefail
BUILD=${1:-${IVER_BUILD_DIR:-build}}
SMALL=${2:-2000}
LARGE=${3:-200000}
K=${4:-15}
SRC=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib-tmpfs.sh
source "$SRC/bench/lib-tmpfs.sh"
bench_tmpfs /var/tmp rescan t 2g

cpu_ns() { # the daemon's threads' time on a CPU so far
        local s=0 t
        for t in /proc/"$PID"/task/*/schedstat; do
                read -r v _ <"$t" && s=$((s + v))
        done
        echo "$s"
}

# per_file N: median CPU ns per file of K rescans of an N-file tree
per_file() {
        local n=$1 tree=$D/t/tree-$1 run=$D/run-$1
        python3 "$SRC/tests/integration/scale-tree.py" "$tree" "$n" >/dev/null 2>&1
        sleep 2.2 # at rest (iverd(8), Names at rest)
        mkdir -p "$run"
        printf 'measure path="%s/**"\n' "$tree" >"$run/policy"
        printf '[Measure]\nRescanIntervalSec=0\n' >"$run/conf"
        "$BUILD/iverd" --on-access none --tpm none --config "$run/conf" --policy "$run/policy" \
                --runtime-dir "$run/rt" --state-dir "$run/state" 2>"$run/log" &
        PID=$!
        export IVERD_SOCKET=$run/rt/iverd.sock
        for _ in $(seq 400); do [[ -S $IVERD_SOCKET ]] && break; sleep 0.025; done
        "$BUILD/iverctl" settle --timeout 600 >/dev/null
        "$BUILD/iverctl" rescan >/dev/null && "$BUILD/iverctl" settle --timeout 600 >/dev/null # warm
        local samples=() a b
        for _ in $(seq "$K"); do
                a=$(cpu_ns)
                "$BUILD/iverctl" rescan >/dev/null
                "$BUILD/iverctl" settle --timeout 600 >/dev/null
                b=$(cpu_ns)
                samples+=($((b - a)))
        done
        local cached
        cached=$("$BUILD/iverctl" status --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["cached_files"])')
        kill "$PID"
        wait "$PID" 2>/dev/null || true
        PID=
        bench_mount
        python3 - "$n" "$cached" "${samples[@]}" <<'PY'
import statistics, sys
n, cached = int(sys.argv[1]), int(sys.argv[2])
s = sorted(int(x) for x in sys.argv[3:])
med = statistics.median(s)
print(f"{n} files ({cached} cached): rescan CPU median {med / 1e6:.2f} ms (min {s[0] / 1e6:.2f}, max {s[-1] / 1e6:.2f}, "
      f"{len(s)} rescans) = {med / 1e3 / n:.2f} us a file", file=sys.stderr)
print(f"{med / n:.1f}")
PY
}

echo "# bench/rescan.sh $BUILD $SMALL $LARGE $K ($(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo ?), load $(cut -d' ' -f1-3 /proc/loadavg))"
s=$(per_file "$SMALL")
l=$(per_file "$LARGE")
python3 -c "print(f'small/large cost per file: {$s / $l:.2f} (target <= 2)')"
