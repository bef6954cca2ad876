#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""broken-replay.py QUOTE_DIR PCR: after iverd marked its evidence broken (the
list could not be written), the quoted sha256 value of PCR must be the replay
of a prefix of the quoted list with the broken-evidence value (all-0xFF)
extended once somewhere in it: the PCR holds nothing the list lacks, and no
prefix of the list alone replays to it. Prints "k j" (entries replayed, where
the 0xFF went); exit 1 if no such point exists."""
import hashlib, struct, sys

d, pcr = sys.argv[1], int(sys.argv[2])
data = open(d + "/measurements.bin", "rb").read()
ents, off = [], 0
while off < len(data):
    p, = struct.unpack_from("<I", data, off); off += 4
    tdig = data[off:off + 20]; off += 20
    nl, = struct.unpack_from("<I", data, off); off += 4 + nl
    tl, = struct.unpack_from("<I", data, off); off += 4
    td = data[off:off + tl]; off += tl
    if p == pcr:
        ents.append(b"\xff" * 32 if tdig == b"\0" * 20 else hashlib.sha256(td).digest())
pcrs = open(d + "/pcrs.out", "rb").read()
want = pcrs[-32:]   # sha256 comes last in iverd's selections (sha1:N+sha256:N or sha256:N)
ext = lambda v, x: hashlib.sha256(v + x).digest()
v = b"\0" * 32
for j in range(len(ents) + 1):
    w = ext(v, b"\xff" * 32)
    for k in range(j, len(ents) + 1):
        if w == want:
            print(k, j)
            sys.exit(0)
        if k < len(ents):
            w = ext(w, ents[k])
    if j < len(ents):
        v = ext(v, ents[j])
sys.exit(1)
