# SPDX-License-Identifier: LGPL-2.1-or-later
# A real kernel in a VM (issue 21 item 4): Debian's stock kernel booted by QEMU
# (TCG; KVM only when asked: GUEST_ACCEL) with swtpm as its TPM and an initramfs of
# busybox and the built iverd/iverctl. The guest has the kernel's real IMA
# (securityfs, PCR 10, boot_aggregate) and its TPM stack (/dev/tpm0, and
# /dev/tpmrm0: the kernel's resource manager, TCTI device:/dev/tpmrm0).
#
# Usage (a test script):
#   source "$here/lib-guest.sh"      # also sources lib-fleet.sh: fail, step, ctl, $D
#   guest_init NAME                  # work dir $D, traps; exit 77 without root,
#                                    # qemu, swtpm or busybox; fetches the kernel
#   guest_add SRC DEST               # optional: put host file SRC at DEST in the
#                                    # guest (overrides the defaults below); for
#                                    # every later guest_run
#   guest_run SCRIPT OUTDIR          # boot a fresh guest with a fresh TPM, run
#                                    # SCRIPT (busybox sh), copy the files it
#                                    # returned to OUTDIR; returns SCRIPT's exit
#                                    # status. The transcript (console without
#                                    # the file blocks) is printed and saved as
#                                    # OUTDIR/console.txt.
# In the guest SCRIPT (sourced by /init after /guest/lib.sh):
#   ret FILE [NAME]                  # return FILE to the host as OUTDIR/NAME
#                                    # (default: its base name); NAME may hold
#                                    # directories, never "..")
#   ret_dir DIR [NAME]               # every regular file of DIR (flat)
#   iverd_start [OPTIONS…]           # start /usr/sbin/iverd in the background
#                                    # (stderr to /run/iverd.log, IVERD_LOG_STDERR)
#                                    # and wait for its socket; 1 if it exited
#                                    # ($IVERD_PID, $IVERD_RC); no options: the
#                                    # configuration of a systemd start
#   iverd_stop                       # SIGTERM and wait
# Defaults in the guest:
#   /etc/iverd/iverd.conf            the shipped etc/iverd.conf (also reachable at
#                                    the compiled-in IVER_SYSCONFDIR)
#   /etc/iverd/iverd.policy          measure path=/opt/** hash=sha256 template=ima-ng
#   /usr/sbin/iverd, /usr/bin/iverctl, busybox applets in /bin, python-free
#   /proc /sys /dev /sys/kernel/security mounted; tmpfs on /run and /tmp;
#   the root (/opt included) is the initramfs (tmpfs).
# The kernel:
#   IVER_GUEST_KERNEL=PATH           use this vmlinuz; otherwise the package that
#                                    linux-image-amd64 depends on, fetched with
#                                    `apt-get download` into IVER_GUEST_CACHE
#                                    (default $IVER_BUILD_DIR/guest-cache) once,
#                                    reused when present.
#   GUEST_APPEND                     extra kernel command line (e.g. ima_policy=tcb)
#   GUEST_TIMEOUT                    seconds before qemu is killed (default 150)
#   GUEST_SMP, GUEST_MEM             vCPUs (2), MiB (1024)
#   GUEST_ACCEL                      QEMU's accel= (default tcg). Not KVM when
#                                    /dev/kvm is there: on this machine kind a
#                                    /dev/kvm appeared whose guests never print a
#                                    line (the kernel hung before its console,
#                                    every run) while TCG boots in ~30 s.
#   GUEST_PCR_BANKS                  the TPM's active PCR banks (swtpm_setup
#                                    --pcr-banks; default sha1,sha256, what most
#                                    hardware TPMs have active; "all": swtpm's
#                                    own default, sha1 sha256 sha384 sha512)
# swtpm and qemu are stopped by PID; nothing is left behind (lib-fleet's traps).
# Time: a boot with an empty script took 35 s under TCG here (2 cores, load
# average 15), of which the kernel's own boot to /init was 6 s: most of the
# rest is the bzImage's xz decompression, before the kernel prints a line.
# The command line has no_timer_check: under TCG on a loaded host the kernel's
# IO-APIC timer check can fail and panic. (Booting the host-decompressed vmlinux
# through QEMU 7.2's PVH loader skips that, but there the initrd is copied
# over SeaBIOS's ACPI tables once SeaBIOS has set up a TPM: no TPM, no
# poweroff. So the bzImage it is: tests keep their boots few.)

# shellcheck source=lib-fleet.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib-fleet.sh"

