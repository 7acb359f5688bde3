#!/usr/bin/env bash
# manifests/: what `kubectl apply -k manifests/` installs is accepted by the API server
# (server-side dry-run, also with the namespaced and cert-manager components), has the settings
# DESIGN.md fixes, passes the restricted Pod Security Standard, and grants the vscaler
# ServiceAccount exactly what the operator needs (kubectl auth can-i, after a real apply of the
# RBAC objects, cluster-wide and with the namespaced component).
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d /tmp/vscaler-manifests-test.XXXXXX)
SA=system:serviceaccount:vscaler-system:vscaler
cleanup() {
  k delete -f "$root/manifests/rbac.yaml" --ignore-not-found >/dev/null 2>&1 || true
  if [ -f "$work/ns-rbac.yaml" ]; then k delete -f "$work/ns-rbac.yaml" --ignore-not-found >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# The CRD is written by another part of the project; wait for it rather than fail early.
eventually 600 test -f "$root/manifests/crd/verticalscalers.yaml"

echo "--- kustomize builds the default kustomization and each variant"
k kustomize "$root/manifests" >"$work/all.yaml" || fail "kubectl kustomize manifests/ failed"
k kustomize "$root/manifests/local" >"$work/local.yaml" || fail "kubectl kustomize manifests/local failed"
# Components are enabled the documented way: uncommented in (a copy of) the root kustomization.
variant() {
  rm -rf "${work:?}/$1" && cp -r "$root/manifests" "$work/$1"
  sed -i "s|^# - $1\$|- $1|" "$work/$1/kustomization.yaml"
  grep -q "^- $1\$" "$work/$1/kustomization.yaml" || fail "manifests/kustomization.yaml has no '# - $1' line to enable"
}
variant namespaced
nsv=$(unique_namespace manifests-nsv)
sed -i "s|namespace: apps|namespace: $nsv|" "$work/namespaced/namespaced/role.yaml"
k kustomize "$work/namespaced" >"$work/namespaced.yaml" || fail "the namespaced component does not build"
variant cert-manager
k kustomize "$work/cert-manager" >"$work/cert-manager.yaml" || fail "the cert-manager component does not build"

echo "--- the rendered objects carry what DESIGN.md fixes"
to_json() { k create --dry-run=client -o json -f "$1" 2>/dev/null; }
for v in all local namespaced cert-manager; do
  if [ "$v" = cert-manager ]; then
    # cert-manager's kinds are unknown here: drop them before kubectl converts the rest
    python3 - "$work/$v.yaml" <<'PY' >"$work/$v.known.yaml"
import sys
docs = open(sys.argv[1]).read().split("\n---\n")
print("\n---\n".join(d for d in docs if not d.lstrip().startswith("apiVersion: cert-manager.io/")))
PY
    grep -q 'kind: Certificate$' "$work/$v.yaml" || fail "cert-manager: no Certificate"
    grep -q 'kind: Issuer$' "$work/$v.yaml" || fail "cert-manager: no Issuer"
    to_json "$work/$v.known.yaml" >"$work/$v.json" || fail "kubectl cannot read the $v variant"
  else
    to_json "$work/$v.yaml" >"$work/$v.json" || fail "kubectl cannot read the $v variant"
  fi
done
python3 - "$work" "$nsv" <<'PY' || fail "a manifest check failed (above)"
import json, sys
work, nsv = sys.argv[1], sys.argv[2]
failed = []

def load(name):
    # kubectl prints one JSON document per object, one after the other
    text, items, pos, decoder = open(f"{work}/{name}.json").read(), [], 0, json.JSONDecoder()
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        obj, pos = decoder.raw_decode(text, pos)
        items.extend(obj["items"] if obj.get("kind") == "List" else [obj])
    return {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in items}

def check(what, got, want):
    if got != want:
        failed.append(f"{what}: got {got!r}, want {want!r}")
    else:
        print(f"ok: {what} = {want!r}")

def one(objs, kind, name, ns=""):
    key = (kind, ns, name)
    if key not in objs:
        failed.append(f"missing {kind} {ns}/{name}")
        return None
    return objs[key]

base = load("all")
kinds = sorted({k for k, _, _ in base})
check("kinds installed", kinds, sorted([
    "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "Deployment",
    "MutatingWebhookConfiguration", "Namespace", "NetworkPolicy", "PodDisruptionBudget", "Role", "RoleBinding",
    "Service", "ServiceAccount", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
    "ValidatingWebhookConfiguration"]))
check("no Secret in the kustomization", [n for k, _, n in base if k == "Secret"], [])
crd = one(base, "CustomResourceDefinition", "verticalscalers.scaling.vscaler.dev")

d = one(base, "Deployment", "vscaler", "vscaler-system")
if d:
    pod = d["spec"]["template"]["spec"]
    c = pod["containers"][0]
    check("image", c["image"], "vscaler:0.1.0")
    check("serviceAccountName", pod["serviceAccountName"], "vscaler")
    check("pod runAsNonRoot", pod["securityContext"].get("runAsNonRoot"), True)
    check("pod seccomp", pod["securityContext"].get("seccompProfile"), {"type": "RuntimeDefault"})
    sc = c["securityContext"]
    check("readOnlyRootFilesystem", sc.get("readOnlyRootFilesystem"), True)
    check("allowPrivilegeEscalation", sc.get("allowPrivilegeEscalation"), False)
    check("capabilities", sc.get("capabilities"), {"drop": ["ALL"]})
    check("container seccomp", sc.get("seccompProfile"), {"type": "RuntimeDefault"})
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    check("container ports", ports, {"webhook": 9443, "metrics": 8080, "health": 8081})
    check("liveness", (c["livenessProbe"]["httpGet"]["path"], c["livenessProbe"]["httpGet"]["port"]), ("/healthz", "health"))
    check("readiness", (c["readinessProbe"]["httpGet"]["path"], c["readinessProbe"]["httpGet"]["port"]), ("/readyz", "health"))
    check("resources set", sorted(c["resources"]), ["limits", "requests"])
    check("--cert-dir", "--cert-dir=/tmp/k8s-webhook-server/serving-certs" in c["args"], True)
    check("--webhook-port", "--webhook-port=9443" in c["args"], True)
    check("--leader-elect", "--leader-elect" in c["args"], True)
    check("--metrics-secure", "--metrics-secure" in c["args"], True)
    check("replicas", d["spec"]["replicas"], 2)
    check("rolling update never drops a ready replica", d["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], 0)
    check("POD_NAMESPACE from the downward API", [e.get("valueFrom") for e in c.get("env", []) if e["name"] == "POD_NAMESPACE"],
          [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}])
    check("spread over nodes", [(t["topologyKey"], t["maxSkew"], t["labelSelector"]) for t in pod.get("topologySpreadConstraints", [])],
          [("kubernetes.io/hostname", 1, {"matchLabels": d["spec"]["selector"]["matchLabels"]})])
    mount = [m for m in c["volumeMounts"] if m["mountPath"] == "/tmp/k8s-webhook-server/serving-certs"]
    check("cert mount read-only", [m.get("readOnly") for m in mount], [True])
    vol = [v for v in pod["volumes"] if mount and v["name"] == mount[0]["name"]]
    check("cert volume", [v.get("secret", {}).get("secretName") for v in vol], ["vscaler-webhook-tls"])

pdb = one(base, "PodDisruptionBudget", "vscaler", "vscaler-system")
if pdb:
    check("pdb minAvailable", pdb["spec"].get("minAvailable"), 1)
    check("pdb selects the operator", pdb["spec"]["selector"], d["spec"]["selector"] if d else None)

s = one(base, "Service", "vscaler-webhook", "vscaler-system")
if s:
    check("service ports", sorted((p["port"], p["targetPort"]) for p in s["spec"]["ports"]),
          [(443, "webhook"), (8080, "metrics")])
    check("service selector", s["spec"]["selector"], d["spec"]["selector"]["matchLabels"] if d else None)

n = one(base, "NetworkPolicy", "vscaler", "vscaler-system")
if n:
    check("networkpolicy types", n["spec"]["policyTypes"], ["Ingress"])
    check("networkpolicy ports", sorted(p["port"] for r in n["spec"]["ingress"] for p in r["ports"]), [8080, 8081, 9443])
    # Metrics only from namespaces labelled metrics: enabled; webhook and probes from anywhere.
    by_port = {p["port"]: r.get("from") for r in n["spec"]["ingress"] for p in r["ports"]}
    check("networkpolicy metrics sources", by_port[8080], [{"namespaceSelector": {"matchLabels": {"metrics": "enabled"}}}])
    check("networkpolicy webhook and probe sources", [by_port[9443], by_port[8081]], [None, None])
    check("networkpolicy selects the operator", n["spec"]["podSelector"]["matchLabels"], d["spec"]["selector"]["matchLabels"] if d else None)

m = one(base, "MutatingWebhookConfiguration", "vscaler")
if m:
    w = m["webhooks"][0]
    check("mutating webhooks", [x["name"] for x in m["webhooks"]],
          ["mutate-deployments.vscaler.dev", "quote-off-verticalscalers.vscaler.dev",
           "mutate-workloads.vscaler.dev", "mutate-pods.vscaler.dev"])
    check("mutating failurePolicy", w["failurePolicy"], "Ignore")
    check("mutating timeoutSeconds", w["timeoutSeconds"], 2)
    check("mutating sideEffects", w["sideEffects"], "NoneOnDryRun")
    check("mutating reinvocationPolicy", w["reinvocationPolicy"], "IfNeeded")
    check("mutating admissionReviewVersions", w["admissionReviewVersions"], ["v1"])
    check("mutating rules", [(r["apiGroups"], r["apiVersions"], r["resources"], sorted(r["operations"])) for r in w["rules"]],
          [(["apps"], ["v1"], ["deployments"], ["CREATE", "DELETE", "UPDATE"])])
    check("mutating namespaceSelector", w["namespaceSelector"],
          {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["vscaler-system"]}]})
    check("mutating service", w["clientConfig"].get("service"),
          {"name": "vscaler-webhook", "namespace": "vscaler-system", "path": "/mutate-deployments", "port": 443})
    check("mutating matchConditions", [c["name"] for c in w.get("matchConditions", [])],
          ["template-changed", "not-vscaler"])
    check("no caBundle in the manifests", "caBundle" in w["clientConfig"], False)
    q = m["webhooks"][1] if len(m["webhooks"]) > 1 else {}
    check("quote-off: failurePolicy", q.get("failurePolicy"), "Ignore")
    check("quote-off: sideEffects", q.get("sideEffects"), "None")
    check("quote-off: rules", [(r["apiGroups"], r["resources"], sorted(r["operations"])) for r in q.get("rules", [])],
          [(["scaling.vscaler.dev"], ["verticalscalers"], ["CREATE", "UPDATE"])])
    check("quote-off: service path", q.get("clientConfig", {}).get("service", {}).get("path"), "/validate-verticalscalers")
    check("quote-off: only booleans are sent", [c["name"] for c in q.get("matchConditions", [])], ["a-mode-is-a-boolean"])
    # StatefulSets and DaemonSets: the Deployment entry's settings, its own rule and path.
    wl = m["webhooks"][2] if len(m["webhooks"]) > 2 else {}
    check("workloads: rules", [(r["apiGroups"], r["apiVersions"], r["resources"], sorted(r["operations"])) for r in wl.get("rules", [])],
          [(["apps"], ["v1"], ["statefulsets", "daemonsets"], ["CREATE", "DELETE", "UPDATE"])])
    check("workloads: service", wl.get("clientConfig", {}).get("service"),
          {"name": "vscaler-webhook", "namespace": "vscaler-system", "path": "/mutate-workloads", "port": 443})
    same_as = lambda a, b: {k: v for k, v in a.items() if k not in ("name", "clientConfig", "rules")} == \
        {k: v for k, v in b.items() if k not in ("name", "clientConfig", "rules")}
    check("workloads: otherwise the Deployment entry's settings", same_as(wl, w), True)
    check("workloads: no caBundle in the manifests", "caBundle" in wl.get("clientConfig", {}), False)
    # Pods (DESIGN "In-place resize"): CREATE only, no side effects, kube-system excluded too.
    pe = m["webhooks"][3] if len(m["webhooks"]) > 3 else {}
    check("pods: rules", [(r["apiGroups"], r["apiVersions"], r["resources"], r["operations"]) for r in pe.get("rules", [])],
          [([""], ["v1"], ["pods"], ["CREATE"])])
    check("pods: service", pe.get("clientConfig", {}).get("service"),
          {"name": "vscaler-webhook", "namespace": "vscaler-system", "path": "/mutate-pods", "port": 443})
    check("pods: settings", {k: pe.get(k) for k in ("failurePolicy", "timeoutSeconds", "sideEffects", "reinvocationPolicy")},
          {"failurePolicy": "Ignore", "timeoutSeconds": 2, "sideEffects": "None", "reinvocationPolicy": "IfNeeded"})
    check("pods: namespaceSelector", pe.get("namespaceSelector"),
          {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["vscaler-system", "kube-system"]}]})
    check("pods: only workload-owned pods are sent", [c["name"] for c in pe.get("matchConditions", [])], ["owned-by-a-workload"])
