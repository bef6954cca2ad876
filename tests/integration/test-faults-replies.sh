#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Big replies to an unprivileged reader (the stats group): iverd with
# IVERD_STATS_GROUP on IVER_FAULT_REPLY_FILES files (default 50,000).
#  8a. a member opens 16 connections (the per-uid cap), asks 8 for `list` and
#      8 for `log`, and never reads. Root's status still answers, a new file is
#      still measured, the daemon's peak RSS (VmHWM, reset first) grows by less
#      than 8 MiB (32 MiB under ASan), and the silent connections are dropped within 20 s. Before
#      the list was streamed and the log passed as an fd, each reply was built
#      whole on the loop and held until the peer read it (tens of MiB each).
#  8b. a member that reads slowly (64 KiB every 20 ms) gets the whole list:
#      one valid JSON document, every cached file once.
#  8c. what the verbs give is right: `iverctl list` holds every file with the
#      digest sha256sum gives (a sample of 500), `iverctl log` has list_length
#      lines, `iverctl log --binary` is the list file byte for byte.
#  8d. the fd `log` passes a member is read-only and its own: writing through
#      it fails, its offset is not the daemon's, and reopening it for writing
#      through /proc is refused.
# The user and groups are removed by the EXIT trap.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-faults.sh
source "$here/lib-faults.sh"
faults_init replies
faults_seed
for t in useradd userdel groupadd groupdel setpriv getent sha256sum; do command -v "$t" >/dev/null || { echo "SKIP: $t missing"; exit 77; }; done
NF=${IVER_FAULT_REPLY_FILES:-50000}
# 8 MiB; 32 MiB under ASan, whose quarantine (16 MiB in scripts/test-sanitize.sh)
# and shadow count in the RSS: either is far below one reply built whole.
if [[ -n ${ASAN_OPTIONS:-} ]]; then HWM_GROWTH_KB=${IVER_FAULT_REPLY_HWM_KB:-32768}; else HWM_GROWTH_KB=${IVER_FAULT_REPLY_HWM_KB:-8192}; fi

SUF=$(printf '%05d' $(($$ % 100000)))
G=ivrpg$SUF
U=ivrpu$SUF
groupadd -r "$G" || die "groupadd $G"
on_cleanup "groupdel '$G'"
useradd -r -M -d /nonexistent -s /usr/sbin/nologin -g "$G" "$U" || die "useradd $U"
on_cleanup "userdel '$U'"
UID_=$(id -u "$U") GID=$(getent group "$G" | cut -d: -f3)
MEMBER=(--reuid "$UID_" --regid "$GID" --clear-groups)
note "member $U ($UID_) of the stats group $G ($GID)"
chmod 0711 "$D"
mkdir -p "$D/bin"
chmod 0755 "$D/bin"

python3 - "$D/tree" "$NF" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = f"{root}/d{i // 500:03d}"
    if i % 500 == 0:
        os.makedirs(d, exist_ok=True)
    with open(f"{d}/f{i:06d}", "w") as f:
        f.write(f"file {i}\n" * (i % 7 + 1))
PY
printf 'measure path="%s/**"\n' "$D/tree" >"$D/p.policy"
IVERD_TPM_ARGS=(--tpm none --workers 2)
IVERD_STATS_GROUP=$G start_iverd
ctl settle --timeout 300 >/dev/null || die "no settle"
cached=$(js cached_files)
entries=$(js list_length)
note "$cached files cached, $entries list entries, $(stat -c %s "$RUN/binary_runtime_measurements") list bytes"

# The member's client: raw socket, so it can hold connections and read as it likes.
cat >"$D/bin/client.py" <<'PY'
import array, json, os, socket, sys, time
sock_path, mode = sys.argv[1], sys.argv[2]
def connect(req):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock_path)
    s.sendall((json.dumps(req) + "\n").encode())
    return s
if mode == "hold":            # N connections, requests sent, nothing read, for SECS
    secs = float(sys.argv[3])
    conns = [connect({"verb": "list" if i % 2 == 0 else "log"}) for i in range(16)]
    print("holding", len(conns), flush=True)
    time.sleep(secs)
elif mode == "slow":          # read the list reply 64 KiB every 20 ms
    s = connect({"verb": "list"})
    buf = bytearray()
    while True:
        b = s.recv(65536)
        if not b:
            break
        buf += b
        time.sleep(0.02)
    doc = json.loads(buf)
    assert buf.endswith(b"\n"), "reply not ended by a newline"
    paths = [f["path"] for f in doc["files"]]
    print(json.dumps({"ok": doc["ok"], "files": len(paths), "unique": len(set(paths)), "bytes": len(buf)}))
elif mode == "fd":            # what the fd passed with `log` allows
    s = connect({"verb": "log"})
    fds = array.array("i")
    data = b""
    while not data.endswith(b"\n"):
        msg, anc, flags, addr = s.recvmsg(65536, socket.CMSG_LEN(4 * fds.itemsize))
        if not msg:
            break
        data += msg
        for level, kind, cdata in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(cdata[:len(cdata) - len(cdata) % fds.itemsize])
    reply = json.loads(data)
    fd = fds[0]
    out = {"fds": len(fds), "list_bytes": reply["list_bytes"], "offset": os.lseek(fd, 0, os.SEEK_CUR)}
    head = os.pread(fd, 8, 0)
    out["reads"] = len(head) == 8
    try:
        os.write(fd, b"forged")
        out["write"] = "allowed"
    except OSError as e:
        out["write"] = e.strerror
    try:
        os.close(os.open(f"/proc/self/fd/{fd}", os.O_WRONLY | os.O_APPEND))
        out["reopen_write"] = "allowed"
    except OSError as e:
        out["reopen_write"] = e.strerror
    st = os.fstat(fd)
    out["ino"] = st.st_ino
    print(json.dumps(out))
