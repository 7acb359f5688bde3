#!/usr/bin/env bash
# Installs the Debian packages vscaler needs to build and test, and nothing when all are present.
# Every make target that needs a dependency runs this first, so each works on a new machine.
# Usage: scripts/deps.sh [build|test|image]   (build: compile only; test: also tools the tests use;
# image: also what `make image` needs)
set -euo pipefail
profile=${1:-build}

build_pkgs=(cmake ninja-build make g++ pkg-config libcpp-httplib-dev libssl-dev nlohmann-json3-dev
  libyaml-cpp-dev doctest-dev libsimdjson-dev libnghttp2-dev zlib1g-dev libjemalloc-dev ccache)
# clang brings libFuzzer and is used for fuzz targets; clang-format for the format check;
# openssl for the certificate scripts; curl for probes; procps for pgrep/ps in tests; nginx as
# the webhook benchmark's reference server (run in the foreground from a temp dir, never as a
# service: see the install below), with its echo module, which lets it read a body whole before
# it answers, as a webhook must (bench/sections/webhook.sh); chromium renders the dashboard in
# its end-to-end test; prometheus (with promtool) is the local cluster's Prometheus, started only
# when asked (test/cluster/prometheus.sh), and seeds its history with promtool (issue 31): never a
# service.
test_pkgs=(clang clang-format openssl curl procps nginx libnginx-mod-http-echo umoci chromium
  prometheus)
# umoci builds and unpacks OCI images without a container daemon (make image, its test).
image_pkgs=(umoci binutils)

pkgs=("${build_pkgs[@]}")
[ "$profile" = test ] && pkgs+=("${test_pkgs[@]}")
[ "$profile" = image ] && pkgs+=("${image_pkgs[@]}")

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps.sh: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
# A fresh machine has no package lists: update once, then install quietly.
$sudo apt-get update -qq >/dev/null
# Packages such as nginx start their service on install; nothing here wants a service, so a
# policy-rc.d refuses every start for the time of the install (unless one is already in place).
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\n# scripts/deps.sh: no service starts during its install\nexit 101\n' | $sudo tee "$policy" >/dev/null
  $sudo chmod 755 "$policy"
  trap '$sudo rm -f "$policy"' EXIT
fi
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
