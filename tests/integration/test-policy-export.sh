#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Keylime runtime policy export and `iverctl verify --policy` (issue 10):
#   1  golden tree measured → `iverctl policy export --keylime --out P`: Keylime's
#      runtime policy schema (keylime/ima/types.py RuntimePolicyType, version 1),
#      one digest per path = sha256sum of the file; the golden list passes it
#      (iverctl verify --policy and the independent keylime_verify.py --policy)
#   2  one file modified → quote → `iverctl verify Q --policy P` exits 6 and
#      reports exactly that file (its new digest, the allowed one); the quote
#      itself still verifies; keylime_verify.py agrees
#   3  the policy's "excludes" regex for that file → verify passes
#   4  a new file unknown to the golden policy → reported as not in policy
# Needs root and swtpm (skips with 77 without swtpm).
set -euo pipefail
# not a test of names at rest: a settle after a change need not wait the 2 s
# a name takes to come to rest (IVERD_TEST_REST_SETTLE_MS, iverd(8))
export IVERD_TEST_REST_SETTLE_MS=${IVERD_TEST_REST_SETTLE_MS:-300}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-fleet.sh
source "$here/lib-fleet.sh"
VERIFY=$here/keylime_verify.py
PCR=23

for t in python3 sha256sum openssl; do command -v $t >/dev/null || fail "$t not installed"; done
fleet_init policy-export
fleet_start_swtpm

T=$D/tree
mkdir -p "$T/etc" "$T/bin"
for i in $(seq 1 8); do printf 'key%d=value%d\n' "$i" "$i" >"$T/etc/conf$i.conf"; done
for i in 1 2; do head -c 100000 /dev/urandom >"$T/bin/tool$i"; done
echo "measure path=$T/** hash=sha256 template=ima-ng" >"$D/policy"
fleet_start_iverd "$D/policy" --tpm "swtpm:path=$D/tpm/swtpm.sock" --pcr $PCR
ctl settle --timeout 60

step "1: export the golden host's runtime policy"
ctl policy export --keylime --out "$D/runtime-policy.json"
python3 - "$D/runtime-policy.json" "$T" <<'EOF'
import hashlib, json, os, sys
p = json.load(open(sys.argv[1]))
want = {"meta", "release", "digests", "excludes", "keyrings", "ima", "ima-buf", "verification-keys"}
assert set(p) == want, set(p) ^ want
assert p["meta"]["version"] == 1 and isinstance(p["meta"]["generator"], int) and isinstance(p["meta"]["timestamp"], str)
assert p["release"] == 0 and p["excludes"] == [] and p["keyrings"] == {} and p["ima-buf"] == {}
assert p["ima"] == {"ignored_keyrings": [], "log_hash_alg": "sha1", "dm_policy": None}, p["ima"]
assert p["verification-keys"] == ""
files = [os.path.join(d, f) for d, _, fs in os.walk(sys.argv[2]) for f in fs]
assert sorted(p["digests"]) == sorted(files), (sorted(p["digests"]), sorted(files))
for f in files:
    assert p["digests"][f] == [hashlib.sha256(open(f, "rb").read()).hexdigest()], f
print(f"schema OK; {len(files)} paths, each with its sha256sum")
EOF
echo "excerpt:"
python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
d = dict(list(p["digests"].items())[:2]); p["digests"] = d
print(json.dumps(p, indent=2)); print("  … (%d paths in all)" % len(json.load(open(sys.argv[1]))["digests"]))' "$D/runtime-policy.json"

NONCE=$(openssl rand -hex 20)
ctl quote --nonce "$NONCE" --out "$D/q0" >/dev/null
ctl verify "$D/q0" --policy "$D/runtime-policy.json" || fail "the golden list does not pass its own policy"
python3 "$VERIFY" --pcr $PCR --policy "$D/runtime-policy.json" "$D/run/ascii_runtime_measurements" "$D/q0/pcrs.out" |
        tail -2

step "2: modify one file, quote, verify against the golden policy"
echo "key3=EVIL" >"$T/etc/conf3.conf"
NEW=$(sha256sum "$T/etc/conf3.conf" | cut -d' ' -f1)
ctl settle --timeout 60
ctl quote --nonce "$NONCE" --out "$D/q" >/dev/null
set +e
ctl verify "$D/q" --policy "$D/runtime-policy.json" >"$D/verify.out" 2>"$D/verify.err"
rc=$?
set -e
cat "$D/verify.out" "$D/verify.err"
[ $rc -eq 6 ] || fail "verify --policy exit status $rc, expected 6"
grep -q "^Verified: signature, nonce, PCR digest" "$D/verify.out" || fail "the quote itself should still verify"
[ "$(grep -c '^DISALLOWED' "$D/verify.out")" -eq 1 ] || fail "expected exactly one disallowed entry"
grep -q "^DISALLOWED entry [0-9]*: $T/etc/conf3.conf sha256:$NEW — policy allows " "$D/verify.out" ||
        fail "the modified file is not the one reported"
ctl verify "$D/q" >/dev/null || fail "without --policy the quote must verify"
if python3 "$VERIFY" --pcr $PCR --policy "$D/runtime-policy.json" "$D/run/ascii_runtime_measurements" \
        "$D/q/pcrs.out" >"$D/kv.out"; then
        fail "keylime_verify.py accepted the modified file"
fi
grep "policy:" "$D/kv.out"
[ "$(grep -c '  policy: entry' "$D/kv.out")" -eq 1 ] && grep -q "conf3.conf $NEW" "$D/kv.out" ||
        fail "keylime_verify.py does not agree"

step "3: exclude that file in the policy: accepted"
python3 - "$D/runtime-policy.json" "$D/excl.json" "$T" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1])); p["excludes"] = ["^" + sys.argv[3] + "/etc/conf3\\.conf$"]
json.dump(p, open(sys.argv[2], "w"), indent=1)
EOF
ctl verify "$D/q" --policy "$D/excl.json" || fail "an excluded path was reported"

step "4: a file the golden host never had"
echo new >"$T/bin/dropped"
ctl settle --timeout 60
ctl quote --nonce "$NONCE" --out "$D/q2" >/dev/null
set +e
ctl verify "$D/q2" --policy "$D/runtime-policy.json" >"$D/verify2.out" 2>&1
rc=$?
set -e
cat "$D/verify2.out"
[ $rc -eq 6 ] || fail "exit status $rc, expected 6"
[ "$(grep -c '^DISALLOWED' "$D/verify2.out")" -eq 2 ] || fail "expected two disallowed entries"
grep -q "^DISALLOWED entry [0-9]*: $T/bin/dropped sha256:.* — path not in policy" "$D/verify2.out" ||
        fail "the new file is not reported"

echo
echo "PASS"
