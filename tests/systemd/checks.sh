# shellcheck shell=bash
# The checks of tests/systemd/run, one line each (pass/FAIL), against the booted container of
# container.sh. Sourced; uses SRC, W and container.sh's names.

PASSED=0
FAILED=0
KV=linerate-kvagg@t.service
KV_STATE=/var/lib/linerate/t.state
KV_JSON=/var/lib/linerate/t.json
CB_PATH=/run/clockbound/shm0 # ClockBound's own path (/var/run is /run)
pass() {
  echo "pass: $*"
  PASSED=$((PASSED + 1))
}
fail() {
  echo "FAIL: $*"
  FAILED=$((FAILED + 1))
}

# `kill -s SIGNAL` of a unit's main PID, from inside the container (dash's kill: procps is not
# in a minbase root).
kill_main() {
  # shellcheck disable=SC2016 # expanded by that sh
  in_ct sh -c 'kill -s "$1" "$2"' - "$1" "$(prop "$2" MainPID)"
}

# A property of a unit, as systemctl shows it.
prop() {
  in_ct systemctl show -P "$2" "$1"
}

# Polls `COMMAND...` every 0.1 s until it succeeds or SECONDS pass: `wait_until SECONDS CMD...`.
wait_until() {
  local end=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS < end)) || return 1
    sleep 0.1
  done
}

