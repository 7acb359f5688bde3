#!/usr/bin/env python3
"""Deployment writes through the API server, each checked for vscaler's Auto-mode patch, for the
webhook burst and hostile-client end-to-end tests. Talks to the API server of a local cluster
(test/cluster/up.sh) with its admin client certificate.

  webhook_writes.py setup CLUSTER_DIR NS COUNT CPU
      COUNT Deployments d0..d{COUNT-1} and Auto-mode VerticalScalers s0.. fixing requests.cpu of
      container "app" to CPU; waits (60 s at most) until every Deployment carries CPU. The
      Deployments are paused: a write then costs the API server its admission chain and one etcd
      write, not a new ReplicaSet and a pod replaced (500 writes at once otherwise bring ~2,000
      more writes from the controllers, and on a slow 2-core machine the API server's own CPU
      pushed a few webhook calls past their 2 s timeout: CI, stop 37, 4 of 500 failed open at a
      write p50 of 3.5 s). The webhook patches paused Deployments like any other.
  webhook_writes.py burst CLUSTER_DIR NS COUNT CPU
      COUNT threads, one connection each, released together: each PATCHes its own Deployment's
      template (a new annotation and requests.cpu 100m). Every write must succeed and come back
      with CPU (the webhook's patch).
  webhook_writes.py paced CLUSTER_DIR NS COUNT CPU SECONDS
      Writes like burst, 4 at a time, for SECONDS; each write's latency is measured.

Prints one line "webhook_writes mode=... ok=N failed=N lost=N p50_ms=... p99_ms=... max_ms=..."
(lost: the write succeeded without the patch) and exits 1 when any write failed or was lost."""
import http.client
import json
import os
import ssl
import sys
import threading
import time


def context_for(cluster):
    pki = os.path.join(cluster, "pki")
    context = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
    context.load_cert_chain(os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))
    return context


class Api:
    """One keep-alive connection to the API server."""

    def __init__(self, cluster):
        self.port = int(open(os.path.join(cluster, "apiserver.port")).read().strip())
        self.context = context_for(cluster)
        self.connection = None

    def call(self, method, path, body=None, content_type="application/json"):
        for attempt in range(3):
            if self.connection is None:
                self.connection = http.client.HTTPSConnection(
                    "127.0.0.1", self.port, context=self.context, timeout=30)
            try:
                data = json.dumps(body).encode() if body is not None else None
                self.connection.request(method, path, body=data,
                                        headers={"Content-Type": content_type})
                answer = self.connection.getresponse()
                return answer.status, answer.read()
            except (http.client.HTTPException, OSError):
                self.connection.close()
                self.connection = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")


def deployments(ns):
    return "/apis/apps/v1/namespaces/%s/deployments" % ns


def cpu_of(deployment):
    for container in deployment["spec"]["template"]["spec"]["containers"]:
        if container["name"] == "app":
            return container.get("resources", {}).get("requests", {}).get("cpu")
    return None


def parallel(count, threads, work):
    """Runs work(i) for i in range(count) on `threads` threads."""
    errors = []
    next_index = [0]
    lock = threading.Lock()

    def run():
        while True:
            with lock:
                i = next_index[0]
                next_index[0] += 1
            if i >= count:
                return
            try:
                work(i)
            except Exception as error:  # reported and counted by the caller
                with lock:
                    errors.append("%d: %s" % (i, error))

    pool = [threading.Thread(target=run) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return errors


def setup(cluster, ns, count, cpu):
    local = threading.local()

    def api():
        if not hasattr(local, "api"):
            local.api = Api(cluster)
        return local.api

    def create(i):
        scaler = {"apiVersion": "scaling.vscaler.dev/v1beta1", "kind": "VerticalScaler",
                  "metadata": {"name": "s%d" % i},
                  "spec": {"deploymentName": "d%d" % i, "updateMode": "Auto",
                           "containers": [{"name": "app", "requests": {"cpu": cpu}}]}}
        status, body = api().call(
            "POST", "/apis/scaling.vscaler.dev/v1beta1/namespaces/%s/verticalscalers" % ns, scaler)
        if status not in (201, 409):
            raise RuntimeError("scaler s%d: HTTP %d %s" % (i, status, body[:200]))
        deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d%d" % i},
                      "spec": {"replicas": 1, "paused": True, "selector": {"matchLabels": {"app": "d%d" % i}},
                               "template": {"metadata": {"labels": {"app": "d%d" % i}},
                                            "spec": {"containers": [
                                                {"name": "app",
                                                 "image": "registry.k8s.io/pause:3.10"}]}}}}
        status, body = api().call("POST", deployments(ns), deployment)
        if status not in (201, 409):
            raise RuntimeError("deployment d%d: HTTP %d %s" % (i, status, body[:200]))

    errors = parallel(count, 8, create)
    if errors:
        print("setup failed: %s" % "; ".join(errors[:5]))
        return 1
    deadline = time.monotonic() + 60
    lister = Api(cluster)
    while True:
        status, body = lister.call("GET", deployments(ns))
        items = json.loads(body)["items"] if status == 200 else []
        ready = sum(1 for d in items if cpu_of(d) == cpu)
        if ready == count:
            print("webhook_writes mode=setup deployments=%d scaled=%d" % (count, ready))
            return 0
        if time.monotonic() > deadline:
            print("setup: only %d of %d Deployments carry cpu %s after 60 s" % (ready, count, cpu))
            return 1
        time.sleep(0.5)


