#!/usr/bin/env bash
# Re-records agent/hawk.order: the functions an idle hawk runs, which lld links first so that they
# share as few pages as possible (bench/RESULTS.md, "Where the idle bytes are": 4,312 -> 2,664 KiB
# idle RSS). Run it after a change that renames or adds much of the idle path (start-up, the
# master CLI client, worker discovery, the API's accept/parse); a stale order still links, it only
# costs resident pages again (lld is told not to warn about names it no longer finds).
#
#   scripts/record-hawk-order.sh [haproxy binary]     default /usr/sbin/haproxy
#
# Needs: valgrind, curl, a configured build/default (scripts/setup.sh installs all of them).
# The scenario is bench/scale's idle one: HAProxy in master-worker mode with bench/scale's
# configuration (a routing map, a backend of 10,000 template servers), hawk on its master socket
# with a state dir, no desired state; hawk runs under callgrind until it lists the worker, then
# 3 s more, then SIGINT (a clean exit records the shutdown path too, which a drain after SIGTERM
# runs). The configuration is a copy of bench/scale's (ScaleRun::Config) with the origin left out:
# keep the two alike.
set -euo pipefail
cd "$(dirname "$0")/.."
haproxy=${1:-/usr/sbin/haproxy}

cmake --build build/default --target hawk >/dev/null
work=$(mktemp -d)
haproxy_pid=
hawk_pid=
cleanup() {
  local pid
  for pid in $hawk_pid $haproxy_pid; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

touch "$work/hosts.map"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$work/h.cfg" <<EOF
global
defaults
    mode http
    timeout connect 1s
    timeout client 30s
    timeout server 30s
frontend fe
    bind 127.0.0.1:$port
    use_backend be_slow if { path_beg /slow }
    use_backend %[req.hdr(host),lower,map($work/hosts.map,be_app)]
backend be_slow
    server s1 127.0.0.1:1
backend be_app
    balance roundrobin
    server-template SRV_ 10000 127.0.0.1:1
backend be_other
    server o1 127.0.0.1:1
EOF
"$haproxy" -W -S "$work/m.sock" -f "$work/h.cfg" -db >"$work/haproxy.log" 2>&1 &
haproxy_pid=$!
for _ in $(seq 100); do [[ -S $work/m.sock ]] && break; sleep 0.1; done
[[ -S $work/m.sock ]] || { cat "$work/haproxy.log"; echo "haproxy did not open its master socket" >&2; exit 1; }

mkdir "$work/state"
valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/cg.out" build/default/agent/hawk \
  --master-socket "$work/m.sock" --listen "unix:$work/h.sock" --log-level warn \
  --state-dir "$work/state" --resync-interval 3600s --haproxy-config "$work/h.cfg" \
  2>"$work/valgrind.log" &
hawk_pid=$!
listed=
for _ in $(seq 600); do   # callgrind runs hawk ~50x slower: up to 60 s
  if curl -sf --unix-socket "$work/h.sock" http://hawk/v1/workers 2>/dev/null | grep -q '"role":"CURRENT"'; then
    listed=1
    break
  fi
  sleep 0.1
done
[[ -n $listed ]] || { tail "$work/valgrind.log"; echo "hawk never listed the worker" >&2; exit 1; }
sleep 3
kill -INT "$hawk_pid"
wait "$hawk_pid" || true
hawk_pid=

grep -oE '^c?fn=\([0-9]+\) .*' "$work/cg.out" | sed -E "s/^c?fn=\([0-9]+\) //; s/'[0-9]+\$//" |
  grep -v '^0x\|^(below' | sort -u >agent/hawk.order
echo "agent/hawk.order: $(wc -l <agent/hawk.order) functions; rebuild to link them first"
