"""SigV4 through botocore, the oracle for core/sigv4.c and the verifier of the
fake AWS services (tests/fakes/aws_microvms.py, tests/fakes/aws_s3_iam.py).
S3 requests ("s3": true) are signed with botocore's S3SigV4Auth: the path as
sent, and the payload hash in X-Amz-Content-SHA256 ("unsigned": true gives
UNSIGNED-PAYLOAD).

  sigv4_oracle.py gen N    N deterministic random requests, one JSON per line
  sigv4_oracle.py sign     botocore's Authorization header for each line on stdin
"""
import datetime
import json
import random
import re
import sys
import time
import urllib.parse

import botocore.auth
import botocore.awsrequest
import botocore.credentials


class _S3Config:
    """What botocore's S3SigV4Auth reads to decide whether to hash the payload."""
    def __init__(self, sign):
        self.s3 = {"payload_signing_enabled": sign}


def authorization(method, host, path, query, headers, body, access_key, secret_key,
                  token, region, service, amz_date, s3=False, unsigned=False):
    """botocore's Authorization header for the request, signed at amz_date
    ("YYYYMMDDTHHMMSSZ").  path is as on the wire (segments encoded once);
    query is a list of raw (key, value) pairs; headers a list of (name, value)."""
    fixed = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ")

    class Frozen(datetime.datetime):
        @classmethod
        def utcnow(cls):
            return fixed

    req = botocore.awsrequest.AWSRequest(
        method=method, url="https://%s%s" % (host, path or "/"),
        data=body.encode() if isinstance(body, str) else (body or b""),
        params=[tuple(p) for p in query])
    for n, v in headers:
        if n.lower() not in ("host", "x-amz-date", "x-amz-security-token", "authorization"):
            req.headers[n] = v
    req.headers["Host"] = host
    creds = botocore.credentials.Credentials(access_key, secret_key, token or None)
    signer = (botocore.auth.S3SigV4Auth if s3 else botocore.auth.SigV4Auth)(creds, service,
                                                                            region)
    if s3:
        req.context["client_config"] = _S3Config(not unsigned)
    # Newer botocore reads the clock through get_current_datetime(), older
    # through datetime.datetime.utcnow(): freeze whichever this one has.
    if hasattr(botocore.auth, "get_current_datetime"):
        saved = botocore.auth.get_current_datetime
        botocore.auth.get_current_datetime = lambda *a, **k: fixed
        try:
            signer.add_auth(req)
        finally:
            botocore.auth.get_current_datetime = saved
    else:
        saved = botocore.auth.datetime.datetime
        botocore.auth.datetime.datetime = Frozen
        try:
            signer.add_auth(req)
        finally:
            botocore.auth.datetime.datetime = saved
    return req.headers["Authorization"]


AUTH_RE = re.compile(r"^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, "
                     r"SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$")


class SigError(Exception):
    """Why a request's signature is refused.  kind is one of: missing,
    incomplete, unknown_key, bad_token, skew, scope, unsigned_header, mismatch;
    each fake answers it with its own service's error code."""
    def __init__(self, kind, message):
        super().__init__(message)
        self.kind, self.message = kind, message


