#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# End to end under a real systemd: install the build with `cmake --install`
# into a scratch DESTDIR, boot Debian's systemd in a volatile systemd-nspawn
# container (the container's / is a tmpfs, the host's /usr is read-only, the
# install tree, a demo tree and /etc/iverd are bound in), then
#   systemctl start iverd.socket iverd.service, is-active, status (StatusText),
#   CapEff of the daemon, journalctl -u iverd (a scan summary, no entry per file),
#   iverctl stats through the socket (root, the iverd-stats group, refused),
#   systemctl reload after a policy change (a new directory gets measured),
#   systemctl stop (clean exit),
# and tear everything down: nspawn killed by PID, its cgroups and
# /run/systemd/nspawn* leftovers removed. The host is never written (see
# ../../../shared/notes/system.md: never boot systemd on the live root).
# Also: systemd-analyze verify (in the container, where the binaries exist) and
# systemd-analyze security --offline exposure <= 2.5 of the installed unit.
# Needs root and the package systemd-container; exits 77 only without systemd-nspawn.
set -euo pipefail

SRC=${IVER_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${IVER_BUILD_DIR:-$SRC/build}
NSPAWN=$(command -v systemd-nspawn || true)
if [ -z "$NSPAWN" ]; then
  echo "SKIP: systemd-nspawn not found (Debian package systemd-container)"
  exit 77
fi
[ "$(id -u)" = 0 ] || { echo "FAIL: needs root"; exit 1; }
for t in nsenter systemd-analyze; do
  command -v $t >/dev/null || { echo "FAIL: $t missing"; exit 1; }
done
[ -x "$BUILD/iverd" ] || { echo "FAIL: no $BUILD/iverd (build first)"; exit 1; }

PREFIX=/opt/iverd                       # install prefix, as seen inside the container
NAME=iverdtest$$
S=$(mktemp -d /tmp/iverd-svc.XXXXXX)
NSPAWN_PID= CG_DIRS=() LEAVE_NSPAWN_DIR=1 LEAVE_NSPAWN_ROOT=1 LEAVE_RUN_SYSTEMD=1
[ -e /run/systemd/nspawn ] || LEAVE_NSPAWN_DIR=0
[ -e /run/systemd/nspawn-root ] || LEAVE_NSPAWN_ROOT=0
[ -e /run/systemd ] || LEAVE_RUN_SYSTEMD=0
RUN_SYSTEMD_BEFORE=$(find /run/systemd -maxdepth 1 -mindepth 1 2>/dev/null | sort)
# canaries: booting systemd on the host would empty /tmp (tmpfiles --remove)
CANARY=$(mktemp /tmp/iverd-svc-canary.XXXXXX)
CANARY2=$(mktemp /var/tmp/iverd-svc-canary.XXXXXX)

step() { printf '\n== %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*"; exit 1; }

cleanup() {
  local rc=$?
  set +e
  trap - EXIT INT TERM
  if [ -n "$NSPAWN_PID" ] && kill -0 "$NSPAWN_PID" 2>/dev/null; then
    kill -TERM "$NSPAWN_PID" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$NSPAWN_PID" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$NSPAWN_PID" 2>/dev/null; then
      echo "nspawn did not stop on SIGTERM: SIGKILL"
      kill -KILL "$NSPAWN_PID" 2>/dev/null
    fi
    wait "$NSPAWN_PID" 2>/dev/null
  fi
  # processes left in our cgroups (none expected): kill by PID
  local d p
  for d in "${CG_DIRS[@]}"; do
    [ -d "$d" ] || continue
    for p in $(find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
  done
  for _ in $(seq 50); do
    local busy=0
    for d in "${CG_DIRS[@]}"; do
      [ -d "$d" ] || continue
      find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
      [ -d "$d" ] && busy=1
    done
    [ $busy = 0 ] && break
    sleep 0.1
  done
  for d in "${CG_DIRS[@]}"; do [ -d "$d" ] && echo "WARNING: cgroup $d left behind"; done
  rm -rf "/run/systemd/nspawn/propagate/$NAME" "/run/systemd/nspawn/unix-export/$NAME"
  if [ $LEAVE_NSPAWN_DIR = 0 ] && [ -d /run/systemd/nspawn ]; then
    find /run/systemd/nspawn -depth -type d -empty -delete 2>/dev/null
    [ -e /run/systemd/nspawn ] && echo "WARNING: /run/systemd/nspawn not empty, left in place"
  fi
  [ $LEAVE_NSPAWN_ROOT = 0 ] && rmdir /run/systemd/nspawn-root 2>/dev/null
  local extra
  extra=$(comm -13 <(printf '%s\n' "$RUN_SYSTEMD_BEFORE") <(find /run/systemd -maxdepth 1 -mindepth 1 2>/dev/null | sort))
  [ -z "$extra" ] || echo "WARNING: new in /run/systemd: $extra"
  [ $LEAVE_RUN_SYSTEMD = 0 ] && [ -d /run/systemd ] && rmdir /run/systemd 2>/dev/null
  if grep -q " $S" /proc/mounts; then echo "WARNING: mounts below $S left on the host"; fi
  rm -rf "$S"
  [ -e "$CANARY" ] || { echo "FAIL: host /tmp canary vanished"; rc=1; }
  [ -e "$CANARY2" ] || { echo "FAIL: host /var/tmp canary vanished"; rc=1; }
  rm -f "$CANARY" "$CANARY2"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- install tree, units, demo tree ----
step "cmake --install $BUILD --prefix $PREFIX (DESTDIR=$S/root)"
DESTDIR=$S/root cmake --install "$BUILD" --prefix "$PREFIX" > "$S/install.log" \
  || { cat "$S/install.log"; fail "cmake --install"; }
R=$S/root
# Install locations (cmake/paths.cmake): absolute for a /usr build, else
# relative to the prefix; the configuration below the sysconfdir the build
# was configured for (PREFIX/etc for a non-/usr build).
cache() { sed -n "s/^$1:[A-Z]*=//p" "$BUILD/CMakeCache.txt"; }
in_prefix() { case $1 in /*) echo "$1" ;; *) echo "$PREFIX/$1" ;; esac; }
UNITDIR=$(in_prefix "$(cache IVER_SYSTEMD_UNITDIR)")
SYSUSERS=$(in_prefix "$(cache IVER_SYSUSERSDIR)")
CFG_PREFIX=$(cache CMAKE_INSTALL_PREFIX) SYSCONF=$(cache IVER_SYSCONFDIR)
case $SYSCONF in
  "") ETC=/etc/iverd ;;
  "$CFG_PREFIX"/*) ETC=$PREFIX/${SYSCONF#"$CFG_PREFIX"/}/iverd ;;
  *) ETC=$SYSCONF/iverd ;;
esac
for f in "$PREFIX/sbin/iverd" "$PREFIX/bin/iverctl" "$UNITDIR/iverd.service" "$UNITDIR/iverd.socket" \
         "$SYSUSERS/iverd.conf" "$ETC/iverd.conf" "$ETC/policy.d/50-default.policy"; do
  [ -e "$R$f" ] || fail "not installed: $f"
done
[ -d "$R$ETC/policy.d" ] || fail "not installed: $ETC/policy.d/"
LIB=$(dirname "$(find "$R$PREFIX" -name 'libiver.so.0' | head -1)")
LIBDIR=${LIB#"$R"}
grep -q "^ExecStart=$PREFIX/sbin/iverd\$" "$R$UNITDIR/iverd.service" || fail "ExecStart does not follow the prefix"
grep -n '^Exec' "$R$UNITDIR/iverd.service"

step "systemd-analyze security --offline=true (installed iverd.service)"
SEC=$(systemd-analyze security --offline=true --no-pager "$R$UNITDIR/iverd.service" 2>&1 || true)
printf '%s\n' "$SEC" | grep -E '^✗|Overall' || true
SCORE=$(printf '%s\n' "$SEC" | sed -n 's/.*Overall exposure level for iverd.service: \([0-9.]*\).*/\1/p')
[ -n "$SCORE" ] || fail "no exposure score"
awk -v s="$SCORE" 'BEGIN { exit !(s <= 2.5) }' || fail "exposure $SCORE > 2.5"
echo "exposure $SCORE <= 2.5: OK"

mkdir -p "$S/units/iverd.service.d" "$S/etc-iverd" "$S/tree/base/bin" "$S/tree/extra"
cp -a "$R$ETC/." "$S/etc-iverd/"
rm -f "$S/etc-iverd/policy.d/50-default.policy"   # the test measures only its demo tree
cat > "$S/units/TEST.target" <<'EOF'
[Unit]
Description=iverd integration test target
DefaultDependencies=no
Wants=systemd-journald.socket systemd-journald.service
After=systemd-journald.socket systemd-journald.service
EOF
# No TPM in the container; the library lives below the scratch prefix.
cat > "$S/units/iverd.service.d/test.conf" <<EOF
[Service]
ExecStart=
ExecStart=$PREFIX/sbin/iverd --tpm none --on-access none --config /etc/iverd/iverd.conf --policy /etc/iverd/iverd.policy
Environment=LD_LIBRARY_PATH=$LIBDIR
EOF
# The demo tree: base/ measured from the start, extra/ only after the reload.
for i in 1 2 3 4 5; do printf 'config %d\n' "$i" > "$S/tree/base/conf$i"; done
head -c 262144 /dev/urandom > "$S/tree/base/bin/tool"; chmod 755 "$S/tree/base/bin/tool"
echo "added later" > "$S/tree/extra/new.bin"
cat > "$S/etc-iverd/iverd.policy" <<'EOF'
# test policy: the demo tree's base/ only
measure path=/srv/iverd-test/base/**
EOF

# ---- boot ----
step "boot systemd in a volatile nspawn container ($NAME)"
if [ -d /sys/fs/cgroup/unified ]; then          # hybrid hierarchy
  CG_DIRS=("/sys/fs/cgroup/systemd/$NAME" "/sys/fs/cgroup/unified/$NAME")
else                                             # unified hierarchy
  CG_DIRS=("/sys/fs/cgroup/$NAME")
fi
for d in "${CG_DIRS[@]}"; do mkdir -p "$d"; done
(
  for d in "${CG_DIRS[@]}"; do echo "$BASHPID" > "$d/cgroup.procs"; done
  SYSTEMD_SECCOMP=0 exec "$NSPAWN" --quiet -D / --volatile=yes \
    --bind-ro="$R$PREFIX:$PREFIX" --bind-ro="$R:/opt/iverd-root" --bind-ro="$S/units:/opt/iverd-test/units" \
    --bind="$S/etc-iverd:/etc/iverd" --bind="$S/tree:/srv/iverd-test" \
    --register=no --keep-unit -M "$NAME" --console=read-only \
    --setenv=SYSTEMD_UNIT_PATH="/opt/iverd-test/units:/opt/iverd-root$UNITDIR:" \
    -b -- --unit=TEST.target systemd.firstboot=off
) > "$S/console.log" 2>&1 < /dev/null &
NSPAWN_PID=$!
PID1=
for _ in $(seq 100); do
  for c in $(pgrep -P "$NSPAWN_PID" 2>/dev/null); do
    [ "$(cat /proc/$c/comm 2>/dev/null)" = systemd ] && PID1=$c
  done
  [ -n "$PID1" ] && break
  kill -0 "$NSPAWN_PID" 2>/dev/null || { cat "$S/console.log"; fail "nspawn exited"; }
  sleep 0.1
done
[ -n "$PID1" ] || { cat "$S/console.log"; fail "no systemd in the container"; }
C() { timeout 60 nsenter -t "$PID1" -m -p -- "$@"; }
ctl() { C env LD_LIBRARY_PATH="$LIBDIR" "$PREFIX/bin/iverctl" "$@"; }
state=
for _ in $(seq 150); do
  state=$(C systemctl is-system-running 2>/dev/null || true)
  case $state in running|degraded) break ;; esac
  sleep 0.1
done
echo "container PID 1 = host PID $PID1, system state: $state"
case $state in running|degraded) ;; *) cat "$S/console.log"; fail "container did not come up" ;; esac

step "systemd-analyze verify (inside the container) of every installed unit"
UNITS=$(cd "$R$UNITDIR" && ls | sed "s|^|/opt/iverd-root$UNITDIR/|")
C systemd-analyze verify --man=no $UNITS || fail "systemd-analyze verify"
echo "verify: clean ($(printf '%s\n' $UNITS | sed 's|.*/||' | paste -sd' '))"

# the iverd-stats group, from the installed sysusers.d fragment (the container's /etc is a tmpfs)
C systemd-sysusers "/opt/iverd-root$SYSUSERS/iverd.conf"
GID=$(C getent group iverd-stats | cut -d: -f3)
[ -n "$GID" ] || fail "systemd-sysusers did not create iverd-stats"
echo "group iverd-stats: gid $GID"

# ---- start ----
step "systemctl start iverd.socket iverd.service"
C systemctl start iverd.socket iverd.service || { C journalctl -u iverd --no-pager; fail "start"; }
C systemctl is-active iverd.socket iverd.service || fail "not active"
ctl settle --timeout 30 >/dev/null || fail "iverctl settle"
sleep 1.2                      # StatusText is refreshed every second
step "systemctl status iverd.service iverd.socket"
C systemctl status --no-pager --lines=0 iverd.service iverd.socket || true
STATUS=$(C systemctl show -P StatusText iverd.service)
echo "StatusText=$STATUS"
[[ $STATUS == "Watching "*" measurements" || $STATUS == "Initial scan"* ]] || fail "unexpected StatusText"
[[ $STATUS == *" 6 measurements" ]] || fail "expected 6 measurements in StatusText"

step "capabilities of the running daemon"
MAINPID=$(C systemctl show -P MainPID iverd.service)
C grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp):' "/proc/$MAINPID/status"
CAPEFF=$(C sed -n 's/^CapEff:[[:space:]]*//p' "/proc/$MAINPID/status")
command -v capsh >/dev/null && capsh --decode="$CAPEFF"
# DAC_READ_SEARCH(2) FOWNER(3) SYS_ADMIN(21) LEASE(28) AUDIT_WRITE(29)
[ "$CAPEFF" = 000000003020000c ] || fail "CapEff $CAPEFF, expected 000000003020000c"
[ "$(C sed -n 's/^CapBnd:[[:space:]]*//p' "/proc/$MAINPID/status")" = 000000003020000c ] || fail "CapBnd"
# capabilities are per thread: the hashing workers must have dropped them too
C sh -c "for t in /proc/$MAINPID/task/*; do printf '%s %s ' \${t##*/} \$(cat \$t/comm); grep CapEff \$t/status; done" | tee "$S/tasks"
[ "$(grep -vc 'CapEff:[[:space:]]*000000003020000c$' "$S/tasks")" = 0 ] || fail "a thread of iverd kept other capabilities"
grep -q "Using control socket passed by the service manager" <<<"$(C journalctl -u iverd --no-pager -o cat)" \
  || fail "the socket from iverd.socket was not used"

step "journalctl -u iverd"
C journalctl -u iverd --no-pager -o short-monotonic | grep -v 'configure loopback' || true
MEASURED_ID=5b8a2f3c1d6e4a0b9c7d8e9f0a1b2c3d
# Without -v the journal gets no entry per measurement (a host's first scan
# would write one per file): one summary per scan, and lines per violation.
step "journalctl -u iverd: no entry per measurement, one scan summary"
J=$(C journalctl -u iverd --no-pager -o json MESSAGE_ID=$MEASURED_ID)
N=$(grep -c '"IVERD_PATH"' <<<"$J" || true)
[ "$N" = 0 ] || fail "expected no per-measurement journal entries without -v, got $N"
C journalctl -u iverd --no-pager -o cat | grep -E '^Initial measurement: [0-9]+ files, 6 measured' \
  || fail "no 'Initial measurement: … 6 measured' summary in the journal"
step "iverctl list: bin/tool measured with its sha256"
TOOL_SUM=$(sha256sum "$S/tree/base/bin/tool" | cut -d' ' -f1)
ctl list /srv/iverd-test/base/bin/tool | grep -q "sha256:$TOOL_SUM .*measured" || fail "bin/tool not measured as sha256:$TOOL_SUM"

step "iverctl stats (root, through /run/iverd/iverd.sock)"
ctl stats | tee "$S/stats"
grep -Eq '^first_seen +6 ' "$S/stats" || fail "stats: first_seen != 6"
step "runtime and state directories (UMask=0077: the list is root's; the socket is iverd.socket's, 0666)"
C ls -la /run/iverd /var/lib/iverd
step "iverctl stats as uid 65534 with gid iverd-stats ($GID), then with gid 65534"
C setpriv --reuid=65534 --regid="$GID" --clear-groups env LD_LIBRARY_PATH="$LIBDIR" "$PREFIX/bin/iverctl" stats --json \
  | head -c 200; echo
rc=0; C setpriv --reuid=65534 --regid=65534 --clear-groups env LD_LIBRARY_PATH="$LIBDIR" "$PREFIX/bin/iverctl" stats \
  || rc=$?
echo "exit status $rc"
[ $rc = 5 ] || fail "a stranger was not refused (exit $rc, expected 5)"

# ---- reload ----
step "policy changed (extra/ added), systemctl reload iverd"
cat >> "$S/etc-iverd/iverd.policy" <<'EOF'
measure path=/srv/iverd-test/extra/**
EOF
grep -q 'extra/new.bin' <<<"$(C journalctl -u iverd --no-pager -o cat)" && fail "extra/new.bin measured before the reload"
C systemctl reload iverd.service || fail "reload"
ctl settle --timeout 30 >/dev/null
C journalctl -u iverd --no-pager -o short-monotonic | grep -E 'Reload|extra/new.bin' || true
ctl list /srv/iverd-test/extra/new.bin | grep -q "sha256:$(sha256sum "$S/tree/extra/new.bin" | cut -d' ' -f1) " \
  || fail "extra/new.bin not measured after the reload"
grep -q new.bin <<<"$(ctl list /srv/iverd-test/extra)" || fail "iverctl list misses extra/new.bin"
C systemctl is-active iverd.service >/dev/null || fail "not active after reload"
step "an invalid policy: reload fails, the running policy stays"
echo "measure bogus=1" >> "$S/etc-iverd/iverd.policy"
if C systemctl reload iverd.service 2>&1; then fail "reload with a broken policy succeeded"; fi
C systemctl is-active iverd.service || fail "iverd died on a bad reload"
C journalctl -u iverd --no-pager -o cat | grep 'keeping the running policy' | tail -1

# ---- stop ----
step "systemctl stop iverd.service iverd.socket"
C systemctl stop iverd.service iverd.socket
C systemctl show -p ActiveState -p Result -p ExecMainCode -p ExecMainStatus iverd.service | tee "$S/show"
grep -q '^Result=success' "$S/show" || fail "stop not clean"
grep -q '^ExecMainStatus=0' "$S/show" || fail "iverd exit status not 0"
C journalctl -u iverd --no-pager -o short-monotonic | tail -3
C test ! -e /run/iverd/iverd.sock || fail "socket left after stopping iverd.socket"

step "teardown"
kill -TERM "$NSPAWN_PID"
for _ in $(seq 100); do kill -0 "$NSPAWN_PID" 2>/dev/null || break; sleep 0.1; done
wait "$NSPAWN_PID" 2>/dev/null || true
NSPAWN_PID=
echo "container stopped"
echo; echo "PASS"
