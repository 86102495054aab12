"""SigV4 through botocore, the oracle for core/sigv4.c and the verifier of the
fake AWS service (tests/fakes/aws_microvms.py).

  sigv4_oracle.py gen N    N deterministic random requests, one JSON per line
  sigv4_oracle.py sign     botocore's Authorization header for each line on stdin
"""
import datetime
import json
import random
import sys

import botocore.auth
import botocore.awsrequest
import botocore.credentials


def authorization(method, host, path, query, headers, body, access_key, secret_key,
                  token, region, service, amz_date):
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
    # Newer botocore reads the clock through get_current_datetime(), older
    # through datetime.datetime.utcnow(): freeze whichever this one has.
    if hasattr(botocore.auth, "get_current_datetime"):
        saved = botocore.auth.get_current_datetime
        botocore.auth.get_current_datetime = lambda *a, **k: fixed
        try:
            botocore.auth.SigV4Auth(creds, service, region).add_auth(req)
        finally:
            botocore.auth.get_current_datetime = saved
    else:
        saved = botocore.auth.datetime.datetime
        botocore.auth.datetime.datetime = Frozen
        try:
            botocore.auth.SigV4Auth(creds, service, region).add_auth(req)
        finally:
            botocore.auth.datetime.datetime = saved
    return req.headers["Authorization"]


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
                                d["region"], d["service"], t.strftime("%Y%m%dT%H%M%SZ")))


if __name__ == "__main__":
    main()