def verify(method, raw_path, headers, body, access_key, secret_key, session_token, region,
           service, s3=False, skew=300):
    """Check a request as AWS does: the Authorization header's form, the key, the
    session token, X-Amz-Date within skew seconds, the scope (date, region,
    service), the headers that must be signed, and botocore's signature over the
    request as received.  headers is an http.server message (get, get_all).
    Raises SigError."""
    auth = headers.get("Authorization")
    if not auth:
        raise SigError("missing", "Missing Authentication Token")
    m = AUTH_RE.match(auth)
    if not m:
        raise SigError("incomplete", "Authorization header is malformed")
    ak, day, reg, svc, signed, sig = m.groups()
    if ak != access_key:
        raise SigError("unknown_key", "The security token included in the request is invalid.")
    amz = headers.get("X-Amz-Date", "")
    try:
        t = datetime.datetime.strptime(amz, "%Y%m%dT%H%M%SZ").replace(
            tzinfo=datetime.timezone.utc).timestamp()
    except ValueError:
        raise SigError("incomplete", "X-Amz-Date is missing or malformed")
    if abs(t - time.time()) > skew:
        raise SigError("skew", "Signature expired: %s is now earlier or later than 5 min of "
                       "the server time" % amz)
    if day != amz[:8] or reg != region or svc != service:
        raise SigError("scope", "Credential should be scoped to a valid region, service and "
                       "date (%s/%s/%s)" % (amz[:8], region, service))
    names = signed.split(";")
    need = ["host", "x-amz-date"] + (["x-amz-security-token"] if session_token else []) + \
        (["x-amz-content-sha256"] if s3 else [])
    for n in need:
        if n not in names:
            raise SigError("unsigned_header", "'%s' must be a signed header" % n)
    if headers.get("X-Amz-Security-Token") != session_token:
        raise SigError("bad_token", "The security token included in the request is invalid.")
    url = urllib.parse.urlsplit(raw_path)
    query = urllib.parse.parse_qsl(url.query, keep_blank_values=True)
    hs = []
    for n in names:
        vals = headers.get_all(n)
        if vals is None:
            raise SigError("mismatch", "signed header %s is missing" % n)
        hs += [(n, v) for v in vals]
    want = authorization(method, headers["Host"], url.path, query,
                         [x for x in hs if x[0] != "host"], body, ak, secret_key,
                         session_token, reg, svc, amz, s3,
                         headers.get("X-Amz-Content-SHA256") == "UNSIGNED-PAYLOAD")
    if want.split("Signature=")[1] != sig:
        raise SigError("mismatch", "The request signature we calculated does not match the "
                       "signature you provided. Check your AWS Secret Access Key and signing "
                       "method.")


