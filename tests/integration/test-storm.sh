#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# No use is allowed silently under a write storm (issue 22 item 1), against
# the real daemon (OnAccess=exec, software TPM, the measured tree and the
# storm on one ext4 loop mount, so the filesystem mark sees both):
#   an unprivileged user (created here, removed on exit) runs 2 processes
#   writing distinct files in its own directory on the marked filesystem
#   (create, write, close, and unlink of the file 1,000 before: the image's
#   inodes last), while root rewrites and executes 50 measured scripts one
#   after another. Each tampered content must be listed under its name
#   (digest), or a violation entry must name it. Printed: listed of 50,
#   root's exec latency p50/p99/max idle and under the storm, the daemon's
#   CPU (% of one core) during the storm, the storm's file rate, the
#   daemon's overflow counters. Figures are the machine's: assert only the
#   listing (the latency bound is checked loosely, IVER_STORM_P99_MS).
# IVER_STORM_SECONDS (default 0: as long as root's 50 runs take).
set -euo pipefail
# not a test of names at rest: a settle after a change need not wait the 2 s
# a name takes to come to rest (IVERD_TEST_REST_SETTLE_MS, iverd(8))
export IVERD_TEST_REST_SETTLE_MS=${IVERD_TEST_REST_SETTLE_MS:-300}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-daemon.sh
source "$here/lib-daemon.sh"
daemon_test_init swtpm useradd userdel setpriv python3
STORM_PIDS=()
test_cleanup_more() { for p in "${STORM_PIDS[@]}"; do stop_pid "$p"; done; }

iver_mount ext4; M=$IVER_MNT; T=$M/tree
mkdir -p "$T" "$W/run" "$W/state" "$W/tpm"
SU=iverstorm$$
useradd -r -M -d /nonexistent -s /usr/sbin/nologin "$SU"
mkdir -p "$M/home/$SU"; chown "$SU:" "$M/home/$SU"; chmod 0711 "$W"
printf 'measure path="%s/**"\n' "$T" >"$W/p.policy"
printf '[Measure]\nOnAccess=exec\n' >"$W/iverd.conf"
for k in $(seq 50); do printf '#!/bin/sh\necho good %s\n' "$k" >"$T/s$k"; chmod +x "$T/s$k"; done

cat >"$W/storm.py" <<'PY'
import os, sys
d, tag = sys.argv[1], sys.argv[2]
i = 0
while True:
    p = os.path.join(d, "%s.%d" % (tag, i))
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, b"x" * 64)
    os.close(fd)
    if i >= 1000:
        os.unlink(os.path.join(d, "%s.%d" % (tag, i - 1000)))
    i += 1
    if i % 1000 == 0:
        with open(os.path.join(d, "count.%s" % tag), "w") as f:
            f.write(str(i))
PY
# root: rewrite script k (tag) and run it; latencies in ms, one per line
runs() { python3 - "$T" "$1" <<'PY'
import os, subprocess, sys, time
tree, tag = sys.argv[1], sys.argv[2]
for k in range(1, 51):
    p = os.path.join(tree, "s%d" % k)
    with open(p, "w") as f:
        f.write("#!/bin/sh\necho %s %d\n" % (tag, k))
    t = time.perf_counter()
    subprocess.run([p], stdout=subprocess.DEVNULL, check=True)
    print("%.3f" % ((time.perf_counter() - t) * 1000))
    time.sleep(0.1)
PY
}
pct() { sort -n | awk '{ a[NR] = $1 } END { i50 = int(NR * 0.5 + 0.5); i99 = int(NR * 0.99 + 0.5); if (i99 < 1) i99 = 1
        printf "p50/p99/max %.1f/%.1f/%.1f ms", a[i50], a[i99], a[NR] }'; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$IVERD_PID/stat"; }
storm_start() {
        for n in 1 2; do
                setpriv --reuid="$SU" --regid="$SU" --clear-groups /usr/bin/python3 "$W/storm.py" "$M/home/$SU" "w$n" &
                STORM_PIDS+=($!)
        done
        sleep 2 # the storm is under way
}
storm_stop() { for p in "${STORM_PIDS[@]}"; do stop_pid "$p"; done; STORM_PIDS=(); }

swtpm socket --tpm2 --server type=unixio,path="$W/swtpm.sock" --ctrl type=unixio,path="$W/swtpm.sock.ctrl" \
        --tpmstate dir="$W/tpm" --flags startup-clear,not-need-init >>"$W/swtpm.log" 2>&1 &
