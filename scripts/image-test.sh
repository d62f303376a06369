#!/usr/bin/env bash
# Builds hawk's container image with Debian's podman and checks it against a real HAProxy:
#   1. installs what is missing (podman, buildah, mmdebstrap, runc, haproxy, curl, jq, socat);
#   2. makes the base image debian:12-slim from Debian's packages with mmdebstrap when it is
#      missing (no container registry is needed);
#   3. builds the image from the Dockerfile (timed), naming the source commit (HAWK_COMMIT), prints
#      its size, checks that `hawk --version` in it names that commit and that the image holds
#      the binary and hawk's two directories and nothing else;
#   4. starts HAProxy on the host in master-worker mode, its master socket in a directory that is
#      bind-mounted into the container, and runs hawk from the image as it ships (non-root user
#      99:99, read-only root filesystem with no tmpfs, no capabilities, the state directory a
#      mounted volume);
#   5. checks from the host: /readyz on the probe port is 200; a PUT /v1/state is APPLIED; after
#      POST /v1/reload and after a reload through the master CLI, the new worker holds the pushed
#      server address (hawk's GET /v1/workers, and HAProxy's own `show servers state`).
# Exits non-zero with a message on any failure; stops and removes everything it started.
#   scripts/image-test.sh
#   HAWK_IMAGE=hawk:dev scripts/image-test.sh      the image's name (default localhost/hawk:latest)
#   HAWK_IMAGE_NO_CACHE=1 scripts/image-test.sh    build without podman's layer cache (cold build)
#
# Workarounds, and why:
#  - podman runs as root (through sudo when the caller is not root): that is what was verified;
#    rootless podman needs subuid/subgid ranges for the caller and was not tried. hawk's API
#    socket is created by uid 99 with mode 0600, so the host reaches it as root too.
#  - Debian 12's podman defaults to crun, which fails on this kind of machine's mixed (v1 +
#    unified) cgroups, and its default ulimits are above what such a host allows: a
#    CONTAINERS_CONF selects runc and ulimits at or below the host's. A CONTAINERS_CONF already
#    set in the environment is used as it is.
#  - --network host: the probe port and HAProxy's ports are the host's; no CNI bridge is needed
#    to run (the build's apt-get uses podman's default network).
set -euo pipefail
cd "$(dirname "$0")/.."

image=${HAWK_IMAGE:-localhost/hawk:latest}
base=debian:12-slim
suite=bookworm

as_root=()
[[ $(id -u) -eq 0 ]] || as_root=(sudo --preserve-env=CONTAINERS_CONF)
fail() {
  echo "image-test: FAIL: $*" >&2
  exit 1
}
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
step() { printf '\n== %s\n' "$*"; }
test_start=$(now)

# --- 1. what is missing, from Debian's packages --------------------------------------------------
packages=(podman buildah mmdebstrap runc haproxy curl jq socat iproute2 procps)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  step "installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

work=$(mktemp -d /tmp/hawk-image-test.XXXXXX)
container=hawk-image-test-$$
haproxy_pid=
cleanup() {
  local rc=$?
  if ((rc != 0)) && [[ -n ${podman_bin:-} ]]; then
    if podman container exists "$container" 2>/dev/null; then
      echo "--- hawk's log (podman logs $container)" >&2
      podman logs "$container" 2>&1 | tail -40 >&2 || true
    fi
    if [[ -f $work/haproxy.log ]]; then
      echo "--- haproxy's log" >&2
      tail -20 "$work/haproxy.log" >&2 || true
    fi
  fi
  if [[ -n ${podman_bin:-} ]]; then podman rm -f -t 2 "$container" >/dev/null 2>&1 || true; fi
  # HAProxy's workers are the master's children: TERM to the master stops them all.
  if [[ -n $haproxy_pid ]]; then
    kill "$haproxy_pid" 2>/dev/null || true
    wait "$haproxy_pid" 2>/dev/null || true
  fi
  # The state directory holds files written by uid 99.
  "${as_root[@]}" rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ -z ${CONTAINERS_CONF:-} ]]; then
  cat >"$work/containers.conf" <<'CONF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
CONF
  export CONTAINERS_CONF=$work/containers.conf
fi
podman_bin=$(command -v podman)
podman() { "${as_root[@]}" "$podman_bin" "$@"; }

