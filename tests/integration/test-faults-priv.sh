#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Privilege (issue 9): a test user (useradd -r) and a stats group (groupadd),
# iverd started with IVERD_STATS_GROUP=<group>. Through the control socket:
#   - a member by supplementary group (setpriv --reuid U --regid OTHER --groups G)
#     and by primary group may use the read verbs (status stats list log settle)
#     and is refused the root verbs (remeasure rescan reload quote explain);
#   - a non-member is refused everything; root is refused nothing;
#   - the daemon's capabilities after setup, main thread and every task
#     (/proc/PID/task/*/status): CapEff = CapPrm = CapBnd = 0x3020000c
#     (DAC_READ_SEARCH FOWNER SYS_ADMIN LEASE AUDIT_WRITE), CapInh = CapAmb = 0.
#   - systemd-analyze security of systemd/iverd.service (reported, not judged).
# User and groups are removed by the EXIT trap.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib-faults.sh
source "$here/lib-faults.sh"
# not a test of names at rest: a settle after a change need not wait the 2 s
# a name takes to come to rest (IVERD_TEST_REST_SETTLE_MS, iverd(8))
export IVERD_TEST_REST_SETTLE_MS=${IVERD_TEST_REST_SETTLE_MS:-300}
faults_init priv
for t in useradd userdel groupadd groupdel setpriv getent; do command -v "$t" >/dev/null || { echo "SKIP: $t missing"; exit 77; }; done
SRC=${IVER_SOURCE_DIR:-$(cd "$here/../.." && pwd)}

SUF=$(printf '%05d' $(($$ % 100000)))
G=ivfst$SUF
OG=ivfso$SUF
U=ivfsu$SUF
groupadd -r "$G" || die "groupadd $G"
on_cleanup "groupdel '$G'"
groupadd -r "$OG" || die "groupadd $OG"
on_cleanup "groupdel '$OG'"
useradd -r -M -d /nonexistent -s /usr/sbin/nologin -g "$OG" "$U" || die "useradd $U"
on_cleanup "userdel '$U'"
UID_=$(id -u "$U") GID=$(getent group "$G" | cut -d: -f3) OGID=$(getent group "$OG" | cut -d: -f3)
note "user $U ($UID_), stats group $G ($GID), other group $OG ($OGID)"

# a copy of iverctl (and libiver) the test user can run, whatever the build tree's permissions
mkdir -p "$D/bin"
cp "$IVERCTL" "$D/bin/"
ldd "$IVERCTL" | awk '/libiver/ { print $3 }' | xargs -r -I{} cp -L {} "$D/bin/"
chmod -R a+rX "$D/bin"

for i in 1 2 3; do echo "file $i" >"$D/tree/f$i"; done
printf 'measure path="%s/**"\n' "$D/tree" >"$D/p.policy"
IVERD_TPM_ARGS=(--tpm none --workers 2)
IVERD_STATS_GROUP=$G start_iverd
ctl settle --timeout 60 >/dev/null

READ_VERBS=("status" "stats" "list" "log" "settle --timeout 5")
mkdir -p "$D/qout"; chmod 1777 "$D/qout"     # iverctl quote makes its --out directory before it asks
ROOT_VERBS=("remeasure $D/tree/f1" "rescan" "reload" "quote --nonce 00112233 --out $D/qout/q" "explain $D/tree/f1")
P_CHECKS=0 P_WRONG=0
# as WHO (setpriv args…) -- VERB: sets OUT RC
as() {
        local verb=$1; shift
        # shellcheck disable=SC2086
        OUT=$(cd / && LD_LIBRARY_PATH=$D/bin setpriv "$@" "$D/bin/iverctl" --socket "$IVERD_SOCKET" $verb 2>&1 >/dev/null)
        RC=$?
}
expect() { # allow|deny WHO-LABEL VERB setpriv-args…
        local want=$1 who=$2 verb=$3; shift 3
        as "$verb" "$@"
        P_CHECKS=$((P_CHECKS + 1))
        local denied=0
        [[ $OUT == *"permission denied"* ]] && denied=1
        if [[ $want == allow && ($denied == 1 || $RC -ne 0) ]]; then
                fail "$who '$verb' was not allowed (exit $RC): $OUT"; P_WRONG=$((P_WRONG + 1))
        elif [[ $want == deny && ($denied == 0 || $RC -eq 0) ]]; then
                fail "$who '$verb' was not refused (exit $RC): $OUT"; P_WRONG=$((P_WRONG + 1))
        else
                printf '   %-5s %-28s %-34s exit %d %s\n' "$want" "$who" "${verb:0:34}" "$RC" "${OUT:0:60}"
        fi
}