def gen(n):
    rnd = random.Random(20250909)
    reserved = "!*'();:@&=+$,/?#[]% ~-_.\u00e9\u4e2d"
    alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

    def word(extra=""):
        return "".join(rnd.choice(alnum + extra) for _ in range(rnd.randint(1, 12)))

    def seg(s):
        return "".join(c if (c.isascii() and (c.isalnum() or c in "-_.~")) else
                       "".join("%%%02X" % b for b in c.encode()) for c in s)

    out = []
    for i in range(n):
        region = rnd.choice(["us-east-1", "eu-west-1", "ap-southeast-2", "us-gov-west-1"])
        acct = "%012d" % rnd.randint(0, 10**12 - 1)
        arn = "arn:aws:lambda:%s:%s:microvm-image:%s" % (region, acct, word("/-_:"))
        kind = i % 5
        if kind == 0:
            path = "/2025-09-09/microvm-images/" + seg(arn)
        elif kind == 1:
            path = "/2025-09-09/microvms/mvm-%s/auth-token" % word()
        elif kind == 2:
            path = "/2025-09-09/microvms"
        elif kind == 3:
            path = "/" + "/".join(seg(word(reserved)) for _ in range(rnd.randint(1, 4)))
        else:
            path = "/"
        query = []
        if i % 3 == 0:
            query.append(["maxResults", str(rnd.randint(1, 100))])
            query.append(["nextToken", word(reserved + "+/=")])
        if i % 7 == 0:
            query += [["tag", word()], ["tag", word(reserved)], ["tag", "a"]]
        if i % 11 == 0:
            query.append([word(reserved), ""])
        method = rnd.choice(["GET", "POST", "DELETE", "PUT"])
        body = ""
        headers = []
        if method in ("POST", "PUT") and i % 4:
            body = json.dumps({"imageIdentifier": arn, "n": rnd.randint(0, 1 << 30),
                               "s": word(reserved)})
            headers.append(["Content-Type", rnd.choice(["application/json",
                                                        "  application/json  ",
                                                        "application/x-amz-json-1.1"])])
        if i % 6 == 0:
            headers.append(["X-Amz-Target", "  spaced   out\tvalue "])
        if i % 9 == 0:
            headers.append(["X-Custom", "one"])
            headers.append(["x-custom", "two"])
        port = rnd.choice(["", "", ":8443", ":4566"])
        host = rnd.choice(["lambda-microvms.%s.amazonaws.com" % region, "127.0.0.1"]) + port
        token = word() * 8 if i % 2 else ""
        t = 1440938160 + rnd.randint(0, 400_000_000)
        out.append(json.dumps({
            "method": method, "host": host, "path": path, "query": query,
            "headers": headers, "body": body,
            "access_key": "AKIA" + word().upper(), "secret_key": word("/+") * 3,
            "token": token, "region": region,
            "service": rnd.choice(["lambda-microvms", "lambda", "sts", "s3control"]),
            "time": t}, ensure_ascii=False))
    out += gen_s3(n // 2)
    return out


def gen_s3(n):
    """S3 requests: path-style and virtual-hosted, keys with reserved and UTF-8
    characters, the sub-resource queries setup uses, signed and unsigned payloads."""
    rnd = random.Random(20060301)
    alnum = "abcdefghijklmnopqrstuvwxyz0123456789"
    keych = alnum + "ABC/-_.!*'()&$@=;:+ ,?\u00e9\u4e2d~"

    def enc(s):
        return "".join(c if (c.isascii() and (c.isalnum() or c in "-_.~/")) else
                       "".join("%%%02X" % b for b in c.encode()) for c in s)

    out = []
    for i in range(n):
        region = rnd.choice(["us-east-1", "eu-west-1", "ap-southeast-2"])
        bucket = "sbxtop-%012d-%s" % (rnd.randint(0, 10**12 - 1), region)
        key = "sbxtop/" + "".join(rnd.choice(keych) for _ in range(rnd.randint(1, 30)))
        kind = i % 6
        query = []
        headers = []
        body = ""
        method = "GET"
        if kind == 0:
            method, path = "PUT", "/" + enc(key)
            body = "PK\x03\x04" + "".join(rnd.choice(alnum) for _ in range(rnd.randint(0, 200)))
            headers.append(["x-amz-checksum-sha256", "abc+/=" * 3])
            headers.append(["Content-Type", "application/zip"])
        elif kind == 1:
            method, path = "PUT", "/"
            query.append([rnd.choice(["publicAccessBlock", "encryption"]), ""])
            body = "<X>%d</X>" % i
            headers.append(["Content-MD5", "1B2M2Y8AsgTpgAmY7PhCfw=="])
        elif kind == 2:
            method, path = rnd.choice(["HEAD", "GET"]), "/"
        elif kind == 3:
            method, path = "HEAD", "/" + enc(key)
        elif kind == 4:
            path = "/"
            query += [["list-type", "2"], ["prefix", key], ["max-keys", "1"]]
        else:
            method, path = "PUT", "/"
            body = ("<CreateBucketConfiguration><LocationConstraint>%s</LocationConstraint>"
                    "</CreateBucketConfiguration>" % region)
        if i % 2:
            host = "%s.s3.%s.amazonaws.com" % (bucket, region)
        else:
            host = rnd.choice(["s3.%s.amazonaws.com" % region, "127.0.0.1:4566"])
            path = "/" + bucket + ("" if path == "/" else path)
        if i % 4 == 3:
            headers.append(["x-amz-expected-bucket-owner", "%012d" % rnd.randint(0, 10**12 - 1)])
        token = "".join(rnd.choice(alnum) for _ in range(40)) if i % 3 == 0 else ""
        out.append(json.dumps({
            "method": method, "host": host, "path": path, "query": query,
            "headers": headers, "body": body,
            "access_key": "AKIA" + "".join(rnd.choice(alnum) for _ in range(12)).upper(),
            "secret_key": "".join(rnd.choice(alnum + "/+") for _ in range(40)),
            "token": token, "region": region, "service": "s3", "s3": True,
            "unsigned": method == "PUT" and i % 5 == 0,
            "time": 1440938160 + rnd.randint(0, 400_000_000)}, ensure_ascii=False))
    return out


def main():
    if sys.argv[1] == "gen":
        for line in gen(int(sys.argv[2])):
            print(line)
    elif sys.argv[1] == "sign":
        for line in sys.stdin:
            d = json.loads(line)
            t = datetime.datetime.fromtimestamp(d["time"], datetime.timezone.utc)
            print(authorization(d["method"], d["host"], d["path"], d["query"], d["headers"],
                                d["body"], d["access_key"], d["secret_key"], d["token"],
                                d["region"], d["service"], t.strftime("%Y%m%dT%H%M%SZ"),
                                d.get("s3", False), d.get("unsigned", False)))


if __name__ == "__main__":
    main()
