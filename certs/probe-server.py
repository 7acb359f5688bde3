#!/usr/bin/env python3
"""A minimal admission webhook for certs/rotate.sh's "served" probe (see certs/lib.sh, probe).

Serves HTTPS on 127.0.0.1 with the certificate given, answers every AdmissionReview with
allowed: true and one warning (the probe looks for it in kubectl's output: the API server did
reach this server through the caBundle under test), and writes the port it bound to a file.
Runs until killed. Standard library only.
"""
import argparse
import http.server
import json
import os
import ssl
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cert", required=True, help="PEM certificate (chain) to serve")
    parser.add_argument("--key", required=True, help="PEM private key")
    parser.add_argument("--port-file", required=True, help="where to write the bound port")
    parser.add_argument("--warning", required=True, help="warning returned in every response")
    parser.add_argument("--port", type=int, default=0, help="port (default: any free one)")
    args = parser.parse_args()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            try:
                length = int(self.headers.get("Content-Length", "0"))
                if length > 7 * 1024 * 1024:
                    raise ValueError("body too large")
                review = json.loads(self.rfile.read(length))
                uid = review["request"]["uid"]
            except (ValueError, KeyError, TypeError) as error:
                self.send_error(400, str(error))
                return
            body = json.dumps({
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "response": {"uid": uid, "allowed": True, "warnings": [args.warning]},
            }).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, fmt, *values):
            pass

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(args.cert, args.key)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
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
