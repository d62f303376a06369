#!/usr/bin/env bash
# Records tests/fixtures/haproxy-<label>/ from a real HAProxy: the replies of its master CLI
# (`haproxy -W -S master.sock`), byte for byte, in the scenario tests/fixtures/README.md describes.
#
#   scripts/record-fixtures.sh 3.4          one version of the manifest
#   scripts/record-fixtures.sh 2.6 3.2      several
#   scripts/record-fixtures.sh --all        every version of the manifest
#
# Needs: bash, socat, ss, and hawk_test_backend (the slow local backend, built by
# `cmake --build build/default --target hawk_test_backend`).
#
# Environment:
#   HAWK_HAPROXY_MANIFEST  "<label> <binary>" lines (default: the one scripts/haproxy-versions.sh
#                          writes, ${XDG_CACHE_HOME:-$HOME/.cache}/hawk/haproxy/versions.txt)
#   HAWK_TEST_BACKEND      the backend (default build/default/tests/support/hawk_test_backend)
#   HAWK_FIXTURES_OUT      where haproxy-<label>/ folders go (default tests/fixtures)
#   HAWK_RECORD_MAP_ENTRIES  entries of the map that makes one reload slow (default 1000000: about
#                          2 s of parsing); raise it if the script says the window was missed
#   HAWK_RECORD_KEEP=1     keep the temp dir (its path is printed)
#
# Why bash + socat: every reply is recorded on its own connection (`printf … | socat`: socat
# half-closes when its input ends and exits when the master closes, so EOF frames the reply on
# every version). The few conversations that must wait for a reply before sending the next line
# keep socat's input open through a process substitution and poll the output file for the
# expected last bytes, with a deadline.
#
# Each version runs in its own temp dir with free ports; every process started here (HAProxy's
# master, the backends, socat clients) is stopped by pid when the version is done or the script
# fails, and so are HAProxy's workers seen in `show proc`. A folder is replaced only when its whole
# recording succeeded and passed the checks at the end of record_version.
#
# Rewrites, the same on every run: the temp dir becomes /etc/haproxy and the binary's path
# /usr/sbin/haproxy (where Debian's package installs it). Pids, ports, uptimes, addresses of
# sessions and map entries are left as HAProxy printed them.
#
# wait_for … eval '…': the single quotes are meant, the text is evaluated at each poll.
# shellcheck disable=SC2016
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

manifest=${HAWK_HAPROXY_MANIFEST:-${XDG_CACHE_HOME:-$HOME/.cache}/hawk/haproxy/versions.txt}
backend_bin=${HAWK_TEST_BACKEND:-$repo/build/default/tests/support/hawk_test_backend}
fixtures_out=${HAWK_FIXTURES_OUT:-$repo/tests/fixtures}
map_entries=${HAWK_RECORD_MAP_ENTRIES:-1000000}

die() {
  echo "record-fixtures: $*" >&2
  exit 1
}
log() { echo "record-fixtures [${label:-}]: $*" >&2; }

command -v socat >/dev/null || die "needs socat"
command -v ss >/dev/null || die "needs ss (iproute2)"
[[ -x $backend_bin ]] ||
  die "no $backend_bin: cmake --build build/default --target hawk_test_backend"
[[ -r $manifest ]] || die "no manifest $manifest: run scripts/haproxy-versions.sh"

# ---------------------------------------------------------------------------------------------
# Helpers. They use the globals of one version's run: $tmp, $sock, $out.

# wait_for SECONDS DESCRIPTION COMMAND…: runs COMMAND every 20 ms until it succeeds.
wait_for() {
  local limit=$1 what=$2 deadline=$((SECONDS + $1))
  shift 2
  until "$@"; do
    ((SECONDS < deadline)) || die "[$label] no $what after ${limit}s"
    sleep 0.02
  done
}

# cli FILE TEXT [SECONDS]: sends TEXT (printf %b escapes) on a new master connection, half-closes,
# and stores every byte received until the master closes the connection, or for at most SECONDS
# (default 60).
cli() {
  local start=$EPOCHREALTIME took limit=${3:-60}
  printf '%b' "$2" | socat -t "$limit" - "UNIX-CONNECT:$sock" >"$1" || return
  took=$(elapsed "$start")
  if ((took >= limit * 1000)); then
    log "the master did not close the connection within ${limit} s: ${2:0:60}"
  elif ((took >= 2000)); then
    log "the master took $took ms to answer and close: ${2:0:60}"
  fi
}

