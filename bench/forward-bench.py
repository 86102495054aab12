# Port-forward benchmark peer: one server, one client, the same code on both
# paths (run by bench/20-forward.sh).
#   server PORT                 'T' + 8-byte size: send that many bytes, close;
#                               'E': echo small messages until EOF
#   client PORT throughput MB   one transfer, prints MB/s
#   client PORT latency N       N 64-byte round trips on one connection,
#                               prints p50 p90 p99 in microseconds
#   client PORT connect N       N connections, one round trip each, prints p50 us
import socket, statistics, struct, sys, threading, time

def server(port):
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", port))
    srv.listen(128)
    chunk = memoryview(bytes(1 << 20))
    def serve(c):
        with c:
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            op = c.recv(1)
            if op == b"T":
                left = struct.unpack("!Q", c.recv(8, socket.MSG_WAITALL))[0]
                while left > 0:
                    n = min(left, len(chunk))
                    c.sendall(chunk[:n])
                    left -= n
            elif op == b"E":
                while True:
                    d = c.recv(65536)
                    if not d:
                        return
                    c.sendall(d)
    while True:
        c, _ = srv.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()

def connect(port):
    c = socket.create_connection(("127.0.0.1", port))
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return c

def throughput(port, mb):
    best = 0.0
    buf = bytearray(1 << 20)
    for _ in range(1):
        c = connect(port)
        t0 = time.perf_counter()
        c.sendall(b"T" + struct.pack("!Q", mb << 20))
        got = 0
        while True:
            n = c.recv_into(buf)
            if n == 0:
                break
            got += n
        dt = time.perf_counter() - t0
        c.close()
        assert got == mb << 20, got
        best = max(best, mb / dt)
    print("%.0f" % best)

def rtt(c, msg):
    t0 = time.perf_counter()
    c.sendall(msg)
    got = 0
    while got < len(msg):
        got += len(c.recv(65536))
    return (time.perf_counter() - t0) * 1e6

def latency(port, n):
    c = connect(port)
    c.sendall(b"E")
    msg = b"x" * 64
    for _ in range(100):
        rtt(c, msg)
    v = sorted(rtt(c, msg) for _ in range(n))
    q = statistics.quantiles(v, n=100)
    print("%.0f %.0f %.0f" % (q[49], q[89], q[98]))

def per_connect(port, n):
    v = []
    for _ in range(n):
        t0 = time.perf_counter()
        c = connect(port)
        c.sendall(b"E")
        rtt(c, b"x" * 64)
        c.close()
        v.append((time.perf_counter() - t0) * 1e6)
    print("%.0f" % statistics.median(v))

if sys.argv[1] == "server":
    server(int(sys.argv[2]))
else:
    port, mode, n = int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    {"throughput": throughput, "latency": latency, "connect": per_connect}[mode](port, n)
