#!/usr/bin/env bash
# hawk's demo: a local HAProxy in master-worker mode with backends, hawk beside it, the desired
# state pushed to every worker, a reload with a request in flight and the per-worker report
# before, during and after; then the zero-downtime race in miniature (a few cycles of the
# baseline and of hawk under load, and the table), also in the slot model (server-template
# slots hawk sets at runtime, issue 26). Installs what is missing, builds, runs, and
# stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh default >/dev/null

build=build/default
hawk_bin=$build/agent/hawk
backend_bin=$build/tests/support/hawk_test_backend
work=$(mktemp -d /tmp/hawk-demo.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  # HAProxy's leaving workers are children of the master; the master's TERM stops them too.
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  local port
  while :; do
    port=$(shuf -i 20000-60000 -n 1)
    ss -Htln "sport = :$port" | grep -q . || { echo "$port"; return; }
  done
}
fe_port=$(free_port)
v1_port=$(free_port)
v2_port=$(free_port)

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
api() { curl -s --unix-socket "$work/hawk.sock" "$@"; }
# The per-worker report as a person reads it (GET /v1/workers; `--json` passes it through).
report() { "$hawk_bin" status "unix:$work/hawk.sock"; }

step "backends app-v1 on 127.0.0.1:$v1_port and app-v2 on 127.0.0.1:$v2_port"
"$backend_bin" --listen "127.0.0.1:$v1_port" --name app-v1 --quiet >"$work/v1.log" 2>&1 &
pids+=($!)
"$backend_bin" --listen "127.0.0.1:$v2_port" --name app-v2 --quiet >"$work/v2.log" 2>&1 &
pids+=($!)

cat >"$work/haproxy.cfg" <<CFG
global
    master-worker
    grace 2s
    hard-stop-after 30s
defaults
    mode http
    option idle-close-on-response
    timeout connect 1s
    timeout client 30s
    timeout server 30s
    timeout http-keep-alive 30s
frontend fe
    bind 127.0.0.1:$fe_port
    http-after-response set-header X-Pid %pid
    default_backend be_app
backend be_app
    server SRV_1 127.0.0.1:$v1_port
CFG

step "HAProxy 2.6 in master-worker mode: haproxy -W -S $work/master.sock"
haproxy -W -S "$work/master.sock" -f "$work/haproxy.cfg" >"$work/haproxy.log" 2>&1 &
pids+=($!)

probe_port=$(free_port)
step "hawk --master-socket $work/master.sock --listen unix:$work/hawk.sock"
"$hawk_bin" --master-socket "$work/master.sock" --listen "unix:$work/hawk.sock" \
  --probe-listen "tcp:127.0.0.1:$probe_port" --haproxy-config "$work/haproxy.cfg" \
  --state-dir "$work/state" >"$work/hawk.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  api -f http://hawk/readyz >/dev/null 2>&1 && break
  sleep 0.05
done

step "hawk status: before anything happens"
report

step "hawk apply: SRV_1 -> app-v2 (a desired state, as a person sends one; controllers PUT /v1/state)"
printf '{"version":"v1","backends":[{"name":"be_app","servers":[{"name":"SRV_1","address":"127.0.0.1","port":%s,"state":"READY"}]}]}' \
  "$v2_port" | "$hawk_bin" apply --address "unix:$work/hawk.sock" - || echo "(hawk apply: exit $?)"
printf 'a request through HAProxy now reaches: %s' "$(curl -s "http://127.0.0.1:$fe_port/")"

step "a slow request (3 s) in flight through the current worker"
curl -s -o /dev/null -w 'slow request finished: HTTP %{http_code} in %{time_total}s\n' \
  "http://127.0.0.1:$fe_port/slow?ms=3000" &
slow=$!
sleep 0.3

step "POST /v1/reload (hawk reloads through the master CLI and seeds the new worker)"
api -X POST http://hawk/v1/reload | jq -c '{success, newWorkerPid, durationMs}'
step "hawk status during the reload: the old worker is LEAVING, holds the request, and the state"
report
step "GET /metrics (Prometheus) on the probe listener: the per-worker series"
curl -s "http://127.0.0.1:$probe_port/metrics" | grep -E '^hawk_worker_(connections|in_sync|frozen)'

wait "$slow"
for _ in $(seq 60); do
  report | grep -q LEAVING || break
  sleep 0.1
done
step "hawk status after the request finished: the leaving worker is gone"
report
step "GET /v1/reloads"
api http://hawk/v1/reloads | jq -c '.reloads[] | {id, trigger, result, durationMs, newWorkerPid}'

step "the rolling-restart race in miniature: a reload under keep-alive load while SRV_1 moves"
echo "(16 keep-alive connections + a prober; SRV_1's backend is replaced 150-300 ms after the"
echo " reload, once the new worker has taken over; baseline = updates to the current worker only,"
echo " hawk = every worker; grace 1s)"
"$build/bench/zero_downtime" --cycles "${HAWK_DEMO_CYCLES:-4}" --variants "grace 1s" \
  --min-flip-ms 150 2>/dev/null |
  sed -n '/^| HAProxy | variant/,/^$/p'
step "the same race in the slot model (issue 26): SRV_1 is a server-template slot only hawk sets"
echo "(\`server-template SRV_ 1-2 192.0.2.1:80 disabled\`, as ingress controllers declare backends;"
echo " 4 more clients open a new connection per request, so they meet each new worker first: it"
echo " serves SRV_1 at once because hawk wrote it into the configuration before the reload)"
"$build/bench/zero_downtime" --cycles "${HAWK_DEMO_CYCLES:-4}" --variants "grace 1s + slots" \
  --min-flip-ms 150 --one-shot-connections 4 2>/dev/null |
  sed -n '/^| HAProxy | variant/,/^$/p'
step "done; stopping everything"
