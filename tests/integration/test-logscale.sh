#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Logging that scales (issue 14): journal and audit record counts for an
# initial measurement of N files (default 2000; IVER_LOGSCALE_FILES=200000
# for the issue's figure), with a private auditd (`auditd -n -c DIR`, as
# test-audit.sh) and a private journal socket (journal-sink.py, speaking
# journald's native protocol; IVERD_JOURNAL_SOCKET points iverd at it). Each
# phase starts a fresh iverd (empty state: every file measured anew) in a
# private network namespace (audit is NETLINK_AUDIT, as under
# PrivateNetwork=yes):
#   A  measure rules only: 0 op=measure audit records, 0 journal messages per
#      file, one scan summary; a file rewritten while hashed still gets its
#      op=violation record (violations are always audited);
#   B  plus `audit path=TREE/**`: N op=measure records;
#   C  -v, with a journal that takes one message a millisecond: iverd does not
#      wait for it: messages received + journal_dropped (iverctl status) = N.
# Needs root and the package auditd (exits 77 without it).
set -euo pipefail
# not a test of names at rest: a settle after a change need not wait the 2 s
# a name takes to come to rest (IVERD_TEST_REST_SETTLE_MS, iverd(8))
export IVERD_TEST_REST_SETTLE_MS=${IVERD_TEST_REST_SETTLE_MS:-300}

