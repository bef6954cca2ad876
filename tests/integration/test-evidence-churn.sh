#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Stale-but-consistent evidence (issue 13 item 13), performed against the real
# daemon with swtpm and the runtime directory on a 1 MiB tmpfs:
#  1. an unprivileged user (nobody) rewrites a file in the measured tree with
#     new content 1,000 times: the file is never at rest meanwhile, so the
#     list grows by one entry for it (its final content, once at rest), the
#     tmpfs does not fill; a root tamper elsewhere meanwhile is listed within
#     5 s, and a quote verifies (iverctl verify + tpm2_checkquote);
#  2. the runtime directory then fills up (as the churn used to do it) and
#     files are tampered with and added: the list cannot take it, status says
#     evidence_broken, the journal says so, and every quote from then on fails
#     verification (no prefix of the list replays to the PCR); its PCR is the
#     list plus the all-0xFF value (broken-replay.py), so nothing unlisted got in.
set -euo pipefail
BUILD=${IVER_BUILD_DIR:-/work/main/build}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
command -v swtpm >/dev/null || { echo "SKIP: swtpm not installed"; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: setpriv not installed"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (tmpfs mount, setpriv)"; exit 77; }
D=$(mktemp -d /tmp/iver-test-churn.XXXXXX)
chmod 755 "$D"
SWTPM_PID= IVERD_PID= CHURN_PID=
source "$(dirname "$0")/lib-tpmd.sh"
cleanup() {
        stop "$CHURN_PID"; stop "$IVERD_PID"; stop "$SWTPM_PID"
        mountpoint -q "$D/run" && { umount "$D/run" 2>/dev/null || umount -l "$D/run"; }
        rm -rf "$D"
}
trap cleanup EXIT
trap "exit 1" INT TERM HUP
export TSS2_LOG=all+none IVERD_SOCKET=$D/run/iverd.sock
listed() { grep -c " $1\$" "$D/run/ascii_runtime_measurements" || true; }
in_list() { grep -q "sha256:$(sha256sum "$1" | cut -d' ' -f1) $1\$" "$D/run/ascii_runtime_measurements"; }

mkdir -p "$D/tree/user" "$D/tpm" "$D/run" "$D/state"
chown 65534:65534 "$D/tree/user"
mount -t tmpfs -o size=1m,mode=0755 iver-churn-rt "$D/run" || fail "cannot mount a tmpfs"
for i in $(seq 1 20); do echo "system file $i" >"$D/tree/f$i"; done
echo "first" >"$D/tree/user/churn"
chown 65534:65534 "$D/tree/user/churn"
printf 'measure path="%s/tree/**"\n' "$D" >"$D/p.policy"
start_swtpm
IVERD_LOG_STDERR=1 "$BUILD/iverd" --policy "$D/p.policy" --runtime-dir "$D/run" --state-dir "$D/state" \
        --tpm "swtpm:path=$D/swtpm.sock" --pcr 23 >>"$D/iverd.log" 2>&1 &
IVERD_PID=$!
for _ in $(seq 100); do ctl status >/dev/null 2>&1 && break; sleep 0.05; done
ctl settle --timeout 60 >/dev/null
len0=$(js list_length)

quote_ok() {
        local nonce sel; nonce=$(openssl rand -hex 16)
        rm -rf "$D/q"
        sel=$(ctl quote --nonce "$nonce" --out "$D/q" | sed -n 's/.*selection \([^)]*\)).*/\1/p')
        tpm2_checkquote -u "$D/q/ak.pub.pem" -m "$D/q/quote.msg" -s "$D/q/quote.sig" -f "$D/q/pcrs.out" \
                -l "$sel" -g sha256 -q "$nonce" >/dev/null || fail "tpm2_checkquote rejected the quote"
        ctl verify "$D/q" "$@"
}

step "1. nobody rewrites $D/tree/user/churn 1,000 times"
setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 - "$D/tree/user/churn" <<'PY' &
import os, sys, time
for i in range(1000):
    with open(sys.argv[1], "w") as f:
        f.write("version %d\n" % i)
    time.sleep(0.004)
PY
CHURN_PID=$!
sleep 1
echo "tampered by root" >"$D/tree/f7"
t0=$SECONDS
until in_list "$D/tree/f7"; do ((SECONDS - t0 < 5)) || fail "a root tamper was not listed within 5 s during the churn"; sleep 0.1; done
echo "root tamper listed after $((SECONDS - t0)) s during the churn"
wait "$CHURN_PID" || fail "the churn writer failed"; CHURN_PID=
ctl settle --timeout 60 >/dev/null
n=$(listed "$D/tree/user/churn")
viol=$(grep -c "^23 0000000000000000000000000000000000000000 .* $D/tree/user/churn\$" "$D/run/ascii_runtime_measurements" || true)
echo "churned file: $n entries ($viol violation) for 1,000 versions; list $len0 -> $(js list_length);" \
        "rate_limited_files $(js rate_limited_files), rate_limited_versions $(js rate_limited_versions)"
# the first version (initial scan) and the final one: the versions between
# were never at rest (names at rest, iverd(8)) nor used, so the churn adds one
# entry, not one per version (the 60 s bound is not reached in ~5 s)
((n <= 2)) || fail "the churned file has $n list entries (first + final)"
((viol == 0)) || fail "the churned file has $viol violation entries"
in_list "$D/tree/user/churn" || fail "the churned file's final content is not listed after settle"
quote_ok
[ "$(js evidence_broken)" = False ] || fail "evidence broken without a list failure"

step "2. runtime directory full, then a tamper: the evidence is broken for good"
dd if=/dev/zero of="$D/run/filler" bs=4k status=none 2>/dev/null || true
for i in $(seq 1 64); do head -c 4096 /dev/zero >"$D/run/top$i" 2>/dev/null || break; done
# more than the free bytes left in the list files' last pages
for i in $(seq 1 5); do echo "tampered while full $i" >"$D/tree/f$i"; done
for i in $(seq 1 200); do echo "new while full $i" >"$D/tree/new-file-with-a-long-name-$i"; done
for _ in $(seq 50); do [ "$(js evidence_broken)" = True ] && break; sleep 0.1; done
[ "$(js evidence_broken)" = True ] || fail "status does not say evidence_broken with a full runtime directory"
grep -q "Measurement list cannot be written" "$D/iverd.log" || fail "no journal line for the broken evidence"
ctl settle --timeout 30 >/dev/null
rm -f "$D/run/filler" "$D/run"/top*
sleep 1.5
if out=$(quote_ok 2>&1); then fail "a quote verified after the list could not be written: $out"; fi
echo "quote after the list failure: $out"
grep -q "no prefix" <<<"$out" || fail "the quote failed for another reason"
kj=$(python3 "$HERE/broken-replay.py" "$D/q" 23) || fail "the PCR holds something the list lacks"
echo "PCR 23 = the first ${kj% *} list entries with the all-0xFF value after entry ${kj#* }"
echo; echo "PASS"
