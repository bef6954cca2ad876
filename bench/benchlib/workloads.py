# SPDX-License-Identifier: LGPL-2.1-or-later
"""The workloads run on a tree, each returning the changes it made and their true digests."""
import os
import time

from .common import A
from .trees import content, sha256_file, write_file

WORKLOADS = ["read-heavy", "mixed", "tamper", "churn", "metadata"]


def read_all(paths, times):
    n = 0
    for _ in range(times):
        for p in paths:
            fd = os.open(p, os.O_RDONLY)
            while os.read(fd, 1 << 20):
                pass
            os.close(fd)
            n += 1
    return n


def change_content(rng, p, same_size, tag):
    st = os.stat(p)
    if same_size or st.st_size == 0:
        n = min(st.st_size, 4096) or 1
        off = rng.randrange(0, max(1, st.st_size - n + 1))
        fd = os.open(p, os.O_WRONLY)
        os.pwrite(fd, content(rng, n, tag)[:n], off)
        os.close(fd)
    else:
        news = max(1, int(st.st_size * rng.uniform(0.8, 1.25)))
        write_file(p, content(rng, news, tag), st.st_mode & 0o7777)


def workload(name, rng, st):
    """Run one workload on st['paths'] (current files); returns the changes made."""
    paths = st["paths"]
    ch = {"content": [], "metadata": [], "tamper": [], "created": [], "deleted": [], "renamed": []}
    accesses = 0
    n = len(paths)
    if name == "read-heavy":
        accesses = read_all(paths, A.reads)
    elif name == "mixed":
        accesses = read_all(paths, 1)
        k_c, k_m = max(1, round(n * 0.01)), max(1, round(n * 0.005))
        pick = rng.sample(paths, k_c + k_m)
        for i, p in enumerate(pick[:k_c]):
            change_content(rng, p, i % 2 == 0, f"mixed{st['gen']}-{i} {p}")
            ch["content"].append(p)
        for i, p in enumerate(pick[k_c:]):
            if i % 2 == 0:
                os.chmod(p, os.stat(p).st_mode & 0o7777 ^ 0o040)
            else:
                os.chown(p, 1000 + i, -1)
            ch["metadata"].append(p)
        accesses += k_c + k_m
    elif name == "tamper":
        k = max(5, round(n * 0.01))
        for i, p in enumerate(rng.sample(paths, k)):
            s = os.stat(p)
            change_content(rng, p, True, f"tamper{st['gen']}-{i} {p}")
            os.utime(p, ns=(s.st_atime_ns, s.st_mtime_ns))   # mtime (and atime) restored
            ch["tamper"].append(p)
        accesses = k
    elif name == "metadata":
        # a metadata storm (issue 15): chmod -R, chown -R, an xattr on every
        # file (the shape of `evmctl ima_sign -r`), touch -m on 10 %; then
        # the tamper workload again
        for p in paths:
            os.chmod(p, os.stat(p).st_mode & 0o7777 ^ 0o004)
        for p in paths:
            os.chown(p, 4321, 4321)
        for p in paths:
            os.setxattr(p, "user.x", b"signed")
        for p in rng.sample(paths, max(1, n // 10)):
            s = os.stat(p)
            os.utime(p, ns=(s.st_atime_ns, time.time_ns()))
        ch["metadata"] = list(paths)
        k = max(5, round(n * 0.01))
        for i, p in enumerate(rng.sample(paths, k)):
            s = os.stat(p)
            change_content(rng, p, True, f"metatamper{st['gen']}-{i} {p}")
            os.utime(p, ns=(s.st_atime_ns, s.st_mtime_ns))
            ch["tamper"].append(p)
        accesses = 3 * n + max(1, n // 10) + k
    elif name == "churn":
        k = max(3, round(n * 0.01))
        victims = rng.sample(paths, 2 * k)
        dirs = sorted({os.path.dirname(p) for p in paths})
        for i in range(k):
            d = rng.choice(dirs)
            p = os.path.join(d, f"new{st['gen']:02d}-{i:06d}")
            write_file(p, content(rng, int(2 ** rng.uniform(6, 16)), f"created {p}"))
            ch["created"].append(p)
        for p in victims[:k]:
            os.unlink(p)
            ch["deleted"].append(p)
        for i, p in enumerate(victims[k:]):
            q = os.path.join(rng.choice(dirs), f"moved{st['gen']:02d}-{i:06d}")
            os.rename(p, q)
            ch["renamed"].append((p, q))
        accesses = 3 * k
    st["gen"] += 1
    gone = set(ch["deleted"]) | {a for a, _ in ch["renamed"]}
    st["paths"] = [p for p in paths if p not in gone] + ch["created"] + [b for _, b in ch["renamed"]]
    # ground truth digests of everything whose content is new at its path
    truth = {}
    for p in ch["content"] + ch["tamper"] + ch["created"] + [b for _, b in ch["renamed"]]:
        truth[p] = sha256_file(p)
    return ch, truth, accesses


def made(ch):
    return {k: len(v) for k, v in ch.items() if v}
