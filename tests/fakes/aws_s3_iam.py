#!/usr/bin/env python3
"""A strict stand-in for the parts of Amazon S3 and IAM that `sbxtop setup aws`
uses, on loopback, for sbxtop's tests.  Standard library plus botocore (the
SigV4 verifier, tests/fakes/sigv4_oracle.py).

One port serves both; a request goes to the service its signature is scoped to
(AWS tells them apart by host name).

S3 (REST, XML, path-style: /BUCKET[/KEY]), as AWS does:
  - SigV4 with S3's rules: the path signed as sent, X-Amz-Content-SHA256 required
    and signed, and equal to the body's SHA-256 unless UNSIGNED-PAYLOAD
    (XAmzContentSHA256Mismatch); SignatureDoesNotMatch, InvalidAccessKeyId,
    RequestTimeTooSkewed, AuthorizationHeaderMalformed;
  - bucket names (InvalidBucketName), CreateBucket's LocationConstraint (required
    outside us-east-1, refused in it: IllegalLocationConstraintException,
    InvalidLocationConstraint), BucketAlreadyOwnedByYou / BucketAlreadyExists;
  - x-amz-expected-bucket-owner: 403 for a bucket of another account, and any
    request on another account's bucket is AccessDenied; HeadBucket answers
    200/301/403/404 with no body;
  - Get/PutPublicAccessBlock, Get/PutBucketEncryption (Content-MD5 or a checksum
    required and checked: InvalidDigest, BadDigest; MalformedXML),
    HeadObject, PutObject (Content-MD5 and x-amz-checksum-sha256 checked).
IAM (Query protocol: form POST, Version 2010-05-08, XML, signed for us-east-1):
  - GetRole, CreateRole, GetRolePolicy, PutRolePolicy; role and policy names
    (ValidationError), policy documents (MalformedPolicyDocument: JSON, Version,
    Statement with Effect/Action/Resource or Principal), EntityAlreadyExists,
    NoSuchEntity.

Test controls (unsigned, under /_fake/): state (every bucket, object digest,
role and policy), log (each call with its status), fail (the next N calls of an
operation answer an error).  Usage:
  aws_s3_iam.py --port-file F [--access-key AK --secret-key SK] [--region R]
      [--account A] [--foreign-bucket NAME ...]
"""
import argparse
import base64
import hashlib
import json
import os
import re
import secrets
import signal
import sys
import threading
import time
import urllib.parse
import xml.etree.ElementTree as ET
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sigv4_oracle  # noqa: E402

S3_NS = "http://s3.amazonaws.com/doc/2006-03-01/"
IAM_NS = "https://iam.amazonaws.com/doc/2010-05-08/"
OTHER_ACCOUNT = "999999999999"

ARGS = None
LOCK = threading.RLock()
BUCKETS = {}      # name -> {"owner", "region", "pab", "sse", "ownership", "objects"}
ROLES = {}        # name -> {"arn", "id", "trust", "policies", "created"}
LOG = []          # [service, op, status, code]
FAULTS = {}       # op -> [count, status, code, message]


class Err(Exception):
    def __init__(self, status, code, message, headers=None):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.headers = headers or {}


S3_SIG = {"missing": (403, "AccessDenied"), "incomplete": (400, "AuthorizationHeaderMalformed"),
          "unknown_key": (403, "InvalidAccessKeyId"), "bad_token": (400, "InvalidToken"),
          "skew": (403, "RequestTimeTooSkewed"), "scope": (400, "AuthorizationHeaderMalformed"),
          "unsigned_header": (403, "AccessDenied"), "mismatch": (403, "SignatureDoesNotMatch")}
IAM_SIG = {"missing": (403, "MissingAuthenticationToken"),
           "incomplete": (400, "IncompleteSignature"),
           "unknown_key": (403, "InvalidClientTokenId"), "bad_token": (403, "InvalidClientTokenId"),
           "skew": (403, "SignatureDoesNotMatch"), "scope": (403, "SignatureDoesNotMatch"),
           "unsigned_header": (403, "SignatureDoesNotMatch"),
           "mismatch": (403, "SignatureDoesNotMatch")}


def scope_service(h):
    m = sigv4_oracle.AUTH_RE.match(h.headers.get("Authorization", ""))
    return m.group(4) if m else None


