#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Uses are decided by inode (issue 22 item 2), against the real daemon
# (OnAccess=exec, software TPM, the measured tree on an ext4 loop mount):
#   bind     a host bind mount of the measured tree: root rewrites the
#            measured script and runs it through the bind mount at once, 20
#            times: each content listed under the measured (canonical) name
#   ns       the same from a private mount namespace (unshare -m, the tree
#            bind-mounted at a name only that namespace has): 20 of 20
#   forge    an unprivileged user (created here, removed on exit) in its own
#            user and mount namespace (unshare -Urm) bind-mounts its own
#            script over the root-owned measured name and runs it: no entry
#            under the measured name holds the user's digest (it is listed
#            under a marked alias: name, or not at all)
set -euo pipefail
# not a test of names at rest: a settle after a change need not wait the 2 s
# a name takes to come to rest (IVERD_TEST_REST_SETTLE_MS, iverd(8))
export IVERD_TEST_REST_SETTLE_MS=${IVERD_TEST_REST_SETTLE_MS:-300}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-daemon.sh
source "$here/lib-daemon.sh"
daemon_test_init swtpm useradd userdel setpriv unshare python3
BOUND=""
test_cleanup_more() {
        [ -n "$BOUND" ] && umount "$BOUND"
        [ -n "${KEEP_LOG:-}" ] && cp "$W/list" "$KEEP_LOG.list"
}
digest_of() { printf '#!/bin/sh\necho %s\n' "$1" | sha256sum | cut -d' ' -f1; }
listed_as() { awk -v p="$1" -v d="sha256:$2" '$NF == p && $4 == d { f = 1 } END { exit !f }' "$W/list"; }

iver_mount ext4; M=$IVER_MNT; T=$M/tree
mkdir -p "$T" "$W/run" "$W/state" "$W/tpm" "$W/bind" "$W/ns"
chmod 0711 "$W"
SU=iveralias$$
useradd -r -M -d /nonexistent -s /usr/sbin/nologin "$SU"
mkdir -p "$M/home/$SU"; chown "$SU:" "$M/home/$SU"
printf 'measure path="%s/**"\n' "$T" >"$W/p.policy"
printf '[Measure]\nOnAccess=exec\n' >"$W/iverd.conf"
printf '#!/bin/sh\necho good\n' >"$T/a"; chmod 0755 "$T/a"

swtpm socket --tpm2 --server type=unixio,path="$W/swtpm.sock" --ctrl type=unixio,path="$W/swtpm.sock.ctrl" \
        --tpmstate dir="$W/tpm" --flags startup-clear,not-need-init >>"$W/swtpm.log" 2>&1 &
SWTPM_PID=$!
for _ in $(seq 100); do [ -S "$W/swtpm.sock" ] && break; sleep 0.05; done
IVERD_LOG_STDERR=1 "$BUILD/iverd" --config "$W/iverd.conf" --policy "$W/p.policy" --runtime-dir "$W/run" \
        --state-dir "$W/state" --tpm "swtpm:path=$W/swtpm.sock" --pcr 23 -v >"$W/iverd.log" 2>&1 &
IVERD_PID=$!
for _ in $(seq 200); do ctl status >/dev/null 2>&1 && break; sleep 0.05; done
ctl settle --timeout 60 >/dev/null
[ "$(js on_access)" = exec ] || { cat "$W/iverd.log"; echo "FAIL: on-access exec not active"; exit 1; }

echo "== bind: rewrite, then run through a host bind mount of the tree, 20 times"
mount --bind "$T" "$W/bind"; BOUND=$W/bind
for i in $(seq 20); do printf '#!/bin/sh\necho bind%s\n' "$i" >"$T/a"; "$W/bind/a" >/dev/null; done
umount "$W/bind"; BOUND=""
ctl settle --timeout 60 >/dev/null; ctl log --ascii >"$W/list"
n=0; for i in $(seq 20); do listed_as "$T/a" "$(digest_of "bind$i")" && n=$((n + 1)); done
echo "bind mount: $n/20 listed under $T/a"
[ "$n" = 20 ] || fail "bind mount: only $n of 20 listed under the measured name"

echo "== ns: the same from a private mount namespace (unshare -m)"
unshare -m --propagation private sh -c '
        mount --bind "$1" "$2" || exit 1
        for i in $(seq 20); do printf "#!/bin/sh\necho ns%s\n" "$i" >"$2/a"; "$2/a" >/dev/null; done' sh "$T" "$W/ns"
ctl settle --timeout 60 >/dev/null; ctl log --ascii >"$W/list"
n=0; for i in $(seq 20); do if listed_as "$T/a" "$(digest_of "ns$i")"; then n=$((n + 1)); else echo "not listed: ns$i"; fi; done
echo "private mount namespace: $n/20 listed under $T/a"
[ "$n" = 20 ] || fail "private mount namespace: only $n of 20 listed under the measured name"

echo "== forge: a user bind-mounts its own script over the measured name in its own namespaces and runs it"
printf '#!/bin/sh\necho forged\n' >"$M/home/$SU/evil"; chown "$SU:" "$M/home/$SU/evil"; chmod 0755 "$M/home/$SU/evil"
EVIL=$(digest_of forged)
out=$(setpriv --reuid="$SU" --regid="$SU" --clear-groups unshare -Urm sh -c \
        'mount --bind "$1" "$2" && "$2"' sh "$M/home/$SU/evil" "$T/a" 2>&1) || fail "the user could not run its bind mount: $out"
[ "$out" = forged ] || fail "the user's bind mount did not run its script: $out"
ctl settle --timeout 60 >/dev/null; ctl log --ascii >"$W/list"
if listed_as "$T/a" "$EVIL"; then
        fail "forged entry: $T/a listed with the user's digest"
fi
echo "user's digest listed as: $(awk -v d="sha256:$EVIL" '$4 == d { print $NF }' "$W/list" | sort -u | tr '\n' ' ')(none under $T/a)"
[ "$(sha256sum <"$T/a" | cut -d' ' -f1)" = "$(digest_of ns20)" ] || fail "the host's file changed"

if [ "$FAILS" -gt 0 ]; then
        [ -n "${VERBOSE:-}" ] && tail -50 "$W/iverd.log"
        echo "$FAILS failure(s)"; exit 1
fi
echo "PASS"
