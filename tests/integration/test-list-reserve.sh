#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The list's reservation (issue 22 item 4): another writer that fills the
# runtime directory's filesystem must not end the boot's evidence. Against the
# real daemon (software TPM, PCR 23, the measured tree on a tmpfs of its own),
# the runtime directory a 16 MiB tmpfs:
#   reserve  iverd keeps 16 KiB reserved ahead of each list file
#            (IVERD_TEST_LIST_RESERVE=16384: small, so that the 20 changes
#            below outgrow a chunk and iverd has to ask for more); another
#            process fills the tmpfs with dd until ENOSPC; root changes 20
#            measured files (names of 200 characters: ~7 KiB of list, more
#            than a chunk, less than the reservation): all 20 are listed in
#            both list files, the evidence is not broken, a quote replays the
#            whole list, status says list_reserve_short and fewer bytes
#            reserved, the journal names the directory once;
#   none     the same with no reservation (IVERD_TEST_LIST_RESERVE=0): the
#            fill breaks the evidence (evidence_broken, the quote refused):
#            the failure the reservation prevents is real.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-daemon.sh
source "$here/lib-daemon.sh"
daemon_test_init swtpm openssl python3 dd df
# not about how long a name takes to come to rest
export IVERD_TEST_REST_SETTLE_MS=${IVERD_TEST_REST_SETTLE_MS:-300}
RESERVE=16384 N=20

iver_mount tmpfs; T=$IVER_MNT/tree
mkdir -p "$T" "$W/state"
chmod 0711 "$W"
long=$(printf 'x%.0s' $(seq 200))
for i in $(seq 1 $N); do printf 'initial %d\n' "$i" >"$T/$long$i"; done
printf 'measure path="%s/**"\n' "$T" >"$W/p.policy"

# start PHASE RESERVE: a fresh 16 MiB runtime tmpfs, software TPM and iverd
start() {
        RUN=$W/run-$1
        mkdir -p "$RUN" "$W/tpm-$1"
        mount -t tmpfs -o size=16m,mode=0755 iver-reserve "$RUN"
        IVER_MOUNTS+=("$RUN")   # unmounted by the cleanup, after the daemon stops
        export IVERD_SOCKET=$RUN/iverd.sock
        swtpm socket --tpm2 --server type=unixio,path="$W/swtpm-$1.sock" --ctrl type=unixio,path="$W/swtpm-$1.sock.ctrl" \
                --tpmstate dir="$W/tpm-$1" --flags startup-clear,not-need-init >>"$W/swtpm.log" 2>&1 &
        SWTPM_PID=$!
        for _ in $(seq 100); do [ -S "$W/swtpm-$1.sock" ] && break; sleep 0.05; done
        LOG=$W/iverd-$1.log TPMSOCK=$W/swtpm-$1.sock
        run_iverd "$2"
}

# run_iverd RESERVE: iverd on $RUN and $TPMSOCK, settled
run_iverd() {
        IVERD_TEST_LIST_RESERVE=$1 IVERD_LOG_STDERR=1 "$BUILD/iverd" --policy "$W/p.policy" --runtime-dir "$RUN" \
                --state-dir "$W/state" --tpm "swtpm:path=$TPMSOCK" --pcr 23 >>"$LOG" 2>&1 &
        IVERD_PID=$!
        for _ in $(seq 200); do ctl status >/dev/null 2>&1 && break; sleep 0.05; done
        ctl settle --timeout 60 >/dev/null || { tail -20 "$LOG"; fail "iverd did not settle"; exit 1; }
}

stop() {
        stop_pid "$IVERD_PID"; IVERD_PID=""
        stop_pid "$SWTPM_PID"; SWTPM_PID=""
        rm -rf "$W/state"; mkdir -p "$W/state"
}

# fill: another writer takes every free page of the runtime tmpfs
fill() {
        dd if=/dev/zero of="$RUN/filler" bs=64k status=none 2>/dev/null || true
        # a file's last partial page counts whole: top up with page-sized files
        for i in $(seq 1 64); do head -c 4096 /dev/zero >"$RUN/top$i" 2>/dev/null || break; done
        echo "filled: $(df --output=avail -B1 "$RUN" | tail -1 | tr -d ' ') bytes free on $RUN"
}

# listed TAG: how many of the N changes are in both list files (LISTED)
listed() {
        local i d n=0
        ctl log --ascii >"$W/list"
        for i in $(seq 1 $N); do
                d=$(printf '%s change %d\n' "$1" "$i" | sha256sum | cut -d' ' -f1)
                grep -q " sha256:$d $T/$long$i\$" "$RUN/ascii_runtime_measurements" &&
                        grep -q " sha256:$d $T/$long$i\$" "$W/list" && n=$((n + 1))
        done
        LISTED=$n
}

# quote_ok TAG: a quote replays the whole list
quote_ok() {
        local n nonce
        n=$(ctl log --ascii | wc -l)
        nonce=$(openssl rand -hex 20)
        ctl quote --nonce "$nonce" --out "$W/q" >/dev/null || fail "$1: quote failed"
        ctl verify "$W/q" --nonce "$nonce" >"$W/verify.txt" 2>&1 || { cat "$W/verify.txt"; fail "$1: iverctl verify rejected the quote"; }
        grep -q "list of $n entries, $n replayed" "$W/verify.txt" || { cat "$W/verify.txt"; fail "$1: the quote does not replay all $n entries"; }
        echo "$1: $(grep "^Verified" "$W/verify.txt")"
}

