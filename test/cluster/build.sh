#!/usr/bin/env bash
# Builds the local cluster's binaries from Go modules (through the Go module proxy) and caches
# them outside the repository, keyed by version (test/cluster/versions.sh). A second run finds
# them and returns at once, silently.
# Usage: test/cluster/build.sh [cluster|vpa|helm]
#   cluster (default): etcd, kube-apiserver, kubectl, kube-controller-manager, kube-scheduler,
#                      kwok (and its manifests) and metrics-server; prints their directories
#   vpa:               VerticalPodAutoscaler's recommender, updater and admission-controller (the
#                      benchmarks' peers; `make bench` builds them on first use); prints the directory
#   helm:              the helm CLI (helm.sh/helm/v4), which the chart tests run; prints the directory
# Progress goes to stderr: one line per component as it starts and ends (n of m, elapsed) and a
# line every 30 s while a long build runs, instead of minutes of silence.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.sh
. "$here/versions.sh"
what=${1:-cluster}

minor=${KUBE_VERSION#v1.}
minor=${minor%%.*}
kube_ldflags="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kube_ldflags+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
  kube_ldflags+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done
# metrics-server reports client-go's version variables as its own (its Makefile sets them so).
ms_ldflags="-s -w -X k8s.io/client-go/pkg/version.gitVersion=$METRICS_SERVER_VERSION"
ms_ldflags+=" -X k8s.io/client-go/pkg/version.buildDate=1970-01-01T00:00:00Z"

# One line per binary: DIR MODULE_DIR NAME PACKAGE LDFLAGS (LDFLAGS is the rest of the line).
# The wrapper modules: etcd/ (etcd's own), kubernetes/ (one k8s.io/kubernetes module for every
# control-plane binary, so they share their compile), addons/ (kwok and metrics-server, with
# k8s.io/* pinned to the control plane's version), vpa/, helm/.
case "$what" in
  cluster)
    specs="$ETCD_BIN_DIR etcd etcd go.etcd.io/etcd/server/v3 -s -w
$ETCD_BIN_DIR etcd etcdutl go.etcd.io/etcd/etcdutl/v3 -s -w
$KUBE_BIN_DIR kubernetes kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver $kube_ldflags
$KUBE_BIN_DIR kubernetes kubectl k8s.io/kubernetes/cmd/kubectl $kube_ldflags
$KUBE_BIN_DIR kubernetes kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager $kube_ldflags
$KUBE_BIN_DIR kubernetes kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler $kube_ldflags
$KWOK_BIN_DIR addons kwok sigs.k8s.io/kwok/cmd/kwok -s -w
$METRICS_SERVER_BIN_DIR addons metrics-server sigs.k8s.io/metrics-server/cmd/metrics-server $ms_ldflags"
    ;;
  vpa)
    vpa=k8s.io/autoscaler/vertical-pod-autoscaler/pkg
    specs="$VPA_BIN_DIR vpa vpa-recommender $vpa/recommender -s -w
$VPA_BIN_DIR vpa vpa-updater $vpa/updater -s -w
$VPA_BIN_DIR vpa vpa-admission-controller $vpa/admission-controller -s -w"
    ;;
  helm)
    # helm version reports the module version (as its Makefile stamps it), not "v4.3".
    specs="$HELM_BIN_DIR helm helm helm.sh/helm/v4/cmd/helm -s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION"
    ;;
  *)
    echo "usage: test/cluster/build.sh [cluster|vpa|helm]" >&2
    exit 2
    ;;
esac

# fmt_secs N: "1m05s" or "42s".
fmt_secs() {
  if [ "$1" -ge 60 ]; then printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); else printf '%ds' "$1"; fi
}

# kwok_share_missing: true unless the manifests kwok is started with sit beside the binary.
kwok_share_missing() { [ ! -f "$KWOK_BIN_DIR/share/.complete" ]; }

