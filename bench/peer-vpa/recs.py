#!/usr/bin/env python3
"""Recommendations of vscaler and of VerticalPodAutoscaler, side by side (bench/sections/vpa.sh).

  recs.py sample T VSC_JSON VPA_JSON    one poll: `kubectl get vsc|vpa -A -o json` files ->
                                        "T<TAB>system<TAB>namespace<TAB>container<TAB>resource
                                        <TAB>bound<TAB>value" lines (cores, bytes) on stdout
  recs.py report SAMPLES TRACES OUTDIR  the section's rows: OUTDIR/vscaler and OUTDIR/peer, each
                                        "id<TAB>label<TAB>value" (bench/lib.sh's table_rows)
  recs.py counts RS_JSON EVENTS_JSON DEPLOYMENT...
                                        per DEPLOYMENT "name created rollouts evictions resizes":
                                        pods its ReplicaSets created (SuccessfulCreate events),
                                        its ReplicaSets less one, EvictedByVPA and
                                        InPlaceResizedByVPA events on its pods
  recs.py carry-sample T PODS_JSON OBJECTS_JSON
                                        one poll of a namespace: per VerticalScaler or VPA,
                                        "T<TAB>deployment<TAB>cpu target<TAB>cpu requests"
                                        (container app; the requests, comma-separated, of its
                                        running pods as the kubelet reports them)
  recs.py carry CARRY STEP_T DEPLOYMENT...
                                        per DEPLOYMENT "name<TAB>reflect<TAB>carry<TAB>lag" (s):
                                        from STEP_T (a step up) to the first target over 1.1 x
                                        the last before it; to the first poll where 3 pods all
                                        request over 1.1 x the largest request before it; the
                                        second less the first ("-" when it did not happen)

OUTDIR/offsets, when present, holds "system<TAB>seconds" lines: when that system started, on
the samples' clock (the first target is counted from there).
TRACES is "namespace<TAB>trace<TAB>change time (s, or - for none)<TAB>direction (+1/-1/0)"
lines. A trace's change "reflects" in a system at the first sample after the change whose
target differs from the last target before it by more than 10 % in the direction of the change.
"""
import json
import re
import sys

