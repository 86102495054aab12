#!/usr/bin/env python3
"""Loopback fakes of the two HTTP credential sources: container credentials
(GET /container/creds, Authorization must equal --container-token) and EC2
instance metadata, IMDSv2 only (PUT /latest/api/token with a TTL header, then
GETs carrying X-aws-ec2-metadata-token; an IMDSv1 GET without it is 401).
GET /_log lists the requests seen, comma-separated."""
import argparse
import json
import os
import secrets
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARGS = None
TOKENS = set()
SEEN = []
ROLE = "sbxtop-role"


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, status, body, ctype="application/json"):
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def creds(self, token_field):
        return {"Code": "Success", "AccessKeyId": ARGS.access_key,
                "SecretAccessKey": ARGS.secret_key, token_field: ARGS.session_token or "",
                "Expiration": "2099-01-01T00:00:00Z"}

    def do_PUT(self):
        SEEN.append("PUT " + self.path)
        n = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(n)
        ttl = self.headers.get("X-aws-ec2-metadata-token-ttl-seconds")
        if self.path != "/latest/api/token" or not ttl or not ttl.isdigit():
            return self.send(400, {"message": "bad token request"})
        t = secrets.token_hex(16)
        TOKENS.add(t)
        return self.send(200, t, "text/plain")

    def do_GET(self):
        if self.path == "/_log":
            return self.send(200, ",".join(SEEN), "text/plain")
        SEEN.append("GET " + self.path)
        if self.path == "/container/creds":
            if self.headers.get("Authorization") != ARGS.container_token:
                return self.send(401, {"message": "bad authorization token"})
            return self.send(200, self.creds("Token"))
        if self.path.startswith("/latest/"):
            if self.headers.get("X-aws-ec2-metadata-token") not in TOKENS:
                return self.send(401, "", "text/plain")
            base = "/latest/meta-data/iam/security-credentials/"
            if self.path == base:
                return self.send(200, ROLE + "\n", "text/plain")
            if self.path == base + ROLE:
                return self.send(200, self.creds("Token"))
        return self.send(404, {"message": "not found"})


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--access-key", required=True)
    ap.add_argument("--secret-key", required=True)
    ap.add_argument("--session-token", default=None)
    ap.add_argument("--container-token", default="tok")
    ARGS = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    srv.daemon_threads = True
    with open(ARGS.port_file + ".tmp", "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(ARGS.port_file + ".tmp", ARGS.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