GUEST_SRC=${IVER_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
GUEST_CACHE=${IVER_GUEST_CACHE:-$BUILD/guest-cache}
GUEST_TIMEOUT=${GUEST_TIMEOUT:-150}
GUEST_SMP=${GUEST_SMP:-2}
GUEST_MEM=${GUEST_MEM:-1024}
GUEST_APPEND=${GUEST_APPEND:-}
GUEST_PCR_BANKS=${GUEST_PCR_BANKS:-sha1,sha256}
GUEST_RUNS=0
GUEST_KERNEL=

# Drop a stopped PID from FLEET_PIDS so that the exit trap never signals a
# recycled PID.
guest_forget_pid() { # pid
        local i
        for i in "${!FLEET_PIDS[@]}"; do
                [ "${FLEET_PIDS[i]}" = "$1" ] && unset 'FLEET_PIDS[i]'
        done
        FLEET_PIDS=("${FLEET_PIDS[@]}")
}

# The stock kernel: the package linux-image-amd64 depends on, cached.
guest_fetch_kernel() {
        if [ -n "${IVER_GUEST_KERNEL:-}" ]; then
                [ -r "$IVER_GUEST_KERNEL" ] || fail "IVER_GUEST_KERNEL=$IVER_GUEST_KERNEL not readable"
                GUEST_KERNEL=$IVER_GUEST_KERNEL
                return 0
        fi
        mkdir -p "$GUEST_CACHE"
        local lock pkg tmp
        # Parallel tests share the cache: one downloads, the others wait.
        exec {lock}>"$GUEST_CACHE/.lock"
        flock "$lock"
        GUEST_KERNEL=$(find "$GUEST_CACHE" -maxdepth 1 -name 'vmlinuz-*' | sort -V | tail -1)
        if [ -z "$GUEST_KERNEL" ]; then
                pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
                        awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ && p == "" { p = $2 } END { print p }')
                [ -n "$pkg" ] || fail "apt-cache depends linux-image-amd64: no kernel package (apt-get update?)"
                tmp=$(mktemp -d "$GUEST_CACHE/fetch.XXXXXX")
                echo "guest: downloading $pkg (once, into $GUEST_CACHE)"
                (cd "$tmp" && apt-get download -q "$pkg" >"$tmp/apt.log" 2>&1) ||
                        { cat "$tmp/apt.log"; rm -rf "$tmp"; fail "apt-get download $pkg failed"; }
                # Only boot/ of the package (the kernel and its config): the modules
                # (~400 MB unpacked) are not needed by an initramfs-only guest.
                mkdir "$tmp/x"
                dpkg-deb --fsys-tarfile "$tmp"/*.deb | tar -x -C "$tmp/x" --wildcards './boot/*' ||
                        { rm -rf "$tmp"; fail "dpkg-deb: cannot unpack $pkg"; }
                mv "$tmp"/x/boot/config-* "$GUEST_CACHE"/ 2>/dev/null || true
                mv "$tmp"/x/boot/vmlinuz-* "$GUEST_CACHE"/ || { rm -rf "$tmp"; fail "$pkg holds no boot/vmlinuz-*"; }
                rm -rf "$tmp"
                GUEST_KERNEL=$(find "$GUEST_CACHE" -maxdepth 1 -name 'vmlinuz-*' | sort -V | tail -1)
        fi
        [ -n "$GUEST_KERNEL" ] || fail "no kernel in $GUEST_CACHE"
        exec {lock}>&-
}

# guest_copy_bin HOSTFILE GUESTPATH: a binary and every library ldd names, at the
# paths ldd names (so RUNPATHs such as the build tree's libiver resolve), and
# in the guest's system library directory as well: a build tree under /tmp
# (a CI clone) is hidden in the guest by the tmpfs /init mounts on /tmp.
guest_copy_bin() {
        local src=$1 dst=$2 lib
        mkdir -p "$GUEST_ROOT/$(dirname "$dst")"
        cp -L "$src" "$GUEST_ROOT/$dst"
        for lib in $(ldd "$src" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
                [ -e "$GUEST_ROOT$lib" ] && continue
                mkdir -p "$GUEST_ROOT$(dirname "$lib")"
                cp -L "$lib" "$GUEST_ROOT$lib"
                case $lib in
                /lib/* | /lib64/* | /usr/lib/* | /usr/lib64/*) ;;
                *) cp -L "$lib" "$GUEST_ROOT/usr/lib/x86_64-linux-gnu/$(basename "$lib")" ;;
                esac
        done
}

guest_build_root() {
        local bb a sysconf lib
        GUEST_ROOT=$D/guest-root
        rm -rf "$GUEST_ROOT"
        mkdir -p "$GUEST_ROOT"/{bin,sbin,usr/bin,usr/sbin,usr/lib/x86_64-linux-gnu,usr/lib64,etc/iverd,proc,sys,dev,run,tmp,opt,var/lib,guest}
        ln -s usr/lib "$GUEST_ROOT/lib"
        ln -s usr/lib64 "$GUEST_ROOT/lib64"
        bb=$(command -v busybox)
        cp "$bb" "$GUEST_ROOT/bin/busybox"
        for a in $("$bb" --list); do
                [ "$a" = busybox ] || ln -s busybox "$GUEST_ROOT/bin/$a"
        done
        guest_copy_bin "$IVERD" /usr/sbin/iverd
        guest_copy_bin "$IVERCTL" /usr/bin/iverctl
        # TCTIs are dlopen()ed by tctildr: ldd cannot name them.
        for lib in libtss2-tcti-device.so.0 libtss2-tctildr.so.0; do
                local p
                p=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ && p == "" { p = $NF } END { print p }')
                [ -n "$p" ] || fail "$lib not installed"
                guest_copy_bin "$p" "/usr/lib/x86_64-linux-gnu/$lib"
        done
        cp "$GUEST_SRC/etc/iverd.conf" "$GUEST_ROOT/etc/iverd/iverd.conf"
        echo "measure path=/opt/** hash=sha256 template=ima-ng" >"$GUEST_ROOT/etc/iverd/iverd.policy"
        # iverd reads the compiled-in IVER_SYSCONFDIR (/usr/local/etc in a build tree).
        sysconf=$(sed -n 's/^IVER_SYSCONFDIR:PATH=//p' "$BUILD/CMakeCache.txt" 2>/dev/null)
        if [ -n "$sysconf" ] && [ "$sysconf" != /etc ]; then
                mkdir -p "$GUEST_ROOT$sysconf"
                ln -s /etc/iverd "$GUEST_ROOT$sysconf/iverd"
        fi
        echo 'root:x:0:0:root:/root:/bin/sh' >"$GUEST_ROOT/etc/passwd"
        echo 'root:x:0:' >"$GUEST_ROOT/etc/group"
        cat >"$GUEST_ROOT/init" <<'EOF'
#!/bin/sh
export PATH=/bin:/sbin:/usr/bin:/usr/sbin LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu HOME=/
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t securityfs securityfs /sys/kernel/security
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
dmesg -n 1
exec </dev/console >/dev/console 2>&1
echo "@@GUEST-START $(uname -r)@@"
( . /guest/lib.sh; . /guest/script )
echo "@@GUEST-EXIT $?@@"
poweroff -f
EOF
        chmod 755 "$GUEST_ROOT/init"
        cat >"$GUEST_ROOT/guest/lib.sh" <<'EOF'
ret() { # FILE [NAME]
        [ -f "$1" ] || { echo "ret: $1: no such file"; return 1; }
        echo "@@GUEST-FILE ${2:-${1##*/}}@@"
        base64 <"$1"
        echo "@@GUEST-FILE-END@@"
}
ret_dir() { # DIR [NAME]
        for f in "$1"/*; do [ -f "$f" ] && ret "$f" "${2:-${1##*/}}/${f##*/}"; done
}
iverd_start() {
        rm -f /run/iverd/iverd.sock
        IVERD_LOG_STDERR=1 TSS2_LOG=all+none /usr/sbin/iverd "$@" 2>>/run/iverd.log &
        IVERD_PID=$!
        i=0
        while [ $i -lt 600 ]; do
                [ -S /run/iverd/iverd.sock ] && iverctl status >/dev/null 2>&1 && return 0
                if ! kill -0 $IVERD_PID 2>/dev/null; then
                        wait $IVERD_PID; IVERD_RC=$?
                        return 1
                fi
                sleep 0.1; i=$((i + 1))
        done
        echo "iverd did not come up in 60 s"; return 1
}
iverd_stop() {
        kill $IVERD_PID 2>/dev/null && wait $IVERD_PID
}
EOF
}