# change TAG: root changes the N measured files; waits (20 s at most) until
# they are listed or the list fails
change() {
        local i t0=$SECONDS
        for i in $(seq 1 $N); do printf '%s change %d\n' "$1" "$i" >"$T/$long$i"; done
        while :; do
                ctl settle --timeout 60 >/dev/null || fail "$1: iverd did not settle after the changes"
                listed "$1"
                [ "$LISTED" = $N ] || [ "$(js list_failing)" = True ] || ((SECONDS - t0 >= 20)) && break
                sleep 0.5
        done
}

echo "== reserve: $RESERVE bytes reserved ahead of each list file, the runtime tmpfs filled, root changes $N files"
start reserve "$RESERVE"
r0=$(js list_reserved_bytes)
echo "at start: list_reserved_bytes $r0, list_reserve_short $(js list_reserve_short), supported $(js list_reserve_supported)"
[ "$(js list_reserve_supported)" = True ] || fail "tmpfs: fallocate said not supported"
[ "$r0" -ge "$RESERVE" ] || fail "only $r0 bytes reserved at start, not $RESERVE"
[ "$(js list_reserve_short)" = False ] || fail "the reservation is short before the fill"
fill
change reserve
r1=$(js list_reserved_bytes)
echo "RESERVE: $LISTED of $N changes listed with the tmpfs full; evidence_broken $(js evidence_broken), list_failing $(js list_failing), list_reserve_short $(js list_reserve_short), list_reserved_bytes $r1 (was $r0), list $(js list_bytes) B"
[ "$LISTED" = $N ] || fail "only $LISTED of root's $N changes are listed (in both list files)"
[ "$(js evidence_broken)" = False ] || fail "the evidence broke although the reservation had room"
[ "$(js list_failing)" = False ] || fail "list_failing with a reservation that had room"
[ "$(js list_reserve_short)" = True ] || fail "status does not say the reservation is short"
[ "$r1" -lt "$r0" ] || fail "list_reserved_bytes did not go down ($r0 → $r1)"
w=$(grep -c "Cannot extend the measurement list's reservation in $RUN" "$LOG" || true)
[ "$w" = 1 ] || fail "$w journal lines about the short reservation, expected 1"
grep "reservation in $RUN" "$LOG" | head -1
quote_ok "full"

echo "== reserve, restart: iverd restarts on the full tmpfs (the list reopened, its ASCII twin rebuilt)"
stop_pid "$IVERD_PID"; IVERD_PID=""
b0=$(stat -c %s "$RUN/binary_runtime_measurements") a0=$(wc -l <"$RUN/ascii_runtime_measurements")
i0=$(stat -c %i "$RUN/ascii_runtime_measurements")
run_iverd "$RESERVE"
b1=$(stat -c %s "$RUN/binary_runtime_measurements") a1=$(wc -l <"$RUN/ascii_runtime_measurements")
i1=$(stat -c %i "$RUN/ascii_runtime_measurements")
echo "RESTART: binary list $b0 → $b1 B, ASCII $a0 → $a1 lines ($([ "$i0" = "$i1" ] && echo "rebuilt in place" || echo "a new file")); list_length $(js list_length), list_reserved_bytes $(js list_reserved_bytes), list_reserve_short $(js list_reserve_short), evidence_broken $(js evidence_broken)"
[ "$a1" = "$(js list_length)" ] || fail "the rebuilt ASCII list has $a1 lines for $(js list_length) entries"
[ "$(js evidence_broken)" = False ] || fail "the evidence broke at the restart"
[ "$(js list_reserve_short)" = True ] || fail "status does not say the reservation is short after the restart"
[ "$(js list_reserved_bytes)" -gt 0 ] || fail "no bytes reserved after the restart: the earlier run's reservation went unnoticed"
quote_ok "restarted full"

echo "== reserve, freed: the filler goes, root changes the files again"
rm -f "$RUN/filler" "$RUN"/top*
change freed
echo "FREED: $LISTED of $N listed; list_reserve_short $(js list_reserve_short), list_reserved_bytes $(js list_reserved_bytes)"
[ "$LISTED" = $N ] || fail "only $LISTED of root's $N changes listed after the space came back"
[ "$(js list_reserve_short)" = False ] || fail "the reservation is still short with space free"
[ "$(js list_reserved_bytes)" -ge "$RESERVE" ] || fail "only $(js list_reserved_bytes) bytes reserved with space free"
grep -q "reservation in $RUN is whole again" "$LOG" || fail "no journal line for the reservation restored"
quote_ok "freed"
stop

echo "== none: no reservation (IVERD_TEST_LIST_RESERVE=0), the same fill and changes"
start none 0
[ "$(js list_reserved_bytes)" = 0 ] || fail "bytes reserved with the reservation off"
fill
change none
echo "NONE: $LISTED of $N changes listed with the tmpfs full; evidence_broken $(js evidence_broken), list_failing $(js list_failing), list_failures $(js list_failures)"
[ "$(js evidence_broken)" = True ] || fail "without a reservation the fill did not break the evidence: the test shows nothing"
nonce=$(openssl rand -hex 20)
if ctl quote --nonce "$nonce" --out "$W/q2" >/dev/null 2>&1 && ctl verify "$W/q2" --nonce "$nonce" >/dev/null 2>&1; then
        fail "a quote verified with the evidence broken"
fi
stop

if [ "$FAILS" -gt 0 ]; then
        for l in "$W"/iverd-*.log; do echo "--- $l (tail)"; tail -20 "$l"; done
        echo "FAILED ($FAILS)"; exit 1
fi
echo PASS