step "6a. control socket verbs per identity"
SUPP=(--reuid "$UID_" --regid "$OGID" --groups "$GID")
PRIM=(--reuid "$UID_" --regid "$GID" --clear-groups)
NONE=(--reuid "$UID_" --regid "$OGID" --clear-groups)
NOBODY=(--reuid 65534 --regid 65534 --clear-groups)
for v in "${READ_VERBS[@]}"; do
        expect allow "member (supplementary group)" "$v" "${SUPP[@]}"
        expect allow "member (primary group)" "$v" "${PRIM[@]}"
        expect deny "non-member" "$v" "${NONE[@]}"
        expect deny "nobody" "$v" "${NOBODY[@]}"
done
for v in "${ROOT_VERBS[@]}"; do
        expect deny "member (supplementary group)" "$v" "${SUPP[@]}"
        expect deny "member (primary group)" "$v" "${PRIM[@]}"
        expect deny "non-member" "$v" "${NONE[@]}"
done
[[ -e $D/qout/q/quote.msg ]] && { fail "a non-root quote wrote $D/qout/q/quote.msg"; P_WRONG=$((P_WRONG + 1)); }
# root: nothing refused (quote fails for want of a TPM, not for want of rights)
for v in "${READ_VERBS[@]}" "${ROOT_VERBS[@]}"; do
        out=$(cd / && "$IVERCTL" $v 2>&1 >/dev/null)
        P_CHECKS=$((P_CHECKS + 1))
        [[ $out == *"permission denied"* ]] && { fail "root '$v' refused: $out"; P_WRONG=$((P_WRONG + 1)); }
done
ref=$(grep -c "Refused" "$D/iverd.log")
note "daemon log: $ref 'Refused' lines"
alive
row "6a. socket verbs: member/non-member/root" "$P_CHECKS" 0 0 "$P_WRONG" "$((CRASHES))" "$ref refusals logged"

step "6a'. a non-member repeats a refused request 5,000 times: counted, logged once a 10 s"
r0=$(js requests_refused) l0=$(grep -c "Refused '" "$D/iverd.log")
cat >"$D/hammer.py" <<'PY'
import socket, sys
for _ in range(5000):  # one request a connection, as iverctl makes them
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(sys.argv[1])
        f = s.makefile("rwb")
        f.write(b'{"verb":"rescan"}\n')
        f.flush()
        if b"permission denied" not in f.readline():
            sys.exit("a refused request got another answer")
PY
chmod a+r "$D/hammer.py"
(cd / && setpriv "${NONE[@]}" python3 "$D/hammer.py" "$IVERD_SOCKET") || fail "the non-member's requests were not all refused"
r1=$(js requests_refused) l1=$(grep -c "Refused '" "$D/iverd.log")
note "requests_refused $r0 -> $r1; 'Refused' request lines in the log $l0 -> $l1"
H_WRONG=0
((r1 - r0 >= 5000)) || { fail "requests_refused counted $((r1 - r0)) of 5000"; H_WRONG=$((H_WRONG + 1)); }
((l1 - l0 <= 1)) || { fail "$((l1 - l0)) log lines for 5000 refused requests in a few seconds"; H_WRONG=$((H_WRONG + 1)); }
alive
row "6a'. refused requests repeated" 5000 0 0 "$H_WRONG" "$((CRASHES))" "$((l1 - l0)) lines, counted $((r1 - r0))"

step "6a''. arguments checked against each verb's schema, after the access check"
cat >"$D/schema.py" <<'PY'
import json, socket, sys
def ask(req):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(sys.argv[1])
        f = s.makefile("rwb")
        f.write(req.encode() + b"\n")
        f.flush()
        return json.loads(f.readline())
