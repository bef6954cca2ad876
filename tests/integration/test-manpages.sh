#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Man pages: lint-clean, complete, and in step with the programs.
#   - every man/*.[158] passes `mandoc -T lint` (no message of level warning or
#     above; style messages are shown) and `groff -ww -z -man`;
#   - each page has the sections a real man page has;
#   - every option in `iverd --help` is in iverd(8); every verb of
#     `iverctl --help`, and every option shown there, is in iverctl(1);
#   - the configuration keys iverd accepts (asked from iverd itself: its error
#     for an unknown key lists the valid ones) are all in etc/iverd.conf and
#     in iverd.conf(5), and every key of etc/iverd.conf is in iverd.conf(5);
#   - etc/iverd.conf with every key uncommented (its defaults) is accepted;
#   - and the other way: every key iverd.conf(5) documents is one iverd
#     accepts, every verb iverctl(1) documents is one iverctl has, and every
#     verb of the daemon's control protocol has an iverctl verb.
set -euo pipefail

SRC=${IVER_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${IVER_BUILD_DIR:-$SRC/build}
MAN=$SRC/man
CONF=$SRC/etc/iverd.conf
[ -x "$BUILD/iverd" ] && [ -x "$BUILD/iverctl" ] || { echo "FAIL: build $BUILD first"; exit 1; }
command -v groff >/dev/null || command -v mandoc >/dev/null || { echo "SKIP: neither mandoc nor groff"; exit 77; }

S=$(mktemp -d /tmp/iverd-man.XXXXXX)
trap 'rm -rf "$S"' EXIT
errors=0
bad() { printf 'FAIL: %s\n' "$*"; errors=$((errors + 1)); }

pages=()
for p in iverd.8 iverctl.1 iverd.conf.5 iverd.policy.5; do
  [ -f "$MAN/$p" ] && pages+=("$MAN/$p") || bad "man/$p is missing"
done
for p in "$MAN"/*.[158]; do
  case " ${pages[*]} " in *" $p "*) ;; *) [ -f "$p" ] && pages+=("$p") ;; esac
done

echo "== lint"
for p in "${pages[@]}"; do
  n=${p##*/}
  if command -v mandoc >/dev/null; then
    mandoc -T lint -W style "$p" > "$S/lint" 2>&1 || true
    if [ -s "$S/lint" ]; then sed 's/^/  /' "$S/lint"; fi
    if mandoc -T lint -W warning "$p" > "$S/lintw" 2>&1 && [ ! -s "$S/lintw" ]; then
      echo "mandoc -T lint $n: clean$([ -s "$S/lint" ] && echo ' (style notes above)')"
    else
      bad "mandoc -T lint $n reports warnings or errors"
    fi
  fi
  if command -v groff >/dev/null; then
    groff -k -ww -z -man "$p" > "$S/groff" 2>&1 || true
    if [ -s "$S/groff" ]; then sed 's/^/  /' "$S/groff"; bad "groff -ww -z -man $n warns"; else echo "groff -ww -z -man $n: clean"; fi
  fi
done
command -v mandoc >/dev/null || echo "note: mandoc not installed (Debian package mandoc): groff only"

# Page source to plain text for searching: \- to -, fonts and zero-width escapes gone.
plain() { sed -e 's/\\-/-/g' -e 's/\\f\[[A-Z]*\]//g' -e 's/\\f(..//g' -e 's/\\f[BIRPC]//g' \
              -e 's/\\&//g' -e 's/\\(em/--/g' -e 's/\\e/\\/g' "$1"; }
has_word() { # FILE WORD: WORD present, not as part of a longer option or name
  grep -Eq -- "(^|[^A-Za-z0-9_-])$(printf '%s' "$2" | sed 's/[][\.*^$]/\\&/g')([^A-Za-z0-9_-]|$)" "$1"
}
sections() { grep -E '^\.SH' "$1" | sed -e 's/^\.SH[[:space:]]*//' -e 's/"//g'; }

