#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# iverd's worker pool under ThreadSanitizer (run by scripts/test-sanitize.sh
# --tsan; usable alone). IVER_BUILD_DIR holds a -DIVER_TSAN=ON build of iverd
# and iverctl; TSAN_OPTIONS (log_path=…) says where reports go.
#
# One iverd with 4 workers on a tree of 1,500 files: the initial scan,
# settle, then 3 writers rewriting, creating and deleting files while
# iverctl asks for stats, list, remeasure and rescan; settle; reload; the
# snapshot save at stop. With swtpm installed the list goes to a swtpm too,
# so the TPM thread (extends read back from the list file, resyncs, quotes)
# and the list's sync thread run under TSan with the rest, and a quote taken
# after the load must verify with the whole list replayed. Fails if iverd
# dies, a verb fails or the digests do not match sha256sum at the end.
set -euo pipefail
B=${IVER_BUILD_DIR:?IVER_BUILD_DIR: a build dir configured with -DIVER_TSAN=ON}
IVERD=$B/iverd IVERCTL=$B/iverctl
W=$(mktemp -d /tmp/iverd-tsan.XXXXXX)
PID= SWTPM_PID=
WRITERS=()
cleanup() {
        local p
        for p in "${WRITERS[@]}"; do kill "$p" 2>/dev/null || true; done
        if [[ -n $PID ]]; then kill -9 "$PID" 2>/dev/null || true; fi
        if [[ -n $SWTPM_PID ]]; then kill "$SWTPM_PID" 2>/dev/null || true; wait "$SWTPM_PID" 2>/dev/null || true; fi
        rm -rf "$W"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [[ -f $W/iverd.log ]] && tail -20 "$W/iverd.log" >&2; exit 1; }

# ThreadSanitizer maps fixed address ranges; a high ASLR entropy breaks old
# runtimes ("unexpected memory mapping"): run without randomization then.
run() { setarch "$(uname -m)" -R "$@"; }

mkdir -p "$W/tree" "$W/run" "$W/state"
for d in $(seq 0 29); do
        mkdir -p "$W/tree/d$d"
        for f in $(seq 0 49); do printf 'file %d/%d\n' "$d" "$f" >"$W/tree/d$d/f$f"; done
done
head -c 4M /dev/urandom >"$W/tree/big"
printf 'measure path=%s/tree/** hash=sha256\n' "$W" >"$W/policy"
SOCK=$W/run/iverd.sock
ctl() { run "$IVERCTL" --socket "$SOCK" "$@"; }

TPM=none
if command -v swtpm >/dev/null; then
        mkdir -p "$W/tpm"
        swtpm socket --tpm2 --server type=unixio,path="$W/swtpm.sock" --ctrl type=unixio,path="$W/swtpm.sock.ctrl" \
                --tpmstate dir="$W/tpm" --flags startup-clear,not-need-init >"$W/swtpm.log" 2>&1 &
        SWTPM_PID=$!
        for ((i = 0; i < 100; i++)); do [[ -S $W/swtpm.sock ]] && break; sleep 0.05; done
        [[ -S $W/swtpm.sock ]] || fail "swtpm did not start"
        TPM="swtpm:path=$W/swtpm.sock --pcr 23"
fi
# shellcheck disable=SC2086 # TPM holds the option and its PCR
IVERD_LOG_STDERR=1 TSS2_LOG=all+none setarch "$(uname -m)" -R "$IVERD" --policy "$W/policy" --runtime-dir "$W/run" \
        --state-dir "$W/state" --tpm $TPM --workers 4 2>"$W/iverd.log" &
PID=$!
for ((i = 0; i < 600; i++)); do
        [[ -S $SOCK ]] && break
        kill -0 "$PID" 2>/dev/null || fail "iverd exited at start"
        sleep 0.1
done
[[ -S $SOCK ]] || fail "no control socket after 60 s"
ctl settle --timeout 120 >/dev/null || fail "initial settle"
echo "initial scan settled: $(ctl list | wc -l) cached entries"

writer() {
        local id=$1 n=0
        while :; do
                local d=$((RANDOM % 30)) f=$((RANDOM % 50))
                printf 'writer %d round %d\n' "$id" "$n" >>"$W/tree/d$d/f$f"
                printf 'new %d\n' "$n" >"$W/tree/d$d/w$id-$((n % 20))"
                ((n % 7)) || rm -f "$W/tree/d$d/w$id-$(((n + 10) % 20))"
                n=$((n + 1))
        done
}
for id in 1 2 3; do
        writer "$id" &
        WRITERS+=($!)
done
end=$((SECONDS + 20))
while ((SECONDS < end)); do
        ctl stats --json >/dev/null || fail "stats"
        ctl list >/dev/null || fail "list"
        ctl remeasure "$W/tree/d$((RANDOM % 30))/f$((RANDOM % 50))" >/dev/null || fail "remeasure"
        ctl status >/dev/null || fail "status"
        ((RANDOM % 4)) || ctl rescan >/dev/null || fail "rescan"
        kill -0 "$PID" 2>/dev/null || fail "iverd died under load"
done
for p in "${WRITERS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
WRITERS=()
ctl settle --timeout 120 >/dev/null || fail "settle after the writers"
ctl reload >/dev/null || fail "reload"
ctl settle --timeout 120 >/dev/null || fail "settle after reload"

# every file's cached digest is the file's sha256 (iverctl list: DIGEST  STATE  PATH)
ctl list "$W/tree" >"$W/list" || fail "list"
bad=0 n=0
while read -r sum path; do
        n=$((n + 1))
        got=$(awk -v p="$path" '$NF == p { print $1 }' "$W/list" | grep -oE '[0-9a-f]{64}' || true)
        [[ $got == "$sum" ]] || { bad=$((bad + 1)); ((bad < 5)) && echo "digest mismatch: $path (${got:--} != $sum)" >&2; }
done < <(find "$W/tree" -type f -print0 | xargs -0 sha256sum)
echo "checked $n files against sha256sum"
((bad == 0)) || fail "$bad files with a wrong cached digest"
if [[ -n $SWTPM_PID ]]; then
        for ((i = 0; i < 600; i++)); do
                [[ $(ctl status --json | python3 -c "import json,sys; print(json.load(sys.stdin)['pending_extends'])") == 0 ]] && break
                sleep 0.1
        done
        ctl quote --nonce 0123456789abcdef --out "$W/q" >/dev/null || fail "quote"
        ctl verify "$W/q" | tee "$W/verify.txt" || fail "the quote does not verify"
        grep -qE "list of ([0-9]+) entries, \1 replayed" "$W/verify.txt" || fail "the PCR does not hold the whole list"
fi

kill -TERM "$PID"
rc=0
wait "$PID" || rc=$?
PID=
((rc == 0)) || fail "iverd exited $rc at stop"
[[ -s $W/run/binary_runtime_measurements ]] || fail "no measurement list"
echo "tsan-workers: iverd ran clean (4 workers, 3 writers for 20 s), list $(stat -c %s "$W/run/binary_runtime_measurements") bytes"
