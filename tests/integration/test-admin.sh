#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Admin mistakes and leaks (issue 13, items 15-18), each performed against the
# real daemon:
#   15  --config replaced by a FIFO, then SIGHUP: a clear error in the log, the
#       daemon still answers status and still lists a tamper (old policy kept)
#   16  a policy reaching /proc/*/pagemap: nothing under /proc is hashed or
#       listed (bytes hashed stay small), `iverctl policy check` warns
#   17  a runtime directory pre-created by another user with a symlink in it,
#       a world-writable one, and one that is itself a symlink: iverd refuses
#       to start (exit non-zero, clear error), no file appears at the target
#   18  `iverctl explain` as a non-root member of the stats group on a
#       root-only file: refused, no inode, size or timestamp in the answer
# A temporary user and group are created and removed (EXIT trap). Needs root.
# ADMIN_PARTS="15 17" runs some parts only (to show each fails on old code).
set -euo pipefail
# not a test of names at rest: a settle after a change need not wait the 2 s
# a name takes to come to rest (IVERD_TEST_REST_SETTLE_MS, iverd(8))
export IVERD_TEST_REST_SETTLE_MS=${IVERD_TEST_REST_SETTLE_MS:-300}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-fleet.sh
source "$here/lib-fleet.sh"
for t in useradd userdel groupadd groupdel setpriv getent python3; do
        command -v "$t" >/dev/null || { echo "SKIP: $t missing"; exit 77; }
