# split-hello.py NAME WHERE: CONNECT up.test:443 through the proxy, then a TLS
# ClientHello naming NAME, split into two records (WHERE: "ext", just before
# its server name extension; "mid", inside it) sent in two writes.  Prints
# "cut" when the proxy ends the connection, else what the server answered.
import socket, ssl, sys, time
name, where = sys.argv[1], sys.argv[2]
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"CONNECT up.test:443 HTTP/1.1\r\nHost: up.test:443\r\n\r\n")
head = b""
while b"\r\n\r\n" not in head:
    head += s.recv(1)
inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
t = ssl.create_default_context(cafile="/workspace/ca.pem").wrap_bio(inc, out, server_hostname=name)
try:
    t.do_handshake()
except ssl.SSLWantReadError:
    pass
rec = out.read()
body = rec[5:]
p = 4 + 2 + 32
p += 1 + body[p]
p += 2 + int.from_bytes(body[p:p + 2], "big")
p += 1 + body[p]
p += 2
while int.from_bytes(body[p:p + 2], "big") != 0:
    p += 4 + int.from_bytes(body[p + 2:p + 4], "big")
cut = p if where == "ext" else p + 6
frag = lambda b: rec[:3] + len(b).to_bytes(2, "big") + b
s.sendall(frag(body[:cut]))
time.sleep(0.3)
s.sendall(frag(body[cut:]))
s.settimeout(10)
try:
    while True:
        try:
            t.do_handshake()
            break
        except ssl.SSLWantReadError:
            d = s.recv(65536)
            if not d:
                print("cut")
                sys.exit(0)
            inc.write(d)
            o = out.read()
            if o:
                s.sendall(o)
    t.write(b"GET /hello HTTP/1.1\r\nHost: up.test\r\nConnection: close\r\n\r\n")
    s.sendall(out.read())
    got = b""
    while True:
        try:
            got += t.read(65536)
        except ssl.SSLWantReadError:
            d = s.recv(65536)
            if not d:
                break
            inc.write(d)
        except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
            break
    print(got.split(b"\r\n\r\n", 1)[-1].decode().strip())
except (OSError, ssl.SSLError) as e:
    print("cut")
