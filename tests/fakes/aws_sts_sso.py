#!/usr/bin/env python3
"""A stand-in for AWS STS (AssumeRole, AssumeRoleWithWebIdentity,
GetCallerIdentity; the Query protocol, XML answers), the IAM Identity Center
portal (GetRoleCredentials) and its OIDC service (CreateToken with the
refresh_token grant), on loopback, for the credential chain tests
(tests/integration/lambda-creds.sh).  Signed requests are checked with botocore
(tests/fakes/sigv4_oracle.py) against the keys given and the ones issued here.

The credentials it issues are a function of what was asked (the role and the key
that asked, the SSO account and role), so botocore and sbxtop, resolving the
same files and environment, get the same access key: the tests compare those.

  aws_sts_sso.py --port-file F --region R --account A --key AK:SK ...
      [--web-token TOKEN] [--sso-token TOKEN] [--external-id ROLE_ARN=ID ...]

/_fake/log: [action, access key that signed (or "-"), details] for each call.
"""
import argparse
import datetime
import hashlib
import json
import os
import signal
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sigv4_oracle  # noqa: E402

ARGS = None
KEYS = {}        # access key -> (secret, session token or None, identity ARN)
LOG = []
NS = "https://sts.amazonaws.com/doc/2011-06-15/"


def issue(kind, *parts):
    """Deterministic temporary credentials for (kind, parts)."""
    h = hashlib.sha256(("|".join((kind,) + parts)).encode()).hexdigest()
    return "ASIA" + h[:16].upper(), "sk" + h[16:56], "tok" + h[:48] * 4


def expiry():
    t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ"), int(t.timestamp() * 1000)


class Err(Exception):
    def __init__(self, status, code, msg):
        super().__init__(msg)
        self.status, self.code, self.msg = status, code, msg


def signer(h, body):
    auth = h.headers.get("Authorization", "")
    ak = auth.split("Credential=", 1)[1].split("/", 1)[0] if "Credential=" in auth else ""
    if ak not in KEYS:
        raise Err(403, "InvalidClientTokenId", "The security token included in the request "
                  "is invalid.")
    sk, tok, _ = KEYS[ak]
    try:
        sigv4_oracle.verify(h.command, h.path, h.headers, body, ak, sk, tok, ARGS.region, "sts")
    except sigv4_oracle.SigError as e:
        raise Err(403, "SignatureDoesNotMatch", e.message)
    return ak


def creds_xml(action, ak, sk, tok, arn, extra=""):
    exp, _ = expiry()
    return ("<%sResponse xmlns=\"%s\"><%sResult><Credentials><AccessKeyId>%s</AccessKeyId>"
            "<SecretAccessKey>%s</SecretAccessKey><SessionToken>%s</SessionToken>"
            "<Expiration>%s</Expiration></Credentials><AssumedRoleUser><Arn>%s</Arn>"
            "<AssumedRoleId>AROAFAKE:%s</AssumedRoleId></AssumedRoleUser>%s</%sResult>"
            "<ResponseMetadata><RequestId>0</RequestId></ResponseMetadata></%sResponse>" %
            (action, NS, action, ak, sk, tok, exp, arn, arn.rsplit("/", 1)[-1], extra, action,
             action))


def role_user(role_arn, session):
    if not role_arn.startswith("arn:aws:iam::") or ":role/" not in role_arn:
        raise Err(400, "ValidationError", "RoleArn %s is not a role ARN" % role_arn)
    if not session or len(session) > 64:
        raise Err(400, "ValidationError", "RoleSessionName must be 2 to 64 characters")
    acct = role_arn.split(":")[4]
    return "arn:aws:sts::%s:assumed-role/%s/%s" % (acct, role_arn.rsplit("/", 1)[1], session)


def sts(h, body):
    form = {k: v[0] for k, v in urllib.parse.parse_qs(body.decode(), keep_blank_values=True)
            .items()}
    action = form.get("Action")
    if form.get("Version") != "2011-06-15":
        raise Err(400, "InvalidAction", "Version must be 2011-06-15")
    if action == "GetCallerIdentity":
        ak = signer(h, body)
        LOG.append([action, ak, {}])
        return ("<GetCallerIdentityResponse xmlns=\"%s\"><GetCallerIdentityResult><Arn>%s</Arn>"
                "<UserId>%s</UserId><Account>%s</Account></GetCallerIdentityResult>"
                "</GetCallerIdentityResponse>" % (NS, KEYS[ak][2], ak, ARGS.account))
    if action == "AssumeRole":
        src = signer(h, body)
        role, sess = form.get("RoleArn", ""), form.get("RoleSessionName", "")
        arn = role_user(role, sess)
        want = EXTERNAL.get(role)
        if want is not None and form.get("ExternalId") != want:
            LOG.append([action, src, {"RoleArn": role, "denied": True}])
            raise Err(403, "AccessDenied", "User is not authorized to perform: "
                      "sts:AssumeRole on resource: %s" % role)
        ak, sk, tok = issue("assume", role, src)
        KEYS[ak] = (sk, tok, arn)
        LOG.append([action, src, {k: form[k] for k in form if k not in ("Action", "Version")}])
        return creds_xml(action, ak, sk, tok, arn)
    if action == "AssumeRoleWithWebIdentity":
        if "Authorization" in h.headers:
            raise Err(400, "InvalidAction", "AssumeRoleWithWebIdentity is not signed")
        role, sess = form.get("RoleArn", ""), form.get("RoleSessionName", "")
        arn = role_user(role, sess)
        if form.get("WebIdentityToken") != ARGS.web_token:
            LOG.append([action, "-", {"RoleArn": role, "denied": True}])
            raise Err(400, "InvalidIdentityToken", "The web identity token is not valid")
        ak, sk, tok = issue("web", role)
        KEYS[ak] = (sk, tok, arn)
        LOG.append([action, "-", {"RoleArn": role, "RoleSessionName": sess}])
        return creds_xml(action, ak, sk, tok, arn,
                         "<SubjectFromWebIdentityToken>ci</SubjectFromWebIdentityToken>")
    raise Err(400, "InvalidAction", "unsupported action %s" % action)


