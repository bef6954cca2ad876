#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# iverd -v says why each measurement was hashed: "(new)" for a file seen the
# first time, and for a rewrite the rule that sent it to the hasher (written,
# not-trusted, size…), never "hit", also when the outcome waited at rest and
# was listed from the record (rest.c keeps the reason). A rename of a measured
# file is listed under its new name without a hash ("(metadata-only)"), and a
# file written under a temporary name and renamed over another (dpkg's
# NAME.dpkg-new → NAME) is not hashed again at the rename. A version the list
# already has is not logged as measured. Needs root.
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
stat_of() { ctl stats --json | python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
wait_listed() { # path digest: the log line that lists it
        local _
        for _ in $(seq 100); do grep -q "Measured $1 sha256:$2" "$D/iverd.log" && break; sleep 0.1; done
        grep "Measured $1 sha256:$2" "$D/iverd.log" | tail -1
}

ctl settle --timeout 30 >/dev/null || die "no settle after the rewrite"
before=$(stat_of bytes_hashed)
mv "$D/tree/a" "$D/tree/b"
line=$(wait_listed "$D/tree/b" "$sum")
echo "rename: $line"
[[ -n $line ]] || die "the renamed file b was not listed"
[[ $line =~ \(metadata-only\)$ ]] || fail "a rename of a measured file was hashed again: $line"
ctl settle --timeout 30 >/dev/null || die "no settle after the rename"
after=$(stat_of bytes_hashed)
[[ $after -eq $before ]] || fail "a rename hashed $((after - before)) bytes (expected none)"

# dpkg: the new version is written under NAME.dpkg-new, then renamed over
# NAME. The write's close may be read while the file is hashed: the re-check
# that follows finds it unchanged, so the rename is not taken for a write.
python3 -c 'import os,sys; f=open(sys.argv[1],"wb"); f.write(os.urandom(100000)); f.close()' "$D/tree/b.dpkg-new"
new=$(sha256sum <"$D/tree/b.dpkg-new" | cut -d' ' -f1)
ctl settle --timeout 30 >/dev/null || die "no settle after writing b.dpkg-new"
before=$(stat_of bytes_hashed)
[[ $before -ge 100000 ]] || fail "b.dpkg-new was not hashed"
mv "$D/tree/b.dpkg-new" "$D/tree/b"
line=$(wait_listed "$D/tree/b" "$new")
echo "rename-over: $line"
[[ -n $line ]] || die "b's new version (renamed over it) was not listed"
ctl settle --timeout 30 >/dev/null || die "no settle after the rename-over"
after=$(stat_of bytes_hashed)
[[ $after -eq $before ]] || fail "the upgraded file was hashed again at its rename ($((after - before)) bytes)"
ctl list "$D/tree/" | grep -q "b.dpkg-new" && fail "the cache still names b.dpkg-new: $(ctl list "$D/tree/")"

# a version the list has already (the same name and content: written back
# to its first content) is hashed but not listed again, as kernel IMA adds no
# entry twice: it is not logged as measured either. Every "Measured" line
# of c is a version in the list.
for v in first second first; do
        echo "$v" >"$D/tree/c"
        ctl settle --timeout 30 >/dev/null || die "no settle after c's $v version"
done
logged=$(grep -c "Measured $D/tree/c sha256:" "$D/iverd.log" || true)
listed=$(awk -v p="$D/tree/c" '$NF == p && $2 !~ /^0+$/' "$D/run/ascii_runtime_measurements" | wc -l)
echo "c written 3 times (the third back to the first): $listed listed, $logged logged as measured"
((listed == 2)) || fail "c: $listed entries in the list (expected 2: the third version is the first's)"
((logged == listed)) || fail "c: $logged versions logged as measured, $listed in the list"

stop_iverd
[[ $FAILS -eq 0 ]] || exit 1
echo PASS
