#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Write events placed by the handle's bytes (fstrack-handle.c), against the
# real daemon on loop-mounted ext4, xfs, btrfs and tmpfs: iverd reads the
# inode number of a write event's object handle from its bytes once the
# layout has agreed with open_by_handle_at 64 times. On each filesystem:
#   - 200 files written outside the measured tree (the layout learnt);
#   - a measured file written through a hard link outside the measured tree
#     (only the handle names it): listed again with its new digest;
#   - status: handles_read > 0 on ext4, xfs and tmpfs; 0 on btrfs (a
#     subvolume is another device: always the kernel).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-daemon.sh
source "$here/lib-daemon.sh"
daemon_test_init python3
export IVERD_TEST_REST_SETTLE_MS=${IVERD_TEST_REST_SETTLE_MS:-300}

for fs in ${IVER_FS:-${IVER_FS_ALL[*]}}; do
        echo "== $fs"
        iver_mount "$fs" || { fail "could not set up $fs"; continue; }
        M=$IVER_MNT
        mkdir -p "$M/m" "$M/other" "$W/run-$fs" "$W/state-$fs"
        echo "measured v1" >"$M/m/f"
        ln "$M/m/f" "$M/other/link"
        printf 'measure path="%s/m/**"\n' "$M" >"$W/p-$fs.policy"
        export IVERD_SOCKET=$W/run-$fs/iverd.sock
        IVERD_LOG_STDERR=1 "$BUILD/iverd" --policy "$W/p-$fs.policy" --runtime-dir "$W/run-$fs" \
                --state-dir "$W/state-$fs" --tpm none --on-access none >>"$W/iverd-$fs.log" 2>&1 &
        IVERD_PID=$!
        for _ in $(seq 200); do ctl status >/dev/null 2>&1 && break; sleep 0.05; done
        ctl settle --timeout 60 >/dev/null || fail "$fs: iverd did not settle"
        python3 - "$M/other" <<'PY'
import sys
for i in range(200):
    with open(f"{sys.argv[1]}/w{i}", "w") as f:
        f.write("x" * (i + 1))
PY
        ctl settle --timeout 60 >/dev/null
        echo "measured v2 through a link" >>"$M/other/link"
        ctl settle --timeout 60 >/dev/null || fail "$fs: iverd did not settle after the write"
        d=$(sha256sum <"$M/m/f" | cut -d' ' -f1)
        ctl log --ascii | grep -q " sha256:$d $M/m/f\$" && echo "$fs: the write through the link is listed" ||
                fail "$fs: the write through the hard link outside the tree is not listed"
        hr=$(ctl status --json | python3 -c "import json,sys; print(sum(f.get('handles_read', 0) for f in json.load(sys.stdin)['tracking']))")
        echo "$fs: handles read from their bytes: $hr"
        case $fs in
        btrfs) [ "$hr" = 0 ] || fail "btrfs: $hr handles read from their bytes" ;;
        *) [ "$hr" -gt 0 ] || fail "$fs: no handle read from its bytes" ;;
        esac
        stop_pid "$IVERD_PID"; IVERD_PID=""
        iver_umount "$M" || fail "$fs: umount"
done

if [ "$FAILS" -gt 0 ]; then
        for f in "$W"/iverd-*.log; do echo "--- $f (tail)"; tail -10 "$f"; done
        echo "FAILED ($FAILS)"; exit 1
fi
echo PASS
