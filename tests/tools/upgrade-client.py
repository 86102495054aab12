#!/usr/bin/env python3
"""A small client for the agent's upgraded connections (tunnels and PTYs), used by
the integration tests.  It speaks HTTP/1.1 over the agent's unix socket, does the
upgrade, then:

  request   print the answer as JSON {"status", "headers", "body", "early"} and close
  relay     copy stdin to the stream (then shut the write side) and the stream to
            stdout until the agent closes it (tunnels)
  stress    N tunnels at once, each sending SIZE random bytes to an echo server and
            checking the sha256 of what comes back (tunnels)
  pty       run a scripted exchange (JSON steps, see run_pty) over the PTY framing
            and print {"matches", "exit", "output"} as JSON

Standard library only."""
import argparse
import hashlib
import json
import os
import re
import select
import socket
import struct
import sys
import threading
import time


def connect(args, path, extra_headers=(), early=b""):
    """Send the request head (and early bytes in the same write); return the socket,
    the status, the headers and any bytes that followed the response head."""
    if args.sock.startswith("http://"):
        # A TCP endpoint (a qemu guest's agent through its host forward).
        host, port = args.sock[len("http://"):].rstrip("/").rsplit(":", 1)
        s = socket.create_connection((host, int(port)))
    else:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(args.sock)
    head = ["GET %s HTTP/1.1" % path, "Host: agent"]
    if args.secret:
        head.append("X-Sandbox-Secret: " + args.secret)
    if not args.no_upgrade:
        head += ["Connection: Upgrade", "Upgrade: " + args.proto]
    head += list(extra_headers)
    s.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + early)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            raise SystemExit("connection closed before a response head: %r" % data)
        data += chunk
    raw, rest = data.split(b"\r\n\r\n", 1)
    lines = raw.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return s, status, headers, rest


def read_body(s, headers, rest):
    n = int(headers.get("content-length", "0"))
    while len(rest) < n:
        chunk = s.recv(65536)
        if not chunk:
            break
        rest += chunk
    return rest[:n]


def early_bytes(args):
    """--early takes backslash escapes (\\r, \\n, \\xNN), so shells can pass CR LF."""
    return args.early.encode("latin-1").decode("unicode_escape").encode("latin-1")


def cmd_request(args):
    s, status, headers, rest = connect(args, args.path, args.header,
                                       early_bytes(args))
    body = b""
    if status != 101:
        body = read_body(s, headers, rest)
    elif args.read_after:
        s.settimeout(5)
        rest = bytearray(rest)
        try:
            while len(rest) < args.read_after:
                chunk = s.recv(65536)
                if not chunk:
                    break
                rest += chunk
        except socket.timeout:
            pass
        rest = bytes(rest)
    s.close()
    print(json.dumps({"status": status, "headers": headers,
                      "body": body.decode("utf-8", "replace"),
                      "early": rest.decode("utf-8", "replace")}))


def cmd_relay(args):
    s, status, headers, rest = connect(args, args.path, args.header,
                                       early_bytes(args))
    if status != 101:
        sys.stderr.write("status %d: %s\n" % (status, read_body(s, headers, rest)
                                               .decode("utf-8", "replace")))
        return 1
    out = sys.stdout.buffer
    out.write(rest)

    def pump_in():
        fd = sys.stdin.fileno()
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            s.sendall(chunk)
        s.shutdown(socket.SHUT_WR)

    t = threading.Thread(target=pump_in, daemon=True)
    t.start()
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        out.write(chunk)
    out.flush()
    t.join(30)
    return 0


