#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# On-access latency (issue 13 item 6): what a use of a measured, unchanged
# file costs with no fanotify, with a bare fanotify permission listener that
# answers at once, and with iverd holding uses until they are measured
# (OnAccess=exec and open; fanotify permission events, filesystem mark); the
# exec of a file just rewritten (a miss: the exec waits for its hash and list
# entry); and the bounded wait: the exec of a 1 GiB file with the default
# OnAccessTimeoutSec= (measured in time) and with a short one (allowed at the
# timeout, a violation entry listed; ONACCESS_BOUNDED=0 skips it). Side by
# side, Debian's fapolicyd (permissive, its shipped rules) on the same files,
# when installed (apt-get install fapolicyd; it marks every mount of its
# watch_fs types while it runs). A private tmpfs keeps iverd's marks off the
# rest of the system. Needs root.
#   bash bench/onaccess.sh [BUILD_DIR]
set -euo pipefail
B=${1:-build}
L=${ONACCESS_LATENCY:-$B/bench/bench-onaccess_latency} # another build's: a before/after of iverd alone
[ -x "$L" ] || { echo "build first: cmake --build $B"; exit 1; }
D=$(mktemp -d /tmp/iver-bench-oa.XXXXXX)
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null; mountpoint -q "$D/mnt" && umount "$D/mnt"; rm -rf "$D"; }
trap cleanup EXIT INT TERM
mkdir -p "$D/mnt" "$D/run"
mount -t tmpfs -o size=2600m tmpfs "$D/mnt"
mkdir -p "$D/mnt/tree"
F=$D/mnt/tree/file; X=$D/mnt/tree/noexec; M=$D/mnt/tree/miss; G=$D/mnt/tree/huge
head -c 65536 /dev/urandom >"$F"
# executable, of no known format: execve() opens it and fails with ENOEXEC
head -c 4096 /dev/zero >"$X"; chmod +x "$X"; cp "$X" "$M"
cp /bin/true "$D/mnt/tree/true"
export IVERD_SOCKET=$D/run/iverd.sock
ctl() { "$B/iverctl" "$@"; }
js() { ctl status --json | python3 -c "import json,sys; print(json.load(sys.stdin).get('$1', 0))"; }
start() {       # start MODE [TIMEOUT]
        printf '[Measure]\nOnAccess=%s\nOnAccessTimeoutSec=%s\n' "$1" "${2:-2s}" >"$D/iverd.conf"
        IVERD_LOG_STDERR=1 "$B/iverd" --config "$D/iverd.conf" --policy "$D/p.policy" --runtime-dir "$D/run" \
                --state-dir "$D/run" --tpm none 2>>"$D/iverd.log" &
        PID=$!
        for _ in $(seq 100); do ctl status >/dev/null 2>&1 && break; sleep 0.05; done
        ctl settle --timeout 120 >/dev/null
}
stop() { kill "$PID"; wait "$PID" 2>/dev/null || true; PID=; }
us() { echo "scale=2; $1 / 1000" | bc; }

# fapolicyd (Debian's), permissive, its shipped rules, on the same files:
# run as root (this sandbox cannot give it its capabilities as uid
# fapolicyd) through a bind-mounted copy of its configuration, undone at exit
FAPID= FAPCONF=
fap_start() {
        command -v fapolicyd >/dev/null || return 1
        [ -e /etc/fapolicyd/compiled.rules ] || fagenrules >/dev/null 2>&1 || return 1
        sed 's/^uid = .*/uid = root/; s/^gid = .*/gid = root/' /etc/fapolicyd/fapolicyd.conf >"$D/fapolicyd.conf"
        mount --bind "$D/fapolicyd.conf" /etc/fapolicyd/fapolicyd.conf && FAPCONF=1
        mkdir -p /run/fapolicyd /var/lib/fapolicyd
        fapolicyd --permissive --debug-deny >"$D/fapolicyd.log" 2>&1 &
        FAPID=$!
        for _ in $(seq 100); do grep -q "Starting to listen" "$D/fapolicyd.log" && return 0; sleep 0.1; done
        return 1
}
fap_stop() {
        [ -n "$FAPID" ] && kill "$FAPID" 2>/dev/null && wait "$FAPID" 2>/dev/null
        FAPID=
        [ -n "$FAPCONF" ] && umount /etc/fapolicyd/fapolicyd.conf; FAPCONF=
        true
}
trap 'fap_stop; cleanup' EXIT INT TERM

plain=$("$L" plain "$F")
xplain=$("$L" exec "$X")
spawn_none=$("$L" spawn "$D/mnt/tree/true")
printf 'measure path="%s/mnt/tree/**"\n' "$D" >"$D/p.policy"
# the bare listeners, iverd (both modes) and fapolicyd, one after the other
# ROUNDS times (a shared machine is noisy): medians of the rounds
R=${ONACCESS_ROUNDS:-5}
declare -A S
add() { S[$1]="${S[$1]:-} $2"; }
fap=1
for r in $(seq "$R"); do
        add perm "$("$L" perm "$F")"
        add xperm "$("$L" execperm "$X")"
        add xbperm "$("$L" execbothperm "$X")"
        start exec
        add e_exec "$("$L" exec "$X")"
        add e_open "$("$L" plain "$F")"
        if [ "$r" = 1 ]; then
                spawn_iverd=$("$L" spawn "$D/mnt/tree/true")
                m0=$(js on_access_allowed_measured)
                e_miss=$("$L" execmiss "$M" 300)
                e_misses=$(( $(js on_access_allowed_measured) - m0 ))
        fi
        stop
        start open
        add o_open "$("$L" plain "$F")"
        add o_exec "$("$L" exec "$X")"
        if [ "$r" = 1 ]; then
                reader=$(js on_access_allowed_by_reader)
                m0=$(js on_access_allowed_measured)
                o_miss=$("$L" openmiss "$M" 300)
                o_xmiss=$("$L" execmiss "$M" 300)
                o_misses=$(( $(js on_access_allowed_measured) - m0 ))
        fi
        stop
        if [ "$fap" = 1 ] && fap_start; then
                add f_open "$("$L" plain "$F")"
                add f_exec "$("$L" exec "$X")"
        else
                fap=0
        fi
        fap_stop
