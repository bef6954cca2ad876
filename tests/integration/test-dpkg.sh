#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# dpkg in a measured tree (issue 21 item 5, the dpkg part). Real dpkg, real
# iverd with swtpm, ext4 on a loop device (its image on /dev/shm for speed);
# dpkg works on a private root (--instdir, a fresh --admindir, its own
# --log): the host's dpkg database is never touched. Two generated packages:
#   small  40 files (v1; v2 changes 10, adds 5, removes 5), data.tar.xz
#   large  5,000 files / 200 MB (v2 changes 100, adds 50, removes 50), data.tar.zst
# Each is installed (v1), upgraded (v2), removed, installed again (v2), and
# then one of its files is changed by hand. After each step, `iverctl settle`, then:
#   transient  no name in the list under the tree ends in .dpkg-new,
#              .dpkg-tmp, .dpkg-old (dpkg unpacks as NAME.dpkg-new, syncs, renames)
#   final      every file and symlink installed now is listed under its name
#              with its current digest
#   violations no violation entry for the tree
#   hashed     bytes iverd hashed in the step, against the package's size (dpkg
#              rewrites every file it unpacks: a file is hashed once, not again
#              at its rename)
#   verdict    a quote, checked by the Keylime-style verifier (keylime_verify.py)
#              against the policy from `iverctl policy export --keylime
#              --from-deb` (v1's; from the upgrade on, v2's with --base v1's,
#              the upgrade window of keylime#1515): ACCEPTED; after the hand
#              change: REJECTED, naming that file alone
# Prints the table (IVER_EVIDENCE_DIR: also saved there). Needs root, swtpm,
# dpkg-deb, a loop device.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-mounts.sh
source "$here/lib-mounts.sh"
BUILD=${IVER_BUILD_DIR:-/work/main/build}
VERIFY=$here/keylime_verify.py
PCR=23
for b in "$BUILD/iverd" "$BUILD/iverctl"; do [[ -x $b ]] || { echo "FAIL: $b not built"; exit 1; }; done
for t in dpkg dpkg-deb python3 sha256sum; do command -v $t >/dev/null || { echo "FAIL: $t not installed"; exit 1; }; done
command -v swtpm >/dev/null || { echo "SKIP: swtpm not installed"; exit 77; }

SHM=$(mktemp -d /dev/shm/iver-dpkg.XXXXXX)
export IVER_IMAGE_DIR=$SHM IVER_IMAGE_MB=1600
iver_mounts_init
W=$IVER_WORKDIR
PIDS=()
stop_pid() { local p=$1; kill "$p" 2>/dev/null || return 0
        for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || return 0; sleep 0.1; done; kill -9 "$p" 2>/dev/null || true; }
test_cleanup() {
        local rc=$? i
        set +e
        for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do stop_pid "${PIDS[i]}"; done
        [ "$rc" = 0 ] || tail -20 "$W/iverd.log" 2>/dev/null
        (exit "$rc")
        iver_mounts_cleanup
        rm -rf "$SHM"
}
trap test_cleanup EXIT
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
die() { echo "FAIL: $*"; exit 1; }
step() { echo; echo "== $*"; }
export IVERD_SOCKET=$W/run/iverd.sock TSS2_LOG=all+none
ctl() { "$BUILD/iverctl" "$@"; }
SEED=${IVER_TEST_SEED:-$RANDOM}
echo "seed $SEED (IVER_TEST_SEED=$SEED replays it)"

iver_mount ext4
T=$IVER_MNT/root
mkdir -p "$T/opt" "$W/run" "$W/state" "$W/tpm" "$W/admin/updates" "$W/admin/info" "$SHM/pkg"
: >"$W/admin/status"
dp() { dpkg --instdir="$T" --admindir="$W/admin" --log="$W/dpkg.log" "$@" >>"$W/dpkg.out" 2>&1 || {
        tail -20 "$W/dpkg.out"; die "dpkg $*"; }; }

step "build the packages (v1, v2 of each)"
# gen.py DIR NAME VERSION NFILES TOTAL_BYTES NCHANGE NADD NREMOVE
cat >"$W/gen.py" <<'EOF'
import os, random, sys
out, name, ver, n, total, nchg, nadd, nrm = sys.argv[1], sys.argv[2], int(sys.argv[3]), *map(int, sys.argv[4:9])
seed = int(os.environ["SEED"])
base = os.path.join(out, "opt", "ivertest-" + name)
os.makedirs(os.path.join(out, "DEBIAN"))
open(os.path.join(out, "DEBIAN", "control"), "w").write(
    f"Package: ivertest-{name}\nVersion: {ver}\nArchitecture: all\nMaintainer: t <t@example.org>\n"
    f"Description: iverd dpkg test package\n")
size = total // n
files = [f"f{i:05d}" for i in range(n)]
if ver == 2:
    files = files[nrm:] + [f"g{i:05d}" for i in range(nadd)]
