#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# bench/verbcost.sh [BUILD_DIR] [FILES] — what the verbs that return the cache
# or the list cost the daemon at FILES (default 200,000) small files on a
# private tmpfs, with swtpm: for log, log --binary, list, quote and policy
# export, the wall time, the longest wait of a status call made meanwhile (the
# loop's stall) and the daemon's peak RSS during the verb (VmHWM, reset before
# each with clear_refs 5). Everything it starts is stopped by pid and the
# tmpfs is unmounted on exit.
set -u
BUILD=$(realpath "${1:-${IVER_BUILD_DIR:-build}}")
N=${2:-200000}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../tests/integration" && pwd)
[[ $(id -u) -eq 0 ]] || { echo "needs root (tmpfs mount)" >&2; exit 77; }
W=$(mktemp -d /tmp/iver-verbcost.XXXXXX); M=$W/mnt; mkdir -p "$M" "$W/tpm" "$W/state"
mount -t tmpfs -o size=3g iver-verbcost "$M" || exit 1
PIDS=()
cleanup() {
        set +e
        for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
        for p in "${PIDS[@]}"; do for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done; kill -9 "$p" 2>/dev/null; done
        umount "$M"; rm -rf "$W"
}
trap cleanup EXIT
python3 "$here/scale-tree.py" "$M/tree" "$N" 20 >/dev/null
swtpm socket --tpm2 --server type=unixio,path="$W/swtpm.sock" --ctrl type=unixio,path="$W/swtpm.sock.ctrl" \
        --tpmstate dir="$W/tpm" --flags startup-clear,not-need-init >"$W/swtpm.log" 2>&1 & PIDS+=($!)
for _ in $(seq 100); do [[ -S $W/swtpm.sock ]] && break; sleep 0.05; done
printf 'measure path="%s/tree/**"\n' "$M" >"$W/p.policy"; : >"$W/iverd.conf"
export IVERD_SOCKET=$W/iverd.sock TSS2_LOG=all+none IVERCTL_NO_PROGRESS=1
"$BUILD/iverd" --config "$W/iverd.conf" --policy "$W/p.policy" --runtime-dir "$M/run" --state-dir "$W/state" \
        --socket "$IVERD_SOCKET" --tpm "swtpm:path=$W/swtpm.sock" --pcr 23 --on-access none >"$W/iverd.log" 2>&1 &
P=$!; PIDS+=($P)
for _ in $(seq 100); do "$BUILD/iverctl" status >/dev/null 2>&1 && break; sleep 0.05; done
"$BUILD/iverctl" settle --timeout 600 >/dev/null || { echo "iverd did not settle" >&2; exit 1; }
sleep 2
kb() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$P/status"; }
secs() { python3 -c "import sys; print('%.3f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$1" "$2"; }
echo "settled: $N files, $(wc -c <"$M/run/binary_runtime_measurements") list bytes, RSS $(kb VmRSS) kB, HWM $(kb VmHWM) kB"
run() {
        local name=$1; shift
        echo 5 >"/proc/$P/clear_refs"
        local t0 s0 st c rc
        t0=$(date +%s.%N)
        "$BUILD/iverctl" "$@" >"$W/out" 2>&1 & c=$!
        sleep 0.05
        s0=$(date +%s.%N); "$BUILD/iverctl" status >/dev/null; st=$(secs "$s0" "$(date +%s.%N)")
        wait $c; rc=$?
        printf '%-16s exit %d  %6s s  status meanwhile %6s s  peak RSS %7s kB  RSS after %7s kB  output %s B\n' "$name" $rc \
                "$(secs "$t0" "$(date +%s.%N)")" "$st" "$(kb VmHWM)" "$(kb VmRSS)" "$(wc -c <"$W/out")"
}
run "log" log
run "log --binary" log --binary
run "list" list
run "quote" quote --nonce 0011 --out "$W/q"
run "policy export" policy export --keylime --out "$W/kp.json"
