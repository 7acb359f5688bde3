#!/usr/bin/env python3
"""Records real AdmissionReview request bodies from the local API server for the handlers' unit
tests (test/data/admission/). Serves HTTPS on 127.0.0.1:PORT with CERT_DIR/tls.{crt,key}, allows
everything, and writes each body to OUT_DIR/NNN-<operation>-<resource>.json. Run by
test/tools/record_admission.sh; the recordings are committed, this is only how they were made."""
import http.server
import json
import os
import ssl
import sys
import threading

port, cert_dir, out_dir = int(sys.argv[1]), sys.argv[2], sys.argv[3]
counter = [0]
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        review = json.loads(body)
        request = review["request"]
        with lock:
            counter[0] += 1
            name = "%03d-%s-%s.json" % (counter[0], request["operation"].lower(),
                                        request["resource"]["resource"])
        with open(os.path.join(out_dir, name), "w") as f:
            json.dump(review, f, indent=1, sort_keys=True)
        answer = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                  "response": {"uid": request["uid"], "allowed": True}}
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(os.path.join(cert_dir, "tls.crt"), os.path.join(cert_dir, "tls.key"))
server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
