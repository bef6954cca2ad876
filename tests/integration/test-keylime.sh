#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Keylime-compatible evidence (issue 10): iverd's live ascii_runtime_measurements
# and a TPM quote, checked the way Keylime's verifier checks an agent's IMA list,
# by an independent re-implementation (keylime_verify.py: python3 stdlib, reads
# only the list file and the quote's PCR values; not iverd's parser). The quote
# signature and nonce are checked by tpm2_checkquote (tpm2-tools).
#   1  live list + quote                         → accepted (prefix = whole list)
#   2  one file digest changed in a copy         → rejected (template hash);
#      on an ima-ng and on an ima-sig line (each template has its own layout)
#   3  digest changed and template hash forged   → rejected (no prefix matches)
#   4  list grows after the quote (more files)   → old quote still accepted (prefix rule)
#   5  list cut short of what the quote covers   → rejected
#   6  iverd restarted (same boot, same list)     → the gap entry (a violation)
#      replays as all-0xFF (accepted), the verifier prints it (GAP line), and
#      the golden runtime policy rejects it: never accepted in silence
# Needs root and swtpm (skips with 77 without swtpm).
set -euo pipefail
# not a test of names at rest: a settle after a change need not wait the 2 s
# a name takes to come to rest (IVERD_TEST_REST_SETTLE_MS, iverd(8))
export IVERD_TEST_REST_SETTLE_MS=${IVERD_TEST_REST_SETTLE_MS:-300}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-fleet.sh
source "$here/lib-fleet.sh"
VERIFY=$here/keylime_verify.py
PCR=23          # resettable application PCR: tests only (Keylime itself reads PCR 10)

for t in python3 tpm2_checkquote openssl; do command -v $t >/dev/null || fail "$t not installed"; done
fleet_init keylime
fleet_start_swtpm

