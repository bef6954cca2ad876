#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The daemon end to end (issue 4): a real iverd per filesystem on loop-mounted
# ext4 and xfs (strictatime), driven through iverctl. Scenarios, each with the
# ledger (`iverctl stats --json`) printed before/after:
#   a  reads of every file, many times      → nothing re-hashed, avoided_vs_atime grows
#   b  content change, mtime+atime restored → re-hashed, missed_by_mtime +1, digest = sha256sum
#   c  chmod, chown, setfattr, hard link    → metadata_only +1, not re-hashed, no bytes hashed
#                                            (writes attested by the fanotify filesystem mark)
#   d  inotify overflow (small fs.inotify.max_queued_events while iverd starts)
#                                            → overflow reported, every changed file re-measured
#   e  new directories, renames (file, dir), deletions, FIFOs, chmod 000 files,
#      files that vanish between event and hash, names with newlines / invalid UTF-8
#   f  socket activation (systemd-socket-activate) + readiness on a test NOTIFY_SOCKET:
#      READY=1, STATUS=, STOPPING=1
#   g  a non-root client is refused (root verbs and, with no stats group, read verbs)
#   h  (ext4) a storm of 100,000 modifications: 1,000 files × 100; peak RSS and queue depth
# Needs root. IVER_BUILD_DIR (default /work/main/build-itest) holds iverd and iverctl.
#   IVER_FS="ext4" restricts the filesystems; IVER_STORM=0 skips the storm.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-mounts.sh
source "$here/lib-mounts.sh"
# not a test of names at rest: a settle after a change need not wait the 2 s
# a name takes to come to rest (IVERD_TEST_REST_SETTLE_MS, iverd(8))
export IVERD_TEST_REST_SETTLE_MS=${IVERD_TEST_REST_SETTLE_MS:-300}

BUILD=${IVER_BUILD_DIR:-/work/main/build-itest}
IVERD=$BUILD/iverd
IVERCTL=$BUILD/iverctl
for b in "$IVERD" "$IVERCTL"; do
        [[ -x $b ]] || { echo "FAIL: $b not built (set IVER_BUILD_DIR)" >&2; exit 1; }
done
for t in python3 sha256sum setpriv mkfifo; do
        command -v "$t" >/dev/null 2>&1 || { echo "FAIL: $t not found" >&2; exit 1; }
done
HAVE_SSA=1
command -v systemd-socket-activate >/dev/null 2>&1 || HAVE_SSA=0

iver_mounts_init

# --- cleanup: our own additions run before the library's ---------------------
QMAX_FILE=/proc/sys/fs/inotify/max_queued_events
QMAX_LOW=256
QMAX_SAVED=$(cat "$QMAX_FILE")
if [[ $QMAX_SAVED -le $QMAX_LOW ]]; then
        # another run of this test lowered it and has not restored it yet
        echo "WARNING: $QMAX_FILE is $QMAX_SAVED (another run of this test?); will restore 16384" >&2
        QMAX_SAVED=16384
fi
DAEMONS=()            # iverd pids: continued before the library's cleanup kills them
# fanotify (whole-filesystem tracking) has its own queue limit: lowered and restored with inotify's
FQMAX_FILE=/proc/sys/fs/fanotify/max_queued_events
FQMAX_SAVED=$(cat "$FQMAX_FILE" 2>/dev/null || echo)
if [[ -n $FQMAX_SAVED && $FQMAX_SAVED -le $QMAX_LOW ]]; then
        echo "WARNING: $FQMAX_FILE is $FQMAX_SAVED (another run of this test?); will restore 16384" >&2
        FQMAX_SAVED=16384
fi
restore_qmax() {
        if [[ -n $QMAX_SAVED && $(cat "$QMAX_FILE") != "$QMAX_SAVED" ]]; then
                echo "$QMAX_SAVED" >"$QMAX_FILE" || echo "WARNING: could not restore $QMAX_FILE to $QMAX_SAVED" >&2
        fi
        if [[ -n $FQMAX_SAVED && $(cat "$FQMAX_FILE") != "$FQMAX_SAVED" ]]; then
                echo "$FQMAX_SAVED" >"$FQMAX_FILE" || echo "WARNING: could not restore $FQMAX_FILE to $FQMAX_SAVED" >&2
        fi
}
test_cleanup() {
        local rc=$? pid
        set +e # cleanup goes on whatever fails
        restore_qmax
        # A daemon left stopped (SIGSTOP) would never act on the SIGTERM.
        for pid in "${DAEMONS[@]}"; do
                kill -CONT "$pid" 2>/dev/null
        done
        (exit "$rc")
        iver_mounts_cleanup
}
trap test_cleanup EXIT
# The socket of a daemon lives under the work dir; non-root clients (g) must reach it.
chmod 0711 "$IVER_WORKDIR"

