#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Make a measured tree for scale tests and benchmarks, fast and repeatable:
  scale-tree.py DIR SMALL [BIG [BIG_SIZE]]
SMALL files of 10-200 bytes (content from a seeded PRNG) in directories of
100 (DIR/dNNNN/fNNNNNN), and BIG files of BIG_SIZE bytes (default 1 MiB) in
DIR/big/. Prints the number of files and bytes written."""
import os
import random
import sys


def main():
    root, small = sys.argv[1], int(sys.argv[2])
    big = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    big_size = int(sys.argv[4]) if len(sys.argv) > 4 else 1 << 20
    # the same tree every time unless IVER_TEST_SEED asks for another
    seed = int(os.environ.get("IVER_TEST_SEED") or 14)
    print(f"scale-tree: seed {seed}", file=sys.stderr)
    rnd = random.Random(seed)
    total = 0
    pool = rnd.randbytes(1 << 16)
    for i in range(small):
        if i % 100 == 0:
            d = os.path.join(root, "d%04d" % (i // 100))
            os.makedirs(d, exist_ok=True)
        n = rnd.randint(10, 200)
        o = rnd.randrange(0, len(pool) - n)
        fd = os.open(os.path.join(d, "f%06d" % i), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, i.to_bytes(4, "little") + pool[o:o + n - 4])
        os.close(fd)
        total += n
    if big:
        os.makedirs(os.path.join(root, "big"), exist_ok=True)
        chunk = rnd.randbytes(1 << 20)
        for i in range(big):
            with open(os.path.join(root, "big", "b%04d" % i), "wb") as f:
                left = big_size
                f.write(i.to_bytes(8, "little"))
                left -= 8
                while left > 0:
                    f.write(chunk[:min(left, len(chunk))])
                    left -= min(left, len(chunk))
            total += big_size
    print(small + big, total)


if __name__ == "__main__":
    main()
