#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Fault injection (issue 9), the list and the content under writers:
#  3. runtime directory full: iverd --runtime-dir on a 256 KiB tmpfs, filled
#     (completely, or with one or two pages left so that one of the two list
#     files still fits), then files change: status says list_failing, the PCR
#     never holds an entry that is not in the list (quote + verify: N entries,
#     N replayed; the quoted list = binary_runtime_measurements on disk; the
#     ascii list = the binary list); then space is freed: within 15 s the
#     changed files are listed and extended (list_failing false). Once the
#     list could not be written the evidence is broken for good (issue 13
#     item 13): status says evidence_broken, and every quote from then on
#     fails verification, its PCR = the list + the all-0xFF value (lib-faults.sh
#     quote_check, broken-replay.py).
#  4. writers rewrite files continuously (O_TRUNC rewrites, in-place pwrite
#     over the old content, writes through a shared mapping, 0.1 KiB..3 MiB)
#     while iverd measures them; each writer appends a version's sha256 to a
#     history before it writes that version: every digest listed for the file
#     must be in its history (no torn or mixed version), and its final state
#     is listed (after the churn backoff: past 32 versions a minute a file is
#     recorded once as a violation and re-checked 10 s later).
# IVER_FAULT_TRIALS: fill/free cycles = max(3, TRIALS/10);
# IVER_FAULT_WRITER_SECONDS (default 10); IVER_TEST_SEED: the writers' seed (printed).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-faults.sh
source "$here/lib-faults.sh"
# not a test of names at rest: a settle after a change need not wait the 2 s
# a name takes to come to rest (IVERD_TEST_REST_SETTLE_MS, iverd(8))
export IVERD_TEST_REST_SETTLE_MS=${IVERD_TEST_REST_SETTLE_MS:-300}
faults_init disk
faults_seed
command -v swtpm >/dev/null || { echo "SKIP: swtpm not installed"; exit 77; }
CYCLES=$(( ${IVER_FAULT_TRIALS:-10} / 10 )); ((CYCLES < 3)) && CYCLES=3
WSECS=${IVER_FAULT_WRITER_SECONDS:-10}

T=$D/tree
mkdir -p "$T/w"
for i in $(seq 0 19); do echo "initial $i" >"$T/f$i"; done
printf 'measure path="%s/**"\n' "$T" >"$D/p.policy"
RUN=$D/rt
mkdir -p "$RUN"
mount -t tmpfs -o size=256k,mode=0755 iver-faults-rt "$RUN" || die "cannot mount a tmpfs"
on_cleanup "umount '$RUN' 2>/dev/null || umount -l '$RUN'"
export IVERD_SOCKET=$RUN/iverd.sock
IVERD_TPM_ARGS=(--tpm "swtpm:path=$D/tpm/swtpm.sock" --pcr 23 --workers 2)
start_swtpm
start_iverd
ctl settle --timeout 60 >/dev/null
quote_check "initial" && note "initial: $QUOTE_SUMMARY"

# fill PAGES_LEFT: fill the tmpfs, then give back PAGES_LEFT pages
fill() {
        local i
        for i in 0 1 2 3; do dd if=/dev/zero of="$RUN/gap$i" bs=4k count=1 status=none 2>/dev/null; done
        dd if=/dev/zero of="$RUN/filler" bs=4k status=none 2>/dev/null
        # a file's last partial page is counted whole: top up with small files
        for i in $(seq 1 64); do head -c 4096 /dev/zero >"$RUN/top$i" 2>/dev/null || break; done
        for ((i = 0; i < $1; i++)); do rm -f "$RUN/gap$i"; done
}
unfill() { rm -f "$RUN"/filler "$RUN"/gap? "$RUN"/top*; }

