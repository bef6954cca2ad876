# SPDX-License-Identifier: LGPL-2.1-or-later
# Shared by the tests that run iverd against a swtpm in the scratch directory
# $D (sourced after D, BUILD and IVERD_SOCKET are set): stopping a PID,
# failing with the daemon's log, iverctl and its status fields, starting the
# swtpm ($SWTPM_PID; the caller stops it in its cleanup) and checking a quote
# the way a verifier does.

stop() { local p=$1; [ -n "$p" ] || return 0; kill "$p" 2>/dev/null || true; for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || return 0; sleep 0.1; done; kill -9 "$p" 2>/dev/null || true; }
fail() { echo "FAIL: $*"; [ -f "$D/iverd.log" ] && tail -20 "$D/iverd.log"; exit 1; }
step() { echo; echo "== $*"; }
ctl() { "$BUILD/iverctl" "$@"; }
js() { ctl status --json | python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }

# A swtpm on $D/swtpm.sock with its state in $D/tpm (kept across restarts).
start_swtpm() {
        mkdir -p "$D/tpm"
        swtpm socket --tpm2 --server type=unixio,path="$D/swtpm.sock" --ctrl type=unixio,path="$D/swtpm.sock.ctrl" \
                --tpmstate dir="$D/tpm" --flags startup-clear,not-need-init >>"$D/swtpm.log" 2>&1 &
        SWTPM_PID=$!
        for _ in $(seq 100); do [ -S "$D/swtpm.sock" ] && return 0; sleep 0.05; done
        fail "swtpm did not start"
}

# A quote (iverctl quote ARGS…) that tpm2_checkquote and iverctl verify
# accept, with the whole list replayed into the quoted PCRs.
verify_quote() {
        local nonce sel; nonce=$(openssl rand -hex 16)
        rm -rf "$D/q"
        sel=$(ctl quote --nonce "$nonce" --out "$D/q" "$@" | sed -n 's/.*selection \([^)]*\)).*/\1/p')
        [ -n "$sel" ] || fail "no quote"
        echo "quote selection: $sel"
        tpm2_checkquote -u "$D/q/ak.pub.pem" -m "$D/q/quote.msg" -s "$D/q/quote.sig" -f "$D/q/pcrs.out" \
                -l "$sel" -g sha256 -q "$nonce" >/dev/null || fail "tpm2_checkquote rejected the quote"
        ctl verify "$D/q" | tee "$D/verify.txt" || fail "iverctl verify rejected the quote"
        python3 - "$D/verify.txt" <<'PY' || fail "the PCRs do not hold the whole list"
import re, sys
m = re.search(r"list of (\d+) entries, (\d+) replayed", open(sys.argv[1]).read())
sys.exit(0 if m and m.group(1) == m.group(2) else 1)
PY
}
