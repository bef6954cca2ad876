# SPDX-License-Identifier: LGPL-2.1-or-later
"""What every part of bench/run shares: the run settings A, logging, the processes it
started (killed by pid at exit), runm-measured runs and iverctl."""
import os
import signal
import subprocess
import sys
import time
import types

A = types.SimpleNamespace()   # run settings, filled in by bench/run (never rebound)
PROCS = {}        # pid -> Popen of every process we started and have not reaped
GRACE = {}        # pid -> seconds it may take to end after SIGTERM (default 10)
T0 = time.monotonic()


def log(*a):
    print(f"# [{time.monotonic() - T0:6.1f}s]", *a, file=sys.stderr, flush=True)


def die(msg, rc=1):
    print(f"bench/run: {msg}", file=sys.stderr)
    sys.exit(rc)


def on_signal(signum, frame):
    # unwinds through every try/finally, so that bench/run's cleanup (kill_all, Mounts.cleanup) runs
    raise SystemExit(128 + signum)


def track(p, grace=10):
    PROCS[p.pid] = p
    GRACE[p.pid] = grace


def untrack(p):
    PROCS.pop(p.pid, None)
    GRACE.pop(p.pid, None)


def kill_all():
    """SIGTERM every process we started (by pid), reap it, SIGKILL what does not end within its grace
    (10 s; longer for a test script that cleans up its own mounts on SIGTERM)."""
    for pid in list(PROCS):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    for pid, p in list(PROCS.items()):
        try:
            p.wait(GRACE.get(pid, 10))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        untrack(p)

def run_measured(cmd, stdout=None, env=None):
    """Run cmd under runm: (wall s, cpu s (user+sys of it and its children), peak RSS KiB, rc)."""
    res = os.path.join(A.work, "runm.out")
    p = subprocess.Popen([os.path.join(A.work, "runm"), res, *cmd],
                         stdout=stdout if stdout is not None else subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, env=env)
    track(p)
    p.wait()
    untrack(p)
    if p.returncode != 0:
        raise RuntimeError(f"runm {cmd[0]}: {p.returncode}")
    with open(res) as f:
        w, c, rss, rc = f.read().split()
    return float(w), float(c), int(rss), int(rc)


def ctl(d, *args, check=True):
    r = subprocess.run([os.path.join(A.build, "iverctl"), "--socket", d.sock, *args],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=3600)
    if check and r.returncode != 0:
        raise RuntimeError(f"iverctl {' '.join(args)}: rc {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True).stdout.strip()
    except OSError:
        return ""