W=$IVER_WORKDIR
H=$W/h.py
SUMMARY=$W/summary
: >"$SUMMARY"
FAILS=0
cat >"$H" <<'PY'
import hashlib, json, os, socket, stat, subprocess, sys, time

LEDGER = ["checks", "first_seen", "remeasured", "metadata_only", "avoided_vs_atime", "avoided_vs_mtime",
          "extra_vs_mtime", "missed_by_mtime", "unchanged_content", "bytes_hashed",
          "bytes_avoided_vs_atime", "bytes_avoided_vs_mtime"]

def load(p):
    with open(p) as f:
        return json.load(f)

def unescape(b):
    """Undo iverctl's print_path(): \\\\ \\n \\t \\xHH."""
    out, i = bytearray(), 0
    while i < len(b):
        c = b[i]
        if c == 0x5c and i + 1 < len(b):
            n = b[i + 1]
            if n == 0x5c: out.append(0x5c); i += 2; continue
            if n == ord('n'): out.append(10); i += 2; continue
            if n == ord('t'): out.append(9); i += 2; continue
            if n == ord('x') and i + 3 < len(b):
                out.append(int(b[i + 2:i + 4], 16)); i += 4; continue
        out.append(c); i += 1
    return bytes(out)

def parse_list(path):
    """iverctl list: 'DIGEST  STATE(11) PATH' a line; DIGEST is '-' when unmeasured."""
    ents = {}
    with open(path, 'rb') as f:
        for line in f.read().split(b'\n'):
            if not line:
                continue
            dig, rest = line.split(b'  ', 1)
            ents[unescape(rest[12:])] = (dig.decode(), rest[:11].strip().decode())
    return ents

def sha256(p):
    h = hashlib.sha256()
    with open(p, 'rb') as f:
        for blk in iter(lambda: f.read(1 << 20), b''):
            h.update(blk)
    return h.hexdigest()

def cmd_get(a):            # get FILE KEY
    v = load(a[0])
    for k in a[1].split('.'):
        v = v[k]
    print(v)

def cmd_table(a):          # table TITLE BEFORE AFTER
    title, b, x = a[0], load(a[1]), load(a[2])
    print(f"  {title}")
    print(f"  | {'counter':<24} | {'before':>12} | {'after':>12} | {'delta':>10} |")
    print(f"  |{'-'*26}|{'-'*14}|{'-'*14}|{'-'*12}|")
    for k in LEDGER:
        if k in b and k in x:
            print(f"  | {k:<24} | {b[k]:>12} | {x[k]:>12} | {x[k]-b[k]:>+10} |")

def cmd_deltas(a):         # deltas BEFORE AFTER → one summary cell list
    b, x = load(a[0]), load(a[1])
    print(" ".join(f"{x[k]-b[k]:+d}" if k in b and k in x else "?" for k in ["checks", "remeasured", "metadata_only", "extra_vs_mtime",
                                                "missed_by_mtime", "unchanged_content", "bytes_hashed"]))

def cmd_listcheck(a):      # listcheck LISTFILE ROOT [LOGFILE]: the list under ROOT is exactly the regular files,
                           # digests = sha256, state 'measured', and each digest in the IMA-format log
    ents, root = parse_list(a[0]), os.fsencode(a[1]).rstrip(b'/')
    logged = None
    if len(a) > 2:
        with open(a[2], 'rb') as f:
            logged = {w.decode() for w in f.read().split() if w.startswith(b'sha256:')}
    ents = {p: v for p, v in ents.items() if p.startswith(root + b'/')}
    problems, n, states = [], 0, {}
    seen = set()
    for d, dirs, files in os.walk(root):
        for name in files + dirs:
            p = os.path.join(d, name)
            st = os.lstat(p)
            if not stat.S_ISREG(st.st_mode):
                continue
            n += 1
            seen.add(p)
            if p not in ents:
                problems.append(f"not in list: {p!r}")
                continue
            dig, state = ents[p]
            states[state] = states.get(state, 0) + 1
            want = "sha256:" + sha256(p)
            if dig != want:
                problems.append(f"digest mismatch: {p!r}: list {dig} ({state}), sha256 {want}")
            elif state != "measured":
                problems.append(f"still {state} after settle: {p!r} (digest right, not in the measurement list)")
            elif logged is not None and dig not in logged:
                problems.append(f"digest of {p!r} not in the measurement list (iverctl log --ascii)")
    for p in ents:
        if p not in seen:
            problems.append(f"stale list entry (no such regular file): {p!r} {ents[p]}")
    for m in problems[:25]:
        print("    " + m)
    if len(problems) > 25:
        print(f"    … {len(problems) - 25} more")
    print(f"    list check {a[1]}: {n} regular files, {len(ents)} list entries, states {states}, "
          f"{len(problems)} problems")
    sys.exit(1 if problems else 0)

