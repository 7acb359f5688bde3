# The vscaler operator image: built on Debian bookworm with the same Debian packages as `make
# build`, run as a non-root user on a slim bookworm base with only the runtime libraries.
# Build (where a container engine exists): docker build -t vscaler:0.1.0 .
FROM debian:bookworm AS build
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends cmake ninja-build make g++ pkg-config \
      libcpp-httplib-dev libssl-dev nlohmann-json3-dev libyaml-cpp-dev doctest-dev libsimdjson-dev \
      libnghttp2-dev zlib1g-dev libjemalloc-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release \
 && cmake --build /build --target vscaler \
 && strip /build/vscaler

FROM debian:bookworm-slim
# Runtime libraries only: cpp-httplib's shared library and what it links (OpenSSL, zlib, brotli),
# yaml-cpp, simdjson, nghttp2 and jemalloc (the allocator, see CMakeLists.txt).
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends libcpp-httplib0.11 libssl3 libyaml-cpp0.7 \
      libsimdjson14 libnghttp2-14 libjemalloc2 ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /build/vscaler /usr/local/bin/vscaler
# The uid the Deployment's securityContext expects (runAsNonRoot, readOnlyRootFilesystem).
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/vscaler"]
