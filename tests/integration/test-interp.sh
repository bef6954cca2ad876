#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Reads are uses where the policy says so (issue 22 item 3), against the
# real daemon (OnAccess=exec, software TPM, the trees on a tmpfs mount): a
# rule with func=FILE_CHECK (open-time checks, kernel IMA's FILE_CHECK) on one
# tree, exec checks on the other. An unprivileged user (created here, removed
# on exit) holds a measured script open for write, writes evil content into
# it, root runs it with sh, `.` or python3 (a read, not an exec of the
# script), the user restores it and closes: each episode lists the evil
# (provisional) digest under the script's name and an open_writers
# violation entry. 3 interpreters x 2 holds (0.3 s, 3 s) x 3 = 18 episodes.
# IVER_INTERP_MODE=open: the same with OnAccess=open and no func= rule.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-daemon.sh
source "$here/lib-daemon.sh"
# not a test of names at rest: a settle after a change need not wait the 2 s
# a name takes to come to rest (IVERD_TEST_REST_SETTLE_MS, iverd(8))
export IVERD_TEST_REST_SETTLE_MS=${IVERD_TEST_REST_SETTLE_MS:-300}
daemon_test_init swtpm useradd userdel python3

iver_mount tmpfs; T=$IVER_MNT/opened; E=$IVER_MNT/execed
mkdir -p "$T" "$E" "$W/run" "$W/state" "$W/tpm"
chmod 0711 "$W"
SU=iverinterp$$
useradd -r -M -d /nonexistent -s /usr/sbin/nologin "$SU"
MODE=${IVER_INTERP_MODE:-exec} # open: OnAccess=open and no func= rule (every rule checks opens)
if [ "$MODE" = open ]; then
        printf 'measure path="%s/**"\n' "$T" >"$W/p.policy"
else
        printf 'measure path="%s/**" func=FILE_CHECK mask=^MAY_READ\nmeasure path="%s/**"\n' "$T" "$E" >"$W/p.policy"
fi
printf '[Measure]\nOnAccess=%s\n' "$MODE" >"$W/iverd.conf"
printf 'echo good\n' >"$T/s.sh"; printf 'print("good")\n' >"$T/s.py"; printf 'echo good\n' >"$E/r.sh"
chown "$SU:" "$T/s.sh" "$T/s.py" "$E/r.sh"

swtpm socket --tpm2 --server type=unixio,path="$W/swtpm.sock" --ctrl type=unixio,path="$W/swtpm.sock.ctrl" \
        --tpmstate dir="$W/tpm" --flags startup-clear,not-need-init >>"$W/swtpm.log" 2>&1 &
SWTPM_PID=$!
for _ in $(seq 100); do [ -S "$W/swtpm.sock" ] && break; sleep 0.05; done
IVERD_LOG_STDERR=1 "$BUILD/iverd" --config "$W/iverd.conf" --policy "$W/p.policy" --runtime-dir "$W/run" \
        --state-dir "$W/state" --tpm "swtpm:path=$W/swtpm.sock" --pcr 23 -v >"$W/iverd.log" 2>&1 &
IVERD_PID=$!
for _ in $(seq 200); do ctl status >/dev/null 2>&1 && break; sleep 0.05; done
ctl settle --timeout 60 >/dev/null
[ "$(js on_access)" = "$MODE" ] || { cat "$W/iverd.log"; echo "FAIL: on-access exec not active"; exit 1; }

# One episode: a child (the user) opens FILE read-write, writes EVIL, tells
# the parent (root), which runs CMD; then the child restores and closes.
cat >"$W/episode.py" <<'PY'
import os, pwd, subprocess, sys, time
path, evil, hold, user = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
cmd = sys.argv[5:]
good = open(path).read()
r1, w1 = os.pipe(); r2, w2 = os.pipe()
pid = os.fork()
if pid == 0:
    pw = pwd.getpwnam(user)
    os.setgid(pw.pw_gid); os.setuid(pw.pw_uid)
    fd = os.open(path, os.O_RDWR)
    os.ftruncate(fd, 0); os.pwrite(fd, evil.encode(), 0)
    os.write(w1, b"r")
    os.read(r2, 1)
    time.sleep(hold)
    os.ftruncate(fd, 0); os.pwrite(fd, good.encode(), 0)
    os.close(fd)
    os._exit(0)
os.read(r1, 1)
out = subprocess.run(cmd, capture_output=True, text=True).stdout.strip()
os.write(w2, b"g")
os.waitpid(pid, 0)
print(out)
PY
ZERO=0000000000000000000000000000000000000000
n=0 ok=0
for rep in 1 2 3; do
        for hold in 0.3 3; do
                for how in sh dot py; do
                        n=$((n + 1))
                        case $how in
                        sh)  f=$T/s.sh; evil="echo evil$n"; cmd=(sh "$f");;
                        dot) f=$T/s.sh; evil="echo evil$n"; cmd=(bash -c ". '$f'");;
                        py)  f=$T/s.py; evil="print(\"evil$n\")"; cmd=(/usr/bin/python3 "$f");;
                        esac
                        printf '%s\n' "$evil" >"$W/evil"; d=$(sha256sum <"$W/evil" | cut -d' ' -f1)
                        v0=$(ctl log --ascii | awk -v p="$f" -v z="$ZERO" '$NF == p && $2 == z' | wc -l)
                        out=$(python3 "$W/episode.py" "$f" "$evil
" "$hold" "$SU" "${cmd[@]}")
                        [ "$out" = "evil$n" ] || fail "episode $n ($how): the interpreter read '$out', not the evil content"
                        ctl settle --timeout 30 >/dev/null
                        ctl log --ascii >"$W/list"
                        v1=$(awk -v p="$f" -v z="$ZERO" '$NF == p && $2 == z' "$W/list" | wc -l)
                        if awk -v p="$f" -v d="sha256:$d" '$NF == p && $4 == d { f = 1 } END { exit !f }' "$W/list" && ((v1 > v0)); then
                                ok=$((ok + 1))
                        else
                                fail "episode $n ($how, hold $hold s): evil digest or open_writers entry missing (violations $v0 -> $v1)"
                        fi
                done
        done
done
echo "interpreter reads under a held writer: $ok/$n episodes listed (digest + open_writers violation)"

# the exec-only tree: a read there is not checked at open (no entry for it)
[ "$MODE" = open ] || {
before=$(ctl log --ascii | awk -v p="$E/r.sh" '$NF == p' | wc -l)
sh "$E/r.sh" >/dev/null
ctl settle --timeout 30 >/dev/null
after=$(ctl log --ascii | awk -v p="$E/r.sh" '$NF == p' | wc -l)
[ "$before" = "$after" ] || fail "a read in the exec-only tree added list entries ($before -> $after)"
}

if [ "$FAILS" -gt 0 ]; then
        [ -n "${VERBOSE:-}" ] && tail -50 "$W/iverd.log"
        echo "$FAILS failure(s)"; exit 1
fi
echo "PASS"
