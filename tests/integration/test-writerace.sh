#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The write race (issue 2): on ext4, xfs, btrfs (loop-mounted, strictatime)
# and tmpfs, a writer rewrites 64 MiB over a file while the library measures
# it; a digest must never be recorded under a cookie whose content it does
# not match. Runs itest-writerace in a fresh mount of each.
#   IVER_FS="ext4 xfs" restricts the filesystems; IVER_RACE_SECONDS (default 5)
#   is the time per filesystem.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-mounts.sh
source "$here/lib-mounts.sh"

prog=$(iver_itest writerace)
[[ -x $prog ]] || { echo "FAIL: $prog not built" >&2; exit 1; }

iver_mounts_init
out=$IVER_WORKDIR/race
: >"$out"
rc=0
read -r -a filesystems <<<"${IVER_FS:-${IVER_FS_ALL[*]}}"
for fs in "${filesystems[@]}"; do
        if ! iver_mount "$fs"; then
                echo "FAIL: could not set up $fs" >&2
                rc=1
                continue
        fi
        iver_run "$prog" "$fs" "$IVER_MNT" "${IVER_RACE_SECONDS:-5}" >"$IVER_WORKDIR/$fs.out"
        st=$?
        cat "$IVER_WORKDIR/$fs.out"
        cat "$IVER_WORKDIR/$fs.out" >>"$out"
        if [[ $st -ne 0 ]]; then
                echo "FAIL: itest-writerace on $fs exited $st" >&2
                rc=1
        fi
        iver_umount "$IVER_MNT" || rc=1
done

echo
echo "## Write race: 64 MiB rewritten while measured (kernel $(uname -r))"
echo
echo "| fs     | secs  | checks | hits | stable | provisional | unstable | lease broken | retried | quiescent | invariant cmp/entries | violations | rounds | max open wait ms | result |"
echo "|--------|-------|--------|------|--------|-------------|----------|--------------|---------|-----------|-----------------------|------------|--------|----------|------|"
grep '^| ' "$out"
grep -q '| FAIL |' "$out" && rc=1
[[ $(grep -c '^| ' "$out") -eq ${#filesystems[@]} ]] || rc=1
exit "$rc"
