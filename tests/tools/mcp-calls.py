# JSON-RPC calls through `sbxtop --mcp`, one answer per line, each within a
# deadline: python3 mcp-calls.py SBXTOP TIMEOUT_S 'METHOD' 'PARAMS_JSON' ...
# A call that gets no answer in time prints {"timeout": METHOD} and ends the run.
# The client's name is MCP_CLIENT (default trust-test).
import json
import os
import select
import subprocess
import sys
import time

p = subprocess.Popen([sys.argv[1], "--mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
timeout = float(sys.argv[2])
buf = b""
n = 0


def send(msg):
    p.stdin.write((json.dumps(msg) + "\n").encode())
    p.stdin.flush()


def call(method, params):
    global n, buf
    n += 1
    send({"jsonrpc": "2.0", "id": n, "method": method, "params": params})
    until = time.time() + timeout
    while True:
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            m = json.loads(line)
            if m.get("id") == n:
                return m
        left = until - time.time()
        if left <= 0 or not select.select([p.stdout], [], [], left)[0]:
            return None
        chunk = p.stdout.read1(65536)
        if not chunk:
            return None
        buf += chunk


call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": os.environ.get("MCP_CLIENT", "trust-test"),
                                   "version": "1"}})
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
args = sys.argv[3:]
for i in range(0, len(args), 2):
    r = call(args[i], json.loads(args[i + 1]))
    if r is None:
        print(json.dumps({"timeout": args[i]}))
        sys.stdout.flush()
        p.kill()
        sys.exit(1)
    print(json.dumps(r))
    sys.stdout.flush()
p.stdin.close()
p.wait()