def cmd_stress(args):
    results = [None] * args.n
    barrier = threading.Barrier(args.n)

    def one(i):
        try:
            data = os.urandom(args.size)
            s, status, headers, rest = connect(args, args.path, args.header)
            if status != 101:
                results[i] = "status %d" % status
                return
            barrier.wait(30)   # all tunnels open at the same time
            got = hashlib.sha256()
            got.update(rest)
            total = len(rest)

            def send():
                s.sendall(data)
                s.shutdown(socket.SHUT_WR)
            t = threading.Thread(target=send)
            t.start()
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got.update(chunk)
                total += len(chunk)
            t.join()
            s.close()
            ok = got.hexdigest() == hashlib.sha256(data).hexdigest()
            results[i] = "ok" if ok else "mismatch after %d bytes" % total
        except Exception as e:  # reported, not raised: one bad tunnel is one result
            results[i] = "error: %r" % e

    threads = [threading.Thread(target=one, args=(i,)) for i in range(args.n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    bad = [(i, r) for i, r in enumerate(results) if r != "ok"]
    print(json.dumps({"ok": args.n - len(bad), "bad": bad[:5]}))
    return 0 if not bad else 1


def frame(kind, payload):
    return struct.pack(">BI", kind, len(payload)) + payload


def run_pty(args):
    """Steps (a JSON list): ["send", TEXT] input; ["expect", REGEX, TIMEOUT] wait for
    output matching REGEX (searched from the end of the previous match), recording
    group 1 (or 0); ["resize", COLS, ROWS]; ["signal", NAME]; ["sleep", S] reading
    what comes; ["stall", S] not reading; ["raw", HEX] raw bytes; ["exit", TIMEOUT]
    wait for the exit frame; ["eof", TIMEOUT] wait for the agent to close; ["close"]
    close now."""
    steps = json.loads(args.script)
    s, status, headers, rest = connect(args, args.path, args.header, early_bytes(args))
    if status != 101:
        print(json.dumps({"status": status,
                          "body": read_body(s, headers, rest).decode()}))
        return 1
    state = {"buf": bytearray(rest), "out": bytearray(), "exit": None, "eof": False}
    pos = 0
    matches = []

    def pump(deadline):
        """Read what arrives until deadline; parse frames into out/exit."""
        timeout = max(0.0, deadline - time.monotonic())
        if state["eof"]:
            return
        r, _, _ = select.select([s], [], [], timeout)
        if r:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                state["eof"] = True
            state["buf"] += chunk
        buf = state["buf"]
        while len(buf) >= 5:
            kind, n = struct.unpack(">BI", bytes(buf[:5]))
            if len(buf) < 5 + n:
                break
            payload = bytes(buf[5:5 + n])
            del buf[:5 + n]
            if kind == 0:
                state["out"] += payload
            elif kind == 3:
                state["exit"] = json.loads(payload)

    def fail(msg):
        print(json.dumps({"error": msg, "matches": matches, "exit": state["exit"],
                          "output": state["out"].decode("utf-8", "replace")}))
        sys.exit(1)

    for step in steps:
        op = step[0]
        if op == "send":
            s.sendall(frame(0, step[1].encode()))
        elif op == "expect":
            rx = re.compile(step[1])
            deadline = time.monotonic() + (step[2] if len(step) > 2 else 10)
            while True:
                m = rx.search(state["out"].decode("utf-8", "replace"), pos)
                if m:
                    pos = m.end()
                    matches.append(m.group(1) if m.groups() else m.group(0))
                    break
                if time.monotonic() > deadline or state["eof"]:
                    fail("no match for %r" % step[1])
                pump(deadline)
        elif op == "resize":
            s.sendall(frame(1, json.dumps({"cols": step[1], "rows": step[2]}).encode()))
        elif op == "signal":
            s.sendall(frame(2, step[1].encode()))
        elif op == "sleep":
            end = time.monotonic() + step[1]
            while time.monotonic() < end:
                pump(end)
        elif op == "stall":
            time.sleep(step[1])
        elif op == "raw":
            s.sendall(bytes.fromhex(step[1]))
        elif op in ("exit", "eof"):
            deadline = time.monotonic() + (step[1] if len(step) > 1 else 10)
            while (state["exit"] is None if op == "exit" else not state["eof"]):
                if time.monotonic() > deadline or (op == "exit" and state["eof"]):
                    fail("no %s frame" % op)
                pump(deadline)
        elif op == "close":
            s.close()
            break
        else:
            fail("unknown step %r" % op)
    print(json.dumps({"matches": matches, "exit": state["exit"],
                      "output": state["out"].decode("utf-8", "replace")}))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sock", required=True, help="the agent's unix socket, or http://HOST:PORT")
    ap.add_argument("--secret", default=os.environ.get("SBX_SECRET", ""))
    ap.add_argument("--proto", default="websocket", help="the Upgrade token to offer")
    ap.add_argument("--no-upgrade", action="store_true",
                    help="send no Connection/Upgrade headers")
    ap.add_argument("--header", action="append", default=[], help="extra 'K: V'")
    ap.add_argument("--early", default="", help="bytes sent with the request head (backslash escapes)")
    ap.add_argument("--read-after", type=int, default=0,
                    help="request: read up to N stream bytes after a 101")
    ap.add_argument("-n", type=int, default=50, help="stress: tunnels at once")
    ap.add_argument("--size", type=int, default=1 << 20, help="stress: bytes each")
    ap.add_argument("--script", default="[]", help="pty: JSON steps")
    ap.add_argument("mode", choices=["request", "relay", "stress", "pty"])
    ap.add_argument("path", help="e.g. /v1/tunnel?port=8080")
    args = ap.parse_args()
    return {"request": cmd_request, "relay": cmd_relay, "stress": cmd_stress,
            "pty": run_pty}[args.mode](args) or 0


if __name__ == "__main__":
    sys.exit(main())
