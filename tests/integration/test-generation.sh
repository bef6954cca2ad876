#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A policy reload while files are being hashed: each file is judged by the
# policy generation it was dispatched under. Big (sparse) files are handed to
# one hashing thread; the policy is reloaded (SIGHUP) while they are in flight
# with a rule that differs in pcr= and template=. Every one of them must be
# listed once, with the old rule's PCR and template (before generations, jobs
# that finished after the reload were listed under the new rule); the reload's
# rescan lists nothing more for them; a file created after the reload is
# listed under the new rule; status and the reload message carry the
# generation number.
set -euo pipefail
# not a test of names at rest: a settle after a change need not wait the 2 s
# a name takes to come to rest (IVERD_TEST_REST_SETTLE_MS, iverd(8))
export IVERD_TEST_REST_SETTLE_MS=${IVERD_TEST_REST_SETTLE_MS:-300}
BUILD=${IVER_BUILD_DIR:-/work/main/build}
D=$(mktemp -d /tmp/iver-test-generation.XXXXXX)
IVERD_PID=
stop() { local p=$1; [ -n "$p" ] || return 0; kill "$p" 2>/dev/null || true; for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || return 0; sleep 0.1; done; kill -9 "$p" 2>/dev/null || true; }
cleanup() { stop "$IVERD_PID"; rm -rf "$D"; }
trap cleanup EXIT
trap "exit 1" INT TERM HUP
fail() { echo "FAIL: $*"; tail -20 "$D/iverd.log"; exit 1; }
export IVERD_SOCKET=$D/run/iverd.sock
ctl() { "$BUILD/iverctl" "$@"; }
js() { ctl status --json | python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
LIST=$D/run/ascii_runtime_measurements

N=4
mkdir -p "$D/big" "$D/run" "$D/state"
for i in $(seq 1 $N); do truncate -s 768M "$D/big/f$i"; echo "tail $i" >>"$D/big/f$i"; done
printf 'measure path="%s/big/**" pcr=11 template=ima-ng\n' "$D" >"$D/p.policy"
IVERD_LOG_STDERR=1 "$BUILD/iverd" --on-access none --workers 1 --policy "$D/p.policy" --runtime-dir "$D/run" \
        --state-dir "$D/state" --tpm none >>"$D/iverd.log" 2>&1 &
IVERD_PID=$!
for _ in $(seq 200); do ctl status >/dev/null 2>&1 && break; sleep 0.02; done
[ "$(js policy_generation)" = 1 ] || fail "generation at start is not 1"

echo "== all $N big files dispatched, reload while they are hashed"
for _ in $(seq 500); do [ "$(js hashing)" = $N ] && break; sleep 0.01; done
[ "$(js hashing)" = $N ] || fail "the $N big files were not all in flight at once"
printf 'measure path="%s/big/**" pcr=12 template=ima-sig\n' "$D" >"$D/p.policy"
kill -HUP "$IVERD_PID"
# status is answered after the reload (one loop): what is still hashing now
# finishes under the new generation's watch
for _ in $(seq 100); do [ "$(js policy_generation)" = 2 ] && break; sleep 0.02; done
[ "$(js policy_generation)" = 2 ] || fail "generation after the reload is not 2"
late=$(js hashing)
echo "  still hashing after the reload: $late of $N"
[ "$late" -ge 1 ] || fail "the files were hashed before the reload took effect (machine too fast for this test?)"
grep -q 'Reloaded configuration and policy: .*(generation 2)' "$D/iverd.log" || fail "reload message without the generation"
ctl settle --timeout 300

echo "== each file listed once, under the rule it was dispatched under"
for i in $(seq 1 $N); do
        # (an ima-sig line ends with a signature field after the path)
        n=$(grep -c " $D/big/f$i\( .*\)\?\$" "$LIST" || true)
        [ "$n" = 1 ] || fail "f$i listed $n times"
        grep -q "^11 [0-9a-f]* ima-ng sha256:[0-9a-f]* $D/big/f$i\$" "$LIST" ||
                fail "f$i not listed with the old rule (pcr 11, ima-ng): $(grep " $D/big/f$i" "$LIST")"
done
grep '/big/' "$LIST" | cut -c1-60

echo "== a file new after the reload: the new rule"
echo new >"$D/big/new"
ctl remeasure "$D/big/new" >/dev/null 2>&1 || true
ctl settle --timeout 60
grep -q "^12 [0-9a-f]* ima-sig sha256:[0-9a-f]* $D/big/new" "$LIST" ||
        fail "the new file is not listed with the new rule: $(grep " $D/big/new" "$LIST")"
echo; echo "PASS"
