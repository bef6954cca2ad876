# SPDX-License-Identifier: LGPL-2.1-or-later
"""The bulk workload (issue 14), second part: memory.

- the cache's resident bytes per file at 100,000 and 1,000,000 files (bench-cache_mem N:
  a /usr-like tree of paths, ~24 files per directory);
- the whole daemon's at the larger size: iverd on a tree of that many small files (scale-tree.py)
  on a tmpfs of its own, peak and settled RSS above the empty daemon's (bulk.py measures it at
  200,000 files in its initial-measurement runs);
- the rename-over churn soak (500 files replaced the way dpkg does it, NAME.dpkg-new renamed over
  NAME): in the cache alone (bench-cache_mem --churn 500 100000) and through the daemon among
  200,000 other files (tests/integration/test-soak.sh, which mounts its own tmpfs, starts and stops
  its own iverd by pid and cleans up on exit, INT and TERM; bench/run stops it by pid)."""
import os
import re
import subprocess
import time

from .bulk import iverd_run, make_tree
from .common import A, log, track, untrack


def cache_mem(*args):
    r = subprocess.run([os.path.join(A.build, "bench", "bench-cache_mem"), *map(str, args)], stdout=subprocess.PIPE,
                       text=True, timeout=3600)
    if r.returncode != 0:
        raise RuntimeError(f"bench-cache_mem {' '.join(map(str, args))}: rc {r.returncode}")
    return {k: float(v) for k, v in (line.split() for line in r.stdout.splitlines())}


def daemon_soak(replacements, tree):
    env = dict(os.environ, IVER_BUILD_DIR=A.build, IVER_SOAK_REPLACEMENTS=str(replacements),
               IVER_SOAK_TREE=str(tree))
    env.pop("CI", None)
    outp = os.path.join(A.work, "test-soak.log")
    with open(outp, "w") as f:
        p = subprocess.Popen(["bash", os.path.join(A.src, "tests", "integration", "test-soak.sh")], env=env,
                             stdout=f, stderr=subprocess.STDOUT)
        # interrupted: bench/run's cleanup sends it SIGTERM; its trap stops its iverd, unmounts, detaches
        track(p, grace=120)
        p.wait()
        untrack(p)
    with open(outp) as f:
        text = f.read()
    m = re.search(r"replacements in (\d+) s, (\d+) of them hashed; RSS (\d+) -> (\d+) kB", text)
    if not m:
        log("test-soak.sh failed (rc %d):\n%s" % (p.returncode, text[-2000:]))
        return dict(replacements=replacements, tree=tree, passed=False, failed=text[-500:])
    a, b = int(m.group(3)), int(m.group(4))
    return dict(replacements=replacements, tree=tree, soak_s=int(m.group(1)), hashed=int(m.group(2)),
                rss_start_kib=a, rss_end_kib=b, growth_pct=100.0 * (b - a) / a, passed=p.returncode == 0)


def daemon_mem(mounts, files):
    """The whole daemon at files small files: its peak and settled RSS, the mean path bytes."""
    mnt = os.path.join(A.work, "mnt-bulk-mem")
    # a page a file and the inodes: nr_inodes=0 lifts tmpfs' inode limit
    mounts.tmpfs(mnt, f"size={files * 6 // 1024 + 1024}m,nr_inodes=0,mode=0755")
    try:
        tree = os.path.join(mnt, "tree")
        log(f"bulk memory: the whole daemon at {files:,} files")
        n, _, plen, _ = make_tree(tree, files, 0)
        time.sleep(2.2)         # a tree at rest (bulk.py)
        r = iverd_run("bulk-mem", tree)
        return dict(files=n, path_bytes_per_file=plen, cached=r["cached"], rss_kib=r["rss_kib"],
                    rss_settled_kib=r["rss_settled_kib"])
    finally:
        mounts.release(mnt)


def bulk_memory(mounts, sz):
    out = {}
    log(f"bulk memory: bench-cache_mem at {' and '.join(f'{n:,}' for n in sz['mem'])} files, churn")
    out["cache_mem"] = [cache_mem(n) for n in sz["mem"]]
    out["churn_cache"] = cache_mem("--churn", 500, sz["churn_cache"])
    out["daemon_mem"] = daemon_mem(mounts, sz["mem"][-1])
    log(f"bulk memory: daemon churn soak, {sz['soak_replacements']:,} replacements among {sz['soak_tree']:,} files "
        "(tests/integration/test-soak.sh)")
    out["churn_daemon"] = daemon_soak(sz["soak_replacements"], sz["soak_tree"])
    return out
