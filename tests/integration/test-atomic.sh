#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Names at rest (issue 21 item 2, issue 22 item 4's rename part): a digest
# computed after a write is listed under the name the file has once it has
# come to rest, or at once when it is used. Real daemon (OnAccess=exec), a
# tree on an ext4 loop mount, real tools writing into it:
#   writers  sed -i, install, cp + mv, Python's tempfile + os.replace, vim
#            (backupcopy=no: the original renamed away, a new file written):
#            after `iverctl settle`, no name in the list that is not a file
#            of the tree now (no transient name: sed's, vim's swap file and
#            backup, the temporary names), every file of the tree listed with
#            its current digest, no violation entry
#   used     a script written as NAME.dpkg-new and executed before the
#            rename: listed at once under that name (it was used), and under
#            NAME once renamed
#   renames  one new file renamed through 1,000 names: one entry (its final
#            name), not one per name
#   explain  a held file shows its pending state (name, since when)
# Prints the figures of the closing note: time from the rename to the entry
# (median, max) from `status`' names_at_rest. Needs root (loop mount) and vim.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-daemon.sh
source "$here/lib-daemon.sh"
for t in vim python3 install sed sha256sum; do command -v $t >/dev/null || { echo "FAIL: $t not installed (scripts/deps.sh)"; exit 1; }; done
daemon_test_init
step() { echo; echo "== $*"; }
rest() { ctl status --json | python3 -c "import json,sys; print(json.load(sys.stdin)['names_at_rest'].get('$1', 0))"; }
sha() { sha256sum "$1" | cut -d' ' -f1; }
ZERO=0000000000000000000000000000000000000000
entries_for() { ctl log --ascii | awk -v p="$1" '$NF == p' | wc -l; }
listed_with() { ctl log --ascii | awk -v p="$1" -v d="sha256:$2" '$NF == p && $4 == d { f = 1 } END { exit !f }'; }

iver_mount ext4
T=$IVER_MNT/tree
mkdir -p "$T/etc" "$T/bin" "$T/ren" "$W/run" "$W/state"
printf 'measure path="%s/**"\n' "$T" >"$W/p.policy"
printf '[Measure]\nOnAccess=exec\n' >"$W/iverd.conf"
for f in sed vim py; do printf 'name=%s\nvalue=old\n' "$f" >"$T/etc/$f.conf"; done
printf '#!/bin/sh\necho old\n' >"$T/bin/tool"; chmod 755 "$T/bin/tool"
printf '#!/bin/sh\necho cp\n' >"$T/bin/cpmv"; chmod 755 "$T/bin/cpmv"
IVERD_LOG_STDERR=1 "$BUILD/iverd" --config "$W/iverd.conf" --policy "$W/p.policy" --runtime-dir "$W/run" \
        --state-dir "$W/state" --tpm none -v >"$W/iverd.log" 2>&1 &
IVERD_PID=$!
for _ in $(seq 200); do ctl status >/dev/null 2>&1 && break; sleep 0.05; done
ctl settle --timeout 60 >/dev/null || { cat "$W/iverd.log"; echo "FAIL: the daemon did not settle"; exit 1; }
[ "$(js on_access)" = exec ] || { echo "FAIL: on-access exec not active"; exit 1; }
V0=$(js violations)

# Every name under the tree in the list is a file of the tree now; every file
# of the tree is listed with its current digest; no violation entry.
check_tree() {
        local what=$1 used=${2:-} n=0 f bad=0
        while IFS= read -r f; do
                [ -f "$f" ] || [ "$f" = "$used" ] || { fail "$what: $f is in the list but is no file of the tree (a transient name)"; bad=1; }
        done < <(ctl log --ascii | awk -v t="$T/" 'index($NF, t) == 1 { print $NF }' | sort -u)
        while IFS= read -r -d '' f; do
                n=$((n + 1))
                listed_with "$f" "$(sha "$f")" || { fail "$what: $f not listed with its current digest"; bad=1; }
        done < <(find "$T" -type f -print0)
        [ "$(ctl log --ascii | awk -v t="$T/" -v z="$ZERO" 'index($NF, t) == 1 && $2 == z' | wc -l)" = 0 ] ||
                { fail "$what: violation entries in the list"; bad=1; }
        [ "$bad" = 0 ] && echo "  $what: $n files, each listed with its digest; no transient name, no violation"
        return 0
}

step "writers: sed -i, install, cp + mv, Python os.replace, vim"
check_tree "initial"
sed -i 's/value=old/value=sed/' "$T/etc/sed.conf"
printf '#!/bin/sh\necho installed\n' >"$W/tool.new"
install -m 755 "$W/tool.new" "$T/bin/tool"
printf '#!/bin/sh\necho cp-mv\n' >"$W/cpmv.new"
cp "$W/cpmv.new" "$T/bin/.cpmv.tmp" && mv "$T/bin/.cpmv.tmp" "$T/bin/cpmv"
python3 - "$T/etc/py.conf" <<'PY'
import os, sys, tempfile
dst = sys.argv[1]
with tempfile.NamedTemporaryFile("w", dir=os.path.dirname(dst), prefix=".py-", delete=False) as f:
    f.write("name=py\nvalue=replaced\n")
    f.flush(); os.fsync(f.fileno())
