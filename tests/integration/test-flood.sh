#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Socket flood (issue 13 item 12): an unprivileged user (made and removed here)
# opens 1,100 idle connections to the control socket (0666: any local user
# reaches it) of a daemon held to a 1,024-fd limit, as in the report. During
# the flood the test measures and asserts:
#   - `iverctl status` latency (p50 / max over 20 calls): every call < 1 s
#   - the daemon's CPU over 5 s (/proc/PID/stat utime+stime): < 20 % of a core
#   - a root tamper of a measured file: listed by `iverctl log --ascii` with
#     its new digest within 5 s
#   - the daemon keeps at most 16 of the user's connections and counts the rest
#     as refused (status connections / connections_refused)
# Then the daemon's fd limit is lowered to 40 above what it uses: the user's
# connections are refused (fds kept for measurement), root's status still
# answers and a tamper is still listed. Last, the limit is set to exactly what
# the daemon uses: a tamper then fails with EMFILE, the daemon does not spin,
# and once fds come back the retry lists it without any further event.
# Figures are printed (FLOOD: lines). Needs root.
set -u
# not a test of names at rest: a settle after a change need not wait the 2 s
# a name takes to come to rest (IVERD_TEST_REST_SETTLE_MS, iverd(8))
export IVERD_TEST_REST_SETTLE_MS=${IVERD_TEST_REST_SETTLE_MS:-300}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-faults.sh
source "$here/lib-faults.sh"
# the system python: the user cannot run root's (pyenv shims under /root)
PY3=/usr/bin/python3
[[ -x $PY3 ]] || { echo "SKIP: $PY3 missing"; exit 77; }
for t in useradd userdel setpriv prlimit; do command -v "$t" >/dev/null || { echo "SKIP: $t missing"; exit 77; }; done
faults_init flood
N_CONN=${IVER_FLOOD_CONNECTIONS:-1100}

U=ivfl$(printf '%05d' $(($$ % 100000)))
useradd -r -M -d /nonexistent -s /usr/sbin/nologin -U "$U" || die "useradd $U"
on_cleanup "userdel '$U' 2>/dev/null; ! getent group '$U' >/dev/null || groupdel '$U'"
chmod 0755 "$D" "$D/run"

for i in $(seq 50); do echo "file $i" >"$D/tree/f$i"; done
printf 'measure path="%s/**"\n' "$D/tree" >"$D/p.policy"
IVERD_TPM_ARGS=(--tpm none --workers 2)
start_iverd
# the limit of the report: 1,024 fds (iverd raised its soft limit to the hard one at start)
prlimit --pid "$IVERD_PID" --nofile=1024:1024 || die "prlimit"
ctl settle --timeout 60 >/dev/null || die "no settle before the flood"

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# --- the flood: the user's connections, held open and idle --------------------
cat >"$D/flood.py" <<'PY'
# Keep N connections open and idle for HOLD seconds: every 0.5 s, the ones the
# daemon closed are opened again (a connect that finds the backlog full is
# retried). Prints what happened.
import os, resource, select, socket, sys, time
path, n, ready, hold = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
stats = {"connects": 0, "closed_by_daemon": 0, "connect_failed": 0}

def connect(deadline):
    while time.monotonic() < deadline:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_NONBLOCK)
        try:
            s.connect(path)
            stats["connects"] += 1
            return s
        except (BlockingIOError, InterruptedError):
            s.close()
            time.sleep(0.001)
        except OSError:
            s.close()
            stats["connect_failed"] += 1
            time.sleep(0.01)
    return None

end = time.monotonic() + hold
socks = [s for s in (connect(end) for _ in range(n)) if s]
with open(ready, "w") as f:
    f.write(f"{len(socks)}\n")
p = select.poll()
for s in socks:
    p.register(s, select.POLLIN)
