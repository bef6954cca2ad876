#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Appraisal in the running daemon: files signed with `evmctl sign --imasig`
# under a test key made by openssl; valid; content modified → invalid; xattr
# removed → missing; signed with another key → unknown-key. Violations show
# in `iverctl list --violations` and the stats; with template=ima-sig the
# signature goes into the list, and `evmctl ima_measurement` still accepts the
# list against the PCR values of a software TPM. A file under a measure-only
# ima-sig rule (no appraise rule) has its signature in the entry too, as the
# kernel records it: the xattr is read with the hash, not only to appraise.
set -euo pipefail
# not a test of names at rest: a settle after a change need not wait the 2 s
# a name takes to come to rest (IVERD_TEST_REST_SETTLE_MS, iverd(8))
export IVERD_TEST_REST_SETTLE_MS=${IVERD_TEST_REST_SETTLE_MS:-300}
BUILD=${IVER_BUILD_DIR:-/work/main/build}
for t in evmctl openssl swtpm setfattr getfattr; do
        command -v $t >/dev/null || { echo "FAIL: $t not installed"; exit 1; }
done
D=$(mktemp -d /var/tmp/iver-test-appr.XXXXXX)   # /var/tmp: a disk filesystem with security.* xattrs
IVERD_PID= SWTPM_PID=
stop() { local p=$1; [ -n "$p" ] || return 0; kill "$p" 2>/dev/null || true; for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || return 0; sleep 0.1; done; kill -9 "$p" 2>/dev/null || true; }
cleanup() { stop "$IVERD_PID"; stop "$SWTPM_PID"; rm -rf "$D"; }
trap cleanup EXIT
trap "exit 1" INT TERM HUP
fail() { echo "FAIL: $*"; tail -20 "$D/iverd.log" 2>/dev/null; exit 1; }
export IVERD_SOCKET=$D/run/iverd.sock TSS2_LOG=all+none
ctl() { "$BUILD/iverctl" "$@"; }
stat_of() { ctl stats --json | python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }

mkdir -p "$D/tree" "$D/plain" "$D/keys" "$D/run" "$D/state" "$D/tpm"
for k in good other; do
        openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$D/keys/$k.pem" 2>/dev/null
        openssl pkey -in "$D/keys/$k.pem" -pubout -out "$D/keys/$k.pub.pem"
done
sign() { evmctl sign --imasig --uuid --key "$1" -a sha256 "$2" >/dev/null 2>&1 || getfattr -n security.ima "$2" >/dev/null 2>&1 || fail "evmctl sign $2"; }
for f in valid modified unsigned otherkey; do echo "content of $f" >"$D/tree/$f"; done
sign "$D/keys/good.pem" "$D/tree/valid"
sign "$D/keys/good.pem" "$D/tree/modified"
sign "$D/keys/good.pem" "$D/tree/unsigned"
sign "$D/keys/other.pem" "$D/tree/otherkey"
echo "measured only" >"$D/plain/signed"
sign "$D/keys/other.pem" "$D/plain/signed"

cat >"$D/iverd.conf" <<CONF
[Appraise]
Keys=$D/keys/good.pub.pem
CONF
cat >"$D/p.policy" <<POL
appraise path="$D/tree/**" hash=sha256
measure path="$D/tree/**" template=ima-sig
measure path="$D/plain/**" template=ima-sig
POL
swtpm socket --tpm2 --server type=unixio,path="$D/tpm/s.sock" --ctrl type=unixio,path="$D/tpm/s.sock.ctrl" \
        --tpmstate dir="$D/tpm" --flags startup-clear,not-need-init >"$D/swtpm.log" 2>&1 &
