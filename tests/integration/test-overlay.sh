#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Overlayfs layers tracked (issue 22 item 6), against the real daemon
# (software TPM): the lower layer on a loop-mounted ext4, the upper and work
# directories on a tmpfs, an overlay mounted on $W/merged, the policy
# measuring the merged directory.
#   a  the merged files are listed with their digests; iverctl status shows
#      the layers' filesystems marked (overlay_layers)
#   b  a write made directly to the upper layer's copy (not through the
#      overlay): within 5 s the list and the measurement list have the merged
#      path with the new digest
#   c  the same for a file only the lower layer has, written in the lower dir
#   d  a write to a lower file that the upper hides: the merged digest stays
#   e  a file and a directory with a file created directly in the upper
#      layer are listed under the merged path; the upper copy removed, the
#      lower one it hid is listed; the upper copy back, listed again
#   f  the overlay unmounted: the layers' filesystems are no longer tracked;
#      mounted again while iverd runs: a direct write to the upper layer is
#      seen again (the mapping follows the mount table)
# Without the layer tracking (iverd before it) b, c, e and f fail: the merged
# files are looked at again only by the hourly rescan.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-daemon.sh
source "$here/lib-daemon.sh"
daemon_test_init swtpm python3 sha256sum
# not a test of names at rest (IVERD_TEST_REST_SETTLE_MS, iverd(8))
export IVERD_TEST_REST_SETTLE_MS=${IVERD_TEST_REST_SETTLE_MS:-300}
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || true
grep -qw overlay /proc/filesystems || iver_skip "no overlayfs in this kernel"
test_cleanup_more() {
        [ -n "${KEEP_LOG:-}" ] && ctl log --ascii >"$KEEP_LOG.list" 2>/dev/null
        return 0
}

iver_mount ext4; LOWFS=$IVER_MNT
iver_mount tmpfs; UPFS=$IVER_MNT
LO=$LOWFS/lower UP=$UPFS/upper WK=$UPFS/work MG=$W/merged
mkdir -p "$LO/bin" "$UP/bin" "$WK" "$MG" "$W/run" "$W/state" "$W/tpm"
printf 'base\n' >"$LO/bin/both"           # hidden by the upper copy
printf 'upper\n' >"$UP/bin/both"
printf 'lower only\n' >"$LO/bin/low"
mount_overlay() {
        mount -t overlay overlay -o "lowerdir=$LO,upperdir=$UP,workdir=$WK" "$MG"
        IVER_MOUNTS+=("$MG") # unmounted first at cleanup (reverse order)
}
mount_overlay
printf 'measure path="%s/**"\n' "$MG" >"$W/p.policy"

swtpm socket --tpm2 --server type=unixio,path="$W/swtpm.sock" --ctrl type=unixio,path="$W/swtpm.sock.ctrl" \
        --tpmstate dir="$W/tpm" --flags startup-clear,not-need-init >>"$W/swtpm.log" 2>&1 &
SWTPM_PID=$!
for _ in $(seq 100); do [ -S "$W/swtpm.sock" ] && break; sleep 0.05; done
IVERD_LOG_STDERR=1 "$BUILD/iverd" --policy "$W/p.policy" --runtime-dir "$W/run" --state-dir "$W/state" \
        --tpm "swtpm:path=$W/swtpm.sock" --pcr 23 -v >"$W/iverd.log" 2>&1 &
IVERD_PID=$!
for _ in $(seq 200); do ctl status >/dev/null 2>&1 && break; sleep 0.05; done
ctl settle --timeout 60 >/dev/null || { cat "$W/iverd.log"; echo "FAIL: iverd did not settle"; exit 1; }

