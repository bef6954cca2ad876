# SPDX-License-Identifier: LGPL-2.1-or-later
# Shared by test-keylime.sh, test-policy-export.sh, test-prometheus.sh: a work
# directory, swtpm on a unix socket, one iverd on a small tree, and a cleanup
# that stops exactly the processes started here (by PID). Source it, then call
# fleet_init NAME.
#   IVER_BUILD_DIR  holds iverd and iverctl (ctest sets it)

BUILD=${IVER_BUILD_DIR:?IVER_BUILD_DIR not set}
IVERD=$BUILD/iverd
IVERCTL=$BUILD/iverctl
FLEET_PIDS=()          # every process we started, stopped in reverse order

fail() { echo "FAIL: $*"; exit 1; }
step() { echo; echo "== $*"; }
ctl() { "$IVERCTL" "$@"; }

fleet_stop_pid() { # pid
        local pid=$1
        kill -0 "$pid" 2>/dev/null || return 0
        kill -CONT "$pid" 2>/dev/null
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
        kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
}

fleet_cleanup() {
        local rc=$? i
        # by index: a pid untracked (lib-guest.sh) leaves a hole, and a count
        # would miss the last ones
        local idx=("${!FLEET_PIDS[@]}")
        for ((i = ${#idx[@]} - 1; i >= 0; i--)); do
                fleet_stop_pid "${FLEET_PIDS[${idx[i]}]}"
        done
        if [ "$rc" -ne 0 ] && [ -n "${D:-}" ]; then
                for f in "$D"/*.log; do
                        [ -s "$f" ] || continue
                        echo "--- $f (tail)"; tail -20 "$f"
                done
        fi
        [ -n "${D:-}" ] && rm -rf "$D"
        return "$rc"
}

fleet_init() { # name
        for b in "$IVERD" "$IVERCTL"; do
                [ -x "$b" ] || fail "$b not built"
        done
        [ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
        D=$(mktemp -d "/tmp/iver-test-$1.XXXXXX")
        chmod 0755 "$D"
        trap fleet_cleanup EXIT
        trap "exit 1" INT TERM HUP    # so that the EXIT trap runs on a ctest timeout too
        export IVERD_SOCKET=$D/run/iverd.sock TSS2_LOG=all+none
        mkdir -p "$D/run" "$D/state" "$D/tpm" "$D/tree"
}

fleet_start_swtpm() {
        command -v swtpm >/dev/null || { echo "SKIP: swtpm not installed"; exit 77; }
        swtpm socket --tpm2 --server type=unixio,path="$D/tpm/swtpm.sock" \
                --ctrl type=unixio,path="$D/tpm/swtpm.sock.ctrl" --tpmstate dir="$D/tpm" \
                --flags startup-clear,not-need-init --pid file="$D/tpm/swtpm.pid" >"$D/swtpm.log" 2>&1 &
        FLEET_PIDS+=($!)
        for _ in $(seq 100); do [ -S "$D/tpm/swtpm.sock" ] && return 0; sleep 0.05; done
        fail "swtpm did not start"
}

# fleet_start_iverd POLICY-FILE [extra iverd options…]
fleet_start_iverd() {
        local policy=$1
        shift
        IVERD_LOG_STDERR=1 "$IVERD" --on-access none --policy "$policy" --runtime-dir "$D/run" --state-dir "$D/state" \
                --workers 2 "$@" 2>"$D/iverd.log" &
        IVERD_PID=$!
        FLEET_PIDS+=("$IVERD_PID")
        for _ in $(seq 200); do
                [ -S "$IVERD_SOCKET" ] && ctl status >/dev/null 2>&1 && return 0
                kill -0 "$IVERD_PID" 2>/dev/null || fail "iverd exited"
                sleep 0.05
        done
        fail "iverd did not come up"
}
