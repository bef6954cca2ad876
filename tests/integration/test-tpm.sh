#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The measurement list and the TPM against swtpm, checked by independent tools:
# tpm2_pcrread equals our replay, evmctl accepts the binary list,
# tpm2_checkquote accepts our quote; lib/quote-verify accepts it and rejects
# a wrong nonce, a flipped byte in the list / signature / PCR values, and a
# removed list entry. Skips (77) only when swtpm is not installed.
set -euo pipefail

BUILD=${IVER_BUILD_DIR:?IVER_BUILD_DIR not set}
HELPER=$BUILD/tests/itest-tpm
PCR=16          # resettable debug PCR: fine for tests, never a production default
BENCH_PCR=23

command -v swtpm >/dev/null || { echo "SKIP: swtpm not installed"; exit 77; }
for t in tpm2_pcrread tpm2_checkquote evmctl; do
        command -v $t >/dev/null || { echo "FAIL: $t not installed"; exit 1; }
done
[ -x "$HELPER" ] || { echo "FAIL: $HELPER not built"; exit 1; }

D=$(mktemp -d /tmp/iver-test-tpm.XXXXXX)
SWTPM_PID=
stop_swtpm() {
        [ -s "$D/swtpm.pid" ] && SWTPM_PID=$(cat "$D/swtpm.pid")
        if [ -n "$SWTPM_PID" ] && kill -0 "$SWTPM_PID" 2>/dev/null; then
                kill "$SWTPM_PID" 2>/dev/null || true
                for _ in $(seq 50); do kill -0 "$SWTPM_PID" 2>/dev/null || break; sleep 0.1; done
                kill -9 "$SWTPM_PID" 2>/dev/null || true
        fi
        SWTPM_PID=
}
cleanup() { stop_swtpm; rm -rf "$D"; }
trap cleanup EXIT
trap "exit 1" INT TERM HUP    # so that the EXIT trap runs on a ctest timeout too

start_swtpm() {
        swtpm socket --tpm2 --server type=unixio,path="$D/swtpm.sock" \
                --ctrl type=unixio,path="$D/swtpm.sock.ctrl" --tpmstate dir="$D/state" \
                --flags startup-clear,not-need-init --pid file="$D/swtpm.pid" >"$D/swtpm.log" 2>&1 &
        SWTPM_PID=$!
        for _ in $(seq 100); do [ -s "$D/swtpm.pid" ] && [ -S "$D/swtpm.sock" ] && return 0; sleep 0.05; done
        echo "FAIL: swtpm did not start"; cat "$D/swtpm.log"; exit 1
}
mkdir -p "$D/state" "$D/run" "$D/quote"
start_swtpm
TCTI="swtpm:path=$D/swtpm.sock"
export TPM2TOOLS_TCTI=$TCTI TSS2_LOG=all+none

fail() { echo "FAIL: $*"; exit 1; }
step() { echo; echo "== $*"; }

step "write-ahead and extend 300 measurements into PCR $PCR"
"$HELPER" extend "$TCTI" $PCR "$D/run" 300
N=$(( $(stat -c %s "$D/run/binary_runtime_measurements") ))
echo "binary list: $N bytes; ascii twin: $(wc -l <"$D/run/ascii_runtime_measurements") lines"

step "tpm2_pcrread equals the replay of the list"
"$HELPER" replay "$D/run" $PCR >"$D/replay.txt"
cat "$D/replay.txt"
tpm2_pcrread sha1:$PCR+sha256:$PCR | tee "$D/pcrread.txt"
for bank in sha1 sha256; do
        want=$(awk -v b=$bank '$1==b {print toupper($2)}' "$D/replay.txt")
        got=$(awk -v b="$bank:" -v p="$PCR:" '$1==b {inb=1; next} /^  [a-z]/ {inb=0} inb && $1==p {sub(/^0x/,"",$2); print toupper($2)}' "$D/pcrread.txt")
        [ -n "$got" ] && [ "$got" = "$want" ] || fail "$bank PCR $PCR: tpm2_pcrread $got, replay $want"
        echo "$bank: tpm2_pcrread == replay"