sha() { echo "sha256:$(sha256sum <"$1" | cut -d' ' -f1)"; }
listed() { ctl list "$1" | awk '{ print $1 }'; }
in_log() { ctl log --ascii | awk -v p="$1" -v d="$2" '$NF == p && $4 == d { f = 1 } END { exit !f }'; }
# seen PATH: within 5 s (settle, look, 0.1 s pause) iverctl list has the
# merged file's digest now; prints the seconds it took
seen() {
        local p=$1 want t0 i
        want=$(sha "$p")
        t0=$(date +%s.%N)
        for ((i = 0; i < 50; i++)); do
                ctl settle --timeout 10 >/dev/null || true
                [ "$(listed "$p")" = "$want" ] && break
                sleep 0.1
        done
        awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'
        [ "$(listed "$p")" = "$want" ] && in_log "$p" "$want"
}
layers_marked() {     # how many tracked filesystems hold overlay layers
        ctl status --json | python3 -c 'import json,sys
print(sum(1 for f in json.load(sys.stdin)["tracking"] if f.get("overlay_layers", 0) > 0 and f["mode"] == "fanotify-fid"))'
}

echo "== a: the merged files listed with their digests"
for f in both low; do
        [ "$(listed "$MG/bin/$f")" = "$(sha "$MG/bin/$f")" ] || fail "a: $MG/bin/$f not listed with its digest"
done
[ "$(layers_marked)" = 2 ] || fail "a: the layers' filesystems are not both marked ($(layers_marked))"
echo "layers' filesystems marked: $(layers_marked)"

echo "== b: a direct write to the upper layer's copy"
printf 'upper, changed directly\n' >>"$UP/bin/both"
if s=$(seen "$MG/bin/both"); then echo "b: seen in ${s}s"; else fail "b: $MG/bin/both not re-checked within 5 s (list: $(listed "$MG/bin/both"), now $(sha "$MG/bin/both"))"; fi

echo "== c: a direct write to a file only the lower layer has"
printf 'lower, changed directly\n' >>"$LO/bin/low"
if s=$(seen "$MG/bin/low"); then echo "c: seen in ${s}s"; else fail "c: $MG/bin/low not re-checked within 5 s (list: $(listed "$MG/bin/low"), now $(sha "$MG/bin/low"))"; fi

echo "== d: a write to a lower file the upper hides"
before=$(listed "$MG/bin/both")
printf 'hidden\n' >>"$LO/bin/both"
ctl settle --timeout 10 >/dev/null
if [ "$(listed "$MG/bin/both")" != "$before" ] || [ "$before" != "$(sha "$MG/bin/both")" ]; then
        fail "d: listed $before before, $(listed "$MG/bin/both") after; the merged file is $(sha "$MG/bin/both")"
fi

echo "== e: a file and a directory created directly in the upper layer; the upper copy removed"
printf 'new in upper\n' >"$UP/bin/new"
mkdir -p "$UP/sub"; printf 'in a new dir\n' >"$UP/sub/deep"
if s=$(seen "$MG/bin/new"); then echo "e: new file seen in ${s}s"; else fail "e: $MG/bin/new not listed within 5 s"; fi
if s=$(seen "$MG/sub/deep"); then echo "e: file in a new directory seen in ${s}s"; else fail "e: $MG/sub/deep not listed within 5 s"; fi
rm "$UP/bin/both" # the lower copy shows through now
if s=$(seen "$MG/bin/both"); then echo "e: lower copy revealed, seen in ${s}s"; else fail "e: $MG/bin/both not re-checked after its upper copy went"; fi
printf 'upper\n' >"$UP/bin/both"
seen "$MG/bin/both" >/dev/null || fail "e: $MG/bin/both not re-checked after its upper copy came back"

echo "== f: unmounted, the mapping goes; mounted again, it comes back"
umount "$MG"
for _ in $(seq 50); do [ "$(layers_marked)" = 0 ] && break; sleep 0.1; done
[ "$(layers_marked)" = 0 ] || fail "f: the layers' filesystems are still tracked after the umount"
mount_overlay
for _ in $(seq 50); do [ "$(layers_marked)" = 2 ] && break; sleep 0.1; done
[ "$(layers_marked)" = 2 ] || fail "f: the layers' filesystems are not marked again after the mount"
ctl settle --timeout 60 >/dev/null
printf 'upper, changed again\n' >>"$UP/bin/both"
if s=$(seen "$MG/bin/both"); then echo "f: seen in ${s}s"; else fail "f: $MG/bin/both not re-checked within 5 s after the remount"; fi

if [ "$FAILS" -gt 0 ]; then
        [ -n "${VERBOSE:-}" ] && tail -50 "$W/iverd.log"
        echo "$FAILS failure(s)"; exit 1
fi
echo "PASS"