echo; echo "== sections"
for p in "${pages[@]}"; do
  n=${p##*/}
  sec=${n##*.}
  need=(NAME SYNOPSIS DESCRIPTION FILES "SEE ALSO")
  case $sec in
    1|8) need+=(OPTIONS "EXIT STATUS" EXAMPLES) ;;
    5) need+=(EXAMPLES) ;;
  esac
  missing=()
  for s in "${need[@]}"; do sections "$p" | grep -qx "$s" || missing+=("$s"); done
  if [ ${#missing[@]} -gt 0 ]; then
    bad "$n has no section(s): ${missing[*]}"
  else
    echo "$n: $(sections "$p" | paste -sd'|')"
  fi
done

echo; echo "== iverd --help options in iverd.8"
if [ -f "$MAN/iverd.8" ]; then
  plain "$MAN/iverd.8" > "$S/iverd.8.txt"
  "$BUILD/iverd" --help > "$S/iverd.help"
  opts=$(grep -oE -- '(^|[][[:space:]|(,])--?[a-zA-Z][a-zA-Z0-9-]*' "$S/iverd.help" \
           | grep -oE -- '--?[a-zA-Z][a-zA-Z0-9-]*' | sort -u)
  [ -n "$opts" ] || bad "no options parsed from iverd --help"
  for o in $opts; do
    if has_word "$S/iverd.8.txt" "$o"; then echo "  $o: ok"; else bad "iverd.8 does not document $o (from iverd --help)"; fi
  done
fi

echo; echo "== iverctl --help verbs and options in iverctl.1"
if [ -f "$MAN/iverctl.1" ]; then
  plain "$MAN/iverctl.1" > "$S/iverctl.1.txt"
  "$BUILD/iverctl" --help > "$S/iverctl.help"
  verbs=$(sed -n '/^Verbs:/,$p' "$S/iverctl.help" | sed -n 's/^  \([a-z][a-z-]*\).*/\1/p')
  [ -n "$verbs" ] || bad "no verbs parsed from iverctl --help"
  for v in $verbs; do
    # a verb is documented where a paragraph tag starts with it (.TP / .B verb …)
    if grep -Eq "^\.(B|BR|BI|IP|TP|It)[[:space:]]+\"?$v([[:space:]\"]|$)" "$MAN/iverctl.1" ||
       grep -Eq "^\.(B|BR|BI)[[:space:]]+\"$v " "$MAN/iverctl.1"; then
      echo "  verb $v: ok"
    else
      bad "iverctl.1 has no entry for the verb '$v' (from iverctl --help)"
    fi
  done
  # and the other way: every verb iverctl(1) documents (a .TP tag of its
  # VERBS section) is one iverctl knows
  doc_verbs=$(sed -n '/^\.SH VERBS/,/^\.SH /p' "$MAN/iverctl.1" | awk 'prev == ".TP" { print } { prev = $0 }' |
              sed -nE 's/^\.B[IR]?[[:space:]]+"?([a-z][a-z-]*).*/\1/p' | sort -u)
  [ -n "$doc_verbs" ] || bad "no verbs parsed from the VERBS section of iverctl.1"
  for v in $doc_verbs; do
    if grep -qx "$v" <<<"$verbs"; then echo "  documented verb $v: in iverctl"
    else bad "iverctl.1 documents the verb '$v', which iverctl --help does not have"; fi
  done
  # every verb of the daemon's control protocol has an iverctl verb
  wire=$(sed -nE 's/.*\[VERB_[A-Z_]+\] = \{ "([a-z]+)".*/\1/p' "$SRC/daemon/iverd/request.c")
  [ -n "$wire" ] || bad "no verbs parsed from daemon/iverd/request.c"
  for v in $wire; do
    grep -qx "$v" <<<"$verbs" || bad "the daemon's verb '$v' has no iverctl verb (iverctl --help)"
  done
  opts=$( { grep -oE -- '(^|[][[:space:]|(,])--?[a-zA-Z][a-zA-Z0-9-]*' "$S/iverctl.help" \
             | grep -oE -- '--?[a-zA-Z][a-zA-Z0-9-]*'; echo --socket; } | sort -u)
  for o in $opts; do
    if has_word "$S/iverctl.1.txt" "$o"; then echo "  $o: ok"; else bad "iverctl.1 does not document $o (from iverctl --help)"; fi
  done
fi

echo; echo "== configuration keys: iverd, etc/iverd.conf, iverd.conf.5"
[ -f "$CONF" ] || bad "etc/iverd.conf is missing"
# the keys iverd accepts, from its own error messages
printf '[NoSuchSection]\n' > "$S/probe.conf"
msg=$("$BUILD/iverd" --config "$S/probe.conf" 2>&1 || true)
secs=$(printf '%s\n' "$msg" | sed -n 's/.*expected \(.*\)$/\1/p' | grep -oE '\[[A-Za-z]+\]' | tr -d '[]')
[ -n "$secs" ] || { bad "could not learn the sections from iverd: $msg"; secs=; }
declare -A daemon_keys=()
for sct in $secs; do
  printf '[%s]\nNoSuchKey=1\n' "$sct" > "$S/probe.conf"
  msg=$("$BUILD/iverd" --config "$S/probe.conf" 2>&1 || true)
  keys=$(printf '%s\n' "$msg" | sed -n 's/.*expected \(.*\)$/\1/p' | grep -oE '[A-Za-z]+=' | tr -d =)
  [ -n "$keys" ] || bad "could not learn the keys of [$sct] from iverd: $msg"
  for k in $keys; do daemon_keys["$sct/$k"]=1; done
done
plain "$MAN/iverd.conf.5" > "$S/conf5.txt" 2>/dev/null || : > "$S/conf5.txt"
# keys of etc/iverd.conf, with their sections
declare -A file_keys=()
sct=
while IFS= read -r line; do
  if [[ $line =~ ^\[([A-Za-z]+)\] ]]; then sct=${BASH_REMATCH[1]}; continue; fi
  if [[ $line =~ ^#?([A-Z][A-Za-z]*)= ]]; then file_keys["$sct/${BASH_REMATCH[1]}"]=1; fi
done < "$CONF"
for sk in "${!daemon_keys[@]}"; do
  [ -n "${file_keys[$sk]:-}" ] || bad "etc/iverd.conf lacks [${sk%%/*}] ${sk#*/}= (iverd accepts it)"
done
for sk in $(printf '%s\n' "${!file_keys[@]}" | sort); do
  s=${sk%%/*} k=${sk#*/}
  [ -n "${daemon_keys[$sk]:-}" ] || bad "etc/iverd.conf has [$s] $k=, which iverd does not accept"
  if grep -Eq -- "(^|[^A-Za-z])$k=" "$S/conf5.txt"; then echo "  [$s] $k=: ok"
  else bad "iverd.conf.5 does not document $k= (a key of etc/iverd.conf)"; fi
  grep -qiF "[$s]" "$S/conf5.txt" || bad "iverd.conf.5 does not mention the section [$s]"
done
# and the other way: every key iverd.conf(5) documents (a .TP tag) is one iverd accepts
doc_keys=$(awk 'prev == ".TP" { print } { prev = $0 }' "$MAN/iverd.conf.5" |
           sed -nE 's/^\.B[IR]?[[:space:]]+([A-Z][A-Za-z]*)=.*/\1/p' | sort -u)
[ -n "$doc_keys" ] || bad "no keys parsed from iverd.conf.5"
accepted=$(printf '%s\n' "${!daemon_keys[@]}" | sed 's|.*/||')
for k in $doc_keys; do
  if grep -qx "$k" <<<"$accepted"; then echo "  documented $k=: iverd accepts it"
  else bad "iverd.conf.5 documents $k=, which iverd does not accept"; fi
done
# the defaults as shipped are valid: uncomment everything, iverd must get past the configuration
sed -E 's/^#([A-Z][A-Za-z]*=)/\1/' "$CONF" > "$S/all.conf"
msg=$("$BUILD/iverd" --config "$S/all.conf" --policy "$S/no-such-policy" 2>&1 || true)
if grep -q 'Failed to load configuration' <<<"$msg"; then
  bad "etc/iverd.conf with its defaults uncommented is rejected: $msg"
else
  echo "  etc/iverd.conf, every key uncommented: accepted"
fi

echo; echo "== environment variables (notes only)"
for pair in iverd.8:IVERD_STATS_GROUP iverd.8:IVERD_LOG_STDERR iverctl.1:IVERD_SOCKET; do
  p=${pair%%:*} v=${pair#*:}
  if [ -f "$MAN/$p" ] && grep -q "$v" "$MAN/$p"; then echo "  $v in $p: ok"; else echo "  note: $v is not mentioned in $p"; fi
done

echo
if [ $errors -gt 0 ]; then echo "FAIL: $errors problem(s)"; exit 1; fi
echo PASS
