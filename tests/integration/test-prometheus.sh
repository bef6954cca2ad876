#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# iverd's metrics through the real Prometheus node exporter (issue 10):
# `iverctl stats --prometheus --output DIR/iverd.prom` (what
# systemd/iverd-prometheus.service runs) feeds the exporter's textfile
# collector; the exporter (Debian's prometheus-node-exporter, started here on
# loopback, nothing else of it) serves them on /metrics.
#   1  names follow the conventions: HELP + TYPE for each, counters end in
#      _total, base units (bytes, seconds), appraisal results as a label of one
#      family; no temporary file left, mode 0644
#   2  /metrics values = `iverctl stats --json` (CPU in seconds); the exporter
#      read the file without error; bytes hashed = the tree's size
#   3  a file rewritten → the next write shows more re-measurements and bytes
#   4  atomic replacement: 40 rewrites while scraping, never a partial file
# Needs root; prometheus-node-exporter and curl installed (scripts/deps.sh).
set -euo pipefail
# not a test of names at rest: a settle after a change need not wait the 2 s
# a name takes to come to rest (IVERD_TEST_REST_SETTLE_MS, iverd(8))
export IVERD_TEST_REST_SETTLE_MS=${IVERD_TEST_REST_SETTLE_MS:-300}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-fleet.sh
source "$here/lib-fleet.sh"
EXPORTER=$(command -v prometheus-node-exporter || command -v node_exporter || true)
[ -n "$EXPORTER" ] || fail "prometheus-node-exporter not installed (Debian package prometheus-node-exporter)"
for t in curl python3 setpriv; do command -v $t >/dev/null || fail "$t not installed"; done

fleet_init prometheus
T=$D/tree TF=$D/textfile
mkdir -p "$T" "$TF"
for i in $(seq 1 6); do head -c $((i * 10000)) /dev/urandom >"$T/file$i"; done
SIZE=$(( $(stat -c %s "$T"/file* | paste -sd+) ))
echo "measure path=$T/** hash=sha256 template=ima-ng" >"$D/policy"
fleet_start_iverd "$D/policy" --tpm none
ctl settle --timeout 60

# The exporter runs unprivileged, as Debian's unit does (User=prometheus):
# the .prom file must be readable by it.
if id prometheus >/dev/null 2>&1; then EXPORTER_USER=prometheus; else EXPORTER_USER=nobody; fi
AS_EXPORTER="setpriv --reuid=$EXPORTER_USER --regid=$(id -g $EXPORTER_USER) --clear-groups"
# The exporter: loopback only, only the textfile collector. It cannot pick a
# free port itself: take one the kernel just handed out, retry if it is gone.
start_exporter() {
        local i port
        for i in 1 2 3 4 5; do
                port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
                $AS_EXPORTER "$EXPORTER" --web.listen-address="127.0.0.1:$port" --collector.disable-defaults \
                        --collector.textfile --collector.textfile.directory="$TF" >"$D/exporter.log" 2>&1 &
                EXPORTER_PID=$!
                FLEET_PIDS+=("$EXPORTER_PID")
                for _ in $(seq 100); do
                        if curl -sf "http://127.0.0.1:$port/metrics" >/dev/null 2>&1; then
                                PORT=$port
                                return 0
                        fi
                        kill -0 "$EXPORTER_PID" 2>/dev/null || break
                        sleep 0.05
                done
                fleet_stop_pid "$EXPORTER_PID"
        done
        fail "the node exporter did not start"
}
scrape() { curl -sf "http://127.0.0.1:$PORT/metrics"; }

step "1: write the .prom file, check names"
ctl stats --prometheus --output "$TF/iverd.prom"
! ls -A "$TF" | grep -q "\.tmp$" || fail "a temporary file left behind"
[ "$(stat -c %a "$TF/iverd.prom")" = 644 ] || fail "iverd.prom mode $(stat -c %a "$TF/iverd.prom")"
ctl stats --json >"$D/stats.json"
python3 - "$TF/iverd.prom" <<'EOF'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
helps, types, samples = {}, {}, {}
for l in lines:
    if l.startswith("# HELP "):
        n, h = l[7:].split(" ", 1); helps[n] = h
    elif l.startswith("# TYPE "):
        n, t = l[7:].split(" ", 1); types[n] = t
    else:
        n, v = l.split(" "); samples[n] = float(v)