cases = [  # request, what the error must say (None: accepted)
    ('{"verb":"explain","path":"etc/passwd"}', '"path" must be an absolute path'),
    ('{"verb":"explain"}', "'explain' needs \"path\""),
    ('{"verb":"remeasure","paths":["/etc/passwd",7]}', '"paths" must be an array of absolute paths'),
    ('{"verb":"stats","top":"3"}', '"top" must be an integer'),
    ('{"verb":"settle","timeout":"5"}', '"timeout" must be a number'),
    ('{"verb":"list","violations":1}', '"violations" must be true or false'),
    ('{"verb":"quote","banks":"sha256","nonce":"00"}', '"banks" must be an array of strings'),
    ('{"verb":"reload","force":true}', "'reload' takes no \"force\""),
    ('{"verb":"stats","top":3}', None),
    ('{"verb":"settle","timeout":5}', None),
]
bad = 0
for req, want in cases:
    r = ask(req)
    err = r.get("error")
    ok = (err is None) if want is None else (err is not None and want in err)
    print("   %-5s %-52s %s" % ("ok" if ok else "WRONG", req[:52], err))
    bad += not ok
if len(sys.argv) > 2:  # as a non-member: refused before its arguments are looked at
    r = ask('{"verb":"explain","path":"relative"}')
    ok = "permission denied" in r.get("error", "")
    print("   %-5s non-member, bad arguments: %s" % ("ok" if ok else "WRONG", r.get("error")))
    bad += not ok
sys.exit(bad)
PY
chmod a+r "$D/schema.py"
S_WRONG=0
python3 "$D/schema.py" "$IVERD_SOCKET" || { fail "a request's arguments were not checked as its schema says"; S_WRONG=1; }
(cd / && setpriv "${NONE[@]}" python3 "$D/schema.py" "$IVERD_SOCKET" nonmember 2>/dev/null | tail -1 | grep -q "^   ok") ||
        { fail "a non-member's bad arguments were answered with more than a refusal"; S_WRONG=$((S_WRONG + 1)); }
alive
row "6a''. request schemas" 11 0 0 "$S_WRONG" "$((CRASHES))" ""

step "6b. capabilities of the running daemon (every task)"
C_WRONG=0 ntask=0
for st in /proc/"$IVERD_PID"/status /proc/"$IVERD_PID"/task/*/status; do
        ntask=$((ntask + 1))
        eff=$(awk '/^CapEff/ {print $2}' "$st"); prm=$(awk '/^CapPrm/ {print $2}' "$st")
        bnd=$(awk '/^CapBnd/ {print $2}' "$st"); inh=$(awk '/^CapInh/ {print $2}' "$st")
        amb=$(awk '/^CapAmb/ {print $2}' "$st")
        name=$(awk '/^Name/ {print $2}' "$st")
        printf '   %-40s %-10s CapEff %s CapPrm %s CapBnd %s CapInh %s CapAmb %s\n' "${st#/proc/}" "$name" "$eff" "$prm" "$bnd" "$inh" "$amb"
        if [[ $eff != 000000003020000c || $prm != 000000003020000c || $bnd != 000000003020000c || $inh != 0000000000000000 || $amb != 0000000000000000 ]]; then
                fail "$st: capabilities are not exactly the kept set 0x3020000c"; C_WRONG=$((C_WRONG + 1))
        fi
done
command -v capsh >/dev/null && note "0x3020000c = $(capsh --decode=3020000c | cut -d= -f2)"
row "6b. CapEff/CapPrm/CapBnd of every task" "$ntask" 0 0 "$C_WRONG" 0 "0x3020000c in all $ntask tasks"

step "6c. systemd unit exposure (reported)"
if command -v systemd-analyze >/dev/null && [[ -f $SRC/systemd/iverd.service ]]; then
        mkdir -p "$D/unit"
        sed "s|^ExecStart=[^ ]*iverd|ExecStart=$IVERD|" "$SRC/systemd/iverd.service" >"$D/unit/iverd.service"
        if systemd-analyze security --offline=yes "$D/unit/iverd.service" >"$D/exposure.txt" 2>&1; then :; fi
        ex=$(grep -a -o "Overall exposure level for iverd.service: .*" "$D/exposure.txt" | head -1)
        note "${ex:-$(tail -1 "$D/exposure.txt")}"
        grep -a "✗" "$D/exposure.txt" | head -12 | sed 's/^/     /'
        row "6c. systemd unit exposure (report only)" 1 - - - - "${ex#Overall exposure level for iverd.service: }"
fi
stop_iverd
faults_summary
