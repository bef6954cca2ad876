#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Work done once: an inode with several hard-link names is hashed once (bytes
# hashed = the inodes' bytes plus the symlinks' target strings, whatever the
# number of names) and every name is listed under its own name; a clean
# restart re-hashes nothing, symlinks included (the list grows by the gap
# entry alone), and forgets nothing that is
# still there ("Forgot N cached measurements" was logged for every symlink).
set -euo pipefail
BUILD=${IVER_BUILD_DIR:-/work/main/build}
command -v keyctl >/dev/null || { echo "FAIL: keyctl (package keyutils) missing"; exit 1; }
D=$(mktemp -d /var/tmp/iver-test-links.XXXXXX)
IVERD_PID=
DESC=iverd:snapshot-hmac
SAVED_KEY=
if id=$(keyctl search @u user $DESC 2>/dev/null); then SAVED_KEY=$(keyctl pipe "$id" | base64 -w0); fi
restore_key() {
        while id=$(keyctl search @u user $DESC 2>/dev/null); do keyctl unlink "$id" @u >/dev/null 2>&1 || break; done
        if [ -n "$SAVED_KEY" ]; then
                id=$(echo "$SAVED_KEY" | base64 -d | keyctl padd user $DESC @u)
                keyctl setperm "$id" 0x3f0b0000
        fi
}
stop() { local p=$1; [ -n "$p" ] || return 0; kill "$p" 2>/dev/null || true; for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || return 0; sleep 0.1; done; kill -9 "$p" 2>/dev/null || true; }
cleanup() { stop "$IVERD_PID"; restore_key; rm -rf "$D"; }
trap cleanup EXIT
trap "exit 1" INT TERM HUP
fail() { echo "FAIL: $*"; tail -20 "$D/iverd.log"; exit 1; }
export IVERD_SOCKET=$D/run/iverd.sock
ctl() { "$BUILD/iverctl" "$@"; }
stat_of() { ctl stats --json | python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
start() {
        IVERD_LOG_STDERR=1 "$BUILD/iverd" --on-access none --policy "$D/p.policy" --runtime-dir "$D/run" --state-dir "$D/state" \
                --tpm none >>"$D/iverd.log" 2>&1 &
        IVERD_PID=$!
        for _ in $(seq 400); do ctl status >/dev/null 2>&1 && break; sleep 0.02; done
        ctl settle --timeout 120
}
mkdir -p "$D/tree" "$D/run" "$D/state"
SEED=${IVER_TEST_SEED:-$RANDOM}
echo "seed $SEED (IVER_TEST_SEED)"
# N inodes, each with 1-4 names spread over directories (siblings and not),
# plus symlinks to some of them; prints: inode bytes + target bytes, names, links
read -r EXPECT_BYTES NAMES LINKS < <(python3 - "$D/tree" "$SEED" <<'PY'
import os, random, sys
root, rnd = sys.argv[1], random.Random(int(sys.argv[2]))
dirs = [os.path.join(root, "d%02d" % i) for i in range(8)]
for d in dirs:
    os.mkdir(d)
nbytes = names = links = 0
for i in range(400):
    first = os.path.join(rnd.choice(dirs), "f%04d" % i)
    with open(first, "wb") as f:
        data = os.urandom(rnd.randint(1, 3000))
        f.write(data)
    nbytes += len(data)
    names += 1
    for k in range(rnd.choice([0, 0, 1, 1, 2, 3])):
        os.link(first, os.path.join(rnd.choice(dirs), "h%04d-%d" % (i, k)))
        names += 1
    if i % 3 == 0:
        target = os.path.relpath(first, os.path.dirname(first)) if i % 2 else first
        os.symlink(target, os.path.join(rnd.choice(dirs), "l%04d" % i))
        nbytes += len(target.encode())
        links += 1
print(nbytes, names, links)
PY
)
printf 'measure path="%s/tree/**"\n' "$D" >"$D/p.policy"
# a tree at rest, as /usr is: a file changed less than REST_SETTLE_USEC (2 s,
# rest.h) before it is measured is held until its name comes to rest, one
# entry per inode, and its other names are hashed again meanwhile
sleep 3
while id=$(keyctl search @u user $DESC 2>/dev/null); do keyctl unlink "$id" @u >/dev/null; done

echo "== first start: $NAMES names of regular files, $LINKS symlinks"
start
B1=$(stat_of bytes_hashed); R1=$(stat_of remeasured)
echo "bytes_hashed=$B1 (inodes' bytes + targets: $EXPECT_BYTES)"
[ "$B1" = "$EXPECT_BYTES" ] || fail "hashed $B1 bytes, the inodes and link targets hold $EXPECT_BYTES: a name was hashed again"
# every name is listed under its own name (the list, not the cache: the
# cache keeps one entry, with one name, per inode), with its inode's digest
ctl settle
A=$D/run/ascii_runtime_measurements
listed=$(awk '{print $NF}' "$A" | grep -c "^$D/tree/" || true)
[ "$listed" -eq $((NAMES + LINKS)) ] || fail "$listed names listed, the tree has $((NAMES + LINKS))"
missing=$(python3 - "$A" "$D/tree" <<'PY'
import hashlib, os, sys
listed = {tuple(line.split()[3:5]) for line in open(sys.argv[1])}
for dp, _, names in os.walk(sys.argv[2]):
    for n in names:
        p = os.path.join(dp, n)
        if not os.path.islink(p):
            with open(p, "rb") as f:
                if ("sha256:" + hashlib.sha256(f.read()).hexdigest(), p) not in listed:
                    print(p)
PY
)
[ -z "$missing" ] || fail "not listed under their own names with their digests: $missing"
echo "every name listed ($listed)"

echo "== clean restart: nothing re-hashed, nothing forgotten"
stop "$IVERD_PID"; IVERD_PID=
[ -s "$D/state/cache.snap" ] || fail "no snapshot written at stop"
: >"$D/iverd.log"
N1=$(wc -l <"$D/run/ascii_runtime_measurements")
start
# the list grows by the restart's gap entry alone
N2=$(wc -l <"$D/run/ascii_runtime_measurements")
[ "$N2" = $((N1 + 1)) ] || fail "a clean restart added $((N2 - N1)) list entries: the gap alone expected"
tail -n 1 "$D/run/ascii_runtime_measurements" | grep -Eq '^10 0{40} ima-ng sha256:0{64} iverd-gap:[0-9]+-[0-9]+$' ||
        fail "the entry a clean restart added is not the gap: $(tail -n 1 "$D/run/ascii_runtime_measurements")"
B2=$(stat_of bytes_hashed); R2=$(stat_of remeasured)
echo "bytes_hashed $B1 -> $B2, remeasured $R1 -> $R2; list $N1 -> $N2 entries (the gap)"
! grep -q "Forgot" "$D/iverd.log" || fail "$(grep -o 'Forgot.*' "$D/iverd.log")"
[ "$B2" = "$B1" ] || fail "$((B2 - B1)) bytes re-hashed after a clean restart"
[ "$R2" = "$R1" ] || fail "$((R2 - R1)) files re-hashed after a clean restart"

echo "== a symlink replaced by a file while down is forgotten, and measured as a file"
stop "$IVERD_PID"; IVERD_PID=
l=$(find "$D/tree" -type l -print -quit) # not | head -1: under pipefail find's SIGPIPE ends the test
rm "$l"; echo "now a file" >"$l"
start
grep -q "Forgot 1 cached" "$D/iverd.log" || fail "the replaced symlink was not forgotten"
h=$(sha256sum "$l" | cut -d' ' -f1)
ctl settle
grep -q " sha256:$h $l\$" "$D/run/ascii_runtime_measurements" || fail "the file that replaced a symlink is not listed with its digest"
echo; echo PASS
