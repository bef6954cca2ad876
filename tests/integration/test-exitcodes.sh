#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# iverd's exit status tells the kind of failure (man/iverd.8 EXIT STATUS,
# daemon/iverd/exit-status.h), and the failure is logged exactly once:
#   2 bad command line, 3 bad configuration / policy, 4 unsafe runtime
#   directory / unusable control socket, 5 measurement list unusable,
#   0 clean stop on SIGTERM.
set -euo pipefail
BUILD=${IVER_BUILD_DIR:-/work/main/build}
IVERD=$BUILD/iverd
D=$(mktemp -d /tmp/iver-test-exit.XXXXXX)
PID=
cleanup() { [ -z "$PID" ] || kill -9 "$PID" 2>/dev/null || true; rm -rf "$D"; }
trap cleanup EXIT
trap "exit 1" INT TERM HUP
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }

mkdir -m 0700 "$D/run" "$D/state" "$D/tree"
echo 'measure path="'"$D"'/tree/**"' >"$D/good.policy"
echo 'frobnicate path="/x"' >"$D/bad.policy"
echo 'Bogus=1' >"$D/bad.conf"
mkdir -m 0777 "$D/open" && chmod 0777 "$D/open"
mkdir -m 0700 "$D/badlist" && mkdir "$D/badlist/binary_runtime_measurements"

# expect WANT_RC PATTERN LABEL ARGS…: iverd exits WANT_RC; its stderr has
# exactly one line matching PATTERN and no other error line
expect() {
        local want=$1 pat=$2 label=$3 rc=0
        shift 3
        IVERD_LOG_STDERR=1 timeout 20 "$IVERD" "$@" >"$D/out" 2>"$D/err" || rc=$?
        local n errs
        n=$(grep -a -c -- "$pat" "$D/err" || true)
        errs=$(grep -a -c -E "Cannot|Failed|Refusing|Bad |unrecognized|expected|unexpected" "$D/err" || true)
        if [ "$rc" -ne "$want" ]; then
                fail "$label: exit $rc, expected $want"; sed 's/^/    /' "$D/err"
        elif [ "$n" -ne 1 ] || [ "$errs" -ne 1 ]; then
                fail "$label: $n lines match '$pat', $errs error lines (expected 1 and 1)"; sed 's/^/    /' "$D/err"
        else
                printf '  %-34s exit %d: %s\n' "$label" "$rc" "$(grep -a -m1 -- "$pat" "$D/err" | cut -c1-110)"
        fi
}
common=(--runtime-dir "$D/run" --state-dir "$D/state" --socket "$D/s.sock" --tpm none)

echo "== start-up failures"
expect 2 "unrecognized option" "unknown option" --no-such-option
expect 2 "expected 0..23" "bad --pcr" --pcr 99
expect 2 "unexpected argument" "stray argument" stray
expect 3 "Failed to load configuration" "bad configuration" --config "$D/bad.conf" --policy "$D/good.policy" "${common[@]}"
expect 3 "Failed to load policy" "bad policy" --config /dev/null --policy "$D/bad.policy" "${common[@]}"
expect 3 "Failed to load policy" "missing policy" --config /dev/null --policy "$D/none.policy" "${common[@]}"
expect 4 "Refusing the runtime directory" "runtime directory mode 0777" --config /dev/null --policy "$D/good.policy" \
        --runtime-dir "$D/open" --state-dir "$D/state" --socket "$D/s.sock" --tpm none
expect 4 "Refusing the state directory" "state directory mode 0777" --config /dev/null --policy "$D/good.policy" \
        --runtime-dir "$D/run" --state-dir "$D/open" --socket "$D/s.sock" --tpm none
expect 4 "Failed to create control socket" "socket in a missing directory" --config /dev/null --policy "$D/good.policy" \
        --runtime-dir "$D/run" --state-dir "$D/state" --socket "$D/missing/s.sock" --tpm none
expect 5 "Cannot open the measurement list" "measurement list unusable" --config /dev/null --policy "$D/good.policy" \
        --runtime-dir "$D/badlist" --state-dir "$D/state" --socket "$D/s.sock" --tpm none

echo "== clean stop"
IVERD_LOG_STDERR=1 "$IVERD" --config /dev/null --policy "$D/good.policy" "${common[@]}" 2>"$D/err" &
PID=$!
for _ in $(seq 100); do [ -S "$D/s.sock" ] && break; sleep 0.05; done
[ -S "$D/s.sock" ] || fail "iverd did not start"
kill -TERM "$PID"
rc=0
wait "$PID" || rc=$?
PID=
[ "$rc" -eq 0 ] && echo "  SIGTERM                            exit 0" || { fail "SIGTERM: exit $rc, expected 0"; cat "$D/err"; }

[ "$FAILS" -eq 0 ] || { echo "$FAILS failure(s)"; exit 1; }
echo PASS
