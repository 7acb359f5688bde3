#!/usr/bin/env bash
# The local control plane works: a namespace and a Deployment are created and read back, and the
# API server reports the version we built.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

version=$(k version -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])')
expect_eq "server version" "$version" "v1.36.3"

ns=$(unique_namespace smoke)
expect_eq "namespace phase" "$(k get namespace "$ns" -o jsonpath='{.status.phase}')" "Active"

k -n "$ns" create deployment web --image=registry.k8s.io/pause:3.10 >/dev/null
expect_eq "deployment image" \
  "$(k -n "$ns" get deployment web -o jsonpath='{.spec.template.spec.containers[0].image}')" \
  "registry.k8s.io/pause:3.10"
expect_eq "deployment generation" "$(k -n "$ns" get deployment web -o jsonpath='{.metadata.generation}')" "1"
k -n "$ns" set resources deployment web --requests=cpu=250m >/dev/null
expect_eq "generation after a template change" \
  "$(k -n "$ns" get deployment web -o jsonpath='{.metadata.generation}')" "2"
