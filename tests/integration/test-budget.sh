#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Growth without end of evidence (issue 22 item 4), against the real daemon
# (OnAccess=exec, software TPM, PCR 23, the measured tree on an ext4 loop
# mount): an unprivileged user (created here, removed on exit) who may write
# a measured directory
#   storm    creates 6,000 small scripts there (as fast as it can) and renames
#            one file through 300 new names, while root changes 5 of its own
#            measured files: the user's entries stop at its budget
#            (budget.h: 4,096, refilled 1,024 an hour), ONE violation entry
#            names the file that crossed it, the renamed inode is listed
#            once under its last name (names at rest; it takes one of the
#            budget), root's 5 changes are all listed,
#            status says budget_limited_owners 1, the evidence is not broken
#            and a quote replays the whole list;
#   use      root executes one of the user's scripts that was not listed: it
#            is listed at its use with its digest (a use is never budgeted).
#   long     (IVER_BUDGET_SECONDS=S, default 0: not run) the user then goes
#            on for S seconds creating, renaming and removing files in a loop;
#            the user's entries stay within the budget and its refill, root's
#            changes made throughout are listed.
# Printed: entries, list bytes, the runtime directory's use, the storm's rate.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-daemon.sh
source "$here/lib-daemon.sh"
daemon_test_init swtpm useradd userdel setpriv python3 openssl
# not about how long a name takes to come to rest
export IVERD_TEST_REST_SETTLE_MS=${IVERD_TEST_REST_SETTLE_MS:-300}
NFILES=6000 BURST=4096

iver_mount ext4; M=$IVER_MNT; T=$M/tree
mkdir -p "$T/u" "$W/run" "$W/state" "$W/tpm"
chmod 0711 "$W"
SU=iverbudget$$
useradd -r -M -d /nonexistent -s /usr/sbin/nologin "$SU"
chown "$SU:" "$T/u"
uid=$(id -u "$SU")
for i in 1 2 3 4 5; do printf 'root %d\n' "$i" >"$T/r$i"; done
printf 'measure path="%s/**"\n' "$T" >"$W/p.policy"
printf '[Measure]\nOnAccess=exec\n' >"$W/iverd.conf"

swtpm socket --tpm2 --server type=unixio,path="$W/swtpm.sock" --ctrl type=unixio,path="$W/swtpm.sock.ctrl" \
        --tpmstate dir="$W/tpm" --flags startup-clear,not-need-init >>"$W/swtpm.log" 2>&1 &
SWTPM_PID=$!
for _ in $(seq 100); do [ -S "$W/swtpm.sock" ] && break; sleep 0.05; done
IVERD_LOG_STDERR=1 "$BUILD/iverd" --config "$W/iverd.conf" --policy "$W/p.policy" --runtime-dir "$W/run" \
        --state-dir "$W/state" --tpm "swtpm:path=$W/swtpm.sock" --pcr 23 >>"$W/iverd.log" 2>&1 &
IVERD_PID=$!
for _ in $(seq 200); do ctl status >/dev/null 2>&1 && break; sleep 0.05; done
ctl settle --timeout 60 >/dev/null || { tail -20 "$W/iverd.log"; echo "FAIL: iverd did not settle"; exit 1; }
n0=$(ctl log --ascii | wc -l)

echo "== storm: $SU creates $NFILES scripts in $T/u and renames one file through 300 names; root changes 5 files"
cat >"$W/storm.py" <<'PY'
import os, sys, time
d, n = sys.argv[1], int(sys.argv[2])
t = time.monotonic()
with open(f"{d}/mv0", "w") as f:
    f.write("moved\n")
for i in range(300):
    os.rename(f"{d}/mv{i}", f"{d}/mv{i + 1}")
for i in range(n):
    with open(f"{d}/s{i}", "w") as f:
        f.write(f"#!/bin/sh\necho user {i}\n")
    os.chmod(f"{d}/s{i}", 0o755)
print(f"{n} files in {time.monotonic() - t:.1f} s")
PY
t0=$(date +%s.%N)
setpriv --reuid="$SU" --regid="$SU" --clear-groups /usr/bin/python3 "$W/storm.py" "$T/u" "$NFILES" &
STORM=$!
for i in 1 2 3 4 5; do printf 'root %d changed\n' "$i" >"$T/r$i"; sleep 0.2; done
wait "$STORM" || fail "the storm failed"
ctl settle --timeout 120 >/dev/null || fail "iverd did not settle after the storm"
t1=$(date +%s.%N)
ctl log --ascii >"$W/list"
n1=$(wc -l <"$W/list")
user=$(awk -v p="$T/u/s" 'index($5, p) == 1 && $2 != "0000000000000000000000000000000000000000"' "$W/list" | wc -l)
viol=$(awk -v p="$T/u/" 'index($5, p) == 1 && $2 == "0000000000000000000000000000000000000000"' "$W/list" | wc -l)
moved=$(awk -v p="$T/u/mv" 'index($5, p) == 1' "$W/list" | wc -l)
runtime=$(du -sk "$W/run" | cut -f1)
echo "BUDGET: $((n1 - n0)) entries in $(printf '%.1f' "$(echo "$t1 - $t0" | bc)") s: $user of the user's $NFILES scripts, $viol violation, $moved for the inode renamed 300 times; list $(js list_bytes) B, runtime directory $runtime KiB"
echo "BUDGET: status budget_limited_owners $(js budget_limited_owners), budget_unlisted $(js budget_unlisted)"
[ "$user" -le $((BURST + 5 - 1)) ] || fail "$user entries for the user's files: more than its budget of $BURST"
[ "$user" -ge $((BURST - 10 - 1)) ] || fail "only $user of the user's files listed: the budget is $BURST"
[ "$viol" = 1 ] || fail "$viol violation entries for the user's files, expected 1 (the budget crossed)"
[ "$moved" = 1 ] && grep -q " $T/u/mv300\$" "$W/list" || fail "the inode renamed 300 times has $moved entries, not one under its last name"
grep -q "budget: uid $uid's files made more than $BURST list entries" "$W/iverd.log" || fail "no journal line for the budget"
[ "$(js budget_limited_owners)" = 1 ] || fail "status budget_limited_owners $(js budget_limited_owners)"
for i in 1 2 3 4 5; do
        d=$(printf 'root %d changed\n' "$i" | sha256sum | cut -d' ' -f1)
        grep -q " sha256:$d $T/r$i\$" "$W/list" || fail "root's change of $T/r$i is not listed"