# `unit_is UNIT STATE [PROPERTY VALUE]...`: ActiveState is STATE and each property its value.
unit_is() {
  local unit=$1
  [[ $(prop "$unit" ActiveState) == "$2" ]] || return 1
  shift 2
  while (($#)); do
    [[ $(prop "$unit" "$1") == "$2" ]] || return 1
    shift 2
  done
}

# /etc/linerate/NAME.conf in the container: ARGS, the app's whole command line.
write_conf() {
  mkdir -p "$W/root/etc/linerate"
  printf 'ARGS="%s"\n' "$2" >"$W/root/etc/linerate/$1.conf"
}

# A unit's journal of this boot as text, or its lines from one PID (`journal UNIT [PID]`).
journal() {
  in_ct journalctl --no-pager -q -o cat -u "$1" ${2:+"_PID=$2"}
}

# When journald read the line MESSAGE of a unit's process (its monotonic clock, us), if it has:
# `read_at UNIT PID MESSAGE`.
read_at() {
  in_ct journalctl --no-pager -q -o json -u "$1" _PID="$2" |
    python3 -c 'import json, sys
for line in sys.stdin:
    e = json.loads(line)
    if e.get("MESSAGE") == sys.argv[1]:
        print(e["__MONOTONIC_TIMESTAMP"])
        sys.exit(0)
sys.exit(1)' "$3"
}

# When (realtime, us) the unit's journal first has a line containing TEXT at or after SINCE_US,
# from any process (systemd's own lines about the unit included): `logged_at UNIT TEXT SINCE_US`.
logged_at() {
  in_ct journalctl --no-pager -q -o json -u "$1" |
    python3 -c 'import json, sys
for line in sys.stdin:
    e = json.loads(line)
    m = e.get("MESSAGE")
    if isinstance(m, str) and sys.argv[1] in m and int(e["__REALTIME_TIMESTAMP"]) >= int(sys.argv[2]):
        print(e["__REALTIME_TIMESTAMP"])
        sys.exit(0)
sys.exit(1)' "$2" "$3"
}

# The host's realtime clock in us (the container's journald stamps with the same clock).
now_us() {
  date +%s%6N
}

UNIT_NAMES="kvagg clocksync-client clocksync-master nfv" # linerate-NAME@.service

check_units_verify() {
  local name unit out
  for name in $UNIT_NAMES; do
    unit=/usr/lib/systemd/system/linerate-$name@.service
    if ! in_ct test -f "$unit"; then
      fail "verify: the package installs no $unit"
      continue
    fi
    # An instance of the template; warnings leave the exit status 0, so nothing may be said.
    if out=$(in_ct systemd-analyze verify "${unit/@/@check}" 2>&1) && [[ -z $out ]]; then
      pass "verify: systemd-analyze verify linerate-$name@check.service says nothing"
    else
      fail "verify: linerate-$name@check.service: $out"
    fi
  done
}

# The overall exposure `systemd-analyze security UNIT` gives a unit in the container (0.0 to
# 10.0; systemd's own weights of each sandboxing directive it lacks).
exposure() {
  in_ct systemd-analyze security --no-pager "$1" 2>&1 |
    sed -n 's/^→ Overall exposure level for [^ ]*: \([0-9]*\.[0-9]\) .*/\1/p'
}

# No linerate unit is more exposed than Debian's chrony.service (in the root, never started):
# an instance of every linerate-*@.service the package installed, scored by the container's
# systemd, against chrony's score there.
check_units_security() {
  local chrony units unit score
  chrony=$(exposure chrony.service)
  if [[ -z $chrony ]]; then
    fail "security: no exposure for chrony.service: $(in_ct systemd-analyze security --no-pager \
      chrony.service 2>&1 | tail -2)"
    return
  fi
  units=$(in_ct sh -c 'cd /usr/lib/systemd/system && ls linerate-*@.service')
  for unit in $units; do
    unit=${unit/@/@check}
    score=$(exposure "$unit")
    if [[ -z $score ]]; then
      fail "security: no exposure for $unit: $(in_ct systemd-analyze security --no-pager \
        "$unit" 2>&1 | tail -2)"
    elif ((10#${score/./} <= 10#${chrony/./})); then
      pass "security: $unit exposure $score, chrony.service $chrony"
    else
      fail "security: $unit exposure $score, more than chrony.service's $chrony:" \
        "$(in_ct systemd-analyze security --no-pager "$unit" 2>&1 | grep '✗' | tr -s ' ')"
    fi
  done
}

# kvagg's instance "t": AF_XDP on the container's veth end, its sums in a state file.
KV_ARGS="-l 0-1 --no-huge -m 512 --no-pci --file-prefix=kvagg-t -- --af-xdp $KV_IF
 --state $KV_STATE --json $KV_JSON --keys 64K --checkpoint-ms 100 --stats-period 0
 --allow $CL_IP"

# Type=notify: `systemctl start` returns once active, and active began only once the app had
# printed `kvagg: running` (it sends READY=1 after printing it). The print's time is seen through
# journald, which stamps a line when it reads it from the app's stdout: at or after the print,
# and, when it is busy, after systemd handled the READY=1 that followed (0.2 ms after, seen
# here). Hence the allowance of READ_LAG_US; a unit active before the app is ready (Type=simple)
# is active at its exec, the start-up's 200 ms and more before `running`.
READ_LAG_US=50000
check_kvagg_ready_after_running() {
  local pid start_us active_us running_us
  write_conf kvagg-t "${KV_ARGS//$'\n'/}"
  if ! in_ct timeout 60 systemctl start "$KV"; then
    fail "ready: systemctl start $KV failed: $(journal "$KV" | tail -5)"
    return
  fi
  pid=$(prop "$KV" MainPID)
  start_us=$(prop "$KV" ExecMainStartTimestampMonotonic)
  active_us=$(prop "$KV" ActiveEnterTimestampMonotonic)
  if ! wait_until 10 read_at "$KV" "$pid" "kvagg: running" >/dev/null; then
    fail "ready: $KV active, but no 'kvagg: running' from PID $pid in the journal"
    return
  fi
  running_us=$(read_at "$KV" "$pid" "kvagg: running")
  local said="active $(((active_us - start_us) / 1000)) ms after its start, its 'kvagg: running'"
  said+=" read by journald at $(((running_us - start_us) / 1000)) ms"
  if ((running_us <= active_us + READ_LAG_US)); then
    pass "ready: $KV $said"
  else
    fail "ready: $KV $said (active before the app was ready)"
  fi
  check_no_doubled_lines "$pid"
}

# The clients of tests/kvagg/state_chaos_test.py (two Python streams, the C++ kvagg_load) from
# the clients' namespace, sending until $W/stop exists, then waiting until durable.
start_kvagg_clients() {
  local chaos=$SRC/tests/kvagg/state_chaos_test.py
  rm -f "$W/stop"
  for seed in 41 42; do
    ip netns exec "$CL_NS" python3 "$chaos" send --seed "$seed" --stop "$W/stop" \
      --sums-out "$W/sent$seed.csv" >"$W/client$seed.log" 2>&1 &
    CLIENT_PIDS+=($!)
  done
  ip netns exec "$CL_NS" "$SRC/build/examples/kvagg_load" --host "$KV_IP" --tuples 100000000 \
    --until "$W/stop" --keys 4000 --seed 43 --pace 300 --timeout-ms 500 --status-every 300 \
    --durable --sums-out "$W/sent43.csv" >"$W/client43.log" 2>&1 &
  CLIENT_PIDS+=($!)
}

# Stops the clients (they end with wait_durable); 0 when every one ended with 0.
finish_kvagg_clients() {
  local pid rc=0
  touch "$W/stop"
  for pid in "${CLIENT_PIDS[@]}"; do wait "$pid" || rc=1; done
  CLIENT_PIDS=()
  return $rc
}

# SIGKILL of the main PID under the clients' load: systemd starts it again (NRestarts 1), and
# what every key sums to is what the clients sent, exactly (read() of each key).
check_kvagg_restart_after_sigkill() {
  local pid
  pid=$(prop "$KV" MainPID)
  start_kvagg_clients
  sleep 1 # traffic in flight when the kill comes
  kill_main KILL "$KV"
  if wait_until 30 unit_is "$KV" active NRestarts 1 && [[ $(prop "$KV" MainPID) != "$pid" ]]; then
    pass "sigkill: $KV restarted by systemd (NRestarts 1, PID $pid -> $(prop "$KV" MainPID))"
  else
    fail "sigkill: $KV not restarted: $(prop "$KV" ActiveState), NRestarts" \
      "$(prop "$KV" NRestarts): $(journal "$KV" | tail -5)"
  fi
  sleep 1 # the clients send on across the restart
  if ! finish_kvagg_clients; then
    fail "sigkill: a client failed: $(tail -n3 "$W"/client*.log)"
  elif ip netns exec "$CL_NS" python3 "$SRC/tests/kvagg/state_chaos_test.py" check \
    --flushed /dev/null "$W"/sent*.csv >"$W/check.log" 2>&1; then
    pass "sigkill: sums exact across the restart ($(tail -n1 "$W/check.log"))"
  else
    fail "sigkill: sums: $(tail -n3 "$W/check.log")"
  fi
}

# `systemctl stop` (SIGINT): exit 0, Result success, and the --json file written by this stop,
# its aggregated sum the sum of everything the clients sent.
check_kvagg_stop() {
  rm -f "$W/root$KV_JSON"
  in_ct systemctl stop "$KV"
  if unit_is "$KV" inactive ExecMainStatus 0 Result success; then
    pass "stop: $KV inactive, ExecMainStatus 0, Result success"
  else
    fail "stop: $KV $(prop "$KV" ActiveState), ExecMainStatus $(prop "$KV" ExecMainStatus)," \
      "Result $(prop "$KV" Result)"
  fi
  if [[ ! -s $W/root$KV_JSON ]]; then
    fail "stop: no $KV_JSON written"
  elif out=$(python3 - "$SRC/tests/kvagg" "$W/root$KV_JSON" "$W"/sent*.csv 2>&1 <<'PY'
import json, sys
sys.path.insert(0, sys.argv[1])
import service_test, state_chaos_test
j = json.load(open(sys.argv[2]))
j["kvagg_workers_wanted"] = 1
sys.exit(state_chaos_test.check_json(j, service_test.read_sums(sys.argv[3:])))
PY
  ); then
    pass "stop: $KV_JSON written: ${out//$'\n'/ }"
  else
    fail "stop: $KV_JSON: $out"
  fi
}

# systemd started kvagg again after its watchdog fired (NRestarts the count given), and journald
# has read systemd's line on why.
watchdog_restarted() {
  unit_is "$KV" active NRestarts "$1" &&
    journal "$KV" | grep -q "^$KV: Failed with result 'watchdog'\.$"
}

# A stalled worker (test-only: LINERATE_TEST_STALL=1 and SIGUSR2) with WatchdogSec=2s: the
# pings stop, systemd's watchdog kills the service within WatchdogSec + 1 s of the stall (the
# app's own line on it comes first) and starts it again.
WATCHDOG_S=2
check_kvagg_watchdog() {
  local dropin=$W/root/etc/systemd/system/$KV.d restarts stall_us said_us killed_us
  mkdir -p "$dropin"
  printf '[Service]\nEnvironment=LINERATE_TEST_STALL=1\nWatchdogSec=%ss\n' "$WATCHDOG_S" \
    >"$dropin/stall.conf"
  in_ct systemctl daemon-reload
  in_ct timeout 60 systemctl start "$KV"
  restarts=$(prop "$KV" NRestarts)
  stall_us=$(now_us)
  kill_main USR2 "$KV"
  if wait_until 30 watchdog_restarted $((restarts + 1)); then
    pass "watchdog: stalled worker -> $KV failed with result 'watchdog', restarted" \
      "(NRestarts $restarts -> $(prop "$KV" NRestarts))"
  else
    fail "watchdog: $KV $(prop "$KV" ActiveState), NRestarts $(prop "$KV" NRestarts):" \
      "$(journal "$KV" | tail -5)"
  fi
  said_us=$(logged_at "$KV" "a worker has not polled for" "$stall_us" || echo 0)
  killed_us=$(logged_at "$KV" "Watchdog timeout" "$stall_us" || echo 0)
  local said="the app said so $(((said_us - stall_us) / 1000)) ms after the stall, systemd's"
  said+=" 'Watchdog timeout' at $(((killed_us - stall_us) / 1000)) ms (WatchdogSec=${WATCHDOG_S}s)"
  if ((said_us > 0 && killed_us > 0 && killed_us - stall_us <= (WATCHDOG_S + 1) * 1000000 &&
    said_us < killed_us)); then
    pass "watchdog timing: $said"
  else
    fail "watchdog timing: $said: $(journal "$KV" | tail -5)"
  fi
  rm -r "$dropin"
  in_ct systemctl daemon-reload
  in_ct systemctl stop "$KV"
}

# `systemctl status UNIT`'s text (its exit status is not 0 for a failed unit).
status_text() {
  in_ct systemctl status --no-pager -n 20 "$1" 2>&1 || true
}

# A usage error (exit 2: a typo in ARGS, a missing --af-xdp interface) is not restarted: the unit
# is failed after one start (NRestarts 0), and `systemctl status` shows the app's line (its
# STATUS=), not only the journal.
check_usage_error_not_restarted() {
  local name unit args line status
  for name in typo nosuch; do
    unit=linerate-kvagg@$name.service
    args="-l 0-1 --no-huge -m 512 --no-pci --file-prefix=kvagg-$name -- --af-xdp $KV_IF"
    [[ $name == typo ]] && args+=" --no-such-option" || args="${args/$KV_IF/lrsdnosuch0}"
    write_conf "kvagg-$name" "$args"
    in_ct timeout 60 systemctl start "$unit" 2>/dev/null && true
    sleep 3 # RestartSec=1s: a restart would have come
    line=$(journal "$unit" | grep -m1 '^kvagg: .*(see --help)$' || true)
    if [[ -n $line ]] && unit_is "$unit" failed NRestarts 0 ExecMainStatus 2; then
      pass "usage error ($name): $unit failed, ExecMainStatus 2, NRestarts 0: $line"
    else
      fail "usage error ($name): $unit $(prop "$unit" ActiveState), ExecMainStatus" \
        "$(prop "$unit" ExecMainStatus), NRestarts $(prop "$unit" NRestarts): $(journal "$unit")"
    fi
    status=$(status_text "$unit")
    if [[ -n $line ]] && grep -qF "Status: \"$line\"" <<<"$status"; then
      pass "status ($name): systemctl status $unit shows Status: \"$line\""
    else
      fail "status ($name): systemctl status $unit lacks the app's line '$line': $status"
    fi
  done
}

# The unit is failed, and systemd said why: its start limit (systemd 252 leaves Result as the
# last try's, exit-code).
start_limit_hit() {
  unit_is "$1" failed && journal "$1" | grep -q "^$1: Start request repeated too quickly\.$"
}

# A start that fails (exit 1) 1.5 s in, again and again, stops being restarted: the start limit
# (StartLimitIntervalSec=, StartLimitBurst=) trips. The app fails at once (the EAL refuses an
# unknown driver); a drop-in's ExecStartPre= makes each start take 1.5 s first.
check_slow_failure_gives_up() {
  local unit=linerate-kvagg@slow.service t0=$SECONDS
  local dropin=$W/root/etc/systemd/system/$unit.d
  mkdir -p "$dropin"
  printf '[Service]\nExecStartPre=/bin/sleep 1.5\n' >"$dropin/slow.conf"
  write_conf kvagg-slow "-l 0-1 --no-huge -m 512 --no-pci --file-prefix=kvagg-slow \
--vdev=net_lrsdnosuch0 -- --stats-period 0"
  in_ct systemctl daemon-reload
  in_ct systemctl start --no-block "$unit"
  if wait_until 60 start_limit_hit "$unit"; then
    pass "slow failure: $unit given up after $(prop "$unit" NRestarts) restarts" \
      "($((SECONDS - t0)) s: 'Start request repeated too quickly'; ExecMainStatus" \
      "$(prop "$unit" ExecMainStatus))"
  else
    fail "slow failure: $unit $(prop "$unit" ActiveState), Result $(prop "$unit" Result)," \
      "NRestarts $(prop "$unit" NRestarts) after $((SECONDS - t0)) s: $(journal "$unit" | tail -3)"
    in_ct systemctl stop "$unit"
  fi
  rm -r "$dropin"
  in_ct systemctl daemon-reload
}

# No line of one start of the unit is in the journal twice (DPDK's lines reached it by stdout and
# by syslog), and libxdp's refcount warning is not there: kvagg's first start (check_ready).
check_no_doubled_lines() {
  local pid=$1 lines doubled
  lines=$(journal "$KV" "$pid")
  doubled=$(sort <<<"$lines" | uniq -d)
  if [[ -z $doubled ]] && ! grep -q "doesn't support program refcnt" <<<"$lines"; then
    pass "journal: the $(wc -l <<<"$lines") lines of $KV's start (PID $pid): none twice," \
      "no libxdp refcount warning"
  else
    fail "journal: lines of $KV's start (PID $pid) twice: ${doubled:-none};" \
      "$(grep "refcnt" <<<"$lines")"
  fi
}

# clocksync's master and client over memif (a socket in /run), the client writing ClockBound's
# segment at its own path.
CS_MASTER=linerate-clocksync-master@t.service
CS_CLIENT=linerate-clocksync-client@t.service
CS_SOCKET=/run/linerate/cs-t.sock

# cb_probe (tests/clocksync/cb_probe.c, a ClockBound reader from its PROTOCOL.md) in the
# container, in the background; returns once it read Synchronized (`start_cb_probe NAME`).
start_cb_probe() {
  in_ct /usr/local/bin/cb_probe "$CB_PATH" 200 30000 >"$W/$1.json" 2>"$W/$1.err" &
  CB_PROBE=$!
  CLIENT_PIDS+=("$CB_PROBE")
  wait_until 30 grep -qs '^cb_probe: Synchronized$' "$W/$1.err"
}

# The probe's JSON once the client stopped: Synchronized read, never a time outside the
# interval, then the client's Unknown (written at its stop).
cb_probe_saw_stop() {
  wait "$CB_PROBE" || return 1
  python3 - "$W/$1.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
ok = (j.get("synchronized", 0) > 0 and j["outside"] == 0 and j["unknown_written_status"] == 0
      and j["transitions"].endswith("1,0"))
print(f"{j.get('synchronized')} Synchronized reads, {j.get('outside')} outside the bound, "
      f"transitions {j.get('transitions')}, Unknown written {j.get('unknown_written_status')}")
sys.exit(0 if ok else 1)
PY
}

# Synchronized while the client runs, Unknown once it is stopped, Synchronized again after it
# is started again (the status it wrote at its stop was Unknown).
check_clocksync_clockbound() {
  local eal="-l 0-1 --no-huge -m 512 --no-pci" out
  install -m 755 "$SRC/build/tests/clocksync/cb_probe" "$W/root/usr/local/bin/cb_probe"
  write_conf clocksync-master-t "$eal --file-prefix=csm-t \
--vdev=net_memif0,role=server,socket=$CS_SOCKET -- master --sw-clock realtime \
--link-wait 0 --stats-period 0" # its link is up once a client connects: ready before that
  write_conf clocksync-client-t "$eal --file-prefix=csc-t \
--vdev=net_memif0,role=client,socket=$CS_SOCKET -- client --master-clock realtime \
--clockbound $CB_PATH --stats-period 0"
  # The master first: a memif client connects once, when its port starts.
  if ! in_ct timeout 60 systemctl start "$CS_MASTER"; then
    fail "clockbound: $CS_MASTER did not start: $(journal "$CS_MASTER" | tail -3)"
    return
  fi
  for round in started restarted; do
    if ! in_ct timeout 60 systemctl start "$CS_CLIENT"; then
      fail "clockbound: $CS_CLIENT not $round: $(journal "$CS_CLIENT" | tail -3)"
      break
    fi
    if ! start_cb_probe "cb-$round"; then
      fail "clockbound: client $round, no Synchronized read: $(cat "$W/cb-$round.err")"
      break
    fi
    in_ct systemctl stop "$CS_CLIENT"
    if out=$(cb_probe_saw_stop "cb-$round"); then
      pass "clockbound: client $round then stopped: $out"
    else
      fail "clockbound: client $round then stopped: $out $(cat "$W/cb-$round.err")"
    fi
  done
  in_ct systemctl stop "$CS_CLIENT" "$CS_MASTER"
}

# The client's `systemctl status` (its STATUS=, once a second): synchronized with its ε while
# the master answers, not synchronized once the master is stopped (its last sync older than
# --export-max-age-ms, 1 s here).
client_status_has() {
  grep -q "Status: \"clocksync: $1" <<<"$(status_text "$CS_CLIENT")"
}

# pass/fail on whether the client's status comes to hold $1 within 30 s ($2 names the moment).
expect_client_status() {
  local said
  if wait_until 30 client_status_has "$1"; then
    said=$(status_text "$CS_CLIENT" | grep -m1 'Status:')
    pass "client status: $2: ${said#"${said%%[! ]*}"}"
  else
    fail "client status: $2, not '$1': $(status_text "$CS_CLIENT" | grep 'Status:')"
  fi
}

check_clocksync_status() {
  # The master first: a memif client connects once, when its port starts.
  in_ct timeout 60 systemctl start "$CS_MASTER"
  in_ct timeout 60 systemctl start "$CS_CLIENT"
  expect_client_status "synchronized, ε " "synchronized"
  in_ct systemctl stop "$CS_MASTER"
  expect_client_status "not synchronized: " "master stopped"
  in_ct systemctl stop "$CS_CLIENT"
}