# ---- S3 ---------------------------------------------------------------------------

def bucket_name_ok(n):
    return (3 <= len(n) <= 63 and re.match(r"^[a-z0-9][a-z0-9.-]*[a-z0-9]$", n)
            and ".." not in n and not re.match(r"^\d+\.\d+\.\d+\.\d+$", n)
            and not n.startswith("xn--") and not n.startswith("sthree-")
            and not n.endswith("-s3alias") and not n.endswith("--ol-s3"))


def s3_xml(root, children):
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<%s xmlns="%s">%s</%s>' %
            (root, S3_NS, children, root))


def parse_xml(body, root):
    try:
        doc = ET.fromstring(body)
    except ET.ParseError:
        raise Err(400, "MalformedXML", "The XML you provided was not well-formed or did not "
                  "validate against our published schema")
    if doc.tag not in (root, "{%s}%s" % (S3_NS, root)):
        raise Err(400, "MalformedXML", "expected <%s>" % root)
    return doc


def child(doc, name):
    for c in doc.iter():
        if c.tag in (name, "{%s}%s" % (S3_NS, name)):
            return c
    return None


def check_digests(h, body, required):
    md5 = h.headers.get("Content-MD5")
    sha = h.headers.get("x-amz-checksum-sha256")
    if required and md5 is None and sha is None:
        raise Err(400, "InvalidRequest", "Missing required header for this request: "
                  "Content-MD5 OR x-amz-checksum-*")
    if md5 is not None:
        try:
            raw = base64.b64decode(md5, validate=True)
        except ValueError:
            raw = b""
        if len(raw) != 16:
            raise Err(400, "InvalidDigest", "The Content-MD5 you specified was invalid.")
        if raw != hashlib.md5(body).digest():
            raise Err(400, "BadDigest", "The Content-MD5 you specified did not match what we "
                      "received.")
    if sha is not None and sha != base64.b64encode(hashlib.sha256(body).digest()).decode():
        raise Err(400, "BadDigest", "The SHA256 you specified did not match the calculated "
                  "checksum.")


def s3_op(method, key, q):
    if key:
        return {"HEAD": "HeadObject", "PUT": "PutObject", "GET": "GetObject"}.get(method, "?")
    for sub, ops in (("publicAccessBlock", ("GetPublicAccessBlock", "PutPublicAccessBlock")),
                     ("encryption", ("GetBucketEncryption", "PutBucketEncryption"))):
        if sub in q:
            return ops[0] if method == "GET" else ops[1] if method == "PUT" else "?"
    return {"HEAD": "HeadBucket", "PUT": "CreateBucket"}.get(method, "?")


def s3_route(h, body):
    url = urllib.parse.urlsplit(h.path)
    q = urllib.parse.parse_qs(url.query, keep_blank_values=True)
    raw = url.path.lstrip("/")
    bucket, _, rawkey = raw.partition("/")
    key = urllib.parse.unquote(rawkey)
    return s3_op(h.command, key, q), bucket, key, q


