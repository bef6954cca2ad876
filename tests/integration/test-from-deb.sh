#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# iverctl policy export --keylime --from-deb (issue 21 item 3): a Keylime
# runtime policy from Debian packages' own archives, no daemon involved.
#   1  generated packages (dpkg-deb --build, data.tar.gz/.xz/.zst/uncompressed,
#      with and without md5sums): every digest equals sha256sum of the file
#      dpkg-deb -x unpacks (a symlink: of its target string, as iverd lists
#      it; a hard link: of its file), names as installed under --root in the
#      kernel form; --algo sha1/sha512
#   2  --base: v1's policy + v2's package = the union per path (changed file:
#      both digests, removed file: v1's, new file: v2's); a base of another
#      algorithm or not a policy is refused
#   3  damaged packages (truncated at random points, one byte flipped inside
#      the data member), a .deb without a data member, files that are not
#      .deb: exit 1, an error naming the file, nothing written (an existing
#      --out file unchanged)
#   4  a real Debian package (hello, from apt; else one from apt's cache):
#      every digest = sha256sum of dpkg-deb -x, the head of the policy printed
#   5  usage errors: exit 2
# Randomised (cut and flip offsets): seed printed, IVER_TEST_SEED replays.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-fleet.sh
source "$here/lib-fleet.sh"
for t in dpkg-deb python3 sha256sum; do command -v $t >/dev/null || fail "$t not installed"; done
fleet_init from-deb
SEED=${IVER_TEST_SEED:-$RANDOM}
echo "seed $SEED (IVER_TEST_SEED=$SEED replays it)"

# make_pkg DIR VERSION [md5sums]: a package of 30-odd files under /opt/ivt
make_pkg() {
        local p=$1 v=$2 md5=${3:-}
        rm -rf "$p"
        mkdir -p "$p/DEBIAN" "$p/opt/ivt/bin" "$p/opt/ivt/etc/conf.d" "$p/opt/ivt/share"
        printf 'Package: ivt\nVersion: %s\nArchitecture: all\nMaintainer: t <t@example.org>\nDescription: test\n' \
                "$v" >"$p/DEBIAN/control"
        for i in $(seq 1 20); do printf 'key%d=%s\n' "$i" "$v" >"$p/opt/ivt/etc/conf.d/c$i.conf"; done
        python3 -c "import random,sys; random.seed('$SEED$v'); sys.stdout.buffer.write(random.randbytes(600000))" \
                >"$p/opt/ivt/bin/tool"
        printf '#!/bin/sh\necho %s\n' "$v" >"$p/opt/ivt/bin/script"
        : >"$p/opt/ivt/share/empty"
        echo "space $v" >"$p/opt/ivt/share/with space.txt"
        echo "tab" >"$p/opt/ivt/share/with	tab"
        echo "utf8" >"$p/opt/ivt/share/caf$(printf '\xc3\xa9')"
        ln -s tool "$p/opt/ivt/bin/tool-link"
        ln -s /opt/ivt/etc/conf.d "$p/opt/ivt/etc/abs-link"
        ln "$p/opt/ivt/bin/tool" "$p/opt/ivt/bin/tool-hard"
        if [ "$v" = 1 ]; then echo old >"$p/opt/ivt/share/removed-in-v2"; else echo new >"$p/opt/ivt/share/added-in-v2"; fi
        if [ -n "$md5" ]; then (cd "$p" && find opt -type f -print0 | xargs -0 md5sum >DEBIAN/md5sums); fi
        return 0
}

# check_policy POLICY DEB ROOT ALGO: the policy's digests are exactly those
# of the files dpkg-deb -x unpacks, named as installed under ROOT
check_policy() {
        local x=$D/x
        rm -rf "$x"; mkdir "$x"
        dpkg-deb -x "$2" "$x"
        python3 - "$1" "$x" "$3" "$4" <<'EOF'
import hashlib, json, os, sys
pol, x, root, algo = sys.argv[1], sys.argv[2], sys.argv[3].rstrip("/"), sys.argv[4]
def kform(n):  # the kernel form, for the names used here: controls and space become '_'
    return "".join("_" if ord(c) <= 0x20 or ord(c) == 0x7f else c for c in n)
want = {}
for d, dirs, files in os.walk(x):
    for f in files + [e for e in dirs if os.path.islink(os.path.join(d, e))]:
        p = os.path.join(d, f)
        data = os.readlink(p).encode() if os.path.islink(p) else open(p, "rb").read()
        want[kform(root + p[len(x):])] = [hashlib.new(algo, data).hexdigest()]
got = json.load(open(pol))["digests"]
if got != want:
    for k in sorted(set(got) | set(want)):
        if got.get(k) != want.get(k):
            print(f"  {k!r}: policy {got.get(k)}, unpacked {want.get(k)}")
    sys.exit(f"FAIL: {pol}: digests differ from the unpacked package")
print(f"  {len(want)} paths ({sum(os.path.islink(os.path.join(d, f)) for d, ds, fs in os.walk(x) for f in fs + ds)} symlinks): each digest = {algo} of the unpacked file")
EOF
}

