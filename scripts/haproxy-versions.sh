#!/usr/bin/env bash
# Prepares the HAProxy versions hawk's integration and e2e suites run against, beside Debian 12's
# own 2.6 (/usr/sbin/haproxy): 3.0, 3.2 and 3.4 as Debian packages them, taken from Debian's newer
# suites and run on bookworm next to their own libraries.
#
#   scripts/haproxy-versions.sh          prepare what is missing, print each binary's `-v` line
#
# Where: $HAWK_CACHE_DIR (default ${XDG_CACHE_HOME:-$HOME/.cache}/hawk)/haproxy/<version>/, outside
# the repository. A version already prepared is skipped. The last step writes
# <cache>/haproxy/versions.txt, one "<label> <binary>" line per version (2.6 first), which the
# build reads (CMake: HAWK_HAPROXY_MANIFEST) to register one run of each suite per version.
#
# How (the system's apt sources are never touched):
#   1. a private apt configuration whose only source is a deb822 file naming trixie, sid and
#      experimental, signed by Debian's keyring; `apt-get update` into a private lists dir;
#   2. `apt-get download` of haproxy=<pinned version> and of the libraries it needs, from sid
#      (the newer HAProxy builds need a newer glibc than bookworm's);
#   3. `dpkg-deb -x` of each into the version's prefix;
#   4. patchelf: the prefix's own dynamic loader and an RPATH into the prefix. RPATH, not RUNPATH
#      (--force-rpath): RUNPATH is not used for the libraries' own dependencies. The master
#      re-executes the same binary on reload, so reloads work too.
set -euo pipefail
cd "$(dirname "$0")/.."

# The pinned versions, in one place: label, Debian suite, exact Debian package version. When a
# suite stops serving one, setup fails naming it; update the version here (`apt-cache madison
# haproxy` with the private configuration below shows what each suite serves).
versions=(
  "3.0 trixie 3.0.11-1+deb13u4"
  "3.2 sid 3.2.26-1"
  "3.4 experimental 3.4.7-1"
)
# What those builds link against (haproxy's Depends, and theirs), all taken from sid.
libraries=(libc6 libcrypt1 libjemalloc2 liblua5.4-0 libopentracing-c-wrapper0t64 libopentracing1
           libpcre2-8-0 libssl3t64 libstdc++6 libgcc-s1)

cache=${HAWK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hawk}/haproxy
mkdir -p "$cache"

need=()
command -v patchelf >/dev/null || need+=(patchelf)
command -v apt-get >/dev/null || { echo "haproxy-versions: needs apt-get (Debian)" >&2; exit 1; }
[[ -e /usr/share/keyrings/debian-archive-keyring.gpg ]] || need+=(debian-archive-keyring)
[[ -x /usr/sbin/haproxy ]] || need+=(haproxy)
if ((${#need[@]})); then
  echo "haproxy-versions: installing ${need[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

missing=()
for entry in "${versions[@]}"; do
  read -r label _ debver <<<"$entry"
  [[ -x "$cache/$label/usr/sbin/haproxy" && -e "$cache/$label/.prepared-$debver" ]] ||
    missing+=("$entry")
done

if ((${#missing[@]})); then
  apt_dir="$cache/.apt"
  mkdir -p "$apt_dir/sources" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
  cat >"$apt_dir/sources/debian.sources" <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: trixie sid experimental
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  apt_opts=(-o Dir::Etc::sourcelist=/dev/null -o "Dir::Etc::sourceparts=$apt_dir/sources"
            -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
            -o Debug::NoLocking=1 -o APT::Sandbox::User=root -qq)
  echo "haproxy-versions: reading Debian's trixie, sid and experimental package lists"
  apt-get "${apt_opts[@]}" update >/dev/null

  debs="$apt_dir/debs"
  rm -rf "$debs"
  mkdir -p "$debs"
  (
    cd "$debs"
    libs=()
    for lib in "${libraries[@]}"; do libs+=("$lib/sid"); done
    apt-get "${apt_opts[@]}" download "${libs[@]}" >/dev/null
  )
  for entry in "${missing[@]}"; do
    read -r label suite debver <<<"$entry"
    served=$(apt-cache "${apt_opts[@]}" madison haproxy | awk -v s="$suite" '$0 ~ s {print $3}')
    if ! grep -qxF "$debver" <<<"$served"; then
      echo "haproxy-versions: Debian's $suite no longer serves haproxy $debver (it serves:" \
        "${served:-nothing}); change the \"$label $suite …\" line in scripts/haproxy-versions.sh" >&2
      exit 1
    fi
    echo "haproxy-versions: preparing HAProxy $label ($debver from $suite)"
    (cd "$debs" && rm -f haproxy_*.deb && apt-get "${apt_opts[@]}" download "haproxy=$debver" >/dev/null)
    prefix="$cache/$label"
    rm -rf "$prefix.tmp"
    mkdir -p "$prefix.tmp"
    for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$prefix.tmp"; done
    libdir="$prefix/usr/lib/x86_64-linux-gnu"
    patchelf --set-interpreter "$libdir/ld-linux-x86-64.so.2" --force-rpath --set-rpath "$libdir" \
      "$prefix.tmp/usr/sbin/haproxy"
    rm -rf "$prefix"
    mv "$prefix.tmp" "$prefix"
    touch "$prefix/.prepared-$debver"
  done
fi

manifest="$cache/versions.txt"
{
  echo "2.6 /usr/sbin/haproxy"
  for entry in "${versions[@]}"; do
    read -r label _ _ <<<"$entry"
    echo "$label $cache/$label/usr/sbin/haproxy"
  done
} >"$manifest.tmp"
mv "$manifest.tmp" "$manifest"
while read -r label binary; do
  printf '%-4s %s\n' "$label" "$("$binary" -v | head -n 1)"
done <"$manifest"