PY
chmod 0755 "$D/bin/client.py"
# the system's python3: a per-user one (pyenv) is not the member's to run
MPY=/usr/bin/python3
[[ -x $MPY ]] || MPY=$(command -v python3)
member() { (cd / && setpriv "${MEMBER[@]}" "$MPY" "$D/bin/client.py" "$IVERD_SOCKET" "$@"); }

step "8a. a member holds 16 connections asking for list and log, and reads nothing"
echo 5 >"/proc/$IVERD_PID/clear_refs"
hwm0=$(rss_kb "$IVERD_PID" VmHWM)
member hold 6 >"$D/hold.out" 2>&1 &
HOLD=$!
track_pid "$HOLD"
for _ in $(seq 100); do grep -q holding "$D/hold.out" && break; sleep 0.05; done
grep -q "holding 16" "$D/hold.out" || fail "the member could not open 16 connections: $(cat "$D/hold.out")"
sleep 1
conns=$(js connections)
note "connections open: $conns"
ctl status >/dev/null || fail "root's status got no answer while the member held 16 connections"
echo "new while held" >"$D/tree/new-while-held"
ctl settle --timeout 60 >/dev/null || fail "no settle while the member held 16 connections"
ctl list "$D/tree/new-while-held" | grep -q "$(sha256sum "$D/tree/new-while-held" | cut -d' ' -f1)" ||
        fail "a file written while the member held its connections was not measured"
hwm1=$(rss_kb "$IVERD_PID" VmHWM)
growth=$((hwm1 - hwm0))
note "VmHWM $hwm0 kB -> $hwm1 kB while held: +$growth kB (bound $HWM_GROWTH_KB kB)"
((growth < HWM_GROWTH_KB)) || fail "16 unread replies grew the daemon's peak RSS by $growth kB"
wait "$HOLD"; untrack_pid "$HOLD"
dropped=no
for _ in $(seq 200); do [[ $(js connections) -le 1 ]] && { dropped=yes; break; }; sleep 0.1; done
[[ $dropped == yes ]] || fail "the silent connections were not dropped ($(js connections) open)"
alive
row "8a. 16 unread list/log replies (member)" 16 - - "$( ((growth < HWM_GROWTH_KB)) && echo 0 || echo 1)" "$CRASHES" "VmHWM +$growth kB"

step "8b. a member reads the list slowly (64 KiB every 20 ms)"
member slow >"$D/slow.out" 2>&1 || fail "the slow reader failed: $(tail -3 "$D/slow.out")"
cat "$D/slow.out"
now=$(js cached_files)
python3 - "$D/slow.out" "$now" <<'PY' || fail "the slow reader did not get every cached file once"
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])
sys.exit(0 if r["ok"] and r["files"] == int(sys.argv[2]) and r["unique"] == r["files"] else 1)
PY
row "8b. slow reader gets the whole list" 1 - - - "$CRASHES" "$(tail -1 "$D/slow.out" | cut -c1-60)"

step "8c. list, log and log --binary are the cache and the list"
ctl list >"$D/list.txt" || fail "iverctl list failed"
ctl log >"$D/log.txt" || fail "iverctl log failed"
ctl log --binary >"$D/log.bin" || fail "iverctl log --binary failed"
cmp -s "$D/log.bin" "$RUN/binary_runtime_measurements" || fail "log --binary is not the list file"
n=$(wc -l <"$D/log.txt")
[[ $n -eq $(js list_length) ]] || fail "iverctl log has $n lines, list_length is $(js list_length)"
cmp -s "$D/log.txt" "$RUN/ascii_runtime_measurements" || fail "iverctl log is not the ASCII list"
python3 - "$D/list.txt" "$D/tree" "$NF" "$SEED" <<'PY' || fail "iverctl list does not match the files"
import hashlib, random, sys
files = {}
for line in open(sys.argv[1]):         # "DIGEST  STATE PATH"
    digest, rest = line.rstrip("\n").split("  ", 1)
    files[rest.split(" ", 1)[1].lstrip()] = digest
root, n = sys.argv[2], int(sys.argv[3])
random.seed(int(sys.argv[4]))
bad = 0
for i in random.sample(range(n), min(500, n)):
    p = f"{root}/d{i // 500:03d}/f{i:06d}"
    want = "sha256:" + hashlib.sha256(open(p, "rb").read()).hexdigest()
    if files.get(p) != want:
        bad += 1
print(f"   {len(files)} files listed, {bad} of {min(500, n)} sampled wrong or missing")
sys.exit(1 if bad or len(files) < n else 0)
PY
row "8c. list / log / log --binary" 3 - - - "$CRASHES" "$n log lines"

step "8d. the fd log passes a member"
member fd >"$D/fd.out" 2>&1 || fail "the fd client failed: $(tail -3 "$D/fd.out")"
cat "$D/fd.out"
python3 - "$D/fd.out" "$(stat -c %i "$RUN/binary_runtime_measurements")" <<'PY' || fail "the passed fd allows more than reading the list"
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])
ok = r["fds"] == 1 and r["reads"] and r["write"] != "allowed" and r["reopen_write"] != "allowed" and r["offset"] == 0 \
     and r["ino"] == int(sys.argv[2])
sys.exit(0 if ok else 1)
PY
alive
row "8d. passed fd: read-only, the list's" 1 - - - "$CRASHES" "$(tail -1 "$D/fd.out" | cut -c1-60)"
stop_iverd
faults_summary
