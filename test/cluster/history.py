#!/usr/bin/env python3
"""Deterministic CPU and memory history for the local cluster's Prometheus (issue 31).

Prints OpenMetrics text that `promtool tsdb create-blocks-from openmetrics` turns into TSDB
blocks (test/cluster/prometheus.sh seed FILE does that): the series kwok's resource-metrics
endpoint has, as Prometheus's job `kubernetes-cadvisor` stores them,
  container_cpu_usage_seconds_total{job, instance, namespace, pod, container}   counter
  container_memory_working_set_bytes{job, instance, namespace, pod, container}  gauge
one of each per pod, for DAYS days up to END, a sample every STEP seconds (END - DAYS d excluded,
END included). promtool keeps the labels written here, job and instance included.

The trace follows a 24 h sine of the time of day (UTC; peak at 06:00), plus a small
pseudo-random jitter that is a hash of (seed, pod, metric, timestamp): the same arguments give
the same bytes, and a sample at a given time is the same whatever DAYS says. CPU: the rate of
step k (the interval ending at its timestamp) is
  max(0, cpu-mean + cpu-amplitude * sin(2 pi t_mid / 1 d) + jitter * cpu-mean * u)
(u in [-1, 1)), and the counter is its integral from 0 at the start. Memory, in bytes at t:
  max(0, MiB * (memory-mean + memory-amplitude * sin(2 pi t / 1 d) + jitter * memory-mean * u)).

--print-expected prints instead, as JSON, what a Prometheus 2.x range query with step 1h and
end = END reads for each hour, the hours ending at END, END - 1h, ... (oldest first):
  cpu_rate          (counter(T) - counter(T - 1h)) / 3600: the mean rate over the hour, which is
                    what rate(...[1h]) evaluates to at T (a sample sits on both ends of the window;
                    the oldest hour has none at its start: Prometheus extrapolates over 59 min);
  memory_max_bytes  the largest sample in [T - 1h, T], which is what max_over_time(...[1h]) at T
                    reads (Prometheus 2.x range selectors include both ends).

Usage:
  history.py --namespace NS --pods web-a,web-b [--container app] [--cpu-mean 0.3]
      [--cpu-amplitude 0.1] [--memory-mean-mib 400] [--memory-amplitude-mib 50] [--days 8]
      [--step 60] [--end UNIX_SECONDS] [--instance kwok-node-0] [--jitter 0.05]
      [--seed vscaler-history] [--owner KIND/NAME] [--pod-labels k=v,...]
      [--print-expected | --print-samples]

--owner KIND/NAME adds kube-state-metrics' kube_pod_owner{namespace, pod, owner_kind,
owner_name, owner_is_controller} gauge (1) per pod at every step, as job kube-state-metrics
scrapes it (vscaler leaves out pods another controller owns); --pod-labels k=v,... adds the
series VerticalPodAutoscaler's Prometheus history links pods to its objects by,
up{job="kubernetes-pods", kubernetes_namespace, kubernetes_pod_name, pod_label_<k>="v"} (1), as
a scrape job of annotated pods with labelmap(__meta_kubernetes_pod_label_*) writes it.

--print-samples prints, as JSON, each step's CPU rate and memory sample per pod: the samples a
live sampler at that step would have read (bench/tools/history_fidelity feeds them live).
"""
import argparse
import hashlib
import json
import math
import sys
import time

DAY = 86400
HOUR = 3600
MIB = 1024 * 1024
JOB = "kubernetes-cadvisor"
CPU = "container_cpu_usage_seconds"  # the counter family; its sample is CPU + "_total"
MEMORY = "container_memory_working_set_bytes"


def fail(message):
    print(f"history.py: {message}", file=sys.stderr)
    sys.exit(2)


