#!/usr/bin/env bash
# Installs what hawk needs on Debian 12 (only what is missing) and builds it.
#   scripts/setup.sh [preset...]     presets from CMakePresets.json; default: "default"
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake pkg-config git ca-certificates lld
  libuv1-dev libsimdjson-dev libabsl-dev node-llhttp libssl-dev openssl
  libgtest-dev libgmock-dev libbenchmark-dev
  protobuf-compiler libprotobuf-dev
  haproxy curl jq socat iproute2 procps
)
# promtool (Debian's prometheus package) checks hawk's /metrics output in the tests.
[[ "${HAWK_TEST_TOOLS:-0}" == 1 ]] && packages+=(prometheus)
# clang-14 and its runtime are only needed for the fuzz targets (the `fuzz` preset).
[[ " $* " == *" fuzz "* ]] && packages+=(clang-14 libclang-rt-14-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Debian's haproxy package starts a system service where systemd runs; hawk's tests and demo
# start their own HAProxy and never use it.

presets=("$@")
((${#presets[@]})) || presets=(default)
jobs=$(nproc)
for preset in "${presets[@]}"; do
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$jobs"
done
