#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A fake kernel IMA securityfs directory for tests (no code of iverd): appends
one entry to DIR/binary_runtime_measurements, DIR/ascii_runtime_measurements
and DIR/runtime_measurements_count the way the kernel's ima_fs.c shows them,
and prints the tpm2_pcrextend argument that extends it into PCR 10 in every
bank (H_bank of the template data; all-0xFF for a violation), as the kernel
does after adding the entry to its list.

  fake_kernel_ima.py DIR boot_aggregate         ima-sig, sha256 digest, empty sig
  fake_kernel_ima.py DIR ng PATH                ima-ng, sha256 of PATH's name
  fake_kernel_ima.py DIR sig PATH               ima-sig, empty signature
  fake_kernel_ima.py DIR buf NAME TEXT          ima-buf with TEXT as the buffer
  fake_kernel_ima.py DIR ima PATH               the legacy sha1 "ima" template
  fake_kernel_ima.py DIR violation PATH         ima-ng violation (zero digests)
Digests are derived from the names, so a run is reproducible.
"""
import hashlib
import os
import struct
import sys

PCR = 10
BANKS = ("sha1", "sha256", "sha384", "sha512")
SIZES = {"sha1": 20, "sha256": 32, "sha384": 48, "sha512": 64}


def field(b: bytes) -> bytes:
    return struct.pack("<I", len(b)) + b


def entry(kind, args):
    """(template name, template data as listed, data hashed for the banks, file digest, name, tail, violation)"""
    if kind == "boot_aggregate":
        name, algo, digest = b"boot_aggregate", b"sha256", hashlib.sha256(b"pcrs 0-7 of this boot").digest()
        td = field(algo + b":\0" + digest) + field(name + b"\0") + field(b"")
        return "ima-sig", td, td, algo + b":" + digest.hex().encode(), name, b" ", False
    if kind in ("ng", "sig", "violation"):
        name = args[0].encode()
        viol = kind == "violation"
        digest = bytes(32) if viol else hashlib.sha256(b"content of " + name).digest()
        td = field(b"sha256:\0" + digest) + field(name.replace(b" ", b"_") + b"\0")
        tail = b""
        if kind == "sig":
            td += field(b"")
            tail = b" "
        return ("ima-sig" if kind == "sig" else "ima-ng"), td, td, b"sha256:" + digest.hex().encode(), name, tail, viol
    if kind == "buf":
        name, buf = args[0].encode(), args[1].encode()
        digest = hashlib.sha256(buf).digest()
        td = field(b"sha256:\0" + digest) + field(name + b"\0") + field(buf)
        return "ima-buf", td, td, b"sha256:" + digest.hex().encode(), name, b" " + buf.hex().encode(), False
    if kind == "ima":
        name = args[0].encode()
        digest = hashlib.sha1(b"content of " + name).digest()
        hashed = digest + name.ljust(256, b"\0")
        # the binary record: digest without a length, then u32 strlen · name
        td = digest + struct.pack("<I", len(name)) + name
        return "ima", td, hashed, digest.hex().encode(), name, b"", False
    sys.exit(f"unknown kind {kind}")


def main():
    d, kind, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    binf = os.path.join(d, "binary_runtime_measurements")
    tname, td, hashed, dig, name, tail, viol = entry(kind, args)
    th = bytes(20) if viol else hashlib.sha1(hashed).digest()
    rec = struct.pack("<I", PCR) + th + field(tname.encode())
    rec += td if tname == "ima" else field(td)
    with open(binf, "ab") as f:
        f.write(rec)
    line = b"%2d %s %s %s %s%s\n" % (PCR, th.hex().encode(), tname.encode(), dig, name.replace(b" ", b"_"), tail)
    with open(os.path.join(d, "ascii_runtime_measurements"), "ab") as f:
        f.write(line)
    cpath = os.path.join(d, "runtime_measurements_count")
    n = int(open(cpath).read()) if os.path.exists(cpath) else 0
    with open(cpath + ".tmp", "w") as f:
        f.write(f"{n + 1}\n")
    os.rename(cpath + ".tmp", cpath)
    ext = []
    for b in BANKS:
        h = b"\xff" * SIZES[b] if viol else hashlib.new(b, hashed).digest()
        ext.append(f"{b}={h.hex()}")
    print(f"{PCR}:" + ",".join(ext))


if __name__ == "__main__":
    main()
