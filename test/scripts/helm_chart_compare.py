#!/usr/bin/env python3
"""Semantic comparison of `helm template charts/vscaler` with `kubectl kustomize manifests/`, for
test/scripts/helm_chart_test.sh: objects are keyed by apiVersion/kind/namespace/name, every object
on each side must be on the other, and equal once Helm's own additions are removed (its labels and
annotations, the generated Secret vscaler-webhook-tls and the webhooks' caBundle, which are
checked here instead: the Secret holds ca.crt/tls.crt/tls.key and every caBundle is its ca.crt).
Usage: helm_chart_compare.py KUSTOMIZE_YAML HELM_YAML [--skip-kind KIND]... [--certs-from-chart]
Exit 1 with the differences on stdout."""
import argparse
import base64
import difflib
import json
import re
import sys

import yaml

HELM_LABELS = {"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance",
               "app.kubernetes.io/version"}
WEBHOOK_KINDS = {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}


def load(path):
    with open(path) as f:
        objs = {}
        for doc in yaml.safe_load_all(f):
            if not doc:
                continue
            md = doc.get("metadata", {})
            key = (doc.get("apiVersion"), doc.get("kind"), md.get("namespace", ""), md.get("name"))
            if key in objs:
                sys.exit(f"{path}: {'/'.join(map(str, key))} appears twice")
            objs[key] = normalize_cel(doc)
        return objs


def normalize_cel(x):
    """CEL ignores whitespace between tokens; kustomize (kyaml) re-emits a folded `>-` scalar with
    more-indented lines as a literal one with an extra blank line, Helm does not. So every
    `expression` is compared with its whitespace runs collapsed, on both sides."""
    if isinstance(x, dict):
        return {k: (re.sub(r"\s+", " ", v) if k == "expression" and isinstance(v, str)
                    else normalize_cel(v)) for k, v in x.items()}
    if isinstance(x, list):
        return [normalize_cel(v) for v in x]
    return x


def strip_helm(obj):
    md = obj.get("metadata", {})
    for field, drop in (("labels", lambda k: k in HELM_LABELS),
                        ("annotations", lambda k: k.startswith("meta.helm.sh/"))):
        m = md.get(field)
        if m is None:
            continue
        for k in [k for k in m if drop(k)]:
            del m[k]
        if not m:
            del md[field]
    return obj


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kustomize")
    ap.add_argument("helm")
    ap.add_argument("--skip-kind", action="append", default=[])
    ap.add_argument("--certs-from-chart", action="store_true",
                    help="the chart generated the certificate: check the Secret and caBundle")
    a = ap.parse_args()
    want = {k: v for k, v in load(a.kustomize).items() if k[1] not in a.skip_kind}
    got = {k: v for k, v in load(a.helm).items() if k[1] not in a.skip_kind}
    problems = []

    if a.certs_from_chart:
        skey = ("v1", "Secret", "vscaler-system", "vscaler-webhook-tls")
        secret = got.pop(skey, None)
        if secret is None:
            problems.append("helm: no Secret vscaler-system/vscaler-webhook-tls (the generated certificate)")
            ca = None
        else:
            data = secret.get("data", {})
            missing = [k for k in ("ca.crt", "tls.crt", "tls.key") if not data.get(k)]
            if missing:
                problems.append(f"helm: Secret vscaler-webhook-tls lacks {', '.join(missing)}")
            ca = data.get("ca.crt")
            if ca and b"BEGIN CERTIFICATE" not in base64.b64decode(ca):
                problems.append("helm: Secret vscaler-webhook-tls ca.crt is not a PEM certificate")
        for key, obj in got.items():
            if key[1] not in WEBHOOK_KINDS:
                continue
            for w in obj.get("webhooks", []):
                cc = w.get("clientConfig", {})
                bundle = cc.pop("caBundle", None)
                if bundle is None or bundle != ca:
                    problems.append(f"helm: {key[1]} {key[3]} webhook {w.get('name')}: caBundle is not the Secret's ca.crt")

    for key in sorted(set(want) | set(got), key=str):
        name = "/".join(k or "-" for k in key)
        if key not in got:
            problems.append(f"only in kubectl kustomize manifests/: {name}")
            continue
        if key not in want:
            problems.append(f"only in helm template charts/vscaler: {name}")
            continue
        w = json.dumps(want[key], indent=1, sort_keys=True).splitlines()
        g = json.dumps(strip_helm(got[key]), indent=1, sort_keys=True).splitlines()
        if w != g:
            diff = "\n".join(difflib.unified_diff(w, g, "kustomize", "helm", lineterm="", n=2))
            problems.append(f"differs: {name}\n{diff}")
    for p in problems:
        print(p)
    if problems:
        sys.exit(1)
    print(f"{len(want)} objects equal")


if __name__ == "__main__":
    main()