assert samples, "no samples"
for s in samples:
    n = s.split("{")[0]
    if "{" in s:
        assert re.fullmatch(r'\{[a-z_]+="[a-z0-9_-]+"(,[a-z_]+="[a-z0-9_-]+")*\}', s[len(n):]), s
    assert re.fullmatch(r"iverd_[a-z0-9_]+", n), n
    assert n in helps and helps[n], f"{n}: no HELP"
    assert n in types, f"{n}: no TYPE"
    if types[n] == "counter":
        assert n.endswith("_total"), f"counter {n} does not end in _total"
    else:
        assert not n.endswith("_total"), f"{types[n]} {n} ends in _total"
    assert not re.search(r"_(ns|nanoseconds|ms|milliseconds|us|kb|mb|kilobytes|megabytes)(_|$)", n), f"{n}: not a base unit"
assert "iverd_hash_cpu_seconds_total" in samples and "iverd_bytes_hashed_total" in samples
print(f"{len(samples)} samples, each family with HELP and TYPE; counters end in _total; base units; labels well formed")
EOF

step "2: through the exporter"
start_exporter
echo "prometheus-node-exporter $("$EXPORTER" --version 2>&1 | sed -n '1s/.*version \([^ ]*\).*/\1/p') on 127.0.0.1:$PORT (pid $EXPORTER_PID, user $EXPORTER_USER)"
scrape >"$D/metrics"
echo "\$ curl -s http://127.0.0.1:$PORT/metrics | grep iverd_"
grep iverd_ "$D/metrics"
grep -q '^node_textfile_scrape_error 0$' "$D/metrics" || { grep textfile "$D/metrics"; fail "the exporter could not read iverd.prom"; }
python3 - "$D/metrics" "$D/stats.json" "$SIZE" <<'EOF'
import json, sys
m = {}
for l in open(sys.argv[1]):
    if l.startswith("iverd_"):
        n, v = l.split(); m[n] = float(v)
s = json.load(open(sys.argv[2]))
for k, v in s.items():
    name = "iverd_hash_cpu_seconds_total" if k == "hash_cpu_ns" else f"iverd_{k}_total"
    if k.startswith("appraisal_"):
        name = 'iverd_appraisals_total{result="%s"}' % k[len("appraisal_"):]
    want = v / 1e9 if k == "hash_cpu_ns" else v
    assert name in m, f"{name} missing from /metrics"
    assert abs(m[name] - want) <= 1e-9 * max(1, abs(want)), f"{name}: /metrics {m[name]}, stats {want}"
assert m["iverd_bytes_hashed_total"] == int(sys.argv[3]), (m["iverd_bytes_hashed_total"], sys.argv[3])
assert m["iverd_first_seen_total"] == 6, m["iverd_first_seen_total"]
print(f"every /metrics value equals iverctl stats --json ({len(s)} counters); bytes hashed = tree size {sys.argv[3]}")
EOF

step "3: rewrite a file: the next write shows the re-measurement"
before=$(awk '$1 == "iverd_remeasured_total" {print $2}' "$D/metrics")
head -c 5000 /dev/urandom >"$T/file2"
ctl settle --timeout 60
ctl stats --prometheus --output "$TF/iverd.prom"
scrape >"$D/metrics2"
grep -E '^iverd_(remeasured|bytes_hashed)_total ' "$D/metrics2"
after=$(awk '$1 == "iverd_remeasured_total" {print $2}' "$D/metrics2")
bytes=$(awk '$1 == "iverd_bytes_hashed_total" {print $2}' "$D/metrics2")
# one rewrite may be seen more than once (modify events while head writes, then close)
[ "$after" -gt "$before" ] && [ "$bytes" -gt "$SIZE" ] || fail "remeasured $before → $after, bytes hashed $bytes"

step "4: atomic replacement under concurrent scrapes"
n_metrics=$(grep -c '^iverd_' "$D/metrics2")
( for _ in $(seq 40); do ctl stats --prometheus --output "$TF/iverd.prom" || exit 1; done ) &
WRITER=$!
bad=0 scrapes=0
while kill -0 $WRITER 2>/dev/null; do
        scrape >"$D/m" || continue
        scrapes=$((scrapes + 1))
        if [ "$(grep -c '^iverd_' "$D/m")" -ne "$n_metrics" ] || ! grep -q '^node_textfile_scrape_error 0$' "$D/m"; then
                bad=$((bad + 1))
        fi
done
wait $WRITER || fail "a write failed"
echo "$scrapes scrapes during 40 rewrites: $bad incomplete"
[ $bad -eq 0 ] || fail "the exporter saw a partial file"
! ls -A "$TF" | grep -q "\.tmp$" || fail "a temporary file left behind"

echo
echo "PASS"