byfd = {s.fileno(): s for s in socks}
while time.monotonic() < end:
    time.sleep(0.5)
    for fd, ev in p.poll(0):
        s = byfd.pop(fd)
        p.unregister(fd)
        s.close()
        stats["closed_by_daemon"] += 1
        t = connect(end)
        if t:
            byfd[t.fileno()] = t
            p.register(t, select.POLLIN)
print(" ".join(f"{k} {v}" for k, v in stats.items()), f"open_at_end {len(byfd)}", flush=True)
PY
chmod 0644 "$D/flood.py"
mkdir -m 0777 "$D/fl"
(cd / && exec setpriv --reuid "$U" --regid "$U" --clear-groups "$PY3" "$D/flood.py" "$IVERD_SOCKET" "$N_CONN" \
        "$D/fl/ready" 20 >"$D/fl/out" 2>&1) &
FLOOD_PID=$!
track_pid "$FLOOD_PID"
for _ in $(seq 400); do [[ -s $D/fl/ready ]] && break; sleep 0.05; done
[[ -s $D/fl/ready ]] || die "the flooder did not get its connections out ($(cat "$D/fl/out"))"
note "flooder: $(cat "$D/fl/ready") connections open"

# status latency
: >"$D/lat"
for _ in $(seq 20); do
        t0=$(date +%s%N)
        ctl status --json >/dev/null || fail "status failed during the flood"
        echo $(( ($(date +%s%N) - t0) / 1000000 )) >>"$D/lat"
        sleep 0.05
done
read -r P50 MAX < <(sort -n "$D/lat" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)], a[NR] }')
echo "FLOOD: status latency p50 ${P50} ms, max ${MAX} ms (20 calls, $N_CONN connections)"
((MAX < 1000)) || fail "status took ${MAX} ms during the flood (limit 1000)"

# daemon CPU over 5 s
HZ=$(getconf CLK_TCK)
c0=$(cpu_ticks "$IVERD_PID"); t0=$(date +%s%N)
sleep 5
c1=$(cpu_ticks "$IVERD_PID"); t1=$(date +%s%N)
CPU=$(python3 -c "print(round(100.0 * ($c1 - $c0) / $HZ / (($t1 - $t0) / 1e9), 1))")
echo "FLOOD: daemon CPU ${CPU} % of one core over 5 s"
python3 -c "import sys; sys.exit(0 if $CPU < 20 else 1)" || fail "daemon CPU ${CPU} % during the flood (limit 20 %)"

# a root tamper during the flood
echo "tampered by root $$" >>"$D/tree/f7"
H=$(sha256sum "$D/tree/f7" | cut -d' ' -f1)
t0=$(date +%s%N); LISTED=
for _ in $(seq 100); do
        if ctl log --ascii | grep -q "sha256:$H $D/tree/f7\$"; then LISTED=$(( ($(date +%s%N) - t0) / 1000000 )); break; fi
        sleep 0.1
done
if [[ -n $LISTED ]]; then
        echo "FLOOD: tamper listed after ${LISTED} ms"
        ((LISTED < 5000)) || fail "tamper listed after ${LISTED} ms (limit 5000)"
else
        fail "tamper of $D/tree/f7 not listed within 10 s during the flood"
fi

CONNS=$(js connections) REFUSED=$(js connections_refused)
[[ $CONNS == None ]] && CONNS=-1 REFUSED=-1
echo "FLOOD: daemon holds $CONNS connections, refused $REFUSED"
((CONNS <= 17)) || fail "daemon holds $CONNS connections (cap 16 per user + this status call)"
((REFUSED >= N_CONN - 16 - 100)) || fail "only $REFUSED connections refused"

wait "$FLOOD_PID"; untrack_pid "$FLOOD_PID"
note "flooder: $(cat "$D/fl/out")"

grep -q "Too many open files" "$D/iverd.log" && fail "the daemon ran out of fds: $(grep -m1 'Too many open files' "$D/iverd.log")"

