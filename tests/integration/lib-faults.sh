# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# Shared by test-faults-*.sh (issue 9: fault injection, bad input, privilege,
# load). Source it, then call faults_init NAME. Provides:
#   start_swtpm / stop_swtpm        swtpm on $D/tpm/swtpm.sock (state kept across restarts)
#   start_iverd [iverd args…]       iverd on $D/p.policy, runtime $RUN (default $D/run), state $D/state
#   stop_iverd / kill9_iverd        clean stop (exit status checked) / SIGKILL
#   ctl VERB…, js KEY               iverctl on $IVERD_SOCKET; one key of `status --json`
#   py CMD ARGS…                    the Python checks below ($D/h.py)
#   track_pid PID, on_cleanup CMD   stopped / run (reverse order) by the EXIT trap, even on failure
#   row SCEN TRIALS LOST DUP WRONG CRASH NOTE ; faults_summary   the summary table
# Env: IVER_BUILD_DIR (iverd, iverctl), IVER_FAULT_TRIALS (trial counts for full
# runs), IVER_FAULT_SUMMARY (a file the rows are appended to as well).
set -u
BUILD=${IVER_BUILD_DIR:-/work/main/build-faults}
IVERD=$BUILD/iverd
IVERCTL=$BUILD/iverctl
F_PIDS=()           # every process we started (stopped in reverse order)
F_CLEAN=()          # cleanup commands (run in reverse order)
F_ROWS=()
FAILS=0
IVERD_PID=
SWTPM_PID=
CRASHES=0

fail() { echo "FAIL: $*" >&2; echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
# faults_seed: SEED from IVER_TEST_SEED, or a new one; printed, so that a
# failure replays with the same choices. rnd N: R = the next number in [0, N)
# of that sequence (its own generator: bursts reseed bash's RANDOM).
faults_seed() {
        SEED=${IVER_TEST_SEED:-$((SRANDOM % 1000000000))}
        [[ $SEED =~ ^[0-9]+$ ]] || die "IVER_TEST_SEED must be a number"
        F_RND=$SEED
        echo "seed $SEED (IVER_TEST_SEED=$SEED to replay)"
}
rnd() {
        F_RND=$(((F_RND * 6364136223846793005 + 1442695040888963407) & 0x7fffffffffffffff))
        R=$(((F_RND >> 31) % $1))
}
die() { fail "$*"; exit 1; }
step() { echo; echo "== $*"; }
note() { echo "   $*"; }
track_pid() { F_PIDS+=("$1"); }
untrack_pid() { local i; for i in "${!F_PIDS[@]}"; do [[ ${F_PIDS[i]} == "$1" ]] && unset 'F_PIDS[i]'; done; return 0; }
on_cleanup() { F_CLEAN+=("$1"); }

stop_pid() { # pid: TERM, then KILL after 5 s
        local pid=$1 _
        [[ -n $pid ]] || return 0
        kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 0; }
        kill -CONT "$pid" 2>/dev/null
        kill "$pid" 2>/dev/null
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
        kill -9 "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        return 0
}

