#!/usr/bin/env bash
# The main job on an embedded default: build iverd, start a software TPM
# (swtpm), measure a demo tree under policy/demo.policy, run a small
# read / write / tamper / chmod / new-mtime workload, print `iverctl stats`, take a quote
# and have tpm2_checkquote and `iverctl verify` check it. Leaves nothing
# running. Needs root (leases, O_NOATIME on any file).
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD
bash scripts/deps.sh >/dev/null
BUILD=${IVER_BUILD:-build}
cmake -S . -B "$BUILD" >/dev/null
cmake --build "$BUILD" -j"$(nproc)" >/dev/null

DEMO=/tmp/iverd-demo
TREE=$DEMO/tree
WORK=$(mktemp -d /tmp/iverd-demo-run.XXXXXX)
SWTPM_PID= IVERD_PID= DEMO_MOUNTED=
cleanup() {
  [ -n "$IVERD_PID" ] && kill -CONT "$IVERD_PID" 2>/dev/null; true
  [ -n "$IVERD_PID" ] && kill "$IVERD_PID" 2>/dev/null && wait "$IVERD_PID" 2>/dev/null || true
  [ -n "$SWTPM_PID" ] && kill "$SWTPM_PID" 2>/dev/null && wait "$SWTPM_PID" 2>/dev/null || true
  [ -n "$DEMO_MOUNTED" ] && umount "$DEMO" 2>/dev/null; true
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

mountpoint -q "$DEMO" && umount "$DEMO"
rm -rf "$DEMO"; mkdir -p "$DEMO"
# The demo tree on its own tmpfs: on-access exec checking (the default) holds
# every exec on the filesystems of measured trees until iverd answers, and the
# demo stops iverd (SIGSTOP) while cp, dd and touch run from the root filesystem.
mount -t tmpfs -o size=64m iverd-demo "$DEMO"; DEMO_MOUNTED=1
mkdir -p "$TREE/etc" "$TREE/bin" "$TREE/lib"
for i in $(seq 1 40); do printf 'key%d=value%d\n' "$i" "$i" > "$TREE/etc/conf$i.conf"; done
for i in 1 2 3; do head -c $((2 * 1024 * 1024)) /dev/urandom > "$TREE/bin/tool$i"; chmod 755 "$TREE/bin/tool$i"; done
head -c $((8 * 1024 * 1024)) /dev/urandom > "$TREE/lib/libdemo.so.1"

mkdir -p "$WORK/tpm"
swtpm socket --tpm2 --server type=unixio,path="$WORK/tpm/swtpm.sock" \
  --ctrl type=unixio,path="$WORK/tpm/swtpm.sock.ctrl" --tpmstate dir="$WORK/tpm" \
  --flags startup-clear,not-need-init --pid file="$WORK/tpm/swtpm.pid" 2> "$WORK/swtpm.log" &
SWTPM_PID=$!
for _ in $(seq 50); do [ -S "$WORK/tpm/swtpm.sock" ] && break; sleep 0.1; done

export IVERD_SOCKET=$WORK/run/iverd.sock
ctl() { "$BUILD/iverctl" "$@"; }
# PCR 23 (resettable, test use only): a demo must not touch the PCRs a real IMA or systemd uses.
IVERD_LOG_STDERR=1 "$BUILD/iverd" --policy "$SRC/policy/demo.policy" --runtime-dir "$WORK/run" \
  --state-dir "$WORK/state" --tpm "swtpm:path=$WORK/tpm/swtpm.sock" --pcr 23 2> "$WORK/iverd.log" &
IVERD_PID=$!
for _ in $(seq 100); do [ -S "$IVERD_SOCKET" ] && break; sleep 0.05; done
ctl settle --timeout 60
echo "== initial measurement of $(find "$TREE" -type f | wc -l) files done"

echo "== workload: every file read 5 times, one rescan after each round"
for _ in 1 2 3 4 5; do find "$TREE" -type f -exec cat {} + > /dev/null; ctl rescan; ctl settle; done
echo "== workload: one config rewritten, one binary tampered with mtime restored, one chmod"
echo "key1=changed" > "$TREE/etc/conf1.conf"
ctl settle
# The tamper happens while iverd is busy (stopped), so the first thing any
# observer sees is the final state: same size, same mtime, other bytes.
kill -STOP "$IVERD_PID"
cp -p "$TREE/bin/tool2" "$WORK/ref"
printf 'EVIL' | dd of="$TREE/bin/tool2" bs=1 seek=4096 conv=notrunc status=none
touch -r "$WORK/ref" "$TREE/bin/tool2"
kill -CONT "$IVERD_PID"
ctl settle
chmod 700 "$TREE/bin/tool3"
ctl settle
echo "== workload: what real hosts do to times: 20 unchanged files get a new mtime"
# tar -x, cp -p, rsync -t and build tools set times with utimensat(2) and no
# write: the mtime heuristic re-hashes each file, iverd sees an attribute
# change with no write since its measurement (metadata-only, no hash).
# (touch(1) opens the file for writing first, which iverd counts as a write.)
find "$TREE/etc" -type f -name 'conf[2-9]*.conf' | head -20 |
  python3 -c 'import os, sys; [os.utime(p.rstrip("\n")) for p in sys.stdin]'
ctl rescan; ctl settle

echo; echo "== iverctl stats"
ctl stats --top 5
echo; echo "== iverctl status --json (excerpt)"
ctl status --json | grep -E '"(tpm|pcr|list_length|pending_extends|watches|source)"'
echo; echo "== quote, checked by tpm2_checkquote and iverctl verify"
NONCE=$(openssl rand -hex 16)
SEL=$(ctl quote --nonce "$NONCE" --out "$WORK/quote" | sed -n 's/.*selection \([^)]*\)).*/\1/p')
tpm2_checkquote -u "$WORK/quote/ak.pub.pem" -m "$WORK/quote/quote.msg" -s "$WORK/quote/quote.sig" \
  -f "$WORK/quote/pcrs.out" -l "$SEL" -g sha256 -q "$NONCE" >/dev/null && echo "tpm2_checkquote: OK"
ctl verify "$WORK/quote"