def sso(h):
    url = urllib.parse.urlsplit(h.path)
    q = {k: v[0] for k, v in urllib.parse.parse_qs(url.query).items()}
    tok = h.headers.get("x-amz-sso_bearer_token")
    if tok != ARGS.sso_token:
        LOG.append(["GetRoleCredentials", "-", {"denied": True}])
        raise Err(401, "UnauthorizedException", "Session token not found or invalid")
    acct, role = q.get("account_id", ""), q.get("role_name", "")
    if len(acct) != 12 or not acct.isdigit() or not role:
        raise Err(400, "InvalidRequestException", "account_id and role_name are required")
    ak, sk, stok = issue("sso", acct, role)
    KEYS[ak] = (sk, stok, "arn:aws:sts::%s:assumed-role/AWSReservedSSO_%s/sso" % (acct, role))
    LOG.append(["GetRoleCredentials", "-", {"account_id": acct, "role_name": role}])
    _, ms = expiry()
    return {"roleCredentials": {"accessKeyId": ak, "secretAccessKey": sk, "sessionToken": stok,
                                "expiration": ms}}


def oidc(body):
    """SSO OIDC CreateToken, the refresh_token grant (REST-JSON, unsigned)."""
    try:
        req = json.loads(body)
    except ValueError:
        raise Err(400, "InvalidRequestException", "not JSON")
    if req.get("grantType") != "refresh_token":
        raise Err(400, "UnsupportedGrantTypeException", "grantType")
    if (req.get("clientId"), req.get("clientSecret"), req.get("refreshToken")) != \
            (ARGS.client_id, ARGS.client_secret, ARGS.refresh_token):
        LOG.append(["CreateToken", "-", {"denied": True}])
        raise Err(400, "InvalidGrantException", "invalid_grant")
    LOG.append(["CreateToken", "-", {"clientId": req["clientId"]}])
    return {"accessToken": ARGS.sso_token, "tokenType": "Bearer", "expiresIn": 3600,
            "refreshToken": ARGS.refresh_token + "-next"}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        pass

    def send(self, status, data, ctype, etype=None):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        if etype:
            self.send_header("x-amzn-ErrorType", etype)
        self.end_headers()
        self.wfile.write(data)

    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        if self.path == "/_fake/log":
            return self.send(200, json.dumps({"log": LOG}).encode(), "application/json")
        try:
            if self.command == "GET" and self.path.startswith("/federation/credentials"):
                return self.send(200, json.dumps(sso(self)).encode(), "application/json")
            if self.command == "POST" and self.path == "/token":
                return self.send(200, json.dumps(oidc(body)).encode(), "application/json")
            if self.command == "POST" and urllib.parse.urlsplit(self.path).path == "/":
                return self.send(200, sts(self, body).encode(), "text/xml")
            raise Err(404, "NotFound", "no such operation")
        except Err as e:
            if self.path.startswith("/federation/") or self.path == "/token":
                return self.send(e.status, json.dumps({"message": e.msg}).encode(),
                                 "application/json", e.code)
            xml = ("<ErrorResponse xmlns=\"%s\"><Error><Type>Sender</Type><Code>%s</Code>"
                   "<Message>%s</Message></Error><RequestId>0</RequestId></ErrorResponse>" %
                   (NS, e.code, e.msg))
            return self.send(e.status, xml.encode(), "text/xml")

    do_GET = do_POST = handle_any


EXTERNAL = {}


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--region", default="us-west-2")
    ap.add_argument("--account", default="123456789012")
    ap.add_argument("--key", action="append", default=[], help="AK:SK of a long-term key")
    ap.add_argument("--web-token", default="web-identity-token")
    ap.add_argument("--sso-token", default="sso-access-token")
    ap.add_argument("--external-id", action="append", default=[], help="ROLE_ARN=ID")
    ap.add_argument("--client-id", default="client-1")
    ap.add_argument("--client-secret", default="client-secret-1")
    ap.add_argument("--refresh-token", default="refresh-1")
    ARGS = ap.parse_args()
    for k in ARGS.key:
        ak, sk = k.split(":", 1)
        KEYS[ak] = (sk, None, "arn:aws:iam::%s:user/%s" % (ARGS.account, ak.lower()))
    for x in ARGS.external_id:
        role, ext = x.rsplit("=", 1)
        EXTERNAL[role] = ext
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    tmp = ARGS.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(tmp, ARGS.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