def cmd_lookup(a):         # lookup LISTFILE PATH(bytes via surrogateescape) → digest in list or '-'
    ents = parse_list(a[0])
    v = ents.get(os.fsencode(a[1]))
    print(v[0] if v else "absent")

def cmd_notify(a):         # notify ABSTRACT_NAME OUTFILE: a test NOTIFY_SOCKET
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    s.bind("\0" + a[0])
    s.settimeout(120)
    with open(a[1], 'w') as out:
        out.write("LISTENING\n"); out.flush()
        while True:
            try:
                msg, anc, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(64) + socket.CMSG_SPACE(12))
            except socket.timeout:
                out.write("TIMEOUT\n"); return
            pid = "?"
            for lvl, typ, data in anc:
                if lvl == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                    for i in range(0, len(data) - len(data) % 4, 4):
                        os.close(int.from_bytes(data[i:i + 4], sys.byteorder))
                elif lvl == socket.SOL_SOCKET and typ == socket.SCM_CREDENTIALS:
                    pid = str(int.from_bytes(data[0:4], sys.byteorder))
            for line in msg.decode(errors='replace').split('\n'):
                if line:
                    out.write(f"pid={pid} {line}\n"); out.flush()
            if b"STOPPING=1" in msg:
                return

def cmd_writer(a):         # writer DIR NFILES ROUNDS: open/write/close each file, round after round
    d, nf, rounds = a[0], int(a[1]), int(a[2])
    t0 = time.monotonic()
    for r in range(rounds):
        for i in range(nf):
            fd = os.open(f"{d}/f{i:04d}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.write(fd, f"file {i} round {r}\n".encode() * (1 + i % 7))
            os.close(fd)
    print(f"    writer: {nf * rounds} modifications (open/write/close) in {time.monotonic() - t0:.2f} s")

def cmd_sampler(a):        # sampler PID IVERCTL SOCKET STOPFILE OUT: every 0.2 s
    pid, ctl, sock, stop, out = a
    with open(out, 'w') as f:
        while not os.path.exists(stop):
            t = time.monotonic()
            try:
                st = open(f"/proc/{pid}/status").read()
            except OSError:
                break
            kv = {l.split(':')[0]: l.split(':')[1].split()[0] for l in st.splitlines() if l.startswith(('VmHWM', 'VmRSS'))}
            try:
                r = json.loads(subprocess.run([ctl, "--socket", sock, "status", "--json"], capture_output=True,
                                              timeout=5).stdout)
            except Exception:
                r = {}
            f.write(f"{t:.3f} {kv.get('VmHWM', 0)} {kv.get('VmRSS', 0)} {r.get('pending', -1)} "
                    f"{r.get('peak_queued', -1)} {r.get('inotify_overflows', -1)} {r.get('coalesced_events', -1)}\n")
            f.flush()
            time.sleep(max(0, 0.2 - (time.monotonic() - t)))

globals()["cmd_" + sys.argv[1]](sys.argv[2:])
PY
py() { python3 "$H" "$@"; }

# --- helpers -------------------------------------------------------------------
FS=
fail() {
        echo "FAIL [$FS]: $*" >&2
        echo "FAIL [$FS]: $*"
        FAILS=$((FAILS + 1))
        SCEN_OK=0
}
pass() { echo "  PASS [$FS]: $*"; }

# start_iverd NAME POLICY [iverd args…]: sets D_PID D_SOCK D_LOG D_DIR
start_iverd() {
        local name=$1 policy=$2 i
        shift 2
        D_DIR=$W/$name
        mkdir -p "$D_DIR"
        D_SOCK=$D_DIR/run/iverd.sock
        D_LOG=$D_DIR/iverd.log
        IVERD_LOG_STDERR=1 "$IVERD" --on-access none --policy "$policy" --runtime-dir "$D_DIR/run" --state-dir "$D_DIR/state" \
                --tpm none "$@" 2>"$D_LOG" &
        D_PID=$!
        iver_track_pid "$D_PID"
        DAEMONS+=("$D_PID")
        for ((i = 0; i < 200; i++)); do
                [[ -S $D_SOCK ]] && break
                kill -0 "$D_PID" 2>/dev/null || break
                sleep 0.05
        done
        if [[ ! -S $D_SOCK ]]; then
                fail "iverd ($name) did not create $D_SOCK; log:"; sed 's/^/    /' "$D_LOG" >&2
                return 1
        fi
        [[ ${NO_SETTLE:-0} == 1 ]] && return 0
        ctl settle --timeout 120 || { fail "initial settle of iverd ($name) failed"; return 1; }
}
ctl() { "$IVERCTL" --socket "$D_SOCK" "$@"; }
alive() {
        kill -0 "$D_PID" 2>/dev/null && return 0
        wait "$D_PID"
        fail "iverd (pid $D_PID) died (exit status $?); last log lines:"
        tail -n 20 "$D_LOG" | sed 's/^/    /' >&2
        return 1
}
# stop_iverd: SIGTERM, expect a clean exit 0
stop_iverd() {
        local st i
        kill -CONT "$D_PID" 2>/dev/null
        kill -TERM "$D_PID" 2>/dev/null
        wait "$D_PID"
        st=$?
        for i in "${!IVER_PIDS[@]}"; do [[ ${IVER_PIDS[i]} == "$D_PID" ]] && unset 'IVER_PIDS[i]'; done
        [[ $st -eq 0 ]] || { fail "iverd (pid $D_PID) exited with status $st; last log lines:"; tail -n 20 "$D_LOG" | sed 's/^/    /' >&2; }
}
snap() { ctl stats --json >"$1" || { fail "iverctl stats --json failed"; echo '{}' >"$1"; }; }
get() { py get "$1" "$2" 2>/dev/null || echo NaN; }
# expect BEFORE AFTER KEY OP N: delta of KEY compared with N (eq, ge, le)
expect() {
        local b a d
        b=$(get "$1" "$3"); a=$(get "$2" "$3")
        if [[ $b == NaN || $a == NaN ]]; then fail "$3: no value"; return; fi
        d=$((a - b))
        case $4 in
        eq) ((d == $5)) || fail "$3 changed by $d, expected exactly $5";;
        ge) ((d >= $5)) || fail "$3 changed by $d, expected at least $5";;
        le) ((d <= $5)) || fail "$3 changed by $d, expected at most $5";;
        esac
}
scen_begin() {
        SCEN=$1
        SCEN_OK=1
        echo
        echo "== [$FS] $SCEN"
        snap "$W/before"
}
scen_end() {
        local note=${1:-}
        snap "$W/after"
        py table "ledger ($FS, scenario ${SCEN%%.*})" "$W/before" "$W/after"
        local res=PASS
        [[ $SCEN_OK -eq 1 ]] || res=FAIL
        printf '| %-5s | %-42s | %s | %-4s | %s\n' "$FS" "${SCEN:0:42}" "$(py deltas "$W/before" "$W/after" | \
                awk '{printf "%8s %10s %11s %9s %9s %9s %12s", $1, $2, $3, $4, $5, $6, $7}')" "$res" "$note" >>"$SUMMARY"
        echo "  -> $res"
}
# settle_rechecks: settle, then wait (≤ 5 s) for iverd's deferred re-checks of
# provisional results (status "provisional_rechecks", where reported): these
# are due some ms later and, depending on the daemon version, settle may not
# wait for them. Nothing in these tests keeps a file open for writing.
settle_rechecks() {
        local i n
        ctl settle --timeout 60 || { fail "settle failed"; return 1; }
        for ((i = 0; i < 50; i++)); do
                ctl status --json >"$W/status.json" || return 1
                n=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("provisional_rechecks", 0))' "$W/status.json")
                [[ $n == 0 ]] && return 0
                sleep 0.1
                ctl settle --timeout 60
        done
        echo "    (still $n provisional re-checks pending after 5 s)"
}
listcheck() {           # listcheck ROOT: the daemon's list under ROOT = the regular files, digests = sha256,
                        # all 'measured' (none left provisional) and in the IMA-format measurement list
        settle_rechecks
        ctl list "$1/" >"$W/list" || { fail "iverctl list failed"; return 1; }
        ctl log --ascii >"$W/log.ascii" || { fail "iverctl log --ascii failed"; return 1; }
        py listcheck "$W/list" "$1" "$W/log.ascii" || { fail "list under $1 does not match the files (see above)"; return 1; }
}
status_get() { ctl status --json >"$W/status.json" && get "$W/status.json" "$1"; }
# digest_check PATH: the list's digest for PATH equals `sha256sum` of the file
digest_check() {
        local p=$1 want got
        settle_rechecks
        want=sha256:$(sha256sum <"$p" | cut -d' ' -f1)
        ctl list "$p" >"$W/list1" || { fail "iverctl list failed"; return 1; }
        got=$(py lookup "$W/list1" "$p")
        if [[ $got == "$want" ]]; then
                echo "    digest of $(printf '%q' "$p") in list = sha256sum = ${want#sha256:}"
        else
                fail "digest of $(printf '%q' "$p"): list $got, sha256sum $want"
        fi
}
read_all() { find "$1" -type f -exec cat {} + >/dev/null; }