os.replace(f.name, dst)
PY
HOME=$W vim -N -u NONE -i NONE -es -c 'set backup backupcopy=no writebackup noswapfile' \
        -c '%s/value=old/value=vim/' -c 'wq' "$T/etc/vim.conf" </dev/null
grep -q value=vim "$T/etc/vim.conf" || fail "vim did not write $T/etc/vim.conf"
rm -f "$T/etc/vim.conf~" # the backup: kept by 'backup', removed as an editor user would
ctl settle --timeout 120 >/dev/null || fail "settle timed out"
check_tree "after the writers"
echo "  rest: held $(rest held), listed at rest $(rest listed_at_rest), dropped $(rest dropped), renamed $(rest renamed)"
[ "$(rest pending)" = 0 ] || fail "entries still held after settle"

step "used: NAME.dpkg-new executed before its rename is listed at once under that name"
printf '#!/bin/sh\necho transient-run\n' >"$T/bin/run.dpkg-new"; chmod 755 "$T/bin/run.dpkg-new"
out=$("$T/bin/run.dpkg-new")
[ "$out" = transient-run ] || fail "the transient script did not run ($out)"
D=$(sha "$T/bin/run.dpkg-new")
listed_with "$T/bin/run.dpkg-new" "$D" || fail "the executed transient name is not listed right after its exec"
mv "$T/bin/run.dpkg-new" "$T/bin/run"
ctl settle --timeout 60 >/dev/null || fail "settle timed out"
listed_with "$T/bin/run" "$D" && echo "  listed as run.dpkg-new (used) and as run (at rest), digest ${D:0:16}…" ||
        fail "$T/bin/run not listed after the rename"

step "explain: a held file shows its pending state"
# the writer stays busy in the tree (a scratch file rewritten) until told to
# rename: its file is not at rest meanwhile, however slow this machine is
rm -f "$W/go"
python3 - "$T/etc" "$W/go" <<'PY' &
import os, sys, time
d, go = sys.argv[1], sys.argv[2]
with open(os.path.join(d, "held.conf.tmp"), "w") as f:
    f.write("held\n")
t0 = time.monotonic()
while not os.path.exists(go) and time.monotonic() - t0 < 60:
    with open(os.path.join(d, ".scratch"), "w") as f:
        f.write("%f\n" % time.monotonic())
    time.sleep(0.2)
os.unlink(os.path.join(d, ".scratch"))
os.rename(os.path.join(d, "held.conf.tmp"), os.path.join(d, "held.conf"))
PY
WPID=$!
ex=
for _ in $(seq 100); do
        ex=$(ctl explain "$T/etc/held.conf.tmp" 2>/dev/null || true)
        printf '%s' "$ex" | grep -q '"pending"' && break
        sleep 0.1
done
if printf '%s' "$ex" | grep -q '"pending"'; then
        printf '%s\n' "$ex" | python3 -c 'import json,sys; print("   ", json.dumps(json.load(sys.stdin)["pending"]))'
else
        fail "explain does not show the pending state of a held file"
fi
touch "$W/go"; wait "$WPID" || fail "the writer failed"
ctl settle --timeout 60 >/dev/null || fail "settle timed out"
[ "$(entries_for "$T/etc/held.conf.tmp")" = 0 ] || fail "the held file's temporary name reached the list"
listed_with "$T/etc/held.conf" "$(sha "$T/etc/held.conf")" || fail "the held file's final name is not listed"

step "renames: one new file renamed through 1,000 names adds one entry"
n0=$(ctl log --ascii | wc -l)
python3 - "$T/ren" <<'PY'
import os, sys, time
d = sys.argv[1]
with open(os.path.join(d, "f.0"), "w") as f:
    f.write("renamed through many names\n")
for i in range(1000):
    os.rename(os.path.join(d, "f.%d" % i), os.path.join(d, "f.%d" % (i + 1)))
    time.sleep(0.001)  # the daemon sees each name
PY
ctl settle --timeout 120 >/dev/null || fail "settle timed out"
n1=$(ctl log --ascii | wc -l)
echo "  entries added: $((n1 - n0)) (renamed $(rest renamed) times in all)"
[ $((n1 - n0)) = 1 ] || fail "1,000 renames added $((n1 - n0)) entries, not 1"
listed_with "$T/ren/f.1000" "$(sha "$T/ren/f.1000")" || fail "the final name f.1000 is not listed"

check_tree "at the end" "$T/bin/run.dpkg-new"
V1=$(js violations)
[ "$V1" = "$V0" ] || fail "violations went from $V0 to $V1"
step "figures"
echo "  time from the last change (rename) to the entry: median $(rest delay_median_ms) ms, max $(rest delay_max_ms) ms" \
        "(settle interval $(rest settle_ms) ms, bound $(rest bound_ms) ms)"
kill -0 "$IVERD_PID" || fail "iverd died"
[ "$FAILS" = 0 ] || { echo "FAILED: $FAILS"; exit 1; }
echo "PASS"
