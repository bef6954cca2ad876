# SPDX-License-Identifier: LGPL-2.1-or-later
"""The bulk workload (issue 14), first part: initial measurement at host scale.

Two trees made by tests/integration/scale-tree.py, one after the other:
  small   200,000 files of 10-200 bytes + 200 files of 1 MiB
  large   1 GiB in 1,024 files of 1 MiB
on a tmpfs of their own and on a loop-mounted ext4 (relatime, as a host's /usr is;
the page cache dropped before every run there: sync; echo 3 > /proc/sys/vm/drop_caches),
measured from nothing by each contender:
  iverd                the daemon (--tpm none, default workers), from its start until
                       `iverctl settle` returns; the list on tmpfs, as /run is
  iverd (list ext4)    the same with the runtime directory on the ext4 under test (ext4 only)
  sha256sum            find -print0 | xargs -0 sha256sum
  xargs -PN sha256sum  find -print0 | xargs -0 -PN sha256sum (N = cores)
  openssl dgst -sha256 find -print0 | xargs -0 openssl dgst -sha256 (large only: one worker's rate)
  xargs -PN openssl    the same, N readers at once as iverd has N workers (large only: what the disk
                       gives N readers; on a cold disk it bounds every contender)
  aide --init          Debian's aide, a sha256 rule over the tree
The memory figures and the churn soak are in bulkmem."""
import os
import shutil
import sys
import time

from .common import A, log, run_measured
from .contenders import Aide, settled_run

TREE_PY = "tests/integration/scale-tree.py"


def sizes(scale):
    """The issue's sizes, times scale (--bulk-scale, for development only)."""
    def n(x, least):
        return max(least, int(x * scale))
    return dict(scale=scale, small=n(200_000, 100), small_big=n(200, 1), large=n(1024, 4),
                mem=[n(100_000, 1000), n(1_000_000, 10_000)], churn_cache=n(100_000, 1000),
                soak_replacements=n(100_000, 2000), soak_tree=n(200_000, 1000))