# --- scenarios ---------------------------------------------------------------------
make_tree() {           # make_tree DIR
        local d=$1 i
        mkdir -p "$d/etc" "$d/bin" "$d/lib/sub"
        for i in $(seq 1 20); do printf 'key%d=value%d\n' "$i" "$i" >"$d/etc/conf$i.conf"; done
        for i in 1 2 3; do head -c $((256 * 1024)) /dev/urandom >"$d/bin/tool$i"; chmod 755 "$d/bin/tool$i"; done
        head -c $((1024 * 1024)) /dev/urandom >"$d/lib/libdemo.so.1"
        for i in 1 2 3 4; do echo "data $i" >"$d/lib/sub/d$i"; done
}

scenario_a() {          # reads
        local tree=$1 rounds=5 n r
        n=$(find "$tree" -type f | wc -l)
        scen_begin "a. reads: $n files read ${rounds}x, rescan+settle each"
        for ((r = 0; r < rounds; r++)); do
                read_all "$tree"
                ctl rescan && ctl settle --timeout 60 || fail "rescan/settle failed"
        done
        snap "$W/after.tmp"
        expect "$W/before" "$W/after.tmp" remeasured eq 0
        expect "$W/before" "$W/after.tmp" bytes_hashed eq 0
        expect "$W/before" "$W/after.tmp" avoided_vs_atime eq $((rounds * n))
        expect "$W/before" "$W/after.tmp" checks eq $((rounds * n))
        scen_end
}