done

step "evmctl ima_measurement accepts the binary list"
for bank in sha1 sha256; do
        zero=$(awk -v b=$bank '$1==b {gsub(/./,"0",$2); print $2}' "$D/replay.txt")
        val=$(awk -v b=$bank '$1==b {print $2}' "$D/replay.txt")
        : >"$D/pcrs.$bank"
        for i in $(seq 0 $PCR); do
                if [ "$i" -eq $PCR ]; then v=$val; else v=$zero; fi
                printf 'PCR-%02d: %s\n' "$i" "$v" >>"$D/pcrs.$bank"
        done
done
set +e
evmctl ima_measurement --ignore-violations --pcrs sha1,"$D/pcrs.sha1" --pcrs sha256,"$D/pcrs.sha256" \
        "$D/run/binary_runtime_measurements" >"$D/evmctl.out" 2>&1
rc=$?
set -e
cat "$D/evmctl.out"
echo "evmctl exit status: $rc"
[ $rc -eq 0 ] || fail "evmctl rejected the list"
# and evmctl must notice a list that does not match
printf 'PCR-%02d: %s\n' $PCR "$(awk '$1=="sha256" {print $2}' "$D/replay.txt" | tr 0-9a-e 1-9a-f)" >"$D/bad"
sed -i "\$d" "$D/pcrs.sha256"; cat "$D/bad" >>"$D/pcrs.sha256"
sed -i "\$d" "$D/pcrs.sha1"; printf 'PCR-%02d: %040d\n' $PCR 1 >>"$D/pcrs.sha1"
if evmctl ima_measurement --ignore-violations --pcrs sha1,"$D/pcrs.sha1" --pcrs sha256,"$D/pcrs.sha256" \
        "$D/run/binary_runtime_measurements" >/dev/null 2>&1; then
        fail "evmctl accepted wrong PCR values"
fi
echo "evmctl rejects wrong PCR values: ok"

step "restart path: entries written but not extended (crash between write and extend)"
"$HELPER" append "$D/run" $PCR 40 late
"$HELPER" resume "$TCTI" $PCR "$D/run"
"$HELPER" replay "$D/run" $PCR >"$D/replay.txt"
"$HELPER" pcrread "$TCTI" $PCR | grep -E '^sha(1|256) ' >"$D/pcr.txt"
diff "$D/replay.txt" "$D/pcr.txt" || fail "PCR differs from the replay after resume"
"$HELPER" resume "$TCTI" $PCR "$D/run" | tee "$D/resume2.txt"
grep -q "extending 0$" "$D/resume2.txt" || fail "second resume extended again"
echo "resume: PCR == replay; nothing extended twice"

step "quote and tpm2_checkquote"
NONCE=$(od -An -tx1 -N20 /dev/urandom | tr -d ' \n')
"$HELPER" quote "$TCTI" $PCR "$NONCE" "$D/quote"
cp "$D/run/binary_runtime_measurements" "$D/quote/measurements.bin"
mkdir "$D/quote2"
"$HELPER" quote "$TCTI" $PCR "$NONCE" "$D/quote2" >/dev/null
cmp "$D/quote/ak.pub.pem" "$D/quote2/ak.pub.pem" || fail "the AK changed between connections"
echo "AK is the same key on every connection"
ls -l "$D/quote"
set +e
tpm2_checkquote -u "$D/quote/ak.pub.pem" -m "$D/quote/quote.msg" -s "$D/quote/quote.sig" \
        -f "$D/quote/pcrs.out" -l sha1:$PCR+sha256:$PCR -g sha256 -q "$NONCE" >"$D/checkquote.out" 2>&1
