#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A name that moves on while its file is hashed: package managers and editors
# write NAME.tmp and rename it over NAME. The check of the temporary name
# (queued by the write) and the check of NAME (queued by the rename) may both
# hash the inode, on two workers, and the temporary name's outcome may come
# back last (its worker took a longer batch). That late outcome must not take
# the inode's record or its held listing back to the temporary name, which is
# gone: the final version would never be listed (the verifier sees NAME's
# previous digest, the file runs with another). Bursts of such replacements
# among rewrites of other files, on 2 workers; after each settle every file's
# current sha256 is listed under its name, and `iverctl list` has it.
# IVER_RACE_ROUNDS: rounds (default 12). IVER_TEST_SEED: the bursts. Needs root.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-faults.sh
source "$here/lib-faults.sh"
export IVERD_TEST_REST_SETTLE_MS=${IVERD_TEST_REST_SETTLE_MS:-300}
faults_init rename-race
faults_seed
ROUNDS=${IVER_RACE_ROUNDS:-12}
T=$D/tree
mkdir -p "$T/sub"
printf 'measure path="%s/**"\n' "$T" >"$D/p.policy"
IVERD_TPM_ARGS=(--tpm none --workers 2)

# burst SEED N: N replacements by rename over 100 names, each after 4 rewrites
# of other files (long worker batches)
burst() {
        local seed=$1 n=$2 i k
        RANDOM=$seed
        for ((i = 0; i < n; i++)); do
                k=$((RANDOM % 100))
                echo "replaced $seed $i" >"$T/sub/.t$k" && mv -f "$T/sub/.t$k" "$T/b$k"
                for _ in 1 2 3 4; do echo "rewritten $seed $i $RANDOM" >"$T/w$((RANDOM % 300))"; done
        done
}

start_iverd
ctl settle --timeout 60 >/dev/null || die "initial settle"
LOST=0
for ((r = 1; r <= ROUNDS; r++)); do
        burst $((SEED + r * 7717)) 200
        check_all "round $r" "$T"
        LOST=$((LOST + C_LOST + C_STALE))
        alive || break
done
note "$((r - 1)) rounds of 200 replacements: $LOST final versions not listed"
stop_iverd
((FAILS == 0)) || exit 1
echo "PASS"
