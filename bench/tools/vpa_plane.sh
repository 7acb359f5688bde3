# shellcheck shell=bash
# Sourced by the sections that run vscaler beside VerticalPodAutoscaler on one full plane
# (bench/sections/vpa.sh, history.sh): builds vscaler and VPA's binaries (cached by version),
# finds VPA's CRDs in the Go module cache, and uses the full plane of KUBECONFIG +
# VSCALER_CLUSTER_DIR, or starts one in $1 (then own_cluster=1: the section tears it down).
# Afterwards: VSCALER_BIN, VPA_BIN_DIR, vpa_deploy, own_cluster, KUBECONFIG, KUBECTL, and
# test/e2e/lib.sh and usage_lib.sh sourced; stdout goes to stderr, fd 3 is the table's stdout.
# Usage: vpa_plane CLUSTER_DIR   (from the repository root, with $build set)
vpa_plane() {
  cmake --build "$build" --target vscaler >&2
  test/cluster/build.sh vpa >/dev/null
  # shellcheck source=test/cluster/versions.sh
  . test/cluster/versions.sh
  export VSCALER_BIN=$PWD/$build/vscaler
  vpa_deploy=$(go env GOMODCACHE)/k8s.io/autoscaler/vertical-pod-autoscaler@$VPA_VERSION/deploy
  [ -f "$vpa_deploy/vpa-v1-crd-gen.yaml" ] ||
    (cd test/cluster/vpa && go mod download k8s.io/autoscaler/vertical-pod-autoscaler) >&2
  own_cluster=0
  if [ -z "${KUBECONFIG:-}" ] || [ -z "${VSCALER_CLUSTER_DIR:-}" ]; then
    export VSCALER_CLUSTER=full VSCALER_CLUSTER_DIR=$1
    test/cluster/up.sh >&2
    own_cluster=1
  fi
  export KUBECONFIG=$VSCALER_CLUSTER_DIR/kubeconfig KUBECTL=$VSCALER_CLUSTER_DIR/bin/kubectl
  # shellcheck source=test/e2e/lib.sh
  . test/e2e/lib.sh
  # shellcheck source=test/e2e/usage_lib.sh
  . test/e2e/usage_lib.sh
  exec 3>&1 1>&2 # only table rows go to stdout (fd 3)
}
