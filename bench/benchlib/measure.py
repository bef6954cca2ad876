# SPDX-License-Identifier: LGPL-2.1-or-later
"""A run: every contender on every tree after every workload, the iverd extras (events/s,
write-to-list latency, scale, bench-check_cost) and results.json."""
import ctypes
import json
import os
import random
import select
import subprocess
import time

from .common import A, log, run_measured, sh
from .contenders import HEUR, Aide, Daemon, delta, heur_run, sha256sum_tree
from .trees import gen_scale, gen_tree
from .workloads import WORKLOADS, made, workload


# ---------------------------------------------------------------- detection

def detect_map(ch, truth, m):
    """Changes visible in a path->digest map (iverd's list, sha256sum's manifest)."""
    d = {}
    for t in ("content", "tamper", "created"):
        if ch[t]:
            d[t] = sum(1 for p in ch[t] if m.get(p) == truth[p])
    if ch["deleted"]:
        d["deleted"] = sum(1 for p in ch["deleted"] if p not in m)
    if ch["renamed"]:
        d["renamed"] = sum(1 for a, b in ch["renamed"] if a not in m and m.get(b) == truth[b])
    return d


def detect_sets(ch, changed, added, removed, meta_visible):
    d = {}
    for t in ("content", "tamper"):
        if ch[t]:
            d[t] = sum(1 for p in ch[t] if p in changed)
    if ch["metadata"]:
        d["metadata"] = sum(1 for p in ch["metadata"] if p in changed) if meta_visible else None
    if ch["created"]:
        d["created"] = sum(1 for p in ch["created"] if p in added)
    if ch["deleted"]:
        d["deleted"] = sum(1 for p in ch["deleted"] if p in removed)
    if ch["renamed"]:
        d["renamed"] = sum(1 for a, b in ch["renamed"] if a in removed and b in added)
    return d


# ---------------------------------------------------------------- one tree