# master_error NAME TEXT [SECONDS]: like record, for a command the master itself refuses ("Can't
# find the target PID…"). After such an error a 3.x master sometimes keeps the connection open
# although the client half-closed (and never frees its slot), so the reply, which comes at once, is
# read for 5 s at most.
master_error() { cli "$out/$1" "$2" "${3:-5}"; }

# record NAME TEXT: cli into $out/NAME.
record() { cli "$out/$1" "$2"; }

# Process rows of a `show proc` reply: the pids under "# workers" or under "# old workers".
current_workers() { awk '/^# /{s=$0; next} $2=="worker" && s=="# workers"{print $1}' "$1"; }
old_workers() { awk '/^# /{s=$0; next} $2=="worker" && s=="# old workers"{print $1}' "$1"; }
master_reloads() { awk '$2=="master"{print $3}' "$1"; }
master_failed() { awk '$2=="master"{sub(/]/, "", $5); print $5}' "$1"; }

# show_proc FILE: `show proc` into FILE; fails (quietly) while the master is unreachable.
show_proc() { cli "$1" 'show proc\n' 10 2>/dev/null && grep -q ' master ' "$1"; }

# elapsed START: milliseconds since START (an $EPOCHREALTIME value).
elapsed() {
  local now=${EPOCHREALTIME/./} start=${1/./}
  echo $(((now - start) / 1000))
}

