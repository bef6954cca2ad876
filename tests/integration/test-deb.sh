#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The Debian package: configure a packaging build (-DCMAKE_INSTALL_PREFIX=/usr,
# as a distribution would), `cpack -G DEB`, then
#   - dpkg-deb -I / -c: Depends names the package of every library the
#     programs link to directly; conffiles; the file list equals what
#     `cmake --install` puts into a DESTDIR, and has the expected layout;
#   - install it into a scratch root (dpkg --root, maintainer scripts
#     chrootless: they do nothing outside a running systemd), `dpkg -L`;
#   - start the installed iverd (from the scratch root, LD_LIBRARY_PATH) on a
#     small tree with the installed configuration: iverctl stats, stop;
#   - a locally edited conffile survives reinstalling; purge leaves nothing.
# Needs root, dpkg-deb and cpack (cmake). Leaves nothing behind.
set -euo pipefail

SRC=${IVER_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
for t in cpack dpkg dpkg-deb readelf; do
  command -v $t >/dev/null || { echo "SKIP: $t not found"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "FAIL: needs root"; exit 1; }

S=$(mktemp -d /tmp/iverd-deb.XXXXXX)
IVERD_PID=
cleanup() {
  local rc=$?
  set +e
  trap - EXIT INT TERM
  if [ -n "$IVERD_PID" ] && kill -0 "$IVERD_PID" 2>/dev/null; then
    kill -TERM "$IVERD_PID"; wait "$IVERD_PID" 2>/dev/null
  fi
  rm -rf "$S"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
step() { printf '\n== %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*"; exit 1; }

MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)

step "packaging build: cmake -DCMAKE_INSTALL_PREFIX=/usr -DBUILD_TESTING=OFF"
B=$S/build
cmake -S "$SRC" -B "$B" -DCMAKE_INSTALL_PREFIX=/usr -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  > "$S/configure.log" 2>&1 || { cat "$S/configure.log"; fail "configure"; }
cmake --build "$B" -j"$(nproc)" > "$S/build.log" 2>&1 || { tail -40 "$S/build.log"; fail "build"; }
LIBDIR=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:PATH=//p' "$B/CMakeCache.txt")
UNITDIR=$(sed -n 's/^IVER_SYSTEMD_UNITDIR:PATH=//p' "$B/CMakeCache.txt")
SYSUSERS=$(sed -n 's/^IVER_SYSUSERSDIR:PATH=//p' "$B/CMakeCache.txt")
echo "libdir $LIBDIR, units $UNITDIR, sysusers $SYSUSERS"
[ "$LIBDIR" = "lib/$MA" ] || fail "libdir is $LIBDIR, expected lib/$MA"

step "cpack -G DEB"
(cd "$B" && cpack -G DEB -B "$S/pkg") > "$S/cpack.log" 2>&1 || { cat "$S/cpack.log"; fail "cpack"; }
DEB=$(ls "$S"/pkg/*.deb)
[ -f "$DEB" ] || fail "no .deb produced"
echo "${DEB##*/}"

step "dpkg-deb -I"
dpkg-deb -I "$DEB"
dpkg-deb -f "$DEB" Depends > "$S/depends"
dpkg-deb -e "$DEB" "$S/control"
for f in /etc/iverd/iverd.conf /etc/iverd/policy.d/50-default.policy; do
  grep -qx "$f" "$S/control/conffiles" || fail "$f is not a conffile"
done
# every library iverd, iverctl and libiver need directly comes from a package in Depends
ldconfig -p > "$S/ldconfig"
: > "$S/needs"
for elf in "$B/iverd" "$B/iverctl" "$B/lib/libiver.so.0"; do
  for so in $(readelf -d "$elf" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'); do
    case $so in libiver.so.*|ld-linux*|linux-vdso*) continue ;; esac
    path=$(awk -v s="$so" '$1 == s && /x86-64/ { print $NF; exit }' "$S/ldconfig")
    [ -n "$path" ] || path=$(awk -v s="$so" '$1 == s { print $NF; exit }' "$S/ldconfig")
    [ -n "$path" ] || fail "cannot find $so"
    pkg=$( { dpkg -S "$(readlink -f "$path")" 2>/dev/null || dpkg -S "$path" 2>/dev/null || true; } | sed -n '1s/:.*//p')
    [ -n "$pkg" ] || fail "no package owns $path"
    grep -Eq "(^|, )$pkg( |,|$)" "$S/depends" || fail "${elf##*/} needs $so from $pkg, which is not in Depends"
    echo "  $so ($pkg) needed by ${elf##*/}: in Depends" >> "$S/needs"
  done
done
sort -u "$S/needs"

step "dpkg-deb -c"
dpkg-deb -c "$DEB"
dpkg-deb -c "$DEB" | awk '{ print $6 }' | sed -e 's|^\./|/|' -e 's|/$||' | grep -v '^$' | sort > "$S/deb.list"

step "layout"
expect=(
  /usr/sbin/iverd /usr/bin/iverctl
  "/usr/$LIBDIR/libiver.so.0" "/usr/$LIBDIR/libiver.so" "/usr/$LIBDIR/pkgconfig/iver.pc"
  /usr/include/iver/iver.h
  "$UNITDIR/iverd.service" "$UNITDIR/iverd.socket" "$SYSUSERS/iverd.conf"
  /etc/iverd/iverd.conf /etc/iverd/policy.d/50-default.policy /etc/iverd/policy.d
  /usr/share/man/man8/iverd.8 /usr/share/man/man1/iverctl.1
  /usr/share/man/man5/iverd.conf.5 /usr/share/man/man5/iverd.policy.5
  /usr/share/bash-completion/completions/iverctl
)
for f in "${expect[@]}"; do grep -qx "$f" "$S/deb.list" || fail "the .deb lacks $f"; done
grep -q "^/usr/$LIBDIR/libiver.so.0\.[0-9.]*$" "$S/deb.list" || fail "the .deb lacks libiver.so.0.*"
echo "expected paths: all present"
# the same files as `cmake --install` into a DESTDIR
DESTDIR=$S/destdir cmake --install "$B" > /dev/null
(cd "$S/destdir" && find . -mindepth 1 | sed 's|^\.||' | sort) > "$S/install.list"
# directories the package owns that are parents of installed files are implied; compare files and links,
# and the only empty directory (policy.d)
(cd "$S/destdir" && find . \( -type f -o -type l -o \( -type d -empty \) \) | sed 's|^\.||' | sort) > "$S/install.files"
while read -r f; do [ -d "$S/destdir$f" ] && [ -n "$(ls -A "$S/destdir$f")" ] && continue; echo "$f"; done \
  < "$S/deb.list" | sort > "$S/deb.files"
if ! diff -u "$S/install.files" "$S/deb.files"; then fail "the .deb and cmake --install differ"; fi
echo "the .deb holds exactly what cmake --install installs ($(wc -l < "$S/install.files") files and links)"
grep -q "^prefix=/usr$" "$S/destdir/usr/$LIBDIR/pkgconfig/iver.pc" || fail "iver.pc: prefix is not /usr"
grep -q "^ExecStart=/usr/sbin/iverd$" "$S/destdir$UNITDIR/iverd.service" || fail "unit: ExecStart"

step "install into a scratch root: dpkg --root"
R=$S/root
mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates" "$R/var/lib/dpkg/triggers"
: > "$R/var/lib/dpkg/status"; : > "$R/var/lib/dpkg/available"
D() { dpkg --root="$R" --log=/dev/null --force-script-chrootless --force-depends "$@"; }
D -i "$DEB" 2>&1 | grep -v 'dependency problems\|depends on\|not installed\|^$' || true
dpkg --root="$R" -s iverd | grep -E '^(Package|Status|Version):'
grep -q '^Status: install ok installed' <<<"$(dpkg --root="$R" -s iverd)" || fail "not installed"
step "dpkg --root -L iverd"
dpkg --root="$R" -L iverd | tee "$S/dpkg-L"
sed 's|/$||' "$S/dpkg-L" | grep -v '^/\.$' | sort > "$S/dpkg-L.sorted"
diff -u <(sort "$S/deb.list") "$S/dpkg-L.sorted" >/dev/null || {
  diff -u <(sort "$S/deb.list") "$S/dpkg-L.sorted"; fail "dpkg -L differs from the package"; }

step "run the installed programs"
export LD_LIBRARY_PATH=$R/usr/$LIBDIR
LDD=$(ldd "$R/usr/sbin/iverd")
grep libiver <<<"$LDD"
grep -q "$R/usr/$LIBDIR/libiver.so.0" <<<"$LDD" || fail "installed iverd does not use the installed libiver"
"$R/usr/sbin/iverd" --help | head -3
"$R/usr/bin/iverctl" --help | head -3
mkdir -p "$S/tree" "$S/run" "$S/state"
printf 'one\n' > "$S/tree/a"; head -c 100000 /dev/urandom > "$S/tree/b"
printf 'measure path=%s/tree/**\n' "$S" > "$S/test.policy"
"$R/usr/bin/iverctl" policy check "$S/test.policy"
IVERD_LOG_STDERR=1 "$R/usr/sbin/iverd" --on-access none --config "$R/etc/iverd/iverd.conf" --policy "$S/test.policy" \
  --runtime-dir "$S/run" --state-dir "$S/state" --tpm none > "$S/iverd.log" 2>&1 &
IVERD_PID=$!
export IVERD_SOCKET=$S/run/iverd.sock
for _ in $(seq 100); do [ -S "$IVERD_SOCKET" ] && break; kill -0 $IVERD_PID 2>/dev/null || break; sleep 0.05; done
"$R/usr/bin/iverctl" settle --timeout 20 >/dev/null || { cat "$S/iverd.log"; fail "settle"; }
"$R/usr/bin/iverctl" list "$S/tree"
"$R/usr/bin/iverctl" stats | grep -E '^(checks|first_seen|bytes_hashed) '
grep -q "$(sha256sum "$S/tree/b" | cut -d' ' -f1)" <<<"$("$R/usr/bin/iverctl" list "$S/tree")" || fail "digest of tree/b"
kill -TERM $IVERD_PID; wait $IVERD_PID || fail "iverd exit status $?"
IVERD_PID=
cat "$S/iverd.log"
unset LD_LIBRARY_PATH IVERD_SOCKET

step "a locally edited conffile survives reinstalling"
echo "# local change" >> "$R/etc/iverd/iverd.conf"
D --force-confold -i "$DEB" > /dev/null 2>&1 || true
tail -1 "$R/etc/iverd/iverd.conf"
grep -q '^# local change$' "$R/etc/iverd/iverd.conf" || fail "the edited conffile was replaced"

step "dpkg --root --purge iverd"
D --purge iverd 2>&1 | grep -v '^$' || true
left=$(cd "$R" && find . -mindepth 1 -not -path './var/lib/dpkg*' -not -path './var/lib' -not -path './var' | sort)
[ -z "$left" ] || { echo "$left"; fail "files left after purge"; }
echo "nothing left outside the dpkg database"
echo; echo PASS