done
[ "$(js evidence_broken)" = False ] || fail "the evidence is broken"

echo "== use: root executes one of the user's scripts the budget left unlisted"
pick=""
for i in $(seq $((NFILES - 1)) -1 0); do
        grep -q " $T/u/s$i\$" "$W/list" || { pick=$i; break; }
done
[ -n "$pick" ] || fail "every script of the user is listed"
if [ -n "$pick" ]; then
        out=$("$T/u/s$pick")
        [ "$out" = "user $pick" ] || fail "the script printed '$out'"
        ctl settle --timeout 60 >/dev/null
        d=$(sha256sum <"$T/u/s$pick" | cut -d' ' -f1)
        ctl log --ascii | grep -q " sha256:$d $T/u/s$pick\$" && echo "listed at its use: $T/u/s$pick" ||
                fail "the user's script root executed is not listed"
fi

LONG=${IVER_BUDGET_SECONDS:-0}
if [ "$LONG" -gt 0 ]; then
        echo "== long: $SU creates, renames and removes files for $LONG s; root changes a file every 10 s"
        cat >"$W/long.py" <<'PY'
import os, sys, time
d, secs = sys.argv[1], float(sys.argv[2])
end, i = time.monotonic() + secs, 0
while time.monotonic() < end:
    p = f"{d}/l{i}"
    with open(p, "w") as f:
        f.write(f"long {i}\n")
    os.rename(p, p + ".r")
    if i >= 1000:
        os.unlink(f"{d}/l{i - 1000}.r")
    i += 1
print(f"{i} files created, renamed and removed in {secs:.0f} s")
PY
        setpriv --reuid="$SU" --regid="$SU" --clear-groups /usr/bin/python3 "$W/long.py" "$T/u" "$LONG" &
        STORM=$!
        k=0
        while kill -0 "$STORM" 2>/dev/null; do
                k=$((k + 1)); printf 'root long %d\n' "$k" >"$T/r1"; sleep 10
        done
        wait "$STORM" || fail "the long storm failed"
        ctl settle --timeout 120 >/dev/null || fail "iverd did not settle after the long storm"
        ctl log --ascii >"$W/list"
        lu=$(awk -v p="$T/u/l" 'index($5, p) == 1' "$W/list" | wc -l)
        lr=0
        for j in $(seq 1 "$k"); do
                d=$(printf 'root long %d\n' "$j" | sha256sum | cut -d' ' -f1)
                grep -q " sha256:$d $T/r1\$" "$W/list" && lr=$((lr + 1))
        done
        echo "BUDGET long: ${LONG} s: list $(wc -l <"$W/list") entries ($lu of the loop's files), $(js list_bytes) B, runtime directory $(du -sk "$W/run" | cut -f1) KiB; root's $lr of $k changes listed; daemon CPU $(ps -o times= -p "$IVERD_PID") s"
        [ "$lu" -le $((LONG * 1024 / 3600 + 2)) ] || fail "$lu entries of the loop's files: more than the budget's refill over $LONG s"
        [ "$lr" -ge $((k - 1)) ] || fail "only $lr of root's $k changes listed during the long storm"
fi

n2=$(ctl log --ascii | wc -l)
nonce=$(openssl rand -hex 20)
ctl quote --nonce "$nonce" --out "$W/q" >/dev/null || fail "quote failed"
ctl verify "$W/q" --nonce "$nonce" >"$W/verify.txt" 2>&1 || { cat "$W/verify.txt"; fail "iverctl verify rejected the quote"; }
grep -q "list of $n2 entries, $n2 replayed" "$W/verify.txt" || { cat "$W/verify.txt"; fail "the quote does not replay all $n2 entries"; }
grep "^Verified" "$W/verify.txt"

if [ "$FAILS" -gt 0 ]; then
        echo "--- iverd log (tail)"; tail -30 "$W/iverd.log"
        echo "FAILED ($FAILS)"; exit 1
fi
echo PASS
