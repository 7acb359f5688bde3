#!/usr/bin/env python3
"""A stand-in for vscaler's webhook server in the certs/manifests e2e tests.

Serves HTTPS on 127.0.0.1 from --cert-dir (tls.crt, tls.key) and, like vscaler, reloads them when
they change, without a restart: every new connection checks the files and switches to the new
pair once it loads and matches (a half-replaced pair keeps the old one). Answers every
AdmissionReview on /mutate-deployments, /mutate-workloads and /validate-verticalscalers with
allowed: true and the
warning "fake-vscaler reached PATH OPERATION NAMESPACE/NAME", and appends the same line to
--log. Closes each connection after a few requests, so clients handshake (and verify the
certificate) again all the time and a certificate the client does not trust shows at once. Other paths get 404, bodies that are not an AdmissionReview 400. Standard library only.
"""
import argparse
import http.server
import json
import os
import ssl
import sys
import threading

PATHS = ("/mutate-deployments", "/mutate-workloads", "/mutate-pods", "/validate-verticalscalers")


class Certs:
    def __init__(self, cert_dir):
        self.crt = os.path.join(cert_dir, "tls.crt")
        self.key = os.path.join(cert_dir, "tls.key")
        self.lock = threading.Lock()
        self.stamp = None
        self.context = None
        self.loads = 0
        self.refresh()
        if self.context is None:
            raise SystemExit(f"cannot load {self.crt} / {self.key}")

    def _stamp(self):
        try:
            a, b = os.stat(self.crt), os.stat(self.key)
        except OSError:
            return None
        return (a.st_mtime_ns, a.st_size, a.st_ino, b.st_mtime_ns, b.st_size, b.st_ino)

    def refresh(self):
        with self.lock:
            stamp = self._stamp()
            if stamp is None or stamp == self.stamp:
                return self.context
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            try:
                context.load_cert_chain(self.crt, self.key)  # fails on a mismatched pair
            except (ssl.SSLError, OSError):
                return self.context
            self.stamp = stamp
            self.context = context
            self.loads += 1
            return context


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cert-dir", required=True)
    parser.add_argument("--port", type=int, default=0, help="default: any free port")
    parser.add_argument("--port-file", help="write the bound port here")
    parser.add_argument("--log", help="append one line per admission review")
    parser.add_argument("--max-requests-per-connection", type=int, default=5,
                        help="close a keep-alive connection after this many requests, so that "
                             "clients handshake again often (as cpp-httplib does)")
    args = parser.parse_args()
    certs = Certs(args.cert_dir)
    log_lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self):
            self.request.do_handshake()
            self.served = 0
            super().setup()

        def do_POST(self):
            path = self.path.split("?", 1)[0]
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            if path not in PATHS:
                self.send_error(404)
                return
            try:
                request = json.loads(body)["request"]
                uid = request["uid"]
            except (ValueError, KeyError, TypeError):
                self.send_error(400, "not an AdmissionReview")
                return
            obj = request.get("object") or request.get("oldObject") or {}
            meta = obj.get("metadata") or {}
            line = "fake-vscaler reached %s %s %s/%s" % (
                path, request.get("operation"), request.get("namespace") or meta.get("namespace"),
                request.get("name") or meta.get("name") or meta.get("generateName"))
            if args.log:
                with log_lock, open(args.log, "a") as out:
                    out.write(line + "\n")
            answer = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                 "response": {"uid": uid, "allowed": True, "warnings": [line]}}).encode()
            self.served += 1
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            if self.served >= args.max_requests_per_connection:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            self.wfile.write(answer)

        def do_GET(self):
            self.send_error(404)

        def log_message(self, fmt, *values):
            pass

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True

        def get_request(self):
            sock, address = self.socket.accept()
            context = certs.refresh()
            return context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), address

        def handle_error(self, request, client_address):
            pass  # failed handshakes and dropped connections are the client's business

    server = Server(("127.0.0.1", args.port), Handler)
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as out:
            out.write(str(server.server_address[1]))
        os.replace(args.port_file + ".tmp", args.port_file)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
