# Through a forward: python3 tcp-client.py PORT MODE ...
#   bulk MB         send MB of random bytes, half-close, read the echo to EOF;
#                   print the sha256 sent and the sha256 received
#   many N KB       N connections at once, KB each, every echo checked; prints
#                   "ok N" when all match
#   refused         connect and expect the forward to close at once; prints the
#                   seconds until EOF
#   hold            connect, check one echo, then wait for the forward to close
#                   the connection; prints "closed" (or "open" after 20 s)
import hashlib, os, socket, sys, threading, time

port, mode = int(sys.argv[1]), sys.argv[2]

def connect():
    return socket.create_connection(("127.0.0.1", port), timeout=60)

def echo(size, seed):
    data = hashlib.sha256(seed).digest() * (size // 32 + 1)
    data = data[:size]
    c = connect()
    got = bytearray()
    def reader():
        while True:
            d = c.recv(262144)
            if not d:
                return
            got.extend(d)
    t = threading.Thread(target=reader)
    t.start()
    c.sendall(data)
    c.shutdown(socket.SHUT_WR)
    t.join()
    c.close()
    return data, bytes(got)

if mode == "bulk":
    size = int(sys.argv[3]) << 20
    data = os.urandom(size)
    c = connect()
    h = hashlib.sha256()
    n = 0
    def reader():
        global n
        while True:
            d = c.recv(262144)
            if not d:
                return
            n += len(d)
            h.update(d)
    t = threading.Thread(target=reader)
    t.start()
    c.sendall(data)
    c.shutdown(socket.SHUT_WR)
    t.join()
    print(hashlib.sha256(data).hexdigest(), h.hexdigest(), n)
elif mode == "many":
    count, kb = int(sys.argv[3]), int(sys.argv[4])
    bad = []
    def one(i):
        try:
            sent, got = echo(kb * 1024, b"conn %d" % i)
            if sent != got:
                bad.append((i, len(got)))
        except Exception as e:
            bad.append((i, repr(e)))
    ts = [threading.Thread(target=one, args=(i,)) for i in range(count)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print("ok %d" % count if not bad else "bad %r" % bad[:5])
elif mode == "refused":
    c = connect()
    t0 = time.monotonic()
    c.settimeout(10)
    try:
        d = c.recv(100)
        print("%.3f %d" % (time.monotonic() - t0, len(d)))
    except ConnectionResetError:
        print("%.3f reset" % (time.monotonic() - t0))
    except socket.timeout:
        print("timeout")
elif mode == "hold":
    c = connect()
    c.sendall(b"ping")
    assert c.recv(4) == b"ping"
    print("connected", flush=True)
    c.settimeout(20)
    try:
        d = c.recv(100)
        print("closed" if not d else "data")
    except ConnectionResetError:
        print("closed")
    except socket.timeout:
        print("open")
