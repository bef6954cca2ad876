#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""An independent re-implementation of what Keylime's verifier does with an
IMA measurement list in the ASCII format (ascii_runtime_measurements), for
tests: python3 standard library only, no code of iverd.

For every line  `PCR template-hash template-name algo:filehash path [sig]`:
  * rebuild the template_data bytes of ima-ng / ima-sig / ima-buf from the fields:
      d-ng = u32 len | "<algo>:" NUL digest
      n-ng = u32 len | path NUL                (len includes the NUL)
      sig  = u32 len | signature bytes         (ima-sig only; may be empty)
      buf  = u32 len | buffer bytes            (ima-buf only)
    (little-endian lengths, as on x86); for the legacy "ima" template
    (`10 <hash> ima <sha1 hex> <path>`) the hashed data is the digest and the
    path zero-padded to 256 bytes, without lengths (the kernel's
    ima_calc_field_array_hash), as written by a kernel whose list iverd continues;
  * recompute the template hash, SHA-1(template_data), and require it to be
    the line's (an all-zero template hash is a violation: kept as is);
  * replay into one running value per PCR bank: v = H_bank(v | H_bank(template_data)),
    or all-0xFF of the bank size for a violation; a bank the kernel had no
    hash for when its IMA started holds SHA-1(template_data) zero-padded to
    the bank's size instead (the kernel's form, every entry alike), printed
    as "PADDED bank B".
The quote's PCR values must equal the replay of SOME prefix of the list
(0..n entries) in every bank at once: the TPM may lag the list, never lead it.

Quote PCR values are read from a "values" file (tpm2_checkquote -f): the
digests concatenated in selection order (--banks, default sha1,sha256), for
one PCR. The signature of the quote is not checked here (tpm2_checkquote
does that); this script checks the list against the quoted values.

Violations replay (as all-0xFF) but are never passed over in silence: each
is printed, "VIOLATION line N: name", and iverd's restart gap
(iverd-gap:<start>-<end>, a violation listed first when iverd starts again on
this boot's list) as "GAP line N: ... not watching for S s". With a runtime
policy a violation's zero digest is allowed for no path (Keylime's rule), so
a gap rejects the list unless the policy excludes it.

Optionally (--policy FILE) every entry's hex file digest must be listed for
its path in a Keylime runtime policy's "digests" (Keylime's _validate_ima_ng).

--keylime-split parses every line with Keylime's own splitting rules instead
of the lenient ones: the fixed fields by split(" ", 4), then for ima-sig the
rest by split(" ", maxsplit=1) into name and signature (a name holding a space
breaks that line, as it breaks Keylime), every line must decode as strict
UTF-8 and hold no control byte.

Exit 0: accepted; 1: rejected (reason printed); 2: usage / unreadable input.
"""
import argparse
import hashlib
import json
import re
import struct
import sys

BANK_SIZES = {"sha1": 20, "sha256": 32, "sha384": 48, "sha512": 64}
LINE_RE = re.compile(rb"^ *(\d+) ([0-9a-f]{40}) (ima-ng|ima-sig|ima-buf) ([a-z0-9_-]+):([0-9a-f]+) (.*)$")
IMA_RE = re.compile(rb"^ *(\d+) ([0-9a-f]{40}) ima ([0-9a-f]{40}) (.*)$")


class Rejected(Exception):
    pass


def field(data: bytes) -> bytes:
    return struct.pack("<I", len(data)) + data


KEYLIME_SPLIT = False


def keylime_fields(lineno: int, raw: bytes):
    """Keylime's splitting: str.split(" ", 4) for the fixed fields, then the
    ima-sig name and signature by split(" ", maxsplit=1)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Rejected(f"line {lineno}: not UTF-8 ({e})")
    if any(ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f for c in text):
        raise Rejected(f"line {lineno}: control character in the line: {text[:120]!r}")
    tokens = text.split(" ", 4)
    if len(tokens) != 5:
        raise Rejected(f"line {lineno}: {len(tokens)} fields: {text[:120]!r}")
    pcr, thash, tname, dig, rest = tokens
    if tname == "ima" and pcr.isdigit() and re.fullmatch("[0-9a-f]{40}", dig):
        return pcr.encode(), thash.encode(), b"ima", b"sha1", dig.encode(), rest.encode(), b""
    if not pcr.isdigit() or not re.fullmatch("[0-9a-f]{40}", thash) or tname not in ("ima-ng", "ima-sig", "ima-buf"):
        raise Rejected(f"line {lineno}: bad fixed fields: {text[:120]!r}")
    algo, _, hx = dig.partition(":")
    if not re.fullmatch("[0-9a-f]+", hx):
        raise Rejected(f"line {lineno}: bad digest field {dig!r}")
    sig = ""
    if tname in ("ima-sig", "ima-buf"):
        parts = rest.split(" ", maxsplit=1)
        if len(parts) != 2:
            raise Rejected(f"line {lineno}: ima-sig line without a signature field")
        rest, sig = parts
        if sig and not re.fullmatch("[0-9a-f]*", sig):
            raise Rejected(f"line {lineno}: bad signature field {sig[:60]!r} (a space in the name?)")
    return pcr.encode(), thash.encode(), tname.encode(), algo.encode(), hx.encode(), rest.encode(), sig.encode()


