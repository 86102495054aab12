# Timing a command from posix_spawn to its exit: no shell, no `date` process
# in the time.  As a module, run(); as a command:
#
# ptime.py FILE N [--then CMD2...] -- CMD...: run CMD N times and append each
# run's microseconds to FILE, a line each.  With --then, CMD2 runs after each,
# untimed, with the first line CMD printed as its last argument (a create's id
# for a destroy, say).
import os
import sys
import time

# The peer the benches set a sandbox's start beside: bubblewrap starting a
# sandbox of its own around a command.
BWRAP = ["bwrap", "--unshare-all", "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin",
         "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/sbin",
         "/sbin", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "/bin/bash", "-c", "true"]


def run(argv, env=None, quiet=False):
    """argv from posix_spawn to its exit, standard input /dev/null (standard
    error too when quiet): (milliseconds, what it printed, stripped)."""
    r, w = os.pipe()
    null = os.open(os.devnull, os.O_RDWR)
    acts = [(os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, w, 1)]
    if quiet:
        acts.append((os.POSIX_SPAWN_DUP2, null, 2))
    t = time.perf_counter()
    pid = os.posix_spawnp(argv[0], argv, env or os.environ, file_actions=acts)
    os.close(w)
    out = b""
    while True:
        b = os.read(r, 65536)
        if not b:
            break
        out += b
    os.waitpid(pid, 0)
    ms = (time.perf_counter() - t) * 1000
    os.close(r)
    os.close(null)
    return ms, out.decode(errors="replace").strip()


def main(args):
    out, n, rest = args[0], int(args[1]), args[2:]
    then = []
    if rest and rest[0] == "--then" and "--" in rest:
        cut = rest.index("--")
        then, rest = rest[1:cut], rest[cut:]
    if not rest or rest[0] != "--" or len(rest) < 2:
        sys.exit("usage: ptime.py FILE N [--then CMD2...] -- CMD...")
    with open(out, "a") as f:
        for _ in range(n):
            ms, printed = run(rest[1:])
            f.write("%d\n" % (ms * 1000))
            line = printed.split("\n", 1)[0].strip()
            if then and line:
                run(then + [line], quiet=True)


if __name__ == "__main__":
    main(sys.argv[1:])