# ---------------------------------------------------------------- 3. list full
step "3. runtime directory full (256 KiB tmpfs): $CYCLES fill/free cycles"
L_LOST=0 L_DUP=0 L_WRONG=0 L_CRASH0=$CRASHES L_RECOVER=0
for ((c = 1; c <= CYCLES; c++)); do
        left=$(((c - 1) % 3))
        fill "$left"
        note "cycle $c: tmpfs $(df --output=avail -B1 "$RUN" | tail -1 | tr -d ' ') bytes free ($left pages given back)"
        for i in $(seq 0 19); do echo "cycle $c change $i" >"$T/f$i"; done
        for i in $(seq 0 9); do echo "cycle $c new $i" >"$T/n$c-$i"; done
        ctl settle --timeout 60 >/dev/null || fail "cycle $c: settle while the list is full"
        alive || break
        lf=$(js list_failing) lfs=$(js list_failures) len=$(js list_length) pend=$(js pending_extends)
        note "full: list_failing=$lf list_failures=$lfs list_length=$len pending_extends=$pend"
        if [[ $left == 0 && $lf != True ]]; then fail "cycle $c: list_failing is $lf with a full runtime directory"; L_WRONG=$((L_WRONG + 1)); fi
        if [[ $lf == True && $(js evidence_broken) != True ]]; then fail "cycle $c: list failing but evidence_broken is not set"; L_WRONG=$((L_WRONG + 1)); fi
        # the PCR holds exactly the listed entries; the list on disk is that list
        quote_check "cycle $c, list full" || L_WRONG=$((L_WRONG + 1))
        [[ -n ${QUOTE_SUMMARY:-} ]] && note "full: $QUOTE_SUMMARY"
        out=$(py check "$RUN" "$T" - - 2>/dev/null) || out="1 1 1 1 0"
        read -r lost dup wrong _ _ <<<"$out"
        note "while full: $lost changed files not listed yet (expected), dup $dup, wrong $wrong"
        ((dup == 0 && wrong == 0)) || { fail "cycle $c: duplicates $dup / inconsistent list files $wrong while full"; L_DUP=$((L_DUP + dup)); L_WRONG=$((L_WRONG + wrong)); }
        unfill
        t0=$SECONDS ok=0
        while ((SECONDS - t0 < 15)); do
                if [[ $(js list_failing) == False ]]; then
                        ctl settle --timeout 30 >/dev/null
                        out=$(py check "$RUN" "$T" - - 2>/dev/null) || out="1 1 1 1 0"
                        read -r lost dup wrong _ _ <<<"$out"
                        ((lost == 0)) && { ok=1; break; }
                fi
                sleep 0.5
        done
        rec=$((SECONDS - t0))
        ((rec > L_RECOVER)) && L_RECOVER=$rec
        ((ok)) || fail "cycle $c: not recovered 15 s after space came back (list_failing $(js list_failing), $lost files not listed)"
        check_all "cycle $c, recovered" "$T"
        L_LOST=$((L_LOST + C_LOST)); L_DUP=$((L_DUP + C_DUP)); L_WRONG=$((L_WRONG + C_WRONG))
        quote_check "cycle $c, recovered" || L_LOST=$((L_LOST + 1))
        note "recovered in ${rec} s: $QUOTE_SUMMARY, list_failing $(js list_failing)"
done
row "3. runtime dir full (256k tmpfs) + freed" "$CYCLES" "$L_LOST" "$L_DUP" "$L_WRONG" "$((CRASHES - L_CRASH0))" \
        "recovered within ${L_RECOVER} s; list_failures $(js list_failures)"

# ---------------------------------------------------------------- 4. writers
step "4. writers rewriting files continuously for $WSECS s while iverd measures them"
cat >"$D/writer.py" <<'PY'
import hashlib, mmap, os, random, sys, time
path, hist, secs, seed = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
rnd = random.Random(seed)
h = open(hist, 'a')
def record(data):
    h.write(hashlib.sha256(data).hexdigest() + '\n'); h.flush()
