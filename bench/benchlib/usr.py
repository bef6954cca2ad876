# SPDX-License-Identifier: LGPL-2.1-or-later
"""The real-/usr part of the bulk targets (issue 23): the shipped default policy's files under this
host's /usr, measured from nothing, cold and warm, by iverd and by the parallel floor.

The policy is policy/iverd.policy with its measure rules outside /usr left out (/bin, /sbin, /lib and
/lib64 lead into /usr on a merged-/usr host; /boot and /etc are not /usr); every dont_measure rule
stays, so iverd walks /usr and applies the shipped exclusions (docs, man pages, locales, debug
symbols), path globs and mode=exec as shipped. A first, untimed iverd run gives the files: the names
`iverctl list /usr/` lists that are regular files (symbolic links, which iverd lists with the digest
of their target string, are left out), in a NUL-separated list file, shuffled (seeded) so that each
batch of -n names mixes large and small files. Each name is given to the xargs contenders, so a file with several hard links is hashed once per name by them and once per inode by
iverd (its cache is keyed by inode). The contenders:
  iverd                      the daemon (--tpm none --on-access none, RescanIntervalSec=0, default
                             workers, its list on tmpfs as /run is), wall from its start until
                             `iverctl settle` returns: its walk of /usr and its policy decisions
                             included, which the xargs contenders get for free from the list file
  xargs -PN sha256sum        xargs -0 -a LIST -n B -PN sha256sum (N = cores, B = files / (32 N) rounded
                             up: left to pack its command lines, xargs puts the shipped policy's few
                             thousand /usr paths (127 KB here) into one or two commands, one reader,
                             not N; with 32 batches a reader, -P balances them over the N readers)
  xargs -PN openssl          xargs -0 -a LIST -n B -PN openssl dgst -sha256
  ... with find's walk       the same, while `find` walks the directories the policy's measure rules
                             name (its dont_measure subtrees pruned) and stats every file
                             (-perm /111): what hashing the same files costs a tool that must find
                             them, as iverd must; a reference row, not the target's floor
cold: sync; echo 3 > /proc/sys/vm/drop_caches before every run; warm: one untimed run of the same
contender first. Best of `repeat` runs. The target: iverd ≤ 1.1× the faster xargs contender."""
import os
import random
import re
import stat
import subprocess
import time

from .bulk import drop_caches
from .common import A, ctl, log, run_measured
from .contenders import settled_run

ROOT = "/usr"
POLICY = "policy/iverd.policy"
# a measure rule whose path= lies outside ROOT: left out (dont_measure rules all stay)
MEASURE_PATH = re.compile(r'^\s*measure\s+(?:.*\s)?path=("?)(/[^\s"]*)')
DONT_MEASURE_TREE = re.compile(r'^\s*dont_measure\s+path=(/[^\s"*?\[{]*)/\*\*\s*$')


def usr_policy():
    """The shipped policy restricted to ROOT: (text, the rules left out). Linted by iverctl policy check."""
    kept, dropped = [], []
    with open(os.path.join(A.src, POLICY)) as f:
        for line in f:
            m = MEASURE_PATH.match(line)
            if m and not (m.group(2) + "/").startswith(ROOT + "/"):
                dropped.append(line.strip())
                continue
            kept.append(line)
    text = f"# {POLICY} restricted to {ROOT} by bench/benchlib/usr.py\n" + "".join(kept)
    path = os.path.join(A.work, "usr.policy")
    with open(path, "w") as f:
        f.write(text)
    r = subprocess.run([os.path.join(A.build, "iverctl"), "policy", "check", path], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"iverctl policy check {path}: {r.stdout.strip()}")
    return text, dropped