def drop_caches():
    """sync + drop the page cache, dentries and inodes; False (said once) where that is refused."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError as e:
        if not getattr(drop_caches, "warned", False):
            log(f"cannot drop the page cache ({e.strerror}): drop_caches needs root and a writable /proc/sys; "
                "the ext4 runs are NOT cold")
            drop_caches.warned = True
        return False


def make_tree(tree, small, big):
    os.makedirs(tree)
    outp = os.path.join(A.work, "scale-tree.out")
    with open(outp, "w") as f:
        w, _, _, rc = run_measured([sys.executable, os.path.join(A.src, TREE_PY), tree, str(small), str(big)],
                                   stdout=f)
    if rc != 0:
        raise RuntimeError(f"scale-tree.py {tree}: rc {rc}")
    with open(outp) as f:
        files, nbytes = map(int, f.read().split())
    # mean path length: the "path bytes" of the memory targets
    plen = 0
    for dp, _, fn in os.walk(tree):
        plen += sum(len(os.fsencode(os.path.join(dp, x))) for x in fn)
    return files, nbytes, plen / max(1, files), w


def iverd_run(tag, tree, runtime_parent=None):
    wall, cpu, (m, st, s) = settled_run(tag, tree, lambda d: (d.mem(), d.status(), d.stats()),
                                        runtime_parent=runtime_parent)
    return dict(wall=wall, cpu=cpu, rss_kib=m["VmHWM"], rss_settled_kib=m["VmRSS"], listed=st["list_length"],
                cached=st["cached_files"], hashed_bytes=s["bytes_hashed"])


def shell_run(cmd, tree):
    w, c, rss, rc = run_measured(["sh", "-c", cmd, "sh", tree])
    if rc != 0:
        raise RuntimeError(f"{cmd}: rc {rc}")
    return dict(wall=w, cpu=c)


def aide_run(tag, tree):
    a = Aide(tag, tree, tree, "sha256")
    w, c, rss = a.init()
    shutil.rmtree(a.dir, ignore_errors=True)
    return dict(wall=w, cpu=c)


def empty_daemon():
    """Peak and settled RSS of a daemon with nothing to measure: the base the per-file figures leave out."""
    empty = os.path.join(A.work, "bulk-empty")
    os.makedirs(empty)
    r = iverd_run("bulk-empty", empty)
    os.rmdir(empty)
    return dict(hwm_kib=r["rss_kib"], rss_kib=r["rss_settled_kib"])


def contenders(fs, wl, tree, mnt):
    q = 'find "$1" -type f -print0 | xargs -0 '
    ncpu = os.cpu_count() or 1
    out = [("iverd", lambda tag: iverd_run(tag, tree))]
    if fs == "ext4":
        out.append(("iverd (list ext4)", lambda tag: iverd_run(tag, tree, runtime_parent=mnt)))
    out += [("sha256sum", lambda tag: shell_run(q + "sha256sum", tree)),
            (f"xargs -P{ncpu} sha256sum", lambda tag: shell_run(q + f"-P{ncpu} sha256sum", tree))]
    if wl == "large":
        out.append(("openssl dgst -sha256", lambda tag: shell_run(q + "openssl dgst -sha256", tree)))
    # the parallel floor's other half (issue 23): as many openssl readers as iverd has
    # workers, xargs' own packing for small files, -n 64 for the 1 MiB ones (balanced readers)
    n64 = "-n 64 " if wl == "large" else ""
    out.append((f"xargs -P{ncpu} openssl dgst -sha256",
                lambda tag: shell_run(q + f"{n64}-P{ncpu} openssl dgst -sha256", tree)))
    out.append(("aide --init", lambda tag: aide_run(tag, tree)))
    return out


def bench_fs(fs, mnt, sz, repeat, rows, trees):
    for wl, small, big in (("small", sz["small"], sz["small_big"]), ("large", 0, sz["large"])):
        tree = os.path.join(mnt, "bulk-" + wl)
        log(f"bulk {fs}/{wl}: making {small:,} small + {big:,} 1 MiB files")
        files, nbytes, plen, gen_s = make_tree(tree, small, big)
        # a file written within the rest interval (2 s) waits for its name to
        # come to rest before it is listed (iverd(8), Names at rest): start
        # from a tree at rest, or the first run's wall holds that wait
        time.sleep(2.2)
        trees.append(dict(fs=fs, workload=wl, files=files, bytes=nbytes, path_bytes_per_file=plen, gen_s=gen_s))
        # round by round, every contender in each, as the real /usr part does: the
        # disk under a loop mount is a file of a shared machine's disk, and a burst
        # of someone else's I/O (or the host still writing back the tree just
        # made) then falls on every contender's runs alike, not on all of one's
        cs = contenders(fs, wl, tree, mnt)
        runs = {name: [] for name, _ in cs}
        for i in range(repeat):
            for k, (name, fn) in enumerate(cs):
                cold = drop_caches() if fs != "tmpfs" else False
                log(f"bulk {fs}/{wl}: {name}" + (f" run {i + 1}" if repeat > 1 else "") + (" (cold)" if cold else ""))
                r = fn(f"bulk-{fs}-{wl}-{len(rows) + k}-{i}")
                r["cold"] = cold
                runs[name].append(r)
        for name, _ in cs:
            best = min(runs[name], key=lambda r: r["wall"])
            rows.append(dict(best, fs=fs, workload=wl, contender=name, files=files, bytes=nbytes,
                             path_bytes_per_file=plen, walls=[r["wall"] for r in runs[name]]))
        shutil.rmtree(tree)


def bulk_initial(mounts, sz, repeat):
    """Every contender on both trees on tmpfs and on cold ext4; returns the bulk result (without memory)."""
    res = dict(sizes=sz, repeat=repeat, rows=[], trees=[], cores=os.cpu_count(), aide=bool(shutil.which("aide")),
               rounds=True)
    res["empty_daemon"] = empty_daemon()
    gib = 1 << 10
    need_mb = (sz["small"] * 4096 + sz["small_big"] * (1 << 20) + sz["large"] * (1 << 20)) // (1 << 20)
    for fs in ("tmpfs", "ext4"):
        if fs == "tmpfs":
            mnt = os.path.join(A.work, "mnt-bulk-tmpfs")
            mounts.tmpfs(mnt, f"size={max(gib, 2 * need_mb)}m,mode=0755")
        else:
            # room for both trees' blocks and the list; inodes for 200,000 files + directories
            mnt = mounts.mount_image("ext4", max(2 * gib, 2 * need_mb), name="bulk-ext4", opts="relatime",
                                     mkfs_opts=("-N", str(max(65536, 2 * sz["small"]))))
        try:
            bench_fs(fs, mnt, sz, repeat, res["rows"], res["trees"])
        finally:
            mounts.release(mnt)
    return res
