# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# Helpers for integration tests on real filesystems. Source this file, then:
#
#   iver_mounts_init                 # checks tools, makes the work dir, installs the cleanup trap
#   iver_mount ext4|xfs|btrfs|tmpfs  # sets IVER_MNT to a fresh, empty, strictatime mount
#   iver_umount "$IVER_MNT"          # optional: unmount + detach early (cleanup does the rest)
#   iver_run CMD... >FILE            # run a test program, killed (by pid) at cleanup if need be
#   iver_track_pid PID               # a background process to kill (by pid) at cleanup
#
# Images are sparse files in a mktemp -d directory (or in IVER_IMAGE_DIR, such
# as a directory the test made on /dev/shm for speed, which it removes itself), attached with
# `losetup --find --show`, made with mkfs -q/-f and mounted with -o strictatime
# so that every read updates atime. The cleanup runs on EXIT, INT and TERM,
# whether the test passed or failed: it kills tracked processes, unmounts
# every mount (lazily as a last resort), detaches every loop device and
# removes the directory.
#
# Exit code 77 (skip) only when loop devices or mkfs tools are truly missing.

# shellcheck disable=SC2034  # IVER_MNT and IVER_FS_ALL are for the sourcing script
IVER_WORKDIR=
IVER_MNT=
IVER_MOUNTS=()      # mount points, in mount order
IVER_LOOPS=()       # loop devices we attached
IVER_PIDS=()        # background processes we started
# shellcheck disable=SC2034
IVER_FS_ALL=(ext4 xfs btrfs tmpfs)
IVER_IMAGE_MB=${IVER_IMAGE_MB:-320}   # xfs refuses images under 300 MB

iver_skip() {
        echo "SKIP: $*" >&2
        exit 77
}

iver_log() {
        echo "# $*" >&2
}