v = one(base, "ValidatingWebhookConfiguration", "vscaler")
if v:
    w = v["webhooks"][0]
    check("validating failurePolicy", w["failurePolicy"], "Fail")
    check("validating sideEffects", w["sideEffects"], "None")
    check("validating rules", [(r["apiGroups"], r["apiVersions"], r["resources"], sorted(r["operations"])) for r in w["rules"]],
          [(["scaling.vscaler.dev"], ["v1beta1"], ["verticalscalers"], ["CREATE", "UPDATE"])])
    check("validating service path", w["clientConfig"]["service"]["path"], "/validate-verticalscalers")

local = load("local")
check("local overlay kinds", sorted(k for k, _, _ in local), ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"])
lm = one(local, "MutatingWebhookConfiguration", "vscaler")
if lm and m:
    check("local mutating url", lm["webhooks"][0]["clientConfig"].get("url"), "https://127.0.0.1:9443/mutate-deployments")
    same = {k: v for k, v in lm["webhooks"][0].items() if k != "clientConfig"} == {k: v for k, v in m["webhooks"][0].items() if k != "clientConfig"}
    check("local mutating webhook otherwise identical", same, True)
    check("local quote-off url", lm["webhooks"][1]["clientConfig"].get("url"), "https://127.0.0.1:9443/validate-verticalscalers")
    check("local workloads url", lm["webhooks"][2]["clientConfig"].get("url") if len(lm["webhooks"]) > 2 else None,
          "https://127.0.0.1:9443/mutate-workloads")
    check("local pods url", lm["webhooks"][3]["clientConfig"].get("url") if len(lm["webhooks"]) > 3 else None,
          "https://127.0.0.1:9443/mutate-pods")
    check("local entries", len(lm["webhooks"]), len(m["webhooks"]))

ns = load("namespaced")
# Cluster-wide, only what a Role cannot grant: ClusterRole vscaler-cluster (list nodes, reviews);
# and vscaler-metrics-reader, which grants the scrapers, not vscaler, get on /metrics.
check("namespaced: only ClusterRole(Binding) vscaler-cluster, and the metrics reader role",
      sorted((k, n) for k, _, n in ns if k.startswith("Cluster")),
      [("ClusterRole", "vscaler-cluster"), ("ClusterRole", "vscaler-metrics-reader"),
       ("ClusterRoleBinding", "vscaler-cluster")])
check("namespaced: vscaler-cluster's rules",
      ns.get(("ClusterRole", "", "vscaler-cluster"), {}).get("rules"),
      [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]},
       {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
       {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]}])