rc=$?
set -e
cat "$D/checkquote.out"
echo "tpm2_checkquote exit status: $rc"
[ $rc -eq 0 ] || fail "tpm2_checkquote rejected the quote"
if tpm2_checkquote -u "$D/quote/ak.pub.pem" -m "$D/quote/quote.msg" -s "$D/quote/quote.sig" \
        -f "$D/quote/pcrs.out" -l sha1:$PCR+sha256:$PCR -g sha256 -q "00$NONCE" >/dev/null 2>&1; then
        fail "tpm2_checkquote accepted a wrong nonce"
fi

step "lib/quote-verify accepts, and rejects each tampering"
"$HELPER" verify "$D/quote" "$NONCE" || fail "quote-verify rejected a good bundle"

flip() { # file offset
        local b
        b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
        printf "$(printf '\\%03o' $(( b ^ 1 )))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
expect_reject() { # what dir nonce
        local out
        if out=$("$HELPER" verify "$2" "$3"); then fail "$1: accepted: $out"; fi
        echo "$1: $out"
}
variant() { rm -rf "$D/v"; cp -r "$D/quote" "$D/v"; }

expect_reject "wrong nonce" "$D/quote" "ff$NONCE"
variant; flip "$D/v/measurements.bin" 200
expect_reject "flipped byte in the list" "$D/v" "$NONCE"
variant; flip "$D/v/quote.sig" $(( $(stat -c %s "$D/v/quote.sig") - 5 ))
expect_reject "flipped byte in the signature" "$D/v" "$NONCE"
variant; flip "$D/v/pcrs.out" 3
expect_reject "flipped byte in the PCR values" "$D/v" "$NONCE"
variant; flip "$D/v/quote.msg" 40
expect_reject "flipped byte in quote.msg" "$D/v" "$NONCE"
# remove the second entry: skip its record in the binary list
variant; "$HELPER" drop "$D/v/measurements.bin" 1
expect_reject "removed list entry" "$D/v" "$NONCE"
"$HELPER" mutate "$D/quote" "$NONCE" || fail "a mutated quote was accepted"
# a list that lags the quote is fine the other way round: more entries than the quote saw
variant; "$HELPER" append "$D/run" $PCR 3 after >/dev/null
cp "$D/run/binary_runtime_measurements" "$D/v/measurements.bin"
"$HELPER" verify "$D/v" "$NONCE" || fail "a list longer than the quote must verify (prefix)"

step "TPM outage: swtpm killed mid-burst, restarted with the same state"
# The helper runs these to stop and restart swtpm; the pid file lets the trap stop the new one.
cat >"$D/stop.sh" <<EOS
pid=\$(cat "$D/swtpm.pid"); kill \$pid; while kill -0 \$pid 2>/dev/null; do sleep 0.05; done
rm -f "$D/swtpm.pid" "$D/swtpm.sock" "$D/swtpm.sock.ctrl"
EOS
cat >"$D/start.sh" <<EOS
swtpm socket --tpm2 --server type=unixio,path="$D/swtpm.sock" --ctrl type=unixio,path="$D/swtpm.sock.ctrl" \
        --tpmstate dir="$D/state" --flags startup-clear,not-need-init --pid file="$D/swtpm.pid" >>"$D/swtpm.log" 2>&1 &
for i in \$(seq 100); do [ -s "$D/swtpm.pid" ] && [ -S "$D/swtpm.sock" ] && exit 0; sleep 0.05; done; exit 1
EOS
"$HELPER" outage "$TCTI" $PCR "$D/run" "bash $D/stop.sh" "bash $D/start.sh" 90 | tee "$D/outage.txt"
grep -q " 0 pending" "$D/outage.txt" || fail "entries left pending after the TPM came back"
"$HELPER" replay "$D/run" $PCR 2>/dev/null >"$D/replay.txt"
"$HELPER" pcrread "$TCTI" $PCR | grep -E '^sha(1|256) ' >"$D/pcr.txt"
diff "$D/replay.txt" "$D/pcr.txt" || fail "PCR differs from the replay after the outage"
echo "outage: no entry lost, none extended twice, PCR == replay"

step "extend throughput (PCR $BENCH_PCR)"
"$HELPER" bench "$TCTI" $BENCH_PCR 2000

echo
echo "PASS"
