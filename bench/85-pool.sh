# Warm pools on the ns backend: `sbxtop create` (the whole CLI process) when
# the core server has a pool member ready, a cold create beside it (same
# server, a create the pool's profile does not match), and `create && exec &&
# destroy` (three processes), beside bubblewrap starting a sandbox around a
# command and the cost of starting any process; each row says how many times
# its peer it took.  BENCH_BASE=DIR (the build directory of an earlier commit,
# from a worktree of it, say) measures that build too, in the same run, each
# round interleaved with this one's.  Then qemu (when installed): a create from
# a pool of one VM, beside a cold one.  Each process is timed from posix_spawn
# to its exit (no shell in between).
set -eu
BUILD=${BUILD:-build}
BASE=${BENCH_BASE:-}
N=${BENCH_POOL_N:-30}
QN=${BENCH_POOL_QEMU_N:-5}
T=$(mktemp -d /tmp/sbxbench.XXXXXX)
S="$BUILD/sbxtop"
# tree DIR: a private XDG tree with a pool of 2, in the environment.
tree() {
	export XDG_STATE_HOME="$1/state" XDG_RUNTIME_DIR="$1/run" XDG_CONFIG_HOME="$1/config" \
		XDG_DATA_HOME="$1/data" XDG_CACHE_HOME="$1/cache"
	mkdir -p "$XDG_RUNTIME_DIR" "$XDG_CONFIG_HOME/sbxtop" && chmod 700 "$XDG_RUNTIME_DIR"
	echo "pool = 2" > "$XDG_CONFIG_HOME/sbxtop/sbxtop.conf"
}
# up SBXTOP DIR: its core server, with the image cache made and the pool full.
up() {
	tree "$2"
	"$1" --log-level debug serve --foreground > "$2/serve.log" 2>&1 &
	for _i in $(seq 50); do [ -S "$XDG_RUNTIME_DIR/sbxtop/core.sock" ] && break; sleep 0.1; done
	"$1" destroy "$("$1" create --pids 4000 </dev/null)" >/dev/null
}
down() {
	tree "$2"
	"$1" ls --json 2>/dev/null | python3 -c 'import json,sys; [print(s["id"]) for s in json.load(sys.stdin)]' |
		xargs -r -n 20 "$1" destroy >/dev/null 2>&1 || true
	"$1" serve --stop >/dev/null 2>&1 || true
}
cleanup() {
	[ -z "$BASE" ] || down "$BASE/sbxtop" "$T/base"
	down "$S" "$T"
	rm -rf "$T"
}
trap cleanup EXIT

[ -z "$BASE" ] || up "$BASE/sbxtop" "$T/base"
up "$S" "$T"
sleep 1

python3 - "$S" "$N" "$T" "$BASE" "$(dirname "$0")" <<'PY'
import os, re, shutil, statistics, subprocess, sys, time
S, N, T, BASE = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
sys.path.insert(0, sys.argv[5]); sys.dont_write_bytecode = True
import ptime
def env_of(d):
    return dict(os.environ, XDG_STATE_HOME=d + "/state", XDG_RUNTIME_DIR=d + "/run",
                XDG_CONFIG_HOME=d + "/config", XDG_DATA_HOME=d + "/data", XDG_CACHE_HOME=d + "/cache")
who = [("", S, env_of(T))]
if BASE:
    who.append(("earlier build: ", BASE + "/sbxtop", env_of(T + "/base")))
def run(argv, env=None):
    return ptime.run(argv, env, quiet=True)
def pct(v, p):
    v = sorted(v); return v[min(len(v) - 1, int(len(v) * p))]
