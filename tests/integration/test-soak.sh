#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Rename-over churn soak (issue 14): 500 files among a tree of 200,000 others
# (IVER_SOAK_TREE; 20,000 under CI=true) on a tmpfs of their own, as on a
# host whose packages are upgraded, replaced the way dpkg does it — the new content written to NAME.dpkg-new,
# renamed over NAME — again and again, alternating two versions of each file
# (an upgrade and a downgrade, so the measurement list stops growing after the
# first rounds and what is left to grow is the daemon's own bookkeeping;
# the .dpkg-new names are not measured). iverd follows through inotify; each
# replacement drops the old inode's cache entry and makes a new one.
# Checks:
#   - the churn reaches the cache (settled after each round: at least 90 % of
#     the replacements are hashed, each a new inode under its name);
#   - RSS after the churn is within 3 % of RSS after four warm-up rounds;
#   - at the end, every file's cached digest is sha256sum's, there is one
#     cache entry per file and none for a .dpkg-new name.
# IVER_SOAK_REPLACEMENTS (default 100000; 20000 under CI=true) sets the count.
# Needs root (mount).
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-mounts.sh
source "$here/lib-mounts.sh"
# the memory soak is not a test of the settle interval: each round settles
# after 100 ms of quiet, not 2 s (IVERD_TEST_REST_SETTLE_MS, iverd(8)). Every
# replaced file is still held at rest first (its writer, the churn, is not
# quiet until the round ends: rest.c), and let go at the next tick; 200 rounds
# of 300 ms took 100 s, of 100 ms 50 s.
export IVERD_TEST_REST_SETTLE_MS=${IVERD_TEST_REST_SETTLE_MS:-100}

BUILD=${IVER_BUILD_DIR:-$(cd "$here/../.." && pwd)/build}
if [[ ${CI:-} == true ]]; then R=${IVER_SOAK_REPLACEMENTS:-20000} T=${IVER_SOAK_TREE:-20000}
else R=${IVER_SOAK_REPLACEMENTS:-100000} T=${IVER_SOAK_TREE:-200000}; fi
FILES=500
for b in "$BUILD/iverd" "$BUILD/iverctl"; do
        [[ -x $b ]] || { echo "FAIL: $b not built (set IVER_BUILD_DIR)"; exit 1; }
done
command -v python3 >/dev/null || iver_skip "python3 not found"

iver_mounts_init
W=$IVER_WORKDIR
M=$W/mnt-soak
mkdir -p "$M"
# a small file takes a page on tmpfs
mount -t tmpfs -o size=$(( T / 200 + 256 ))m,mode=0755 iver-soak "$M" || { echo "FAIL: cannot mount tmpfs"; exit 1; }
IVER_MOUNTS+=("$M")
fail() { echo "FAIL: $*"; [[ -f $W/iverd.log ]] && tail -20 "$W/iverd.log"; exit 1; }
step() { echo; echo "== $*"; }
export IVERD_SOCKET=$W/iverd.sock IVERCTL_NO_PROGRESS=1
ctl() { "$BUILD/iverctl" "$@"; }
rss_kb() { awk '/^VmRSS/ { print $2 }' /proc/"$IVERD_PID"/status; }
# resident kB by mapping (heap, thread arenas, arena chunks): where growth is
mappings() { awk '/^[0-9a-f]+-[0-9a-f]+ / { m = $1 " " $6 } /^Rss:/ && $2 > 100 { print "  " m, $2 " kB" }' /proc/"$IVERD_PID"/smaps; }