def run_tree(fs, mnt, ro, tname, nfiles, total, seed):
    root = os.path.join(mnt, tname)
    ro_root = os.path.join(ro, tname)
    log(f"{fs}/{tname}: generating {nfiles} files, {total >> 20} MiB (seed {seed})")
    t0 = time.monotonic()
    paths = gen_tree(root, nfiles, total, seed)
    gen_s = time.monotonic() - t0
    res = {"fs": fs, "tree": tname, "files": nfiles, "bytes": sum(os.path.getsize(p) for p in paths),
           "gen_s": gen_s, "workloads": {}}
    st = {"paths": paths, "gen": 0}
    tag = f"{fs}-{tname}"
    dA = dB = None
    try:
        t0 = time.monotonic()
        dA = Daemon(tag + "-inotify", root)
        dB = Daemon(tag + "-rescan", root, rescan_only=True)
        dA.settle(); dB.settle()
        res["initial_settle_s"] = time.monotonic() - t0
        res["init_stats"] = {"inotify": dA.stats(), "rescan": dB.stats()}
        sB = dB.status()
        res["rescan_watches"] = sB["watches"]
        if fs == "ext4" and tname == "small":
            # the same first measurement with the list on the disk instead of tmpfs
            t1 = time.monotonic()
            dD = Daemon(tag + "-disk", root, runtime_on_disk=True)
            try:
                dD.settle()
                res["disk_initial_s"] = time.monotonic() - t1
                res["disk_cpu"] = dD.cpu()[0]
            finally:
                dD.stop()
            t1 = time.monotonic()
            dT = Daemon(tag + "-tmpfs", root)
            try:
                dT.settle()
                res["tmpfs_initial_s"] = time.monotonic() - t1
                res["tmpfs_cpu"] = dT.cpu()[0]
            finally:
                dT.stop()
        res["inotify_watches"] = dA.status()["watches"]
        aide = Aide(tag + "-sha256", root, ro_root, "p+i+n+u+g+s+m+c+sha256")
        res["aide_init"] = aide.init()
        hstate = {m: os.path.join(A.work, f"heur-{tag}-{m}") for m in ("atime", "mtime")}
        for m in hstate:
            heur_run(m, hstate[m], root)
        _, _, _, manifest = sha256sum_tree(ro_root, root, os.path.join(A.work, f"sum-{tag}"))
        rng = random.Random(seed * 7 + 1)
        for wl in WORKLOADS:
            if wl == "tamper":
                # the two alternative AIDE configs get their baseline now (untimed)
                alt = {"aide (mtime config)": Aide(tag + "-mtime", root, ro_root, "p+i+n+u+g+s+m+c"),
                       "aide (default R)": Aide(tag + "-R", root, ro_root, "R")}
                for a in alt.values():
                    a.init()
            log(f"{fs}/{tname}: workload {wl}")
            sA0, sB0 = dA.stats(), dB.stats()
            lA0, lB0 = dA.status()["list_length"], dB.status()["list_length"]
            cA0 = dA.cpu()
            t_wl = time.monotonic()
            ch, truth, accesses = workload(wl, rng, st)
            t_wl_end = time.monotonic()
            dA.settle()
            t_a = time.monotonic()
            cA1 = dA.cpu()
            cB0 = dB.cpu()
            t_b = time.monotonic()
            dB.rescan()
            t_b1 = time.monotonic()
            cB1 = dB.cpu()
            sA1, sB1 = dA.stats(), dB.stats()
            dAs, dBs = delta(sA0, sA1), delta(sB0, sB1)
            lA1, lB1 = dA.status()["list_length"], dB.status()["list_length"]
            mA, mB = dA.listing(), dB.listing()
            nfiles_now, bytes_now = len(st["paths"]), sum(os.path.getsize(p) for p in st["paths"])
            rows = []
            rows.append(dict(c="iverd (events)", files=dAs["first_seen"] + dAs["remeasured"],
                             bytes=dAs["bytes_hashed"], wall=t_a - t_wl_end, cpu=cA1[0] - cA0[0],
                             cpu_ticks=cA1[1] - cA0[1], rss=dA.mem()["VmHWM"],
                             det=dict(detect_map(ch, truth, mA), **({"metadata": None} if ch["metadata"] else {})),
                             new_entries=lA1 - lA0, hash_cpu=dAs["hash_cpu_ns"] / 1e9, checks=dAs["checks"],
                             note="wall: from the workload's end to settled; CPU: from its start"))
            rows.append(dict(c="iverd (rescan)", files=dBs["first_seen"] + dBs["remeasured"],
                             bytes=dBs["bytes_hashed"], wall=t_b1 - t_b, cpu=cB1[0] - cB0[0],
                             cpu_ticks=cB1[1] - cB0[1], rss=dB.mem()["VmHWM"],
                             det=dict(detect_map(ch, truth, mB), **({"metadata": None} if ch["metadata"] else {})),
                             new_entries=lB1 - lB0, hash_cpu=dBs["hash_cpu_ns"] / 1e9, checks=dBs["checks"]))
            # the heuristics as the rescan daemon's ledger counts them
            # (derived from what the rescan daemon detected: the atime heuristic re-hashes at least
            # whatever iverd re-hashes; the mtime heuristic misses `missed_by_mtime` of those changes;
            # a created file is new to everyone; deletions and renames are not judged by the ledger)
            detB = rows[-1]["det"]
            missed = dBs["missed_by_mtime"]
            kinds = [t for t in ("content", "tamper") if ch[t]]
            at_det, mt_det = {}, {}
            if len(kinds) == 1:
                at_det[kinds[0]] = detB[kinds[0]]
                mt_det[kinds[0]] = detB[kinds[0]] - missed
            elif kinds:
                found = detB["content"] + detB["tamper"]
                at_det["content+tamper"], mt_det["content+tamper"] = found, found - missed
            if ch["created"]:
                at_det["created"] = mt_det["created"] = detB["created"]
            rows.append(dict(c="atime heuristic (ledger)", files=dBs["first_seen"] + dBs["atime_rehashes"],
                             bytes=dBs["bytes_hashed"] + dBs["bytes_avoided_vs_atime"], det=at_det,
                             note="counted, not run"))
            rows.append(dict(c="mtime heuristic (ledger)", files=dBs["first_seen"] + dBs["mtime_rehashes"],
                             bytes=dBs["bytes_hashed"] + dBs["bytes_avoided_vs_mtime"], bytes_upper=True,
                             det=mt_det, note="counted, not run; bytes an upper bound"))
            for m in ("atime", "mtime"):
                w, c, rss, r = heur_run(m, hstate[m], root)
                rows.append(dict(c=f"{m} heuristic (real run)", files=r["rehashed"], bytes=r["bytes"], wall=w, cpu=c,
                                 rss=rss, det=detect_sets(ch, set(r["changed"]), set(r["added"]), set(r["removed"]),
                                                          False)))
            w, c, rss, rep = aide.check()
            rows.append(dict(c="aide --check (sha256)", files=nfiles_now, bytes=bytes_now, wall=w, cpu=c, rss=rss,
                             det=detect_sets(ch, rep["changed"], rep["added"], rep["removed"], True)))
            if wl == "tamper":
                for an, a in alt.items():
                    w2, c2, rss2, rep2 = a.check()
                    rows.append(dict(c=an, files=nfiles_now if an.endswith("R)") else 0,
                                     bytes=bytes_now if an.endswith("R)") else 0, wall=w2, cpu=c2, rss=rss2,
                                     det=detect_sets(ch, rep2["changed"], rep2["added"], rep2["removed"], True)))
            w, c, rss, man2 = sha256sum_tree(ro_root, root, os.path.join(A.work, f"sum-{tag}"))
            dsum = detect_map(ch, truth, man2)
            if ch["metadata"]:
                dsum["metadata"] = None
            rows.append(dict(c="sha256sum (full re-hash)", files=len(man2), bytes=bytes_now, wall=w, cpu=c, rss=rss,
                             det=dsum))
            manifest = man2
            res["workloads"][wl] = dict(made=made(ch), accesses=accesses, rows=rows, files_now=nfiles_now,
                                        bytes_now=bytes_now, workload_s=t_wl_end - t_wl,
                                        ledgerB=dBs, ledgerA=dAs)
        # iverd extras on the medium tree: events/s and write-to-list latency
        if tname.startswith("medium") and fs == "ext4":
            res["events"] = events_rate(dA, st)
            res["latency"] = latency(dA, st)
        res["rss_final"] = {"inotify": dA.mem(), "rescan": dB.mem()}
    finally:
        for d in (dA, dB):
            if d:
                d.stop()
    return res