mkdir -p "$D/tree/ng" "$D/tree/sig"
for i in $(seq 1 12); do printf 'config %d\n' "$i" >"$D/tree/ng/conf$i"; done
printf 'name with spaces\n' >"$D/tree/ng/a file with spaces"
head -c 300000 /dev/urandom >"$D/tree/ng/blob"
for i in 1 2 3; do printf '#!/bin/sh\necho %d\n' "$i" >"$D/tree/sig/tool$i"; done
cat >"$D/policy" <<EOF
measure path=$D/tree/ng/** hash=sha256 template=ima-ng
measure path=$D/tree/sig/** hash=sha256 template=ima-sig
EOF
fleet_start_iverd "$D/policy" --tpm "swtpm:path=$D/tpm/swtpm.sock" --pcr $PCR
ctl settle --timeout 60
LIST=$D/run/ascii_runtime_measurements
[ -s "$LIST" ] || fail "no $LIST"

step "1: iverd's live ASCII list (first lines)"
head -4 "$LIST"
grep -m1 ' ima-sig ' "$LIST" || fail "no ima-sig line in the list"
echo "… $(wc -l <"$LIST") lines"

NONCE=$(openssl rand -hex 20)
ctl quote --nonce "$NONCE" --out "$D/q"
tpm2_checkquote -u "$D/q/ak.pub.pem" -m "$D/q/quote.msg" -s "$D/q/quote.sig" -f "$D/q/pcrs.out" \
        -l sha1:$PCR+sha256:$PCR -g sha256 -q "$NONCE" >"$D/checkquote.out" 2>&1 ||
        { cat "$D/checkquote.out"; fail "tpm2_checkquote rejected the quote"; }
echo "tpm2_checkquote: signature, nonce and PCR digest OK"
cp "$LIST" "$D/list.at-quote"
python3 "$VERIFY" --pcr $PCR --banks sha1,sha256 "$LIST" "$D/q/pcrs.out" | tee "$D/v1.out"
grep -q "^ACCEPTED" "$D/v1.out" || fail "the live list was not accepted"
n=$(wc -l <"$LIST")
grep -q "replay of the first $n of $n entries" "$D/v1.out" || fail "the quote does not cover the whole settled list"

# Steps 2 and 3 run on the first ima-ng line and on the first ima-sig line: the list's order
# depends on which worker finishes first, and each template has its own field layout.
for T in ima-ng ima-sig; do
L=$(awk -v t="$T" '$3 == t { print NR; exit }' "$LIST")
[ -n "$L" ] || fail "no $T line in the list"

step "2 ($T): tamper with line $L of a copy: another file digest"
# replace the file digest with the SHA-256 of other content, keep everything else
awk -v l="$L" -v d="$(printf 'evil\n' | sha256sum | cut -d' ' -f1)" 'NR == l { sub(/sha256:[0-9a-f]+/, "sha256:" d) } { print }' \
        "$LIST" >"$D/tampered"
diff "$LIST" "$D/tampered" || true
if python3 "$VERIFY" --pcr $PCR "$D/tampered" "$D/q/pcrs.out" | tee "$D/v2.out"; then
        fail "a tampered list was accepted"
fi
grep -q "^REJECTED: line $L: template hash" "$D/v2.out" || fail "rejected for the wrong reason"

step "3 ($T): the same change with a forged template hash (an attacker recomputing SHA-1)"
python3 - "$D/tampered" "$D/forged" "$L" <<'PY'
import hashlib, struct, sys
f = lambda b: struct.pack("<I", len(b)) + b
lines = open(sys.argv[1], "rb").read().split(b"\n")
i = int(sys.argv[3]) - 1
pcr, th, tn, dig, rest = lines[i].split(b" ", 4)
algo, hx = dig.split(b":")
td = f(algo + b":\0" + bytes.fromhex(hx.decode()))
if tn == b"ima-sig":            # "path sighex": the signature is the last field, maybe empty
        path, sig = rest.rsplit(b" ", 1)
        td += f(path + b"\0") + f(bytes.fromhex(sig.decode()))
elif tn == b"ima-ng":
        td += f(rest + b"\0")
else:
        sys.exit("template %s: this forger does not know it" % tn.decode())
lines[i] = b" ".join([pcr, hashlib.sha1(td).hexdigest().encode(), tn, dig, rest])
open(sys.argv[2], "wb").write(b"\n".join(lines))
PY
if python3 "$VERIFY" --pcr $PCR "$D/forged" "$D/q/pcrs.out" | tee "$D/v3.out"; then
        fail "a forged list was accepted"
fi
grep -q "matches no prefix" "$D/v3.out" || fail "rejected for the wrong reason"
done

step "4: measure more files after the quote: the list runs ahead, the old quote still verifies"
for i in 1 2 3 4 5; do printf 'late %d\n' "$i" >"$D/tree/ng/late$i"; done
ctl settle --timeout 60
n2=$(wc -l <"$LIST")
[ "$n2" -gt "$n" ] || fail "the list did not grow ($n → $n2)"
python3 "$VERIFY" --pcr $PCR "$LIST" "$D/q/pcrs.out" | tee "$D/v4.out"
grep -q "^ACCEPTED" "$D/v4.out" || fail "a list longer than the quote was rejected"
grep -q "replay of the first $n of $n2 entries" "$D/v4.out" || fail "wrong prefix"
# and a fresh quote covers all of it
ctl quote --nonce "$NONCE" --out "$D/q2" >/dev/null
python3 "$VERIFY" --pcr $PCR "$LIST" "$D/q2/pcrs.out" >"$D/v4b.out" || { cat "$D/v4b.out"; fail "a fresh quote was rejected"; }
grep -q "replay of the first $n2 of $n2 entries" "$D/v4b.out" || fail "a fresh quote does not cover the whole list"
echo "fresh quote: replay of all $n2 entries"

step "5: a list cut short of what the quote covers"
head -n $((n - 1)) "$D/list.at-quote" >"$D/short"
if python3 "$VERIFY" --pcr $PCR "$D/short" "$D/q/pcrs.out" | tee "$D/v5.out"; then
        fail "a truncated list was accepted"
fi

step "6: iverd restarted on this boot's list: the gap entry replays, is shown, and no runtime policy allows it"
ctl policy export --keylime --out "$D/runtime-policy.json" 2>/dev/null
python3 "$VERIFY" --pcr $PCR "$LIST" "$D/q2/pcrs.out" --policy "$D/runtime-policy.json" >"$D/v6a.out" ||
        { cat "$D/v6a.out"; fail "the list before the restart is not allowed by its own runtime policy"; }
fleet_stop_pid "$IVERD_PID"
fleet_start_iverd "$D/policy" --tpm "swtpm:path=$D/tpm/swtpm.sock" --pcr $PCR
ctl settle --timeout 60
n3=$(wc -l <"$LIST")
sed -n "$((n2 + 1))p" "$LIST" | grep -Eq "^$PCR 0{40} ima-ng sha256:0{64} iverd-gap:[0-9]+-[0-9]+\$" ||
        fail "entry $((n2 + 1)), the first after the restart, is not the gap: $(sed -n "$((n2 + 1))p" "$LIST")"
ctl quote --nonce "$NONCE" --out "$D/q3" >/dev/null
python3 "$VERIFY" --pcr $PCR --keylime-split "$LIST" "$D/q3/pcrs.out" | tee "$D/v6.out"
grep -q "^ACCEPTED" "$D/v6.out" || fail "the replay of a list holding the gap failed"
grep -q "replay of the first $n3 of $n3 entries" "$D/v6.out" || fail "the quote does not cover the list with the gap"
grep -Eq "^GAP line $((n2 + 1)): iverd-gap:[0-9]+-[0-9]+: iverd was not watching for [0-9]+ s" "$D/v6.out" ||
        fail "the verifier does not show the gap"
if python3 "$VERIFY" --pcr $PCR "$LIST" "$D/q3/pcrs.out" --policy "$D/runtime-policy.json" | tee "$D/v6b.out"; then
        fail "a runtime policy accepted the gap in silence"
fi
grep -Eq "policy: entry $n2: iverd-gap:[0-9]+-[0-9]+ 0{64} \(not in policy\)" "$D/v6b.out" ||
        fail "rejected, but not for the gap"

echo
echo "PASS"
