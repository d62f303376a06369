#!/usr/bin/env bash
# Reproduces, without hawk, HAProxy 2.6's master CLI slot leak (issue 25; bench/RESULTS.md, "The
# 2.6 master CLI wedge"): a command the master relays to a worker that has closed its end of the
# master's socketpair but is not reaped yet. A worker exits in that order (socketpair closed, its
# configuration freed — hundreds of ms with 10,000 servers — then exit); here strace holds the old
# worker at exit_group for 8 s, which makes the window as long as needed.
#
#   scripts/master-slot-leak.sh [haproxy binary] [commands]     defaults: /usr/sbin/haproxy, 12
#
# Each command is sent as hawk sends it: a connection in prompt mode, `@!<old worker> show info`,
# then read until the master closes. Prints what each got (bytes), then whether `show proc` is
# answered and how many connections the master still holds. On 2.6.12: a bare prompt (8 bytes)
# each, and the master keeps most of those sessions (9 or 10 connections held in 5 of 6 runs, 1
# in the other); at 10 `show proc` is unanswered until a reload re-executes the master (SIGUSR2
# frees them all). On 3.0.11, 3.2.26, 3.4.7: `Can't connect to the target CLI!` (33 bytes) each,
# none held. Needs socat, strace and python3.
set -euo pipefail
haproxy=${1:-/usr/sbin/haproxy}
commands=${2:-12}
dir=$(mktemp -d /tmp/hawk-slot-leak-XXXXXX)
sock=$dir/master.sock
port=$((20000 + RANDOM % 20000))
cat > "$dir/haproxy.cfg" <<EOF
global
    stats socket $dir/worker.sock level admin
defaults
    mode http
    timeout connect 1s
    timeout client 10s
    timeout server 10s
frontend fe
    bind 127.0.0.1:$port
    default_backend be
backend be
    server-template s 1-100 127.0.0.1:9 disabled
EOF
"$haproxy" -W -S "$sock" -f "$dir/haproxy.cfg" > "$dir/haproxy.log" 2>&1 &
master=$!
strace_pid=
cleanup() {
  [ -n "$strace_pid" ] && kill "$strace_pid" 2> /dev/null || true
  kill "$master" 2> /dev/null || true
  wait "$master" 2> /dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
show_proc() { echo "show proc" | timeout 3 socat -t2 - "UNIX:$sock" 2> /dev/null || true; }
for _ in $(seq 100); do show_proc | grep -q '^[0-9].*worker' && break; sleep 0.1; done
old=$(show_proc | awk '$2 == "worker" { print $1; exit }')
ipc=$(ls -l "/proc/$old/fd" | awk '/socket/ { print $9; exit }')  # its end of the socketpair
strace -qq -p "$old" -e trace=exit_group -e inject=exit_group:delay_enter=8000000 -o /dev/null &
strace_pid=$!
sleep 0.5
echo reload | socat -t5 - "UNIX:$sock" > /dev/null || true  # the old worker soft-stops and exits
for _ in $(seq 200); do [ -e "/proc/$old/fd/$ipc" ] || break; sleep 0.02; done
echo "worker $old closed fd $ipc (its end of the master's socketpair); the master still lists it:"
show_proc | grep "^$old " || true
python3 - "$sock" "$old" "$commands" <<'EOF'
import socket, sys
sock, pid, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
got = []
for _ in range(n):
    s = socket.socket(socket.AF_UNIX); s.settimeout(2)
    try:
        s.connect(sock); s.sendall(b'prompt\n'); p = b''
        while not p.endswith(b'> '): p += s.recv(100)
        s.sendall(b'@!' + pid.encode() + b' show info\n'); r = b''
        while True:
            b = s.recv(4096)
            if not b: break
            r += b
        got.append('%d bytes' % len(r))
    except OSError as e:
        got.append(type(e).__name__)
    finally:
        s.close()
print('@!%s show info, %d times: %s' % (pid, n, ', '.join(got)))
EOF
sleep 0.5
echo "show proc now: $(show_proc | head -c 200 | tr '\n' ' ')"
echo "connections the master still holds: $(ss -x | grep -c "$sock" || true)"
