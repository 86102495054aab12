#!/usr/bin/env python3
"""A token service for the distribution registry's token auth (the flow Docker
Hub and GHCR use), for tests: GET /token?service=S&scope=repository:NAME:ACTIONS
with Basic credentials USER:PASS answers {"token", "access_token"}, a JWT
(RS256) whose x5c names the certificate the registry's rootcertbundle holds.
Anonymous requests get a token with no access (as Docker Hub's do for a
private repository), so the registry itself refuses them.

usage: registry-token.py PORTFILE KEY.pem CERT.pem ISSUER USER:PASS"""
import base64
import http.server
import json
import os
import sys
import time
import urllib.parse

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding

PORTFILE, KEYFILE, CERTFILE, ISSUER, CREDS = sys.argv[1:6]
KEY = serialization.load_pem_private_key(open(KEYFILE, "rb").read(), password=None)
CERT = x509.load_pem_x509_certificate(open(CERTFILE, "rb").read())
X5C = base64.b64encode(CERT.public_bytes(serialization.Encoding.DER)).decode()
ISSUED = []


def b64u(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def jwt(claims):
    head = {"typ": "JWT", "alg": "RS256", "x5c": [X5C]}
    signing = b64u(json.dumps(head).encode()) + "." + b64u(json.dumps(claims).encode())
    sig = KEY.sign(signing.encode(), padding.PKCS1v15(), hashes.SHA256())
    return signing + "." + b64u(sig)


class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        u = urllib.parse.urlparse(self.path)
        if u.path != "/token":
            self.send_error(404)
            return
        q = urllib.parse.parse_qs(u.query)
        auth = self.headers.get("Authorization", "")
        user = None
        if auth.startswith("Basic "):
            if base64.b64decode(auth[6:]).decode() != CREDS:
                self.send_response(401)
                self.end_headers()
                return
            user = CREDS.split(":")[0]
        access = []
        for scope in q.get("scope", []):
            for one in scope.split(" "):
                parts = one.split(":")
                if len(parts) == 3 and parts[0] == "repository" and user:
                    access.append({"type": "repository", "name": parts[1],
                                   "actions": parts[2].split(",")})
        now = int(time.time())
        tok = jwt({"iss": ISSUER, "sub": user or "", "aud": q.get("service", [""])[0],
                   "exp": now + 300, "nbf": now - 10, "iat": now,
                   "jti": base64.b16encode(os.urandom(8)).decode(), "access": access})
        ISSUED.append(user or "-")
        with open(PORTFILE + ".log", "a") as f:
            f.write("%s %s\n" % (user or "-", " ".join(q.get("scope", []))))
        body = json.dumps({"token": tok, "access_token": tok, "expires_in": 300}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(PORTFILE + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(PORTFILE + ".tmp", PORTFILE)
srv.serve_forever()
