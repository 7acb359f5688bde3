#!/usr/bin/env python3
"""Helpers of the reliability end-to-end tests (test/e2e/reliability_*_test.sh): a small API
client on the local control plane's admin certificate, an edit loop that keeps writing
Deployments and counts what it wrote, and a convergence check.

Usage: reliability_kube.py CLUSTER_DIR COMMAND ARGS...
  bulk NS COUNT MODES                 COUNT Deployments d1..dN (container app, one env var) and
                                      scalers s1..sN declaring requests cpu/memory, modes taken
                                      in turn from the comma-separated MODES (Auto,Reconcile)
  edit NS COUNT STOP_FILE OUT [opts]  writes Deployments d1..dN round-robin until STOP_FILE
                                      exists; every write sets a new env value (a template
                                      change), every --reset-every'th also sets the cpu request
                                      away from the declared value. OUT gets per-Deployment
                                      counts (JSON). Options: --interval S, --reset-every N,
                                      --offset K (first Deployment), --field-manager NAME
  annotate NS COUNT STOP_FILE OUT     keeps changing an annotation of scalers s1..sN (each such
                                      write changes the scaler's resourceVersion, so a status
                                      write with the old one answers 409)
  load CERT KEY THREADS STOP_FILE OUT  THREADS clients with the given client certificate list
                                      all ConfigMaps as fast as they can (waiting a 429's
                                      Retry-After) until STOP_FILE exists, to saturate a priority
                                      level; OUT gets the answer codes and Retry-After values
  generations NS                      prints {name: generation} of the namespace's Deployments
  check NS                            exit 0 when every active scaler's Deployment carries its
                                      declared values and its status is Ready for its generation
                                      (a younger scaler of the same Deployment: Conflict); else
                                      prints what is wrong (at most 10 lines) and exits 1
"""
import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.request

CPU, MEMORY = "250m", "64Mi"  # what bulk's scalers declare (canonical: compared as text)


class Api:
    def __init__(self, cluster):
        self.port = open(os.path.join(cluster, "apiserver.port")).read().strip()
        pki = os.path.join(cluster, "pki")
        self.context = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
        self.context.load_cert_chain(os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))

    def url(self, path):
        return "https://127.0.0.1:%s%s" % (self.port, path)

    def call(self, method, path, body=None, content_type="application/json", timeout=30):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url(path), data=data, method=method,
                                         headers={"Content-Type": content_type})
        with urllib.request.urlopen(request, context=self.context, timeout=timeout) as answer:
            return json.load(answer)


def deployments(ns):
    return "/apis/apps/v1/namespaces/%s/deployments" % ns


def scalers(ns):
    return "/apis/scaling.vscaler.dev/v1beta1/namespaces/%s/verticalscalers" % ns


def app_resources(deployment):
    for container in deployment["spec"]["template"]["spec"]["containers"]:
        if container["name"] == "app":
            return container.get("resources", {})
    return {}


def bulk(api, ns, count, modes):
    modes = modes.split(",")
    for i in range(1, count + 1):
        name = "d%d" % i
        api.call("POST", deployments(ns), {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{
                                      "name": "app", "image": "registry.k8s.io/pause:3.10",
                                      "env": [{"name": "EDIT", "value": "0"}]}]}}}})
        api.call("POST", scalers(ns), {
            "apiVersion": "scaling.vscaler.dev/v1beta1", "kind": "VerticalScaler",
            "metadata": {"name": "s%d" % i},
            "spec": {"deploymentName": name, "updateMode": modes[(i - 1) % len(modes)],
                     "containers": [{"name": "app",
                                     "requests": {"cpu": CPU, "memory": MEMORY}}]}})


def edit(api, ns, count, stop_file, out, options):
    interval = float(options.get("--interval", "0"))
    reset_every = int(options.get("--reset-every", "2"))
    offset = int(options.get("--offset", "0"))
    manager = options.get("--field-manager", "e2e-editor")
    stats = {"d%d" % i: {"writes": 0, "resets": 0, "failed": 0, "uncertain": 0}
             for i in range(1, count + 1)}
    latencies = []
    n = 0
    while not os.path.exists(stop_file):
        name = "d%d" % ((n + offset) % count + 1)
        n += 1
        container = {"name": "app", "env": [{"name": "EDIT", "value": str(n)}]}
        if reset_every > 0 and n % reset_every == 0:
            container["resources"] = {"requests": {"cpu": "%dm" % (10 + n % 90)}}
        patch = {"spec": {"template": {"spec": {"containers": [container]}}}}
        start = time.monotonic()
        try:
            stored = api.call("PATCH", "%s/%s?fieldManager=%s" % (deployments(ns), name, manager),
                              patch, "application/strategic-merge-patch+json")
        except urllib.error.HTTPError as error:
            stats[name]["failed"] += 1  # answered: not written
            print("edit %s: HTTP %d" % (name, error.code), file=sys.stderr)
            time.sleep(0.2)
            continue
        except Exception as error:  # no answer: the write may or may not have happened
            stats[name]["uncertain"] += 1
            print("edit %s: %s" % (name, error), file=sys.stderr)
            time.sleep(0.2)
            continue
        latencies.append(time.monotonic() - start)
        stats[name]["writes"] += 1
        if app_resources(stored).get("requests", {}).get("cpu") != CPU:
            stats[name]["resets"] += 1  # stored away from the declared value: a needed change
        if interval > 0:
            time.sleep(interval)
    latencies.sort()
    summary = {"deployments": stats, "writes": sum(s["writes"] for s in stats.values()),
               "resets": sum(s["resets"] for s in stats.values()),
               "failed": sum(s["failed"] for s in stats.values()),
               "uncertain": sum(s["uncertain"] for s in stats.values()),
               "max_latency": latencies[-1] if latencies else 0}
    with open(out + ".tmp", "w") as f:
        json.dump(summary, f)
    os.rename(out + ".tmp", out)


