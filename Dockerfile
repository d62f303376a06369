# hawk sidecar image: built on Debian 12 from Debian's packages and Debian's simdjson source
# tarball; hawk is one static-PIE binary, so the runtime stage installs nothing.
# scripts/image-test.sh builds it with podman (and makes debian:12-slim from Debian's packages
# with mmdebstrap where no registry is reachable), runs it read-only as a non-root user beside a
# real HAProxy and checks it.

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
COPY CMakeLists.txt CMakePresets.json ./
COPY cmake cmake
COPY agent agent
RUN cmake --preset release -DHAWK_BUILD_BENCH=OFF && cmake --build --preset release -j"$(nproc)" \
    && strip build/release/agent/hawk

# Runtime stage: the base image, the binary and hawk's two directories. The binary needs no
# shared library (not even libc) and no OpenSSL configuration or module: without an openssl.cnf
# OpenSSL uses its built-in defaults, as it did here before with libssl3 alone.
FROM debian:12-slim
RUN install -d -o 99 -g 99 -m 0700 /var/lib/hawk /run/hawk
COPY --from=build /src/build/release/agent/hawk /usr/local/bin/hawk
# Fail the build, not the pod, if the binary is not the static one (it would need libraries this
# stage does not have).
RUN ldd /usr/local/bin/hawk 2>&1 | grep -qx '[[:space:]]*statically linked' \
    || { ldd /usr/local/bin/hawk; echo "hawk is not statically linked" >&2; exit 1; }
# uid/gid 99 is the haproxy user of HAProxy's official image (the chart's haproxy:3.2): hawk
# connects to the master socket HAProxy creates in the shared /run/haproxy, and both write the
# shared volumes (the chart sets fsGroup 99). Numeric, so Kubernetes' runAsNonRoot can check it.
# Nothing in the image is written at run time: --state-dir (a volume) and the API socket's
# directory are the only writable paths hawk needs, so a read-only root filesystem works.
USER 99:99
ENTRYPOINT ["/usr/local/bin/hawk"]
CMD ["--master-socket", "/run/haproxy/master.sock", "--listen", "unix:/run/hawk/hawk.sock", \
     "--probe-listen", "tcp:0.0.0.0:8081"]
