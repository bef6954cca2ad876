#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A gap is evidence (issue 22 item 5), against the real daemon (OnAccess=exec,
# software TPM, PCR 23, the measured tree on an ext4 loop mount):
#   fresh    a fresh runtime directory: no gap entry, gap_at_start_sec 0
#   attack   iverd stopped; an unprivileged user (created here, removed on
#            exit) swaps its measured script's content, runs it, restores the
#            original; iverd started again: the list keeps the old run's
#            entries as they were, then ONE violation entry
#            iverd-gap:<start>-<end> (zero template digest) before any other
#            entry of the new run, whose span covers the stop; status and the
#            journal give its length; a quote replays the whole list
#            (`iverctl verify`: the gap is extended as all-0xFF) and verify
#            names the gap
#   idle     a restart with nothing changed still lists exactly one gap: the
#            daemon cannot know that nothing ran
#   crash    kill -9, then start: one gap entry, starting no later than the kill
set -euo pipefail
# not a test of names at rest: a settle after a change need not wait the 2 s
# a name takes to come to rest (IVERD_TEST_REST_SETTLE_MS, iverd(8))
export IVERD_TEST_REST_SETTLE_MS=${IVERD_TEST_REST_SETTLE_MS:-300}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-daemon.sh
source "$here/lib-daemon.sh"
daemon_test_init swtpm useradd userdel setpriv python3 openssl
test_cleanup_more() {
        [ -n "${KEEP_LOG:-}" ] && cp "$W/list" "$KEEP_LOG.list"
        return 0
}
ZERO=0000000000000000000000000000000000000000

iver_mount ext4; M=$IVER_MNT; T=$M/tree
mkdir -p "$T" "$W/run" "$W/state" "$W/tpm"
chmod 0711 "$W"
SU=ivergap$$
useradd -r -M -d /nonexistent -s /usr/sbin/nologin "$SU"
printf 'measure path="%s/**"\n' "$T" >"$W/p.policy"
printf '[Measure]\nOnAccess=exec\n' >"$W/iverd.conf"
printf '#!/bin/sh\necho good\n' >"$T/a"; chmod 0755 "$T/a"; chown "$SU:" "$T/a"
chown "$SU:" "$T"
printf 'config\n' >"$T/conf"
GOOD=$(sha256sum <"$T/a" | cut -d' ' -f1)
EVIL=$(printf '#!/bin/sh\necho evil\n' | sha256sum | cut -d' ' -f1)

swtpm socket --tpm2 --server type=unixio,path="$W/swtpm.sock" --ctrl type=unixio,path="$W/swtpm.sock.ctrl" \
        --tpmstate dir="$W/tpm" --flags startup-clear,not-need-init >>"$W/swtpm.log" 2>&1 &
SWTPM_PID=$!
for _ in $(seq 100); do [ -S "$W/swtpm.sock" ] && break; sleep 0.05; done

start_iverd() {
        IVERD_LOG_STDERR=1 "$BUILD/iverd" --config "$W/iverd.conf" --policy "$W/p.policy" --runtime-dir "$W/run" \
                --state-dir "$W/state" --tpm "swtpm:path=$W/swtpm.sock" --pcr 23 >>"$W/iverd.log" 2>&1 &
        IVERD_PID=$!
        for _ in $(seq 200); do ctl status >/dev/null 2>&1 && break; sleep 0.05; done
        ctl settle --timeout 60 >/dev/null || { tail -20 "$W/iverd.log"; echo "FAIL: iverd did not settle"; exit 1; }
}
stop_iverd() { # [signal]
        kill -"${1:-TERM}" "$IVERD_PID"
        for _ in $(seq 100); do kill -0 "$IVERD_PID" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$IVERD_PID" 2>/dev/null && { echo "FAIL: iverd did not stop"; exit 1; }
        wait "$IVERD_PID" 2>/dev/null || true
        IVERD_PID=""
}
snap_list() { ctl log --ascii >"$W/list"; wc -l <"$W/list"; }
gaps() { awk '$NF ~ /^iverd-gap:/' "$W/list" | wc -l; }
# check_gap N T_STOPPED T_STARTED: line N+1 of the list is the gap entry of a
# run started at T_STARTED after the previous one stopped by T_STOPPED; the
# N lines before are the previous list, unchanged. Sets GAP_S, GAP_E, GAP_LINE.
check_gap() {
        local n=$1 stopped=$2 started=$3
        head -n "$n" "$W/list" | cmp -s - "$W/list.before" || fail "the previous run's entries changed"
        GAP_LINE=$(sed -n "$((n + 1))p" "$W/list")
        echo "entry $((n + 1)): $GAP_LINE"
        read -r pcr th tmpl dig name <<<"$GAP_LINE"
        [ "$pcr" = 23 ] && [ "$th" = "$ZERO" ] && [ "$tmpl" = ima-ng ] && [ "${dig#sha256:}" != "$dig" ] ||
                fail "the first entry of the new run is not a violation entry: $GAP_LINE"
        [[ $name =~ ^iverd-gap:([0-9]+)-([0-9]+)$ ]] || { fail "the first entry of the new run is not a gap: $GAP_LINE"; return; }
        GAP_S=${BASH_REMATCH[1]} GAP_E=${BASH_REMATCH[2]}
        [ "$GAP_S" -le "$stopped" ] || fail "the gap starts at $GAP_S, after iverd had stopped ($stopped)"
        [ "$GAP_E" -ge "$started" ] || fail "the gap ends at $GAP_E, before iverd was started ($started)"
        [ "$(js gap_at_start_sec)" = $((GAP_E - GAP_S)) ] || fail "status gap_at_start_sec $(js gap_at_start_sec), the entry says $((GAP_E - GAP_S))"
        grep -q "Violation on $name: restart gap: iverd was not watching for $((GAP_E - GAP_S)) s" "$W/iverd.log" ||
                fail "no journal message with the gap's length"
}
quote_verify() { # TAG N: a quote replays the whole list of N entries and verify names the gaps
        local nonce; nonce=$(openssl rand -hex 20)
        rm -rf "$W/q"
        ctl quote --nonce "$nonce" --out "$W/q" >/dev/null || { fail "$1: quote failed"; return; }
        if ! ctl verify "$W/q" --nonce "$nonce" >"$W/verify.txt" 2>&1; then
                cat "$W/verify.txt"; fail "$1: iverctl verify rejected the quote"; return
        fi
        cat "$W/verify.txt"
        grep -q "list of $2 entries, $2 replayed" "$W/verify.txt" || fail "$1: the quote does not replay all $2 entries"
        [ "$(grep -c '^GAP entry [0-9]*: iverd-gap:' "$W/verify.txt")" = "$(gaps)" ] || fail "$1: verify does not name every gap"
}

