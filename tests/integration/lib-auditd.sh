# SPDX-License-Identifier: LGPL-2.1-or-later
# A private audit daemon for tests (sourced): `auditd -n -c DIR` with its log
# in DIR/audit.log. Only one audit daemon can be registered with the kernel,
# so auditd_start first waits for another one to go. auditd_stop (in the
# caller's cleanup too) stops it by PID and puts the kernel's "enabled" flag
# back (auditd disables auditing when it stops). stop_pid PID: TERM, up to
# 5 s, KILL. Needs the caller's fail().
AUDITD_PID=
AUDITD_PREV_ENABLED=$(auditctl -s | awk '$1 == "enabled" { print $2 }')

stop_pid() {
  local p=$1
  [ -n "$p" ] && kill -0 "$p" 2>/dev/null || return 0
  kill -TERM "$p" 2>/dev/null
  for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$p" 2>/dev/null || true
  wait "$p" 2>/dev/null || true
}

auditd_stop() {
  stop_pid "$AUDITD_PID"
  AUDITD_PID=
  if [ -n "$AUDITD_PREV_ENABLED" ] && [ "$AUDITD_PREV_ENABLED" != 2 ]; then
    auditctl -e "$AUDITD_PREV_ENABLED" >/dev/null
  fi
}

auditd_registered() { auditctl -s | awk '$1 == "pid" { print $2 }'; }

# auditd_start DIR LOG_FORMAT FLUSH FREQ MAX_LOG_MB
auditd_start() {
  local dir=$1 other=
  for _ in $(seq 120); do
    other=$(auditd_registered)
    [ -z "$other" ] || [ "$other" = 0 ] || ! kill -0 "$other" 2>/dev/null && break
    echo "another audit daemon (pid $other) is registered; waiting"
    sleep 1
  done
  [ -z "$other" ] || [ "$other" = 0 ] || ! kill -0 "$other" 2>/dev/null || fail "audit daemon pid $other still registered"
  mkdir -p "$dir/plugins.d"
  cat > "$dir/auditd.conf" <<CONF
local_events = yes
write_logs = yes
log_file = $dir/audit.log
log_format = $2
flush = $3
freq = $4
max_log_file = $5
num_logs = 0
max_log_file_action = IGNORE
space_left = 2
space_left_action = IGNORE
admin_space_left = 1
admin_space_left_action = IGNORE
disk_full_action = IGNORE
disk_error_action = IGNORE
name_format = NONE
transport = TCP
distribute_network = no
q_depth = 2000
overflow_action = IGNORE
max_restarts = 10
plugin_dir = $dir/plugins.d
end_of_event_timeout = 2
CONF
  chmod 0640 "$dir/auditd.conf"
  auditd -n -c "$dir" > "$dir/auditd.out" 2>&1 &
  AUDITD_PID=$!
  for _ in $(seq 50); do
    [ "$(auditd_registered)" = "$AUDITD_PID" ] && break
    kill -0 "$AUDITD_PID" 2>/dev/null || { cat "$dir/auditd.out"; fail "auditd exited"; }
    sleep 0.1
  done
  [ "$(auditd_registered)" = "$AUDITD_PID" ] || fail "auditd did not register"
}