# build_one N M DIR MODULE NAME PACKAGE LDFLAGS: builds PACKAGE as DIR/NAME. The binary is written
# to a temporary name and moved in, so an interrupted build never leaves a half-written binary
# cached. -trimpath and no VCS stamping keep it reproducible. Every 30 s a line says it still runs.
build_one() {
  local n=$1 m=$2 dir=$3 module=$4 name=$5 pkg=$6 ldflags=$7 start=$SECONDS ticker rc=0
  echo "build.sh: [$n/$m] $name: building from $module/go.mod (first run only; elapsed $(fmt_secs $((SECONDS - total_start))))" >&2
  mkdir -p "$dir"
  # The ticker's own sleep is ended with it, so no stray process outlives the build.
  (
    trap 'kill "$s" 2>/dev/null; exit 0' TERM
    while :; do
      sleep 30 &
      s=$!
      wait "$s"
      echo "build.sh: [$n/$m] $name: still building, $(fmt_secs $((SECONDS - start)))" >&2
    done
  ) &
  ticker=$!
  (cd "$here/$module" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" \
    -o "$dir/.$name.tmp.$$" "$pkg" </dev/null) || rc=$?
  kill "$ticker" 2>/dev/null || true
  wait "$ticker" 2>/dev/null || true
  if [ "$rc" != 0 ]; then
    rm -f "$dir/.$name.tmp.$$"
    echo "build.sh: [$n/$m] $name: go build $pkg failed (exit $rc); its errors are above" >&2
    exit 1
  fi
  mv "$dir/.$name.tmp.$$" "$dir/$name"
  echo "build.sh: [$n/$m] $name: built in $(fmt_secs $((SECONDS - start)))" >&2
}

# install_kwok_share: the stock stages (node initialise, heartbeat with lease, pod ready/complete/
# delete), the kubelet-like resource-metrics endpoint and the usage CRDs, copied from the kwok
# module version that was built, so up.sh never reads the module cache.
install_kwok_share() {
  local src share=$KWOK_BIN_DIR/share
  src=$(cd "$here/addons" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
  rm -rf "$share" && mkdir -p "$share"
  cp "$src/kustomize/stage/node/fast/node-initialize.yaml" \
    "$src/kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml" \
    "$src/kustomize/stage/pod/fast/pod-ready.yaml" "$src/kustomize/stage/pod/fast/pod-complete.yaml" \
    "$src/kustomize/stage/pod/fast/pod-delete.yaml" \
    "$src/kustomize/metrics/resource/metrics-resource.yaml" \
    "$src/kustomize/crd/bases/kwok.x-k8s.io_clusterresourceusages.yaml" \
    "$src/kustomize/crd/bases/kwok.x-k8s.io_resourceusages.yaml" "$share/"
  chmod u+w "$share"/*.yaml
  touch "$share/.complete"
}

# What is missing, so the progress lines can say "n of m".
todo=()
while read -r dir _ name _; do
  [ -x "$dir/$name" ] || todo+=("$name")
done <<<"$specs"
# Go is needed only when something must be built: cached binaries run on a machine without it.
if [ "${#todo[@]}" -gt 0 ] || { [ "$what" = cluster ] && kwok_share_missing; }; then
  command -v go >/dev/null || {
    echo "build.sh: 'go' is not on PATH and ${todo[*]:-the kwok manifests} must be built; install Go >= 1.26" >&2
    exit 1
  }
fi
total_start=$SECONDS
n=0
while read -r dir module name pkg ldflags; do
  [ -x "$dir/$name" ] && continue
  n=$((n + 1))
  build_one "$n" "${#todo[@]}" "$dir" "$module" "$name" "$pkg" "$ldflags"
done <<<"$specs"
if [ "$what" = cluster ] && kwok_share_missing; then install_kwok_share; fi
[ "${#todo[@]}" = 0 ] || echo "build.sh: ${#todo[@]} binaries built in $(fmt_secs $((SECONDS - total_start)))" >&2

case "$what" in
  cluster) printf '%s\n' "$ETCD_BIN_DIR" "$KUBE_BIN_DIR" "$KWOK_BIN_DIR" "$METRICS_SERVER_BIN_DIR" ;;
  vpa) echo "$VPA_BIN_DIR" ;;
  helm) echo "$HELM_BIN_DIR" ;;
esac