# --- 2. the base image, from Debian's packages ----------------------------------------------------
# The machine's Debian mirrors for bookworm, bookworm-updates and bookworm-security, from
# /etc/apt/sources.list{,.d/*.list} (one-line format) and /etc/apt/sources.list.d/*.sources
# (deb822); deb.debian.org where the host names none.
debian_sources() {
  local f
  {
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
      [[ -f $f ]] || continue
      awk '/^deb[[:space:]]/ {
        i = 2; if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
        print $(i + 1), $i
      }' "$f"
    done
    for f in /etc/apt/sources.list.d/*.sources; do
      [[ -f $f ]] || continue
      # deb822 stanzas: every URI with every suite, where Types has deb and Enabled is not no.
      awk '
        function flush(   n, m, a, b, uris, suites) {
          if (f["types"] ~ /(^| )deb( |$)/ && f["enabled"] !~ /no/) {
            n = split(f["uris"], uris, " "); m = split(f["suites"], suites, " ")
            for (a = 1; a <= n; a++) for (b = 1; b <= m; b++) print suites[b], uris[a]
          }
          split("", f)
        }
        /^[[:space:]]*$/ { flush(); next }
        /^[#[:space:]]/ { next }
        { key = tolower($1); sub(/:$/, "", key); $1 = ""; f[key] = $0 }
        END { flush() }' "$f"
    done
    echo "$suite http://deb.debian.org/debian"
    echo "$suite-updates http://deb.debian.org/debian"
    echo "$suite-security http://deb.debian.org/debian-security"
  } | awk -v suite="$suite" '$1 ~ ("^" suite "(-updates|-security)?$") && !seen[$1]++ {
        print "deb " $2 " " $1 " main" }'
}

if podman image exists "$base"; then
  echo "base image $base: present"
else
  mapfile -t mirrors < <(debian_sources)
  step "making $base with mmdebstrap (minbase) from: ${mirrors[*]}"
  # Like Debian's official slim images: merged /usr set up directly (the merged-usr hook; without
  # it bookworm's mmdebstrap installs usrmerge and with it perl), and no documentation other than
  # copyright files, no man pages, no translations (dpkg path excludes, kept in the image for
  # the packages installed on top).
  base_start=$(now)
  "${as_root[@]}" mmdebstrap --quiet --variant=minbase --format=tar \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/groff/*' --dpkgopt='path-exclude=/usr/share/lintian/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    "$suite" "$work/base.tar" "${mirrors[@]}" >"$work/mmdebstrap.log" 2>&1 || {
    tail -20 "$work/mmdebstrap.log" >&2
    fail "mmdebstrap could not make the base image (is the Debian mirror reachable?)"
  }
  # Through a file, not a pipe: a failed mmdebstrap must not leave a truncated $base behind.
  podman import --change 'CMD ["/bin/bash"]' "$work/base.tar" "$base" >/dev/null
  rm -f "$work/base.tar"
  echo "base image $base made in $(since "$base_start") s"
fi

# --- 3. the image ---------------------------------------------------------------------------------
# The commit hawk reports (the build context has no .git): as CMake names it, -dirty when
# tracked files differ from it.
commit=unknown
if head=$(git rev-parse --short=12 HEAD 2>/dev/null); then
  commit=$head
  [[ -z $(git status --porcelain --untracked-files=no 2>/dev/null) ]] || commit+=-dirty
fi
step "podman build --build-arg HAWK_COMMIT=$commit -t $image ."
build_args=(--build-arg "HAWK_COMMIT=$commit")
[[ ${HAWK_IMAGE_NO_CACHE:-0} == 1 ]] && build_args+=(--no-cache)
build_start=$(now)
podman build "${build_args[@]}" -t "$image" . >"$work/build.log" 2>&1 || {
  tail -40 "$work/build.log" >&2
  fail "podman build failed (the log's end is above)"
}
build_seconds=$(since "$build_start")
size=$(podman image inspect --format '{{.Size}}' "$image")
echo "built in $build_seconds s; image size $size bytes ($(awk -v s="$size" 'BEGIN { printf "%.1f", s / 1e6 }') MB)"
# The binary runs alone in the image (no shell, no libc there) and says what it was built from.
version=$(podman run --rm --read-only --cap-drop all --network none "$image" --version) ||
  fail "hawk --version in the image failed: $version"
[[ $version == "hawk "*" (commit $commit)" ]] ||
  fail "hawk --version in the image says \"$version\", not commit $commit"
echo "hawk --version: $version"
# What the image holds: the binary and hawk's two directories (uid/gid 99, 0700), nothing else.
probe=$(podman create "$image")
contents=$(podman export "$probe" | tar -tvf - | awk '{ print $1, $2, $NF }' | sort)
podman rm "$probe" >/dev/null
expected=$(sort <<'TREE'
drwxr-xr-x 0/0 run/
drwx------ 99/99 run/hawk/
drwxr-xr-x 0/0 usr/
drwxr-xr-x 0/0 usr/local/
drwxr-xr-x 0/0 usr/local/bin/
-rwxr-xr-x 0/0 usr/local/bin/hawk
drwxr-xr-x 0/0 var/
drwxr-xr-x 0/0 var/lib/
drwx------ 99/99 var/lib/hawk/
TREE
)
[[ $contents == "$expected" ]] || fail "the image holds, as mode owner path:
$contents
where the Dockerfile makes:
$expected"
echo "the image holds /usr/local/bin/hawk, /run/hawk and /var/lib/hawk (99:99, 0700), nothing else"

# --- 4. HAProxy on the host, hawk in the container ------------------------------------------------
free_port() {
  local port
  while :; do
    port=$(shuf -i 20000-60000 -n 1)
    ss -Htln "sport = :$port" | grep -q . || { echo "$port"; return; }
  done
}
fe_port=$(free_port)
probe_port=$(free_port)
while [[ $probe_port == "$fe_port" ]]; do probe_port=$(free_port); done

# shared/: HAProxy's master socket and hawk's API socket, both sides see it. state/: hawk's
# --state-dir, the only place hawk writes. World-writable so that uid 99 in the container
# creates files there whoever runs the test.
mkdir -p "$work/shared" "$work/state"
chmod 0777 "$work/shared" "$work/state"
cat >"$work/haproxy.cfg" <<CFG
global
    master-worker
    grace 1s
    hard-stop-after 30s
defaults
    mode http
    option idle-close-on-response
    timeout connect 1s
    timeout client 30s
    timeout server 30s
frontend fe
    bind 127.0.0.1:$fe_port
    default_backend be_app
backend be_app
    server SRV_1 192.0.2.1:80
    server SRV_2 192.0.2.2:80
CFG
chmod 0644 "$work/haproxy.cfg"

step "haproxy -W -S $work/shared/master.sock,mode,666 -f $work/haproxy.cfg"
# mode 666: hawk connects as uid 99, HAProxy's master runs as the caller.
haproxy -W -S "$work/shared/master.sock,mode,666" -f "$work/haproxy.cfg" >"$work/haproxy.log" 2>&1 &
haproxy_pid=$!
for _ in $(seq 100); do
  [[ -S $work/shared/master.sock ]] && break
  kill -0 "$haproxy_pid" 2>/dev/null || fail "haproxy exited at start"
  sleep 0.1
done
[[ -S $work/shared/master.sock ]] || fail "haproxy created no master socket in 10 s"
master() { echo "$1" | socat -t 5 - "UNIX-CONNECT:$work/shared/master.sock"; }

step "podman run --read-only --user (the image's, 99:99) $image"
podman run -d --name "$container" --network host \
  --read-only --read-only-tmpfs=false --cap-drop all --security-opt no-new-privileges \
  -v "$work/shared:/shared" -v "$work/state:/var/lib/hawk" \
  -v "$work/haproxy.cfg:/etc/haproxy/haproxy.cfg:ro" \
  "$image" \
  --master-socket /shared/master.sock --listen unix:/shared/hawk.sock \
  --probe-listen "tcp:127.0.0.1:$probe_port" --state-dir /var/lib/hawk \
  --haproxy-config /etc/haproxy/haproxy.cfg >/dev/null ||
  fail "podman run failed"

[[ $(podman inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$container") == true ]] ||
  fail "the container's root filesystem is not read-only"
ctr_pid=$(podman inspect --format '{{.State.Pid}}' "$container")
ctr_uid=$(ps -o uid= -p "$ctr_pid" | tr -d ' ')
[[ -n $ctr_uid && $ctr_uid != 0 ]] || fail "hawk runs as uid '$ctr_uid', not as a non-root user"
echo "hawk runs as uid $ctr_uid (host pid $ctr_pid), root filesystem read-only"

# --- 5. checks from the host ----------------------------------------------------------------------
api() { "${as_root[@]}" curl -sS --max-time 15 --unix-socket "$work/shared/hawk.sock" "$@"; }
# http_call BODYFILE ARGS...: the status code on stdout, the body in BODYFILE.
http_call() {
  local out=$1
  shift
  api -o "$out" -w '%{http_code}' "$@" || true
}

step "GET /readyz on 127.0.0.1:$probe_port"
code=000
for _ in $(seq 150); do
  code=$(curl -s -o "$work/ready.json" -w '%{http_code}' "http://127.0.0.1:$probe_port/readyz" || true)
  [[ $code == 200 ]] && break
  [[ $(podman inspect --format '{{.State.Running}}' "$container") == true ]] ||
    fail "hawk's container exited"
  sleep 0.2
done
[[ $code == 200 ]] || fail "/readyz answered $code after 30 s: $(cat "$work/ready.json" 2>/dev/null)"
echo "/readyz: 200 $(cat "$work/ready.json")"

srv_addr=127.0.0.9
srv_port=$(free_port)
step "PUT /v1/state: be_app/SRV_1 -> $srv_addr:$srv_port READY, SRV_2 MAINT"
code=$(http_call "$work/put.json" -X PUT "http://hawk/v1/state?timeoutMs=5000" \
  -H "Content-Type: application/json" -d @- <<JSON
{"version": "v1", "generation": 1, "backends": [{"name": "be_app", "servers": [
  {"name": "SRV_1", "address": "$srv_addr", "port": $srv_port, "state": "READY"},
  {"name": "SRV_2", "address": "192.0.2.2", "port": 80, "state": "MAINT"}]}]}
JSON
)
[[ $code == 200 ]] || fail "PUT /v1/state answered $code: $(cat "$work/put.json")"
jq -e '(.workers | length) >= 1 and all(.workers[]; .result == "APPLIED")' "$work/put.json" \
  >/dev/null || fail "PUT /v1/state was not APPLIED on every worker: $(cat "$work/put.json")"
echo "PUT: $(jq -c '[.workers[] | {pid, role, result}]' "$work/put.json")"
# Persisted before the answer, on the mounted volume: the only place hawk writes.
"${as_root[@]}" find "$work/state" -type f | grep -q . ||
  fail "nothing was persisted in --state-dir after the PUT"
echo "state dir: $("${as_root[@]}" find "$work/state" -type f -printf '%P (%s bytes, uid %U) ')"

# holds_state PID: HAProxy's own view of worker PID (through the master) shows the pushed state.
holds_state() {
  master "@!$1 show servers state be_app" | awk -v addr="$srv_addr" -v port="$srv_port" '
    /^# be_id/ { for (i = 2; i <= NF; i++) col[$i] = i - 1; next }
    col["srv_name"] && $col["srv_name"] == "SRV_1" {
      found = ($col["srv_addr"] == addr && $col["srv_port"] == port)
    }
    END { exit !found }'
}
# expect_new_worker OLD_PID WHAT: waits until hawk reports a CURRENT worker other than OLD_PID,
# in sync at v1, then checks HAProxy's own view of it; prints its pid.
expect_new_worker() {
  local old=$1 what=$2 pid=
  for _ in $(seq 100); do
    if [[ $(http_call "$work/workers.json" http://hawk/v1/workers) == 200 ]]; then
      pid=$(jq -r --argjson old "$old" 'first(.workers[] | select(.role == "CURRENT" and
        .pid != $old and .inSync == true and .appliedVersion == "v1") | .pid) // empty' \
        "$work/workers.json")
      [[ -n $pid ]] && break
    fi
    sleep 0.1
  done
  [[ -n $pid ]] || fail "after $what, GET /v1/workers shows no new CURRENT worker in sync at v1: $(
    jq -c '[.workers[] | {pid, role, appliedVersion, inSync, stale, syncError}]' \
      "$work/workers.json" 2>/dev/null)"
  holds_state "$pid" ||
    fail "after $what, HAProxy's worker $pid does not hold SRV_1 at $srv_addr:$srv_port"
  echo "$pid"
}

current=$(jq -r 'first(.workers[] | select(.role == "CURRENT") | .pid)' "$work/put.json")
holds_state "$current" || fail "HAProxy's worker $current does not hold the pushed SRV_1 address"
echo "worker $current holds SRV_1 at $srv_addr:$srv_port (show servers state, through the master)"

step "POST /v1/reload"
code=$(http_call "$work/reload.json" -X POST http://hawk/v1/reload)
if [[ $code != 200 ]] || ! jq -e '.success == true' "$work/reload.json" >/dev/null; then
  fail "POST /v1/reload answered $code: $(cat "$work/reload.json")"
fi
new=$(jq -r .newWorkerPid "$work/reload.json")
echo "reload: $(jq -c '{success, newWorkerPid, durationMs}' "$work/reload.json")"
seen=$(expect_new_worker "$current" "POST /v1/reload")
[[ $seen == "$new" ]] || fail "the reload reported worker $new, /v1/workers shows $seen as CURRENT"
echo "GET /v1/workers: new worker $new is CURRENT, inSync, appliedVersion v1; HAProxy agrees"

step "reload through the master CLI (echo reload | socat), behind hawk's back"
master reload >/dev/null
third=$(expect_new_worker "$new" "a reload through the master CLI")
echo "GET /v1/workers: new worker $third is CURRENT, inSync, appliedVersion v1; HAProxy agrees"

jq -c '{masterReachable, warnings, workers: [.workers[] | {pid, role, appliedVersion, inSync}]}' \
  "$work/workers.json"
echo
echo "image-test: PASS  image $image  size $size bytes  build ${build_seconds} s  total $(since "$test_start") s"
