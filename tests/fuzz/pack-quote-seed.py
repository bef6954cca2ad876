#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""pack-quote-seed.py QUOTE_DIR OUT: pack a directory written by `iverctl quote`
(quote.msg, quote.sig, pcrs.out, nonce, measurements.bin, ak.pub.pem) into the
input format of fuzz-quote.c: six fields, each a u32 little-endian length and
its bytes. The nonce file holds hex and is packed as bytes."""
import struct, sys

d, out = sys.argv[1], sys.argv[2]
parts = []
for name in ("quote.msg", "quote.sig", "pcrs.out", "nonce", "measurements.bin", "ak.pub.pem"):
    b = open("%s/%s" % (d, name), "rb").read()
    if name == "nonce":
        b = bytes.fromhex(b.decode().strip())
    parts.append(struct.pack("<I", len(b)) + b)
open(out, "wb").write(b"".join(parts))