step "1: generated packages, every compression, with and without md5sums"
make_pkg "$D/p1" 1 md5
make_pkg "$D/p1n" 1
for z in gzip xz zstd none; do
        dpkg-deb -Z$z --root-owner-group --build "$D/p1" "$D/v1-$z.deb" >/dev/null
        dpkg-deb -Z$z --root-owner-group --build "$D/p1n" "$D/v1n-$z.deb" >/dev/null
        for deb in "$D/v1-$z.deb" "$D/v1n-$z.deb"; do
                ctl policy export --keylime --from-deb --root /srv/ivt/ --out "$D/pol.json" "$deb" 2>"$D/err"
                cat "$D/err"
                check_policy "$D/pol.json" "$deb" /srv/ivt sha256
        done
        grep -q "checked against the packages' md5sums" "$D/err" || fail "no md5sums summary"
done
grep -q '0 checked against' "$D/err" || fail "a package without md5sums reported md5 checks"
for a in sha1 sha512; do
        ctl policy export --keylime --from-deb --algo $a --out "$D/pol-$a.json" "$D/v1-xz.deb" 2>/dev/null
        check_policy "$D/pol-$a.json" "$D/v1-xz.deb" "" $a
done
python3 - "$D/pol.json" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
assert set(p) == {"meta", "release", "digests", "excludes", "keyrings", "ima", "ima-buf", "verification-keys"}, set(p)
assert p["meta"]["version"] == 1 and p["ima"]["log_hash_alg"] == "sha1" and p["excludes"] == []
print("  Keylime runtime policy schema (version 1)")
EOF

step "2: --base: v1's policy, v2's package: the union per path"
make_pkg "$D/p2" 2 md5
dpkg-deb -Zxz --root-owner-group --build "$D/p2" "$D/v2.deb" >/dev/null
ctl policy export --keylime --from-deb --root /srv/ivt --out "$D/base.json" "$D/v1-xz.deb" 2>/dev/null
python3 - "$D/base.json" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1])); p["excludes"] = ["^/keep/me$"]
json.dump(p, open(sys.argv[1], "w"))
EOF
ctl policy export --keylime --from-deb --root /srv/ivt --base "$D/base.json" --out "$D/merged.json" "$D/v2.deb"
ctl policy export --keylime --from-deb --root /srv/ivt --out "$D/v2.json" "$D/v2.deb" 2>/dev/null
python3 - "$D/base.json" "$D/v2.json" "$D/merged.json" <<'EOF'
import json, sys
b, v2, m = (json.load(open(f)) for f in sys.argv[1:])
want = {k: list(b["digests"].get(k, [])) for k in set(b["digests"]) | set(v2["digests"])}
for k, ds in v2["digests"].items():
    want[k] += [d for d in ds if d not in want[k]]
assert m["digests"] == want, "merged digests are not the union"
assert m["excludes"] == ["^/keep/me$"], "the base's other fields must be kept"
r = "/srv/ivt/opt/ivt"
assert len(m["digests"][r + "/bin/tool"]) == 2 and len(m["digests"][r + "/etc/conf.d/c1.conf"]) == 2
assert m["digests"][r + "/share/removed-in-v2"] == b["digests"][r + "/share/removed-in-v2"]
assert m["digests"][r + "/share/added-in-v2"] == v2["digests"][r + "/share/added-in-v2"]
assert len(m["digests"][r + "/share/empty"]) == 1
print(f"  {len(m['digests'])} paths: changed files carry v1's and v2's digest, removed v1's, added v2's")
EOF
echo '{"digests": {"/a": ["abc"]}}' >"$D/bad-base.json"
echo 'not json' >"$D/notjson.json"
for b in "$D/pol-sha1.json" "$D/bad-base.json" "$D/notjson.json"; do
        rc=0; ctl policy export --keylime --from-deb --base "$b" --out "$D/none.json" "$D/v2.deb" 2>"$D/err" || rc=$?
        cat "$D/err"
        [ $rc -eq 1 ] || fail "base $b: exit $rc, expected 1"
        grep -q "base policy $b" "$D/err" || fail "the error does not name the base policy"
        [ ! -e "$D/none.json" ] || fail "a policy was written from a refused base"
done

