# Scale on the ns backend: exec with 1 and with 200 sandboxes alive, creates one
# after another with the core server up and a burst of 50 at once (beside
# bubblewrap starting a sandbox around a command), fork time per copy (beside
# `tar | tar` of the same tree), and how long a call to a sandbox suspended for
# idleness takes (beside the same call to a running one).
set -eu
BUILD=${BUILD:-build}
ALIVE=${BENCH_SCALE_ALIVE:-200}
BURST=${BENCH_SCALE_BURST:-50}
N=${BENCH_SCALE_N:-30}
T=$(mktemp -d /tmp/sbxbench.XXXXXX)
export XDG_STATE_HOME="$T/state" XDG_RUNTIME_DIR="$T/run" XDG_CONFIG_HOME="$T/config" \
	XDG_DATA_HOME="$T/data" XDG_CACHE_HOME="$T/cache"
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
S="$BUILD/sbxtop"
cleanup() {
	"$S" ls --json 2>/dev/null | python3 -c 'import json,sys; [print(s["id"]) for s in json.load(sys.stdin)]' |
		xargs -r -n 20 "$S" destroy >/dev/null 2>&1 || true
	"$S" serve --stop >/dev/null 2>&1 || true
	rm -rf "$T"
}
trap cleanup EXIT

now_us() { echo $(( $(date +%s%N) / 1000 )); }
# ptime FILE N [--then CMD2...] -- CMD...: CMD N times, each timed from
# posix_spawn to its exit, the microseconds appended to FILE (bench/ptime.py).
PY=python3; [ -x /usr/bin/python3 ] && PY=/usr/bin/python3
ptime() { "$PY" "$(dirname "$0")/ptime.py" "$@"; }
stats() { sort -n "$1" | awk '{v[NR]=$1} END {p50=v[int((NR+1)/2)]; p99=v[int(NR*0.99+0.999)]; printf "%10.2f %10.2f", p50/1000, p99/1000}'; }
execs() { : > "$2"; ptime "$2" "$N" -- "$S" exec -n "$1" -- true; }
BWRAP=$("$PY" -c 'import sys; sys.path.insert(0, sys.argv[1]); sys.dont_write_bytecode = True
import ptime; print(" ".join(ptime.BWRAP))' "$(dirname "$0")")
dir_of() { echo "$XDG_STATE_HOME/sbxtop/sandboxes/$1"; }

# The core server, with its debug log: where each create's time goes.
"$S" --log-level debug serve --foreground > "$T/serve.log" 2>&1 &
for _i in $(seq 50); do [ -S "$XDG_RUNTIME_DIR/sbxtop/core.sock" ] && break; sleep 0.1; done
first=$("$S" create --max-duration 3600 </dev/null)	# and the image cache
execs "$first" "$T/exec1"
# Creates with one other sandbox alive, each destroyed before the next.
: > "$T/create1"
ptime "$T/create1" "$N" --then "$S" destroy -- "$S" create --max-duration 3600

# Creates one after another with the core server up, to ALIVE sandboxes alive.
: > "$T/create"
ptime "$T/create" $((ALIVE - 1)) -- "$S" create --max-duration 3600
execs "$first" "$T/execN"
: > "$T/bwrap"
# shellcheck disable=SC2086
ptime "$T/bwrap" "$N" -- $BWRAP
alive=$("$S" ls --json | python3 -c 'import json,sys; print(sum(1 for s in json.load(sys.stdin) if s["state"]=="running"))')

printf '%-48s %10s %10s\n' "scale, ns backend ($alive sandboxes alive)" "p50 ms" "p99 ms"
printf '  %-46s %s\n' "sbxtop exec ID -- true, 1 alive" "$(stats "$T/exec1")"
printf '  %-46s %s   (target: unchanged)\n' "sbxtop exec ID -- true, $alive alive" "$(stats "$T/execN")"
printf '  %-46s %s   (target p50 <= 15 ms)\n' "sbxtop create, to a ready agent, 1 alive" "$(stats "$T/create1")"
printf '  %-46s %s\n' "sbxtop create, growing to $alive alive" "$(stats "$T/create")"
printf '  %-46s %s\n' "peer: bwrap --unshare-all ... bash -c true" "$(stats "$T/bwrap")"
# The median of each phase of those creates, from the server's debug log.
python3 - "$T/serve.log" <<'PY'
import re, statistics, sys
ph = {}
for l in open(sys.argv[1], errors="replace"):
    for k, pat in (("ns", r"ns create \S+ \(ms\): (.*); total"), ("core", r" create \S+ \(ms\): (checks.*)")):
        m = re.search(pat, l)
        if m and (k == "ns" or "ns create" not in l):
            for part in m.group(1).split(", "):
                name, _, v = part.rpartition(" ")
                ph.setdefault((k, name), []).append(float(v))
print("    %-44s %10s %10s" % ("where a create's time goes (server log)", "median", "mean"))
for (k, name), v in ph.items():
    print("    %-44s %10.2f %10.2f" % ("%s: %s" % ("backend" if k == "ns" else "core", name),
                                     statistics.median(v), statistics.mean(v)))
PY

# A burst: BURST creates at once against BURST/2 one after another, timed the
# same way (each process from posix_spawn, no shell forking beside them), each
# from a settled machine (the sandboxes before destroyed, a second's pause),
# and bubblewrap the same, whose own ratio says how far the machine lets
# namespace work run in parallel.  ROUNDS rounds, the medians.
"$PY" - "$S" "$BURST" "${BENCH_SCALE_ROUNDS:-3}" "$(dirname "$0")" <<'PY'
import os, shutil, statistics, subprocess, sys, time
S, burst, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sys.path.insert(0, sys.argv[4]); sys.dont_write_bytecode = True
import ptime
null = os.open(os.devnull, os.O_RDWR)
quiet = [(os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, null, 1), (os.POSIX_SPAWN_DUP2, null, 2)]
create = [S, "create", "--max-duration", "3600"]
bwrap = ptime.BWRAP
def ids():
    return subprocess.run([S, "ls", "-q"], capture_output=True, text=True).stdout.split()
def clear():
    v = ids()
    for i in range(0, len(v), 20):
        subprocess.run([S, "destroy"] + v[i:i + 20], capture_output=True)
    time.sleep(1)
def timed(argv, n, together):
    t = time.perf_counter()
    if together:
        for pid in [os.posix_spawnp(argv[0], argv, os.environ, file_actions=quiet) for _ in range(n)]:
            os.waitpid(pid, 0)
    else:
        for _ in range(n):
            os.waitpid(os.posix_spawnp(argv[0], argv, os.environ, file_actions=quiet), 0)
    return (time.perf_counter() - t) * 1000
res, made = {}, []
for _ in range(rounds):
    clear()
    res.setdefault("serial", []).append(timed(create, burst // 2, False))
    clear()
    res.setdefault("burst", []).append(timed(create, burst, True))
    made.append(len(ids()))
    if shutil.which(bwrap[0]):
        time.sleep(1)
        res.setdefault("bserial", []).append(timed(bwrap, burst // 2, False))
        time.sleep(1)
        res.setdefault("bburst", []).append(timed(bwrap, burst, True))
clear()
m = {k: statistics.median(v) for k, v in res.items()}
print("%-48s %10s %12s" % ("a burst of %d creates at once (%d rounds)" % (burst, rounds), "wall ms", "burst/serial"))
print("  %-46s %10.1f %11.2fx   (target <= 1x; %d of %d made, least)" %
      ("sbxtop create x %d at once" % burst, m["burst"], m["burst"] / m["serial"], min(made), burst))
print("  %-46s %10.1f" % ("sbxtop create x %d, one after another" % (burst // 2), m["serial"]))
if "bburst" in m:
    print("  %-46s %10.1f %11.2fx" % ("peer: bwrap ... bash -c true x %d at once" % burst, m["bburst"],
                                      m["bburst"] / m["bserial"]))
    print("  %-46s %10.1f" % ("peer: bwrap x %d, one after another" % (burst // 2), m["bserial"]))
PY

# Fork: a source with 1000 files (40 MB) in /workspace and a change to its root.
src=$("$S" create --max-duration 3600 </dev/null)
"$S" exec -n "$src" -- sh -c 'mkdir -p /workspace/tree && cd /workspace/tree && for d in $(seq 10); do mkdir $d; for f in $(seq 100); do head -c 40960 /dev/urandom > $d/$f; done; done'
"$S" exec --root -n "$src" -- sh -c 'echo changed > /etc/forked'
: > "$T/fork"
ptime "$T/fork" 5 --then "$S" destroy -- "$S" fork "$src"
t=$(now_us); "$S" fork "$src" -n 5 </dev/null > "$T/forked"; f5=$(( $(now_us) - t ))
xargs -r "$S" destroy < "$T/forked" >/dev/null
: > "$T/tar"
for i in 1 2 3 4 5; do
	mkdir "$T/tar.$i"
	t=$(now_us)
	(cd "$(dir_of "$src")" && tar cf - upper workspace) | (cd "$T/tar.$i" && tar xf -)
	echo $(( $(now_us) - t )) >> "$T/tar"
	rm -rf "$T/tar.$i"
done
fs=$(stat -f -c %T "$XDG_STATE_HOME")
printf '%-48s %10s %10s\n' "fork a sandbox (1000 files, 40 MB; $fs)" "p50 ms" "p99 ms"
printf '  %-46s %s\n' "sbxtop fork ID: one copy, to a ready agent" "$(stats "$T/fork")"
printf '  %-46s %10.2f\n' "sbxtop fork ID -n 5: per copy" "$(echo "$f5 / 5000" | bc -l)"
printf '  %-46s %s\n' "peer: tar cf - upper workspace | tar xf -" "$(stats "$T/tar")"
"$S" destroy "$src" >/dev/null

# Idle suspend: the first call after the core server froze the sandbox.
idle=$("$S" create --idle-suspend 1 --max-duration 3600 </dev/null)
: > "$T/resume"
for i in $(seq 10); do
	for _w in $(seq 50); do
		[ "$("$S" ls --json | python3 -c 'import json,sys; print([s["state"] for s in json.load(sys.stdin) if s["id"]==sys.argv[1]][0])' "$idle")" = suspended ] && break
		sleep 0.1
	done
	ptime "$T/resume" 1 -- "$S" exec -n "$idle" -- true
done
printf '%-48s %10s %10s\n' "a call to a sandbox suspended for idleness" "p50 ms" "p99 ms"
printf '  %-46s %s\n' "sbxtop exec ID -- true, resumed first" "$(stats "$T/resume")"
printf '  %-46s %s\n' "peer: the same exec on a running sandbox" "$(stats "$T/exec1")"