done
fleet_init admin
SUF=$(printf '%05d' $(($$ % 100000)))
G=ivadg$SUF
U=ivadu$SUF
CLEAN=()
admin_cleanup() {
        local rc=$? i
        for ((i = ${#FLEET_PIDS[@]} - 1; i >= 0; i--)); do fleet_stop_pid "${FLEET_PIDS[i]}"; done
        mountpoint -q "$D/tree" && umount "$D/tree"
        for ((i = ${#CLEAN[@]} - 1; i >= 0; i--)); do eval "${CLEAN[i]}" || true; done
        set +e
        (exit "$rc")
        fleet_cleanup
}
trap admin_cleanup EXIT
groupadd -r "$G"
CLEAN+=("groupdel '$G'")
useradd -r -M -d /nonexistent -s /usr/sbin/nologin -G "$G" "$U"
CLEAN+=("userdel '$U'")
UID_=$(id -u "$U") GID=$(getent group "$G" | cut -d: -f3)
mount -t tmpfs -o size=16m,mode=0755 iver-admin "$D/tree"
T=$D/tree
mkdir -p "$T/etc"
for i in 1 2 3; do echo "file $i" >"$T/etc/f$i"; done

printf 'measure path=%s/** hash=sha256\n' "$T" >"$D/policy"
PARTS=" ${ADMIN_PARTS:-15 16 17 18} "
part() { [[ $PARTS == *" $1 "* ]]; }
stat_of() { ctl stats --json | python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
listed() { # PATH DIGEST: is the pair in the ASCII list
        grep -a -q "sha256:$2 $1\$" "$D/run/ascii_runtime_measurements"
}

# ------------------------------------------------------------------ 15
if part 15; then
step "15: --config replaced by a FIFO, then SIGHUP"
printf '[Measure]\nWorkers=2\n' >"$D/iverd.conf"
printf 'measure path=%s/** hash=sha256\n' "$T" >"$D/policy"
fleet_start_iverd "$D/policy" --config "$D/iverd.conf" --tpm none
ctl settle --timeout 30
listed "$T/etc/f1" "$(sha256sum <"$T/etc/f1" | cut -d' ' -f1)" || fail "f1 not listed at start"
rm "$D/iverd.conf"
mkfifo "$D/iverd.conf"
kill -HUP "$IVERD_PID"
for _ in $(seq 50); do grep -q "iverd.conf" "$D/iverd.log" && break; sleep 0.1; done
grep -a "iverd.conf" "$D/iverd.log" | tail -2 | sed 's/^/  log: /' || true
grep -a -q "iverd.conf.*not a regular file" "$D/iverd.log" || fail "no clear error about the FIFO in the log"
t0=$(date +%s%N)
timeout 5 "$IVERCTL" status >/dev/null || fail "status does not answer after SIGHUP with a FIFO config"
echo "  status answers in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
echo "tampered" >>"$T/etc/f2"
ctl settle --timeout 30
listed "$T/etc/f2" "$(sha256sum <"$T/etc/f2" | cut -d' ' -f1)" || fail "a tamper after the failed reload is not listed"
echo "  the tamper of f2 is listed: the running policy stays and the daemon keeps measuring"
out=$(timeout 5 "$IVERCTL" reload 2>&1) && fail "reload with a FIFO config succeeded" || true
echo "  iverctl reload: $out"
[[ $out == *"not a regular file"* ]] || fail "reload does not say why"
fleet_stop_pid "$IVERD_PID"
rm -f "$D/iverd.conf"

fi

# ------------------------------------------------------------------ 16
if part 16; then
step "16: a policy reaching /proc/*/pagemap"
printf 'measure path=/proc/*/pagemap\nmeasure path=/sys/kernel/**\nmeasure path=%s/** hash=sha256\n' "$T" >"$D/policy"
out=$(ctl policy check "$D/policy" 2>&1) || true
echo "$out" | sed 's/^/  policy check: /'
[[ $out == *"can reach /proc, a pseudo filesystem"* ]] || fail "policy check does not warn about /proc"
[[ $out == *"can reach /sys, a pseudo filesystem"* ]] || fail "policy check does not warn about /sys"
rm -rf "$D/run" "$D/state"; mkdir -p "$D/run" "$D/state"
fleet_start_iverd "$D/policy" --tpm none
ctl settle --timeout 60 || fail "settle with /proc in the policy"
hashed=$(stat_of bytes_hashed)
echo "  bytes hashed: $hashed"
[ "$hashed" -lt 1000000 ] || fail "$hashed bytes hashed: a pseudo filesystem was read"
grep -a -q " /proc/\| /sys/" "$D/run/ascii_runtime_measurements" && fail "entries under /proc or /sys in the list" || true
grep -a -q "Policy: .*pseudo filesystem" "$D/iverd.log" || fail "the daemon does not warn about the policy"
listed "$T/etc/f3" "$(sha256sum <"$T/etc/f3" | cut -d' ' -f1)" || fail "the real tree is not measured"
echo "  nothing under /proc or /sys listed; the real tree is"
fleet_stop_pid "$IVERD_PID"

fi

# ------------------------------------------------------------------ 17
if part 17; then
step "17: runtime directories another user could write"
refused() { # DIR LABEL: iverd must refuse to start with --runtime-dir DIR
        local dir=$1 label=$2 rc=0
        IVERD_LOG_STDERR=1 timeout 20 "$IVERD" --policy "$D/policy" --runtime-dir "$dir" --state-dir "$D/state" \
                --socket "$D/r17.sock" --tpm none 2>"$D/r17.log" || rc=$?
        [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || { cat "$D/r17.log"; fail "$label: iverd started (exit $rc)"; }
        grep -a -q "Refusing the runtime directory" "$D/r17.log" || { cat "$D/r17.log"; fail "$label: no clear error"; }
        echo "  $label: refused (exit $rc): $(grep -a -m1 "Refusing" "$D/r17.log" | cut -c1-150)"
}
mkdir "$D/evil"
chown "$UID_" "$D/evil"
chmod 0777 "$D/evil"   # as an attacker leaves it: anyone, root without CAP_DAC_OVERRIDE too, may create files
setpriv --reuid "$UID_" --regid "$GID" --clear-groups ln -s "$D/target" "$D/evil/binary_runtime_measurements"
setpriv --reuid "$UID_" --regid "$GID" --clear-groups ln -s "$D/target2" "$D/evil/ascii_runtime_measurements"
refused "$D/evil" "owned by $U, symlinks planted"
[ -e "$D/target" ] || [ -e "$D/target2" ] && fail "a file was created at the symlink target"
mkdir -m 0777 "$D/open"
chmod 0777 "$D/open"
refused "$D/open" "root-owned, mode 0777"
mkdir -m 0755 "$D/real"
ln -s "$D/real" "$D/linked"
refused "$D/linked" "a symlink to a good directory"
echo "  no file at any symlink target"

fi

# ------------------------------------------------------------------ 18
if part 18; then
step "18: explain as a non-root member of the stats group"
mkdir -m 0700 "$T/secret"
echo "root only" >"$T/secret/key"
chmod 0600 "$T/secret/key"
mkdir -p "$D/bin"
cp "$IVERCTL" "$D/bin/"
ldd "$IVERCTL" | awk '/libiver/ { print $3 }' | xargs -r -I{} cp -L {} "$D/bin/"
chmod -R a+rX "$D/bin"
rm -rf "$D/run" "$D/state"; mkdir -p "$D/run" "$D/state"
printf 'measure path=%s/** hash=sha256\n' "$T" >"$D/policy"
IVERD_STATS_GROUP=$G fleet_start_iverd "$D/policy" --tpm none
ctl settle --timeout 30
ino=$(stat -c %i "$T/secret/key")
as_member() { (cd / && LD_LIBRARY_PATH=$D/bin setpriv --reuid "$UID_" --regid "$GID" --init-groups \
        "$D/bin/iverctl" --socket "$IVERD_SOCKET" "$@" 2>&1); }
as_member status >/dev/null || fail "the stats group member cannot use status (setup)"
out=$(as_member explain "$T/secret/key") && fail "explain answered a non-root member: $out" || true
echo "  member: $out"
[[ $out == *"permission denied"* ]] || fail "explain not refused for permission"
[[ $out == *"\"ino\""* || $out == *"$ino"* || $out == *cookie* ]] && fail "explain leaked metadata: $out"
out=$(as_member explain "$T/secret/nonexistent") || true
[[ $out == *"permission denied"* ]] || fail "explain is an existence oracle: $out"
ctl explain "$T/secret/key" | grep -q "\"ino\":[^,]*$ino" || fail "root's explain lost the inode"
echo "  root: explain still answers"

fi

echo
echo "PASS"
