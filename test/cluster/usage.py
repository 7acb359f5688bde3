#!/usr/bin/env python3
"""The simulated usage of the local cluster's pods: the ClusterResourceUsage `vscaler-usage`.

kwok computes each container's CPU and memory usage from ClusterResourceUsage objects, but when
several match a pod it takes whichever its cache lists first (a map: no defined order). So the
cluster has exactly one, covering every pod: its CEL expressions first look the container up in
a table keyed "NAMESPACE/APP/CONTAINER" (APP: the pod's `app` label; CONTAINER may be `*`: every
container of those pods not named), then fall back to the pod annotations
kwok.x-k8s.io/usage-cpu / usage-memory (kwok's stock behaviour), then to 1m / 1Mi.
The table lives in the object's annotation usage.vscaler.dev/table, so each change is a
read-modify-write of one object; it never touches a pod or a pod template (a template change
would be a rollout).

Usage (JSON on stdin/stdout; test/cluster/up.sh and test/e2e/usage_lib.sh drive it):
  usage.py render                                       the object with an empty table
  usage.py set NAMESPACE APP CONTAINER CPU MEMORY <cur  CPU/MEMORY a quantity, or - to leave it
  usage.py clear NAMESPACE [APP] <cur                   forget a namespace's (or one app's) rows
"""
import json
import re
import sys

NAME = "vscaler-usage"
TABLE = "usage.vscaler.dev/table"
# resource.Quantity syntax: a decimal number with an optional binary or decimal suffix or exponent.
QUANTITY = re.compile(r"^[+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")


def fail(message):
    print(f"usage.py: {message}", file=sys.stderr)
    sys.exit(2)


def cel_string(s):
    # JSON string escapes are valid CEL string literal escapes.
    return json.dumps(s)


def expression(table, resource, annotation, default):
    """CEL: the table's value for this container, else the pod annotation, else DEFAULT."""
    rows = {k: v[resource] for k, v in sorted(table.items()) if v.get(resource)}
    fallback = (f'{cel_string(annotation)} in pod.metadata.annotations'
                f' ? Quantity(pod.metadata.annotations[{cel_string(annotation)}])'
                f' : Quantity({cel_string(default)})')
    if not rows:
        return fallback
    literal = "{" + ", ".join(f"{cel_string(k)}: Quantity({cel_string(q)})" for k, q in rows.items()) + "}"
    app = 'pod.metadata.namespace + "/" + pod.metadata.labels["app"] + "/"'
    by_name, by_star = f"({app} + container.name)", f'({app} + "*")'
    return (f'!("app" in pod.metadata.labels) ? ({fallback})'
            f' : {by_name} in {literal} ? {literal}[{by_name}]'
            f' : {by_star} in {literal} ? {literal}[{by_star}]'
            f' : ({fallback})')


def render(table, current=None):
    obj = current or {"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "ClusterResourceUsage",
                      "metadata": {"name": NAME}}
    obj.setdefault("metadata", {}).setdefault("annotations", {})[TABLE] = json.dumps(table, sort_keys=True)
    obj["spec"] = {"usages": [{"usage": {
        "cpu": {"expression": expression(table, "cpu", "kwok.x-k8s.io/usage-cpu", "1m")},
        "memory": {"expression": expression(table, "memory", "kwok.x-k8s.io/usage-memory", "1Mi")},
    }}]}
    return obj


def load_current():
    try:
        obj = json.load(sys.stdin)
    except json.JSONDecodeError as e:
        fail(f"stdin is not the ClusterResourceUsage {NAME} as JSON: {e}")
    if obj.get("metadata", {}).get("name") != NAME:
        fail(f"stdin is not the ClusterResourceUsage {NAME}")
    try:
        table = json.loads(obj["metadata"].get("annotations", {}).get(TABLE, "{}"))
    except json.JSONDecodeError as e:
        fail(f"annotation {TABLE} of {NAME} is not JSON: {e}")
    return obj, table


def main(argv):
    if argv[:1] == ["render"] and len(argv) == 1:
        table, current = {}, None
    elif argv[:1] == ["set"] and len(argv) == 6:
        _, ns, app, container, cpu, memory = argv
        if not DNS_LABEL.match(ns):
            fail(f"namespace {ns!r} is not a DNS label")
        if not app or not LABEL_VALUE.match(app):
            fail(f"app {app!r} is not a label value (the pods' app label)")
        if container != "*" and not DNS_LABEL.match(container):
            fail(f"container {container!r} is neither a container name nor *")
        for what, q in (("cpu", cpu), ("memory", memory)):
            if q != "-" and not QUANTITY.match(q):
                fail(f"{what} {q!r} is not a quantity (e.g. 300m, 0.5, 400Mi) nor -")
        current, table = load_current()
        row = table.setdefault(f"{ns}/{app}/{container}", {})
        for what, q in (("cpu", cpu), ("memory", memory)):
            if q != "-":
                row[what] = q
    elif argv[:1] == ["clear"] and len(argv) in (2, 3):
        prefix = "/".join(argv[1:]) + "/"
        current, table = load_current()
        table = {k: v for k, v in table.items() if not k.startswith(prefix)}
    else:
        fail("usage: usage.py render | set NAMESPACE APP CONTAINER CPU MEMORY | clear NAMESPACE [APP]")
    json.dump(render(table, current), sys.stdout)
    print()


if __name__ == "__main__":
    main(sys.argv[1:])
