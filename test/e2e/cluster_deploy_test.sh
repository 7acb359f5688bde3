#!/usr/bin/env bash
# plane: full
# `make deploy` and `make undeploy` on the full local cluster: the operator's Deployment gets a
# Running pod (on a kwok node: the image is never pulled), and `make undeploy` finishes, its
# namespace deleted to the end (the namespace controller runs here).
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cert_dir=$(mktemp -d /tmp/vscaler-deploy-certs.XXXXXX)
# Never leave the webhooks registered for the suites that follow on this plane.
trap 'make -C "$ROOT" --no-print-directory undeploy KUBECTL="$KUBECTL" >/dev/null 2>&1 || true; rm -rf "$cert_dir"' EXIT

timeout 180 make -C "$ROOT" --no-print-directory deploy KUBECTL="$KUBECTL" CERT_DIR="$cert_dir" >/dev/null ||
  fail "make deploy failed"
k -n vscaler-system rollout status deployment/vscaler --timeout=120s >/dev/null || fail "the operator did not roll out"
node=$(k -n vscaler-system get pods -l app.kubernetes.io/name=vscaler -o jsonpath='{.items[0].spec.nodeName}')
[[ "$node" == kwok-node-* ]] || fail "the operator's pod is on '$node', not on a kwok node"
echo "ok: make deploy: the operator runs on $node"

start=$SECONDS
timeout 180 make -C "$ROOT" --no-print-directory undeploy KUBECTL="$KUBECTL" >/dev/null || fail "make undeploy did not finish within 180s"
echo "ok: make undeploy finished in $((SECONDS - start))s"
k get namespace vscaler-system >/dev/null 2>&1 && fail "namespace vscaler-system is still there"
echo "ok: namespace vscaler-system is gone"
echo "PASS"
