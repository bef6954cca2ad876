# SPDX-License-Identifier: LGPL-2.1-or-later
"""Loop-mounted filesystems for the benchmark, the Python form of
tests/integration/lib-mounts.sh: sparse images in the work directory attached with
`losetup --find --show`, mkfs, mounted strictatime; Mounts.cleanup() unmounts in reverse
order (lazily as a last resort), detaches every loop device and removes the work directory."""
import os
import shutil
import subprocess
import sys
import tempfile
import time

from .common import die


class Mounts:
    def __init__(self):
        if os.geteuid() != 0:
            die("needs root (loop devices, mounts, leases)")
        for t in ("losetup", "mount", "umount", "mountpoint", "findmnt", "mkfs.ext4", "mkfs.xfs"):
            if not shutil.which(t):
                die(f"{t} not found (install util-linux e2fsprogs xfsprogs)")
        if not os.path.exists("/dev/loop-control"):
            subprocess.run(["modprobe", "loop"], stderr=subprocess.DEVNULL)
        if not os.path.exists("/dev/loop-control"):
            die("no /dev/loop-control: loop devices are not available here")
        self.work = tempfile.mkdtemp(prefix="iver-bench.", dir="/tmp")
        self.mounts = []      # mount points, in mount order
        self.loops = []       # loop devices we attached
        self.images = {}      # mount point -> (loop device, image) of mount_image
        print(f"# work dir {self.work}", file=sys.stderr)

    def mount_image(self, fs, size_mb, name=None, opts="strictatime", mkfs_opts=()):
        """A fresh, empty fs (ext4 or xfs) on a loop device, mounted with opts (strictatime unless told);
        returns the mount point (work/mnt-NAME, NAME defaults to fs)."""
        name = name or fs
        mnt = os.path.join(self.work, "mnt-" + name)
        os.makedirs(mnt, exist_ok=True)
        img = os.path.join(self.work, name + ".img")
        with open(img, "wb") as f:
            f.truncate(size_mb << 20)
        r = subprocess.run(["losetup", "--find", "--show", img], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
        if r.returncode != 0:
            os.unlink(img)
            raise RuntimeError(f"losetup failed: {r.stderr.strip()}")
        dev = r.stdout.strip()
        self.loops.append(dev)
        self.images[mnt] = (dev, img)
        mkfs = {"ext4": ["mkfs.ext4", "-q", "-F"], "xfs": ["mkfs.xfs", "-q", "-f"]}[fs]
        subprocess.run([*mkfs, *mkfs_opts, "--", dev], stdout=sys.stderr, check=True)
        subprocess.run(["mount", "-t", fs, "-o", opts, "--", dev, mnt], check=True)
        self.mounts.append(mnt)
        opts = subprocess.run(["findmnt", "-rn", "-o", "OPTIONS", "--", mnt], stdout=subprocess.PIPE,
                              text=True).stdout.strip()
        print(f"# {fs} on {dev} mounted at {mnt} ({opts})", file=sys.stderr)
        return mnt

    def bind_noatime(self, src, dst):
        """A noatime view of the same filesystem."""
        os.makedirs(dst, exist_ok=True)
        subprocess.run(["mount", "--bind", src, dst], check=True)
        self.mounts.append(dst)
        subprocess.run(["mount", "-o", "remount,bind,noatime", dst], check=True)

    def tmpfs(self, dst, opts):
        os.makedirs(dst, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "iver-bench-run", dst], check=True)
        self.mounts.append(dst)

    def release(self, mnt):
        """Unmount one mount of ours now (and detach its loop device, remove its image): frees its memory or
        disk space before the next part; cleanup() does the same for whatever is left."""
        if mnt not in self.mounts:
            return
        self._umount_one(mnt)
        self.mounts.remove(mnt)
        dev, img = self.images.pop(mnt, (None, None))
        if dev:
            self._detach_one(dev)
            self.loops.remove(dev)
            os.unlink(img)

    @staticmethod
    def _umount_one(mnt):
        if subprocess.run(["mountpoint", "-q", "--", mnt]).returncode != 0:
            return
        for _ in range(10):
            if subprocess.run(["umount", "--", mnt], stderr=subprocess.DEVNULL).returncode == 0:
                return
            time.sleep(0.3)
        print(f"WARNING: umount {mnt} keeps failing (busy?); detaching lazily", file=sys.stderr)
        subprocess.run(["fuser", "-vm", "--", mnt], stdout=sys.stderr, stderr=sys.stderr)
        subprocess.run(["umount", "-l", "--", mnt])

    @staticmethod
    def _detach_one(dev):
        for _ in range(10):
            # gone already (autoclear) or detached now
            if subprocess.run(["losetup", dev], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode:
                return
            if subprocess.run(["losetup", "-d", dev], stderr=subprocess.DEVNULL).returncode == 0:
                return
            time.sleep(0.3)
        print(f"WARNING: could not detach {dev}", file=sys.stderr)

    def cleanup(self):
        for mnt in reversed(self.mounts):
            self._umount_one(mnt)
        self.mounts = []
        for dev in self.loops:
            self._detach_one(dev)
        self.loops = []
        if self.work and os.path.isdir(self.work):
            targets = subprocess.run(["findmnt", "-rn", "-o", "TARGET"], stdout=subprocess.PIPE,
                                     text=True).stdout.splitlines()
            if any(t.startswith(self.work + "/") for t in targets):
                print(f"WARNING: mounts left under {self.work}; not removing it", file=sys.stderr)
            else:
                subprocess.run(["rm", "-rf", "--one-file-system", "--", self.work])
        self.work = None