for i, f in enumerate(files):
    sub = "bin" if i % 4 == 0 else "lib/d%02d" % (i % 50) if n > 100 else "lib"
    d = os.path.join(base, sub)
    os.makedirs(d, exist_ok=True)
    changed = ver == 2 and f.startswith("f") and int(f[1:]) < nrm + nchg
    rnd = random.Random(f"{seed}/{name}/{f}/{2 if changed else 1}")
    p = os.path.join(d, f)
    with open(p, "wb") as fh:
        if sub == "bin":
            fh.write(b"#!/bin/sh\necho %s %s\n" % (f.encode(), str(2 if changed else 1).encode()))
        fh.write(rnd.randbytes(size))
    if sub == "bin":
        os.chmod(p, 0o755)
os.symlink("bin", os.path.join(base, "sbin"))
EOF
mk() { # name nfiles bytes nchange nadd nremove compression
        local v
        for v in 1 2; do
                SEED=$SEED python3 "$W/gen.py" "$SHM/pkg/$1-$v" "$1" $v "$2" "$3" "$4" "$5" "$6"
                dpkg-deb -Z"$7" -z1 --root-owner-group --build "$SHM/pkg/$1-$v" "$SHM/$1-$v.deb" >/dev/null
                rm -rf "$SHM/pkg/$1-$v"
        done
        echo "  ivertest-$1: $(du -h "$SHM/$1-1.deb" | cut -f1) ($(dpkg-deb -c "$SHM/$1-1.deb" | grep -c '^-') files in v1, $(dpkg-deb -c "$SHM/$1-2.deb" | grep -c '^-') in v2)"
}
t0=$SECONDS
mk small 40 400000 10 5 5 xz
mk large 5000 200000000 100 50 50 zstd
echo "  built in $((SECONDS - t0)) s"

step "swtpm, iverd measuring $T/opt"
swtpm socket --tpm2 --server type=unixio,path="$W/tpm/swtpm.sock" --ctrl type=unixio,path="$W/tpm/swtpm.sock.ctrl" \
        --tpmstate dir="$W/tpm" --flags startup-clear,not-need-init >"$W/swtpm.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do [ -S "$W/tpm/swtpm.sock" ] && break; sleep 0.05; done
printf 'measure path="%s/opt/**"\n' "$T" >"$W/p.policy"
IVERD_LOG_STDERR=1 "$BUILD/iverd" --policy "$W/p.policy" --runtime-dir "$W/run" --state-dir "$W/state" \
        --tpm "swtpm:path=$W/tpm/swtpm.sock" --pcr $PCR --on-access none >"$W/iverd.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 200); do ctl status >/dev/null 2>&1 && break; sleep 0.05; done
ctl settle --timeout 60 >/dev/null || die "iverd did not settle"

hashed_bytes() { ctl stats --json >"$W/stats.new" && python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['bytes_hashed'])" "$W/stats.new"; }
HASHED=$(hashed_bytes)
mv "$W/stats.new" "$W/stats.old"
# what the step's hashes were, from the ledger: first measurements, re-hashes (same content, while
# written: provisional, kept changing: unstable)
ledger_delta() {
        python3 - "$W/stats.old" "$W/stats.new" <<'EOF'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
print("    ledger: " + ", ".join(f"{k} +{b[k] - a[k]}" for k in
      ("first_seen", "remeasured", "unchanged_content", "provisional", "unstable", "metadata_only")))
EOF
        mv "$W/stats.new" "$W/stats.old"
}

# check PKG STEP POLICY EXPECT: one row of the table
ROWS=()
check() {
        local pkg=$1 what=$2 pol=$3 expect=$4 t0=$SECONDS verdict row
        ctl settle --timeout 600 >/dev/null || fail "$pkg $what: settle timed out"
        local settle_s=$((SECONDS - t0)) hashed pkg_bytes
        hashed=$(hashed_bytes)
        pkg_bytes=$( (du -sb --apparent-size "$T/opt/ivertest-$pkg" 2>/dev/null || echo 0) | cut -f1)
        ctl log --ascii >"$W/list.txt"
        row=$(python3 - "$W/list.txt" "$T" "$T/opt/ivertest-$pkg" <<'EOF'
import hashlib, os, re, sys
lst, root, pkg = sys.argv[1], sys.argv[2] + "/", sys.argv[3]
listed, transient, viol = set(), set(), 0
for line in open(lst, "rb").read().decode("utf-8", "surrogateescape").splitlines():
    pcr, th, tn, dig, name = line.split(" ", 4)
    if tn == "ima-sig":
        name = name.rsplit(" ", 1)[0]
    if not name.startswith(root):
        continue
    if th == "0" * 40:
        viol += 1
    if re.search(r"\.dpkg-(new|tmp|old)$", name):
        transient.add(name)
    listed.add((name, dig))
n = ok = 0
for d, dirs, files in os.walk(pkg):
    for f in files + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
        p = os.path.join(d, f)
        data = os.readlink(p).encode() if os.path.islink(p) else open(p, "rb").read()
        n += 1
        ok += (p, "sha256:" + hashlib.sha256(data).hexdigest()) in listed
for t in sorted(transient)[:5]:
    print("  transient:", t, file=sys.stderr)
print(len(transient), ok, n, viol)
EOF
)
        read -r n_trans n_ok n_files n_viol <<<"$row"
        local nonce
        nonce=$(openssl rand -hex 20)
        rm -rf "$W/q"
        ctl quote --nonce "$nonce" --out "$W/q" >/dev/null || fail "$pkg $what: quote"
        ctl verify "$W/q" --nonce "$nonce" >/dev/null || fail "$pkg $what: the quote does not verify"
        if python3 "$VERIFY" --pcr $PCR --policy "$pol" "$W/run/ascii_runtime_measurements" "$W/q/pcrs.out" \
                >"$W/kv.out" 2>&1; then verdict=ACCEPTED; else verdict=REJECTED; fi
        ROWS+=("$(printf '%-16s %-22s %9s %15s %10s  %-9s %5ss %9.1f %8.1f' "ivertest-$pkg" "$what" "$n_trans" \
                "$n_ok/$n_files" "$n_viol" "$verdict" "$settle_s" "$(((hashed - HASHED) / 1000))e-3" \
                "$((${pkg_bytes:-0} / 1000))e-3")")
        HASHED=$hashed
        echo "${ROWS[-1]}"
        ledger_delta
        [ "$n_trans" = 0 ] || fail "$pkg $what: $n_trans transient names in the list"
        [ "$n_ok" = "$n_files" ] || fail "$pkg $what: $((n_files - n_ok)) of $n_files files not listed with their digest"
        [ "$n_viol" = 0 ] || fail "$pkg $what: $n_viol violation entries"
        if [ "$verdict" != "$expect" ]; then
                grep -m5 "policy:\|REJECTED" "$W/kv.out" || true
                fail "$pkg $what: the verifier says $verdict, expected $expect"
        fi
        return 0
}

