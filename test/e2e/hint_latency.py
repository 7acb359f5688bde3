#!/usr/bin/env python3
"""Measures the hint path: N times, a user PATCH resets a Deployment's cpu request, and we time
from the PATCH returning to the API server storing the declared value again (seen on a watch from
the PATCH's resourceVersion, so polling adds no delay). Prints p50/p99/max in milliseconds and
exits 1 when any edit was not restored within the timeout.
Usage: hint_latency.py CLUSTER_DIR NAMESPACE DEPLOYMENT CONTAINER DECLARED_CPU COUNT"""
import json
import os
import ssl
import sys
import time
import urllib.request

cluster, ns, name, container, declared, count = sys.argv[1:7]
count = int(count)
port = open(os.path.join(cluster, "apiserver.port")).read().strip()
base = "https://127.0.0.1:%s/apis/apps/v1/namespaces/%s/deployments" % (port, ns)
pki = os.path.join(cluster, "pki")
context = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
context.load_cert_chain(os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))


def request(method, url, body=None, content_type="application/json"):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": content_type})
    return urllib.request.urlopen(req, context=context, timeout=30)


def cpu_of(deployment):
    for c in deployment["spec"]["template"]["spec"]["containers"]:
        if c["name"] == container:
            return c.get("resources", {}).get("requests", {}).get("cpu")
    return None


samples = []
for i in range(count):
    user_value = "%dm" % (901 + i % 50)
    patch = {"spec": {"template": {"spec": {"containers": [
        {"name": container, "resources": {"requests": {"cpu": user_value}}}]}}}}
    with request("PATCH", base + "/" + name + "?fieldManager=user", patch,
                 "application/strategic-merge-patch+json") as answer:
        stored = json.load(answer)
    written = time.monotonic()
    if cpu_of(stored) == declared:
        samples.append(0.0)  # restored before the PATCH returned (not expected in Reconcile mode)
        continue
    rv = stored["metadata"]["resourceVersion"]
    watch = "%s?watch=1&fieldSelector=metadata.name%%3D%s&resourceVersion=%s&timeoutSeconds=30" % (
        base, name, rv)
    restored = None
    with request("GET", watch) as stream:
        for line in stream:
            event = json.loads(line)
            if event["type"] in ("ADDED", "MODIFIED") and cpu_of(event["object"]) == declared:
                restored = time.monotonic()
                break
    if restored is None:
        print("edit %d: not restored within 30 s" % i)
        sys.exit(1)
    samples.append((restored - written) * 1000.0)

samples.sort()
pick = lambda q: samples[min(len(samples) - 1, int(q * len(samples)))]
print("hint path: %d edits restored; p50 %.1f ms, p99 %.1f ms, max %.1f ms" % (
    len(samples), pick(0.50), pick(0.99), samples[-1]))