one(ns, "Role", "vscaler", nsv)
rb = one(ns, "RoleBinding", "vscaler", nsv)
nd = one(ns, "Deployment", "vscaler", "vscaler-system")
if nd:
    check("namespaced: --namespace flag", [a for a in nd["spec"]["template"]["spec"]["containers"][0]["args"] if a.startswith("--namespace")], [f"--namespace={nsv}"])
nm = one(ns, "MutatingWebhookConfiguration", "vscaler")
if nm:
    check("namespaced: mutating namespaceSelector", nm["webhooks"][0]["namespaceSelector"]["matchExpressions"][0]["values"], [nsv])
    check("namespaced: quote-off namespaceSelector", nm["webhooks"][1]["namespaceSelector"]["matchExpressions"][0]["values"], [nsv])
    check("namespaced: workloads namespaceSelector", nm["webhooks"][2]["namespaceSelector"],
          {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": [nsv]}]})
    check("namespaced: pods namespaceSelector", nm["webhooks"][3]["namespaceSelector"],
          {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": [nsv]}]})
nv = one(ns, "ValidatingWebhookConfiguration", "vscaler")
if nv:
    check("namespaced: validating namespaceSelector", nv["webhooks"][0]["namespaceSelector"]["matchExpressions"][0]["values"], [nsv])

cm = load("cert-manager")
for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
    o = one(cm, kind, "vscaler")
    if o:
        check(f"cert-manager: {kind} inject-ca-from", o["metadata"].get("annotations", {}).get("cert-manager.io/inject-ca-from"),
              "vscaler-system/vscaler-webhook")

if failed:
    print("\n".join("FAIL: " + f for f in failed), file=sys.stderr)
    sys.exit(1)
PY

echo "--- kubectl apply -k manifests/ --dry-run=server"
# A server-side dry-run cannot create the namespace it then puts objects into: it must exist.
k apply -f "$root/manifests/namespace.yaml" >/dev/null
k apply -k "$root/manifests" --dry-run=server >"$work/dry-run.out" 2>&1 ||
  fail "kubectl apply -k manifests/ --dry-run=server failed: $(cat "$work/dry-run.out")"
expect_eq "objects accepted by the dry-run" "$(grep -c '(server dry run)' "$work/dry-run.out")" \
  "$(grep -c '^kind:' "$work/all.yaml")"
# Pod Security admission warns about a Deployment whose pods would break the namespace's level.
if grep -qi 'would violate PodSecurity' "$work/dry-run.out"; then
  fail "the operator's pod is not 'restricted': $(grep -i podsecurity "$work/dry-run.out")"
fi
echo "ok: the operator's pod passes the namespace's restricted Pod Security level"
grep -v '^Warning: resource .* is missing the kubectl.kubernetes.io/last-applied-configuration' "$work/dry-run.out" |
  grep -i '^warning' && fail "the dry-run printed warnings"
k apply -f "$work/namespaced.yaml" --dry-run=server >"$work/dry-run-ns.out" 2>&1 ||
  fail "the namespaced variant fails a server-side dry-run: $(cat "$work/dry-run-ns.out")"
echo "ok: the namespaced variant passes a server-side dry-run"

echo "--- RBAC (real apply): what the vscaler ServiceAccount may do"
k apply -f "$root/manifests/rbac.yaml" >/dev/null
ns=$(unique_namespace manifests-rbac)
# can NS VERB RESOURCE[/SUBRESOURCE] [NAME]: yes or no.
can() {
  local out resource=${3%%/*} sub=""
  [ "$resource" = "$3" ] || sub=--subresource=${3#*/}
  out=$(k auth can-i "$2" "$resource${4:+/$4}" ${sub:+"$sub"} -n "$1" --as="$SA" 2>&1) || true
  echo "$out"
}
expect_can() {
  local ns=$1 want=$2
  shift 2
  expect_eq "can-i $* (in $ns)" "$(can "$ns" "$@")" "$want"
}
can_get_deployments() { [ "$(can "$ns" get deployments.apps)" = yes ]; }
eventually 10 can_get_deployments
for workload in deployments.apps statefulsets.apps daemonsets.apps; do
  for verb in get list patch; do expect_can "$ns" yes "$verb" "$workload"; done
  for verb in create update delete deletecollection watch; do expect_can "$ns" no "$verb" "$workload"; done
  expect_can "$ns" no update "$workload/status"
done
expect_can "$ns" no patch deployments.apps/scale
expect_can "$ns" no patch statefulsets.apps/scale
expect_can "$ns" no patch replicasets.apps  # read by the recommender (owner chains), never written
# create and delete: the scalers it makes for namespaces that ask (the policy
# vscaler-made-scalers-only keeps both to those); never update or patch a scaler's spec.
for verb in get list watch create delete; do expect_can "$ns" yes "$verb" verticalscalers.scaling.vscaler.dev; done
for verb in update patch deletecollection; do expect_can "$ns" no "$verb" verticalscalers.scaling.vscaler.dev; done
# Status: patched only (every write of vscaler is a merge patch of what changed).
expect_can "$ns" yes patch verticalscalers.scaling.vscaler.dev/status
for verb in get update; do expect_can "$ns" no "$verb" verticalscalers.scaling.vscaler.dev/status; done
for verb in create patch; do expect_can "$ns" yes "$verb" events; done
expect_can "$ns" no create events.events.k8s.io  # its Events are core v1 Events
for verb in get list watch create; do
  expect_can "$ns" no "$verb" secrets
  expect_can vscaler-system no "$verb" secrets
done
# The recommender reads pods (owner chains, OOM kills), never writes them.
for verb in get list; do
  expect_can "$ns" yes "$verb" pods
  expect_can "$ns" yes "$verb" replicasets.apps
done
for verb in watch create update patch delete; do expect_can "$ns" no "$verb" pods; done
expect_can "$ns" no patch pods/status
# The in-place modes resize running pods: the resize subresource, patch only.
expect_can "$ns" yes patch pods/resize
for verb in get update; do expect_can "$ns" no "$verb" pods/resize; done
expect_can "$ns" yes create pods/eviction
# The metrics API is not served on the minimal plane, so kubectl cannot resolve the resource
# there: ask the authorizer directly with a SubjectAccessReview.
sar_allowed() {
  k create -o jsonpath='{.status.allowed}' -f - <<JSON
{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview",
 "spec":{"user":"$SA","groups":["system:serviceaccounts","system:authenticated"],
  "resourceAttributes":{"namespace":"$1","verb":"$2","group":"$3","resource":"$4"}}}
JSON
}
expect_eq "SubjectAccessReview list pods.metrics.k8s.io (in $ns)" "$(sar_allowed "$ns" list metrics.k8s.io pods)" true
expect_eq "SubjectAccessReview get pods.metrics.k8s.io (in $ns)" "$(sar_allowed "$ns" get metrics.k8s.io pods)" false
expect_can "$ns" yes list limitranges
expect_can "$ns" yes list resourcequotas
expect_can "$ns" no get resourcequotas
# Nodes: listed once per recommender pass (the largest allocatable caps recommendations). A
# cluster-scoped resource: kubectl warns on stderr that it has no namespace; the answer is stdout.
can_nodes() { k auth can-i "$1" nodes --as="$SA" 2>/dev/null || true; }
expect_eq "can-i list nodes" "$(can_nodes list)" yes
for verb in get watch patch update; do expect_eq "can-i $verb nodes" "$(can_nodes "$verb")" no; done
# Namespaces: which are labelled vscaler.dev/recommend=true (list, watch); nothing else.
can_namespaces() { k auth can-i "$1" namespaces --as="$SA" 2>/dev/null || true; }
for verb in list watch; do expect_eq "can-i $verb namespaces" "$(can_namespaces "$verb")" yes; done
for verb in get create patch update delete; do expect_eq "can-i $verb namespaces" "$(can_namespaces "$verb")" no; done
# The checkpoint CRD was applied a moment ago: kubectl's discovery may not know it yet, the
# authorizer does.
for verb in get list create update delete; do
  expect_eq "SubjectAccessReview $verb verticalscalercheckpoints (in $ns)" \
    "$(sar_allowed "$ns" "$verb" scaling.vscaler.dev verticalscalercheckpoints)" true
done
for verb in patch watch; do
  expect_eq "SubjectAccessReview $verb verticalscalercheckpoints (in $ns)" \
    "$(sar_allowed "$ns" "$verb" scaling.vscaler.dev verticalscalercheckpoints)" false
done
expect_can "$ns" no get leases.coordination.k8s.io vscaler
expect_can vscaler-system yes create leases.coordination.k8s.io
expect_can vscaler-system yes get leases.coordination.k8s.io vscaler
expect_can vscaler-system yes update leases.coordination.k8s.io vscaler
expect_can vscaler-system no get leases.coordination.k8s.io another
expect_can vscaler-system no delete leases.coordination.k8s.io vscaler

# --list: every resource rule, beyond what every authenticated user gets, is exactly these.
rules() {
  k auth can-i --list -n "$1" --as="$SA" | awk 'NR > 1 && $1 !~ /^\[/ && $1 !~ /^self.*reviews/' | sort
}
rules "$ns" >"$work/rules.txt"
cat >"$work/want.txt" <<'EOF'
daemonsets.apps                                 []                                     []               [get list patch]
deployments.apps                                []                                     []               [get list patch]
horizontalpodautoscalers.autoscaling            []                                     []               [list]
events                                          []                                     []               [create patch]
limitranges                                     []                                     []               [list]
resourcequotas                                  []                                     []               [list]
nodes                                           []                                     []               [list]
pods                                            []                                     []               [get list]
pods/eviction                                   []                                     []               [create]
pods/resize                                     []                                     []               [patch]
pods.metrics.k8s.io                             []                                     []               [list]
replicasets.apps                                []                                     []               [get list]
verticalscalercheckpoints.scaling.vscaler.dev   []                                     []               [get list create update delete]
verticalscalers.scaling.vscaler.dev             []                                     []               [get list watch create delete]
namespaces                                      []                                     []               [list watch]
statefulsets.apps                               []                                     []               [get list patch]
verticalscalers.scaling.vscaler.dev/status      []                                     []               [patch]
tokenreviews.authentication.k8s.io              []                                     []               [create]
subjectaccessreviews.authorization.k8s.io       []                                     []               [create]
EOF
norm() { awk '{ $1 = $1; print }' "$1" | sort; }
diff <(norm "$work/want.txt") <(norm "$work/rules.txt") >"$work/rules.diff" ||
  fail "auth can-i --list (in $ns) differs from what the operator needs:$(printf '\n')$(cat "$work/rules.diff")"
echo "ok: auth can-i --list in $ns is exactly deployments/statefulsets/daemonsets get/list/patch, horizontalpodautoscalers list, verticalscalers get/list/watch/create/delete, namespaces list/watch, status patch, events create/patch, pods and replicasets get/list, pods/resize patch, pods/eviction create, PodMetrics, limitranges, resourcequotas and nodes list, checkpoints get/list/create/update/delete, token and subject access reviews create"
rules vscaler-system >"$work/rules-system.txt"
cat >>"$work/want.txt" <<'EOF'
leases.coordination.k8s.io                      []                                     []               [create]
leases.coordination.k8s.io                      []                                     [vscaler]        [get update]
EOF
diff <(norm "$work/want.txt") <(norm "$work/rules-system.txt") >"$work/rules.diff" ||
  fail "auth can-i --list (in vscaler-system) differs:$(printf '\n')$(cat "$work/rules.diff")"
echo "ok: auth can-i --list in vscaler-system adds only the Lease vscaler (create; get/update by name)"
grep -Eiq '^secrets' "$work/rules.txt" "$work/rules-system.txt" && fail "a rule on secrets"
grep -q '^\*' "$work/rules.txt" && fail "a wildcard rule"

echo "--- RBAC, namespaced component: the same rights, only in its namespace"
python3 - "$work/namespaced.yaml" <<'PY' >"$work/ns-rbac.yaml"
import sys
docs = open(sys.argv[1]).read().split("\n---\n")
keep = ("kind: ServiceAccount", "kind: Role\n", "kind: RoleBinding\n",
        "name: vscaler-cluster\n")
print("\n---\n".join(d for d in docs if any(k in d + "\n" for k in keep)))
PY
k delete -f "$root/manifests/rbac.yaml" >/dev/null
k apply -f "$work/ns-rbac.yaml" >/dev/null
can_patch_deployments() { [ "$(can "$nsv" patch deployments.apps)" = yes ]; }
eventually 10 can_patch_deployments
expect_can "$nsv" no create deployments.apps
expect_can "$nsv" yes patch statefulsets.apps
expect_can "$nsv" yes list daemonsets.apps
expect_can "$nsv" no delete daemonsets.apps
expect_can "$nsv" yes watch verticalscalers.scaling.vscaler.dev
expect_can "$nsv" no get secrets
expect_eq "can-i list nodes (namespaced: ClusterRole vscaler-cluster)" "$(can_nodes list)" yes
expect_eq "can-i get nodes (namespaced)" "$(can_nodes get)" no
expect_can "$ns" no get deployments.apps
expect_can "$ns" no list verticalscalers.scaling.vscaler.dev
expect_can vscaler-system yes update leases.coordination.k8s.io vscaler
echo "ok: manifests"
