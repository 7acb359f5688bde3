#!/usr/bin/env bash
# The history the local cluster's Prometheus is seeded with (issue 31) reads back as vscaler will
# read it. Needs no cluster: test/cluster/history.py writes 8 days of two pods' CPU and memory
# as OpenMetrics, promtool turns them into TSDB blocks (as test/cluster/prometheus.sh seed does),
# and a throwaway Prometheus (no scrape targets, a free loopback port) serves them. Then:
#   1. history.py is deterministic: the same arguments give the same bytes;
#   2. the range queries vscaler runs (step 1h over 8 days) return a series for every pod, with
#      192 points each;
#   3. rate(container_cpu_usage_seconds_total[1h]) at each hour is within 2 % of the mean rate
#      history.py --print-expected says it generated for that hour, and max_over_time of
#      container_memory_working_set_bytes[1h] is exactly its largest sample;
#   4. vscaler's own source (bench/tools/history_fidelity: PrometheusHistory and the seed the
#      operator runs) gives a recommendation within 2 % of the one the same per-minute samples
#      give fed live for the target and upperBound, within 10 % for the lowerBound (the p50 of a
#      daily sine sits where it spends least time: an hour's averaging moves it across the 5 %
#      histogram buckets; measured 0-8.6 % depending on the phase) (the pods are a StatefulSet's,
#      web-0 and web-1);
#   5. a pod named like theirs but owned by a Job "web" (web-24567, ten times their CPU and
#      memory: kube-state-metrics' kube_pod_owner says so) is in the name query's answer and left
#      out of vscaler's: step 4's recommendation is the two pods' alone.
# prometheus and promtool come from Debian's prometheus package (scripts/deps.sh test).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../../scripts/process.sh
. "$root/scripts/process.sh"

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
ok() { echo "ok: $*"; }

for bin in /usr/bin/prometheus /usr/bin/promtool; do
  [ -x "$bin" ] || fail "$bin is missing (scripts/deps.sh test installs the prometheus package)"
done

