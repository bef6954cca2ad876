#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# iverd -v says why each measurement was hashed: "(new)" for a file seen the
# first time, and for a rewrite the rule that sent it to the hasher (written,
# not-trusted, size…), never "hit", also when the outcome waited at rest and
# was listed from the record (rest.c keeps the reason). Needs root.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-faults.sh
source "$here/lib-faults.sh"
faults_init log-reason

echo "first version" >"$D/tree/a"
printf 'measure path="%s/tree/**"\n' "$D" >"$D/p.policy"
IVERD_TPM_ARGS=(--tpm none)
start_iverd -v
ctl settle --timeout 30 >/dev/null || die "no settle"
grep -q "Measured $D/tree/a sha256:$(sha256sum <"$D/tree/a" | cut -d' ' -f1) (new)" "$D/iverd.log" ||
        fail "the first measurement of a does not say (new): $(grep Measured "$D/iverd.log")"

printf 'other version' >"$D/tree/a" # same size: not the size rule
printf 'x' >>"$D/tree/a"
sum=$(sha256sum <"$D/tree/a" | cut -d' ' -f1)
for _ in $(seq 100); do grep -q "Measured $D/tree/a sha256:$sum" "$D/iverd.log" && break; sleep 0.1; done
line=$(grep "Measured $D/tree/a sha256:$sum" "$D/iverd.log" | tail -1)
echo "rewrite: $line"
[[ -n $line ]] || die "the rewrite of a was not measured"
[[ $line =~ \((written|not-trusted|size|identity|unattested|writers|new)(,\ provisional)?\)$ ]] ||
        fail "the rewrite's measurement does not say why it was hashed: $line"
stop_iverd
[[ $FAILS -eq 0 ]] || exit 1
echo PASS
