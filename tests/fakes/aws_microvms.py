#!/usr/bin/env python3
"""A strict stand-in for AWS Lambda MicroVMs (2025-09-09, signed for "lambda") on
loopback, for sbxtop's tests.  Standard library plus botocore (as the SigV4
oracle, tests/fakes/sigv4_oracle.py).  The operations, their shapes and their
errors follow the service model in the official SDK (@aws-sdk/client-lambda-
microvms, tests/aws/): tests/aws/oracle.mjs checks that the SDK's requests are
accepted and that the SDK parses every answer and error given here.

What it does as AWS does (docs/lambda-backend.md lists the sources):
  - verifies every API request's SigV4 signature (botocore recomputes it from the
    request as received) and answers 403 for an unknown key, a wrong session token,
    a bad signature, a date more than 5 minutes off, a wrong scope, or a missing
    signed header;
  - RunMicrovm, GetMicrovm, ListMicrovms (paginated), Suspend/ResumeMicrovm,
    TerminateMicrovm (DELETE), CreateMicrovmAuthToken, CreateMicrovmShellAuthToken
    (only for a MicroVM run with the SHELL_INGRESS connector), CreateMicrovmImage
    (201), GetMicrovmImage, GetMicrovmImageVersion, ListMicrovmImageBuilds, and
    STS GetCallerIdentity, with their documented shapes and validation
    (ValidationException 400, ResourceNotFoundException 404, ConflictException 409
    for a wrong state, ThrottlingException 429);
  - runs a REAL sbxtop-agent per MicroVM (hooks on 127.0.0.1, API on 127.0.0.2) and
    calls its lifecycle hooks as Lambda does: ready (until 200), run with the
    runHookPayload, suspend, resume, terminate;
  - gives each MicroVM its own endpoint: a proxy that forwards to a port inside the
    VM only with a valid, unexpired X-aws-proxy-auth token for that MicroVM whose
    allowedPorts hold the port.  The port is X-aws-proxy-port, else a WebSocket
    subprotocol lambda-microvms.port.N, else 8080 (the agent), as AWS documents.
    With --tls-cert/--tls-key the endpoint is HTTPS, as AWS's is (the tests make a
    CA of their own); without, plain HTTP.

Test controls (unsigned, under /_fake/): throttle, vanish, expire-tokens, log,
hooks, vms, images, error-style, shell-mode, shell-tokens, fail-builds, ws-key (a man in the middle: the key the
VM sees is not the client's, so the 101's Sec-WebSocket-Accept does not answer
the client).  Usage:
  aws_microvms.py --agent BUILD/sbxtop-agent --dir DIR --port-file F
      [--access-key AK --secret-key SK [--session-token T]] [--region R]
      [--image ARN ...] [--minute-seconds N]
"""
import argparse
import base64
import hashlib
import json
import os
import re
import secrets
import select
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
import http.client
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sigv4_oracle  # noqa: E402

API = "/2025-09-09"
AGENT_PORT = 8080          # the guest port the image's agent listens on
HOOKS = "/aws/lambda-microvms/runtime/v1"
RUN_PAYLOAD_MAX = 4096
MAX_DURATION = 28800
SKEW = 300

ARGS = None
LOCK = threading.RLock()
VMS = {}                   # id -> VM
ORDER = []                 # ids in creation order (for ListMicrovms)
TOKENS = {}                # token -> (vm id, ports, expires_at)
CLIENT_TOKENS = {}         # clientToken -> (body digest, vm id)
IMAGES = {}                # arn -> image dict
THROTTLE = {}              # op -> [count, status]
LOG = []                   # (op, status, error type)
WS_KEY = [None]            # /_fake/ws-key: a key put in place of the client's
TLS = None                 # the endpoints' ssl.SSLContext, with --tls-cert
HOOK_CALLS = {}            # vm id -> [hook names]
ERROR_STYLE = ["header"]   # "header": x-amzn-ErrorType; "body": __type only
SHELL_MODE = ["agent"]     # what a shell token opens: "agent" (its PTY) or "refuse"
FAIL_BUILDS = [None]       # a reason: the builds of images created from now on fail


class ApiError(Exception):
    def __init__(self, status, etype, message, **extra):
        super().__init__(message)
        self.status, self.etype, self.message, self.extra = status, etype, message, extra


def validation(msg):
    return ApiError(400, "ValidationException", msg)


def now():
    return time.time()


# ---- the MicroVM: a real agent -------------------------------------------------