scenario_b() {          # tamper: content change, mtime+atime restored
        local f=$1/bin/tool2
        scen_begin "b. tamper: write, touch -r restores mtime+atime"
        stat -c '    before: mtime %y  size %s' "$f"
        # Stopped, iverd sees only the final state (same size, same times, other bytes).
        kill -STOP "$D_PID"
        touch -r "$f" "$W/ref"
        printf 'EVIL' | dd of="$f" bs=1 seek=4096 conv=notrunc status=none
        touch -r "$W/ref" "$f"
        kill -CONT "$D_PID"
        stat -c '    after:  mtime %y  size %s' "$f"
        ctl settle --timeout 60 || fail "settle failed"
        snap "$W/after.tmp"
        expect "$W/before" "$W/after.tmp" remeasured eq 1
        expect "$W/before" "$W/after.tmp" missed_by_mtime eq 1
        digest_check "$f"
        scen_end
}

scenario_c() {          # metadata-only changes: kernel IMA's last-writer rule
        local f=$1/bin/tool3 op b a
        for op in chmod chown setfattr link; do
                scen_begin "c. $op (content unchanged) -> metadata_only"
                case $op in
                chmod) chmod 700 "$f" ;;
                chown) chown 12345:12345 "$f" ;;
                setfattr) setfattr -n user.iver.test -v 1 "$f" ;;
                link) ln -f "$f" "$1/bin/tool3.link-$FS" ;;
                esac
                ctl settle --timeout 60 || fail "settle failed"
                snap "$W/after.tmp"
                expect "$W/before" "$W/after.tmp" metadata_only eq 1
                expect "$W/before" "$W/after.tmp" remeasured eq 0
                expect "$W/before" "$W/after.tmp" bytes_hashed eq 0
                expect "$W/before" "$W/after.tmp" extra_vs_mtime eq 0
                digest_check "$f"
                scen_end
        done
        rm -f "$1/bin/tool3.link-$FS"
        ctl settle --timeout 60
}

scenario_e() {          # tree operations and odd names
        local t=$1 e0 e1 i f
        scen_begin "e. mkdir/mv/rm/FIFO/000/vanish/odd names"
        e0=$(status_get errors)
        echo "  -- new directories (mkdir -p a/b/c + files)"
        mkdir -p "$t/new/a/b/c"
        for i in 1 2 3; do echo "deep $i" >"$t/new/a/b/c/f$i"; echo "mid $i" >"$t/new/a/m$i"; done
        ctl settle --timeout 60 || fail "settle failed"
        listcheck "$t"
        echo "  -- renames: mv file, mv dir"
        mv "$t/etc/conf1.conf" "$t/etc/conf1.renamed"
        mv "$t/new/a/b" "$t/new/a/B2"
        mv "$t/lib/sub" "$t/moved-sub"
        ctl settle --timeout 60 || fail "settle failed"
        listcheck "$t"
        echo "  -- deletions: rm file, rm -r dir"
        rm -f "$t/etc/conf2.conf"
        rm -rf "$t/new/a/B2"
        ctl settle --timeout 60 || fail "settle failed"
        listcheck "$t"
        echo "  -- FIFO: never measured, never blocks"
        mkfifo "$t/etc/pipe"
        timeout 10 "$IVERCTL" --socket "$D_SOCK" remeasure "$t/etc/pipe" || fail "remeasure on a FIFO failed or hung"
        ctl rescan && ctl settle --timeout 30 || fail "rescan/settle with a FIFO in the tree failed or hung"
        timeout 10 "$IVERCTL" --socket "$D_SOCK" status >/dev/null || fail "status does not answer after a FIFO remeasure"
        [[ $(ctl list "$t/etc/pipe") == "" ]] || fail "the FIFO is in the list"
        listcheck "$t"
        echo "  -- chmod 000 file (root's iverd, CAP_DAC_READ_SEARCH: still measured)"
        echo "secret" >"$t/etc/noperm"
        chmod 000 "$t/etc/noperm"
        ctl settle --timeout 60 || fail "settle failed"
        digest_check "$t/etc/noperm"
        echo "  -- files that vanish between event and hash (300 create+delete)"
        mkdir -p "$t/vanish"
        ctl settle --timeout 30
        for i in $(seq 1 300); do echo "$i" >"$t/vanish/v$i"; rm -f "$t/vanish/v$i"; done
        ctl settle --timeout 60 || fail "settle failed"
        listcheck "$t"
        echo "  -- names with a newline, a tab, a backslash, invalid UTF-8"
        for f in $'new\nline' $'tab\tname' 'back\slash' $'bad\xff' $'bad\xc3(' 'ok-é'; do
                echo "content of $f" >"$t/etc/$f"
        done
        ctl settle --timeout 60 || fail "settle failed"
        for f in $'new\nline' $'tab\tname' 'back\slash' $'bad\xff' $'bad\xc3(' 'ok-é'; do
                digest_check "$t/etc/$f"
        done
        ctl list "$t/etc/" | grep -a -E 'new\\nline|tab\\tname|bad|back\\\\slash|ok-' | sed 's/^/    list: /'
        listcheck "$t"
        e1=$(status_get errors)
        echo "    status errors: $e0 -> $e1"
        [[ $e1 == "$e0" ]] || fail "errors went from $e0 to $e1 (vanished files must not count as errors)"
        alive || return 1
        scen_end
}

