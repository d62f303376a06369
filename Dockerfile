# hawk sidecar image: built on Debian 12 from Debian's packages only.
# scripts/image-test.sh builds it with podman (and makes debian:12-slim from Debian's packages
# with mmdebstrap where no registry is reachable), runs it read-only as a non-root user beside a
# real HAProxy and checks it.

# Build stage: Debian's -dev packages, the release preset (no tests, no benchmarks).
FROM debian:12-slim AS build
# libssl-dev: hawk's API is getting TLS (OpenSSL 3.0, find_package(OpenSSL)).
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      build-essential cmake pkg-config libuv1-dev libsimdjson-dev libabsl-dev node-llhttp libssl-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt CMakePresets.json ./
COPY cmake cmake
COPY agent agent
RUN cmake --preset release -DHAWK_BUILD_BENCH=OFF && cmake --build --preset release -j"$(nproc)" \
    && strip build/release/agent/hawk

# Runtime stage: the shared libraries the binary links (ldd), nothing else.
#   libuv1, libsimdjson14, libabsl20220623 (the libabsl_*.so.20220623), libstdc++6 (and
#   libgcc-s1, libc6 through it); libssl3 for the TLS work about to land.
# apt-get clean: apt-get update leaves ~80 MB of package caches (/var/cache/apt/*.bin) that
# removing the lists alone does not remove.
FROM debian:12-slim
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      libuv1 libsimdjson14 libabsl20220623 libstdc++6 libssl3 \
    && apt-get clean && rm -rf /var/lib/apt/lists/* /var/log/apt /var/log/dpkg.log \
    && install -d -o 99 -g 99 -m 0700 /var/lib/hawk /run/hawk
COPY --from=build /src/build/release/agent/hawk /usr/local/bin/hawk
# Fail the build, not the pod, when the list above misses a library the binary needs.
RUN if ldd /usr/local/bin/hawk | grep 'not found'; then exit 1; fi
# uid/gid 99 is the haproxy user of HAProxy's official image (the chart's haproxy:3.2): hawk
# connects to the master socket HAProxy creates in the shared /run/haproxy, and both write the
# shared volumes (the chart sets fsGroup 99). Numeric, so Kubernetes' runAsNonRoot can check it.
# Nothing in the image is written at run time: --state-dir (a volume) and the API socket's
# directory are the only writable paths hawk needs, so a read-only root filesystem works.
USER 99:99
ENTRYPOINT ["/usr/local/bin/hawk"]
CMD ["--master-socket", "/run/haproxy/master.sock", "--listen", "unix:/run/hawk/hawk.sock", \
     "--probe-listen", "tcp:0.0.0.0:8081"]
