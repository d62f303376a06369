# hawk sidecar image: built on Debian 12 from Debian's packages only.
FROM debian:12-slim AS build
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      build-essential cmake pkg-config libuv1-dev libsimdjson-dev libabsl-dev node-llhttp \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt CMakePresets.json ./
COPY cmake cmake
COPY agent agent
RUN cmake --preset release -DHAWK_BUILD_BENCH=OFF && cmake --build --preset release -j"$(nproc)" \
    && strip build/release/agent/hawk

FROM debian:12-slim
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      libuv1 libsimdjson14 libabsl20220623 \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/build/release/agent/hawk /usr/local/bin/hawk
# Runs as HAProxy's user so that both can reach the shared socket directory.
USER 99:99
ENTRYPOINT ["/usr/local/bin/hawk"]
CMD ["--master-socket", "/run/haproxy/master.sock", "--listen", "unix:/run/hawk/hawk.sock", \
     "--probe-listen", "tcp:0.0.0.0:8081"]