def s3_handle(h, body):
    op, bucket, key, q = s3_route(h, body)
    cs = h.headers.get("X-Amz-Content-SHA256")
    if cs is None:
        raise Err(400, "InvalidRequest", "Missing required header for this request: "
                  "x-amz-content-sha256")
    if cs != "UNSIGNED-PAYLOAD" and cs != hashlib.sha256(body).hexdigest():
        raise Err(400, "XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' "
                  "header does not match what was computed.")
    try:
        sigv4_oracle.verify(h.command, h.path, h.headers, body, ARGS.access_key,
                            ARGS.secret_key, None, ARGS.region, "s3", s3=True)
    except sigv4_oracle.SigError as e:
        st, code = S3_SIG[e.kind]
        raise Err(st, code, e.message)
    fault(op)
    if not bucket_name_ok(bucket):
        raise Err(400, "InvalidBucketName", "The specified bucket is not valid.")
    expected = h.headers.get("x-amz-expected-bucket-owner")
    if expected is not None and not re.match(r"^\d{12}$", expected):
        raise Err(400, "InvalidArgument", "x-amz-expected-bucket-owner must be an account id")
    with LOCK:
        b = BUCKETS.get(bucket)
        if op == "CreateBucket":
            return op, create_bucket(h, body, bucket, b)
        if b is None:
            if op == "HeadBucket" or op == "HeadObject":
                raise Err(404, "NotFound", "")
            raise Err(404, "NoSuchBucket", "The specified bucket does not exist")
        if b["owner"] != ARGS.account or (expected is not None and expected != b["owner"]):
            raise Err(403, "AccessDenied" if op not in ("HeadBucket", "HeadObject") else
                      "Forbidden", "Access Denied" if op not in ("HeadBucket", "HeadObject")
                      else "")
        if b["region"] != ARGS.region:
            raise Err(301, "PermanentRedirect", "", {"x-amz-bucket-region": b["region"]})
        if op == "HeadBucket":
            return op, (200, b"", {"x-amz-bucket-region": b["region"]})
        if op == "GetPublicAccessBlock":
            if b["pab"] is None:
                raise Err(404, "NoSuchPublicAccessBlockConfiguration", "The public access "
                          "block configuration was not found")
            return op, (200, s3_xml("PublicAccessBlockConfiguration", "".join(
                "<%s>%s</%s>" % (k, "true" if v else "false", k) for k, v in
                b["pab"].items())).encode(), {})
        if op == "PutPublicAccessBlock":
            check_digests(h, body, True)
            doc = parse_xml(body, "PublicAccessBlockConfiguration")
            pab = {}
            for k in ("BlockPublicAcls", "IgnorePublicAcls", "BlockPublicPolicy",
                      "RestrictPublicBuckets"):
                c = child(doc, k)
                if c is not None and c.text not in ("true", "false"):
                    raise Err(400, "MalformedXML", "%s must be true or false" % k)
                pab[k] = c is not None and c.text == "true"
            b["pab"] = pab
            return op, (200, b"", {})
        if op == "GetBucketEncryption":
            if b["sse"] is None:
                raise Err(404, "ServerSideEncryptionConfigurationNotFoundError",
                          "The server side encryption configuration was not found")
            return op, (200, s3_xml("ServerSideEncryptionConfiguration",
                                    "<Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>"
                                    "%s</SSEAlgorithm></ApplyServerSideEncryptionByDefault>"
                                    "</Rule>" % b["sse"]).encode(), {})
        if op == "PutBucketEncryption":
            check_digests(h, body, True)
            doc = parse_xml(body, "ServerSideEncryptionConfiguration")
            alg = child(doc, "SSEAlgorithm")
            if alg is None or alg.text not in ("AES256", "aws:kms", "aws:kms:dsse"):
                raise Err(400, "MalformedXML", "SSEAlgorithm must be AES256, aws:kms or "
                          "aws:kms:dsse")
            b["sse"] = alg.text
            return op, (200, b"", {})
        if op == "HeadObject":
            o = b["objects"].get(key)
            if o is None:
                raise Err(404, "NotFound", "")
            hd = {"Content-Length-Of": str(o["size"]), "ETag": '"%s"' % o["md5"]}
            hd.update({"x-amz-meta-" + k: v for k, v in o["meta"].items()})
            return op, (200, b"", hd)
        if op == "PutObject":
            check_digests(h, body, False)
            if not key or len(key.encode()) > 1024:
                raise Err(400, "KeyTooLongError", "Your key is too long")
            meta = {k[len("x-amz-meta-"):].lower(): v for k, v in h.headers.items()
                    if k.lower().startswith("x-amz-meta-")}
            b["objects"][key] = {"size": len(body), "sha256": hashlib.sha256(body).hexdigest(),
                                 "md5": hashlib.md5(body).hexdigest(), "meta": meta,
                                 "content_type": h.headers.get("Content-Type"),
                                 "sse": b["sse"]}
            return op, (200, b"", {"ETag": '"%s"' % hashlib.md5(body).hexdigest()})
    raise Err(405, "MethodNotAllowed", "The specified method is not allowed against this "
              "resource.")