def annotate(api, ns, count, stop_file, out):
    writes = failed = 0
    n = 0
    while not os.path.exists(stop_file):
        name = "s%d" % (n % count + 1)
        n += 1
        patch = {"metadata": {"annotations": {"e2e/touch": str(n)}}}
        try:
            api.call("PATCH", "%s/%s" % (scalers(ns), name), patch,
                     "application/merge-patch+json")
            writes += 1
        except Exception:
            failed += 1
            time.sleep(0.2)
    with open(out, "w") as f:
        json.dump({"writes": writes, "failed": failed}, f)


def load(api, cert, key, threads, stop_file, out):
    import collections
    import threading
    api.context.load_cert_chain(cert, key)
    codes, retry_after = collections.Counter(), collections.Counter()

    def run():
        while not os.path.exists(stop_file):
            try:
                api.call("GET", "/api/v1/configmaps", timeout=10)
                codes["200"] += 1
            except urllib.error.HTTPError as error:
                codes[str(error.code)] += 1
                wait = error.headers.get("Retry-After")
                retry_after[str(wait)] += 1
                # A polite client too: hammering would only drive the Retry-After APF computes
                # (doubling while rejections go on) towards its 32 s cap.
                time.sleep(float(wait or "1"))
            except Exception:
                codes["error"] += 1
                time.sleep(0.1)

    workers = [threading.Thread(target=run) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    with open(out, "w") as f:
        json.dump({"codes": codes, "retry_after": retry_after}, f)


def generations(api, ns):
    items = api.call("GET", deployments(ns))["items"]
    print(json.dumps({d["metadata"]["name"]: d["metadata"]["generation"] for d in items}))


def check(api, ns):
    deploys = {d["metadata"]["name"]: d for d in api.call("GET", deployments(ns))["items"]}
    items = api.call("GET", scalers(ns))["items"]
    # One scaler per Deployment: the oldest (creationTimestamp, then name) is active.
    active = {}
    for scaler in sorted(items, key=lambda s: (s["metadata"]["creationTimestamp"],
                                               s["metadata"]["name"])):
        active.setdefault(scaler["spec"]["deploymentName"], scaler["metadata"]["name"])
    problems = []
    for scaler in items:
        name = scaler["metadata"]["name"]
        spec = scaler["spec"]
        status = scaler.get("status", {})
        ready = [c for c in status.get("conditions", []) if c.get("type") == "Ready"]
        ready = ready[0] if ready else {}
        if status.get("observedGeneration") != scaler["metadata"]["generation"]:
            problems.append("%s: observedGeneration %s, generation %s" % (
                name, status.get("observedGeneration"), scaler["metadata"]["generation"]))
            continue
        if active[spec["deploymentName"]] != name:
            if ready.get("reason") != "Conflict":
                problems.append("%s: not active, but Ready reason %s" % (name, ready.get("reason")))
            continue
        target = deploys.get(spec["deploymentName"])
        if target is None:
            problems.append("%s: Deployment %s missing" % (name, spec["deploymentName"]))
            continue
        have = app_resources(target)
        for entry in spec["containers"]:
            for kind in ("requests", "limits"):
                for key, value in entry.get(kind, {}).items():
                    if str(have.get(kind, {}).get(key)) != str(value):
                        problems.append("%s: %s.%s is %s, declared %s" % (
                            name, kind, key, have.get(kind, {}).get(key), value))
        if ready.get("status") != "True":
            problems.append("%s: not Ready (%s)" % (name, ready.get("reason", "-")))
    for problem in problems[:10]:
        print(problem)
    if len(problems) > 10:
        print("... and %d more" % (len(problems) - 10))
    return 0 if not problems else 1


def main(argv):
    api = Api(argv[1])
    command, args = argv[2], argv[3:]
    options = {}
    while len(args) >= 2 and args[-2].startswith("--"):
        options[args[-2]] = args[-1]
        args = args[:-2]
    if command == "bulk":
        bulk(api, args[0], int(args[1]), args[2])
    elif command == "edit":
        edit(api, args[0], int(args[1]), args[2], args[3], options)
    elif command == "annotate":
        annotate(api, args[0], int(args[1]), args[2], args[3])
    elif command == "load":
        load(api, args[0], args[1], int(args[2]), args[3], args[4])
    elif command == "generations":
        generations(api, args[0])
    elif command == "check":
        return check(api, args[0])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
