#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A prefixed install stays in its prefix (issue 16, item 6), as a new user
# would try it: a build configured for prefix P1 (no tests), then
# `cmake --install --prefix P2`. Every installed file must be below P2
# (configuration in P2/etc/iverd, units in P2/lib/systemd/system, sysusers in
# P2/lib/sysusers.d), nothing may appear in the host's /etc/iverd or systemd
# directories, the units' ExecStart follows P2, and iverd reads its default
# configuration from the sysconfdir it was configured for (P1/etc/iverd).
# A /usr build (the .deb) keeps /etc and systemd's directories: test-deb.sh.
set -euo pipefail
SRC=${IVER_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
fail() { echo "FAIL: $*"; exit 1; }
step() { echo; echo "== $*"; }
S=$(mktemp -d /tmp/iver-test-prefix.XXXXXX)
trap 'rm -rf "$S"' EXIT
trap 'exit 1' INT TERM HUP
P1=$S/configured P2=$S/installed B=$S/build

HOST_DIRS=(/etc/iverd /lib/systemd/system /usr/lib/systemd/system /usr/lib/sysusers.d /usr/local/etc/iverd)
host_state() { for d in "${HOST_DIRS[@]}"; do if [ -e "$d" ]; then find "$d" -maxdepth 1 -name '*iverd*' -printf '%p %T@\n'; fi; done | sort; }
host_state >"$S/host.before"

step "configure for $P1 (-DBUILD_TESTING=OFF) and build"
cmake -S "$SRC" -B "$B" -DCMAKE_INSTALL_PREFIX="$P1" -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        >"$S/configure.log" 2>&1 || { tail -20 "$S/configure.log"; fail "configure"; }
nice cmake --build "$B" -j2 --target iverd iverctl iver >"$S/build.log" 2>&1 || { tail -30 "$S/build.log"; fail "build"; }
grep -E "^IVER_(SYSCONFDIR|SYSTEMD_UNITDIR|SYSUSERSDIR):" "$B/CMakeCache.txt"

step "cmake --install --prefix $P2"
cmake --install "$B" --prefix "$P2" >"$S/install.log" 2>&1 || { cat "$S/install.log"; fail "install"; }
out=$(grep -E "^-- (Installing|Up-to-date|Keeping): " "$S/install.log" | sed -E 's/^-- [A-Za-z-]+: //' | grep -v "^$P2/" || true)
[ -z "$out" ] || { echo "$out"; fail "files installed outside $P2"; }
echo "$(grep -c '^-- Installing' "$S/install.log") files, every one below $P2"
for f in sbin/iverd bin/iverctl etc/iverd/iverd.conf etc/iverd/policy.d/50-default.policy \
         lib/systemd/system/iverd.service lib/systemd/system/iverd.socket lib/sysusers.d/iverd.conf; do
        [ -e "$P2/$f" ] || fail "not installed: $P2/$f"
done
grep -q "^ExecStart=$P2/sbin/iverd" "$P2/lib/systemd/system/iverd.service" || fail "ExecStart does not follow $P2"
host_state >"$S/host.after"
diff -u "$S/host.before" "$S/host.after" || fail "the install touched the host's /etc or systemd directories"
echo "host /etc/iverd, systemd unit and sysusers directories untouched"

step "iverd reads the sysconfdir it was configured for"
"$B/iverd" --help 2>&1 | grep -F "$P1/etc/iverd/iverd.conf" || fail "iverd --help does not name $P1/etc/iverd/iverd.conf"
mkdir -p "$P1/etc/iverd"
printf '[Measure]\nWorkers=banana\n' >"$P1/etc/iverd/iverd.conf"
msg=$("$B/iverd" --policy /dev/null --tpm none --runtime-dir "$S/run" --state-dir "$S/state" --socket "$S/s.sock" 2>&1 || true)
echo "$msg" | head -3
[[ $msg == *"$P1/etc/iverd/iverd.conf"* ]] || fail "iverd did not read $P1/etc/iverd/iverd.conf"

step "iverctl finds the socket iverd.conf names (Socket=), with no --socket or \$IVERD_SOCKET"
mkdir -p "$S/tree"
printf '[Paths]\nRuntimeDirectory=%s/run\nStateDirectory=%s/state\nSocket=%s/conf.sock\n' "$S" "$S" "$S" \
        >"$P1/etc/iverd/iverd.conf"
printf 'measure path="%s/tree/**"\n' "$S" >"$S/p.policy"
IVERD_LOG_STDERR=1 "$B/iverd" --policy "$S/p.policy" --tpm none >"$S/iverd.log" 2>&1 &
ipid=$!
trap 'kill $ipid 2>/dev/null || true; wait $ipid 2>/dev/null || true; rm -rf "$S"' EXIT
for _ in $(seq 100); do [ -S "$S/conf.sock" ] && break; sleep 0.05; done
[ -S "$S/conf.sock" ] || { cat "$S/iverd.log"; fail "iverd did not create the socket iverd.conf names"; }
env -u IVERD_SOCKET "$B/iverctl" status >/dev/null || fail "iverctl did not find the daemon at iverd.conf's Socket="
echo "iverctl status answered through $S/conf.sock"
kill $ipid; wait $ipid 2>/dev/null || true

echo
echo "PASS"
