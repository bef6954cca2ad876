#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Load (issue 9): one iverd (--tpm none: the daemon's own cost) on 1,000 files.
#  7a. a burst of 100,000 modifications (open/write/close; 1,000 files x 100)
#  7b. a sustained 5,000 modifications/s for IVER_FAULT_LOAD_SECONDS (default
#      15; the issue's full run: 60)
# VmRSS/VmHWM and the queue (status pending) are sampled every 0.2 s; peak RSS
# must stay under 128 MiB and pending under files + 100 (coalescing per file);
# at the end every file's final content is measured: its sha256 is listed,
# iverctl list = sha256sum, no template digest twice.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-faults.sh
source "$here/lib-faults.sh"
# not a test of names at rest: a settle after a change need not wait the 2 s
# a name takes to come to rest (IVERD_TEST_REST_SETTLE_MS, iverd(8))
export IVERD_TEST_REST_SETTLE_MS=${IVERD_TEST_REST_SETTLE_MS:-300}
faults_init load
SECS=${IVER_FAULT_LOAD_SECONDS:-15}
NF=1000
T=$D/tree
python3 - "$T" "$NF" <<'PY'
import sys
for i in range(int(sys.argv[2])):
    open(f"{sys.argv[1]}/f{i:04d}", 'w').write(f"initial {i}\n")
PY
printf 'measure path="%s/**"\n' "$T" >"$D/p.policy"
IVERD_TPM_ARGS=(--tpm none --workers 2)
start_iverd
ctl settle --timeout 60 >/dev/null

cat >"$D/load.py" <<'PY'
import json, os, subprocess, sys, time
def writer(d, nf, total, rate, part=0, parts=1):
    """total modifications (open/write/close) round-robin over the files i of nf with
    i % parts == part; rate/s (0: as fast as possible)"""
    t0 = time.monotonic()
    mine = [i for i in range(nf) if i % parts == part]
    for n in range(total):
        i = mine[n % len(mine)]
        if rate and n % 50 == 0:
            ahead = t0 + n / rate - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
        fd = os.open(f"{d}/f{i:04d}", os.O_WRONLY | os.O_TRUNC)
        os.write(fd, f"file {i} version {n // nf} {n}\n".encode() * (1 + i % 5))
        os.close(fd)
    dt = time.monotonic() - t0
    print(f"{total} {dt:.2f} {total / dt:.0f}")
def sampler(pid, ctl, stop, out):
    with open(out, 'w') as f:
        while not os.path.exists(stop):
            t = time.monotonic()
            try:
                st = open(f"/proc/{pid}/status").read()
            except OSError:
                break
            kv = {l.split(':')[0]: int(l.split()[1]) for l in st.splitlines() if l.startswith(('VmHWM', 'VmRSS'))}
            try:
                r = json.loads(subprocess.run([ctl, "status", "--json"], capture_output=True, timeout=5).stdout)
            except Exception:
                r = {}
            f.write(f"{t:.2f} {kv.get('VmHWM', 0)} {kv.get('VmRSS', 0)} {r.get('pending', -1)} {r.get('peak_queued', -1)}\n")
            f.flush()
            time.sleep(max(0, 0.2 - (time.monotonic() - t)))
if sys.argv[1] == 'writer':
    writer(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7]))
else:
    sampler(*sys.argv[2:])
PY

PEAK_HWM=0
# load KEY TAG TOTAL RATE: two writer processes (one per half of the files)
load() {
        local key=$1 tag=$2 total=$3 rate=$4 sp out n dt achieved hwm maxrss maxpend base st w0 w1
        base=$(rss_kb "$IVERD_PID")
        rm -f "$D/stop"
        python3 "$D/load.py" sampler "$IVERD_PID" "$IVERCTL" "$D/stop" "$D/samples.$key" &
        sp=$!; track_pid "$sp"
        st=$SECONDS
        python3 "$D/load.py" writer "$T" "$NF" $((total / 2)) "$(python3 -c "print($rate / 2)")" 0 2 >"$D/w0.$key" &
        w0=$!; track_pid "$w0"
        python3 "$D/load.py" writer "$T" "$NF" $((total / 2)) "$(python3 -c "print($rate / 2)")" 1 2 >"$D/w1.$key" &
        w1=$!; track_pid "$w1"
        wait "$w0" || fail "$tag: writer failed"; wait "$w1" || fail "$tag: writer failed"
        untrack_pid "$w0"; untrack_pid "$w1"
        read -r n dt achieved <<<"$(cat "$D/w0.$key" "$D/w1.$key" | awk '{ n += $1; if ($2 > t) t = $2 } END { printf "%d %.2f %.0f\n", n, t, n / t }')"
        ctl settle --timeout 300 >/dev/null || fail "$tag: settle after the load"
        local settle_s=$((SECONDS - st))
        sleep 0.4; touch "$D/stop"; wait "$sp"; untrack_pid "$sp"
        alive || return
        hwm=$(rss_kb "$IVERD_PID" VmHWM)
        maxrss=$(awk '{ if ($3 > m) m = $3 } END { print m + 0 }' "$D/samples.$key")
        maxpend=$(awk '{ if ($4 > m) m = $4 } END { print m + 0 }' "$D/samples.$key")
        ((hwm > PEAK_HWM)) && PEAK_HWM=$hwm
        note "$tag: $n modifications in $dt s ($achieved/s); writer start to settled: ${settle_s} s"
        note "$tag: RSS before ${base} kB, highest sampled VmRSS ${maxrss} kB, VmHWM ${hwm} kB; highest sampled pending ${maxpend}; $(wc -l <"$D/samples.$key") samples"
        note "$tag: status coalesced_events $(js coalesced_events) inotify_overflows $(js inotify_overflows) scans $(js scans) list_length $(js list_length)"
        ((hwm < 128 * 1024)) || fail "$tag: peak RSS ${hwm} kB is not bounded (>= 128 MiB)"
        ((maxpend <= NF + 100)) || fail "$tag: $maxpend checks pending for $NF files (no coalescing?)"
        check_all "$tag" "$T"
        row "$tag" "$n" "$C_LOST" "$C_DUP" "$((C_WRONG + C_STALE))" "$CRASHES" \
                "$achieved/s; VmHWM $((hwm / 1024)) MiB; max pending $maxpend"
        LAST_RATE=$achieved
}

step "7a. burst: 100,000 modifications of $NF files"
load burst "7a. burst of 100,000 modifications" 100000 0

step "7b. sustained 5,000 modifications/s for $SECS s"
load sustained "7b. sustained 5,000/s for ${SECS}s" $((5000 * SECS)) 5000
((LAST_RATE >= 4500)) || note "(the writer reached only $LAST_RATE/s on this machine)"
note "peak RSS (VmHWM) under load: $PEAK_HWM kB"
stop_iverd
faults_summary
