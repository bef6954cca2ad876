#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Names a local user chooses cannot forge, break or hide evidence (issue 13,
# items 1-3). A tree on its own tmpfs holds files whose names carry spaces,
# tabs, newlines, CR, ESC, C1 controls and invalid UTF-8, and the forgery of
# item 1: a directory named "a\n23 <sha1> ima-ng sha256:<D> " holding
# usr/sbin/sshd, so that a raw ASCII list would carry the line
# "23 <sha1> ima-ng sha256:<D> /usr/sbin/sshd" with a template hash that
# matches its fields. The real iverd with swtpm measures the tree; then
#   1  a line-based verifier written here (Keylime's splitting: split(" ", 4),
#      ima-sig name/signature by split(" ", maxsplit=1); strict UTF-8) parses
#      every line, every template hash matches, the binary list and the ASCII
#      list agree name for name, no line names /usr/sbin/sshd, and every file
#      is listed under its kernel-form name with its sha256sum
#   2  evmctl ima_measurement matches the binary list to the TPM's PCRs
#   3  "report 2024.txt" under an ima-sig and an ima-ng rule passes the
#      Keylime-style check (keylime_verify.py --keylime-split) against a quote
#      and an allowlist in the kernel form (built from the filesystem, and the
#      one `iverctl policy export --keylime` writes)
#   4  on a terminal, iverctl prints no ESC byte of a name
# Needs root, swtpm, tpm2-tools, evmctl (skips with 77 without swtpm).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-fleet.sh
source "$here/lib-fleet.sh"
VERIFY=$here/keylime_verify.py
PCR=23