iver_mounts_cleanup() {
        local rc=$? i mnt dev pid
        trap - EXIT INT TERM
        set +e
        for pid in "${IVER_PIDS[@]}"; do
                kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
        done
        IVER_PIDS=()
        for ((i = ${#IVER_MOUNTS[@]} - 1; i >= 0; i--)); do
                mnt=${IVER_MOUNTS[i]}
                [[ -n $mnt ]] || continue
                _iver_umount_one "$mnt"
        done
        IVER_MOUNTS=()
        for dev in "${IVER_LOOPS[@]}"; do
                [[ -n $dev ]] || continue
                _iver_detach_one "$dev"
        done
        IVER_LOOPS=()
        if [[ -n $IVER_WORKDIR && -d $IVER_WORKDIR ]]; then
                # Never descend into something still mounted.
                if findmnt -rn -o TARGET | grep -q "^$IVER_WORKDIR/"; then
                        echo "WARNING: mounts left under $IVER_WORKDIR; not removing it" >&2
                else
                        rm -rf --one-file-system -- "$IVER_WORKDIR"
                fi
        fi
        IVER_WORKDIR=
        return "$rc"
}

_iver_umount_one() {
        local mnt=$1 _
        mountpoint -q -- "$mnt" || return 0
        for _ in 1 2 3 4 5 6 7 8 9 10; do
                umount -- "$mnt" 2>/dev/null && return 0
                sleep 0.3
        done
        echo "WARNING: umount $mnt keeps failing (busy?); detaching lazily" >&2
        fuser -vm -- "$mnt" >&2 2>&1 || true
        umount -l -- "$mnt"
}

_iver_detach_one() {
        local dev=$1 _
        for _ in 1 2 3 4 5 6 7 8 9 10; do
                # Gone already (autoclear) or detached now.
                losetup "$dev" >/dev/null 2>&1 || return 0
                losetup -d "$dev" 2>/dev/null && return 0
                sleep 0.3
        done
        echo "WARNING: could not detach $dev" >&2
        return 1
}

iver_track_pid() {
        IVER_PIDS+=("$1")
}

iver_mounts_init() {
        local t
        [[ $(id -u) -eq 0 ]] || iver_skip "integration tests need root (loop devices, mount)"
        for t in losetup mount umount mountpoint findmnt truncate mkfs.ext4 mkfs.xfs mkfs.btrfs; do
                command -v "$t" >/dev/null 2>&1 || iver_skip "$t not found (install util-linux e2fsprogs xfsprogs btrfs-progs)"
        done
        [[ -e /dev/loop-control ]] || modprobe loop 2>/dev/null || true
        [[ -e /dev/loop-control ]] || iver_skip "no /dev/loop-control: loop devices are not available here"
        IVER_WORKDIR=$(mktemp -d /tmp/iver-itest.XXXXXX) || { echo "mktemp failed" >&2; exit 1; }
        trap iver_mounts_cleanup EXIT
        trap 'exit 130' INT
        trap 'exit 143' TERM
        iver_log "work dir $IVER_WORKDIR"
}

# iver_mount FSTYPE: make a fresh filesystem and mount it; sets IVER_MNT.
iver_mount() {
        local fs=$1 img dev mnt
        [[ -n $IVER_WORKDIR ]] || { echo "iver_mounts_init first" >&2; return 1; }
        mnt=$IVER_WORKDIR/mnt-$fs
        mkdir -p -- "$mnt"
        if [[ $fs == tmpfs ]]; then
                mount -t tmpfs -o strictatime,size=512m,mode=0755 "iver-itest" "$mnt" || return 1
                IVER_MOUNTS+=("$mnt")
                # shellcheck disable=SC2034
                IVER_MNT=$mnt
                return 0
        fi
        img=${IVER_IMAGE_DIR:-$IVER_WORKDIR}/$fs.img
        truncate -s "${IVER_IMAGE_MB}M" -- "$img" || return 1
        if ! dev=$(losetup --find --show "$img" 2>&1); then
                rm -f -- "$img"
                case $dev in
                *"No such file"*|*"cannot find an unused loop device"*|*"No such device"*)
                        iver_skip "losetup failed: $dev (loop devices missing)";;
                esac
                echo "losetup failed: $dev" >&2
                return 1
        fi
        IVER_LOOPS+=("$dev")
        case $fs in
        ext4)  mkfs.ext4 -q -F -- "$dev" >&2 || return 1;;
        xfs)   mkfs.xfs -q -f -- "$dev" >&2 || return 1;;
        btrfs) mkfs.btrfs -q -f -- "$dev" >/dev/null || return 1;;
        *)     echo "unknown filesystem $fs" >&2; return 1;;
        esac
        mount -t "$fs" -o strictatime -- "$dev" "$mnt" || return 1
        IVER_MOUNTS+=("$mnt")
        # shellcheck disable=SC2034
        IVER_MNT=$mnt
        iver_log "$fs on $dev mounted at $mnt ($(findmnt -rn -o OPTIONS -- "$mnt"))"
}

# iver_umount MNT: unmount one of ours now and detach its loop device.
iver_umount() {
        local mnt=$1 i dev
        dev=$(findmnt -rn -o SOURCE -- "$mnt" 2>/dev/null)
        _iver_umount_one "$mnt" || return 1
        for i in "${!IVER_MOUNTS[@]}"; do
                [[ ${IVER_MOUNTS[i]} == "$mnt" ]] && IVER_MOUNTS[i]=
        done
        for i in "${!IVER_LOOPS[@]}"; do
                if [[ -n $dev && ${IVER_LOOPS[i]} == "$dev" ]]; then
                        _iver_detach_one "$dev" && IVER_LOOPS[i]=
                        rm -f -- "$IVER_WORKDIR/${mnt##*/mnt-}.img"
                fi
        done
        return 0
}

# iver_run CMD...: run CMD in the background (so that INT/TERM reach our trap
# at once instead of after CMD ends), tracked for cleanup; returns its status.
# Redirect the call's output as needed: iver_run prog args >file
iver_run() {
        local pid st i
        "$@" &
        pid=$!
        IVER_PIDS+=("$pid")
        wait "$pid"
        st=$?
        for i in "${!IVER_PIDS[@]}"; do
                [[ ${IVER_PIDS[i]} == "$pid" ]] && unset 'IVER_PIDS[i]'
        done
        return "$st"
}

# iver_itest NAME: path of a built C test program.
iver_itest() {
        local b=${IVER_BUILD_DIR:-}
        if [[ -z $b ]]; then
                b=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build
        fi
        echo "$b/tests/itest-$1"
}
