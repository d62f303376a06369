#!/usr/bin/env bash
# hawk's demo: a local HAProxy in master-worker mode with a backend, hawk beside it, a reload
# with a request in flight, and the per-worker report before, during and after.
# Installs what is missing, builds, runs, and stops everything it started.
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
  [[ -f $work/haproxy.pid ]] && pkill -TERM -P "$(cat "$work/haproxy.pid")" 2>/dev/null || true
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
be_port=$(free_port)

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
report() {
  curl -s --unix-socket "$work/hawk.sock" http://hawk/v1/workers |
    jq -r '"master \(.master.pid): reloads=\(.master.reloads) failed=\(.master.failedReloads)",
           (.workers[] | "  worker \(.pid)  \(.role)\tconnections=\(.connections)\treloads=\(.reloads)")'
}

step "backend on 127.0.0.1:$be_port"
"$backend_bin" --listen "127.0.0.1:$be_port" --name app-v1 >"$work/backend.log" 2>&1 &
pids+=($!)

cat >"$work/haproxy.cfg" <<CFG
global
    grace 0s
defaults
    mode http
    timeout connect 1s
    timeout client 30s
    timeout server 30s
    timeout http-keep-alive 30s
frontend fe
    bind 127.0.0.1:$fe_port
    http-after-response set-header X-Pid %pid
    default_backend be_app
backend be_app
    server SRV_1 127.0.0.1:$be_port
CFG

step "HAProxy 2.6 in master-worker mode: haproxy -W -S $work/master.sock"
haproxy -W -S "$work/master.sock" -f "$work/haproxy.cfg" -p "$work/haproxy.pid" \
  >"$work/haproxy.log" 2>&1 &
pids+=($!)

step "hawk --master-socket $work/master.sock --listen unix:$work/hawk.sock"
"$hawk_bin" --master-socket "$work/master.sock" --listen "unix:$work/hawk.sock" \
  --probe-listen "tcp:127.0.0.1:$(free_port)" >"$work/hawk.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  curl -sf --unix-socket "$work/hawk.sock" http://hawk/readyz >/dev/null 2>&1 && break
  sleep 0.05
done

step "report before the reload"
report

step "a slow request (3 s) in flight through the current worker"
curl -s -o /dev/null -w 'slow request finished: HTTP %{http_code} in %{time_total}s\n' \
  "http://127.0.0.1:$fe_port/slow?ms=3000" &
slow=$!
sleep 0.3

step "reload through the master CLI"
echo reload | socat -t 2 - "UNIX-CONNECT:$work/master.sock" >/dev/null
for _ in $(seq 40); do
  report | grep -q LEAVING && break
  sleep 0.05
done
step "report during the reload: the old worker is LEAVING and still holds the request"
report

wait "$slow"
for _ in $(seq 60); do
  report | grep -q LEAVING || break
  sleep 0.1
done
step "report after the request finished: the leaving worker is gone"
report
step "done; stopping everything"