# ends_with FILE BYTES: FILE's last bytes are BYTES (trailing newlines included).
ends_with() { [[ "$(tail -c "${#2}" "$1" 2>/dev/null; echo x)" == "$2"x ]]; }
contains() { grep -qF -- "$2" "$1"; }
expect_contains() {
  contains "$out/$1" "$2" || die "[$label] $1 lacks \"$2\": $(head -c 300 "$out/$1")"
}
expect_equals() {
  [[ "$(cat "$out/$1"; echo x)" == "$(printf '%b' "$2"; echo x)" ]] ||
    die "[$label] $1 is \"$(head -c 300 "$out/$1")\", expected \"$2\""
}

# A conversation on one connection: session_open FILE, session_send TEXT…, session_close.
session_open() {
  exec {session_fd}> >(exec socat -t 60 - "UNIX-CONNECT:$sock" >"$1")
  session_pid=$!
  started_pids+=("$session_pid")
  session_file=$1
}
session_send() { printf '%b' "$1" >&"$session_fd"; }
# Half-closes (socat's input ends) and waits until the master has closed the connection.
session_close() {
  exec {session_fd}>&-
  session_fd=
  wait_for 60 "end of the conversation in $session_file" eval '! kill -0 "$session_pid" 2>/dev/null'
}

# worker_ready PID: the worker answers `show info` through the master (so it is no longer
# initialising) and reports Stopping: 0.
worker_ready() {
  cli "$tmp/ready.txt" "@!$1 show info\n" 10 2>/dev/null && contains "$tmp/ready.txt" "Stopping: 0"
}
# new_current_worker FILE KNOWN…: FILE (a fresh `show proc`) lists a current worker not in KNOWN.
new_current_worker() {
  local file=$1 pid
  shift
  for pid in $(current_workers "$file"); do
    [[ " $* " == *" $pid "* ]] || { echo "$pid"; return 0; }
  done
  return 1
}

stop_processes() {
  local pid deadline
  if [[ -n ${session_fd:-} ]]; then exec {session_fd}>&-; fi
  if [[ -n ${http_fd:-} ]]; then exec {http_fd}>&-; fi
  session_fd=
  http_fd=
  # The master stops its workers on SIGTERM; then whatever is left, by pid.
  if [[ -n ${master_pid:-} ]] && kill -0 "$master_pid" 2>/dev/null; then
    kill "$master_pid" 2>/dev/null || true
    deadline=$((SECONDS + 10))
    while kill -0 "$master_pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.05; done
    kill -KILL "$master_pid" 2>/dev/null || true
  fi
  for pid in "${worker_pids[@]}"; do
    # Only a process of this run: its command line names this run's temp dir.
    if [[ -r /proc/$pid/cmdline && $(tr '\0' ' ' <"/proc/$pid/cmdline") == *"$tmp/"* ]]; then
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  for pid in "${started_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  started_pids=()
  worker_pids=()
  master_pid=
}

stop_everything() {
  stop_processes
  if [[ ${HAWK_RECORD_KEEP:-0} == 1 ]]; then
    echo "record-fixtures [$label]: kept $tmp" >&2
  else
    rm -rf "$tmp"
  fi
}

# remember_workers FILE: adds the pids of a `show proc` reply to those stopped at the end.
remember_workers() {
  local pid
  for pid in $(current_workers "$1") $(old_workers "$1"); do
    [[ " ${worker_pids[*]} " == *" $pid "* ]] || worker_pids+=("$pid")
  done
}

free_port() {
  local port
  for _ in $(seq 500); do
    port=$((20000 + RANDOM % 40000))
    [[ -z $(ss -Hltn "sport = :$port") ]] && { echo "$port"; return; }
  done
  die "no free TCP port"
}

# start_backend NAME: a hawk_test_backend on a free port; sets $backend_port.
start_backend() {
  local name=$1 log_file=$tmp/backend-$1.out
  "$backend_bin" --listen 127.0.0.1:0 --name "$name" --quiet >"$log_file" 2>&1 &
  started_pids+=("$!")
  wait_for 30 "backend $name listening" grep -qs '^listening on ' "$log_file"
  backend_port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$log_file")
}

# The scenario (README.md). Lines 11 and 13 carry the ACL and the map: `show acl`/`show map` name
# them.
write_config() {
  cat >"$tmp/h.cfg" <<EOF
# hawk fixtures scenario (scripts/record-fixtures.sh)
global
    nbthread 2
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fe
    bind 127.0.0.1:$fe_port
    acl blocked src -f $tmp/blocked.acl
    http-request deny if blocked
    use_backend %[req.hdr(host),lower,map($tmp/hosts.map,be_app)]
    default_backend be_app
backend be_app
    server-template SRV 3 192.0.2.1:80 disabled
    server web1 127.0.0.1:$web1_port
backend be_other
    server o1 127.0.0.1:$o1_port weight 50
EOF
  case $1 in
    ok) ;;
    broken) printf 'frontend fe_broken\n    bogus_keyword\n' >>"$tmp/h.cfg" ;;
    slow)
      # A big map makes the config take about a second to parse, on every version.
      printf 'backend be_slow_to_load\n    http-request set-var(txn.big) req.hdr(host),map(%s)\n' \
        "$tmp/big.map" >>"$tmp/h.cfg"
      ;;
  esac
}

# slow_reload_running PID: the `reload` client PID has not had its reply yet.
slow_reload_running() { kill -0 "$1" 2>/dev/null && [[ ! -s $tmp/slow_reload.txt ]]; }

# ---------------------------------------------------------------------------------------------

record_version() {
  label=$1
  local binary=$2
  [[ -x $binary ]] || die "[$label] no binary $binary"
  local version_line major minor
  # Not `| head -n 1`: with pipefail, haproxy's SIGPIPE would fail the pipeline.
  version_line=$("$binary" -v)
  version_line=${version_line%%$'\n'*}
  [[ $version_line =~ version\ ([0-9]+)\.([0-9]+) ]] || die "[$label] cannot read: $version_line"
  major=${BASH_REMATCH[1]}
  minor=${BASH_REMATCH[2]}
  # 3.1+: the new worker parses the config while the master serves the CLI.
  local worker_parses=0
  ((major > 3 || (major == 3 && minor >= 1))) && worker_parses=1

  tmp=$(mktemp -d /tmp/hawk-record.XXXXXX)
  out=$tmp/out
  sock=$tmp/master.sock
  started_pids=()
  worker_pids=()
  master_pid=
  session_fd=
  http_fd=
  trap stop_everything EXIT
  mkdir "$out"
  log "$version_line, in $tmp"

  start_backend web1
  web1_port=$backend_port
  start_backend o1
  o1_port=$backend_port
  fe_port=$(free_port)
  printf 'a.example.com be_app\nb.example.com be_other\n' >"$tmp/hosts.map"
  printf '10.0.0.0/8\n192.168.0.0/16\n' >"$tmp/blocked.acl"
  write_config ok

  (cd "$tmp" && exec "$binary" -W -S "$sock" -f "$tmp/h.cfg") >"$tmp/haproxy.log" 2>&1 &
  master_pid=$!
  wait_for 60 "worker in show proc" \
    eval 'show_proc "$tmp/proc.txt" && [[ -n $(current_workers "$tmp/proc.txt") ]]'
  local w1
  w1=$(current_workers "$tmp/proc.txt")
  remember_workers "$tmp/proc.txt"
  wait_for 60 "worker $w1 ready" worker_ready "$w1"

  # Master level, then the worker through `@1`.
  record show_proc.txt 'show proc\n'
  record show_version.txt 'show version\n'
  record master_help.txt 'help\n'
  record worker_show_info.txt '@1 show info\n'
  record worker_show_servers_state_all.txt '@1 show servers state\n'
  record worker_show_servers_state_be_app.txt '@1 show servers state be_app\n'
  record worker_show_map_list.txt '@1 show map\n'
  record worker_show_map_entries.txt "@1 show map $tmp/hosts.map\n"
  record worker_show_acl_list.txt '@1 show acl\n'
  record err_no_such_backend.txt '@1 set server be_nope/web1 state ready\n'
  record err_no_such_server.txt '@1 set server be_app/nope state ready\n'
  master_error err_unknown_pid.txt '@!999999 show info\n'
  record err_unknown_command.txt '@1 frobnicate\n'

  # One request in flight to the slow web1, held until the end: it keeps worker 1 alive after the
  # reload. The connection stays open (socat's input too) so that nothing half-closes it.
  exec {http_fd}> >(exec socat -t 5 - "TCP:127.0.0.1:$fe_port" >"$tmp/http.out")
  started_pids+=("$!")
  printf 'GET /slow?ms=600000 HTTP/1.1\r\nHost: fixtures.invalid\r\n\r\n' >&"$http_fd"
  wait_for 30 "the request in show sess" \
    eval 'cli "$tmp/sess.txt" "@1 show sess\n" && contains "$tmp/sess.txt" " srv=web1 "'
  record worker_show_sess_inflight.txt '@1 show sess\n'

  record ok_set_server_addr_port.txt "@1 set server be_app/SRV1 addr 127.0.0.1 port $o1_port\n"
  record ok_set_server_state_ready.txt '@1 set server be_app/SRV1 state ready\n'
  record ok_set_weight.txt '@1 set weight be_app/SRV1 10\n'
  record ok_set_map.txt "@1 set map $tmp/hosts.map b.example.com be_app\n"
  record ok_add_map.txt "@1 add map $tmp/hosts.map c.example.com be_other\n"
  record pipelined_two_commands.txt \
    '@1 show servers state be_other; @1 set weight be_other/o1 20; @1 get weight be_other/o1\n'
  # The empty last line shows what an empty command answers in prompt mode.
  record prompt_mode_session.txt 'prompt\n@1 get weight be_other/o1\nshow version\n\n'

  # A reload while the request holds worker 1: it becomes a leaving ("old") worker.
  cli "$out/reload_ok_reply.txt" 'reload\n' 120
  local w2
  wait_for 60 "new worker after reload" \
    eval 'show_proc "$tmp/proc.txt" && w2=$(new_current_worker "$tmp/proc.txt" "$w1")'
  remember_workers "$tmp/proc.txt"
  wait_for 60 "worker $w2 ready" worker_ready "$w2"
  wait_for 30 "worker $w1 stopping" \
    eval 'cli "$tmp/old.txt" "@!$w1 show info\n" && contains "$tmp/old.txt" "Stopping: 1"'
  record show_proc_with_old_worker.txt 'show proc\n'
  record old_worker_set_server_refused.txt "@!$w1 set server be_app/SRV1 state maint\n"
  record old_worker_add_server.txt "@!$w1 add server be_app/fresh 127.0.0.1:$o1_port\n"
  record old_worker_set_map.txt "@!$w1 set map $tmp/hosts.map a.example.com be_other\n"
  record old_worker_show_info.txt "@!$w1 show info\n"
  record old_worker_show_sess.txt "@!$w1 show sess\n"
  record old_worker_show_servers_state.txt "@!$w1 show servers state be_app\n"

  # A failed reload: an unknown keyword.
  write_config broken
  cli "$out/reload_failed_reply.txt" 'reload\n' 120
  wait_for 60 "[failed: 1] in show proc" \
    eval 'show_proc "$tmp/proc.txt" && [[ $(master_failed "$tmp/proc.txt") == 1 ]]'
  remember_workers "$tmp/proc.txt"
  record show_proc_after_failed_reload.txt 'show proc\n'
  record prompt_after_failed_reload.txt 'prompt\nshow version\n\n'

  # Let worker 1 go: end its session (the only thing keeping it), and wait until it has exited.
  local session_ptr
  session_ptr=$(awk '/ fe=fe /{sub(/:$/, "", $1); print $1; exit}' "$out/old_worker_show_sess.txt")
  [[ -n $session_ptr ]] || die "[$label] no fe=fe session in old_worker_show_sess.txt"
  cli "$tmp/shutdown.txt" "@!$w1 shutdown session $session_ptr\n"
  exec {http_fd}>&-
  http_fd=
  wait_for 60 "worker $w1 gone" \
    eval 'show_proc "$tmp/proc.txt" && ! grep -q "^$w1 " "$tmp/proc.txt"'

  # A slow reload (a big map): on 3.1+ the new worker is listed while it parses (STARTING) and a
  # second `reload` is refused; 2.6 and 3.0 parse in the master, which refuses connections
  # meanwhile.
  seq -f 'host%.0f.example.com be_app' 1 "$map_entries" >"$tmp/big.map"
  write_config slow
  cli "$tmp/proc_before.txt" 'show proc\n'
  local reloads_before
  reloads_before=$(master_reloads "$tmp/proc_before.txt")
  printf 'reload\n' | socat -t 300 - "UNIX-CONNECT:$sock" >"$tmp/slow_reload.txt" &
  local slow_pid=$! w3='' refused=0 t0=$EPOCHREALTIME t_seen t_recorded=''
  started_pids+=("$slow_pid")
  while :; do
    if show_proc "$tmp/proc.txt"; then
      if [[ $(master_reloads "$tmp/proc.txt") -gt $reloads_before ]] &&
        w3=$(new_current_worker "$tmp/proc.txt" "$w1" "$w2"); then
        break
      fi
    else
      refused=$((refused + 1))
    fi
    [[ $(elapsed "$t0") -lt 300000 ]] || die "[$label] no new worker after the slow reload"
    sleep 0.02
  done
  t_seen=$(elapsed "$t0")
  remember_workers "$tmp/proc.txt"
  if ((worker_parses)); then
    slow_reload_running "$slow_pid" ||
      die "[$label] the slow reload ended before its worker was seen;" \
        "raise HAWK_RECORD_MAP_ENTRIES"
    cp "$tmp/proc.txt" "$out/show_proc_starting_worker.txt"
    record reload_in_progress_reply.txt 'reload\n'
    local t_second
    t_second=$(elapsed "$t0")
    # 1 s: the reply comes at once, and the window may not outlast a master that keeps the
    # connection open.
    master_error starting_worker_show_info.txt "@!$w3 show info\n" 1
    slow_reload_running "$slow_pid" ||
      die "[$label] the slow reload ended during the recording (worker seen at $t_seen ms," \
        "second reload answered at $t_second ms, show info at $(elapsed "$t0") ms);" \
        "raise HAWK_RECORD_MAP_ENTRIES"
    t_recorded=$(elapsed "$t0")
  fi
  wait_for 300 "end of the slow reload" eval '! kill -0 "$slow_pid" 2>/dev/null'
  log "slow reload: $refused connections refused; new worker $w3 seen at ${t_seen} ms" \
    "${t_recorded:+(STARTING recorded by ${t_recorded} ms) }reply complete by" \
    "$(elapsed "$t0") ms: $(head -n 1 "$tmp/slow_reload.txt")"
  wait_for 60 "worker $w3 ready" worker_ready "$w3"

  # `@@!<pid>`: a whole line for one worker session (3.2+; older masters answer an error).
  local line="@@!$w3 set server be_other/o1 weight 30; get weight be_other/o1;"
  line+=" set server be_other/nope weight 1; show servers state be_other;"
  line+=" set weight be_other/o1 50\n"
  # On 2.6 and 3.0 the master refuses the @@ line itself: read it as a master error.
  master_error atat_line.txt "$line"
  master_error prompt_atat_line.txt "prompt\n$line"
  master_error atat_unknown_pid.txt '@@!999999 show version\n'
  master_error prompt_atat_unknown_pid.txt 'prompt\n@@!999999 show version\nshow version\n'
  local atat=0
  contains "$out/atat_line.txt" "Can't find the target PID" || atat=1
  if ((atat)); then
    # A second line in the same write as the @@ line.
    record atat_pipelined.txt "@@!$w3 get weight be_other/o1\nshow version\n"
    record prompt_atat_pipelined.txt "prompt\n@@!$w3 get weight be_other/o1\nshow version\n"
    # A second line sent while the @@ line runs: `wait 2000` holds the reply for 2 s and the second
    # line goes out 0.5 s after the first.
    session_open "$out/prompt_atat_line_in_flight.txt"
    session_send "prompt\n@@!$w3 wait 2000; get weight be_other/o1\n"
    sleep 0.5
    session_send 'show version\n'
    wait_for 30 "reply to the @@ line" ends_with "$session_file" $'\n\nmaster> '
    session_close
    # A second line sent once the reply of the @@ line is complete.
    session_open "$out/atat_then_next_line.txt"
    session_send "@@!$w3 get weight be_other/o1\n"
    wait_for 30 "reply to the @@ line" ends_with "$session_file" $'\n\n'
    session_send 'show version\n'
    wait_for 30 "reply to show version" eval 'contains "$session_file" "$major.$minor"'
    session_close
    session_open "$out/prompt_atat_then_next_line.txt"
    session_send "prompt\n@@!$w3 get weight be_other/o1\n"
    wait_for 30 "reply to the @@ line" ends_with "$session_file" $'\n\nmaster> '
    session_send 'show version\n'
    wait_for 30 "reply to show version" ends_with "$session_file" $'\n\nmaster> '
    session_close
  fi

  printf '%s\n' "$version_line" >"$out/VERSION"

  # Checks: the recording is the scenario it claims to be.
  expect_contains show_proc.txt " master "
  expect_contains worker_show_sess_inflight.txt " srv=web1 "
  expect_equals err_no_such_server.txt 'No such server.\n\n'
  expect_equals err_no_such_backend.txt 'No such backend.\n\n'
  expect_equals err_unknown_pid.txt "Can't find the target PID matching the prefix '@!999999'\n"
  expect_contains show_proc_with_old_worker.txt "$w1 "
  expect_contains show_proc_with_old_worker.txt "$w2 "
  expect_equals old_worker_set_server_refused.txt 'Proxy is disabled.\n\n'
  expect_contains old_worker_show_info.txt "Stopping: 1"
  expect_contains show_proc_after_failed_reload.txt "[failed: 1]"
  expect_contains prompt_after_failed_reload.txt "master[ReloadFailed]> "
  if ((major > 2)); then
    expect_contains reload_ok_reply.txt "Success=1"
    expect_contains reload_failed_reply.txt "Success=0"
  fi
  if ((worker_parses)); then
    expect_contains show_proc_starting_worker.txt "$w3 "
    expect_contains reload_in_progress_reply.txt "Another reload is still in progress."
  fi
  if ((atat)); then
    expect_contains atat_line.txt "No such server."
    expect_contains atat_then_next_line.txt "$major.$minor"
  fi

  # Rewrites: the binary's path (it may sit outside the temp dir), then the temp dir.
  local file
  for file in "$out"/*; do
    sed -i -e "s|${binary//./\\.}|/usr/sbin/haproxy|g" -e "s|${tmp//./\\.}|/etc/haproxy|g" "$file"
  done

  stop_processes
  mkdir -p "$fixtures_out"
  rm -rf "$fixtures_out/haproxy-$label"
  mv "$out" "$fixtures_out/haproxy-$label"
  stop_everything
  trap - EXIT
  log "wrote $fixtures_out/haproxy-$label"
}

# ---------------------------------------------------------------------------------------------

labels=()
if [[ ${1:-} == --all ]]; then
  while read -r l _; do [[ -n $l ]] && labels+=("$l"); done <"$manifest"
elif (($#)); then
  labels=("$@")
else
  die "usage: scripts/record-fixtures.sh --all | LABEL… (labels of $manifest)"
fi
for l in "${labels[@]}"; do
  bin=$(awk -v l="$l" '$1==l{print $2}' "$manifest")
  [[ -n $bin ]] || die "no version $l in $manifest"
  # A subshell per version: its own temp dir, trap and globals.
  (record_version "$l" "$bin")
done