end, n = time.monotonic() + secs, 0
sizes = [100, 5000, 200000, 1500000, 3 << 20]
while time.monotonic() < end:
    size = rnd.choice(sizes)
    data = bytes([rnd.randrange(256)]) * 64 + os.urandom(size - 64)
    record(data)            # before any byte of this version reaches the file
    mode = n % 3
    if mode == 0:           # rewrite from scratch
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_CREAT, 0o644)
        for o in range(0, size, 65536):
            os.write(fd, data[o:o + 65536])
            if rnd.random() < 0.05: time.sleep(0.001)
        os.close(fd)
    elif mode == 1:         # in place over the old content, then cut to size
        fd = os.open(path, os.O_WRONLY)
        for o in range(0, size, 65536):
            os.pwrite(fd, data[o:o + 65536], o)
        os.ftruncate(fd, size)
        os.close(fd)
    else:                   # through a shared writable mapping
        fd = os.open(path, os.O_RDWR)
        os.ftruncate(fd, size)
        mm = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_WRITE | mmap.PROT_READ)
        for o in range(0, size, 65536):
            mm[o:o + 65536] = data[o:o + 65536]
        mm.close()
        os.close(fd)
    n += 1
    time.sleep(rnd.random() * 0.02)
print(n)
PY
# room for the writers' list (the 256 KiB of scenario 3 would fill up again)
mount -o remount,size=64m "$RUN" || die "cannot grow the runtime tmpfs"
W_CRASH0=$CRASHES W_TORN=0 W_LOGGED=0 W_VERS=0 W_LOST=0
for k in 1 2 3; do
        head -c 1000 /dev/urandom >"$T/w/file$k"
        sha256sum "$T/w/file$k" | cut -d' ' -f1 >"$D/hist$k"
done
ctl settle --timeout 60 >/dev/null
for k in 1 2 3; do
        python3 "$D/writer.py" "$T/w/file$k" "$D/hist$k" "$WSECS" "$((SEED + k))" >"$D/writer$k.out" &
        WP[k]=$!
        track_pid "${WP[k]}"
done
for k in 1 2 3; do wait "${WP[k]}" || fail "writer $k failed"; untrack_pid "${WP[k]}"; done
alive
# each file churned past the per-file version limit (32 a minute): recorded
# once as a violation, its final state listed when the backoff (10 s) ends
note "rate limited: $(js rate_limited_files) files, $(js rate_limited_versions) versions not listed"
t0=$SECONDS
while ((SECONDS - t0 < 30)); do
        ctl settle --timeout 30 >/dev/null
        read -r lost _ <<<"$(py check "$RUN" "$T" - - 2>/dev/null || echo 1)"
        ((lost == 0)) && break
        sleep 0.5
done
note "final states listed $((SECONDS - t0)) s after the writers stopped"
check_all "writers" "$T"
W_LOST=$C_LOST W_DUP=$C_DUP W_WRONG=$C_WRONG
for k in 1 2 3; do
        # a digest measured while the writer held the file (no read lease) is
        # listed, as kernel IMA lists what it measured with open writers, and
        # marked by an open_writers violation entry right after it
        read -r logged torn marked <<<"$(py history_check "$RUN" "$T/w/file$k" "$D/hist$k")"
        vers=$(cat "$D/writer$k.out")
        note "file$k: $vers versions written, $logged digests listed, $marked provisional (marked by a violation), $torn unmarked not in the history"
        ((torn == 0)) || fail "file$k: $torn listed digests are of no version the writer wrote (torn/mixed) and carry no violation entry"
        W_TORN=$((W_TORN + torn)) W_LOGGED=$((W_LOGGED + logged)) W_VERS=$((W_VERS + vers))
done
note "status: violations $(js violations) provisional_rechecks $(js provisional_rechecks) list_failing $(js list_failing)"
quote_check "writers" || W_LOST=$((W_LOST + 1))
row "4. continuous rewriters (3 files, ${WSECS}s)" "$W_VERS" "$W_LOST" "$W_DUP" "$((W_WRONG + W_TORN))" \
        "$((CRASHES - W_CRASH0))" "$W_LOGGED digests listed, $W_TORN torn; trials = versions written"
stop_iverd
faults_summary