scenario_g() {          # non-root client
        local verb out rc
        scen_begin "g. non-root client refused"
        # uid 65534 may not reach the build tree (e.g. under /root): a private
        # copy of iverctl and libiver it can execute
        if [[ ! -x $W/nobody/iverctl ]]; then
                mkdir -p "$W/nobody"
                cp "$IVERCTL" "$W/nobody/"
                ldd "$IVERCTL" | awk '/libiver/ { print $3 }' | xargs -r -I{} cp -L {} "$W/nobody/"
                chmod -R a+rX "$W/nobody"
        fi
        for verb in reload rescan "remeasure $1/etc/conf3.conf" status stats; do
                # shellcheck disable=SC2086
                out=$(LD_LIBRARY_PATH=$W/nobody setpriv --reuid=65534 --regid=65534 --clear-groups \
                        "$W/nobody/iverctl" --socket "$D_SOCK" $verb 2>&1)
                rc=$?
                if [[ $rc -ne 0 && $out == *"permission denied: '"* ]]; then
                        echo "    uid 65534 '$verb': exit $rc: $out"
                else
                        fail "uid 65534 '$verb' was not refused by iverd (exit $rc): $out"
                fi
                # shellcheck disable=SC2086
                ctl $verb >/dev/null || fail "root '$verb' failed"
        done
        ctl settle --timeout 60
        grep -c "Refused" "$D_LOG" | sed 's/^/    daemon log: Refused lines: /'
        scen_end
}

scenario_d() {          # inotify overflow
        local d=$1/ovf n=200 rounds=10 r i ov q
        mkdir -p "$d"
        for i in $(seq -w 1 $n); do echo "initial $i" >"$d/o$i"; done
        echo "measure path=$d/**" >"$W/ovf.policy"
        q=$QMAX_LOW
        echo
        echo "== [$FS] d. inotify overflow: max_queued_events $QMAX_SAVED -> $q while iverd starts"
        echo "$q" >"$QMAX_FILE" || { fail "cannot lower $QMAX_FILE"; return; }
        # fanotify merges the events of one file: 200 files need a queue below 200
        [[ -z $FQMAX_SAVED ]] || echo 64 >"$FQMAX_FILE" || { fail "cannot lower $FQMAX_FILE"; restore_qmax; return; }
        # iverd calls fanotify_init and inotify_init before it creates its socket: once the socket
        # is there its queue has the small limit, and the rest of the machine
        # can have the normal one back at once.
        # the bounded queue of a daemon without CAP_SYS_ADMIN (test knob: iverd asks
        # for unlimited queues where it may)
        IVERD_TEST_BOUNDED_QUEUE=1 NO_SETTLE=1 start_iverd "ovf-$FS" "$W/ovf.policy"
        local st=$?
        restore_qmax
        echo "  max_queued_events restored to $(cat "$QMAX_FILE")"
        [[ $st -eq 0 ]] || return
        ctl settle --timeout 120 || { fail "initial settle of iverd (ovf-$FS) failed"; return; }
        scen_begin "d. inotify overflow: $n files x $rounds writes, iverd stopped"
        kill -STOP "$D_PID"
        for ((r = 0; r < rounds; r++)); do
                for i in $(seq -w 1 $n); do echo "round $r file $i" >"$d/o$i"; done
        done
        kill -CONT "$D_PID"
        ctl settle --timeout 120 || fail "settle failed"
        ov=$(status_get inotify_overflows)
        local fov
        fov=$(status_get tracking_overflows)
        echo "    $((n * rounds)) writes while stopped; status: inotify_overflows=$ov tracking_overflows=$fov scans=$(status_get scans)"
        [[ $ov =~ ^[0-9]+$ && $fov =~ ^[0-9]+$ ]] && ((ov + fov >= 1)) ||
                fail "no overflow reported (inotify_overflows=$ov tracking_overflows=$fov)"
        ov=$((ov + fov))
        snap "$W/after.tmp"
        expect "$W/before" "$W/after.tmp" remeasured eq $n
        listcheck "$d"
        OVF_RESULT+="$FS: $((n * rounds)) writes to $n files while stopped, queue limit $q (fanotify 64): overflows (inotify+fanotify)=$ov, all $n digests = sha256 ($([[ $SCEN_OK -eq 1 ]] && echo ok || echo FAILED)); "
        scen_end "overflows=$ov"
        stop_iverd
}

