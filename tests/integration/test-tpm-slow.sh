#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A slow and a hung TPM (tpm-proxy.py in front of swtpm) never stall the event
# loop (issue 16):
#  (a) 20 ms per TPM command during the initial measurement of
#      IVER_SLOW_FILES files (default 1000, 500 under CI=true; 2000 for the issue's figures):
#      `iverctl status` latency sampled throughout (p50/p99/max printed, a
#      generous bound asserted), and once pending extends reach 0 the quote
#      verifies (iverctl verify, tpm2_checkquote), also with --bank sha256;
#  (b) the TPM hung for IVER_HANG_S seconds (default 15, 12 under CI=true; 40 for the figures):
#      status answers within 1 s throughout, 20 files modified during the hang
#      reach the list within 10 s, a quote asked meanwhile gets an answer (TPM
#      busy) without blocking status, watchdog pings (WATCHDOG_USEC,
#      NOTIFY_SOCKET read by the test) go on, and after the hang everything is
#      extended and the quote verifies.
set -euo pipefail
# not a test of names at rest: a settle after a change need not wait the 2 s
# a name takes to come to rest (IVERD_TEST_REST_SETTLE_MS, iverd(8))
export IVERD_TEST_REST_SETTLE_MS=${IVERD_TEST_REST_SETTLE_MS:-300}
BUILD=${IVER_BUILD_DIR:-/work/main/build}
SRC=${IVER_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
# under CI=true half the files and a 12 s hang (the 10 s sample of (b) must fit in it): 13 s less
if [[ ${CI:-} == true ]]; then FILES=${IVER_SLOW_FILES:-500} HANG=${IVER_HANG_S:-12}
else FILES=${IVER_SLOW_FILES:-1000} HANG=${IVER_HANG_S:-15}; fi
command -v swtpm >/dev/null || { echo "SKIP: swtpm not installed"; exit 77; }
command -v tpm2_checkquote >/dev/null || { echo "SKIP: tpm2-tools not installed"; exit 77; }
D=$(mktemp -d /tmp/iver-test-tpmslow.XXXXXX)
SWTPM_PID= IVERD_PID= PROXY_PID= NOTIFY_PID=
source "$(dirname "$0")/lib-tpmd.sh"
cleanup() { stop "$IVERD_PID"; stop "$PROXY_PID"; stop "$SWTPM_PID"; stop "$NOTIFY_PID"; rm -rf "$D"; }
trap cleanup EXIT
trap "exit 1" INT TERM HUP
export TSS2_LOG=all+none IVERD_SOCKET=$D/run/iverd.sock

mkdir -p "$D/tree" "$D/tpm" "$D/run" "$D/state" "$D/ctl"
start_swtpm
python3 "$SRC/tests/integration/tpm-proxy.py" "$D/proxy.sock" "$D/swtpm.sock" "$D/ctl" 2>>"$D/proxy.log" &
PROXY_PID=$!
for _ in $(seq 100); do [ -S "$D/proxy.sock" ] && break; sleep 0.05; done
[ -S "$D/proxy.sock" ] || fail "proxy did not start"
# the service manager's side of sd_notify: every message with its time
python3 "$(dirname "${BASH_SOURCE[0]}")/notify-sink.py" "$D/notify.sock" "$D/notify.log" &
NOTIFY_PID=$!
for _ in $(seq 100); do [ -S "$D/notify.sock" ] && break; sleep 0.05; done

for i in $(seq 1 "$FILES"); do echo "file $i" >"$D/tree/f$i"; done
printf 'measure path="%s/tree/**"\n' "$D" >"$D/p.policy"

sample() {   # sample MODE ARG: status latency (the request on the control socket, as
        # iverctl sends it, timed from connect to the whole reply) until the condition holds
        python3 - "$IVERD_SOCKET" "$@" <<'PY'
import json, socket, sys, time
path, mode, arg = sys.argv[1], sys.argv[2], float(sys.argv[3])
def status():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(path)
    s.sendall(b'{"verb":"status"}\n')
    buf = b""
    while not buf.endswith(b"\n"):
        b = s.recv(65536)
        if not b:
            break
        buf += b
    s.close()
    return json.loads(buf)
lat, t0 = [], time.monotonic()
while True:
    s = time.monotonic()
    st = status()
    lat.append(time.monotonic() - s)
    if mode == "until-extended" and st["pending_extends"] == 0 and st["initial_scan_done"]:
        break
    if mode == "for-seconds" and time.monotonic() - t0 >= arg:
        break
    if time.monotonic() - t0 > 600:
        sys.exit("no end after 600 s")
    time.sleep(0.05)
lat.sort()
pct = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1000
print("status latency: %d samples over %.1f s: p50 %.1f ms, p99 %.1f ms, max %.1f ms"
      % (len(lat), time.monotonic() - t0, pct(0.5), pct(0.99), lat[-1] * 1000))
print("MAX_MS %.1f P99_MS %.1f" % (lat[-1] * 1000, pct(0.99)))
PY
}

step "(a) 20 ms per TPM command, initial measurement of $FILES files"
echo 20 >"$D/ctl/delay_ms"
WATCHDOG_USEC=4000000 NOTIFY_SOCKET="$D/notify.sock" IVERD_LOG_STDERR=1 "$BUILD/iverd" --policy "$D/p.policy" \
        --runtime-dir "$D/run" --state-dir "$D/state" --tpm "swtpm:path=$D/proxy.sock" --pcr 23 >>"$D/iverd.log" 2>&1 &
IVERD_PID=$!
for _ in $(seq 200); do ctl status >/dev/null 2>&1 && break; sleep 0.05; done
T0=$(date +%s.%N)
sample until-extended 0 | tee "$D/a.txt"
T1=$(date +%s.%N)
echo "initial measurement + $(js list_length) extends at 20 ms/command: $(python3 -c "print(round($T1 - $T0, 1))") s"
read -r _ amax _ ap99 < <(grep MAX_MS "$D/a.txt")
# the target is p99 ≤ 100 ms (printed above); asserted loosely: the machine is shared
# (before the TPM thread: p99 588 ms, max 988 ms here)
python3 -c "import sys; sys.exit(0 if $ap99 <= 1000 and $amax <= 3000 else 1)" || fail "status p99 $ap99 ms / max $amax ms with a slow TPM"
[ "$(js list_length)" -ge "$FILES" ] || fail "list has $(js list_length) entries for $FILES files"

verify_quote
verify_quote --bank sha256
grep -q '^sha256:23$' <<<"$(sed -n 's/.*selection \([^)]*\)).*/\1/p' <<<"$(ctl quote --nonce 00 --out "$D/q2" --bank sha256)")" ||
        fail "--bank sha256 did not give a sha256-only selection"

step "(b) the TPM hung for $HANG s"
before=$(cat "$D/ctl/commands")
touch "$D/ctl/hang"
sleep 1.5
( ctl quote --nonce 0102 --out "$D/qh" >"$D/hang-quote.txt" 2>&1; echo "rc=$?" >>"$D/hang-quote.txt" ) &
QPID=$!
HT0=$(date +%s.%N)
for i in $(seq 1 20); do echo "changed during hang $i" >"$D/tree/f$i"; done
sample for-seconds 10 | tee "$D/b1.txt"
# the 20 modified files are in the list (written on the loop; only extends wait)
missing=0
for i in $(seq 1 20); do
        h=$(sha256sum "$D/tree/f$i" | cut -d' ' -f1)
        grep -q "sha256:$h $D/tree/f$i\$" "$D/run/ascii_runtime_measurements" || missing=$((missing + 1))
done
[ $missing = 0 ] || fail "$missing of 20 files modified during the hang are not in the list after 10 s"
echo "20 files modified during the hang: all in the list within 10 s"
left=$(python3 -c "print(max(0.0, $HANG - 1.5 - ($(date +%s.%N) - $HT0)))")
sample for-seconds "$left" | tee "$D/b2.txt"
[ "$(cat "$D/ctl/commands")" -le $((before + 1)) ] || fail "TPM commands got through the hang"
for f in b1 b2; do
        read -r _ bmax _ _ < <(grep MAX_MS "$D/$f.txt")
        python3 -c "import sys; sys.exit(0 if $bmax <= 1000 else 1)" || fail "status took $bmax ms during the hang"
done
echo "pending extends at the end of the hang: $(js pending_extends), tpm_busy_ms $(js tpm_busy_ms)"
kill -0 "$IVERD_PID" || fail "iverd died during the hang"
rm -f "$D/ctl/hang"
HE=$(date +%s.%N)
wait $QPID || true
cat "$D/hang-quote.txt"
grep -q "rc=0\|TPM busy" "$D/hang-quote.txt" || fail "the quote asked during the hang got neither a quote nor 'TPM busy'"
# watchdog pings went on: no gap over half of WATCHDOG_USEC during the hang
python3 - "$D/notify.log" <<'PY' || fail "watchdog pings stopped"
import sys
t = [float(l.split()[0]) for l in open(sys.argv[1]) if "WATCHDOG=1" in l]
gaps = [b - a for a, b in zip(t, t[1:])]
print("watchdog pings: %d, largest gap %.2f s" % (len(t), max(gaps) if gaps else -1))
sys.exit(0 if len(t) > 5 and max(gaps) < 2.0 else 1)
PY
for _ in $(seq 600); do [ "$(js pending_extends)" = 0 ] && break; sleep 0.1; done
[ "$(js pending_extends)" = 0 ] || fail "extends did not catch up after the hang"
echo "caught up $(python3 -c "print(round($(date +%s.%N) - $HE, 1))") s after the hang ended (20 ms/command)"
verify_quote
echo; echo "PASS"
