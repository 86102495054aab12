# ptime.py FILE N [--then CMD2...] -- CMD...: run CMD N times, each from
# posix_spawn to its exit (no shell, no `date` process in the time), and append
# each run's microseconds to FILE, a line each.  With --then, CMD2 runs after
# each, untimed, with the first line CMD printed as its last argument (a
# create's id for a destroy, say).  CMD's standard input is /dev/null.
import os
import sys
import time

out, n, rest = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
then = []
if rest and rest[0] == "--then":
    cut = rest.index("--")
    then, rest = rest[1:cut], rest[cut:]
if not rest or rest[0] != "--" or len(rest) < 2:
    sys.exit("usage: ptime.py FILE N [--then CMD2...] -- CMD...")
cmd = rest[1:]
null = os.open(os.devnull, os.O_RDONLY)
with open(out, "a") as f:
    for _ in range(n):
        r, w = os.pipe()
        t = time.perf_counter()
        pid = os.posix_spawnp(cmd[0], cmd, os.environ, file_actions=[
            (os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, w, 1)])
        os.close(w)
        got = b""
        while True:
            b = os.read(r, 65536)
            if not b:
                break
            got += b
        os.waitpid(pid, 0)
        us = (time.perf_counter() - t) * 1e6
        os.close(r)
        f.write("%d\n" % us)
        line = got.decode(errors="replace").split("\n", 1)[0].strip()
        if then and line:
            pid = os.posix_spawnp(then[0], then + [line], os.environ, file_actions=[
                (os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)])
            os.waitpid(pid, 0)
