#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Audit records: a private auditd (`auditd -n -c DIR`, log in a scratch file)
# and iverd run directly (no systemd) in a private network namespace, as
# iverd.service runs it (PrivateNetwork=yes: audit is NETLINK_AUDIT), on a
# small tree: one normal file, and one file rewritten continuously by a
# writer that keeps it open, so every hashing attempt sees it change and iverd
# reports it as unstable (a violation). Asserts with
# `ausearch -if LOG -m TRUSTED_APP -i` that
#   - the measurement has a record with op=measure, the path and the digest;
#   - the violation has a record with op=violation, the path and res=failed.
# auditd is stopped by PID and the kernel's audit "enabled" flag is put back
# to what it was. Needs root and the package auditd (exits 77 without it).
set -euo pipefail

SRC=${IVER_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${IVER_BUILD_DIR:-$SRC/build}
for t in auditd auditctl ausearch; do
  command -v $t >/dev/null || { echo "SKIP: $t not found (Debian package auditd)"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "FAIL: needs root"; exit 1; }
[ -x "$BUILD/iverd" ] || { echo "FAIL: no $BUILD/iverd (build first)"; exit 1; }

S=$(mktemp -d /tmp/iverd-audit.XXXXXX)
IVERD_PID= WRITER_PID=
source "$(dirname "$0")/lib-auditd.sh"
step() { printf '\n== %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*"; exit 1; }
cleanup() {
  local rc=$?
  set +e
  trap - EXIT INT TERM
  stop_pid "$WRITER_PID"
  stop_pid "$IVERD_PID"
  auditd_stop
  rm -rf "$S"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

step "private auditd (log $S/audit/audit.log), audit enabled was $AUDITD_PREV_ENABLED"
auditd_start "$S/audit" ENRICHED SYNC 0 64
auditctl -s | grep -E '^(enabled|pid) '

step "tree: normal.conf, and busy.bin rewritten continuously (kept open by its writer)"
mkdir -p "$S/tree" "$S/run" "$S/state"
printf 'key=value\n' > "$S/tree/normal.conf"
head -c $((8 * 1024 * 1024)) /dev/urandom > "$S/tree/busy.bin"
NORMAL_SUM=$(sha256sum "$S/tree/normal.conf" | cut -d' ' -f1)
# one byte at a time, front to back: the size stays, the content and ctime keep moving
( exec 3<>"$S/tree/busy.bin"; while :; do printf 'x' >&3; done ) &
WRITER_PID=$!
printf 'measure path=%s/tree/**\naudit path=%s/tree/normal.conf\n' "$S" "$S" > "$S/test.policy"
: > "$S/iverd.conf"

step "iverd (private network namespace, like PrivateNetwork=yes)"
IVERD_LOG_STDERR=1 unshare --net -- "$BUILD/iverd" --on-access none --config "$S/iverd.conf" --policy "$S/test.policy" \
  --runtime-dir "$S/run" --state-dir "$S/state" --tpm none > "$S/iverd.log" 2>&1 &
IVERD_PID=$!

found_m= found_v=
for _ in $(seq 150); do
  out=$(ausearch -if "$S/audit/audit.log" -m TRUSTED_APP -i 2>/dev/null || true)
  grep -q "op=measure path=\"\?$S/tree/normal.conf\"\? digest=sha256:$NORMAL_SUM" <<<"$out" && found_m=1
  grep -q "op=violation path=\"\?$S/tree/busy.bin\"\?" <<<"$out" && found_v=1
  [ -n "$found_m" ] && [ -n "$found_v" ] && break
  kill -0 "$IVERD_PID" 2>/dev/null || { cat "$S/iverd.log"; fail "iverd exited"; }
  sleep 0.2
done
stop_pid "$WRITER_PID"; WRITER_PID=
stop_pid "$IVERD_PID"; IVERD_PID=
echo "iverd stderr (excerpt):"
grep -E 'Measured|Violation|Audit|audit' "$S/iverd.log" | grep -v "busy.bin" | head -5 || true
grep -m2 "Violation on $S/tree/busy.bin" "$S/iverd.log" || true

step "ausearch -if audit.log -m TRUSTED_APP -i (records of this test)"
ausearch -if "$S/audit/audit.log" -m TRUSTED_APP -i 2>/dev/null | grep -F "$S/tree/" | awk '!seen[$0 ~ /op=violation/]++' || true
step "the same, raw"
ausearch -if "$S/audit/audit.log" -m TRUSTED_APP --raw 2>/dev/null | grep -F "$S/tree/" | awk '!seen[$0 ~ /op=violation/]++' || true

[ -n "$found_m" ] || fail "no TRUSTED_APP record with op=measure, the path and sha256:$NORMAL_SUM"
echo "measurement record: path and digest found"
[ -n "$found_v" ] || fail "no TRUSTED_APP record with op=violation for busy.bin"
[ "$(grep "op=violation path=\"\?$S/tree/busy.bin" <<<"$(ausearch -if "$S/audit/audit.log" -m TRUSTED_APP -i 2>/dev/null)" \
  | grep -c 'res=failed')" -gt 0 ] || fail "violation record without res=failed"
echo "violation record: path and res=failed found"

step "stop auditd (pid $AUDITD_PID), restore audit enabled=$AUDITD_PREV_ENABLED"
auditd_stop
auditctl -s | grep -E '^(enabled|pid) '
echo; echo PASS
