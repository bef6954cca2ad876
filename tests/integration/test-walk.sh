#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The walker against a tree shaped to evade it (issue 13 items 10 and 8), on
# the daemon driven through iverctl, in a measured tree on its own tmpfs:
#   long  18 levels of 250-byte directory names (a path of ~4,600 bytes, longer
#         than PATH_MAX): the file at the bottom is measured and listed under
#         its full name with the right digest; a tamper of it is listed again;
#         nothing is counted unmeasurable.
#   link  symlinks inside the tree are measured: an entry whose digest is the
#         sha256 of the link target; a measured directory swapped for a
#         symlink to an unmeasured one (rm -r dir; ln -s /elsewhere dir) shows
#         in the list as a new entry for dir with sha256("/elsewhere").
#   ancestor  the directory holding the tree's mount point is watched only for
#         its directories (nothing in it is measured): 400 writes to a file
#         there reach the daemon as at most a few events.
# Needs root.
set -u
# not a test of names at rest: a settle after a change need not wait the 2 s
# a name takes to come to rest (IVERD_TEST_REST_SETTLE_MS, iverd(8))
export IVERD_TEST_REST_SETTLE_MS=${IVERD_TEST_REST_SETTLE_MS:-300}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-faults.sh
source "$here/lib-faults.sh"
faults_init walk

mount -t tmpfs -o size=64m,mode=0755 iver-walk "$D/tree" || die "tmpfs"
on_cleanup "umount '$D/tree'"
mkdir -p "$D/elsewhere"
echo 'echo evil' >"$D/elsewhere/run.sh"

# --- the long path: made, read and written through directory fds (python) ----
cat >"$D/deep.py" <<'PY'
import hashlib, os, sys
root, cmd = sys.argv[1], sys.argv[2]
names = [("d%02d" % i) + "x" * 247 for i in range(18)]
def walk(create):
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for n in names:
        if create:
            os.mkdir(n, dir_fd=fd)
        nfd = os.open(n, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    return fd
if cmd == "path":
    print(os.path.join(root, *names, "leaf"))
elif cmd in ("make", "tamper"):
    fd = walk(cmd == "make")
    f = os.open("leaf", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=fd)
    os.write(f, b"deep leaf\n" if cmd == "make" else b"deep leaf, tampered\n")
    os.close(f)
elif cmd == "sha256":
    fd = walk(False)
    f = os.open("leaf", os.O_RDONLY, dir_fd=fd)
    print(hashlib.sha256(os.read(f, 1 << 20)).hexdigest())
PY
py3() { python3 "$D/deep.py" "$D/tree" "$@"; }
py3 make || die "cannot make the deep tree"
LEAF=$(py3 path)
note "deep path: ${#LEAF} bytes ($(getconf PATH_MAX /) is PATH_MAX)"
((${#LEAF} > 4096)) || die "the deep path is not longer than PATH_MAX"

# --- the symlink scenario's tree ----------------------------------------------
mkdir -p "$D/tree/bin"
echo 'echo good' >"$D/tree/bin/run.sh"
ln -s run.sh "$D/tree/bin/alias"

printf 'measure path="%s/**"\n' "$D/tree" >"$D/p.policy"
IVERD_TPM_ARGS=(--tpm none --workers 2)
start_iverd
ctl settle --timeout 60 >/dev/null || die "no settle"

listed() { # path digest: the ASCII list has path with digest
        ctl log --ascii | grep -qF "sha256:$2 $1"
}
wait_listed() { # path digest
        local _
        for _ in $(seq 100); do listed "$1" "$2" && return 0; sleep 0.1; done
        return 1
}

step "long: a file below 18 levels of 250-byte names"
H=$(py3 sha256)
if wait_listed "$LEAF" "$H"; then note "listed with its full name and digest $H"
else fail "the deep file is not listed with sha256 $H"; ctl log --ascii | tail -3 | cut -c1-200; fi
UNM=$(js unmeasurable)
[[ $UNM == 0 ]] || fail "unmeasurable is $UNM (want 0)"
py3 tamper
H2=$(py3 sha256)
if wait_listed "$LEAF" "$H2"; then note "tamper listed: $H2"
else fail "the tamper of the deep file is not listed (sha256 $H2)"; fi

step "link: symlinks are measured by their target"
T=$(printf '%s' run.sh | sha256sum | cut -d' ' -f1)
if wait_listed "$D/tree/bin/alias" "$T"; then note "bin/alias listed with sha256(\"run.sh\")"
else fail "the symlink bin/alias is not listed with sha256 of its target"; ctl log --ascii | grep -F "$D/tree/bin"; fi

step "link: a measured directory swapped for a symlink to an unmeasured one"
rm -r "$D/tree/bin"
ln -s "$D/elsewhere" "$D/tree/bin"
T=$(printf '%s' "$D/elsewhere" | sha256sum | cut -d' ' -f1)
if wait_listed "$D/tree/bin" "$T"; then note "the swap is in the list: bin → sha256(\"$D/elsewhere\")"
else fail "the swap of bin for a symlink is not in the list"; ctl log --ascii | grep -F "$D/tree/bin"; fi
# the script reached through the symlink is outside the policy: not listed under it
ctl log --ascii | grep -qF "$D/elsewhere/run.sh" && fail "a file outside the tree was listed"

step "ancestor: writes next to the tree's mount point cost the daemon no events"
E0=$(js inotify_events)
python3 - "$D/noise" <<'PY'
import os, sys
for i in range(400):
    with open(sys.argv[1], "ab") as f:
        f.write(b"x" * 64)
PY
ctl settle --timeout 30 >/dev/null
E1=$(js inotify_events)
note "inotify events for 400 writes in $D (an ancestor): $((E1 - E0))"
((E1 - E0 <= 10)) || fail "$((E1 - E0)) inotify events for writes to a file where nothing is measured (want at most a few)"

alive || true
stop_iverd
[[ $FAILS -eq 0 ]] || exit 1
echo PASS