scenario_f() {          # socket activation + readiness
        local tree=$1 d=$W/act-$FS name=iverd-itest-$$-$FS i pid out
        echo
        echo "== [$FS] f. socket activation + readiness (NOTIFY_SOCKET)"
        SCEN_OK=1
        if [[ $HAVE_SSA -eq 0 ]]; then fail "systemd-socket-activate not installed"; return; fi
        mkdir -p "$d"
        echo "measure path=$tree/**" >"$d/policy"
        py notify "$name" "$d/notify" &
        local lpid=$!
        iver_track_pid "$lpid"
        for ((i = 0; i < 100; i++)); do grep -q LISTENING "$d/notify" 2>/dev/null && break; sleep 0.05; done
        NOTIFY_SOCKET=@$name IVERD_LOG_STDERR=1 systemd-socket-activate -l "$d/act.sock" -E NOTIFY_SOCKET -E IVERD_LOG_STDERR \
                "$IVERD" --on-access none --policy "$d/policy" --runtime-dir "$d/run" --state-dir "$d/state" --tpm none 2>"$d/iverd.log" &
        pid=$!
        iver_track_pid "$pid"
        DAEMONS+=("$pid")
        for ((i = 0; i < 100; i++)); do [[ -S $d/act.sock ]] && break; sleep 0.05; done
        if out=$("$IVERCTL" --socket "$d/act.sock" status 2>&1); then
                echo "    iverctl --socket act.sock status (activates iverd):"
                grep -E '^(watches|initial_scan_done|socket|policy) ' <<<"$out" | sed 's/^/      /'
        else
                fail "iverctl status through the activated socket failed: $out"
        fi
        "$IVERCTL" --socket "$d/act.sock" settle --timeout 60 >/dev/null || fail "settle through the activated socket failed"
        grep -q "passed by the service manager" "$d/iverd.log" || fail "iverd did not use the passed socket (log: $(cat "$d/iverd.log"))"
        for ((i = 0; i < 100; i++)); do grep -q "READY=1" "$d/notify" && break; sleep 0.05; done
        kill -TERM "$pid"
        wait "$pid"
        local st=$?
        for ((i = 0; i < 100; i++)); do kill -0 "$lpid" 2>/dev/null || break; sleep 0.05; done
        kill "$lpid" 2>/dev/null
        echo "    notifications received (pid = SCM_CREDENTIALS sender; iverd is pid $pid):"
        sed 's/^/      /' "$d/notify"
        grep -q "^pid=$pid READY=1$" "$d/notify" || fail "no READY=1 from pid $pid"
        grep -q "^pid=$pid STATUS=." "$d/notify" || fail "no STATUS= from pid $pid"
        grep -q "^pid=$pid STOPPING=1$" "$d/notify" || fail "no STOPPING=1 after SIGTERM"
        [[ $st -eq 0 ]] || fail "activated iverd exited with status $st after SIGTERM"
        local res=PASS
        [[ $SCEN_OK -eq 1 ]] || res=FAIL
        printf '| %-5s | %-42s | %s | %-4s | %s\n' "$FS" "f. socket activation + readiness" \
                "$(printf '%8s %10s %11s %9s %9s %9s %12s' - - - - - - -)" "$res" \
                "$(grep -c . "$d/notify") notify lines" >>"$SUMMARY"
        echo "  -> $res"
}