def parse_args(argv):
    p = argparse.ArgumentParser(description="Deterministic CPU/memory history as OpenMetrics.")
    p.add_argument("--namespace", required=True)
    p.add_argument("--pods", required=True, help="comma-separated pod names")
    p.add_argument("--container", default="app")
    p.add_argument("--instance", default="kwok-node-0",
                   help="the instance label (the scrape job names each target by its node)")
    p.add_argument("--cpu-mean", type=float, default=0.3, help="cores")
    p.add_argument("--cpu-amplitude", type=float, default=0.1, help="cores")
    p.add_argument("--memory-mean-mib", type=float, default=400)
    p.add_argument("--memory-amplitude-mib", type=float, default=50)
    p.add_argument("--days", type=int, default=8)
    p.add_argument("--step", type=int, default=60, help="seconds between samples; divides 3600")
    p.add_argument("--end", type=int, help="unix seconds (default: now, rounded down to the step)")
    p.add_argument("--jitter", type=float, default=0.05, help="fraction of the mean")
    p.add_argument("--seed", default="vscaler-history")
    p.add_argument("--owner", help="KIND/NAME: a kube_pod_owner series per pod")
    p.add_argument("--pod-labels", default="",
                   help="k=v,...: an up{job=\"kubernetes-pods\"} series per pod (VPA's pod labels)")
    p.add_argument("--print-expected", action="store_true",
                   help="print the per-hour CPU rate and memory max (JSON) instead of the samples")
    p.add_argument("--print-samples", action="store_true",
                   help="print every step's CPU rate and memory (JSON): what a live sampler at "
                        "that step would have read")
    a = p.parse_args(argv)
    a.pods = [x for x in a.pods.split(",") if x]
    if not a.pods:
        fail("--pods names no pod")
    if a.step <= 0 or HOUR % a.step:
        fail(f"--step must divide 3600 seconds, not {a.step}")
    if a.days <= 0:
        fail(f"--days must be positive, not {a.days}")
    if a.owner is not None:
        kind, _, name = a.owner.partition("/")
        if not kind or not name:
            fail(f"--owner must be KIND/NAME (StatefulSet/web), not {a.owner!r}")
        a.owner = (kind, name)
    pairs = [x for x in a.pod_labels.split(",") if x]
    if any("=" not in x or not x.split("=", 1)[0] for x in pairs):
        fail(f"--pod-labels must be k=v pairs separated by commas, not {a.pod_labels!r}")
    a.pod_labels = [tuple(x.split("=", 1)) for x in pairs]
    if a.end is None:
        a.end = int(time.time()) // a.step * a.step
    if a.end % a.step:
        fail(f"--end {a.end} is not a multiple of --step {a.step}")
    for name in ("cpu_mean", "cpu_amplitude", "memory_mean_mib", "memory_amplitude_mib", "jitter"):
        if getattr(a, name) < 0:
            fail(f"--{name.replace('_', '-')} must not be negative")
    return a


