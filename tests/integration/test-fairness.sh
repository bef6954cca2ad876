#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Huge files do not starve the rest (issue 13 item 14): two sparse 100 GiB
# files appear in a measured tree (its own tmpfs) of a daemon with 2 workers;
# while they hash, root tampers with a small measured file. The tamper must be
# listed (`iverctl log --ascii`, new digest) within 5 s, while the big files
# are still unlisted (still hashing). Then the daemon stops cleanly within 5 s
# (hashing is cancelled, not waited for). Prints the times (FAIRNESS: lines).
# Needs root.
set -u
# not a test of names at rest: a settle after a change need not wait the 2 s
# a name takes to come to rest (IVERD_TEST_REST_SETTLE_MS, iverd(8))
export IVERD_TEST_REST_SETTLE_MS=${IVERD_TEST_REST_SETTLE_MS:-300}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-faults.sh
source "$here/lib-faults.sh"
faults_init fairness

mount -t tmpfs -o size=64m,mode=0755 iver-fairness "$D/tree" || die "tmpfs"
on_cleanup "umount '$D/tree'"
mkdir -p "$D/tree/small" "$D/tree/big"
for i in $(seq 20); do echo "small $i" >"$D/tree/small/f$i"; done
printf 'measure path="%s/**"\n' "$D/tree" >"$D/p.policy"
IVERD_TPM_ARGS=(--tpm none --workers 2)
start_iverd
ctl settle --timeout 60 >/dev/null || die "no settle"

truncate -s 100G "$D/tree/big/b1" "$D/tree/big/b2"
# both big files handed to the pool (in flight) before the tamper
for _ in $(seq 100); do [[ $(js hashing) -ge 2 ]] && break; sleep 0.05; done
note "in flight before the tamper: $(js hashing)"
sleep 1

echo "tampered while big files hash $$" >>"$D/tree/small/f3"
H=$(sha256sum "$D/tree/small/f3" | cut -d' ' -f1)
t0=$(date +%s%N); LISTED=
for _ in $(seq 300); do
        if ctl log --ascii | grep -q "sha256:$H $D/tree/small/f3\$"; then LISTED=$(( ($(date +%s%N) - t0) / 1000000 )); break; fi
        sleep 0.1
done
ctl log --ascii >"$D/log.txt"
if [[ -n $LISTED ]]; then
        echo "FAIRNESS: tamper listed after ${LISTED} ms while two 100 GiB files hash"
        ((LISTED < 5000)) || fail "tamper listed after ${LISTED} ms (limit 5000)"
else
        fail "tamper not listed within 30 s while two 100 GiB files hash"
fi
# truncate creates each file empty, then extends it: the empty version may be
# listed (provisionally, with its open_writers violation); the 100 GiB one must not be yet
EMPTY=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
grep "/big/b[12]\$" "$D/log.txt" | grep -v -e "sha256:$EMPTY " -e "sha256:0\{64\} " | grep -q . &&
        fail "a 100 GiB file was already listed: the test did not overlap with its hashing"
alive || true
# a stop does not wait for 100 GiB of hashing to finish: a clean exit within 5 s
t0=$(date +%s%N)
( sleep 5; kill -9 "$IVERD_PID" 2>/dev/null ) &
KPID=$!
stop_iverd
kill "$KPID" 2>/dev/null; wait "$KPID" 2>/dev/null
STOP_MS=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "FAIRNESS: stopped in ${STOP_MS} ms with big files hashing"
((STOP_MS < 5000)) || fail "stopping took ${STOP_MS} ms: the workers waited for the big files"
[[ $FAILS -eq 0 ]] || exit 1
echo PASS