# The host's policy: every package's digests, each version --base the one
# before (v1, then v2 with --base v1's: the upgrade window of keylime#1515)
POL=
run_pkg() { # name
        local p=$1
        ctl policy export --keylime --from-deb --root "$T" ${POL:+--base "$POL"} --out "$W/$p-v1.json" \
                "$SHM/$p-1.deb" 2>/dev/null
        ctl policy export --keylime --from-deb --root "$T" --base "$W/$p-v1.json" --out "$W/$p-v2.json" \
                "$SHM/$p-2.deb" 2>/dev/null
        POL=$W/$p-v2.json
        dp -i "$SHM/$p-1.deb"; check "$p" "install v1" "$W/$p-v1.json" ACCEPTED
        dp -i "$SHM/$p-2.deb"; check "$p" "upgrade to v2" "$W/$p-v2.json" ACCEPTED
        dp -r "ivertest-$p"; check "$p" "remove" "$W/$p-v2.json" ACCEPTED
        dp -i "$SHM/$p-2.deb"; check "$p" "install v2 again" "$W/$p-v2.json" ACCEPTED
}
tamper() { # name: a file changed by hand after the upgrade
        local p=$1 f
        f=$(find "$T/opt/ivertest-$p/bin" -type f | sort | sed -n 1p)
        echo "tampered" >>"$f"
        check "$p" "tamper (after v2)" "$POL" REJECTED
        grep -q "policy: entry [0-9]*: $f " "$W/kv.out" || { cat "$W/kv.out"; fail "$p: the verifier does not name $f"; }
        [ "$(grep -c "policy: entry" "$W/kv.out")" = "$2" ] ||
                { cat "$W/kv.out"; fail "$p: the verifier names another file than the tampered ones"; }
}

step "dpkg: install, upgrade, remove, install again; then a file changed by hand"
HEAD=$(printf '%-16s %-22s %9s %15s %10s  %-9s %6s %9s %8s' package step transient "final listed" violations verdict \
        settle "hashed MB" "pkg MB")
echo "$HEAD"
run_pkg small
run_pkg large
tamper small 1
tamper large 2

step "table"
{
        echo "dpkg in a measured tree (iverd $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo ?), seed $SEED):"
        echo "$HEAD"
        printf '%s\n' "${ROWS[@]}"
        echo "transient: list names ending in .dpkg-new/.dpkg-tmp/.dpkg-old; final listed: files and symlinks"
        echo "installed now listed with their current sha256 / all of them; verdict: keylime_verify.py with the"
        echo "--from-deb policy (v1's, then v2's --base v1's) on a quote of PCR $PCR; settle: iverctl settle's wait;"
        echo "hashed MB: bytes iverd hashed in the step (dpkg writes every file of the version it unpacks, as"
        echo "NAME.dpkg-new, and renames it: once is the package's size); pkg MB: the package's files now."
} | tee "$W/table.txt"
if [ -n "${IVER_EVIDENCE_DIR:-}" ]; then cp "$W/table.txt" "$IVER_EVIDENCE_DIR/dpkg-table.txt"; fi
echo "  status: violations $(ctl status --json | python3 -c 'import json,sys; print(json.load(sys.stdin).get("violations"))')"
kill -0 "${PIDS[1]}" || fail "iverd died"
[ "$FAILS" = 0 ] || { echo "FAILED: $FAILS"; exit 1; }
echo "PASS"