done
med() { printf '%s\n' $@ | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
all() { echo ${S[$1]:-}; }
perm=$(med $(all perm)); xperm=$(med $(all xperm)); xbperm=$(med $(all xbperm))

echo "machine: $(nproc) cores, $(uname -r); medians of $R rounds (each a median of 20,000 uses; misses: of 300)"
[ "$fap" = 1 ] || echo "fapolicyd: not run ($(command -v fapolicyd >/dev/null && tail -1 "$D/fapolicyd.log" || echo not installed))"
us() { echo "scale=2; $1 / 1000" | bc; }
row() { # NAME KEY|VALUE BARE NONE
        local v=$2
        [ -n "${S[$2]+x}" ] && v=$(med $(all "$2"))
        case $v in ''|*[!0-9]*) printf '| %s | – | – | – |\n' "$1"; return ;; esac
        [ -z "$v" ] && { printf '| %s | – | – | – |\n' "$1"; return; }
        printf '| %s | %s µs | %.2f× | +%s µs |\n' "$1" "$(us "$v")" "$(echo "$v/$3" | bc -l)" "$(us $((v - $4)))"
}
echo
echo "### exec (execve() of an executable of no known format: open + permission round trip + header read, no new process)"
printf '| setup | execve() median | vs bare listener | overhead |\n|---|---|---|---|\n'
row "no fanotify" "$xplain" "$xperm" "$xplain"
row "bare FAN_OPEN_EXEC_PERM listener (answers at once)" xperm "$xperm" "$xplain"
row "fapolicyd (permissive, shipped rules)" f_exec "$xperm" "$xplain"
row "iverd OnAccess=exec, cached" e_exec "$xperm" "$xplain"
row "bare listener of FAN_OPEN_PERM and FAN_OPEN_EXEC_PERM (an exec is two events)" xbperm "$xperm" "$xplain"
row "iverd OnAccess=open, cached (two events)" o_exec "$xperm" "$xplain"
row "iverd OnAccess=exec, miss (rewritten before each exec; $e_misses of 300 waited for a hash)" "$e_miss" "$xperm" "$xplain"
row "iverd OnAccess=open, miss (rewritten before each exec, by a writer's open that waits too)" "$o_xmiss" "$xperm" "$xplain"
echo "per round, bare / iverd exec cached / bare of both / iverd open-mode exec cached / fapolicyd (ns): $(all xperm) / $(all e_exec) / $(all xbperm) / $(all o_exec) / $(all f_exec)"
printf 'iverd OnAccess=open, cached exec vs the bare listener of both events: %.2f×\n' "$(echo "$(med $(all o_exec))/$xbperm" | bc -l)"
echo "whole exec of /bin/true (posix_spawn + wait): $(us "$spawn_none") µs without, $(us "$spawn_iverd") µs with iverd OnAccess=exec (cached)"
echo
echo "### open()+close() of a cached 64 KiB file"
printf '| setup | median | vs bare FAN_OPEN_PERM | overhead |\n|---|---|---|---|\n'
row "no fanotify" "$plain" "$perm" "$plain"
row "bare FAN_OPEN_PERM listener" perm "$perm" "$plain"
row "fapolicyd (permissive, shipped rules)" f_open "$perm" "$plain"
row "iverd OnAccess=exec (opens are not held)" e_open "$perm" "$plain"
row "iverd OnAccess=open, cached" o_open "$perm" "$plain"
row "iverd OnAccess=open, miss (rewritten before each open; $o_misses uses waited for a hash, the writer's opens included)" "$o_miss" "$perm" "$plain"
echo "per round, bare / iverd open cached / fapolicyd (ns): $(all perm) / $(all o_open) / $(all f_open)"
echo "iverd OnAccess=open, round 1: $reader permission events answered by the reading thread itself (of 72,000: 24,000 cached opens, 24,000 cached execs of two events each)"
[ "${ONACCESS_BOUNDED:-1}" = 1 ] || exit 0
echo
echo "### bounded wait: exec of a 1 GiB file right after it was written"
printf '#!/bin/sh\nexit 0\n' >"$G"; head -c 1073741800 /dev/urandom >>"$G"; chmod +x "$G"
for t in 2s 200ms; do
        start exec "$t"
        v0=$(js violations); m0=$(js on_access_allowed_measured)
        # a new inode each round: never a cache hit
        cp "$G" "$G.$t"; sync -f "$G.$t" 2>/dev/null || true
        t0=$(date +%s%N); "$G.$t"; t1=$(date +%s%N)
        ctl settle --timeout 120 >/dev/null
        v=$(( $(js violations) - v0 )); m=$(( $(js on_access_allowed_measured) - m0 ))
        ve=$(ctl log --ascii | awk -v p="$G.$t" '$NF == p && $2 ~ /^0+$/' | wc -l)
        echo "OnAccessTimeoutSec=$t: exec returned after $(( (t1 - t0) / 1000000 )) ms; allowed after measuring: $m; violation entries for it: $ve (violations +$v)"
        rm -f "$G.$t"
        stop
done