# ---------------------------------------------------------------- iverd extras

def events_rate(d, st):
    """A storm of small writes: how many change events per second iverd absorbs."""
    rng = random.Random(99)
    small = [p for p in st["paths"] if os.path.getsize(p) < 8192]
    files = rng.sample(small, min(A.storm_files, len(small)))
    s0, q0 = d.stats(), d.status()
    c0 = d.cpu()
    t0 = time.monotonic()
    writes, r = 0, 0
    while time.monotonic() - t0 < A.storm_s:
        for p in files:
            fd = os.open(p, os.O_WRONLY | os.O_APPEND)
            os.write(fd, b"# storm %d\n" % r)
            os.close(fd)
            writes += 1
        r += 1
    t_w = time.monotonic()
    d.settle()
    t1 = time.monotonic()
    c1 = d.cpu()
    s1, q1 = d.stats(), d.status()
    events = writes * 2     # modify + close-write per open-write-close
    return dict(files=len(files), writes=writes, events=events, write_s=t_w - t0, total_s=t1 - t0,
                events_per_s=events / (t1 - t0), checks=s1["checks"] - s0["checks"],
                remeasured=s1["remeasured"] - s0["remeasured"],
                coalesced=q1["coalesced_events"] - q0["coalesced_events"],
                overflows=(q1["inotify_overflows"] + q1.get("tracking_overflows", 0))
                - (q0["inotify_overflows"] + q0.get("tracking_overflows", 0)), cpu=c1[0] - c0[0],
                peak_queued=q1["peak_queued"])


class Inotify:
    def __init__(self, path):
        self.libc = ctypes.CDLL("libc.so.6", use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0 or self.libc.inotify_add_watch(self.fd, path.encode(), 0x2) < 0:   # IN_MODIFY
            raise OSError(ctypes.get_errno(), "inotify")

    def wait(self, timeout):
        r, _, _ = select.select([self.fd], [], [], timeout)
        if r:
            try:
                os.read(self.fd, 65536)
            except BlockingIOError:
                pass
        return bool(r)


def latency(d, st):
    """Time from a write to its new line in ascii_runtime_measurements."""
    rng = random.Random(7)
    small = [p for p in st["paths"] if os.path.getsize(p) < 8192]
    files = rng.sample(small, min(A.lat_n, len(small)))
    d.settle()
    ino = Inotify(d.ascii)
    f = open(d.ascii, "rb")
    f.seek(0, 2)
    buf = b""
    lat, lost = [], 0
    for i, p in enumerate(files):
        want = (" " + p + "\n").encode()
        t0 = time.monotonic()
        fd = os.open(p, os.O_WRONLY | os.O_APPEND)
        os.write(fd, b"# latency probe %d\n" % i)
        os.close(fd)
        deadline = t0 + 5
        found = False
        while not found and time.monotonic() < deadline:
            buf += f.read()
            while b"\n" in buf:
                line, _, buf = buf.partition(b"\n")
                if (line + b"\n").endswith(want):
                    found = True
            if not found:
                ino.wait(max(0.0, deadline - time.monotonic()))
        if found:
            lat.append(time.monotonic() - t0)
        else:
            lost += 1
        time.sleep(0.02)
    f.close()
    os.close(ino.fd)
    lat.sort()
    pct = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] if lat else float("nan")
    return dict(n=len(files), got=len(lat), lost=lost, p50=pct(0.50), p99=pct(0.99), max=lat[-1] if lat else None)


