#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A worker opens a batch of small files and starts their reads (readahead)
# before it hashes the first, where the filesystem reads from a device
# (daemon/iverd/workers.c, read_ahead): a cold tree's reads are in flight
# together instead of one a worker. The real daemon under strace, a tree of
# 600 files of distinct contents (0 bytes to 1 MiB, some hard-linked) on an
# ext4 loop mount and the same on a tmpfs, caches dropped, twice: under a
# path-only policy (files found by name, their size unknown) and under one
# with a mode= rule (every file statx'ed by the walk first). Each time:
#   - every file is listed once with the digest sha256sum gives (an fd opened
#     ahead and handed to the wrong job would list a wrong digest), each
#     hard-link name too (a fresh inode is held until its name comes to rest;
#     another name of it must not take the held entry from the first);
#   - every inode is hashed once (scan_bytes_hashed is what the inodes hold: two
#     names of one inode, one found by name and one statx'ed, both hashed);
#   - readahead(2) was called on files of the ext4, and never on the tmpfs
#     (nothing to read ahead from: one syscall a file saved).
# Needs root (loop mount, drop_caches) and strace.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-daemon.sh
source "$here/lib-daemon.sh"
daemon_test_init strace sha256sum python3
step() { echo; echo "== $*"; }
DPID=""
test_cleanup_more() { stop_pid "$DPID"; } # strace follows its tracee out
# under the sanitizers (scripts/test-sanitize.sh): LeakSanitizer cannot run
# under ptrace; the rest of ASan and UBSan still checks the daemon
[[ -n ${ASAN_OPTIONS:-} ]] && export ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"

iver_mount ext4
E=$IVER_MNT/tree
iver_mount tmpfs
T=$IVER_MNT/tree
for t in "$E" "$T"; do
        mkdir -p "$t/a" "$t/b/c"
        python3 - "$t" <<'EOF'
import os, sys
t = sys.argv[1]
for i in range(600):
        d = ("a", "b", "b/c")[i % 3]
        n = (0, 1, 100, 4096, 4097, 70000, 300000, 1 << 20)[i % 8] if i % 40 == 0 else 10 + (i * 37) % 5000
        with open(os.path.join(t, d, "f%03d" % i), "wb") as f:
                f.write(os.urandom(n))
for i in range(0, 30, 3):
        os.link(os.path.join(t, "a", "f%03d" % i), os.path.join(t, "b", "link%03d" % i))
EOF
done
sync
mkdir -p "$W/run" "$W/state"

run() { # what policy: a daemon under strace measures both trees, checked
        local what=$1 policy=$2 n_e n_t bad hashed inodes
        printf '%s' "$policy" >"$W/p.policy"
        rm -rf "${W:?}/state"/* "$W/strace.txt"
        echo 3 >/proc/sys/vm/drop_caches
        IVERD_LOG_STDERR=1 strace -f -qq -y -e trace=readahead -o "$W/strace.txt" "$BUILD/iverd" \
                --policy "$W/p.policy" --runtime-dir "$W/run" --state-dir "$W/state" --tpm none \
                >"$W/iverd.log" 2>&1 &
        IVERD_PID=$!
        for _ in $(seq 100); do DPID=$(pgrep -P "$IVERD_PID" -x iverd) && break; sleep 0.05; done
        for _ in $(seq 400); do ctl status >/dev/null 2>&1 && break; sleep 0.05; done
        ctl settle --timeout 120 >/dev/null || { tail "$W/iverd.log"; fail "$what: no settle"; return; }
        ctl log --ascii >"$W/list.txt"
        hashed=$(js scan_bytes_hashed)
        stop_pid "$DPID"
        wait "$IVERD_PID" 2>/dev/null || true
        DPID="" IVERD_PID=""
        bad=$(python3 - "$W/list.txt" "$E" "$T" <<'EOF'
import hashlib, os, sys
listed = {}
for line in open(sys.argv[1]):
        f = line.split()
        if len(f) >= 5:
                listed.setdefault(f[-1], []).append(f[3])
bad = 0
for top in sys.argv[2:]:
        for d, _, names in os.walk(top):
                for n in names:
                        p = os.path.join(d, n)
                        want = "sha256:" + hashlib.sha256(open(p, "rb").read()).hexdigest()
                        if listed.get(p) != [want]:
                                bad += 1
                                if bad <= 5:
                                        print("%s listed as %s, sha256sum says %s" % (p, listed.get(p), want),
                                              file=sys.stderr)
print(bad)
EOF
)
        inodes=$(python3 - "$E" "$T" <<'EOF'
import os, sys
seen = {}
for top in sys.argv[1:]:
        for d, _, names in os.walk(top):
                for n in names:
                        st = os.lstat(os.path.join(d, n))
                        seen[(st.st_dev, st.st_ino)] = st.st_size
print(sum(seen.values()))
EOF
)
        n_e=$(grep -c "readahead([0-9]*<$E/" "$W/strace.txt" || true)
        n_t=$(grep -c "readahead([0-9]*<$T/" "$W/strace.txt" || true)
        echo "$what: $(grep -c . "$W/list.txt") entries, $bad wrong or missing; readahead on the ext4 $n_e, on the tmpfs $n_t"
        echo "$what: $hashed bytes hashed; the inodes hold $inodes"
        [ "$bad" -eq 0 ] || fail "$what: $bad files not listed once with sha256sum's digest"
        [ "$hashed" -eq "$inodes" ] || fail "$what: $hashed bytes hashed, not the $inodes the inodes hold once"
        [ "$n_e" -gt 0 ] || fail "$what: no readahead on the ext4: the batch's reads were not started ahead"
        [ "$n_t" -eq 0 ] || fail "$what: $n_t readaheads on the tmpfs"
}

step "path-only policy: files found by name, opened and read ahead in batches"
run "found by name" "$(printf 'measure path="%s/**"\nmeasure path="%s/**"\n' "$E" "$T")"
step "a mode= rule: every file statx'ed by the walk, then opened and read ahead in batches"
run "statx'ed first" "$(printf 'measure path="%s/**" mode=0644\nmeasure path="%s/**"\nmeasure path="%s/**"\n' \
        "$W/none" "$E" "$T")"

[ "$FAILS" -eq 0 ] || { echo "FAIL: $FAILS checks failed"; exit 1; }
echo "PASS"
