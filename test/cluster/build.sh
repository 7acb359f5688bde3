#!/usr/bin/env bash
# Builds etcd, kube-apiserver and kubectl from Go modules (through the Go module proxy) and
# caches them outside the repository, keyed by version. A second run finds them and returns.
# Usage: test/cluster/build.sh   (prints the two binary directories)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.sh
. "$here/versions.sh"

command -v go >/dev/null || { echo "build.sh: 'go' is not on PATH; install Go >= 1.26" >&2; exit 1; }

# build_into DIR MODULE_DIR LDFLAGS NAME=PACKAGE...: builds each PACKAGE as DIR/NAME unless all
# of them exist already.
build_into() {
  local dir=$1 module=$2 ldflags=$3
  shift 3
  local missing=0 spec pkgs=()
  for spec in "$@"; do
    [ -x "$dir/${spec%%=*}" ] || missing=1
    pkgs+=("${spec#*=}")
  done
  [ "$missing" = 0 ] && return 0
  mkdir -p "$dir"
  local tmp
  tmp=$(mktemp -d "$dir/.build.XXXXXX")
  echo "build.sh: building ${pkgs[*]} into $dir (first run only; several minutes)" >&2
  # -trimpath and no VCS stamping keep the build reproducible; binaries land in a temp dir and
  # are moved in atomically, so an interrupted build never leaves a half-written binary cached.
  # Each package is built on its own: go build names a binary after its path, which for
  # go.etcd.io/etcd/server/v3 would be "server".
  for spec in "$@"; do
    (cd "$here/$module" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" \
      -o "$tmp/${spec%%=*}" "${spec#*=}")
  done
  for spec in "$@"; do mv "$tmp/${spec%%=*}" "$dir/"; done
  rmdir "$tmp"
}

minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
kube_ldflags="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kube_ldflags+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
  kube_ldflags+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done

build_into "$ETCD_BIN_DIR" etcd "-s -w" etcd=go.etcd.io/etcd/server/v3 \
  etcdutl=go.etcd.io/etcd/etcdutl/v3
build_into "$KUBE_BIN_DIR" kubernetes "$kube_ldflags" \
  kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver kubectl=k8s.io/kubernetes/cmd/kubectl
echo "$ETCD_BIN_DIR"
echo "$KUBE_BIN_DIR"