def scale_run(fs, mnt, n):
    """Memory per cached file and the cost of a rescan at n files."""
    empty = os.path.join(mnt, "scale-empty")
    os.makedirs(empty)
    root = os.path.join(mnt, "scale")
    os.makedirs(root)
    res = {"fs": fs, "files": n}
    d0 = Daemon(f"{fs}-scale-empty", empty)
    try:
        d0.settle()
        res["base_rss_kib"] = d0.mem()["VmRSS"]
    finally:
        d0.stop()
    log(f"{fs}/scale: generating {n} files")
    t0 = time.monotonic()
    gen_scale(root, n, 5)
    res["gen_s"] = time.monotonic() - t0
    d = Daemon(f"{fs}-scale", root)
    try:
        t0 = time.monotonic()
        d.settle()
        res["initial_s"] = time.monotonic() - t0
        st = d.status()
        res["cached"] = st["cached_files"]
        res["list_entries"] = st["list_length"]
        res["list_bin_bytes"] = os.path.getsize(os.path.join(d.run, "binary_runtime_measurements"))
        res["watches"] = st["watches"]
        m = d.mem()
        res["rss_kib"], res["hwm_kib"] = m["VmRSS"], m["VmHWM"]
        c0 = d.cpu(); s0 = d.stats()
        t0 = time.monotonic()
        d.rescan()
        res["rescan_wall"] = time.monotonic() - t0
        c1 = d.cpu(); s1 = d.stats()
        res["rescan_cpu"] = c1[0] - c0[0]
        res["rescan_rehashed"] = s1["remeasured"] - s0["remeasured"]
        res["rss_after_rescan_kib"] = d.mem()["VmRSS"]
        # the same walk with a bare stat of every file, for scale
        w, c, rss, rc = run_measured(["find", root, "-type", "f", "-printf", "%s\\n"])
        res["find_wall"], res["find_cpu"] = w, c
    finally:
        d.stop()
    return res


def check_cost(mnt):
    log("bench-check_cost")
    r = subprocess.run([os.path.join(A.build, "bench", "bench-check_cost"), mnt], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=1800)
    return r.stdout


def new_results():
    """The results of this run so far: settings and the machine."""
    A.reads = 3
    R = {"mode": A.mode, "cmdline": A.cmdline, "trees": [], "reads": A.reads, "results": [],
         "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    R["machine"] = dict(cores=os.cpu_count(), kernel=os.uname().release,
                        cpu=sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2").strip(),
                        mem_gib=os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30,
                        debian=sh("cat /etc/debian_version"),
                        git=sh(f"git -C {A.src} describe --always --dirty"),
                        build_type=sh(f"grep -m1 '^CMAKE_BUILD_TYPE' {A.build}/CMakeCache.txt | cut -d= -f2") or "?",
                        load_start=open("/proc/loadavg").read().split()[0],
                        aide=sh("aide --version 2>&1 | head -1"),
                        coreutils="coreutils " + sh("dpkg-query -W -f='${Version}' coreutils"),
                        gnuplot=sh("gnuplot --version") or "no gnuplot")
    return R


def measure(R, fss):
    """Every tree on every filesystem, the scale run and bench-check_cost, into R."""
    quick = A.mode == "quick"
    A.storm_files, A.storm_s = (1000, 3) if quick else (2000, 10)
    # each probe waits for its name to come to rest (2 s): a few dozen give the figure
    A.lat_n = 20 if quick else 50
    trees = [("small", 1000, 100 << 20, 1),
             ("medium-reduced", 10000, 256 << 20, 2) if quick else ("medium", 10000, 1 << 30, 2)]
    scale_n = 100_000 if quick else 1_000_000
    with open(os.path.join(A.work, "heur.py"), "w") as f:
        f.write(HEUR)
    R["trees"] = trees
    ext4 = next(x for x in fss if x[0] == "ext4")
    R["check_cost"] = check_cost(ext4[1])
    for fs, mnt, ro in fss:
        for t in trees:
            R["results"].append(run_tree(fs, mnt, ro, *t))
    R["scale"] = scale_run("ext4", ext4[1], scale_n)


def save(R):
    """results.json, once every part has run."""
    R["machine"]["load_end"] = open("/proc/loadavg").read().split()[0]
    R["elapsed_s"] = time.time() - A.t_start
    os.makedirs(A.out, exist_ok=True)
    with open(os.path.join(A.out, "results.json"), "w") as f:
        json.dump(R, f, indent=1, default=list)
    return R