class VM:
    def __init__(self, vm_id, body, image_arn, version):
        self.id = vm_id
        self.body = body
        self.image_arn = image_arn
        self.version = version
        self.state = "PENDING"
        self.reason = None
        self.started = now()
        self.terminated = None
        self.proc = None
        self.api_port = None
        self.hooks_port = None
        self.proxy = None
        self.dir = os.path.join(ARGS.dir, vm_id)
        os.makedirs(os.path.join(self.dir, "ws"), exist_ok=True)
        self.last_traffic = now()

    def describe(self, full=True):
        d = {"microvmId": self.id, "imageArn": self.image_arn, "imageVersion": self.version,
             "state": self.state, "startedAt": self.started}
        if not full:
            return d
        d["endpoint"] = "%s://127.0.0.1:%d" % ("https" if TLS else "http",
                                               self.proxy.server_address[1])
        d["maximumDurationInSeconds"] = self.body.get("maximumDurationInSeconds", MAX_DURATION)
        for k in ("idlePolicy", "ingressNetworkConnectors", "egressNetworkConnectors",
                  "executionRoleArn"):
            if k in self.body:
                d[k] = self.body[k]
        if self.reason:
            d["stateReason"] = self.reason
        if self.terminated:
            d["terminatedAt"] = self.terminated
        return d

    def hook(self, name, body=b"", timeout=60):
        HOOK_CALLS.setdefault(self.id, []).append(name)
        c = http.client.HTTPConnection("127.0.0.1", self.hooks_port, timeout=timeout)
        c.request("POST", HOOKS + "/" + name, body=body,
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, data

    def start(self):
        log = os.path.join(self.dir, "agent.log")
        self.proc = subprocess.Popen(
            [ARGS.agent, "--listen", "tcp:127.0.0.2:0", "--hooks", "tcp:127.0.0.1:0",
             "--workspace", os.path.join(self.dir, "ws"), "--log", log],
            stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = now() + 10
        while now() < deadline and (self.api_port is None or self.hooks_port is None):
            try:
                text = open(log).read()
            except OSError:
                text = ""
            m = re.search(r"listening on tcp:127\.0\.0\.2:(\d+) ", text)
            h = re.search(r"listening on tcp:127\.0\.0\.1:(\d+) ", text)
            self.api_port = int(m.group(1)) if m else None
            self.hooks_port = int(h.group(1)) if h else None
            time.sleep(0.02)
        if self.api_port is None or self.hooks_port is None:
            return self.fail("the application did not start")
        # ready: called until it answers 200 (503 means "not yet").
        while now() < deadline:
            try:
                st, _ = self.hook("ready", timeout=5)
            except OSError:
                st = 0
            if st == 200:
                break
            time.sleep(0.05)
        else:
            return self.fail("the ready hook did not answer 200")
        payload = self.body.get("runHookPayload")
        if payload is not None:
            env = json.dumps({"microvmId": self.id, "runHookPayload": payload}).encode()
            st, data = self.hook("run", env)
            if st != 200:
                return self.fail("the run hook failed with status %d: %s" %
                                 (st, data.decode(errors="replace")[:200]))
        with LOCK:
            if self.state == "PENDING":
                self.state = "RUNNING"

    def fail(self, reason):
        with LOCK:
            self.kill()
            self.state = "TERMINATED"
            self.reason = reason
            self.terminated = now()

    def kill(self):
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def suspend(self):
        self.hook("suspend")
        os.killpg(self.proc.pid, signal.SIGSTOP)
        with LOCK:
            self.state = "SUSPENDED"

    def resume(self):
        os.killpg(self.proc.pid, signal.SIGCONT)
        self.hook("resume")
        with LOCK:
            self.state = "RUNNING"

    def terminate(self, reason="Terminated by TerminateMicrovm"):
        if self.state == "SUSPENDED":
            os.killpg(self.proc.pid, signal.SIGCONT)
        try:
            self.hook("terminate", timeout=10)
        except OSError:
            pass
        with LOCK:
            self.kill()
            self.state = "TERMINATED"
            self.reason = reason
            self.terminated = now()
        self.proxy.shutdown()


# ---- the endpoint proxy: token check, then bytes both ways ---------------------

def proxy_server(vm):
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)

    class Proxy:
        server_address = srv.getsockname()
        stop = False

        def shutdown(self):
            self.stop = True
            try:
                srv.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            srv.close()

    p = Proxy()

    def loop():
        while not p.stop:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            threading.Thread(target=proxy_tls, args=(vm, c), daemon=True).start()
    threading.Thread(target=loop, daemon=True).start()
    return p


def deny(c, status, msg):
    body = json.dumps({"message": msg}).encode()
    c.sendall(b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
              b"Connection: close\r\n\r\n" % (status, b"Forbidden" if status == 403 else
                                                b"Error", len(body)) + body)
    c.close()


def proxy_tls(vm, c):
    if TLS is not None:
        try:
            c.settimeout(10)
            c = TLS.wrap_socket(c, server_side=True)
            c.settimeout(None)
        except (OSError, ssl.SSLError) as e:
            LOG.append(("proxy", 0, "tls: %s" % e))
            c.close()
            return
    try:
        proxy_conn(vm, c)
    except OSError:
        c.close()


def ws_port(get):
    """The port a WebSocket handshake names in its subprotocols, and the
    subprotocols left for the application (the platform's taken out)."""
    port, rest = None, []
    for p in (x.strip() for x in get.get("sec-websocket-protocol", "").split(",")):
        if p.startswith("lambda-microvms.port."):
            port = int(p[len("lambda-microvms.port."):]) if p[21:].isdigit() else 0
        elif p and p != "lambda-microvms":
            rest.append(p)
    return port, rest


def proxy_conn(vm, c):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = c.recv(65536)
        if not chunk or len(data) > 65536:
            c.close()
            return
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    hdrs = [(l.split(":", 1)[0].strip(), l.split(":", 1)[1].strip()) for l in lines[1:] if ":" in l]
    get = {k.lower(): v for k, v in hdrs}
    tok = get.get("x-aws-proxy-auth")
    upgrade = "upgrade" in get.get("connection", "").lower()
    wsport, subprotos = ws_port(get) if upgrade else (None, [])
    hp = get.get("x-aws-proxy-port")
    try:
        port = int(hp) if hp is not None else wsport if wsport is not None else AGENT_PORT
    except ValueError:
        return deny(c, 400, "X-aws-proxy-port is not a port number")
    with LOCK:
        t = TOKENS.get(tok) if tok else None
        ok = t is not None and t[0] == vm.id and t[2] > now()
        port_ok = ok and port in t[1]
        st = SHELL_TOKENS.get(tok) if tok else None
        state = vm.state
    shell = ""
    if st is not None:
        # A shell token (CreateMicrovmShellAuthToken) is "interactive shell
        # access": here, the agent's PTY and nothing else; with shell-mode
        # "refuse", as a proxy that sends such tokens elsewhere would.
        if SHELL_MODE[0] == "refuse":
            LOG.append(("proxy", 403, "shell token refused"))
            return deny(c, 403, "Forbidden: this endpoint takes no shell tokens")
        if st[0] != vm.id or st[1] <= now():
            LOG.append(("proxy", 403, "shell token"))
            return deny(c, 403, "Forbidden: invalid or expired shell token")
        if not (upgrade and lines[0].startswith("GET /v1/pty")):
            LOG.append(("proxy", 403, "shell token off the shell"))
            return deny(c, 403, "Forbidden: a shell token opens an interactive shell only")
        ok = port_ok = True
        port = AGENT_PORT
        shell = "shell "
    if not ok:
        LOG.append(("proxy", 403, "token"))
        return deny(c, 403, "Forbidden: missing, invalid or expired X-aws-proxy-auth token")
    if not port_ok:
        LOG.append(("proxy", 403, "port %d" % port))
        return deny(c, 403, "Forbidden: port %d is not in the token's allowedPorts" % port)
    if state == "SUSPENDED" and vm.body.get("idlePolicy", {}).get("autoResumeEnabled"):
        vm.resume()
    elif state != "RUNNING":
        return deny(c, 502, "MicroVM is %s" % state)
    vm.last_traffic = now()
    keep = [(k, v) for k, v in hdrs if k.lower() not in
            ("x-aws-proxy-auth", "x-aws-proxy-port", "connection", "sec-websocket-protocol")]
    if WS_KEY[0] is not None:
        keep = [(k, WS_KEY[0] if k.lower() == "sec-websocket-key" else v) for k, v in keep]
    if subprotos:
        keep.append(("Sec-WebSocket-Protocol", ", ".join(subprotos)))
    out = lines[0] + "\r\n" + "".join("%s: %s\r\n" % kv for kv in keep)
    out += "Connection: %s\r\n\r\n" % ("Upgrade" if upgrade else "close")
    # The VM's ports: the agent's API is its 8080; a server the sandbox started
    # listens on this host's loopback (the fake's "VM" runs processes here).
    try:
        a = socket.create_connection(("127.0.0.2", vm.api_port) if port == AGENT_PORT else
                                     ("127.0.0.1", port), timeout=5)
        a.settimeout(None)
    except OSError:
        return deny(c, 502, "nothing listens on port %d in the MicroVM" % port)
    LOG.append(("proxy", 200, "%sport %d%s" % (shell, port, " upgrade" if upgrade else "")))
    a.sendall(out.encode("latin-1") + rest)
    pump(c, a)


def pump(x, y):
    socks = [x, y]
    open_ = {x: True, y: True}
    while open_[x] or open_[y]:
        r, _, _ = select.select([s for s in socks if open_[s]], [], [], 600)
        if not r:
            break
        for s in r:
            other = y if s is x else x
            try:
                d = s.recv(65536)
                # TLS: what select cannot see is already decrypted here.
                while d and isinstance(s, ssl.SSLSocket) and s.pending():
                    d += s.recv(s.pending())
            except (OSError, ssl.SSLError):
                d = b""
            if not d:
                open_[s] = False
                try:
                    if isinstance(other, ssl.SSLSocket):
                        open_[other] = False    # no TLS half-close here: done
                    else:
                        other.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                if s is y:        # the agent is done: so is the client's request
                    open_[x] = False
                continue
            try:
                other.sendall(d)
            except OSError:
                open_[s] = open_[other] = False
    x.close()
    y.close()


# ---- validation ----------------------------------------------------------------

def arn_re(kind):
    return re.compile(r"^arn:aws[a-z-]*:lambda:%s:(\d{12}|aws):%s:[A-Za-z0-9_.:/+-]{1,200}$" %
                      (re.escape(ARGS.region), kind))


def check_fields(body, allowed, required):
    if not isinstance(body, dict):
        raise validation("The request body must be a JSON object")
    for k in body:
        if k not in allowed:
            raise validation("Unknown field '%s'" % k)
    for k in required:
        if k not in body:
            raise validation("Value null at '%s' failed to satisfy constraint: Member must "
                             "not be null" % k)


def want_int(body, k, lo, hi=None):
    v = body.get(k)
    if not isinstance(v, int) or isinstance(v, bool):
        raise validation("'%s' must be an integer" % k)
    if v < lo or (hi is not None and v > hi):
        raise validation("Value '%d' at '%s' failed to satisfy constraint: Member must have "
                         "value %s" % (v, k, "between %d and %d" % (lo, hi) if hi is not None
                                       else "greater than or equal to %d" % lo))
    return v


def want_str(body, k, lo, hi):
    v = body.get(k)
    if not isinstance(v, str) or not lo <= len(v) <= hi:
        raise validation("'%s' must be a string of %d to %d characters" % (k, lo, hi))
    return v


def run_microvm(body):
    check_fields(body, {"clientToken", "egressNetworkConnectors", "executionRoleArn",
                        "idlePolicy", "imageIdentifier", "imageVersion",
                        "ingressNetworkConnectors", "logging", "maximumDurationInSeconds",
                        "runHookPayload"}, ["imageIdentifier"])
    arn = want_str(body, "imageIdentifier", 20, 2048)
    if not arn_re("microvm-image").match(arn):
        raise validation("imageIdentifier must be a MicroVM image ARN in %s" % ARGS.region)
    if "maximumDurationInSeconds" in body:
        want_int(body, "maximumDurationInSeconds", 1, MAX_DURATION)
    if "runHookPayload" in body:
        p = body["runHookPayload"]
        if not isinstance(p, str) or len(p.encode()) > RUN_PAYLOAD_MAX:
            raise validation("runHookPayload must be a string of at most %d bytes" %
                             RUN_PAYLOAD_MAX)
    if "idlePolicy" in body:
        ip = body["idlePolicy"]
        check_fields(ip, {"autoResumeEnabled", "maxIdleDurationSeconds",
                          "suspendedDurationSeconds"},
                     ["autoResumeEnabled", "maxIdleDurationSeconds", "suspendedDurationSeconds"])
        if not isinstance(ip["autoResumeEnabled"], bool):
            raise validation("idlePolicy.autoResumeEnabled must be a boolean")
        want_int(ip, "maxIdleDurationSeconds", 60)
        want_int(ip, "suspendedDurationSeconds", 0)
    for k in ("ingressNetworkConnectors", "egressNetworkConnectors"):
        if k in body:
            v = body[k]
            if not isinstance(v, list) or len(v) > 10:
                raise validation("%s must be a list of at most 10 ARNs" % k)
            for a in v:
                if not isinstance(a, str) or not arn_re("network-connector").match(a):
                    raise validation("%s: '%s' is not a network connector ARN" % (k, a))
    if "clientToken" in body:
        want_str(body, "clientToken", 1, 128)
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
    with LOCK:
        if "clientToken" in body and body["clientToken"] in CLIENT_TOKENS:
            d, vid = CLIENT_TOKENS[body["clientToken"]]
            if d != digest:
                raise ApiError(409, "ConflictException", "clientToken was used with "
                               "different parameters")
            return 200, VMS[vid].describe()
        img = IMAGES.get(arn)
        if img is None:
            raise ApiError(404, "ResourceNotFoundException", "MicroVM image %s not found" % arn,
                           resourceId=arn, resourceType="MicrovmImage")
        version = body.get("imageVersion", img["latestVersion"])
        if version not in img["versions"] or img["versions"][version] != "ACTIVE":
            raise validation("imageVersion %s of %s is not ACTIVE" % (version, arn))
        vid = "mvm-" + secrets.token_hex(8)
        vm = VM(vid, body, arn, version)
        vm.proxy = proxy_server(vm)
        VMS[vid] = vm
        ORDER.append(vid)
        if "clientToken" in body:
            CLIENT_TOKENS[body["clientToken"]] = (digest, vid)
    threading.Thread(target=vm.start, daemon=True).start()
    return 200, vm.describe()


def get_vm(vid):
    with LOCK:
        vm = VMS.get(vid)
    if vm is None:
        raise ApiError(404, "ResourceNotFoundException", "MicroVM %s not found" % vid,
                       resourceId=vid, resourceType="Microvm")
    return vm


def transition(vm, frm, op):
    with LOCK:
        if vm.state != frm:
            raise ApiError(409, "ConflictException", "MicroVM %s is %s; %s needs %s" %
                           (vm.id, vm.state, op, frm), resourceId=vm.id,
                           resourceType="Microvm")
        vm.state = {"SuspendMicrovm": "SUSPENDING", "ResumeMicrovm": "PENDING"}[op]


def list_microvms(q):
    for k in q:
        if k not in ("maxResults", "nextToken", "imageIdentifier", "imageVersion"):
            raise validation("Unknown query parameter '%s'" % k)
    mr = q.get("maxResults", ["50"])[0]
    if not mr.isdigit() or not 1 <= int(mr) <= 50:
        raise validation("maxResults must be between 1 and 50")
    start = 0
    if "nextToken" in q:
        try:
            start = int(base64.urlsafe_b64decode(q["nextToken"][0]).decode().split(":")[1])
        except Exception:
            raise validation("Invalid nextToken")
    with LOCK:
        # AWS may return fewer than maxResults: --max-page makes the fake do so.
        size = min(int(mr), ARGS.max_page)
        ids = ORDER[start:start + size]
        items = [VMS[i].describe(full=False) for i in ids]
        more = start + size < len(ORDER)
    r = {"items": items}
    if more:
        r["nextToken"] = base64.urlsafe_b64encode(b"page:%d" % (start + size)).decode()
    return 200, r


def auth_token(vm, body):
    check_fields(body, {"allowedPorts", "expirationInMinutes"},
                 ["allowedPorts", "expirationInMinutes"])
    mins = want_int(body, "expirationInMinutes", 1, 60)
    ports = body["allowedPorts"]
    if not isinstance(ports, list) or not ports:
        raise validation("allowedPorts must have at least 1 item")
    allowed = set()
    for p in ports:
        if not isinstance(p, dict) or len(p) != 1:
            raise validation("a PortSpecification has exactly one of port, range, allPorts")
        if "port" in p:
            want_int(p, "port", 1, 65535)
            allowed.add(p["port"])
        elif "range" in p:
            r = p["range"]
            check_fields(r, {"startPort", "endPort"}, ["startPort", "endPort"])
            allowed.update(range(want_int(r, "startPort", 1, 65535),
                                 want_int(r, "endPort", 1, 65535) + 1))
        elif "allPorts" in p:
            allowed.update(range(1, 65536))
        else:
            raise validation("unknown PortSpecification member")
    if vm.state in ("TERMINATING", "TERMINATED"):
        raise ApiError(409, "ConflictException", "MicroVM %s is %s" % (vm.id, vm.state),
                       resourceId=vm.id, resourceType="Microvm")
    tok = secrets.token_urlsafe(32)
    with LOCK:
        TOKENS[tok] = (vm.id, allowed, now() + mins * ARGS.minute_seconds)
    return 200, {"authToken": {"X-aws-proxy-auth": tok}}


SHELL_TOKENS = {}          # shell token -> (vm id, expires_at)


def shell_token(vm, body):
    """CreateMicrovmShellAuthToken: {expirationInMinutes >= 1}; the MicroVM must run
    with the SHELL_INGRESS connector (the API reference's words)."""
    check_fields(body, {"expirationInMinutes"}, ["expirationInMinutes"])
    mins = want_int(body, "expirationInMinutes", 1)
    if not any(a.endswith(":SHELL_INGRESS") for a in vm.body.get("ingressNetworkConnectors",
                                                                   [])):
        raise validation("MicroVM %s was not run with the SHELL_INGRESS network connector" %
                         vm.id)
    if vm.state in ("TERMINATING", "TERMINATED"):
        raise ApiError(409, "ConflictException", "MicroVM %s is %s" % (vm.id, vm.state),
                       resourceId=vm.id, resourceType="Microvm")
    tok = secrets.token_urlsafe(32)
    with LOCK:
        SHELL_TOKENS[tok] = (vm.id, now() + min(mins, 60) * ARGS.minute_seconds)
    return 200, {"authToken": {"X-aws-proxy-auth": tok}}


IMAGE_FIELDS = {"additionalOsCapabilities", "baseImageArn", "baseImageVersion", "buildRoleArn",
                "clientToken", "codeArtifact", "cpuConfigurations", "description",
                "egressNetworkConnectors", "environmentVariables", "hooks", "logging", "name",
                "resources", "tags"}


def create_image(body):
    check_fields(body, IMAGE_FIELDS, ["baseImageArn", "buildRoleArn", "codeArtifact", "name"])
    name = want_str(body, "name", 1, 64)
    if not re.match(r"^[A-Za-z0-9_-]+$", name):
        raise validation("name may hold letters, digits, '-' and '_'")
    if not re.match(r"^arn:aws[a-z\-]*:iam::[0-9]{12}:role/?[a-zA-Z_0-9+=,.@\-_/]+$",
                    body["buildRoleArn"]):
        raise validation("buildRoleArn is not an IAM role ARN")
    ca = body["codeArtifact"]
    if not isinstance(ca, dict) or set(ca) != {"uri"} or not str(ca["uri"]).startswith("s3://"):
        raise validation("codeArtifact must be {\"uri\": \"s3://bucket/key.zip\"}")
    hooks = body.get("hooks", {})
    if hooks:
        check_fields(hooks, {"port", "microvmHooks", "microvmImageHooks"}, ["port"])
        want_int(hooks, "port", 1, 65535)
        for k, v in list(hooks.get("microvmHooks", {}).items()) + \
                list(hooks.get("microvmImageHooks", {}).items()):
            if k.endswith("TimeoutInSeconds"):
                want_int({k: v}, k, 1, 60 if k[:3] in ("run", "res", "sus", "ter") else 900)
            elif v not in ("ENABLED", "DISABLED"):
                raise validation("hook %s must be ENABLED or DISABLED" % k)
    for k in ("cpuConfigurations",):
        v = body.get(k, [])
        if not isinstance(v, list) or any(not isinstance(c, dict) or set(c) != {"architecture"}
                                          for c in v):
            raise validation("cpuConfigurations must be a list of {\"architecture\": ...}")
    arn = "arn:aws:lambda:%s:%s:microvm-image:%s" % (ARGS.region, ARGS.account, name)
    with LOCK:
        if arn in IMAGES:
            raise ApiError(409, "ConflictException", "MicroVM image %s already exists" % name,
                           resourceId=arn, resourceType="MicrovmImage")
        IMAGES[arn] = {"imageArn": arn, "name": name, "state": "CREATING",
                       "latestVersion": "1", "versions": {"1": "INACTIVE"},
                       "created": now(), "body": body, "fail": FAIL_BUILDS[0]}
    # CreateMicrovmImageResponse: the eight required members, and what was asked.
    r = {"imageArn": arn, "name": name, "state": "CREATING", "createdAt": int(now()),
         "baseImageArn": body["baseImageArn"], "buildRoleArn": body["buildRoleArn"],
         "codeArtifact": body["codeArtifact"], "imageVersion": "1"}
    for k in ("description", "cpuConfigurations", "hooks", "tags"):
        if k in body:
            r[k] = body[k]
    return 201, r


def get_image(ident):
    with LOCK:
        img = IMAGES.get(ident) or next((i for i in IMAGES.values() if i["name"] == ident), None)
        if img is None:
            raise ApiError(404, "ResourceNotFoundException", "MicroVM image %s not found" % ident,
                           resourceId=ident, resourceType="MicrovmImage")
        if img["state"] == "CREATING" and now() - img["created"] > 1.0:
            img["state"] = "CREATE_FAILED" if img.get("fail") else "CREATED"
            img["versions"]["1"] = "INACTIVE" if img.get("fail") else "ACTIVE"
        # GetMicrovmImageOutput: imageArn, name, state, createdAt required.
        r = {"imageArn": img["imageArn"], "name": img["name"], "state": img["state"],
             "createdAt": int(img["created"])}
        active = [v for v, st in img["versions"].items() if st == "ACTIVE"]
        if active:
            r["latestActiveImageVersion"] = active[-1]
        if img["state"] == "CREATE_FAILED":
            r["latestFailedImageVersion"] = img["latestVersion"]
        return 200, r


def list_image_builds(ident, version, q):
    for k in q:
        if k not in ("maxResults", "nextToken", "architecture", "chipset", "chipsetGeneration"):
            raise validation("Unknown query parameter '%s'" % k)
    with LOCK:
        img = IMAGES.get(ident) or next((i for i in IMAGES.values() if i["name"] == ident), None)
        if img is None or version not in img["versions"]:
            raise ApiError(404, "ResourceNotFoundException", "MicroVM image %s version %s not "
                           "found" % (ident, version), resourceId=ident,
                           resourceType="MicrovmImageVersion")
        failed = img["state"] == "CREATE_FAILED"
        done = img["state"] != "CREATING"
        # MicrovmImageBuildSummary: the eight required members, and why it failed.
        b = {"imageArn": img["imageArn"], "imageVersion": version, "buildId": "build-1",
             "buildState": "FAILED" if failed else "SUCCESSFUL" if done else "IN_PROGRESS",
             "architecture": "ARM_64", "chipset": "GRAVITON", "chipsetGeneration": "4",
             "createdAt": int(img["created"])}
        if failed:
            b["stateReason"] = img["fail"]
        return 200, {"items": [b]}


def get_image_version(ident, version):
    with LOCK:
        img = IMAGES.get(ident) or next((i for i in IMAGES.values() if i["name"] == ident), None)
        if img is None or version not in img["versions"]:
            raise ApiError(404, "ResourceNotFoundException", "MicroVM image %s version %s not "
                           "found" % (ident, version), resourceId=ident,
                           resourceType="MicrovmImageVersion")
        body = img.get("body") or {}
        status = img["versions"][version]
        # GetMicrovmImageVersionOutput: the eight required members.  An image the
        # fake was started with was built, as setup builds it, from setup's bucket
        # and role.
        return 200, {
            "baseImageArn": body.get("baseImageArn", "arn:aws:lambda:%s:aws:microvm-image:"
                                     "al2023-1" % ARGS.region),
            "buildRoleArn": body.get("buildRoleArn", "arn:aws:iam::%s:role/sbxtop-build" %
                                     ARGS.account),
            "codeArtifact": body.get("codeArtifact", {"uri": "s3://sbxtop-%s-%s/sbxtop/"
                                                     "sbxtop.zip" % (ARGS.account,
                                                                     ARGS.region)}),
            "imageArn": img["imageArn"], "imageVersion": version,
            "state": "SUCCESSFUL" if status == "ACTIVE" else "IN_PROGRESS",
            "status": status, "createdAt": int(img["created"])}


# ---- SigV4 verification ---------------------------------------------------------

SIG_ERRORS = {   # sigv4_oracle.SigError kinds -> this service's exceptions
    "missing": "MissingAuthenticationTokenException", "incomplete": "IncompleteSignatureException",
    "unknown_key": "UnrecognizedClientException", "bad_token": "UnrecognizedClientException",
    "skew": "InvalidSignatureException", "scope": "InvalidSignatureException",
    "unsigned_header": "InvalidSignatureException", "mismatch": "InvalidSignatureException",
}


def verify(h, body, service_expected):
    try:
        sigv4_oracle.verify(h.command, h.path, h.headers, body, ARGS.access_key,
                            ARGS.secret_key, ARGS.session_token, ARGS.region, service_expected,
                            skew=SKEW)
    except sigv4_oracle.SigError as e:
        raise ApiError(403, SIG_ERRORS[e.kind], e.message)


# ---- routing --------------------------------------------------------------------

def route(h, body):
    url = urllib.parse.urlsplit(h.path)
    path = url.path
    q = urllib.parse.parse_qs(url.query, keep_blank_values=True)
    if path == "/" and h.command == "POST":
        verify(h, body, "sts")
        form = urllib.parse.parse_qs(body.decode())
        if form.get("Action") != ["GetCallerIdentity"]:
            raise validation("unsupported STS action")
        return "GetCallerIdentity", 200, None
    verify(h, body, "lambda")
    segs = [urllib.parse.unquote(s) for s in path.split("/")[1:]]
    if not path.startswith(API + "/"):
        raise ApiError(404, "UnknownOperationException", "Unknown operation")
    segs = segs[1:]
    if body and not (h.headers.get("Content-Type") or "").startswith("application/json"):
        raise ApiError(415, "UnsupportedMediaTypeException", "a JSON body needs "
                       "Content-Type: application/json")
    try:
        obj = json.loads(body) if body else {}
    except ValueError:
        raise ApiError(400, "SerializationException", "The request body is not valid JSON")
    m = h.command
    if segs == ["microvms"] and m == "POST":
        return ("RunMicrovm",) + run_microvm(obj)
    if segs == ["microvms"] and m == "GET":
        return ("ListMicrovms",) + list_microvms(q)
    if len(segs) == 2 and segs[0] == "microvms" and m == "GET":
        return "GetMicrovm", 200, get_vm(segs[1]).describe()
    if len(segs) == 2 and segs[0] == "microvms" and m == "DELETE":
        vm = get_vm(segs[1])
        if body:
            raise validation("TerminateMicrovm takes no request body")
        with LOCK:
            if vm.state in ("TERMINATING", "TERMINATED"):
                raise ApiError(409, "ConflictException", "MicroVM %s is already %s" %
                               (vm.id, vm.state), resourceId=vm.id, resourceType="Microvm")
            vm.state = "TERMINATING"
        threading.Thread(target=vm.terminate, daemon=True).start()
        return "TerminateMicrovm", 200, {}
    if len(segs) == 3 and segs[0] == "microvms" and m == "POST":
        vm, act = get_vm(segs[1]), segs[2]
        if act in ("suspend", "resume") and body:
            raise validation("this operation takes no request body")
        if act == "suspend":
            transition(vm, "RUNNING", "SuspendMicrovm")
            threading.Thread(target=vm.suspend, daemon=True).start()
            return "SuspendMicrovm", 200, {}
        if act == "resume":
            transition(vm, "SUSPENDED", "ResumeMicrovm")
            threading.Thread(target=vm.resume, daemon=True).start()
            return "ResumeMicrovm", 200, {}
        if act == "auth-token":
            return ("CreateMicrovmAuthToken",) + auth_token(vm, obj)
        if act == "shell-auth-token":
            return ("CreateMicrovmShellAuthToken",) + shell_token(vm, obj)
    if segs == ["microvm-images"] and m == "POST":
        return ("CreateMicrovmImage",) + create_image(obj)
    if len(segs) == 2 and segs[0] == "microvm-images" and m == "GET":
        return ("GetMicrovmImage",) + get_image(segs[1])
    if len(segs) == 4 and segs[0] == "microvm-images" and segs[2] == "versions" and m == "GET":
        return ("GetMicrovmImageVersion",) + get_image_version(segs[1], segs[3])
    if len(segs) == 5 and segs[0] == "microvm-images" and segs[2] == "versions" and \
            segs[4] == "builds" and m == "GET":
        return ("ListMicrovmImageBuilds",) + list_image_builds(segs[1], segs[3], q)
    raise ApiError(404, "UnknownOperationException", "Unknown operation %s %s" % (m, path))


def control(h, body):
    obj = json.loads(body) if body else {}
    p = h.path
    if p == "/_fake/throttle":
        THROTTLE[obj["op"]] = [obj.get("count", 1), obj.get("status", 429)]
        return {}
    if p == "/_fake/vanish":
        vm = get_vm(obj["microvmId"])
        vm.terminate(obj.get("reason", "Terminated: maximum duration reached"))
        return {}
    if p == "/_fake/expire-tokens":
        with LOCK:
            for k, v in list(TOKENS.items()):
                TOKENS[k] = (v[0], v[1], 0)
            for k, v in list(SHELL_TOKENS.items()):
                SHELL_TOKENS[k] = (v[0], 0)
        return {"expired": len(TOKENS)}
    if p == "/_fake/shell-tokens":
        with LOCK:
            return {"count": len(SHELL_TOKENS)}
    if p == "/_fake/fail-builds":
        FAIL_BUILDS[0] = obj.get("reason")
        return {}
    if p == "/_fake/shell-mode":
        SHELL_MODE[0] = obj["mode"]
        return {}
    if p == "/_fake/error-style":
        ERROR_STYLE[0] = obj["style"]
        return {}
    if p == "/_fake/log":
        return {"log": LOG}
    if p == "/_fake/ws-key":
        WS_KEY[0] = obj.get("key")
        return {}
    if p == "/_fake/hooks":
        return HOOK_CALLS
    if p == "/_fake/images":
        with LOCK:
            return {k: v.get("body") for k, v in IMAGES.items()}
    if p == "/_fake/vms":
        with LOCK:
            return {k: {"state": v.state, "pid": v.proc.pid if v.proc else None,
                        "body": v.body} for k, v in VMS.items()}
    raise ApiError(404, "NotFound", "no such control")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        pass

    def answer(self, status, obj, etype=None, xml=None):
        retry = None
        if isinstance(obj, dict) and "retryAfterSeconds" in obj:
            # An httpHeader member in the model: Retry-After, not the body.
            obj = dict(obj)
            retry = obj.pop("retryAfterSeconds")
        data = xml.encode() if xml else (json.dumps(obj).encode() if obj is not None else b"")
        self.send_response(status)
        if retry is not None:
            self.send_header("Retry-After", str(retry))
        self.send_header("Content-Type", "text/xml" if xml else "application/json")
        self.send_header("x-amzn-RequestId", secrets.token_hex(16))
        if etype and ERROR_STYLE[0] == "body" and isinstance(obj, dict):
            # Some REST-JSON services name the error in the body alone, with the
            # model's namespace: the SDKs read both.
            obj = dict(obj, __type="com.amazonaws.lambdamicrovms#" + etype)
            data = json.dumps(obj).encode()
        elif etype:
            self.send_header("x-amzn-ErrorType", etype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        if self.path.startswith("/_fake/"):
            try:
                return self.answer(200, control(self, body))
            except ApiError as e:
                return self.answer(e.status, {"message": e.message}, e.etype)
        op = "?"
        try:
            for name, t in list(THROTTLE.items()):
                if t[0] > 0 and self.op_name() == name:
                    t[0] -= 1
                    if t[1] == 429:
                        raise ApiError(429, "ThrottlingException", "Rate exceeded",
                                       serviceCode="lambda", quotaCode="L-FAKE0001",
                                       retryAfterSeconds=0)
                    raise ApiError(t[1], "InternalServerException", "Internal error",
                                   retryAfterSeconds=0)
            op, status, obj = route(self, body)
            LOG.append((op, status, None))
            if op == "GetCallerIdentity":
                return self.answer(200, None, xml=(
                    "<GetCallerIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"
                    "<GetCallerIdentityResult><Arn>arn:aws:iam::%s:user/sbxtop-test</Arn>"
                    "<UserId>AIDAFAKE</UserId><Account>%s</Account></GetCallerIdentityResult>"
                    "</GetCallerIdentityResponse>" % (ARGS.account, ARGS.account)))
            return self.answer(status, obj)
        except ApiError as e:
            LOG.append((self.op_name(), e.status, e.etype))
            d = {"message": e.message}
            d.update(e.extra)
            return self.answer(e.status, d, e.etype)

    def op_name(self):
        p = urllib.parse.urlsplit(self.path).path
        segs = p.split("/")[2:]
        if p == "/":
            return "GetCallerIdentity"
        if segs == ["microvms"]:
            return "RunMicrovm" if self.command == "POST" else "ListMicrovms"
        if len(segs) == 2 and segs[0] == "microvms":
            return "TerminateMicrovm" if self.command == "DELETE" else "GetMicrovm"
        if len(segs) == 3 and segs[0] == "microvms":
            return {"suspend": "SuspendMicrovm", "resume": "ResumeMicrovm",
                    "auth-token": "CreateMicrovmAuthToken",
                    "shell-auth-token": "CreateMicrovmShellAuthToken"}.get(segs[2], "?")
        if segs == ["microvm-images"]:
            return "CreateMicrovmImage"
        if len(segs) == 2 and segs[0] == "microvm-images":
            return "GetMicrovmImage"
        if len(segs) == 4 and segs[0] == "microvm-images":
            return "GetMicrovmImageVersion"
        if len(segs) == 5 and segs[0] == "microvm-images":
            return "ListMicrovmImageBuilds"
        return "?"

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = handle_any


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--access-key", default="AKIAFAKEFAKEFAKE0001")
    ap.add_argument("--secret-key", default="fake/secret+key/0123456789abcdefghijklm")
    ap.add_argument("--session-token", default=None)
    ap.add_argument("--region", default="us-west-2")
    ap.add_argument("--account", default="123456789012")
    ap.add_argument("--image", action="append", default=[])
    ap.add_argument("--minute-seconds", type=float, default=60.0)
    ap.add_argument("--max-page", type=int, default=50)
    ap.add_argument("--tls-cert", help="PEM certificate (chain) of the endpoints: HTTPS")
    ap.add_argument("--tls-key", help="its private key")
    ARGS = ap.parse_args()
    global TLS
    if ARGS.tls_cert:
        TLS = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        TLS.load_cert_chain(ARGS.tls_cert, ARGS.tls_key)
    for arn in ARGS.image:
        IMAGES[arn] = {"imageArn": arn, "name": arn.rsplit(":", 1)[1], "state": "CREATED",
                       "latestVersion": "1", "versions": {"1": "ACTIVE"}, "created": 0}
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True

    def bye(*_):
        for vm in list(VMS.values()):
            vm.kill()
        os._exit(0)
    signal.signal(signal.SIGTERM, bye)
    signal.signal(signal.SIGINT, bye)
    tmp = ARGS.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(tmp, ARGS.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