faults_cleanup() {
        local rc=$? i
        trap - EXIT INT TERM HUP
        set +e
        # by index: untrack_pid leaves holes, and a count would miss the last ones
        local idx=("${!F_PIDS[@]}")
        for ((i = ${#idx[@]} - 1; i >= 0; i--)); do
                stop_pid "${F_PIDS[${idx[i]}]}"
        done
        for ((i = ${#F_CLEAN[@]} - 1; i >= 0; i--)); do
                eval "${F_CLEAN[i]}" || echo "WARNING: cleanup step failed: ${F_CLEAN[i]}" >&2
        done
        if [[ $rc -ne 0 && -n ${D:-} && -f $D/iverd.log ]]; then
                echo "--- $D/iverd.log (tail)"; tail -25 "$D/iverd.log"
                # IVER_TEST_LOGDIR: keep the whole daemon log of a failed run
                if [[ -n ${IVER_TEST_LOGDIR:-} ]] && mkdir -p "$IVER_TEST_LOGDIR"; then
                        cp "$D/iverd.log" "$IVER_TEST_LOGDIR/$(basename "$D").iverd.log" &&
                                echo "--- kept as $IVER_TEST_LOGDIR/$(basename "$D").iverd.log"
                fi
        fi
        if [[ -n ${D:-} && -d $D ]]; then
                if findmnt -rn -o TARGET | grep -q "^$D/"; then
                        echo "WARNING: mounts left under $D; not removing it" >&2
                else
                        rm -rf --one-file-system -- "$D"
                fi
        fi
        exit "$rc"
}

faults_init() { # name
        [[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root"; exit 77; }
        local b t
        for b in "$IVERD" "$IVERCTL"; do [[ -x $b ]] || { echo "FAIL: $b not built (set IVER_BUILD_DIR)"; exit 1; }; done
        for t in python3 sha256sum openssl keyctl; do command -v "$t" >/dev/null || { echo "FAIL: $t not found"; exit 1; }; done
        D=$(mktemp -d "/tmp/iver-faults-$1.XXXXXX")
        chmod 0755 "$D"
        trap faults_cleanup EXIT
        trap 'exit 130' INT
        trap 'exit 143' TERM
        trap 'exit 129' HUP
        export IVERD_SOCKET=$D/run/iverd.sock TSS2_LOG=all+none
        # a snapshot key of our own (removed at exit): a ledger check must not
        # depend on what other programs on the host do with iverd's boot key
        export IVERD_TEST_SNAPSHOT_KEY=iverd:snapshot-hmac-${D##*/}
        on_cleanup 'while id=$(keyctl search @u user "$IVERD_TEST_SNAPSHOT_KEY" 2>/dev/null); do keyctl unlink "$id" @u >/dev/null || break; done'
        RUN=$D/run
        mkdir -p "$D/run" "$D/state" "$D/tpm" "$D/tree"
        write_py
}

start_swtpm() {
        command -v swtpm >/dev/null || { echo "SKIP: swtpm not installed"; exit 77; }
        rm -f "$D/tpm/swtpm.sock"
        swtpm socket --tpm2 --server type=unixio,path="$D/tpm/swtpm.sock" --ctrl type=unixio,path="$D/tpm/swtpm.sock.ctrl" \
                --tpmstate dir="$D/tpm" --flags startup-clear,not-need-init >>"$D/swtpm.log" 2>&1 &
        SWTPM_PID=$!
        track_pid "$SWTPM_PID"
        for _ in $(seq 200); do [[ -S $D/tpm/swtpm.sock ]] && return 0; sleep 0.05; done
        die "swtpm did not start"
}
stop_swtpm() { # [-9]
        [[ -n $SWTPM_PID ]] || return 0
        if [[ ${1:-} == -9 ]]; then kill -9 "$SWTPM_PID" 2>/dev/null; fi
        stop_pid "$SWTPM_PID"; untrack_pid "$SWTPM_PID"; SWTPM_PID=
}

IVERD_TPM_ARGS=()
start_iverd() { # [extra iverd args]
        IVERD_LOG_STDERR=1 "$IVERD" --on-access none --policy "$D/p.policy" --runtime-dir "$RUN" --state-dir "$D/state" \
                "${IVERD_TPM_ARGS[@]}" "$@" >>"$D/iverd.log" 2>&1 &
        IVERD_PID=$!
        track_pid "$IVERD_PID"
        for _ in $(seq 400); do
                [[ -S $IVERD_SOCKET ]] && ctl status >/dev/null 2>&1 && return 0
                kill -0 "$IVERD_PID" 2>/dev/null || break
                sleep 0.05
        done
        die "iverd did not come up (pid $IVERD_PID)"
}
alive() { # true when the daemon runs; a death is a crash
        [[ -n $IVERD_PID ]] && kill -0 "$IVERD_PID" 2>/dev/null && return 0
        wait "$IVERD_PID" 2>/dev/null
        local st=$?
        CRASHES=$((CRASHES + 1))
        fail "iverd (pid $IVERD_PID) is gone (status $st)"
        tail -15 "$D/iverd.log" >&2
        return 1
}
stop_iverd() { # clean stop: SIGTERM, exit 0 expected
        local st
        [[ -n $IVERD_PID ]] || return 0
        kill -TERM "$IVERD_PID" 2>/dev/null
        wait "$IVERD_PID"; st=$?
        untrack_pid "$IVERD_PID"; IVERD_PID=
        [[ $st -eq 0 ]] || { CRASHES=$((CRASHES + 1)); fail "iverd exited with status $st on SIGTERM"; }
}
kill9_iverd() {
        kill -9 "$IVERD_PID" 2>/dev/null
        wait "$IVERD_PID" 2>/dev/null
        untrack_pid "$IVERD_PID"; IVERD_PID=
}
ctl() { "$IVERCTL" "$@"; }
js() { ctl status --json | python3 -c "import json,sys; print(json.load(sys.stdin).get('$1'))"; }
py() { python3 "$D/h.py" "$@"; }
rss_kb() { awk -v k="${2:-VmRSS}:" '$1 == k { print $2 }' "/proc/$1/status" 2>/dev/null; }

# quote_check TAG: a quote over the PCR; `iverctl verify` must replay the whole
# list ("N entries, N replayed"), and the quoted list must be the list on disk.
quote_check() {
        local nonce out
        nonce=$(openssl rand -hex 16)
        rm -rf "$D/q"
        if ! out=$(ctl quote --nonce "$nonce" --out "$D/q" 2>&1); then fail "$1: quote failed: $out"; return 1; fi
        if [[ $(js evidence_broken) == True ]]; then
                # the list could not be written: no quote may verify from now on,
                # and the PCR holds the list plus the broken-evidence value only
                if out=$(ctl verify "$D/q" --nonce "$nonce" 2>&1); then fail "$1: a quote verified with the evidence broken"; return 1; fi
                grep -q "no prefix" <<<"$out" || { fail "$1: verify failed for another reason: $out"; return 1; }
                cmp -s "$D/q/measurements.bin" "$RUN/binary_runtime_measurements" ||
                        { fail "$1: the quoted list differs from $RUN/binary_runtime_measurements"; return 1; }
                local kj
                kj=$(python3 "$(dirname "${BASH_SOURCE[0]}")/broken-replay.py" "$D/q" 23) ||
                        { fail "$1: the PCR holds something the list lacks (not list + broken-evidence value)"; return 1; }
                # shellcheck disable=SC2034  # for the sourcing script
                QUOTE_SUMMARY="evidence broken: quote refused by verify; PCR = first ${kj% *} entries + 0xFF after ${kj#* }"
                return 0
        fi
        if ! out=$(ctl verify "$D/q" --nonce "$nonce" 2>&1); then fail "$1: iverctl verify rejected the quote: $out"; return 1; fi
        if ! grep -qE 'list of ([0-9]+) entries, \1 replayed' <<<"$out"; then
                fail "$1: PCR does not hold the whole list: $(grep -o 'list of.*replayed' <<<"$out")"; return 1
        fi
        if ! cmp -s "$D/q/measurements.bin" "$RUN/binary_runtime_measurements"; then
                fail "$1: the quoted list differs from $RUN/binary_runtime_measurements"; return 1
        fi
        # shellcheck disable=SC2034  # for the sourcing script
        QUOTE_SUMMARY=$(grep -o 'list of.*replayed' <<<"$out")
        return 0
}

row() { # scenario trials lost dup wrong crash note
        local r
        r=$(printf '| %-44s | %7s | %5s | %4s | %5s | %5s | %s' "$1" "$2" "$3" "$4" "$5" "$6" "${7:-}")
        F_ROWS+=("$r")
        [[ -n ${IVER_FAULT_SUMMARY:-} ]] && echo "$r" >>"$IVER_FAULT_SUMMARY"
        return 0
}
faults_summary() {
        echo
        echo "## Summary ($(basename "$0"))"
        printf '| %-44s | %7s | %5s | %4s | %5s | %5s | %s\n' scenario trials lost dup wrong crash note
        echo "|----------------------------------------------|---------|-------|------|-------|-------|------"
        local r
        for r in "${F_ROWS[@]}"; do echo "$r"; done
        echo
        if [[ $FAILS -ne 0 ]]; then echo "FAILED: $FAILS check(s) failed (grep FAIL above)"; exit 1; fi
        echo "PASS"
        exit 0
}

write_py() {
cat >"$D/h.py" <<'PY'
import hashlib, json, os, stat, struct, sys

def parse_bin(path, allow_torn=False):
    """The binary list: [(pcr, template_digest, name, template_data)]; the file
    digest and path decoded from ima-ng / ima-sig data."""
    b = open(path, 'rb').read()
    out, off = [], 0
    while off < len(b):
        try:
            pcr, = struct.unpack_from('<I', b, off); td = b[off + 4:off + 24]
            nl, = struct.unpack_from('<I', b, off + 24); name = b[off + 28:off + 28 + nl]
            o = off + 28 + nl
            dl, = struct.unpack_from('<I', b, o); data = b[o + 4:o + 4 + dl]
            if len(data) != dl or len(td) != 20:
                raise struct.error('short')
        except struct.error:
            if allow_torn:
                break
            raise
        # d-ng: len, "algo:\0" + digest; n-ng: len, path + NUL
        l1, = struct.unpack_from('<I', data, 0); dng = data[4:4 + l1]
        l2, = struct.unpack_from('<I', data, 4 + l1); path = data[8 + l1:8 + l1 + l2].rstrip(b'\0')
        algo, _, dig = dng.partition(b'\0')
        out.append((pcr, td, name, data, algo.decode().rstrip(':'), dig.hex(), path))
        off = o + 4 + dl
    return out

_sha256 = {}
def sha256(p):
    """sha256 of the file p, read once a run (check looks at each file twice:
    in the list and in iverctl list; a test's tree may hold a 5 GiB file)"""
    if p not in _sha256:
        h = hashlib.sha256()
        with open(p, 'rb') as f:
            for blk in iter(lambda: f.read(1 << 20), b''):
                h.update(blk)
        _sha256[p] = h.hexdigest()
    return _sha256[p]

def tree_files(root):
    root = os.fsencode(root)
    for d, dirs, files in os.walk(root):
        for n in files:
            p = os.path.join(d, n)
            if stat.S_ISREG(os.lstat(p).st_mode):
                yield p

def unescape(b):
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

def parse_ctl_list(path):
    ents = {}
    for line in open(path, 'rb').read().split(b'\n'):
        if not line:
            continue
        dig, rest = line.split(b'  ', 1)
        ents[unescape(rest[12:])] = (dig.decode(), rest[:11].strip().decode())
    return ents

def cmd_check(a):
    """check RUNDIR TREE [PRE_BIN] [CTL_LIST] -> prints 'lost dup wrong stale total'
    lost: entries of PRE_BIN (the list before a crash, torn tail allowed) that are
          not a prefix of the list now; or a file whose current digest is not listed
    wrong (also): with PRE_BIN, not exactly one restart gap entry after it, first
    dup: template digests listed twice
    wrong: ascii list != binary list; iverctl list digest != sha256 of the file;
    stale: iverctl list (the cache) holds a path that is no regular file (or symlink) any more"""
    run, tree = a[0], os.fsencode(a[1].rstrip('/'))
    ents = parse_bin(os.path.join(run, 'binary_runtime_measurements'))
    lost = dup = wrong = stale = 0
    msgs = []
    # violation entries (all-zero template digest) are never deduplicated, as in the kernel
    tds = [e[1] for e in ents if e[1] != bytes(20)]
    dup = len(tds) - len(set(tds))
    if dup:
        msgs.append(f"{dup} duplicated template digests")
    if len(a) > 2 and a[2] != '-':
        pre = parse_bin(a[2], allow_torn=True)
        n = 0
        for x, y in zip(pre, ents):
            if x[1] != y[1]:
                break
            n += 1
        if n < len(pre):
            lost += len(pre) - n
            msgs.append(f"list before the crash ({len(pre)} entries) is not a prefix of the list now: first {n} match")
        # the restart continued this boot's list: its first entry is the gap, and the only one
        gaps = [i for i, e in enumerate(ents[n:], n) if e[1] == bytes(20) and e[6].startswith(b'iverd-gap:')]
        if gaps != [len(pre)]:
            wrong += 1
            msgs.append(f"restart gap entries at {gaps}: exactly one expected, at {len(pre)} (right after the list before the crash)")
    # ascii list = binary list, entry by entry ("PCR TDIGEST TEMPLATE ... PATH[ SIG]\n";
    # the path is raw, as the kernel writes it, so it may hold newlines)
    asc = open(os.path.join(run, 'ascii_runtime_measurements'), 'rb').read()
    pos, bad = 0, None
    for i, e in enumerate(ents):
        pre = b'%d %s %s ' % (e[0], e[1].hex().encode(), e[2])
        if not asc.startswith(pre, pos) or asc.find(e[6], pos + len(pre)) < 0:
            bad = i; break
        end = asc.find(b'\n', asc.find(e[6], pos + len(pre)) + len(e[6]))
        if end < 0:
            bad = i; break
        pos = end + 1
    if bad is None and pos != len(asc):
        bad = len(ents)
    if bad is not None:
        wrong += 1
        msgs.append(f"ascii_runtime_measurements does not match the binary list ({len(ents)} entries) from entry {bad} on")
    bypath = {}
    for e in ents:
        bypath.setdefault(e[6], set()).add(e[5])
    for p in tree_files(tree):
        if sha256(p) not in bypath.get(kernel_form(p), ()):  # listed under its kernel-form name
            lost += 1
            msgs.append(f"current digest of {p!r} not in the list")
    if len(a) > 3 and a[3] != '-':
        cl = parse_ctl_list(a[3])
        for p, (dig, state) in cl.items():
            if not p.startswith(tree + b'/'):
                continue
            try:
                st = os.lstat(p)
            except OSError:
                stale += 1; msgs.append(f"iverctl list has {p!r}, which does not exist"); continue
            if stat.S_ISLNK(st.st_mode):
                # a symlink is measured as itself: the digest of its target string
                want = 'sha256:' + hashlib.sha256(os.readlink(p)).hexdigest()
                if dig != want:
                    wrong += 1; msgs.append(f"iverctl list: symlink {p!r} {dig} != sha256 of its target {want}")
                continue
            if not stat.S_ISREG(st.st_mode):
                stale += 1; msgs.append(f"iverctl list has {p!r}, not a regular file"); continue
            if dig != 'sha256:' + sha256(p):
                wrong += 1; msgs.append(f"iverctl list: {p!r} {dig} ({state}) != sha256 {sha256(p)}")
    for m in msgs[:15]:
        print("    " + m, file=sys.stderr)
    print(lost, dup, wrong, stale, len(ents))

def cmd_paths(a):
    """paths RUNDIR: every listed path, one per line, escaped (repr)"""
    for e in parse_bin(os.path.join(a[0], 'binary_runtime_measurements')):
        print(repr(e[6]))

def kernel_form(b):
    """The name iverd lists for path b (iver/imalog.h): space, controls, DEL,
    bytes outside valid UTF-8 and unsafe code points become '_' byte for byte."""
    out, i = bytearray(b), 0
    while i < len(b):
        c = b[i]
        n = 1 if c < 0x80 else 2 if 0xc2 <= c <= 0xdf else 3 if 0xe0 <= c <= 0xef else 4 if 0xf0 <= c <= 0xf4 else 0
        try:
            cp = ord(b[i:i + n].decode('utf-8')) if n else None
        except UnicodeDecodeError:
            cp = None
        if cp is None:
            n = 1
        if cp is None or cp <= 0x20 or 0x7f <= cp <= 0xa0 or cp in (0x1680, 0x200e, 0x200f, 0x205f, 0x3000) \
                or 0x2000 <= cp <= 0x200a or 0x2028 <= cp <= 0x202f or 0x2066 <= cp <= 0x2069:
            out[i:i + n] = b'_' * n
        i += n
    return bytes(out)

def cmd_digests_for(a):
    """digests_for RUNDIR PATH -> listed digests of PATH (its kernel-form name), one a line"""
    p = kernel_form(os.fsencode(a[1]))
    for e in parse_bin(os.path.join(a[0], 'binary_runtime_measurements')):
        if e[6] == p:
            print(e[5])

def cmd_history_check(a):
    """history_check RUNDIR PATH HISTORY -> 'logged unmarked marked': of PATH's
    listed digests (violation entries aside), how many are in no version of
    HISTORY without a violation entry for PATH right after them (unmarked), and
    with one (marked: measured provisionally while a writer held the file, as
    kernel IMA lists open_writers)"""
    p = kernel_form(os.fsencode(a[1]))
    hist = set(open(a[2]).read().split())
    ents = [e for e in parse_bin(os.path.join(a[0], 'binary_runtime_measurements')) if e[6] == p]
    logged = unmarked = marked = 0
    for i, e in enumerate(ents):
        if e[1] == bytes(20):
            continue
        logged += 1
        if e[5] in hist:
            continue
        if i + 1 < len(ents) and ents[i + 1][1] == bytes(20):
            marked += 1
        else:
            unmarked += 1
            if unmarked <= 5:
                print("    digest not in the content history, no violation after it: " + e[5], file=sys.stderr)
    print(logged, unmarked, marked)

def cmd_count_digests(a):
    """count_digests RUNDIR DIGESTFILE -> list entries whose file digest is in DIGESTFILE"""
    want = set(open(a[1]).read().split())
    print(sum(1 for e in parse_bin(os.path.join(a[0], 'binary_runtime_measurements')) if e[5] in want))

def cmd_sample(a):
    """sample RUNDIR ROOT N [SEED] -> of N random regular files under ROOT, how many are not listed with their sha256"""
    import random
    seed = int(a[3]) if len(a) > 3 else random.randrange(1 << 30)
    print(f"    sample: seed {seed}", file=sys.stderr)
    random.seed(seed)
    files = sorted(tree_files(a[1]))
    ents = {}
    for e in parse_bin(os.path.join(a[0], 'binary_runtime_measurements')):
        ents[e[6]] = e[5]
    print(sum(1 for p in random.sample(files, min(int(a[2]), len(files))) if ents.get(p) != sha256(p)))

def cmd_ledger_ge(a):
    """ledger_ge BASE.json NOW.json -> counters that went backwards"""
    b, n = json.load(open(a[0])), json.load(open(a[1]))
    # the ledger's counters (violations and appraisal_* are the running daemon's, not snapshotted)
    keys = [k for k in b if isinstance(b[k], int) and k != 'violations' and not k.startswith('appraisal_')]
    back = [f"{k} {b[k]}->{n.get(k)}" for k in keys if n.get(k, -1) < b[k]]
    print(" ".join(back) if back else "ok")

def cmd_get(a):
    v = json.load(open(a[0]))
    for k in a[1].split('.'):
        v = v[k]
    print(v)

globals()["cmd_" + sys.argv[1]](sys.argv[2:])
PY
}

# check_all TAG TREE [PRE_BIN]: settle, then py check (+ iverctl list); sets C_LOST C_DUP C_WRONG C_STALE C_N
check_all() {
        local tag=$1 tree=$2 pre=${3:--} out
        ctl settle --timeout 120 >/dev/null || fail "$tag: settle timed out"
        if ! ctl list "$tree/" >"$D/ctl.list" 2>"$D/ctl.err"; then
                fail "$tag: iverctl list failed: $(head -c 300 "$D/ctl.err")"
                ctl list "$tree/" >"$D/ctl.list" 2>"$D/ctl.err" || : >"$D/ctl.list"
        fi
        out=$(py check "$RUN" "$tree" "$pre" "$D/ctl.list") || { fail "$tag: check script failed"; out="1 1 1 1 0"; }
        read -r C_LOST C_DUP C_WRONG C_STALE C_N <<<"$out"
        if [[ $C_LOST != 0 || $C_DUP != 0 || $C_WRONG != 0 || $C_STALE != 0 ]]; then
                fail "$tag: lost=$C_LOST duplicates=$C_DUP wrong=$C_WRONG stale-cache=$C_STALE (list $C_N entries)"
        fi
}