def create_bucket(h, body, name, b):
    region = ARGS.region
    lc = None
    if body:
        doc = parse_xml(body, "CreateBucketConfiguration")
        c = child(doc, "LocationConstraint")
        lc = c.text if c is not None else None
    if region == "us-east-1" and lc is not None:
        raise Err(400, "InvalidLocationConstraint", "The specified location-constraint is not "
                  "valid")
    if region != "us-east-1" and lc is None:
        raise Err(400, "IllegalLocationConstraintException", "The unspecified location "
                  "constraint is incompatible for the region specific endpoint this request "
                  "was sent to.")
    if region != "us-east-1" and lc != region:
        raise Err(400, "IllegalLocationConstraintException", "The %s location constraint is "
                  "incompatible for the region specific endpoint this request was sent to."
                  % lc)
    own = h.headers.get("x-amz-object-ownership")
    if own is not None and own not in ("BucketOwnerEnforced", "BucketOwnerPreferred",
                                       "ObjectWriter"):
        raise Err(400, "InvalidArgument", "Invalid x-amz-object-ownership")
    if b is not None:
        if b["owner"] != ARGS.account:
            raise Err(409, "BucketAlreadyExists", "The requested bucket name is not "
                      "available. The bucket namespace is shared by all users of the system. "
                      "Please select a different name and try again.")
        if region == "us-east-1":
            return (200, b"", {"Location": "/" + name})     # us-east-1's legacy answer
        raise Err(409, "BucketAlreadyOwnedByYou", "Your previous request to create the named "
                  "bucket succeeded and you already own it.")
    # New buckets since 2023 have public access blocked and SSE-S3 on by default;
    # the fake starts them bare, so setup must set both and the test can see it did.
    BUCKETS[name] = {"owner": ARGS.account, "region": region, "pab": None, "sse": None,
                     "ownership": own or "BucketOwnerEnforced", "objects": {},
                     "created": time.time()}
    return (200, b"", {"Location": "/" + name})


# ---- IAM --------------------------------------------------------------------------

NAME_RE = re.compile(r"^[\w+=,.@-]+$")


def iam_validation(msg):
    return Err(400, "ValidationError", msg)


def check_policy(text, trust):
    if text is None:
        raise iam_validation("1 validation error detected: Value null at "
                             "'policyDocument' failed to satisfy constraint: Member must not "
                             "be null")
    if len(text) > 10240:
        raise Err(400, "LimitExceeded", "Cannot exceed quota for PolicySize: 10240")
    try:
        doc = json.loads(text)
    except ValueError:
        raise Err(400, "MalformedPolicyDocument", "This policy contains invalid Json")
    if not isinstance(doc, dict) or doc.get("Version") not in ("2012-10-17", "2008-10-17"):
        raise Err(400, "MalformedPolicyDocument", "The policy must have a Version of "
                  "2012-10-17 or 2008-10-17")
    st = doc.get("Statement")
    if isinstance(st, dict):
        st = [st]
    if not isinstance(st, list) or not st:
        raise Err(400, "MalformedPolicyDocument", "Syntax errors in policy: no Statement")
    for s in st:
        if not isinstance(s, dict) or s.get("Effect") not in ("Allow", "Deny"):
            raise Err(400, "MalformedPolicyDocument", "Each statement needs an Effect of "
                      "Allow or Deny")
        if "Action" not in s and "NotAction" not in s:
            raise Err(400, "MalformedPolicyDocument", "Policy statement must contain actions.")
        if trust:
            if "Principal" not in s:
                raise Err(400, "MalformedPolicyDocument", "AssumeRolepolicy contained an "
                          "invalid principal: a trust policy statement needs a Principal")
            if "Resource" in s:
                raise Err(400, "MalformedPolicyDocument", "Has prohibited field Resource")
        else:
            if "Principal" in s:
                raise Err(400, "MalformedPolicyDocument", "Policy document should not specify "
                          "a principal.")
            if "Resource" not in s and "NotResource" not in s:
                raise Err(400, "MalformedPolicyDocument", "Policy statement must contain "
                          "resources.")
    return doc


def role_xml(r):
    return ("<Role><Path>/</Path><RoleName>%s</RoleName><RoleId>%s</RoleId><Arn>%s</Arn>"
            "<CreateDate>%s</CreateDate><AssumeRolePolicyDocument>%s</AssumeRolePolicyDocument>"
            "<Description>%s</Description><MaxSessionDuration>3600</MaxSessionDuration>"
            "<RoleLastUsed/></Role>" %
            (r["name"], r["id"], r["arn"], time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                        time.gmtime(r["created"])),
             urllib.parse.quote(r["trust_text"], safe=""), xml_escape(r["description"])))