def walk_args(policy):
    """find's arguments for a walk of the directories policy's measure rules name under ROOT (the path
    before its first glob, or its directory), dont_measure subtrees pruned, every file stat'ed."""
    roots, prune = [], []
    for line in policy.splitlines():
        m = MEASURE_PATH.match(line)
        if m:
            p = re.split(r"[*?\[{]", m.group(2))[0]
            roots.append(p.rstrip("/") if p.endswith("/") else os.path.dirname(p))
        m = DONT_MEASURE_TREE.match(line)
        if m and (m.group(1) + "/").startswith(ROOT + "/"):
            prune.append(m.group(1))
    roots = sorted(r for r in set(roots) if os.path.isdir(r))
    roots = [r for r in roots if not any(r.startswith(o + "/") for o in roots)]
    expr = [x for p in prune for x in ("-o", "-path", p)][1:]
    return [*roots, *(["(", *expr, ")", "-prune", "-o"] if expr else []), "-type", "f", "-perm", "/111", "-fprint",
            "/dev/null"]


def iverd_run(tag, policy, want_list=False):
    wall, cpu, (wait, st, s, listing) = settled_run(
        tag, ROOT, lambda d: (runq_wait(d.p.pid), d.status(), d.stats(),
                              ctl(d, "list", ROOT + "/") if want_list else None), policy=policy)
    r = dict(wall=wall, cpu=cpu, runq_wait=wait, cached=st["cached_files"], listed=st["list_length"], errors=st["errors"],
             seen=st["scan_files_seen"], hashed_bytes=s["bytes_hashed"], hash_cpu=s["hash_cpu_ns"] / 1e9)
    return r, listing


def runq_wait(pid):
    """Seconds the process's live threads waited runnable for a CPU (schedstat's second field)."""
    ns = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                ns += int(f.read().split()[1])
        except OSError:
            pass
    return ns / 1e9


def file_list(listing, out):
    """The regular files among the listed names, NUL-separated into out in a seeded random order; what the
    list holds, counted."""
    names, links, other, gone, inodes, nbytes, ibytes = [], 0, 0, 0, set(), 0, 0
    for line in listing.splitlines():
        parts = line.split(None, 2)
        if len(parts) != 3 or ":" not in parts[0]:
            continue
        p = parts[2]
        try:
            s = os.lstat(p)
        except OSError:
            gone += 1        # gone since, or a name the listing shows in the list's escaped form
            continue
        if stat.S_ISLNK(s.st_mode):
            links += 1
        elif not stat.S_ISREG(s.st_mode):
            other += 1
        else:
            names.append(p)
            nbytes += s.st_size
            if (s.st_dev, s.st_ino) not in inodes:
                inodes.add((s.st_dev, s.st_ino))
                ibytes += s.st_size
    random.Random(23).shuffle(names)
    with open(out, "wb") as f:
        for p in names:
            f.write(os.fsencode(p) + b"\0")
    return dict(files=len(names), bytes=nbytes, inodes=len(inodes), inode_bytes=ibytes, symlinks=links,
                other=other, unlisted=gone)


def xargs_run(cmd, lst, walk=None):
    """xargs -0 -a LIST ... cmd (while find walks, given its arguments): (wall, cpu); rc 123 (some invocation
    failed: a file gone) is logged, not fatal."""
    argv = ["xargs", "-0", "-a", lst, *cmd]
    if walk:
        argv = ["bash", "-c", 'find "${@:2:$1}" 2>/dev/null & shift $(($1 + 1)); "$@"; rc=$?; wait; exit $rc', "walk",
                str(len(walk)), *walk, *argv]
    w, c, rss, rc = run_measured(argv)
    if rc not in (0, 123):
        raise RuntimeError(f"xargs {' '.join(cmd)}: rc {rc}")
    if rc == 123:
        log(f"usr: xargs {' '.join(cmd)}: some files could not be hashed (rc 123)")
    return dict(wall=w, cpu=c, rc=rc)


