# SPDX-License-Identifier: LGPL-2.1-or-later
"""The contenders: the iverd daemons (events, rescan), aide, sha256sum and the heuristic scanner."""
import json
import os
import re
import shutil
import subprocess
import sys
import time

from .common import A, ctl, run_measured, track, untrack


class Daemon:
    def __init__(self, name, tree, rescan_only=False, runtime_on_disk=False, runtime_parent=None, policy=None):
        """runtime_parent: where the runtime directory (the list) goes; default A.rt (tmpfs), or the
        daemon's own directory on the root disk with runtime_on_disk. policy: the policy text (default:
        measure everything under tree)."""
        self.name, self.tree = name, tree
        self.dir = os.path.join(A.work, "d-" + name)
        os.makedirs(self.dir)
        self.run = os.path.join(runtime_parent or (self.dir if runtime_on_disk else A.rt), "run-" + name)
        self.sock = os.path.join(self.run, "iverd.sock")
        self.ascii = os.path.join(self.run, "ascii_runtime_measurements")
        with open(os.path.join(self.dir, "policy"), "w") as f:
            f.write(policy if policy is not None else f"measure path={tree}/** hash=sha256 template=ima-ng\n")
        with open(os.path.join(self.dir, "conf"), "w") as f:
            f.write("[Measure]\nRescanIntervalSec=0\n")
        env = dict(os.environ, IVERD_LOG_STDERR="1")
        if rescan_only:
            env["LD_PRELOAD"] = os.path.join(A.work, "noinotify.so")
        self.logf = open(os.path.join(self.dir, "iverd.log"), "w")
        self.p = subprocess.Popen([os.path.join(A.build, "iverd"), "--on-access", "none", "--config", os.path.join(self.dir, "conf"),
                                   "--policy", os.path.join(self.dir, "policy"),
                                   "--runtime-dir", self.run,
                                   "--state-dir", os.path.join(self.dir, "state"), "--tpm", "none"],
                                  stdout=self.logf, stderr=self.logf, env=env)
        track(self.p)
        for _ in range(400):
            if os.path.exists(self.sock):
                break
            if self.p.poll() is not None:
                raise RuntimeError(f"iverd {name} exited with {self.p.returncode}, see {self.dir}/iverd.log")
            time.sleep(0.025)
        else:
            raise RuntimeError(f"iverd {name}: no socket")

    def settle(self):
        ctl(self, "settle", "--timeout", "3600")

    def rescan(self):
        ctl(self, "rescan")
        self.settle()

    def stats(self):
        return json.loads(ctl(self, "stats", "--json"))

    def status(self):
        return json.loads(ctl(self, "status", "--json"))

    def cpu(self):
        """(precise ns from the threads' schedstat, utime+stime s from /proc/PID/stat)"""
        ns = 0
        tdir = f"/proc/{self.p.pid}/task"
        for t in os.listdir(tdir):
            try:
                with open(f"{tdir}/{t}/schedstat") as f:
                    ns += int(f.read().split()[0])
            except OSError:
                pass
        with open(f"/proc/{self.p.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = int(fields[11]) + int(fields[12])
        return ns / 1e9, ticks / os.sysconf("SC_CLK_TCK")

    def mem(self):
        out = {}
        with open(f"/proc/{self.p.pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM"):
                    out[k] = int(v.split()[0])
        return out

    def listing(self):
        m = {}
        for line in ctl(self, "list", self.tree + "/").splitlines():
            parts = line.split(None, 2)
            if len(parts) == 3 and parts[0].startswith("sha256:"):
                m[parts[2]] = parts[0][7:]
        return m

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(30)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        untrack(self.p)
        self.logf.close()


def settled_run(tag, tree, collect, **kw):
    """A Daemon (kw: its options) from its start until `iverctl settle` returns: (wall, CPU s,
    collect(d) before it stops); its directories removed afterwards (a failed run's log stays)."""
    t0 = time.monotonic()
    d = Daemon(tag, tree, **kw)
    try:
        d.settle()
        wall = time.monotonic() - t0
        cpu = d.cpu()[0]
        got = collect(d)
    finally:
        d.stop()
    shutil.rmtree(d.run, ignore_errors=True)
    shutil.rmtree(d.dir, ignore_errors=True)
    return wall, cpu, got


def delta(a, b):
    return {k: b[k] - a.get(k, 0) for k in b if isinstance(b[k], (int, float))}


HEUR = r'''
import hashlib, marshal, os, sys, json
mode, state, root = sys.argv[1:4]
try:
    with open(state, "rb") as f: old = marshal.load(f)
except FileNotFoundError:
    old = {}
new, rehashed, nbytes, changed, added = {}, 0, 0, [], []
for dp, dn, fn in os.walk(root):
    for name in fn:
        p = os.path.join(dp, name)
        s = os.lstat(p)
        key = (s.st_mtime_ns, s.st_size) if mode == "mtime" else (s.st_atime_ns, s.st_mtime_ns, s.st_ctime_ns, s.st_size)
        prev = old.get(p)
        if prev is not None and tuple(prev[0]) == key:
            new[p] = prev
            continue
        h = hashlib.sha256()
        fd = os.open(p, os.O_RDONLY | os.O_NOATIME)
        while True:
            b = os.read(fd, 1 << 20)
            if not b: break
            h.update(b)
        os.close(fd)
        d = h.hexdigest()
        rehashed += 1; nbytes += s.st_size
        if prev is None: added.append(p)
        elif prev[1] != d: changed.append(p)
        new[p] = (key, d)
removed = [p for p in old if p not in new]
with open(state + ".tmp", "wb") as f: marshal.dump(new, f)
os.replace(state + ".tmp", state)
json.dump({"rehashed": rehashed, "bytes": nbytes, "changed": changed, "added": added, "removed": removed}, sys.stdout)
'''


def aide_conf(path, db, tree, rule):
    rx = re.escape(tree)
    with open(path, "w") as f:
        f.write(f"database_in=file:{db}\ndatabase_out=file:{db}.new\ngzip_dbout=no\n"
                f"report_url=stdout\nreport_level=changed_attributes\n"
                f"BENCH = {rule}\n{rx} BENCH\n")


def aide_parse(text):
    sect, out = None, {"added": set(), "removed": set(), "changed": set()}
    for line in text.splitlines():
        m = re.match(r"^(Added|Removed|Changed) entries:\s*$", line)
        if m:
            sect = m.group(1).lower()
            continue
        if line.startswith("Detailed information") or line.startswith("The attributes of"):
            sect = None
        if sect:
            m = re.match(r"^\S.{16,}?: (/.*)$", line)
            if m:
                out[sect].add(m.group(1))
    return out


class Aide:
    def __init__(self, name, tree, ro_tree, rule):
        self.name, self.tree, self.ro = name, tree, ro_tree
        self.dir = os.path.join(A.work, "aide-" + name)
        os.makedirs(self.dir)
        self.db = os.path.join(self.dir, "db")
        self.conf = os.path.join(self.dir, "aide.conf")
        aide_conf(self.conf, self.db, ro_tree, rule)

    def init(self):
        w, c, rss, rc = run_measured(["aide", "--config", self.conf, "--init"])
        if rc != 0:
            raise RuntimeError(f"aide --init ({self.name}) failed: {rc}")
        os.replace(self.db + ".new", self.db)
        return w, c, rss

    def check(self):
        outp = os.path.join(self.dir, "report.txt")
        with open(outp, "w") as f:
            w, c, rss, rc = run_measured(["aide", "--config", self.conf, "--check"], stdout=f)
        if rc >= 14:
            raise RuntimeError(f"aide --check ({self.name}) failed: {rc}")
        with open(outp) as f:
            rep = aide_parse(f.read())
        # map the noatime view's paths back to the tree's
        rep = {k: {self.tree + p[len(self.ro):] for p in v} for k, v in rep.items()}
        # roll the baseline forward (untimed) so that the next check compares to now
        _, _, _, rc2 = run_measured(["aide", "--config", self.conf, "--update"])
        if os.path.exists(self.db + ".new"):
            os.replace(self.db + ".new", self.db)
        return w, c, rss, rep


def sha256sum_tree(ro_tree, tree, outp):
    with open(outp, "w") as f:
        w, c, rss, rc = run_measured(["sh", "-c", 'cd "$1" && find . -type f -print0 | sort -z | '
                                      'xargs -0 -r sha256sum', "sh", ro_tree], stdout=f)
    if rc != 0:
        raise RuntimeError("sha256sum failed")
    m = {}
    with open(outp) as f:
        for line in f:
            d, _, p = line.rstrip("\n").partition("  ")
            m[tree + p[1:]] = d
    return w, c, rss, m


# the heuristic scanner runs under the system python, as it always has (its
# interpreter start is part of its figures), whichever python runs bench/run
HEUR_PY = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable


def heur_run(mode, state, tree):
    outp = state + ".out"
    with open(outp, "w") as f:
        w, c, rss, rc = run_measured([HEUR_PY, os.path.join(A.work, "heur.py"), mode, state, tree], stdout=f)
    if rc != 0:
        raise RuntimeError(f"heuristic {mode} failed")
    with open(outp) as f:
        r = json.load(f)
    return w, c, rss, r
