# SPDX-License-Identifier: LGPL-2.1-or-later
"""Seeded trees: a realistic size mix for the small and medium trees, tiny files for the scale run."""
import hashlib
import os
import random


def sha256_file(path):
    h = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOATIME)
    try:
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            h.update(b)
    finally:
        os.close(fd)
    return h.hexdigest()


_POOL = None


def pool():
    global _POOL
    if _POOL is None:
        _POOL = random.Random(20261203).randbytes(8 << 20)
    return _POOL


def content(rng, size, tag):
    """Seeded bytes: a tag (unique per file and version, the version first so
    that a short file differs too) then a slice of a random pool."""
    head = (tag + "\n").encode()[:size]
    out, need = [head], size - len(head)
    p = pool()
    while need > 0:
        off = rng.randrange(0, len(p) - 1)
        n = min(need, len(p) - off)
        out.append(p[off:off + n])
        need -= n
    return b"".join(out)


def size_mix(rng, n, total):
    """Realistic mix: many small config files, some multi-MB binaries; the
    large classes are scaled so that the sizes add up to total."""
    sizes = []
    for _ in range(n):
        r = rng.random()
        if r < 0.70:
            sizes.append(int(2 ** rng.uniform(6, 13)))          # 64 B .. 8 KiB: configs, scripts
        elif r < 0.92:
            sizes.append(int(2 ** rng.uniform(13, 18)))         # 8 .. 256 KiB
        elif r < 0.99:
            sizes.append(int(2 ** rng.uniform(18, 21)))         # 256 KiB .. 2 MiB: libraries
        else:
            sizes.append(int(2 ** rng.uniform(21, 24)))         # 2 .. 16 MiB: binaries
    small = sum(s for s in sizes if s <= 65536)
    big = sum(s for s in sizes if s > 65536)
    f = max(0.01, (total - small) / big)
    return [s if s <= 65536 else max(65537, int(s * f)) for s in sizes]


def write_file(path, data, mode=0o644):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        mv = memoryview(data)
        while mv:
            mv = mv[os.write(fd, mv):]
    finally:
        os.close(fd)


def gen_tree(root, nfiles, total, seed, per_dir=100):
    rng = random.Random(seed)
    sizes = size_mix(rng, nfiles, total)
    kinds = ["etc", "bin", "lib", "share", "opt"]
    paths = []
    for i, s in enumerate(sizes):
        d = os.path.join(root, kinds[(i // per_dir) % len(kinds)], f"d{i // per_dir:04d}")
        if i % per_dir == 0:
            os.makedirs(d, exist_ok=True)
        p = os.path.join(d, f"f{i:07d}")
        write_file(p, content(rng, s, f"v0 {p}"), 0o755 if s > 65536 else 0o644)
        paths.append(p)
    os.sync()
    return paths


def gen_scale(root, nfiles, seed, per_dir=1000):
    rng = random.Random(seed)
    for i in range(nfiles):
        if i % per_dir == 0:
            d = os.path.join(root, f"d{i // per_dir:05d}")
            os.mkdir(d)
        fd = os.open(os.path.join(d, f"f{i:07d}"), os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, b"k%d=%d\n" % (i, rng.randrange(1 << 30)))
        os.close(fd)
    os.sync()


def tree_files(root):
    out = []
    for dp, dn, fn in os.walk(root):
        dn.sort()
        for f in sorted(fn):
            out.append(os.path.join(dp, f))
    return out