UNITS = {"": 1, "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
         "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
BOUNDS = ("target", "lowerBound", "upperBound")


def quantity(q):
    m = re.fullmatch(r"([0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)", str(q))
    return float(m.group(1)) * UNITS[m.group(2)]


def sample(t, vsc_file, vpa_file):
    for system, path in (("vscaler", vsc_file), ("vpa", vpa_file)):
        with open(path) as f:
            items = json.load(f).get("items", [])
        for item in items:
            ns = item["metadata"]["namespace"]
            rec = (item.get("status") or {}).get("recommendation") or {}
            for c in rec.get("containerRecommendations") or []:
                for bound in BOUNDS:
                    for resource, q in (c.get(bound) or {}).items():
                        print(f"{t}\t{system}\t{ns}\t{c['containerName']}\t{resource}\t{bound}\t"
                              f"{quantity(q)!r}")


def report(samples_file, traces_file, outdir):
    # series[(system, ns, container, resource, bound)] = [(t, value)] in time order
    series = {}
    with open(samples_file) as f:
        for line in f:
            t, system, ns, container, resource, bound, value = line.rstrip("\n").split("\t")
            series.setdefault((system, ns, container, resource, bound), []).append(
                (float(t), float(value)))
    traces = []
    with open(traces_file) as f:
        for line in f:
            ns, name, change, direction = line.rstrip("\n").split("\t")
            traces.append((ns, name, None if change == "-" else float(change), int(direction)))
    offset = {"vscaler": 0.0, "vpa": 0.0}
    try:
        with open(f"{outdir}/offsets") as f:
            for line in f:
                system, seconds = line.split()
                offset[system] = float(seconds)
    except FileNotFoundError:
        pass
    rows = {"vscaler": [], "vpa": []}
    missing = []
    for system in rows:
        out = rows[system]
        for ns, name, change, direction in traces:
            containers = sorted({k[2] for k in series if k[0] == system and k[1] == ns})
            if not containers:
                missing.append(f"{system} {name}")
            for container in containers:
                who = name if len(containers) == 1 else f"{name} {container}"
                for resource, unit, scale in (("cpu", "m", 1e3), ("memory", "Mi", 2**-20)):
                    for bound in BOUNDS:
                        s = series.get((system, ns, container, resource, bound))
                        if s:
                            out.append((f"{name}.{container}.{resource}.{bound}",
                                        f"vpa {who}: {resource} {bound} at the end ({unit})",
                                        s[-1][1] * scale))
                    s = series.get((system, ns, container, resource, "target"))
                    if s and name == "steady":
                        out.append((f"{name}.{container}.{resource}.first",
                                    f"vpa {who}: first {resource} target after the start (s)",
                                    s[0][0] - offset[system]))
                    if s and change is not None and direction:
                        before = [v for t, v in s if t < change]
                        if before:
                            base = before[-1]
                            hit = next((t - change for t, v in s if t >= change and
                                        (v - base) * direction > 0.1 * base), None)
                            if hit is not None:
                                out.append((f"{name}.{container}.{resource}.reflect",
                                            f"vpa {who}: {resource} target reflects the change (s)",
                                            hit))
    for system, name in (("vscaler", "vscaler"), ("vpa", "peer")):
        with open(f"{outdir}/{name}", "w") as f:
            for id_, label, value in rows[system]:
                f.write(f"{id_}\t{label}\t{value:.3f}\n")
    if missing:
        print("recs.py: no recommendation from " + ", ".join(missing), file=sys.stderr)
        sys.exit(1)


def counts(rs_file, events_file, deployments):
    with open(rs_file) as f:
        owner = {}
        for rs in json.load(f)["items"]:
            refs = rs["metadata"].get("ownerReferences") or [{}]
            owner[rs["metadata"]["name"]] = refs[0].get("name")
    with open(events_file) as f:
        events = json.load(f)["items"]
    for d in deployments:
        sets = [name for name, o in owner.items() if o == d]
        n = {"created": 0, "evicted": 0, "resized": 0}
        for e in events:
            obj = e.get("involvedObject") or {}
            times = e.get("count") or 1
            if e.get("reason") == "SuccessfulCreate" and obj.get("name") in sets:
                n["created"] += times
            elif obj.get("kind") == "Pod" and any(obj.get("name", "").startswith(s + "-") for s in sets):
                if e.get("reason") == "EvictedByVPA":
                    n["evicted"] += times
                elif e.get("reason") == "InPlaceResizedByVPA":
                    n["resized"] += times
        print(d, n["created"], max(len(sets) - 1, 0), n["evicted"], n["resized"])


def carry_sample(t, pods_file, objects_file):
    with open(pods_file) as f:
        pods = json.load(f).get("items", [])
    with open(objects_file) as f:
        objects = json.load(f).get("items", [])
    requests = {}
    for pod in pods:
        meta, status = pod["metadata"], pod.get("status") or {}
        if meta.get("deletionTimestamp") or status.get("phase") != "Running":
            continue
        app = (meta.get("labels") or {}).get("app")
        # What the kubelet reports the container runs with; the spec until it does.
        reported = {c["name"]: (c.get("resources") or {}).get("requests") or {}
                    for c in status.get("containerStatuses") or []}
        spec = {c["name"]: (c.get("resources") or {}).get("requests") or {}
                for c in pod["spec"]["containers"]}
        cpu = reported.get("app", {}).get("cpu") or spec.get("app", {}).get("cpu")
        if app and cpu:
            requests.setdefault(app, []).append(quantity(cpu))
    for obj in objects:
        spec = obj.get("spec") or {}
        name = (spec.get("targetRef") or {}).get("name") or spec.get("deploymentName")
        target = None
        for c in ((obj.get("status") or {}).get("recommendation") or {}).get(
                "containerRecommendations") or []:
            if c.get("containerName") == "app" and "cpu" in (c.get("target") or {}):
                target = quantity(c["target"]["cpu"])
        if name and target is not None:
            cpus = ",".join(repr(v) for v in sorted(requests.get(name, [])))
            print(f"{t}\t{name}\t{target!r}\t{cpus}")


def carry(carry_file, step, deployments):
    step = float(step)
    rows = {}
    with open(carry_file) as f:
        for line in f:
            t, name, target, cpus = line.rstrip("\n").split("\t")
            rows.setdefault(name, []).append(
                (float(t), float(target), [float(v) for v in cpus.split(",") if v]))
    for name in deployments:
        series = sorted(rows.get(name, []))
        before = [r for r in series if r[0] < step]
        reflect = carried = None
        if step >= 0 and before:
            base_target = before[-1][1]
            base_request = max(before[-1][2], default=0.0)
            reflect = next((t for t, target, _ in series
                            if t >= step and target > 1.1 * base_target), None)
            carried = next((t for t, _, cpus in series if t >= step and len(cpus) >= 3 and
                            all(v > 1.1 * base_request for v in cpus)), None)
        def fmt(v):
            return "-" if v is None else f"{v:.1f}"
        lag = None if reflect is None or carried is None else carried - reflect
        print(f"{name}\t{fmt(None if reflect is None else reflect - step)}\t"
              f"{fmt(None if carried is None else carried - step)}\t{fmt(lag)}")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "sample":
        sample(*sys.argv[2:])
    elif len(sys.argv) == 5 and sys.argv[1] == "report":
        report(*sys.argv[2:])
    elif len(sys.argv) >= 5 and sys.argv[1] == "counts":
        counts(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif len(sys.argv) == 5 and sys.argv[1] == "carry-sample":
        carry_sample(*sys.argv[2:])
    elif len(sys.argv) >= 4 and sys.argv[1] == "carry":
        carry(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