begin=$SECONDS
work=$(mktemp -d /tmp/vscaler-prometheus-history-test.XXXXXX)
record=""
cleanup() {
  [ -z "$record" ] || process_stop "$record" 10 >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# 1. Generate, twice: the same bytes.
ns=history-test
# A fixed day (2026-05-28 00:00 UTC; Prometheus keeps it: retention 100y), so that every run reads
# the same bytes and step 4 measures the same thing every day; VSCALER_HISTORY_END moves it.
end=${VSCALER_HISTORY_END:-1779926400}
gen=(python3 "$root/test/cluster/history.py" --namespace "$ns" --pods web-0,web-1 --container app
  --cpu-mean 0.3 --cpu-amplitude 0.1 --memory-mean-mib 400 --memory-amplitude-mib 50 --days 8
  --step 60 --end "$end")
"${gen[@]}" --owner StatefulSet/web > "$work/history.om"
"${gen[@]}" --owner StatefulSet/web | cmp -s - "$work/history.om" ||
  fail "history.py gave different bytes for the same arguments"
# The decoy: a Job's pod whose name matches a StatefulSet's pod pattern (web-[0-9]+).
python3 "$root/test/cluster/history.py" --namespace "$ns" --pods web-24567 --container app \
  --cpu-mean 3 --cpu-amplitude 0.1 --memory-mean-mib 4000 --memory-amplitude-mib 50 --days 8 \
  --step 60 --end "$end" --owner Job/web > "$work/decoy.om"
"${gen[@]}" --print-expected > "$work/expected.json"
[ "$(tail -n1 "$work/history.om")" = "# EOF" ] || fail "the OpenMetrics text does not end with # EOF"
ok "history.py: $(wc -l < "$work/history.om") lines, the same bytes twice"

# 2. Blocks (24 h each: one a day instead of 2 h ones, 10 times faster), then Prometheus on them.
mkdir -p "$work/data"
t=$SECONDS
for file in history decoy; do
  promtool tsdb create-blocks-from openmetrics --max-block-duration=24h -q "$work/$file.om" \
    "$work/data" > "$work/promtool.log" 2>&1 || fail "promtool failed: $(tail -n 20 "$work/promtool.log")"
done
ok "promtool wrote $(find "$work/data" -mindepth 1 -maxdepth 1 -type d | wc -l) blocks in $((SECONDS - t))s"

printf 'global:\n  scrape_interval: 15s\nscrape_configs: []\n' > "$work/prometheus.yml"
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
for attempt in 1 2 3; do
  port=$(free_port)
  url=http://127.0.0.1:$port
  : > "$work/prometheus.log"
  process_spawn "$work/prometheus.log" /usr/bin/prometheus --config.file="$work/prometheus.yml" \
    --storage.tsdb.path="$work/data" --storage.tsdb.retention.time=100y \
    --web.listen-address="127.0.0.1:$port"
  record=$PROCESS_RECORD
  process_await "$record" 30 prometheus "$work/prometheus.log" curl -fsS "$url/-/ready" \
    2>"$work/await.err" && break
  process_stop "$record" 3 || true
  record=""
  # Only a port lost between picking and binding is worth another try.
  if [ "$attempt" -lt 3 ] && grep -q 'address already in use' "$work/prometheus.log"; then continue; fi
  fail "prometheus did not start: $(cat "$work/await.err")"
done
ok "prometheus ready on $url"

# 3. The queries vscaler runs, as range queries over the 8 days.
selector="job=\"kubernetes-cadvisor\", namespace=\"$ns\", pod=~\"web-.*\", container!=\"POD\", container!=\"\""
query_range() {
  curl -fsS "$url/api/v1/query_range" --data-urlencode "query=$1" -d "start=$((end - 8 * 86400))" \
    -d "end=$end" -d step=3600
}
query_range "rate(container_cpu_usage_seconds_total{$selector}[1h])" > "$work/cpu.json" ||
  fail "the CPU range query failed"
query_range "max_over_time(container_memory_working_set_bytes{$selector}[1h])" > "$work/memory.json" ||
  fail "the memory range query failed"

python3 - "$work/expected.json" "$work/cpu.json" "$work/memory.json" <<'PY' || fail "the history read back is not the history generated"
import json, sys

expected = json.load(open(sys.argv[1]))
cpu = json.load(open(sys.argv[2]))["data"]["result"]
memory = json.load(open(sys.argv[3]))["data"]["result"]
problems = []


def by_pod(result, what):
    out = {}
    for series in result:
        m = series["metric"]
        pod = m.get("pod")
        for label in ("namespace", "pod", "container", "instance", "job"):
            if label not in m:
                problems.append(f"{what}: a series has no {label} label: {m}")
        if pod in out:
            problems.append(f"{what}: pod {pod} has more than one series")
        out[pod] = {int(t): float(v) for t, v in series["values"]}
    return out


cpu, memory = by_pod(cpu, "cpu"), by_pod(memory, "memory")
for what, got in (("cpu", cpu), ("memory", memory)):
    if "web-24567" not in got:
        problems.append(f"{what}: the decoy pod web-24567 is not in the name query's answer")
    got.pop("web-24567", None)
worst = (0.0, None)
for pod, hours in sorted(expected["pods"].items()):
    for what, got in (("cpu", cpu), ("memory", memory)):
        if pod not in got:
            problems.append(f"{what}: no series for pod {pod}")
        elif len(got[pod]) != 192:
            problems.append(f"{what}: pod {pod} has {len(got[pod])} points, not 192")
    if pod not in cpu or pod not in memory:
        continue
    for h in hours:
        t = h["end"]
        if t not in cpu[pod] or t not in memory[pod]:
            problems.append(f"pod {pod}: no point at the hour ending {t}")
            continue
        diff = abs(cpu[pod][t] - h["cpu_rate"]) / h["cpu_rate"]
        if diff > worst[0]:
            worst = (diff, f"{pod} at {t}")
        if diff > 0.02:
            problems.append(f"pod {pod}, hour ending {t}: CPU rate {cpu[pod][t]} vs {h['cpu_rate']} generated ({diff:.2%})")
        if memory[pod][t] != h["memory_max_bytes"]:
            problems.append(f"pod {pod}, hour ending {t}: memory max {memory[pod][t]:.0f} vs {h['memory_max_bytes']} generated")
# One known hour, named: the one ending 36 h before the end.
pod, h = "web-0", expected["pods"]["web-0"][191 - 36]
if pod in cpu and h["end"] in cpu[pod]:
    print(f"ok: web-0, hour ending {h['end']}: CPU rate {cpu[pod][h['end']]:.6f} read, {h['cpu_rate']:.6f} generated; "
          f"memory max {memory[pod][h['end']]:.0f} read, {h['memory_max_bytes']} generated")
for p in problems[:20]:
    print("  " + p, file=sys.stderr)
if problems:
    sys.exit(1)
print(f"ok: {len(expected['pods'])} pods (and the decoy) x 192 points each; largest CPU difference {worst[0]:.2e} ({worst[1]}); "
      "every memory max exact")
PY
# 4. The operator's code: history from Prometheus against the same samples fed live.
fidelity=$root/build/release/bench/tools/history_fidelity
[ -x "$fidelity" ] || fail "$fidelity is missing (make build builds it)"
"${gen[@]}" --print-samples > "$work/samples.json"
"$fidelity" --samples "$work/samples.json" --prometheus-address "$url" --kind StatefulSet \
  --name web --tolerance "${VSCALER_HISTORY_TOLERANCE:-0.02}" \
  --lower-bound-tolerance "${VSCALER_HISTORY_LOWER_TOLERANCE:-0.10}" > "$work/fidelity.json" ||
  fail "history from Prometheus and the same samples fed live differ: $(cat "$work/fidelity.json")"
ok "history from Prometheus (the Job's pod web-24567 left out) vs the same samples fed live: $(cat "$work/fidelity.json")"
echo "prometheus_history_test: passed in $((SECONDS - begin))s"
