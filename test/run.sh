#!/usr/bin/env bash
# Runs vscaler's test suites and ends with one line "tests: N passed, N failed".
# Usage: test/run.sh all|unit|sanitizers|fuzz-replay|integration
# The integration suites run against a private local control plane (its own directory, so a
# developer's `make cluster-up` is left alone) which is always torn down, also on failure.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
what=${1:-all}
passed=0
failed=0
failed_names=()

# suite NAME COMMAND...: runs one suite and counts it.
suite() {
  local name=$1
  shift
  echo "=== $name"
  local start=$SECONDS
  if "$@"; then
    passed=$((passed + 1))
    echo "--- PASS $name ($((SECONDS - start))s)"
  else
    failed=$((failed + 1))
    failed_names+=("$name")
    echo "--- FAIL $name ($((SECONDS - start))s)"
  fi
}

# run_unit BUILD_DIR: every unit test executable of one build variant.
run_unit() {
  local binary ok=0
  for binary in "$1"/test/unit_*_test; do
    [ -x "$binary" ] || continue
    "$binary" --no-version --minimal || { echo "FAILED: $binary"; ok=1; }
  done
  return $ok
}

# Replays each fuzz target's seed corpus once (a plain g++ ASan/UBSan build, no libFuzzer).
run_fuzz_replay() {
  local target name ok=0
  for target in build/asan/test/fuzz/*_fuzz; do
    [ -x "$target" ] || continue
    name=$(basename "$target")
    "$target" "test/fuzz/corpus/${name%_fuzz}" || ok=1
  done
  return $ok
}

run_integration() {
  export VSCALER_CLUSTER_DIR=/tmp/vscaler-test-cluster-$$
  trap 'test/cluster/down.sh >/dev/null 2>&1' EXIT
  test/cluster/up.sh >/dev/null || { echo "the local control plane did not start"; return 1; }
  export KUBECONFIG=$VSCALER_CLUSTER_DIR/kubeconfig
  export KUBECTL=$VSCALER_CLUSTER_DIR/bin/kubectl
  export VSCALER_BIN=$root/build/vscaler
  local binary script
  for binary in build/release/test/integration_*_test; do
    [ -x "$binary" ] || continue
    suite "$(basename "$binary")" "$binary" --no-version
  done
  for script in test/e2e/*_test.sh; do
    [ -f "$script" ] || continue
    suite "e2e/$(basename "$script" .sh)" bash "$script"
  done
  test/cluster/down.sh >/dev/null 2>&1
  trap - EXIT
}

case "$what" in
  unit) suite unit run_unit build/release ;;
  sanitizers)
    suite unit-asan-ubsan run_unit build/asan
    suite unit-tsan run_unit build/tsan
    ;;
  fuzz-replay) suite fuzz-replay run_fuzz_replay ;;
  integration) run_integration ;;
  all)
    suite unit run_unit build/release
    suite unit-asan-ubsan run_unit build/asan
    suite unit-tsan run_unit build/tsan
    suite fuzz-replay run_fuzz_replay
    suite format-check make --no-print-directory format-check
    run_integration
    ;;
  *)
    echo "usage: test/run.sh all|unit|sanitizers|fuzz-replay|integration" >&2
    exit 2
    ;;
esac

[ ${#failed_names[@]} -gt 0 ] && echo "failed: ${failed_names[*]}"
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
