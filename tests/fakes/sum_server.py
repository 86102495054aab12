#!/usr/bin/env python3
"""An HTTP server for tests/integration/lambda.sh, run inside the fake's MicroVM:
python3 sum_server.py PORT.  POST answers the sha256 and size of the body it got
(Content-Length or chunked) and the X-aws-proxy-* headers that reached it (none
should: the endpoint takes them off)."""
import hashlib
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_POST(self):
        if "chunked" in self.headers.get("Transfer-Encoding", ""):
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                body += self.rfile.read(size)
                self.rfile.readline()
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        leaked = ",".join(k for k in self.headers if k.lower().startswith("x-aws-proxy")
                          or k.lower() == "x-sandbox-secret")
        out = ("%s %d %s\n" % (hashlib.sha256(body).hexdigest(), len(body),
                               leaked or "-")).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


HTTPServer(("0.0.0.0", int(sys.argv[1])), H).serve_forever()
