#!/usr/bin/env bash
# `make fuzz`: builds the fuzz targets with clang and libFuzzer (ASan + UBSan, coverage of the
# whole tree) in build/fuzz and runs each for FUZZ_SECONDS (60) from its seed corpus
# (test/fuzz/corpus/<name>/; new inputs go to build/fuzz/corpus/<name>/, crashes to
# build/fuzz/artifacts/). Ends with one line per target: executions, speed, corpus, outcome.
# Usage: test/fuzz/run.sh [TARGET...]   (names without _fuzz; default: every target)
# FUZZ_BUILD_DIR: another build folder than build/fuzz.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
seconds=${FUZZ_SECONDS:-60}
build=${FUZZ_BUILD_DIR:-build/fuzz}

# Debian's clang leaves compiler-rt (libFuzzer, the sanitizer runtimes) to a recommended package
# that scripts/deps.sh does not pull in.
runtime=$(clang -print-resource-dir)/lib/linux/libclang_rt.fuzzer-x86_64.a
if [ ! -f "$runtime" ]; then
  package=libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev
  echo "fuzz: installing $package (libFuzzer)" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$package" >/dev/null
fi

if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja -Wno-dev -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVSCALER_FUZZ=ON -DVSCALER_SANITIZE=address \
    -DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link >/dev/null
fi
cmake --build "$build" --target fuzz_targets

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for source in test/fuzz/*_fuzz.cpp; do
    name=$(basename "$source" .cpp)
    targets+=("${name%_fuzz}")
  done
fi
mkdir -p "$build/artifacts"
summary=()
failed=0
for name in "${targets[@]}"; do
  mkdir -p "$build/corpus/$name"
  log=$build/$name.log
  echo "=== ${name}_fuzz for ${seconds}s"
  status=ok
  # -timeout: one input taking over 10 s is a hang; -rss_limit_mb: bounded memory.
  if ! "$build/test/fuzz/${name}_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$build/artifacts/${name}-" \
    "$build/corpus/$name" "test/fuzz/corpus/$name" </dev/null >"$log" 2>&1; then
    status="FAILED (see $log and $build/artifacts/)"
    failed=1
    grep -E "ERROR|violated|SUMMARY" "$log" | head -5 || true
  fi
  runs=$(awk '/stat::number_of_executed_units:/ {print $2}' "$log")
  speed=$(awk '/stat::average_exec_per_sec:/ {print $2}' "$log")
  corpus=$(find "$build/corpus/$name" "test/fuzz/corpus/$name" -type f | wc -l)
  summary+=("$(printf '%-12s %12s executions %8s/s %6s corpus inputs  %s' "$name" "${runs:-?}" "${speed:-?}" "$corpus" "$status")")
done
echo "=== fuzz summary (${seconds}s per target)"
printf '%s\n' "${summary[@]}"
exit $failed