def xml_escape(s):
    return (s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def iam_ok(action, result):
    return ('<%sResponse xmlns="%s"><%sResult>%s</%sResult><ResponseMetadata><RequestId>%s'
            '</RequestId></ResponseMetadata></%sResponse>' %
            (action, IAM_NS, action, result, action, secrets.token_hex(16), action)).encode()


def iam_handle(h, body):
    if h.command != "POST" or urllib.parse.urlsplit(h.path).path != "/":
        return Err(404, "NotFound", "IAM takes POST / only here"), "?"
    ctype = h.headers.get("Content-Type", "")
    if not ctype.startswith("application/x-www-form-urlencoded"):
        return iam_validation("Content-Type must be application/x-www-form-urlencoded"), "?"
    form = urllib.parse.parse_qs(body.decode(), keep_blank_values=True)
    g = {k: v[-1] for k, v in form.items()}
    action = g.get("Action", "?")
    try:
        sigv4_oracle.verify(h.command, h.path, h.headers, body, ARGS.access_key,
                            ARGS.secret_key, None, "us-east-1", "iam")
    except sigv4_oracle.SigError as e:
        st, code = IAM_SIG[e.kind]
        return Err(st, code, e.message), action
    try:
        if g.get("Version") != "2010-05-08":
            raise Err(400, "InvalidAction", "Could not find operation %s for version %s" %
                      (action, g.get("Version")))
        fault(action)
        return iam_action(action, g), action
    except Err as e:
        return e, action


def role_name(g):
    n = g.get("RoleName")
    if n is None or not 1 <= len(n) <= 64 or not NAME_RE.match(n):
        raise iam_validation("1 validation error detected: Value '%s' at 'roleName' failed to "
                             "satisfy constraint: Member must satisfy regular expression "
                             "pattern: [\\w+=,.@-]+" % n)
    return n


def iam_action(action, g):
    with LOCK:
        if action == "GetRole":
            n = role_name(g)
            if n not in ROLES:
                raise Err(404, "NoSuchEntity", "The role with name %s cannot be found." % n)
            return iam_ok(action, role_xml(ROLES[n]))
        if action == "CreateRole":
            n = role_name(g)
            trust_text = g.get("AssumeRolePolicyDocument")
            trust = check_policy(trust_text, True)
            desc = g.get("Description", "")
            if len(desc) > 1000:
                raise iam_validation("Description is longer than 1000")
            if n in ROLES:
                raise Err(409, "EntityAlreadyExists", "Role with name %s already exists." % n)
            ROLES[n] = {"name": n, "arn": "arn:aws:iam::%s:role/%s" % (ARGS.account, n),
                        "id": "AROA" + secrets.token_hex(8).upper(), "trust": trust,
                        "trust_text": trust_text, "description": desc, "policies": {},
                        "created": time.time()}
            return iam_ok(action, role_xml(ROLES[n]))
        if action in ("PutRolePolicy", "GetRolePolicy"):
            n = role_name(g)
            p = g.get("PolicyName")
            if p is None or not 1 <= len(p) <= 128 or not NAME_RE.match(p):
                raise iam_validation("PolicyName must match [\\w+=,.@-]+ (1 to 128)")
            if n not in ROLES:
                raise Err(404, "NoSuchEntity", "The role with name %s cannot be found." % n)
            r = ROLES[n]
            if action == "PutRolePolicy":
                doc = check_policy(g.get("PolicyDocument"), False)
                r["policies"][p] = {"doc": doc, "text": g["PolicyDocument"]}
                return iam_ok(action, "")
            if p not in r["policies"]:
                raise Err(404, "NoSuchEntity", "The role policy with name %s cannot be found."
                          % p)
            return iam_ok(action, "<RoleName>%s</RoleName><PolicyName>%s</PolicyName>"
                          "<PolicyDocument>%s</PolicyDocument>" %
                          (n, p, urllib.parse.quote(r["policies"][p]["text"], safe="")))
    raise Err(400, "InvalidAction", "Could not find operation %s for version 2010-05-08" %
              action)


# ---- faults, controls, server ------------------------------------------------------

def fault(op):
    with LOCK:
        f = FAULTS.get(op)
        if f and f[0] > 0:
            f[0] -= 1
            raise Err(f[1], f[2], f[3])


def control(path, body):
    obj = json.loads(body) if body else {}
    if path == "/_fake/state":
        with LOCK:
            return {"buckets": BUCKETS, "roles": {k: {x: y for x, y in v.items()
                                                      if x != "trust_text"}
                                                  for k, v in ROLES.items()}}
    if path == "/_fake/log":
        return {"log": LOG}
    if path == "/_fake/fail":
        FAULTS[obj["op"]] = [obj.get("count", 1), obj.get("status", 403),
                             obj.get("code", "AccessDenied"),
                             obj.get("message", "Access Denied (injected by the test)")]
        return {}
    raise Err(404, "NotFound", "no such control")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        pass

    def send(self, status, data, headers, ctype="application/xml"):
        self.send_response(status)
        head = self.command == "HEAD"
        for k, v in headers.items():
            if k == "Content-Length-Of":
                continue
            self.send_header(k, v)
        self.send_header("Content-Type", ctype)
        self.send_header("x-amz-request-id", secrets.token_hex(8).upper())
        if head:
            self.send_header("Content-Length", headers.get("Content-Length-Of", "0"))
        else:
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if not head:
            self.wfile.write(data)

    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        if self.path.startswith("/_fake/"):
            try:
                return self.send(200, json.dumps(control(self.path, body)).encode(), {},
                                 "application/json")
            except Err as e:
                return self.send(e.status, json.dumps({"message": e.message}).encode(), {},
                                 "application/json")
        svc = scope_service(self)
        if svc == "iam":
            res, action = iam_handle(self, body)
            if isinstance(res, Err):
                LOG.append(["iam", action, res.status, res.code])
                return self.send(res.status, (
                    '<ErrorResponse xmlns="%s"><Error><Type>Sender</Type><Code>%s</Code>'
                    '<Message>%s</Message></Error><RequestId>%s</RequestId></ErrorResponse>' %
                    (IAM_NS, res.code, xml_escape(res.message), secrets.token_hex(16))).encode(),
                    {}, "text/xml")
            LOG.append(["iam", action, 200, None])
            return self.send(200, res, {}, "text/xml")
        op = "?"
        try:
            url = urllib.parse.urlsplit(self.path)
            op = s3_op(self.command, url.path.lstrip("/").partition("/")[2],
                       urllib.parse.parse_qs(url.query, keep_blank_values=True))
            if svc != "s3":
                try:
                    sigv4_oracle.verify(self.command, self.path, self.headers, body,
                                        ARGS.access_key, ARGS.secret_key, None, ARGS.region,
                                        "s3", s3=True)
                except sigv4_oracle.SigError as e:
                    st, code = S3_SIG[e.kind]
                    raise Err(st, code, e.message)
            op, (st, data, hd) = s3_handle(self, body)
            LOG.append(["s3", op, st, None])
            return self.send(st, data, hd)
        except Err as e:
            LOG.append(["s3", op, e.status, e.code])
            data = b"" if self.command == "HEAD" else s3_xml_error(e)
            return self.send(e.status, data, e.headers)

    do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = handle_any


def s3_xml_error(e):
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>%s</Code><Message>%s'
            '</Message><RequestId>%s</RequestId></Error>' %
            (e.code, xml_escape(e.message), secrets.token_hex(8).upper())).encode()


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--access-key", default="AKIAFAKEFAKEFAKE0001")
    ap.add_argument("--secret-key", default="fake/secret+key/0123456789abcdefghijklm")
    ap.add_argument("--region", default="us-west-2")
    ap.add_argument("--account", default="123456789012")
    ap.add_argument("--foreign-bucket", action="append", default=[],
                    help="a bucket that exists in another account")
    ARGS = ap.parse_args()
    for b in ARGS.foreign_bucket:
        BUCKETS[b] = {"owner": OTHER_ACCOUNT, "region": ARGS.region, "pab": None, "sse": None,
                      "ownership": "ObjectWriter", "objects": {}, "created": 0}
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
