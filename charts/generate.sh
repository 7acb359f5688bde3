#!/usr/bin/env bash
# Copies the static manifests of manifests/ into the Helm chart charts/vscaler, so the two never
# drift: manifests/ is the single source of truth and the chart reads the copies verbatim
# (.Files.Get), adding only Helm's labels, the caBundle or cert-manager's annotation.
#   manifests/crd/*.yaml                 -> charts/vscaler/crds/            (Helm installs CRDs first)
#   manifests/namespace.yaml             -> charts/vscaler/files/namespace.yaml (namespace.create)
#   manifests/webhook/webhooks.yaml      -> charts/vscaler/files/webhooks.yaml
#   manifests/cert-manager/certificate.yaml -> charts/vscaler/files/cert-manager.yaml
#   manifests/namespaced/role.yaml       -> charts/vscaler/files/namespaced.yaml (watchNamespace)
#   every other file of manifests/kustomization.yaml's resources (rbac.yaml, admission-policy.yaml,
#   and whatever is added there later)  -> charts/vscaler/files/static/, rendered as they are
# except the objects the chart templates from values (TEMPLATED below: deployment, pdb, service,
# networkpolicy); test/scripts/helm_chart_test.sh compares those with `kubectl kustomize`.
# Usage: charts/generate.sh          regenerate the copies (run it after editing manifests/)
#        charts/generate.sh --check  fail, naming the files, when the copies are not current
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
chart=$root/charts/vscaler
m=$root/manifests
TEMPLATED=" deployment.yaml pdb.yaml service.yaml networkpolicy.yaml "

fail() { echo "generate.sh: $*" >&2; exit 1; }

# resources: the entries under `resources:` of manifests/kustomization.yaml, one a line.
resources() {
  awk '/^resources:/ { r = 1; next } /^[^ #-]/ { r = 0 } r && /^- / { print $2 }' "$m/kustomization.yaml"
}

# render OUT: writes every copy under OUT (crds/, files/).
render() {
  local out=$1 r
  mkdir -p "$out/crds" "$out/files/static"
  cp "$m/webhook/webhooks.yaml" "$out/files/webhooks.yaml"
  cp "$m/cert-manager/certificate.yaml" "$out/files/cert-manager.yaml"
  cp "$m/namespaced/role.yaml" "$out/files/namespaced.yaml"
  while read -r r; do
    case "$r" in
      crd/*.yaml) cp "$m/$r" "$out/crds/" ;;
      namespace.yaml) cp "$m/$r" "$out/files/namespace.yaml" ;;
      webhook) ;;
      *.yaml)
        [[ "$TEMPLATED" == *" $r "* ]] && continue
        [[ "$r" == */* ]] && fail "manifests/kustomization.yaml lists $r in a subfolder: teach charts/generate.sh where it goes in the chart"
        cp "$m/$r" "$out/files/static/"
        ;;
      *) fail "manifests/kustomization.yaml lists '$r', which charts/generate.sh does not know: teach it where it goes in the chart" ;;
    esac
  done < <(resources)
  [ -n "$(ls "$out/crds")" ] || fail "no CRD found in manifests/kustomization.yaml"
}

if [ "${1:-}" = --check ]; then
  tmp=$(mktemp -d /tmp/vscaler-chart-check.XXXXXX)
  trap 'rm -rf "$tmp"' EXIT
  render "$tmp"
  if ! out=$(diff -r "$tmp/crds" "$chart/crds" && diff -r "$tmp/files" "$chart/files" 2>&1); then
    printf '%s\n' "$out" | grep -E '^(Only in|diff )' >&2 || true
    fail "charts/vscaler is not current with manifests/: run charts/generate.sh"
  fi
  exit 0
fi
[ $# = 0 ] || { echo "usage: charts/generate.sh [--check]" >&2; exit 2; }
rm -rf "$chart/crds" "$chart/files"
render "$chart"
echo "generate.sh: charts/vscaler/crds and charts/vscaler/files regenerated from manifests/"
