# A few MCP tool calls against `sbxtop --standalone --mcp`, for tests/integration/ssh.sh:
# sandbox_create on a host, sandbox_exec, sandbox_vm_logs, sandbox_list, sandbox_destroy; one line each.
#   python3 mcp-host.py SBXTOP HOST
import json
import subprocess
import sys

p = subprocess.Popen([sys.argv[1], "--standalone", "--mcp"], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, text=True)
n = 0


def send(msg):
    p.stdin.write(json.dumps(msg) + "\n")
    p.stdin.flush()


def call(method, params):
    global n
    n += 1
    send({"jsonrpc": "2.0", "id": n, "method": method, "params": params})
    while True:
        m = json.loads(p.stdout.readline())
        if m.get("id") == n:
            return m


def tool(name, args):
    return call("tools/call", {"name": name, "arguments": args})["result"]


call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"}})
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
sc = tool("sandbox_create", {"host": sys.argv[2]})["structuredContent"]
sid = sc["sandbox_id"]
print("create", sc["host"], sc["backend"])
r = tool("sandbox_exec", {"sandbox_id": sid, "command": "echo via mcp"})
print("exec", r["structuredContent"]["stdout"].strip())
r = tool("sandbox_vm_logs", {"sandbox_id": sid})
print("vmlogs", any("sbxtop-agent" in x and "ready" in x for x in r["structuredContent"]["lines"]))
r = tool("sandbox_list", {})
print("list", [s["host"] for s in r["structuredContent"]["sandboxes"] if s["sandbox_id"] == sid])
r = tool("sandbox_destroy", {"sandbox_id": sid})
print("destroy", r.get("isError", False))
p.stdin.close()
p.wait()