guest_init() { # name
        fleet_init "$1"
        local t
        for t in qemu-system-x86_64 swtpm swtpm_setup busybox cpio; do
                command -v $t >/dev/null || { echo "SKIP: $t not installed (scripts/deps.sh)"; exit 77; }
        done
        mkdir -p "$D/guest-add"
        guest_fetch_kernel
        guest_build_root
}

guest_add() { # SRC DEST
        mkdir -p "$D/guest-add$(dirname "$2")"
        cp -L "$1" "$D/guest-add$2"
}

# guest_extract CONSOLE OUTDIR: the file blocks to OUTDIR, the rest to stdout.
guest_extract() {
        local console=$1 out=$2
        tr -d '\r' <"$console" | awk -v out="$out" '
                /^@@GUEST-FILE-END@@$/ { if (f != "") { close(cmd); f = "" } next }
                /^@@GUEST-FILE .*@@$/ {
                        f = substr($0, 14, length($0) - 15)
                        if (f ~ /(^|\/)\.\.(\/|$)/ || f ~ /^\// || f ~ /'"'"'/) { print "guest: bad file name " f; f = ""; next }
                        n = split(f, parts, "/"); dir = out
                        for (i = 1; i < n; i++) dir = dir "/" parts[i]
                        system("mkdir -p '"'"'" dir "'"'"'")
                        cmd = "base64 -d > '"'"'" out "/" f "'"'"'"
                        next
                }
                f != "" { print | cmd; next }
                { print }'
}

guest_run() { # SCRIPT OUTDIR
        local script=$1 out=$2 run tpmd qpid spid accel rc start
        GUEST_RUNS=$((GUEST_RUNS + 1))
        run=$D/guest$GUEST_RUNS
        tpmd=$run/tpm
        mkdir -p "$run/extra/guest" "$tpmd" "$out"
        cp "$script" "$run/extra/guest/script"
        cp -a "$D/guest-add/." "$run/extra/"
        # Two concatenated newc archives, uncompressed (no decompression under
        # TCG); the second one's files replace the first's.
        (cd "$GUEST_ROOT" && find . | cpio -o -H newc --quiet) >"$run/initrd.cpio"
        (cd "$run/extra" && find . | cpio -o -H newc --quiet) >>"$run/initrd.cpio"

        if [ "$GUEST_PCR_BANKS" != all ]; then
                swtpm_setup --tpm2 --tpmstate "$tpmd" --pcr-banks "$GUEST_PCR_BANKS" --overwrite \
                        >"$D/guest$GUEST_RUNS-swtpm_setup.log" 2>&1 ||
                        { cat "$D/guest$GUEST_RUNS-swtpm_setup.log"; fail "swtpm_setup --pcr-banks $GUEST_PCR_BANKS"; }
        fi
        swtpm socket --tpm2 --tpmstate dir="$tpmd" --ctrl type=unixio,path="$tpmd/ctrl" \
                --flags startup-clear >"$D/guest$GUEST_RUNS-swtpm.log" 2>&1 &
        spid=$!
        FLEET_PIDS+=("$spid")
        for _ in $(seq 100); do [ -S "$tpmd/ctrl" ] && break; sleep 0.05; done
        [ -S "$tpmd/ctrl" ] || fail "swtpm did not start"

        accel=${GUEST_ACCEL:-tcg}
        start=$(date +%s.%N)
        qemu-system-x86_64 -machine "accel=$accel" -m "$GUEST_MEM" -smp "$GUEST_SMP" \
                -nodefaults -display none -no-reboot -no-user-config \
                -kernel "$GUEST_KERNEL" -initrd "$run/initrd.cpio" \
                -append "console=ttyS0 quiet panic=-1 no_timer_check $GUEST_APPEND" \
                -serial "file:$run/console.raw" \
                -chardev "socket,id=chrtpm,path=$tpmd/ctrl" -tpmdev emulator,id=tpm0,chardev=chrtpm \
                -device tpm-tis,tpmdev=tpm0 >"$D/guest$GUEST_RUNS-qemu.log" 2>&1 &
        qpid=$!
        FLEET_PIDS+=("$qpid")
        for _ in $(seq $((GUEST_TIMEOUT * 10))); do
                kill -0 "$qpid" 2>/dev/null || break
                sleep 0.1
        done
        if kill -0 "$qpid" 2>/dev/null; then
                echo "guest: timeout after ${GUEST_TIMEOUT}s, killing qemu"
                fleet_stop_pid "$qpid"
        fi
        wait "$qpid" 2>/dev/null || true
        guest_forget_pid "$qpid"
        fleet_stop_pid "$spid"
        guest_forget_pid "$spid"
        printf 'guest: %s ran %.1f s (%s)\n' "$(basename "$script")" \
                "$(echo "$(date +%s.%N) - $start" | bc)" "$accel"
        guest_extract "$run/console.raw" "$out" | tee "$out/console.txt"
        # fleet_cleanup prints the tail of $D/*.log on failure
        cp "$out/console.txt" "$D/guest$GUEST_RUNS-console.log"
        rc=$(sed -n 's/^@@GUEST-EXIT \([0-9]*\)@@$/\1/p' "$out/console.txt" | tail -1)
        [ -n "$rc" ] || { echo "guest: the script did not finish (no exit marker)"; return 1; }
        return "$rc"
}