step "3: damaged packages are refused, nothing written"
echo "previous" >"$D/keep.json"
refuse() { # deb what
        local rc=0
        ctl policy export --keylime --from-deb --out "$D/keep.json" "$D/v1-xz.deb" "$1" 2>"$D/err" || rc=$?
        printf '  %-34s exit %d: %s\n' "$2" $rc "$(grep -m1 '^iverctl policy export:' "$D/err" || true)"
        [ $rc -eq 1 ] || fail "$2: exit $rc, expected 1"
        grep -q "^iverctl policy export: $1: " "$D/err" || fail "$2: the error does not name the file"
        [ "$(cat "$D/keep.json")" = previous ] || fail "$2: the --out file was written"
}
# data_member DEB: start and end offsets of the data member's content
data_member() {
        python3 - "$1" <<'EOF'
import sys
b = open(sys.argv[1], "rb").read(); off = 8
while off < len(b):
    name, size = b[off:off + 16].decode().strip(), int(b[off + 48:off + 58])
    if name.startswith("data.tar"):
        print(off + 60, off + 60 + size); break
    off += 60 + size + (size & 1)
EOF
}
RANDOM=$SEED
for z in gzip xz zstd none; do
        # compressed: no md5sums, the compression's own check must catch it;
        # uncompressed: only md5sums can, so that package has them
        deb=$D/v1n-$z.deb; [ $z = none ] && deb=$D/v1-$z.deb
        read -r start end < <(data_member "$deb")
        for cut in 64 $start $((start + 100)) $((start + (end - start) / 2)) $((end - 1)); do
                head -c "$cut" "$deb" >"$D/bad.deb"
                refuse "$D/bad.deb" "$z: cut at $cut (data $start..$end)"
        done
        for _ in 1 2 3; do
                if [ $z = none ]; then # inside the big file's content
                        lo=$(python3 -c "import sys; print(open(sys.argv[1], 'rb').read().find(open(sys.argv[2], 'rb').read(64)))" \
                                "$deb" "$D/p1/opt/ivt/bin/tool")
                        [ "$lo" -gt 0 ] || fail "the big file is not in $deb"
                        pos=$((lo + (RANDOM * 32768 + RANDOM) % 590000))
                else
                        pos=$((start + 32 + (RANDOM * 32768 + RANDOM) % (end - start - 32)))
                fi
                cp "$deb" "$D/bad.deb"
                python3 -c "import sys; f = open(sys.argv[1], 'r+b'); f.seek(int(sys.argv[2])); c = f.read(1); f.seek(int(sys.argv[2])); f.write(bytes([c[0] ^ 0x10]))" "$D/bad.deb" "$pos"
                refuse "$D/bad.deb" "$z: byte $pos flipped"
        done
done
python3 - "$D/v1-xz.deb" "$D/nodata.deb" <<'EOF'
import sys
b = open(sys.argv[1], "rb").read(); off = 8; out = b[:8]
while off < len(b):
    name, size = b[off:off + 16].decode().strip(), int(b[off + 48:off + 58])
    if not name.startswith("data.tar"):
        out += b[off:off + 60 + size + (size & 1)]
    off += 60 + size + (size & 1)
open(sys.argv[2], "wb").write(out)
EOF
refuse "$D/nodata.deb" "no data member"
echo "hello" >"$D/text.deb"
refuse "$D/text.deb" "a text file"
tar -C "$D/p1" -cf "$D/tar.deb" opt
refuse "$D/tar.deb" "a tar archive"
refuse "$D/missing.deb" "a missing file"

step "4: a real Debian package"
real=
if (cd "$D" && apt-get download hello >/dev/null 2>&1); then
        real=$(ls "$D"/hello_*.deb)
else
        real=$(ls -S /var/cache/apt/archives/*.deb 2>/dev/null | tail -1 || true)
fi
[ -n "$real" ] || fail "no real package: apt-get download hello failed and apt's cache is empty"
ctl policy export --keylime --from-deb --out "$D/real.json" "$real"
check_policy "$D/real.json" "$real" "" sha256
echo "  policy export --keylime --from-deb $(basename "$real") (head):"
head -16 "$D/real.json" | sed 's/^/    /'

step "5: usage"
for args in "--from-deb" "--base $D/base.json" "--root /x" "--from-deb --root rel $D/v2.deb" \
        "--from-deb --algo md4 $D/v2.deb"; do
        rc=0
        # shellcheck disable=SC2086
        ctl policy export --keylime $args >/dev/null 2>&1 || rc=$?
        [ $rc -eq 2 ] || fail "policy export --keylime $args: exit $rc, expected 2"
done
echo "  bad command lines: exit 2"

echo
echo "PASS"
