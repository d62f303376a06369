# hawk sidecar image: built on Debian 12 from Debian's packages and Debian's simdjson source
# tarball; hawk is one static-PIE binary, so the runtime stage is `scratch` with the binary and
# its two directories.
# scripts/image-test.sh builds it with podman (and makes debian:12-slim from Debian's packages
# with mmdebstrap where no registry is reachable), runs it read-only as a non-root user beside a
# real HAProxy and checks it. By hand (README, "In a cluster"):
#   docker build -t hawk:0.1.0 --build-arg HAWK_COMMIT=$(git rev-parse --short=12 HEAD) .

# Build stage: Debian's -dev packages, the release preset (no tests, no benchmarks), which links
# hawk statically (HAWK_STATIC_BINARY): abseil, libuv and OpenSSL from the -dev packages' static
# archives (libssl-dev: the API's TLS, OpenSSL 3.0); simdjson compiled from Debian's source
# tarball, which the configuration downloads from deb.debian.org and checks against its SHA-256
# (cmake/Dependencies.cmake), so no libsimdjson-dev here.
FROM debian:12-slim AS build
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      build-essential cmake pkg-config lld libuv1-dev libabsl-dev node-llhttp libssl-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# /rootfs is the runtime stage's whole tree, made here because scratch has no shell: hawk's two
# directories owned by uid/gid 99, mode 0700, their parents root's, 0755; the binary below.
RUN install -d -m 0755 /rootfs/var/lib /rootfs/run /rootfs/usr/local/bin \
    && install -d -o 99 -g 99 -m 0700 /rootfs/var/lib/hawk /rootfs/run/hawk
COPY CMakeLists.txt CMakePresets.json ./
COPY cmake cmake
COPY agent agent
# The commit `hawk --version` names: the context has no .git (.dockerignore), so the builder says
# it; without it hawk says "unknown".
ARG HAWK_COMMIT=
# Fail the build, not the pod, if the binary is not the static one: the runtime stage has no
# library, no dynamic loader and no libc.
RUN cmake --preset release -DHAWK_BUILD_BENCH=OFF -DHAWK_COMMIT="${HAWK_COMMIT}" \
    && cmake --build --preset release -j"$(nproc)" \
    && strip build/release/agent/hawk \
    && { ldd build/release/agent/hawk 2>&1 | grep -qx '[[:space:]]*statically linked' \
         || { ldd build/release/agent/hawk; echo "hawk is not statically linked" >&2; exit 1; }; } \
    && build/release/agent/hawk --version \
    && install -m 0755 build/release/agent/hawk /rootfs/usr/local/bin/hawk

# Runtime stage: the binary and hawk's two directories, nothing else. What hawk reads at run time
# is what its flags name (the master socket, --state-dir, --haproxy-config, token and TLS files)
# and what the container runtime provides (/proc/self/exe, /dev/null); so the image has, on
# purpose (strace of a hawk serving TLS, a token and the probes, 2026-12-07):
#  - no /etc/passwd or group file: the user is numeric and hawk looks up no user or group;
#  - no /etc/hosts, resolv.conf or nsswitch.conf: every address hawk takes is numeric, it
#    resolves no name (the container runtime mounts its own /etc/hosts and resolv.conf anyway);
#  - no time zone data: hawk formats every time in UTC (absl::UTCTimeZone, built in); glibc
#    opens /etc/localtime once, at the first TLS handshake, and without it uses UTC, as
#    debian:12-slim's (Etc/UTC) said;
#  - no CA certificates: hawk makes no TLS connection; as a TLS server it trusts only the CA
#    bundle --tls-client-ca names (a mounted Secret);
#  - no OpenSSL configuration: without an openssl.cnf OpenSSL uses its built-in defaults (no
#    provider or engine module is loaded, so nothing is dlopen()ed);
#  - no shell: the chart's probes and preStop hooks are httpGet, the image test runs hawk only.
FROM scratch
# One copy of the tree, which keeps its owners and modes (checked with buildah: podman export
# lists run/hawk and var/lib/hawk 99/99 drwx------, the rest root's). COPY --chown=99:99 of each
# directory instead gave them mode 0755 and handed their new parents (/run, /var, /var/lib) to
# uid 99 too.
COPY --from=build /rootfs/ /
# uid/gid 99 is the haproxy user of HAProxy's official image (the chart's haproxy:3.2): hawk
# connects to the master socket HAProxy creates in the shared /run/haproxy, and both write the
# shared volumes (the chart sets fsGroup 99). Numeric, so Kubernetes' runAsNonRoot can check it.
# Nothing in the image is written at run time: --state-dir (a volume) and the API socket's
# directory are the only writable paths hawk needs, so a read-only root filesystem works.
USER 99:99
ENTRYPOINT ["/usr/local/bin/hawk"]
CMD ["--master-socket", "/run/haproxy/master.sock", "--listen", "unix:/run/hawk/hawk.sock", \
     "--probe-listen", "tcp:0.0.0.0:8081"]