SWTPM_PID=$!
for _ in $(seq 100); do [ -S "$W/swtpm.sock" ] && break; sleep 0.05; done
# control: the storm's cost to root's execs on this machine, no daemon
storm_start; runs nodaemon >"$W/nodaemon.ms"; storm_stop
rm -f "$M/home/$SU"/*

IVERD_LOG_STDERR=1 "$BUILD/iverd" --config "$W/iverd.conf" --policy "$W/p.policy" --runtime-dir "$W/run" \
        --state-dir "$W/state" --tpm "swtpm:path=$W/swtpm.sock" --pcr 23 >"$W/iverd.log" 2>&1 &
IVERD_PID=$!
for _ in $(seq 200); do ctl status >/dev/null 2>&1 && break; sleep 0.05; done
ctl settle --timeout 60 >/dev/null
[ "$(js on_access)" = exec ] || { cat "$W/iverd.log"; echo "FAIL: on-access exec not active"; exit 1; }


runs idle >"$W/idle.ms"
ctl settle --timeout 60 >/dev/null
echo "idle: root's exec $(pct <"$W/idle.ms"); storm without the daemon (control): $(pct <"$W/nodaemon.ms")"

storm_start
hz=$(getconf CLK_TCK); c0=$(cpu_ticks); t0=$(date +%s.%N)
runs storm >"$W/storm.ms"
c1=$(cpu_ticks); t1=$(date +%s.%N)
files=$(awk '{ s += $1 } END { print s + 0 }' "$M/home/$SU"/count.* 2>/dev/null || echo 0)
storm_stop
cpu=$(awk -v a="$c0" -v b="$c1" -v s="$t0" -v e="$t1" -v hz="$hz" 'BEGIN { printf "%.0f", 100 * (b - a) / hz / (e - s) }')
rate=$(awk -v f="$files" -v s="$t0" -v e="$t1" 'BEGIN { printf "%.0f", f / (e - s + 2) }')
ctl settle --timeout 120 >/dev/null || true

ZERO=0000000000000000000000000000000000000000
ctl log --ascii >"$W/list"
listed=0 digest=0 viol=0
for k in $(seq 50); do
        d=$(printf '#!/bin/sh\necho storm %s\n' "$k" | sha256sum | cut -d' ' -f1)
        if awk -v p="$T/s$k" -v d="sha256:$d" '$NF == p && $4 == d { f = 1 } END { exit !f }' "$W/list"; then
                digest=$((digest + 1)); listed=$((listed + 1))
        elif awk -v p="$T/s$k" -v z="$ZERO" '$NF == p && $2 == z { f = 1 } END { exit !f }' "$W/list"; then
                viol=$((viol + 1)); listed=$((listed + 1))
        fi
done
unnamed=$(awk -v z="$ZERO" '$2 == z && $NF ~ /^unchecked:/' "$W/list" | wc -l)
echo "storm: user $SU, 2 writers, ~$rate files/s; root's exec $(pct <"$W/storm.ms")"
echo "storm: tampered executions listed $listed/50 ($digest by digest, $viol by a violation; $unnamed unnamed violation entries)"
hr=$(ctl status --json | python3 -c "import json,sys; print(sum(f.get('handles_read', 0) for f in json.load(sys.stdin)['tracking']))")
echo "storm: object handles read without the kernel: $hr"
[ "$hr" -gt 1000 ] || fail "the write events' handles were not read from their bytes ($hr): open_by_handle_at for each"
echo "storm: daemon CPU $cpu % of a core; on-access overflows $(js on_access_overflows), unchecked $(js on_access_unchecked), timeouts $(js on_access_timeouts); change-tracking overflows $(grep -c 'queue overflowed' "$W/iverd.log" || true) journal lines"
[ "$listed" = 50 ] || fail "only $listed of 50 tampered executions listed under the storm"
p99=$(sort -n "$W/storm.ms" | awk '{ a[NR] = $1 } END { print a[int(NR * 0.99 + 0.5)] }')
awk -v p="$p99" -v b="${IVER_STORM_P99_MS:-1000}" 'BEGIN { exit !(p <= b) }' || fail "root's exec p99 $p99 ms under the storm (bound ${IVER_STORM_P99_MS:-1000} ms)"
if [ "$FAILS" -gt 0 ]; then
        [ -n "${VERBOSE:-}" ] && tail -50 "$W/iverd.log"
        echo "$FAILS failure(s)"; exit 1
fi
echo "PASS"
