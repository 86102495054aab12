# net-events.py SOCKET SECONDS OUT: the net.* events of the core server at SOCKET,
# one JSON object a line into OUT, for SECONDS (tests of the network policy).
import json, socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
f = s.makefile("rw")
def send(o): f.write(json.dumps(o) + "\n"); f.flush()
send({"jsonrpc": "2.0", "id": 1, "method": "sbxtop/hello",
      "params": {"client": {"kind": "cli", "name": "net-events", "version": "0.1.0"}}})
send({"jsonrpc": "2.0", "id": 2, "method": "sbxtop/subscribe", "params": {"from": 0}})
s.settimeout(float(sys.argv[2]))
end = time.time() + float(sys.argv[2])
out = open(sys.argv[3], "w")
try:
    while time.time() < end:
        l = f.readline()
        if not l: break
        m = json.loads(l)
        if m.get("method") == "sbxtop/event" and m["params"]["type"].startswith("net."):
            out.write(json.dumps(m["params"]) + "\n"); out.flush()
except (socket.timeout, OSError):
    pass