for t in python3 tpm2_pcrread tpm2_checkquote evmctl openssl; do command -v $t >/dev/null || fail "$t not installed"; done
fleet_init names
names_cleanup() {
        local rc=$? i
        for ((i = ${#FLEET_PIDS[@]} - 1; i >= 0; i--)); do fleet_stop_pid "${FLEET_PIDS[i]}"; done
        mountpoint -q "$D/tree" && umount "$D/tree"
        set +e
        (exit "$rc")
        fleet_cleanup
}
trap names_cleanup EXIT
mount -t tmpfs -o size=16m,mode=0755 iver-names "$D/tree"
fleet_start_swtpm

T=$D/tree
mkdir -p "$T/ng" "$T/sig"
# the forgery: a directory whose name holds "\n" and a whole list line
read -r FORGED_D FORGED_SHA1 < <(python3 - <<'EOF'
import hashlib, struct
f = lambda b: struct.pack("<I", len(b)) + b
d = hashlib.sha256(b"evil sshd\n").digest()
td = f(b"sha256:\0" + d) + f(b"/usr/sbin/sshd\0")
print(d.hex(), hashlib.sha1(td).hexdigest())
EOF
)
FORGE_DIR="$T/ng/a"$'\n'"$PCR $FORGED_SHA1 ima-ng sha256:$FORGED_D "
mkdir -p "$FORGE_DIR/usr/sbin"
printf 'harmless\n' >"$FORGE_DIR/usr/sbin/sshd"
names=('report 2024.txt' $'tab\there' $'new\nline' $'cr\rhere' $'esc\e[31mred' $'bad\xff\xfeutf8' $'c1\xc2\x9bcsi'
        'caf'$'\xc3\xa9'' ok' 'plain')
for n in "${names[@]}"; do
        printf 'content of [%s]\n' "$n" >"$T/ng/$n"
        printf '#!/bin/sh\necho [%s]\n' "$n" >"$T/sig/$n"
done
cat >"$D/policy" <<EOF
measure path=$T/ng/** hash=sha256 template=ima-ng
measure path=$T/sig/** hash=sha256 template=ima-sig
EOF
fleet_start_iverd "$D/policy" --tpm "swtpm:path=$D/tpm/swtpm.sock" --pcr $PCR
ctl settle --timeout 60
LIST=$D/run/ascii_runtime_measurements
BIN=$D/run/binary_runtime_measurements
[ -s "$LIST" ] || fail "no $LIST"
(cd "$T" && find . -type f -print0) >"$D/files0"

step "1: a line-based verifier (Keylime's splitting) over the ASCII list"
python3 - "$LIST" "$BIN" "$T" "$D/files0" "$FORGED_SHA1" "$D/allow.json" <<'EOF'
import hashlib, json, os, re, struct, sys
lst, binp, tree, files0, forged, allow_out = sys.argv[1:]

def kernel_form(b):
    """The name iverd stores (include/iver/imalog.h), written from its spec."""
    out, i = bytearray(b), 0
    while i < len(b):
        c = b[i]
        n = 1 if c < 0x80 else 2 if 0xc2 <= c <= 0xdf else 3 if 0xe0 <= c <= 0xef else 4 if 0xf0 <= c <= 0xf4 else 0
        try:
            cp = ord(b[i:i + n].decode("utf-8")) if n else None
        except UnicodeDecodeError:
            cp = None
        if cp is None:
            n = 1
        if cp is None or cp <= 0x20 or 0x7f <= cp <= 0xa0 or cp in (0x1680, 0x200e, 0x200f, 0x205f, 0x3000) \
                or 0x2000 <= cp <= 0x200a or 0x2028 <= cp <= 0x202f or 0x2066 <= cp <= 0x2069:
            out[i:i + n] = b"_" * n
        i += n
    return bytes(out)

f = lambda b: struct.pack("<I", len(b)) + b
bad = []
data = open(lst, "rb").read()
try:
    text = data.decode("utf-8")      # a UTF-8 line reader must not choke
except UnicodeDecodeError as e:
    sys.exit(f"FAIL: the ASCII list is not UTF-8: {e}")
lines = text.split("\n")
if lines[-1] != "":
    sys.exit("FAIL: the list does not end in a newline")
entries = []
for no, line in enumerate(lines[:-1], 1):
    if any(ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f for c in line):
        bad.append(f"line {no}: control character: {line!r}")
    tokens = line.split(" ", 4)               # Keylime: the fixed fields
    if len(tokens) != 5:
        bad.append(f"line {no}: {len(tokens)} fields: {line!r}")
        continue
    pcr, thash, tname, dig, rest = tokens
    sig = ""
    if tname == "ima-sig":
        parts = rest.split(" ", maxsplit=1)   # Keylime: name, then signature
        if len(parts) != 2:
            bad.append(f"line {no}: no signature field: {line!r}")
            continue
        rest, sig = parts
    elif tname != "ima-ng":
        bad.append(f"line {no}: template {tname!r}: {line!r}")
        continue
    if not pcr.strip().isdigit() or not re.fullmatch("[0-9a-f]{40}", thash) or not re.fullmatch("[0-9a-f]*", sig):
        bad.append(f"line {no}: bad fields: {line!r}")
        continue
    algo, _, hx = dig.partition(":")
    td = f(algo.encode() + b":\0" + bytes.fromhex(hx)) + f(rest.encode() + b"\0")
    if tname == "ima-sig":
        td += f(bytes.fromhex(sig))
    if thash != "0" * 40 and hashlib.sha1(td).hexdigest() != thash:
        bad.append(f"line {no}: template hash does not match: {line!r}")
    if thash == forged or rest == "/usr/sbin/sshd":
        bad.append(f"line {no}: FORGED line naming /usr/sbin/sshd: {line!r}")
    entries.append((tname, rest.encode(), hx))
print(f"{len(entries)} lines parsed with Keylime's rules, every template hash recomputed")

# the binary list says the same, name for name
b = open(binp, "rb").read()
off, names = 0, []
while off < len(b):
    nlen = struct.unpack_from("<I", b, off + 24)[0]
    tlen = struct.unpack_from("<I", b, off + 28 + nlen)[0]
    td = b[off + 32 + nlen: off + 32 + nlen + tlen]
    dl = struct.unpack_from("<I", td, 0)[0]
    pl = struct.unpack_from("<I", td, 4 + dl)[0]
    names.append(td[8 + dl: 8 + dl + pl - 1])
    off += 32 + nlen + tlen
if names != [e[1] for e in entries]:
    bad.append(f"binary list ({len(names)} names) and ASCII list ({len(entries)}) disagree")
print(f"binary list: {len(names)} records, the same names in the same order")

# every file listed under its kernel-form name, with its content's digest
allow = {}
have = {(e[1], e[2]) for e in entries}
for rel in open(files0, "rb").read().split(b"\0"):
    if not rel:
        continue
    p = os.path.join(os.fsencode(tree), rel[2:])
    d = hashlib.sha256(open(p, "rb").read()).hexdigest()
    k = kernel_form(p)
    allow.setdefault(k.decode(), []).append(d)
    if (k, d) not in have:
        bad.append(f"{p!r} not listed as {k!r} {d}")
print(f"{len(allow)} files, each listed under its kernel-form name with its sha256sum")
json.dump({"meta": {"version": 1}, "release": 0, "digests": allow, "excludes": []}, open(allow_out, "w"))
for x in bad:
    print("  " + x)
if bad:
    sys.exit(f"FAIL: {len(bad)} problems")
EOF
grep -a -n "sshd" "$LIST" | sed 's/^/  list: /'
grep -a -q "^ *$PCR $FORGED_SHA1 " "$LIST" && fail "the forged line is in the list"
grep -a "report_2024.txt" "$LIST" | sed 's/^/  list: /'
[ "$(grep -a -c "report_2024.txt" "$LIST")" -eq 2 ] || fail "report 2024.txt not listed twice (ima-ng, ima-sig) as report_2024.txt"

# explain finds a file's entries by its real name (compared in the kernel form)
for n in 'report 2024.txt' $'new\nline' $'bad\xff\xfeutf8'; do
        k=$(ctl explain "$T/sig/$n" | python3 -c "import json,sys; print(len(json.loads(sys.stdin.buffer.read().decode('utf-8', 'surrogateescape'))['list_entries']))")
        [ "$k" -ge 1 ] || fail "explain lists no entry for $(printf %q "$T/sig/$n")"
done
echo "explain: the entries of 'report 2024.txt', 'new\\nline' and a non-UTF-8 name are found by their real names"

step "2: evmctl ima_measurement against the TPM's PCRs"
for b in sha1 sha256; do
        TPM2TOOLS_TCTI="swtpm:path=$D/tpm/swtpm.sock" tpm2_pcrread $b >"$D/$b.txt"
        python3 - "$D/$b.txt" >"$D/$b.pcrs" <<'PY'
import re, sys
vals = {int(m.group(1)): m.group(2).lower() for m in re.finditer(r"^\s+(\d+)\s*:\s*0x([0-9A-Fa-f]+)", open(sys.argv[1]).read(), re.M)}
for i in range(24):
    print("PCR-%02d: %s" % (i, vals[i]))
PY
done
evmctl ima_measurement --ignore-violations --pcrs sha1,"$D/sha1.pcrs" --pcrs sha256,"$D/sha256.pcrs" "$BIN" \
        >"$D/evmctl.txt" 2>&1 || true
grep -q "Matched per TPM bank calculated digest" "$D/evmctl.txt" || { tail "$D/evmctl.txt"; fail "evmctl did not match the list to the PCRs"; }
echo "evmctl: $(grep -m1 "Matched per TPM bank" "$D/evmctl.txt")"

step "3: Keylime-style check: quote + kernel-form allowlist, report 2024.txt under ima-sig and ima-ng"
NONCE=$(openssl rand -hex 20)
ctl quote --nonce "$NONCE" --out "$D/q" >/dev/null
tpm2_checkquote -u "$D/q/ak.pub.pem" -m "$D/q/quote.msg" -s "$D/q/quote.sig" -f "$D/q/pcrs.out" \
        -l sha1:$PCR+sha256:$PCR -g sha256 -q "$NONCE" >"$D/checkquote.out" 2>&1 ||
        { cat "$D/checkquote.out"; fail "tpm2_checkquote rejected the quote"; }
python3 "$VERIFY" --keylime-split --pcr $PCR --policy "$D/allow.json" "$LIST" "$D/q/pcrs.out" | tee "$D/v1.out"
grep -q "^ACCEPTED" "$D/v1.out" || fail "Keylime-style check with the filesystem allowlist failed"
ctl policy export --keylime --out "$D/export.json"
python3 - "$D/export.json" "$T" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))["digests"]
for k in (sys.argv[2] + "/ng/report_2024.txt", sys.argv[2] + "/sig/report_2024.txt"):
    if k not in d:
        sys.exit(f"FAIL: {k} not in the exported policy")
if any(c < " " or c == "\x7f" or c == " " for k in d for c in k):
    sys.exit("FAIL: a raw name in the exported policy")
print(f"policy export --keylime: {len(d)} kernel-form names, report_2024.txt under ng/ and sig/")
EOF
python3 "$VERIFY" --keylime-split --pcr $PCR --policy "$D/export.json" "$LIST" "$D/q/pcrs.out" >"$D/v2.out" ||
        { cat "$D/v2.out"; fail "the list does not pass its own exported Keylime policy"; }
echo "the list passes its own exported policy"

step "4: on a terminal, no ESC byte of a name reaches it"
if command -v script >/dev/null; then
        script -qec "$IVERCTL log" /dev/null >"$D/tty.out" </dev/null
        grep -a -q $'\e' "$D/tty.out" && fail "iverctl log wrote an ESC byte to the terminal"
        script -qec "$IVERCTL list $T/ng" /dev/null >"$D/tty2.out" </dev/null
        grep -a -q $'\e' "$D/tty2.out" && fail "iverctl list wrote an ESC byte to the terminal"
        grep -a -q 'esc\\x1b\[31mred' "$D/tty2.out" || fail "iverctl list does not show ESC escaped"
        echo "iverctl log / list on a pty: no ESC byte"
fi

echo
echo "PASS"