scenario_h() {          # the storm
        local d=$1/storm nf=1000 rounds=100 i name
        mkdir -p "$d"
        for ((i = 0; i < nf; i++)); do printf -v name %04d "$i"; printf 'initial\n' >"$d/f$name"; done
        echo "measure path=$d/**" >"$W/storm.policy"
        echo
        echo "== [$FS] h. storm: $nf files x $rounds modifications = $((nf * rounds)) (max_queued_events $(cat "$QMAX_FILE"))"
        start_iverd "storm-$FS" "$W/storm.policy" || return
        scen_begin "h. storm: $nf files x $rounds modifications"
        local base
        base=$(awk '/^VmRSS/ {print $2}' "/proc/$D_PID/status")
        rm -f "$W/storm.stop"
        py sampler "$D_PID" "$IVERCTL" "$D_SOCK" "$W/storm.stop" "$W/storm.samples" &
        local spid=$!
        iver_track_pid "$spid"
        local t0=$SECONDS
        py writer "$d" "$nf" "$rounds" || fail "writer failed"
        ctl settle --timeout 180 || fail "settle after the storm failed"
        echo "    storm + settle took $((SECONDS - t0)) s"
        sleep 0.3
        touch "$W/storm.stop"
        wait "$spid"
        alive || return
        ctl status --json >"$W/status.json"
        local hwm rss peakq pend ovf coal samples
        hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$D_PID/status")
        rss=$(awk '{ if ($3 > m) m = $3 } END { print m + 0 }' "$W/storm.samples")
        pend=$(awk '{ if ($4 > m) m = $4 } END { print m + 0 }' "$W/storm.samples")
        samples=$(wc -l <"$W/storm.samples")
        peakq=$(get "$W/status.json" peak_queued)
        ovf=$(get "$W/status.json" inotify_overflows)
        coal=$(get "$W/status.json" coalesced_events)
        echo "    samples every 0.2 s: $samples; RSS before storm ${base} kB"
        echo "    peak RSS (VmHWM) ${hwm} kB; highest sampled VmRSS ${rss} kB"
        echo "    peak queue depth: peak_queued=$peakq (daemon), highest sampled pending=$pend"
        echo "    coalesced_events=$coal inotify_overflows=$ovf"
        STORM_RESULT="$FS: $((nf * rounds)) modifications of $nf files; peak RSS (VmHWM) ${hwm} kB (RSS before ${base} kB, highest sampled VmRSS ${rss} kB); peak queue depth $peakq (peak_queued), highest sampled pending $pend; coalesced_events $coal; inotify_overflows $ovf"
        # Coalescing per path: never more pending than distinct paths. iverd also
        # watches the ancestors of the mount (/, /tmp, the work dir: it walks
        # them to reach the tree), so a few unrelated paths there (this test's
        # own files, other users of /tmp) may be pending too: allow 100.
        # peak_queued also counts the initial scan (the storm files + the
        # files of those ancestor directories), hence the sampled figure.
        ((pend <= nf + 100)) || fail "$pend checks pending at once for $nf distinct paths: no coalescing per path?"
        ((hwm < 128 * 1024)) || fail "peak RSS ${hwm} kB is not bounded (>= 128 MB)"
        listcheck "$d"
        scen_end "peakRSS=${hwm}kB peakQ=$peakq"
        stop_iverd
}

# --- main -------------------------------------------------------------------------
OVF_RESULT=
STORM_RESULT=
read -r -a filesystems <<<"${IVER_FS:-ext4 xfs}"
for FS in "${filesystems[@]}"; do
        if ! iver_mount "$FS"; then
                fail "could not set up $FS"
                continue
        fi
        MNT=$IVER_MNT
        TREE=$MNT/tree
        make_tree "$TREE"
        echo "measure path=$TREE/**" >"$W/tree-$FS.policy"
        echo
        echo "################ $FS at $MNT ($(findmnt -rn -o OPTIONS -- "$MNT"))"
        if start_iverd "main-$FS" "$W/tree-$FS.policy"; then
                ctl status | grep -E '^(version_sources|  \{|watches|cached_files)' | sed 's/^/  /'
                for s in a b c e g; do
                        alive || break
                        "scenario_$s" "$TREE"
                done
                alive && stop_iverd
        fi
        scenario_f "$TREE"
        scenario_d "$MNT"
        if [[ $FS == ext4 && ${IVER_STORM:-1} != 0 ]]; then
                scenario_h "$MNT"
        fi
        iver_umount "$MNT" || fail "umount $MNT"
done

echo
echo "## Ledger deltas per scenario (iverctl stats --json, after − before)"
echo
printf '| %-5s | %-42s | %8s %10s %11s %9s %9s %9s %12s | %-4s | %s\n' fs scenario checks remeasured meta_only \
        extra_mt missed_mt unch_cont bytes_hashed res note
echo "|-------|--------------------------------------------|-------------------------------------------------------------------------------|------|"
cat "$SUMMARY"
echo
echo "overflow: ${OVF_RESULT:-not run}"
echo "storm: ${STORM_RESULT:-not run}"
echo
if [[ $FAILS -ne 0 ]]; then
        echo "FAILED: $FAILS assertion(s) failed (grep FAIL above)"
        exit 1
fi
echo "PASS: all scenarios"
exit 0