mkdir -p "$M/tree" "$M/run" "$W/state"
python3 "$here/scale-tree.py" "$M/tree/rest" "$T" >/dev/null || { echo "FAIL: cannot make the tree"; exit 1; }
python3 - "$M/tree" "$FILES" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(root, "pkg%02d" % (i // 25))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "lib%03d.so" % i), "w") as f:
        f.write("version 0 of file %d\n" % i)
PY
# the temporary names are not measured (nothing runs them): the list then
# holds three versions of each file at most and stops growing
printf 'dont_measure path="%s/tree/**/*.dpkg-new"\nmeasure path="%s/tree/**"\n' "$M" "$M" >"$W/p.policy"
: >"$W/iverd.conf"
IVERD_LOG_STDERR=1 "$BUILD/iverd" --config "$W/iverd.conf" --policy "$W/p.policy" --runtime-dir "$M/run" \
        --state-dir "$W/state" --socket "$IVERD_SOCKET" --tpm none >"$W/iverd.log" 2>&1 &
IVERD_PID=$!
iver_track_pid $IVERD_PID
for _ in $(seq 100); do ctl status >/dev/null 2>&1 && break; sleep 0.05; done
ctl settle --timeout 600 || fail "iverd did not settle"

# churn FIRST ROUNDS: ROUNDS of FILES replacements each; version r % 2 + 1
# (two versions alternate). One python for all rounds (a coprocess: each
# request a line, each done a line), not one started per round.
cat >"$W/churn.py" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for line in sys.stdin:
    first, rounds = map(int, line.split())
    for r in range(first, first + rounds):
        for i in range(n):
            p = os.path.join(root, "pkg%02d" % (i // 25), "lib%03d.so" % i)
            with open(p + ".dpkg-new", "w") as f:
                f.write("version %d of file %d\n" % (r % 2 + 1, i))
            os.rename(p + ".dpkg-new", p)
    print("done", flush=True)
PY
coproc CHURN { exec python3 "$W/churn.py" "$M/tree" "$FILES"; }
iver_track_pid "$CHURN_PID"
churn() {
        local ok=
        echo "$1 $2" >&"${CHURN[1]}"
        read -r ok <&"${CHURN[0]}"
        [[ $ok == "done" ]] || fail "the churn script failed"
}

step "warm-up: four rounds of $FILES rename-over replacements (the tree: $T more files)"
for r in 0 1 2 3; do
        churn $r 1
        ctl settle --timeout 120 || fail "iverd did not settle"
done
RSS0=$(rss_kb)
LIST0=$(wc -l <"$M/run/ascii_runtime_measurements")
echo "RSS $RSS0 kB, list $LIST0 entries; mappings over 100 kB:"
mappings

ROUNDS=$(( R / FILES ))
hashed() { ctl stats --json | python3 -c 'import json, sys; s = json.load(sys.stdin); print(s["first_seen"] + s["remeasured"])'; }
SEEN0=$(hashed)
step "soak: $ROUNDS rounds ($R replacements), settling after each"
t0=$(date +%s)
for (( r = 0; r < ROUNDS; r++ )); do
        churn $(( 4 + r )) 1
        ctl settle --timeout 300 || fail "iverd did not settle"
done
kill -0 $IVERD_PID 2>/dev/null || fail "iverd exited"
RSS1=$(rss_kb)
LIST1=$(wc -l <"$M/run/ascii_runtime_measurements")
NEW=$(( $(hashed) - SEEN0 ))
echo "$R replacements in $(( $(date +%s) - t0 )) s, $NEW of them hashed; RSS $RSS0 -> $RSS1 kB; list $LIST0 -> $LIST1 entries"
ctl status | grep -E '^(cached_files|errors|violations|peak_queued|coalesced_events)'
echo "mappings over 100 kB:"
mappings
# the churn must reach the cache: most replacements seen one by one
[[ $NEW -ge $(( R * 9 / 10 )) ]] || fail "only $NEW of $R replacements reached the cache"

step "every final digest right, one entry per file"
ctl list "$M/tree/pkg" >"$W/cache.txt" || fail "iverctl list failed"
(cd "$M/tree" && find . -path ./rest -prune -o -type f -print0 | xargs -0 sha256sum) >"$W/sums"
python3 - "$M/tree" "$W/sums" "$W/cache.txt" "$FILES" <<'PY' || fail "cached digests differ"
import sys
root, sums, cache, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
want = {root + p[1:]: "sha256:" + h for h, p in (l.rstrip("\n").split("  ", 1) for l in open(sums))}
got = {}
for line in open(cache):
    d, rest = line.split(" ", 1)
    got[rest.strip().split(" ")[-1]] = d
bad = [p for p in want if got.get(p) != want[p]]
extra = [p for p in got if p not in want]
print("%d files, %d cached, %d wrong, %d extra (e.g. %s)" % (len(want), len(got), len(bad), len(extra), extra[:2]))
sys.exit(1 if bad or extra or len(want) != n else 0)
PY

step "RSS bounded"
LIMIT=$(( RSS0 + RSS0 * 3 / 100 ))
echo "RSS after the soak $RSS1 kB, limit $LIMIT kB (start $RSS0 kB + 3 %)"
[[ $RSS1 -le $LIMIT ]] || fail "RSS grew from $RSS0 to $RSS1 kB over $R replacements"
echo
echo PASS