step "fd reserve: the daemon's limit lowered to 40 above what it uses"
USED=$(ls "/proc/$IVERD_PID/fd" | wc -l)
prlimit --pid "$IVERD_PID" --nofile=$((USED + 40)):$((USED + 40)) || die "prlimit"
R0=$(js connections_refused)
(cd / && exec setpriv --reuid "$U" --regid "$U" --clear-groups "$PY3" "$D/flood.py" "$IVERD_SOCKET" 20 \
        "$D/fl/ready2" 3 >"$D/fl/out2" 2>&1) &
FLOOD_PID=$!
track_pid "$FLOOD_PID"
wait "$FLOOD_PID"; untrack_pid "$FLOOD_PID"
note "flooder: $(cat "$D/fl/out2")"
R1=$(js connections_refused) || fail "root's status refused with fds scarce"
((R1 - R0 >= 20)) || fail "only $((R1 - R0)) of the user's connections refused with $USED of $((USED + 40)) fds in use"
grep -q "file descriptors kept for measurement" "$D/iverd.log" || fail "no journal line for the fd reserve"
echo "tampered again $$" >>"$D/tree/f9"
H=$(sha256sum "$D/tree/f9" | cut -d' ' -f1)
LISTED=
for _ in $(seq 50); do ctl log --ascii | grep -q "sha256:$H $D/tree/f9\$" && { LISTED=1; break; }; sleep 0.1; done
[[ -n $LISTED ]] || fail "a tamper is not listed within 5 s with the fd reserve in use"
echo "FLOOD: with $USED of $((USED + 40)) fds in use: $((R1 - R0)) user connections refused, root's status answered, tamper listed"

step "transient failure: a tamper while the daemon has no fd left is retried"
# the soft limit only: raising a hard limit again needs CAP_SYS_RESOURCE
HARD=$(awk '/^Max open files/ { print $5 }' "/proc/$IVERD_PID/limits")
USED=$(ls "/proc/$IVERD_PID/fd" | wc -l)
prlimit --pid "$IVERD_PID" --nofile="$((USED - 2)):$HARD" || die "prlimit"
echo "tampered with no fd left $$" >>"$D/tree/f11"
H=$(sha256sum "$D/tree/f11" | cut -d' ' -f1)
# a status call finds no fd either: accept fails with EMFILE (the socket rests, no spin)
timeout 3 "$IVERCTL" status >/dev/null 2>&1 &
SPID=$!
sleep 0.2
c0=$(cpu_ticks "$IVERD_PID")
sleep 1.5
c1=$(cpu_ticks "$IVERD_PID")
wait "$SPID"
prlimit --pid "$IVERD_PID" --nofile="$HARD:$HARD" || die "prlimit"
echo "FLOOD: CPU ticks while out of fds for 1.5 s: $((c1 - c0)) (CLK_TCK $HZ)"
((c1 - c0 < HZ / 2)) || fail "the daemon spun while out of fds ($((c1 - c0)) ticks in 1.5 s)"
LISTED=
for _ in $(seq 100); do ctl log --ascii | grep -q "sha256:$H $D/tree/f11\$" && { LISTED=1; break; }; sleep 0.1; done
[[ -n $LISTED ]] || fail "the tamper made while out of fds was not listed within 10 s of fds coming back (no retry)"
grep -q "Cannot measure $D/tree/f11: Too many open files (will retry)" "$D/iverd.log" \
        || fail "no 'will retry' for the EMFILE failure: $(grep -m1 "f11" "$D/iverd.log")"
grep -q "Cannot accept control connections" "$D/iverd.log" || fail "accept never failed with EMFILE: the test did not test that"
echo "FLOOD: a measurement that failed with EMFILE was retried and listed once fds came back"
alive || true
grep -m1 "Refused a control connection" "$D/iverd.log" | sed 's/^/   journal: /'
stop_iverd
[[ $FAILS -eq 0 ]] || exit 1
echo PASS