SWTPM_PID=$!
for _ in $(seq 100); do [ -S "$D/tpm/s.sock" ] && break; sleep 0.05; done
IVERD_LOG_STDERR=1 "$BUILD/iverd" --on-access none --config "$D/iverd.conf" --policy "$D/p.policy" --runtime-dir "$D/run" \
        --state-dir "$D/state" --tpm "swtpm:path=$D/tpm/s.sock" --pcr 23 >"$D/iverd.log" 2>&1 &
IVERD_PID=$!
for _ in $(seq 100); do ctl status >/dev/null 2>&1 && break; sleep 0.05; done
ctl settle --timeout 30

# the tamper, then the xattr removal, after the first measurement
echo "tampered" >"$D/tree/modified"
setfattr -x security.ima "$D/tree/unsigned"
ctl settle --timeout 30

echo "== appraisal matrix"
ctl list --violations | tee "$D/violations.txt"
expect() {   # file outcome, from the daemon's violation lines and list --violations
        local f=$1 want=$2
        case $want in
        valid) grep -q "Violation on $D/tree/$f:" "$D/iverd.log" && fail "$f: violation logged, expected valid" || true
               grep -q "$D/tree/$f\$" "$D/violations.txt" && fail "$f listed as a violation" || true ;;
        *) grep -q "Violation on $D/tree/$f: appraisal $want" "$D/iverd.log" || fail "$f: expected appraisal $want"
           grep -q "VIOLATION $D/tree/$f\$" "$D/violations.txt" || fail "$f not in list --violations" ;;
        esac
        printf '  %-10s %s\n' "$f" "$want"
}
expect valid valid
expect modified invalid
expect unsigned missing
expect otherkey unknown-key
[ "$(stat_of appraisal_valid)" -ge 1 ] || fail "appraisal_valid not counted"
[ "$(stat_of appraisal_invalid)" -ge 1 ] || fail "appraisal_invalid not counted"
[ "$(stat_of appraisal_missing)" -ge 1 ] || fail "appraisal_missing not counted"
[ "$(stat_of appraisal_unknown_key)" -ge 1 ] || fail "appraisal_unknown_key not counted"

echo "== ima-sig list: the signature is in the entry; evmctl accepts the list against the PCR"
grep " ima-sig " "$D/run/ascii_runtime_measurements" | grep "$D/tree/valid " | awk '{print $NF}' | grep -q '^0302' \
        || fail "the valid file's ima-sig entry carries no v2 signature"
want=$(getfattr --only-values -n security.ima "$D/plain/signed" 2>/dev/null | od -An -tx1 | tr -d ' \n')
got=$(grep " ima-sig " "$D/run/ascii_runtime_measurements" | grep "$D/plain/signed " | awk '{print $NF}')
[ -n "$want" ] && [ "$got" = "$want" ] || fail "measure-only ima-sig entry: signature '$got', xattr '$want'"
TPM2TOOLS_TCTI="swtpm:path=$D/tpm/s.sock" tpm2_pcrread sha1 >"$D/sha1.txt"
TPM2TOOLS_TCTI="swtpm:path=$D/tpm/s.sock" tpm2_pcrread sha256 >"$D/sha256.txt"
for b in sha1 sha256; do
        python3 - "$D/$b.txt" >"$D/$b.pcrs" <<'PY'
import re, sys
vals = {int(m.group(1)): m.group(2).lower() for m in re.finditer(r"^\s+(\d+)\s*:\s*0x([0-9A-Fa-f]+)", open(sys.argv[1]).read(), re.M)}
for i in range(24):
    print("PCR-%02d: %s" % (i, vals[i]))
PY
done
evmctl ima_measurement --ignore-violations --pcrs sha1,"$D/sha1.pcrs" --pcrs sha256,"$D/sha256.pcrs" \
        "$D/run/binary_runtime_measurements" 2>&1 | tee "$D/evmctl.txt" | grep -v "^Failed to stat\|^verification failed\|^Verification failed" || true
grep -q "Matched per TPM bank calculated digest" "$D/evmctl.txt" || fail "evmctl did not accept the list"
echo; echo PASS