def parse_line(lineno: int, raw: bytes):
    if KEYLIME_SPLIT:
        pcr, th, tn, algo, hx, path, sig_hex = keylime_fields(lineno, raw)
        return rebuild(lineno, int(pcr), bytes.fromhex(th.decode()), tn.decode(), algo, bytes.fromhex(hx.decode()),
                       [(path, bytes.fromhex(sig_hex.decode()))])
    m = IMA_RE.match(raw)
    if m:
        return rebuild(lineno, int(m.group(1)), bytes.fromhex(m.group(2).decode()), "ima", b"sha1",
                       bytes.fromhex(m.group(3).decode()), [(m.group(4), b"")])
    m = LINE_RE.match(raw)
    if not m:
        raise Rejected(f"line {lineno}: not an ima-ng/ima-sig/ima-buf/ima line: {raw[:120]!r}")
    pcr = int(m.group(1))
    thash = bytes.fromhex(m.group(2).decode())
    tname = m.group(3).decode()
    algo = m.group(4)
    fdigest = bytes.fromhex(m.group(5).decode())
    rest = m.group(6)
    if tname == "ima-ng":
        candidates = [(rest, b"")]
    else:
        # "<path> <sig hex>" or "<path> " (empty signature; the kernel always
        # prints the separator). The path may contain spaces: it ends at the
        # last space, and the template hash decides if that split was right.
        i = rest.rfind(b" ")
        if i < 0:
            raise Rejected(f"line {lineno}: ima-sig line without a signature field")
        sig_hex = rest[i + 1:]
        if sig_hex and not re.fullmatch(rb"[0-9a-f]*", sig_hex):
            raise Rejected(f"line {lineno}: bad signature field")
        candidates = [(rest[:i], bytes.fromhex(sig_hex.decode()))]
    return rebuild(lineno, pcr, thash, tname, algo, fdigest, candidates)


def rebuild(lineno, pcr, thash, tname, algo, fdigest, candidates):
    for path, sig in candidates:
        if tname == "ima":
            if len(path) > 255 or len(fdigest) != 20:
                raise Rejected(f"line {lineno}: not a valid ima template entry")
            td = fdigest + path.ljust(256, b"\0")
        else:
            td = field(algo + b":\0" + fdigest) + field(path + b"\0")
        if tname in ("ima-sig", "ima-buf"):
            td += field(sig)
        violation = thash == bytes(20)
        if not violation and hashlib.sha1(td).digest() != thash:
            raise Rejected(
                f"line {lineno}: template hash {thash.hex()} does not match the fields "
                f"(SHA-1 of the rebuilt template data is {hashlib.sha1(td).hexdigest()}): "
                f"{path.decode(errors='replace')}"
            )
        return {"pcr": pcr, "violation": violation, "template_data": td, "path": path, "algo": algo.decode(),
                "digest": fdigest}
    raise Rejected(f"line {lineno}: cannot rebuild the template data")


def read_list(path: str):
    with open(path, "rb") as f:
        data = f.read()
    if data and not data.endswith(b"\n"):
        raise Rejected("the list ends inside a line")
    return [parse_line(i + 1, ln) for i, ln in enumerate(data.split(b"\n")[:-1])]


def read_values(path: str, banks):
    with open(path, "rb") as f:
        data = f.read()
    want = sum(BANK_SIZES[b] for b in banks)
    if len(data) != want:
        raise Rejected(f"{path}: {len(data)} bytes, expected {want} for {'+'.join(banks)} of one PCR")
    out, off = {}, 0
    for b in banks:
        out[b] = data[off:off + BANK_SIZES[b]]
        off += BANK_SIZES[b]
    return out