bwrap = ptime.BWRAP
cold = ["create", "--pids", "4000", "--max-duration", "3600"]
res = {}
def add(k, v): res.setdefault(k, []).append(v)
for i in range(N):
    # Interleaved, each after the pool refilled (it waits 150 ms after a claim),
    # which build goes first alternating round by round (the one that goes
    # second runs while the first's server still refills its pool and disks).
    order = who if i % 2 == 0 else who[::-1]
    for tag, s, env in order:
        ms, sid = run([s, "create", "--max-duration", "3600"], env); add(tag + "claim", ms)
        run([s, "destroy", sid], env)
    time.sleep(0.35)
    for tag, s, env in order:
        ms, sid = run([s] + cold, env); add(tag + "cold", ms)
        run([s, "destroy", sid], env)
        t = time.perf_counter()
        _, sid = run([s] + cold, env)
        run([s, "exec", sid, "--", "true"], env)
        run([s, "destroy", sid], env)
        add(tag + "ced", (time.perf_counter() - t) * 1000)
        add(tag + "ls", run([s, "ls"], env)[0])
    add("true", run(["/bin/true"])[0])
    if shutil.which(bwrap[0]):
        add("bwrap", run(bwrap)[0])
    time.sleep(0.35)
log = open(os.path.join(T, "serve.log"), errors="replace").read()
pooled = len(re.findall(r"from pool pool-1", log))
med = {k: statistics.median(v) for k, v in res.items()}
print("%-48s %10s %10s %12s" % ("warm pool, ns backend (pool = 2)", "p50 ms", "p90 ms", "x peer p50"))
rows = [("sbxtop create, from the pool", "claim", "true", "   (target <= 2x /bin/true)"),
        ("sbxtop create, cold (a profile not pooled)", "cold", "bwrap", "   (target <= 1.2x bwrap)"),
        ("create && exec true && destroy (3 processes)", "ced", "bwrap", "   (target <= 2x bwrap)"),
        ("sbxtop ls (a round trip to the server)", "ls", None, "")]
for label, k, peer, note in rows:
    for tag, _, _ in who:
        if tag + k not in res:
            continue
        ratio = "%11.2fx" % (med[tag + k] / med[peer]) if peer in med else " " * 12
        print("  %-46s %10.2f %10.2f %s%s" % ((tag + label)[:46], med[tag + k], pct(res[tag + k], 0.9),
                                             ratio, note if not tag else ""))
for label, k in (("peer: bwrap --unshare-all ... bash -c true", "bwrap"),
                 ("peer: /bin/true (starting any process)", "true")):
    if k in res:
        print("  %-46s %10.2f %10.2f" % (label, med[k], pct(res[k], 0.9)))
print("  %-46s %10d   (of %d)" % ("creates the pool served", pooled, N))
claims = [tuple(map(float, m)) for m in re.findall(r"from pool \S+, pick ([0-9.]+), agent ([0-9.]+), registry ([0-9.]+), inside ([0-9.]+)", log)]
cold = [tuple(map(float, m)) for m in re.findall(r" create \S+ \(ms\): checks (\d+), reserve (\d+), backend (\d+), store (\d+)", log)]
ph = {}
for kind in ("create", "destroy"):
    for l in re.findall(r"ns %s \S+ \(ms\): (.*); total" % kind, log):
        for part in l.split(", "):
            name, _, v = part.rpartition(" ")
            ph.setdefault((kind, name), []).append(float(v))
print("    %-44s %10s" % ("where the time goes (this build's server log)", "median"))
for i, name in enumerate(("pick", "agent (POST /v1/claim)", "registry (one write)", "hostname (ns claimed)")):
    if claims:
        print("    %-44s %10.2f" % ("claim: " + name, statistics.median(c[i] for c in claims)))
for i, name in enumerate(("checks", "name and id", "backend", "store (one write)")):
    if cold:
        print("    %-44s %10.2f" % ("create: " + name, statistics.median(c[i] for c in cold)))
for (kind, name), v in ph.items():
    print("    %-44s %10.2f" % ("ns backend, %s: %s" % (kind, name), statistics.median(v)))
PY

