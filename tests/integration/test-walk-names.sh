#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The walk looks only at names a rule's pattern can match: under
# `measure path=TREE/**.so*` the .py and .txt files next to the libraries are
# never statx'ed (status scan_files_seen counts the libraries alone; a cold
# /usr walk reads 68,000 inodes where the shipped policy measures 5,000),
# while the libraries, a new one created later, and one renamed from a
# skipped name to a matching one are measured. Needs root.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-faults.sh
source "$here/lib-faults.sh"
faults_init walk-names

mkdir -p "$D/tree/lib/sub" "$D/tree/lib/py"
echo a >"$D/tree/lib/a.so"
echo c >"$D/tree/lib/sub/c.so.1"
for i in $(seq 20); do echo "$i" >"$D/tree/lib/py/m$i.py"; echo "$i" >"$D/tree/lib/sub/n$i.txt"; done
printf 'measure path="%s/tree/**.so*"\n' "$D" >"$D/p.policy"
IVERD_TPM_ARGS=(--tpm none)
start_iverd
ctl settle --timeout 30 >/dev/null || die "no settle"
seen=$(js scan_files_seen)
echo "walk: $seen files seen (2 libraries, 40 other files)"
[[ $seen -eq 2 ]] || fail "the walk looked at $seen files, not the 2 a rule can match"
ctl log --ascii >"$D/list.txt" || die "iverctl log"
for f in lib/a.so lib/sub/c.so.1; do
        grep -q " $D/tree/$f\$" "$D/list.txt" || fail "$f is not listed"
done
grep -qE "\.py$|\.txt$" "$D/list.txt" && fail "a file no rule matches was listed: $(grep -E '\.py$|\.txt$' "$D/list.txt")"

echo e >"$D/tree/lib/e.so"
mv "$D/tree/lib/py/m1.py" "$D/tree/lib/py/m1.so"
ctl settle --timeout 30 >/dev/null || die "no settle after the changes"
ctl log --ascii >"$D/list.txt" || die "iverctl log"
grep -q " $D/tree/lib/e.so\$" "$D/list.txt" || fail "a library created later is not listed"
grep -q " $D/tree/lib/py/m1.so\$" "$D/list.txt" || fail "a file renamed to a matching name is not listed"
ctl rescan >/dev/null && ctl settle --timeout 30 >/dev/null || die "rescan"
[[ $(js scan_files_seen) -eq 4 ]] || fail "the rescan looked at $(js scan_files_seen) files, not the 4 libraries"
stop_iverd
[[ $FAILS -eq 0 ]] || exit 1
echo PASS
