#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Names at rest (issue 21 item 2): how long a digest waits for its name.
#   rename   a file written as NAME.tmp, measured (held), renamed to NAME:
#            time from the rename to NAME's entry in the list file (median,
#            max over SETTLE_ROUNDS renames, one at a time)
#   writes   a file rewritten every 50 ms without a pause: time from the
#            first write to its first entry (the bound: it never comes to rest)
#   renames  a file renamed to a new name every 50 ms without a pause: the
#            same, and the name it is listed under
# The real daemon on a private ext4 loop mount (OnAccess=exec, no TPM).
# Needs root. Takes about 3 minutes.
#   bash bench/settle.sh [BUILD_DIR]
set -euo pipefail
B=$(cd "${1:-build}" && pwd)
[ -x "$B/iverd" ] || { echo "build first: cmake --build $B"; exit 1; }
D=$(mktemp -d /tmp/iver-bench-settle.XXXXXX)
PID= LOOP=
cleanup() {
        [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
        mountpoint -q "$D/mnt" && umount "$D/mnt"
        [ -n "$LOOP" ] && losetup -d "$LOOP"
        rm -rf "$D"
}
trap cleanup EXIT INT TERM
mkdir -p "$D/mnt" "$D/run"
truncate -s 512M "$D/img"
LOOP=$(losetup --find --show "$D/img")
mkfs.ext4 -q "$LOOP"
mount "$LOOP" "$D/mnt"
T=$D/mnt/tree
mkdir -p "$T"
printf 'measure path="%s/**"\n' "$T" >"$D/p.policy"
printf '[Measure]\nOnAccess=exec\n' >"$D/iverd.conf"
export IVERD_SOCKET=$D/run/iverd.sock
ctl() { "$B/iverctl" "$@"; }
IVERD_LOG_STDERR=1 "$B/iverd" --config "$D/iverd.conf" --policy "$D/p.policy" --runtime-dir "$D/run" \
        --state-dir "$D/run" --tpm none 2>>"$D/iverd.log" &
PID=$!
for _ in $(seq 100); do ctl status >/dev/null 2>&1 && break; sleep 0.05; done
ctl settle --timeout 120 >/dev/null

python3 - "$T" "$D/run/ascii_runtime_measurements" "${SETTLE_ROUNDS:-20}" <<'PY'
import os, statistics, sys, time
tree, lst, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])

def entries(pred, since_off):
    """(time, name) of list lines after byte since_off whose name passes pred."""
    with open(lst, "rb") as f:
        f.seek(since_off)
        data = f.read()
    out = []
    for line in data.split(b"\n"):
        parts = line.split(b" ")
        if len(parts) >= 5 and pred(parts[-1].decode(errors="replace")):
            out.append(parts[-1].decode(errors="replace"))
    return out

def wait_for(pred, off, limit):
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        found = entries(pred, off)
        if found:
            return time.monotonic(), found
        time.sleep(0.01)
    return None, []

# rename: written as NAME.tmp, held, renamed
delays = []
for i in range(rounds):
    name = os.path.join(tree, "r%03d" % i)
    with open(name + ".tmp", "w") as f:
        f.write("round %d\n" % i)
    time.sleep(0.5)  # measured meanwhile: held under the temporary name
    off = os.path.getsize(lst)
    t0 = time.monotonic()
    os.rename(name + ".tmp", name)
    t1, _ = wait_for(lambda n: n == name, off, 90)
    if t1 is None:
        sys.exit("no entry for %s within 90 s" % name)
    delays.append(t1 - t0)
    time.sleep(0.3)
print("rename -> entry (%d renames): median %.2f s, max %.2f s, min %.2f s" %
      (len(delays), statistics.median(delays), max(delays), min(delays)))

def storm(kind, duration):
    off = os.path.getsize(lst)
    path = os.path.join(tree, kind + ".0")
    t0 = time.monotonic()
    first = None
    i = 0
    while time.monotonic() - t0 < duration:
        if kind == "writes":
            with open(path, "w") as f:
                f.write("version %d\n" % i)
        else:
            new = os.path.join(tree, "%s.%d" % (kind, i + 1))
            if i == 0:
                with open(path, "w") as f:
                    f.write("renamed\n")
            os.rename(path, new)
            path = new
        i += 1
        if first is None:
            found = entries(lambda n: os.path.basename(n).startswith(kind + "."), off)
            if found:
                first = (time.monotonic() - t0, found[0], i)
        time.sleep(0.05)
    if first is None:
        print("%s: %d changes in %.0f s, nothing listed during the storm" % (kind, i, duration))
    else:
        print("continuous %s: first entry %.1f s after the first change (%d changes by then), as %s" %
              (kind, first[0], first[2], os.path.basename(first[1])))

storm("writes", 75)
storm("renames", 75)
PY
ctl status --json | python3 -c '
import json, sys
r = json.load(sys.stdin)["names_at_rest"]
print("daemon: held %d, listed at rest %d / at use %d / at the bound %d / unheld %d, renamed %d, dropped %d" % (
    r["held"], r["listed_at_rest"], r["listed_at_use"], r["listed_at_bound"], r["listed_unheld"], r["renamed"], r["dropped"]))
print("daemon: delay from the last change to the entry: median %d ms, max %d ms; longest episode at the bound %d ms" % (
    r["delay_median_ms"], r["delay_max_ms"], r["bound_delay_max_ms"]))'
