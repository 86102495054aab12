# A raw TCP echo server, run inside a sandbox by tests/integration/forward.sh:
# python3 echo.py PORT DIR.  Every connection is echoed until the client's EOF,
# then the server writes the sha256 of what it received to DIR/recv-N.sha256 and
# closes.  Threads, so many connections run at once.
import hashlib, os, socket, sys, threading

port, out = int(sys.argv[1]), sys.argv[2]
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port))
srv.listen(512)
count = 0

def serve(c, n):
    h = hashlib.sha256()
    with c:
        while True:
            d = c.recv(262144)
            if not d:
                break
            h.update(d)
            c.sendall(d)
        tmp = f"{out}/recv-{n}.tmp"
        with open(tmp, "w") as f:
            f.write(h.hexdigest() + "\n")
        os.rename(tmp, f"{out}/recv-{n}.sha256")

while True:
    c, _ = srv.accept()
    count += 1
    threading.Thread(target=serve, args=(c, count), daemon=True).start()