def write(api, ns, i, cpu, stamp):
    """One template change resetting cpu; returns (ok, patched, seconds, error)."""
    patch = {"spec": {"template": {
        "metadata": {"annotations": {"vscaler.test/write": stamp}},
        "spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "100m"}}}]}}}}
    start = time.monotonic()
    status, body = api.call("PATCH", "%s/d%d?fieldManager=e2e-user" % (deployments(ns), i), patch,
                            "application/strategic-merge-patch+json")
    seconds = time.monotonic() - start
    if status != 200:
        return False, False, seconds, "d%d: HTTP %d %s" % (i, status, body[:200])
    return True, cpu_of(json.loads(body)) == cpu, seconds, None


def report(mode, results):
    ok = sum(1 for r in results if r[0])
    failed = len(results) - ok
    lost = sum(1 for r in results if r[0] and not r[1])
    latencies = sorted(r[2] * 1000 for r in results) or [0.0]

    def pick(q):
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))]

    print("webhook_writes mode=%s ok=%d failed=%d lost=%d p50_ms=%.1f p99_ms=%.1f max_ms=%.1f"
          % (mode, ok, failed, lost, pick(0.5), pick(0.99), latencies[-1]))
    for r in results:
        if r[3]:
            print("  " + r[3])
            break
    return 0 if failed == 0 and lost == 0 else 1


def burst(cluster, ns, count, cpu):
    stamp = str(time.time_ns())
    apis = [Api(cluster) for _ in range(count)]
    for api in apis:  # connect (and handshake) before the release, so the writes are concurrent
        api.call("GET", "/readyz")
    barrier = threading.Barrier(count)
    results = [None] * count

    def run(i):
        barrier.wait()
        try:
            results[i] = write(apis[i], ns, i, cpu, stamp)
        except Exception as error:  # counted as a failed write
            results[i] = (False, False, 0.0, "d%d: %s" % (i, error))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return report("burst", results)


def paced(cluster, ns, count, cpu, seconds):
    results = []
    lock = threading.Lock()
    deadline = time.monotonic() + seconds
    counter = [0]

    def run(worker):
        api = Api(cluster)
        while time.monotonic() < deadline:
            with lock:
                n = counter[0]
                counter[0] += 1
            try:
                result = write(api, ns, n % count, cpu, "%d-%d" % (worker, n))
            except Exception as error:  # counted as a failed write
                result = (False, False, 0.0, "write %d: %s" % (n, error))
            with lock:
                results.append(result)
            time.sleep(0.02)

    threads = [threading.Thread(target=run, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return report("paced", results)


def main(argv):
    if len(argv) < 6:
        print(__doc__)
        return 2
    mode, cluster, ns, count, cpu = argv[1], argv[2], argv[3], int(argv[4]), argv[5]
    if mode == "setup":
        return setup(cluster, ns, count, cpu)
    if mode == "burst":
        return burst(cluster, ns, count, cpu)
    if mode == "paced" and len(argv) > 6:
        return paced(cluster, ns, count, cpu, float(argv[6]))
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