def usr_bench(repeat):
    """The real-/usr runs; returns the usr result for results.json."""
    t0, load0 = time.time(), open("/proc/loadavg").read().split()[0]
    ncpu = os.cpu_count() or 1
    policy, dropped = usr_policy()
    log(f"usr: first iverd run over {ROOT} (the shipped policy restricted to {ROOT}; untimed: the file list)")
    first, listing = iverd_run("usr-first", policy, want_list=True)
    lst = os.path.join(A.work, "usr-files.list0")
    fl = file_list(listing, lst)
    log(f"usr: {fl['files']:,} regular files ({fl['bytes'] / 1e6:.0f} MB), {fl['inodes']:,} inodes "
        f"({fl['inode_bytes'] / 1e6:.0f} MB), {fl['symlinks']:,} symlinks; iverd saw {first['seen']:,} files under "
        f"{ROOT}, cached {first['cached']:,}, hashed {first['hashed_bytes'] / 1e6:.0f} MB")
    fl["batch"] = n = max(1, -(-fl["files"] // (32 * ncpu)))
    contenders = [("iverd", lambda tag: iverd_run(tag, policy)[0]),
                  (f"xargs -P{ncpu} sha256sum", lambda tag: xargs_run(["-n", str(n), f"-P{ncpu}", "sha256sum"], lst)),
                  (f"xargs -P{ncpu} openssl dgst -sha256",
                   lambda tag: xargs_run(["-n", str(n), f"-P{ncpu}", "openssl", "dgst", "-sha256"], lst))]
    walk = walk_args(policy)
    contenders.append((f"xargs -P{ncpu} openssl dgst -sha256 with find's walk",
                       lambda tag: xargs_run(["-n", str(n), f"-P{ncpu}", "openssl", "dgst", "-sha256"], lst, walk)))
    rows, dropped_ok = [], True
    for temp in ("cold", "warm"):
        # round by round, every contender in each (the machine is shared: a burst of someone else's
        # load then falls on every contender's runs alike, not on all of one contender's)
        runs = {name: [] for name, _ in contenders}
        for i in range(repeat):
            for name, fn in contenders:
                if temp == "warm" and i == 0:
                    log(f"usr {temp}: {name} (untimed, to warm the page cache)")
                    fn(f"usr-warmup-{name.split()[0]}")
                if temp == "cold":
                    dropped_ok = drop_caches() and dropped_ok
                load = float(open("/proc/loadavg").read().split()[0])
                r = fn(f"usr-{temp}-{name.split()[-1]}-{i}")
                r["load"] = load
                runs[name].append(r)
                log(f"usr {temp}: {name}" + (f" run {i + 1}" if repeat > 1 else "") +
                    f": {r['wall']:.2f} s wall, {r['cpu']:.2f} s CPU" +
                    (f" ({r['runq_wait']:.2f} s waiting for a CPU)" if "runq_wait" in r else "") +
                    f"; load {load:.2f}")
        for name, _ in contenders:
            best = min(runs[name], key=lambda r: r["wall"])
            rows.append(dict(best, temp=temp, contender=name, files=fl["files"], bytes=fl["bytes"],
                             walls=[r["wall"] for r in runs[name]], loads=[r["load"] for r in runs[name]]))
        floor = min((r for r in rows if r["temp"] == temp and r["contender"] != "iverd" and "walk" not in r["contender"]),
                    key=lambda r: r["wall"])
        i = next(r for r in rows if r["temp"] == temp and r["contender"] == "iverd")
        log(f"usr {temp}: iverd {i['wall']:.2f} s vs the parallel floor {floor['wall']:.2f} s ({floor['contender']}): "
            f"{i['wall'] / floor['wall']:.2f}× (target ≤ 1.1×)")
    os.unlink(lst)
    return dict(root=ROOT, policy=POLICY, dropped_rules=dropped, repeat=repeat, cores=ncpu, list=fl,
                first=first, rows=rows, cold_dropped=dropped_ok, elapsed_s=time.time() - t0, load_start=load0,
                load_end=open("/proc/loadavg").read().split()[0],
                fs=subprocess.run(["findmnt", "-rn", "-o", "FSTYPE,SOURCE,OPTIONS", "-T", ROOT],
                                  stdout=subprocess.PIPE, text=True).stdout.strip())