def match_prefix(entries, pcr, quoted):
    """The lengths of every prefix whose replay gives the quoted values, each
    with the banks that matched in the kernel's padded form: a bank the
    kernel had no hash for when its IMA started (Debian's 6.1 kernel: sha384,
    sha512) holds SHA-1(template_data) zero-padded to the bank's size for
    every entry (0xFF in full for a violation); one form a bank, never mixed."""
    run = {b: bytes(BANK_SIZES[b]) for b in quoted}
    pad = dict(run)
    matches = []
    n = 0

    def check(k):
        if all(run[b] == quoted[b] or (b != "sha1" and pad[b] == quoted[b]) for b in quoted):
            matches.append((k, [b for b in quoted if run[b] != quoted[b]]))

    def extend(v, b, d):
        return hashlib.new(b, v + d).digest()

    check(0)
    for e in entries:
        n += 1
        if e["pcr"] == pcr:
            for b in quoted:
                size = BANK_SIZES[b]
                if e["violation"]:
                    real = padded = b"\xff" * size
                else:
                    real = hashlib.new(b, e["template_data"]).digest()
                    padded = hashlib.sha1(e["template_data"]).digest().ljust(size, b"\0")
                run[b] = extend(run[b], b, real)
                pad[b] = extend(pad[b], b, padded)
        check(n)
    return matches, run


def check_policy(entries, policy_path):
    with open(policy_path) as f:
        pol = json.load(f)
    digests = pol["digests"]
    excl = [re.compile(x) for x in pol.get("excludes", [])]
    bad = []
    for i, e in enumerate(entries):
        path = e["path"].decode("utf-8", errors="surrogateescape")
        if any(r.match(path) for r in excl):
            continue
        allowed = digests.get(path)
        if allowed is None or e["digest"].hex() not in allowed:
            bad.append((i, path, e["digest"].hex(), allowed))
    return bad


GAP_RE = re.compile(rb"iverd-gap:(unknown|[1-9][0-9]*|0)-([1-9][0-9]*|0)")


def print_violations(entries):
    for i, e in enumerate(entries):
        if not e["violation"]:
            continue
        name = e["path"].decode("utf-8", errors="replace")
        m = GAP_RE.fullmatch(e["path"])
        if not m:
            print(f"VIOLATION line {i + 1}: {name} (extended as all-0xFF)")
        elif m.group(1) == b"unknown":
            print(f"GAP line {i + 1}: {name}: iverd was not watching for an unknown time before {int(m.group(2))}")
        else:
            print(f"GAP line {i + 1}: {name}: iverd was not watching for {int(m.group(2)) - int(m.group(1))} s")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("list", help="ascii_runtime_measurements")
    ap.add_argument("values", help="quoted PCR values (digests concatenated in bank order)")
    ap.add_argument("--pcr", type=int, default=10)
    ap.add_argument("--banks", default="sha1,sha256")
    ap.add_argument("--policy", help="Keylime runtime policy (JSON) to check every entry against")
    ap.add_argument("--keylime-split", action="store_true", help="split lines exactly as Keylime does")
    a = ap.parse_args()
    global KEYLIME_SPLIT
    KEYLIME_SPLIT = a.keylime_split
    banks = a.banks.split(",")
    try:
        for b in banks:
            if b not in BANK_SIZES:
                raise Rejected(f"unknown bank {b}")
        quoted = read_values(a.values, banks)
        entries = read_list(a.list)
    except OSError as e:
        print(f"keylime_verify: {e}", file=sys.stderr)
        return 2
    except Rejected as e:
        print(f"REJECTED: {e}")
        return 1
    print(f"parsed {len(entries)} lines; every template hash recomputed and matches")
    print_violations(entries)
    matches, final = match_prefix(entries, a.pcr, quoted)
    if not matches:
        print(f"REJECTED: the quoted PCR {a.pcr} matches no prefix of the list")
        for b in banks:
            print(f"  {b}: quoted {quoted[b].hex()}  replay of all {len(entries)}: {final[b].hex()}")
        return 1
    k, padded = matches[-1]
    print(f"PCR {a.pcr} " + " ".join(f"{b}:{quoted[b].hex()}" for b in banks))
    for b in padded:
        print(f"PADDED bank {b}: every entry in the kernel's padded SHA-1 form (SHA-1's strength only)")
    print(f"quoted PCR values = replay of the first {k} of {len(entries)} entries"
          + (" (the list runs ahead of the quote)" if k < len(entries) else ""))
    if a.policy:
        bad = check_policy(entries, a.policy)
        for i, path, h, allowed in bad:
            why = "not in policy" if allowed is None else "allowed: " + ", ".join(allowed)
            print(f"  policy: entry {i}: {path} {h} ({why})")
        if bad:
            print(f"REJECTED: {len(bad)} entries not allowed by the runtime policy")
            return 1
        print("runtime policy: every entry allowed")
    print("ACCEPTED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
