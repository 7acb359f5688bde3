# shellcheck shell=bash
# Simulated usage for end-to-end tests on the full cluster (sourced after lib.sh). kwok reports
# what the ClusterResourceUsage vscaler-usage says (test/cluster/usage.py): these functions
# change it without touching a pod or a pod template, so a usage change is never a rollout and
# survives one. Rows are keyed by namespace, the pods' `app` label and the container name.
#
#   usage_set NAMESPACE APP CONTAINER CPU MEMORY   the usage of CONTAINER (or * = every container
#                                                   not named) in the pods labelled app=APP;
#                                                   CPU/MEMORY a quantity, or - to leave it as is
#   usage_clear NAMESPACE [APP]                     forget those rows (pods fall back to their
#                                                   kwok.x-k8s.io/usage-* annotations, else 1m/1Mi)
#   pod_metrics NAMESPACE POD                       "container cpu memory" lines from metrics.k8s.io
#                                                   (cpu in millicores, memory in Mi; empty if none yet)
#
# metrics-server scrapes every 10 s and needs two scrapes for a CPU rate: expect a change to be
# reported within about 30 s; wait for it with `eventually`.
USAGE_PY=$ROOT/test/cluster/usage.py

# usage_update ARGS...: one read-modify-write of vscaler-usage with usage.py ARGS; `replace`
# sends the resourceVersion read, so a concurrent writer makes it fail with a conflict and it is
# tried again.
usage_update() {
  local attempt out
  for attempt in 1 2 3 4 5; do
    out=$(k get clusterresourceusage vscaler-usage -o json | python3 "$USAGE_PY" "$@") || return 1
    k replace -f - >/dev/null <<<"$out" && return 0
    echo "usage_update: conflict on vscaler-usage (attempt $attempt); retrying" >&2
    sleep 0.2
  done
  fail "usage_update $*: vscaler-usage kept changing under us"
}

usage_set() {
  [ $# -eq 5 ] || fail "usage_set NAMESPACE APP CONTAINER CPU MEMORY: got $# arguments ($*)"
  usage_update set "$@"
}

usage_clear() {
  if [ $# -lt 1 ] || [ $# -gt 2 ]; then fail "usage_clear NAMESPACE [APP]: got $# arguments ($*)"; fi
  usage_update clear "$@"
}

# pod_metrics NAMESPACE POD: the PodMetrics the metrics API serves, one container a line.
pod_metrics() {
  local raw
  # Not found until metrics-server has scraped the pod twice: nothing to print yet.
  raw=$(k get --raw "/apis/metrics.k8s.io/v1beta1/namespaces/$1/pods/$2" 2>/dev/null) || return 0
  python3 -c '
import json, sys
units = {"n": 1e-6, "u": 1e-3, "m": 1, "": 1000}
def cpu_m(q):
    num = q.rstrip("num") if q[-1:] in "num" else q
    return round(float(num) * units[q[len(num):]])
def mem_mi(q):
    for suffix, f in (("Ki", 1 / 1024), ("Mi", 1), ("Gi", 1024), ("k", 1e3 / 2**20), ("M", 1e6 / 2**20)):
        if q.endswith(suffix):
            return round(float(q[: -len(suffix)]) * f)
    return round(float(q) / 2**20)
for c in json.load(sys.stdin).get("containers", []):
    print(c["name"], cpu_m(c["usage"]["cpu"]), mem_mi(c["usage"]["memory"]))
' <<<"$raw"
}