command -v qemu-system-x86_64 > /dev/null 2>&1 || exit 0
[ -z "$BASE" ] || down "$BASE/sbxtop" "$T/base"
tree "$T"
"$S" serve --stop > /dev/null 2>&1
export SBXTOP_KERNEL_CACHE="${SBXTOP_KERNEL_CACHE:-build/kernel-cache}" SBXTOP_QEMU_BOOT_TIMEOUT=200
"$S" image build > /dev/null 2>&1 || { echo "qemu: image build failed: no figures"; exit 0; }
echo "pool = 1 backend=qemu" > "$XDG_CONFIG_HOME/sbxtop/sbxtop.conf"
: > "$T/serve.log"
"$S" --log-level debug serve --foreground > "$T/serve.log" 2>&1 &
for _i in $(seq 50); do [ -S "$XDG_RUNTIME_DIR/sbxtop/core.sock" ] && break; sleep 0.1; done
python3 - "$S" "$QN" "$T" "$XDG_STATE_HOME/sbxtop/sandboxes.json" <<'PY'
import json, os, re, statistics, subprocess, sys, time
S, N, T, REG = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def ready(claimed):
    # A member is the pool's once the server says so (the first one is saved as
    # the snapshot meanwhile, running but not yet offered).
    log = open(os.path.join(T, "serve.log"), errors="replace").read()
    return len(re.findall(r"pool pool-1: \S+ ready in", log)) > claimed
def run(argv):
    t = time.perf_counter()
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return (time.perf_counter() - t) * 1000, r.stdout.strip()
claim, cold = [], []
for i in range(N):
    for _ in range(600):
        if ready(i):
            break
        time.sleep(0.5)
    ms, sid = run([S, "create", "--backend", "qemu", "--max-duration", "600"]); claim.append(ms)
    subprocess.run([S, "destroy", sid], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if i < 2:
        ms, sid = run([S, "create", "--backend", "qemu", "--memory", "384", "--max-duration", "600"])
        cold.append(ms)
        subprocess.run([S, "destroy", sid], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
log = open(os.path.join(T, "serve.log"), errors="replace").read()
print("%-48s %10s %10s" % ("warm pool, qemu backend (pool = 1)", "p50 ms", "max ms"))
print("  %-46s %10.2f %10.2f   (target p50 <= 30 ms)" % ("sbxtop create --backend qemu, from the pool",
                                                         statistics.median(claim), max(claim)))
print("  %-46s %10.2f %10.2f" % ("peer: the same create, cold (a boot)", statistics.median(cold), max(cold)))
print("  %-46s %10d   (of %d)" % ("creates the pool served", len(re.findall(r"from pool", log)), N))
fills = [float(m) for m in re.findall(r"pool pool-1: \S+ ready in ([0-9]+) ms", log)]
if len(fills) > 1:
    # The first member boots and is saved as the snapshot pool-1.base; the others restore it.
    print("  %-46s %10.2f" % ("pool refill: the first (a boot, then the snapshot)", fills[0]))
    print("  %-46s %10.2f %10.2f" % ("pool refill: the others (a restore)", statistics.median(fills[1:]),
                                     max(fills[1:])))
c = [tuple(map(float, m)) for m in re.findall(r"from pool \S+, pick ([0-9.]+), registry ([0-9.]+), agent ([0-9.]+)", log)]
q = [(float(a), float(b), float(w), how) for a, b, how, w in
     re.findall(r"qemu claim \S+ \(ms\): seed ([0-9.]+), agent ([0-9.]+) \(([^)]*)\), watchdog ([0-9.]+)", log)]
if c:
    print("    %-44s %10.2f" % ("claim: registry (the claim's write)", statistics.median(x[1] for x in c)))
    print("    %-44s %10.2f" % ("claim: the backend's, and the record stored", statistics.median(x[2] for x in c)))
if q:
    print("    %-44s %10.2f" % ("  seed", statistics.median(x[0] for x in q)))
    print("    %-44s %10.2f   (%d of %d on a kept connection)" % ("  agent", statistics.median(x[1] for x in q),
          sum(1 for x in q if "kept" in x[3]), len(q)))
    print("    %-44s %10.2f" % ("  watchdog", statistics.median(x[2] for x in q)))
PY