def unit(seed, pod, metric, t):
    """A pseudo-random number in [-1, 1), fixed by its arguments."""
    digest = hashlib.sha256(f"{seed}|{pod}|{metric}|{t}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**63 - 1.0


def diurnal(t):
    return math.sin(2 * math.pi * (t % DAY) / DAY)


def trace(a, pod):
    """[(t, counter, memory_bytes)] for one pod, oldest first (counter: core-seconds)."""
    start = a.end - a.days * DAY
    counter = 0.0
    out = []
    for t in range(start + a.step, a.end + 1, a.step):
        rate = a.cpu_mean + a.cpu_amplitude * diurnal(t - a.step / 2) \
            + a.jitter * a.cpu_mean * unit(a.seed, pod, "cpu", t)
        counter += max(0.0, rate) * a.step
        mib = a.memory_mean_mib + a.memory_amplitude_mib * diurnal(t) \
            + a.jitter * a.memory_mean_mib * unit(a.seed, pod, "memory", t)
        out.append((t, counter, max(0, round(mib * MIB))))
    return out


def label_set(pairs):
    def esc(v):
        return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return "{" + ",".join(f'{k}="{esc(v)}"' for k, v in pairs) + "}"


def labels(a, pod):
    return label_set((("job", JOB), ("instance", a.instance), ("namespace", a.namespace),
                      ("pod", pod), ("container", a.container)))


def write_gauge_ones(name, help_text, series, times, out):
    """A gauge family of value 1 at every time, one series per label set."""
    out.write(f"# HELP {name} {help_text}\n# TYPE {name} gauge\n")
    for ls in series:
        out.write("".join(f"{name}{ls} 1 {t}\n" for t in times))


def write_openmetrics(a, traces, out):
    # Families one after the other; in each, a series' samples together and in time order.
    out.write(f"# HELP {CPU} Cumulative cpu time consumed by the container in core-seconds\n")
    out.write(f"# TYPE {CPU} counter\n")
    for pod in a.pods:
        ls = labels(a, pod)
        out.write("".join(f"{CPU}_total{ls} {c!r} {t}\n" for t, c, _ in traces[pod]))
    out.write(f"# HELP {MEMORY} Current working set of the container in bytes\n")
    out.write(f"# TYPE {MEMORY} gauge\n")
    for pod in a.pods:
        ls = labels(a, pod)
        out.write("".join(f"{MEMORY}{ls} {m} {t}\n" for t, _, m in traces[pod]))
    times = [t for t, _, _ in traces[a.pods[0]]]
    if a.owner:
        kind, name = a.owner
        write_gauge_ones("kube_pod_owner", "Information about the Pod's owner.", [
            label_set((("job", "kube-state-metrics"), ("namespace", a.namespace), ("pod", pod),
                       ("owner_kind", kind), ("owner_name", name), ("owner_is_controller", "true")))
            for pod in a.pods], times, out)
    if a.pod_labels:
        write_gauge_ones("up", "The scrape target is up.", [
            label_set((("job", "kubernetes-pods"), ("kubernetes_namespace", a.namespace),
                       ("kubernetes_pod_name", pod))
                      + tuple((f"pod_label_{k}", v) for k, v in a.pod_labels))
            for pod in a.pods], times, out)
    out.write("# EOF\n")


def expected(a, traces):
    per_hour = HOUR // a.step
    result = {}
    for pod in a.pods:
        samples = traces[pod]  # samples[i] is at start + (i + 1) * step
        hours = []
        for h in range(a.days * 24):
            last = (h + 1) * per_hour - 1       # the sample at the hour's end T
            first = last - per_hour             # the one at T - 1h (-1: the start, counter 0)
            before = samples[first][1] if first >= 0 else 0.0
            window = samples[max(first, 0):last + 1]
            hours.append({"end": samples[last][0],
                          "cpu_rate": (samples[last][1] - before) / HOUR,
                          "memory_max_bytes": max(m for _, _, m in window)})
        result[pod] = hours
    return {"namespace": a.namespace, "container": a.container, "instance": a.instance,
            "job": JOB, "step": a.step, "start": a.end - a.days * DAY, "end": a.end,
            "pods": result}


def samples(a, traces):
    """Per pod [[t, cpu rate of the step ending at t, memory bytes at t], ...], oldest first."""
    result = {}
    for pod in a.pods:
        previous = 0.0
        rows = []
        for t, counter, memory in traces[pod]:
            rows.append([t, (counter - previous) / a.step, memory])
            previous = counter
        result[pod] = rows
    return {"namespace": a.namespace, "container": a.container, "step": a.step,
            "start": a.end - a.days * DAY, "end": a.end, "pods": result}


def main(argv):
    a = parse_args(argv)
    traces = {pod: trace(a, pod) for pod in a.pods}
    if a.print_samples:
        json.dump(samples(a, traces), sys.stdout, sort_keys=True)
        sys.stdout.write("\n")
    elif a.print_expected:
        json.dump(expected(a, traces), sys.stdout, sort_keys=True)
        sys.stdout.write("\n")
    else:
        write_openmetrics(a, traces, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1:])