SRC=${IVER_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${IVER_BUILD_DIR:-$SRC/build}
here=$SRC/tests/integration
N=${IVER_LOGSCALE_FILES:-2000}
for t in auditd auditctl ausearch python3 unshare; do
  command -v $t >/dev/null || { echo "SKIP: $t not found (Debian package auditd)"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "FAIL: needs root"; exit 1; }
[ -x "$BUILD/iverd" ] && [ -x "$BUILD/iverctl" ] || { echo "FAIL: no $BUILD/iverd (build first)"; exit 1; }

S=$(mktemp -d /tmp/iverd-logscale.XXXXXX)
IVERD_PID= WRITER_PID= SINK_PID= MNT=
source "$(dirname "$0")/lib-auditd.sh"
step() { printf '\n== %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*"; [ -f "$S/iverd.log" ] && tail -5 "$S/iverd.log"; exit 1; }
cleanup() {
  local rc=$?
  set +e
  trap - EXIT INT TERM
  stop_pid "$WRITER_PID"
  stop_pid "$IVERD_PID"
  stop_pid "$SINK_PID"
  auditd_stop
  [ -n "$MNT" ] && { umount "$MNT" 2>/dev/null || umount -l "$MNT"; }
  rm -rf "$S"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

step "private auditd (log $S/audit/audit.log)"
auditd_start "$S/audit" RAW INCREMENTAL_ASYNC 1000 1024

step "tree: $N files on a tmpfs of its own"
MNT=$S/mnt
mkdir -p "$MNT"
mount -t tmpfs -o size=$(( N / 200 + 64 ))m,mode=0755 iver-logscale "$MNT" || { MNT=; fail "cannot mount tmpfs"; }
python3 "$here/scale-tree.py" "$MNT/tree" "$N" >/dev/null
export IVERD_SOCKET=$S/iverd.sock IVERCTL_NO_PROGRESS=1
# records of this test's tree, by op
audit_count() { # OP
  grep -a "type=TRUSTED_APP" "$S/audit/audit.log" 2>/dev/null | grep -a "op=$1 " | grep -ac "path=\"$MNT/tree/" || true
}
audit_settle() { # wait until the audit log stops growing
  local a b
  for _ in $(seq 100); do
    a=$(stat -c %s "$S/audit/audit.log" 2>/dev/null || echo 0); sleep 0.3
    b=$(stat -c %s "$S/audit/audit.log" 2>/dev/null || echo 0)
    [ "$a" = "$b" ] && return 0
  done
}
sink_get() { # EXPR over the sink's counts d
  python3 -c "import json, sys; d = json.load(open('$S/journal.json')); print($1)"
}
run_phase() { # NAME POLICY-EXTRA IVERD-ARGS SINK-ARGS
  local name=$1 extra=$2 args=$3 sink=$4
  # the list on the tmpfs, as /run is
  rm -rf "$MNT/run" "$S/state" "$S/journal.sock" "$S/journal.json"; mkdir -p "$MNT/run" "$S/state"
  printf 'measure path="%s/tree/**"\n%s\n' "$MNT" "$extra" > "$S/$name.policy"
  : > "$S/iverd.conf"
  # shellcheck disable=SC2086
  python3 "$here/journal-sink.py" "$S/journal.sock" "$S/journal.json" $sink &
  SINK_PID=$!
  for _ in $(seq 100); do [ -S "$S/journal.sock" ] && break; sleep 0.05; done
  # shellcheck disable=SC2086
  IVERD_JOURNAL_SOCKET=$S/journal.sock unshare --net -- "$BUILD/iverd" --config "$S/iverd.conf" \
    --policy "$S/$name.policy" --runtime-dir "$MNT/run" --state-dir "$S/state" --socket "$IVERD_SOCKET" \
    --tpm none $args > "$S/iverd.log" 2>&1 &
  IVERD_PID=$!
  for _ in $(seq 100); do "$BUILD/iverctl" status >/dev/null 2>&1 && break; sleep 0.05; done
  local t0; t0=$(date +%s.%N)
  "$BUILD/iverctl" settle --timeout 900 || fail "iverd did not settle"
  echo "phase $name: initial measurement settled in $(python3 -c "import time; print('%.1f' % (time.time() - $t0))") s"
  DROPPED=$("$BUILD/iverctl" status --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["journal_dropped"])')
}
stop_phase() {
  stop_pid "$IVERD_PID"; IVERD_PID=
  local a b # let the sink read what was sent before it goes
  for _ in $(seq 600); do
    a=$(sink_get "d['datagrams']"); sleep 0.5; b=$(sink_get "d['datagrams']")
    [ "$a" = "$b" ] && break
  done
  stop_pid "$SINK_PID"; SINK_PID=
  audit_settle
}
MID_MEASURED=5b8a2f3c1d6e4a0b9c7d8e9f0a1b2c3d
MID_SCAN=c41f0d6e8a2b4c7d9e1f3a5b7c9d0e2f

step "A: measure rules only"
run_phase A "" "" ""
# a file rewritten while it is hashed: a violation, audited without any audit rule
head -c $((8 * 1024 * 1024)) /dev/urandom > "$MNT/tree/busy.bin"
( exec 3<>"$MNT/tree/busy.bin"; while :; do printf 'x' >&3; done ) &
WRITER_PID=$!
for _ in $(seq 150); do [ "$(audit_count violation)" -gt 0 ] && break; sleep 0.2; done
stop_pid "$WRITER_PID"; WRITER_PID=
rm -f "$MNT/tree/busy.bin"
stop_phase
A_MEASURE=$(audit_count measure) A_VIOL=$(audit_count violation)
A_JMEAS=$(sink_get "d['by_message_id'].get('$MID_MEASURED', 0)")
A_JSCAN=$(sink_get "d['by_message_id'].get('$MID_SCAN', 0)")
A_JALL=$(sink_get "d['datagrams']")
echo "audit op=measure: $A_MEASURE, op=violation: $A_VIOL; journal: $A_JALL messages, $A_JMEAS per measurement, $A_JSCAN scan summaries"
sink_get "[m for m in d['messages'] if 'measurement' in m]"
[ "$A_MEASURE" = 0 ] || fail "$A_MEASURE per-file audit records without an audit rule"
[ "$A_VIOL" -gt 0 ] || fail "no audit record for the violation"
[ "$A_JMEAS" = 0 ] || fail "$A_JMEAS journal messages per measurement without -v"
[ "$A_JSCAN" = 1 ] || fail "expected one scan summary, got $A_JSCAN"
[ "$A_JALL" -lt 50 ] || fail "$A_JALL journal messages for one initial measurement"

step "B: plus an audit rule for the tree"
run_phase B "audit path=\"$MNT/tree/**\"" "" ""
stop_phase
B_MEASURE=$(( $(audit_count measure) - A_MEASURE ))
B_JMEAS=$(sink_get "d['by_message_id'].get('$MID_MEASURED', 0)")
echo "audit op=measure: $B_MEASURE (of $N files); journal per measurement: $B_JMEAS"
[ "$B_MEASURE" = "$N" ] || fail "expected $N op=measure records, got $B_MEASURE"
[ "$B_JMEAS" = 0 ] || fail "$B_JMEAS journal messages per measurement without -v"

step "C: -v, a journal that takes one message a millisecond"
run_phase C "" "-v" "--slow 0.001 --rcvbuf 4096"
C_DROPPED=$DROPPED
stop_phase
C_JMEAS=$(sink_get "d['by_message_id'].get('$MID_MEASURED', 0)")
echo "journal: $C_JMEAS measurement messages received, $C_DROPPED messages dropped (iverctl status)"
[ $(( C_JMEAS + C_DROPPED )) -ge "$N" ] || fail "received $C_JMEAS + dropped $C_DROPPED < $N measurements"
[ "$C_JMEAS" -gt 0 ] || fail "no measurement message with -v"
[ "$C_DROPPED" -gt 0 ] || echo "note: the journal kept up (nothing dropped)"

echo
echo "figures for $N files: A audit measure=$A_MEASURE violation=$A_VIOL journal=$A_JALL;" \
  "B audit measure=$B_MEASURE journal/file=$B_JMEAS; C journal received=$C_JMEAS dropped=$C_DROPPED"
echo PASS
