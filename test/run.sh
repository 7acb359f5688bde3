#!/usr/bin/env bash
# Runs vscaler's test suites and ends with one line "tests: N passed, N failed".
# Usage: test/run.sh all|unit|sanitizers|fuzz-replay|scripts|integration|minimal|full
# The integration and end-to-end suites run against private local clusters (see run_on_plane):
# `integration` runs both planes' suites, `minimal` or `full` one plane's.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
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
    # The suppressions matter only to the TSan build; the others ignore TSAN_OPTIONS.
    TSAN_OPTIONS="suppressions=$PWD/test/tsan.supp ${TSAN_OPTIONS:-}" \
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

# The tests of the shell helpers (test/scripts/*_test.sh), which need no cluster.
run_scripts() {
  local script ok=0
  for script in test/scripts/*_test.sh; do
    [ -f "$script" ] || continue
    bash "$script" || { echo "FAILED: $script"; ok=1; }
  done
  return $ok
}

# Which plane a suite runs on. Most need only etcd + kube-apiserver and share one private
# minimal plane; suites that need pods, controllers or metrics share one private full plane,
# started once after the minimal one is stopped (never both at once: 2 cores):
#   - an e2e script says so with a line "# plane: full" (test/e2e/cluster_*_test.sh do);
#   - an integration executable is named in FULL_PLANE_INTEGRATION.
FULL_PLANE_INTEGRATION=(integration_recommender_source_test)
wants_full() {
  case "$1" in
    *.sh) grep -qx '# plane: full' "$1" ;;
    *)
      local name
      for name in "${FULL_PLANE_INTEGRATION[@]}"; do [ "$(basename "$1")" = "$name" ] && return 0; done
      return 1
      ;;
  esac
}

# run_on_plane minimal|full: starts a private plane of that kind (its own directory, so a
# developer's `make cluster-up` is left alone), runs the integration executables and e2e
# scripts that belong to it, and always tears it down.
run_on_plane() {
  local plane=$1 binary script suites=()
  for binary in build/release/test/integration_*_test; do
    [ -x "$binary" ] || continue
    if wants_full "$binary"; then [ "$plane" = full ] && suites+=("$binary"); else [ "$plane" = minimal ] && suites+=("$binary"); fi
  done
  for script in test/e2e/*_test.sh; do
    [ -f "$script" ] || continue
    if wants_full "$script"; then [ "$plane" = full ] && suites+=("$script"); else [ "$plane" = minimal ] && suites+=("$script"); fi
  done
  [ ${#suites[@]} -gt 0 ] || return 0
  # The suites run in a subshell (its own environment and EXIT trap); it hands back the counts.
  local counts
  counts=$(mktemp /tmp/vscaler-test-counts.XXXXXX)
  (
    export VSCALER_CLUSTER=$plane
    export VSCALER_CLUSTER_DIR=/tmp/vscaler-test-cluster-$$-$plane
    trap 'test/cluster/down.sh >/dev/null 2>&1' EXIT
    echo "=== starting a private $plane plane for ${#suites[@]} suites"
    local start=$SECONDS
    test/cluster/up.sh >/dev/null || { echo "the local $plane plane did not start"; exit 1; }
    echo "--- $plane plane up in $((SECONDS - start))s"
    export KUBECONFIG=$VSCALER_CLUSTER_DIR/kubeconfig
    export KUBECTL=$VSCALER_CLUSTER_DIR/bin/kubectl
    export VSCALER_BIN=$root/build/vscaler
    local item
    for item in "${suites[@]}"; do
      case "$item" in
        *.sh) suite "e2e/$(basename "$item" .sh)" bash "$item" ;;
        *) suite "$(basename "$item")" "$item" --no-version ;;
      esac
    done
    echo "$passed $failed ${failed_names[*]}" > "$counts"
  )
  local rc=$? p f names
  if [ -s "$counts" ]; then
    read -r p f names < "$counts"
    passed=$p failed=$f
    read -r -a failed_names <<<"$names"
  else
    failed=$((failed + 1))
    failed_names+=("$plane-plane")
  fi
  rm -f "$counts"
  return $rc
}

run_integration() {
  run_on_plane minimal
  run_on_plane full
}

case "$what" in
  unit) suite unit run_unit build/release ;;
  sanitizers)
    suite unit-asan-ubsan run_unit build/asan
    suite unit-tsan run_unit build/tsan
    ;;
  fuzz-replay) suite fuzz-replay run_fuzz_replay ;;
  scripts) suite scripts run_scripts ;;
  integration) run_integration ;;
  minimal | full) run_on_plane "$what" ;;
  all)
    suite unit run_unit build/release
    suite unit-asan-ubsan run_unit build/asan
    suite unit-tsan run_unit build/tsan
    suite fuzz-replay run_fuzz_replay
    suite scripts run_scripts
    suite format-check make --no-print-directory format-check
    run_integration
    ;;
  *)
    echo "usage: test/run.sh all|unit|sanitizers|fuzz-replay|scripts|integration|minimal|full" >&2
    exit 2
    ;;
esac

[ ${#failed_names[@]} -gt 0 ] && echo "failed: ${failed_names[*]}"
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
