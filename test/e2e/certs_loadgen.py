#!/usr/bin/env python3
"""Sends AdmissionReviews straight to a webhook server at a steady rate and counts failures.

For certificate-rotation tests: each client thread keeps a TLS connection alive and reconnects
every --reconnect-every requests (a new handshake, so a new serving certificate is seen and
verified), trusting every CA certificate found in --ca-dir at that moment (ca.crt, ca-next.crt,
ca-old.crt: what a client with the published caBundle trusts during a rotation). A request fails
when the connection, the TLS verification or the HTTP exchange fails, the status is not 200, or
the response is not an AdmissionReview answering the request's uid.

Runs until --duration seconds pass or SIGTERM/SIGINT, then prints one JSON line:
{"sent": N, "ok": N, "failed": N, "rate": R, "handshakes": N, "errors": {message: count}}
and exits 1 when a request failed. Standard library only.
"""
import argparse
import http.client
import json
import os
import signal
import ssl
import sys
import threading
import time
import uuid

REVIEW = {
    "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
    "request": {
        "uid": "", "kind": {"group": "apps", "version": "v1", "kind": "Deployment"},
        "resource": {"group": "apps", "version": "v1", "resource": "deployments"},
        "requestKind": {"group": "apps", "version": "v1", "kind": "Deployment"},
        "requestResource": {"group": "apps", "version": "v1", "resource": "deployments"},
        "name": "load", "namespace": "loadgen", "operation": "CREATE",
        "userInfo": {"username": "loadgen"}, "dryRun": True,
        "object": {"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": "load", "namespace": "loadgen"},
                   "spec": {"selector": {"matchLabels": {"app": "load"}},
                            "template": {"metadata": {"labels": {"app": "load"}},
                                         "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]}}}},
        "oldObject": None, "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
    },
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--path", default="/mutate-deployments")
    parser.add_argument("--ca-dir", required=True, help="trusts ca.crt, ca-next.crt, ca-old.crt found here")
    parser.add_argument("--rate", type=float, default=500, help="requests per second, all clients")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--reconnect-every", type=int, default=50)
    parser.add_argument("--duration", type=float, default=0, help="seconds; 0 = until signalled")
    args = parser.parse_args()

    stop = threading.Event()
    lock = threading.Lock()
    stats = {"sent": 0, "ok": 0, "failed": 0, "handshakes": 0, "errors": {}}
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    def context():
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        found = False
        # In the order rotate.sh promotes them (ca.crt copied to ca-old.crt, then ca-next.crt
        # moved to ca.crt): read in another order, a promotion between two reads left this client
        # trusting the old CA alone while the server already served a certificate of the next.
        for name in ("ca-next.crt", "ca.crt", "ca-old.crt"):
            path = os.path.join(args.ca_dir, name)
            try:
                ctx.load_verify_locations(path)
                found = True
            except (OSError, ssl.SSLError):
                pass  # absent, or being replaced: the others still count
        if not found:
            raise ssl.SSLError("no CA certificate in " + args.ca_dir)
        return ctx

    def record(ok, error=None):
        with lock:
            stats["sent"] += 1
            if ok:
                stats["ok"] += 1
            else:
                stats["failed"] += 1
                stats["errors"][error] = stats["errors"].get(error, 0) + 1

    interval = args.clients / args.rate

    def client(index):
        conn, used = None, 0
        next_at = time.monotonic() + index * interval / args.clients
        while not stop.is_set():
            delay = next_at - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            next_at = max(next_at + interval, time.monotonic() - interval)
            try:
                if conn is None or used >= args.reconnect_every:
                    if conn is not None:
                        conn.close()
                    conn = http.client.HTTPSConnection(args.host, args.port, timeout=5, context=context())
                    conn.connect()
                    used = 0
                    with lock:
                        stats["handshakes"] += 1
                uid = str(uuid.uuid4())
                review = dict(REVIEW, request=dict(REVIEW["request"], uid=uid))
                conn.request("POST", args.path, body=json.dumps(review), headers={"Content-Type": "application/json"})
                response = conn.getresponse()
                body = response.read()
                used += 1
                if response.getheader("Connection", "").lower() == "close":
                    conn.close()
                    conn = None
                if response.status != 200:
                    record(False, f"HTTP {response.status}")
                    continue
                answer = json.loads(body).get("response", {})
                if answer.get("uid") != uid:
                    record(False, "response uid does not match")
                    continue
                record(True)
            except (OSError, ssl.SSLError, http.client.HTTPException, ValueError) as error:
                record(False, type(error).__name__ + ": " + str(error)[:120])
                if conn is not None:
                    conn.close()
                conn = None

    started = time.monotonic()
    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(args.clients)]
    for thread in threads:
        thread.start()
    while not stop.wait(0.2):
        if args.duration > 0 and time.monotonic() - started >= args.duration:
            break
    stop.set()
    for thread in threads:
        thread.join(timeout=10)
    elapsed = time.monotonic() - started
    stats["rate"] = round(stats["sent"] / elapsed, 1) if elapsed > 0 else 0
    print(json.dumps(stats), flush=True)
    return 1 if stats["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