echo "== fresh: a fresh runtime directory lists no gap"
start_iverd
n1=$(snap_list)
[ "$(gaps)" = 0 ] || fail "a fresh list holds a gap entry"
[ "$(awk -v z="$ZERO" '$2 == z' "$W/list" | wc -l)" = 0 ] || fail "a fresh list holds a violation"
[ "$(js gap_at_start_sec)" = 0 ] || fail "status gap_at_start_sec on a fresh list: $(js gap_at_start_sec)"
grep -q "sha256:$GOOD $T/a\$" "$W/list" || fail "$T/a not listed"
quote_verify fresh "$n1"

echo "== attack: stop iverd; a user swaps $T/a, runs it, restores it; start iverd"
cp "$W/list" "$W/list.before"
t_stop=$(date +%s)
stop_iverd
t_stopped=$(date +%s)
out=$(setpriv --reuid="$SU" --regid="$SU" --clear-groups sh -c '
        cat "$1" >"$1.orig" && printf "#!/bin/sh\necho evil\n" >"$1" && "$1" && cat "$1.orig" >"$1" && rm "$1.orig"' \
        sh "$T/a" 2>&1) || fail "the user could not swap its script: $out"
[ "$out" = evil ] || fail "the swapped script did not run: $out"
[ "$(sha256sum <"$T/a" | cut -d' ' -f1)" = "$GOOD" ] || fail "the original was not restored"
sleep 2
t_start=$(date +%s)
start_iverd
n2=$(snap_list)
check_gap "$n1" "$t_stopped" "$t_start"
[ "${GAP_S:-0}" -ge "$t_stop" ] || fail "the gap starts at $GAP_S, before the stop ($t_stop): the loop's end was not recorded"
[ $((GAP_E - GAP_S)) -ge 2 ] || fail "the gap ($GAP_S-$GAP_E) is shorter than the 2 s iverd was stopped"
echo "gap $GAP_S-$GAP_E: $((GAP_E - GAP_S)) s; iverd stopped at $t_stop..$t_stopped, started at $t_start"
[ "$(gaps)" = 1 ] || fail "$(gaps) gap entries after one restart"
grep -q "sha256:$EVIL" "$W/list" && fail "the evil content is listed: the test did not run it while iverd was stopped"
quote_verify attack "$n2"
ctl log --ascii | grep -q " iverd-gap:$GAP_S-$GAP_E\$" || fail "iverctl log does not show the gap"

echo "== idle: a restart with nothing changed still lists one gap"
cp "$W/list" "$W/list.before"
stop_iverd
t_stopped=$(date +%s)
t_start=$(date +%s)
start_iverd
n3=$(snap_list)
check_gap "$n2" "$t_stopped" "$t_start"
[ "$n3" = $((n2 + 1)) ] || fail "an idle restart added $((n3 - n2)) entries, not exactly the gap"
[ "$(gaps)" = 2 ] || fail "$(gaps) gap entries after two restarts"

echo "== crash: kill -9, then start: one gap, starting no later than the kill"
cp "$W/list" "$W/list.before"
t_stopped=$(date +%s)
stop_iverd KILL
t_start=$(date +%s)
start_iverd
n4=$(snap_list)
check_gap "$n3" "$t_stopped" "$t_start"
[ "$n4" = $((n3 + 1)) ] || fail "a restart after a crash added $((n4 - n3)) entries, not exactly the gap"
quote_verify crash "$n4"

if [ "$FAILS" -gt 0 ]; then
        echo "--- iverd log (tail)"; tail -30 "$W/iverd.log"
        echo "FAILED ($FAILS)"; exit 1
fi
echo PASS
