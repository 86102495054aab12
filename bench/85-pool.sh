# Warm pools on the ns backend: `sbxtop create` (the whole CLI process) when
# the core server has a pool member ready, and a cold create beside it (same
# server, a create the pool's profile does not match), beside bubblewrap
# starting a sandbox around a command and the cost of starting any process.
# Then qemu (when installed): a create from a pool of one booted VM, beside a
# cold one.  Each process is timed from posix_spawn to its exit (no shell in
# between).
set -eu
BUILD=${BUILD:-build}
N=${BENCH_POOL_N:-30}
QN=${BENCH_POOL_QEMU_N:-5}
T=$(mktemp -d /tmp/sbxbench.XXXXXX)
export XDG_STATE_HOME="$T/state" XDG_RUNTIME_DIR="$T/run" XDG_CONFIG_HOME="$T/config" \
	XDG_DATA_HOME="$T/data" XDG_CACHE_HOME="$T/cache"
mkdir -p "$XDG_RUNTIME_DIR" "$XDG_CONFIG_HOME/sbxtop" && chmod 700 "$XDG_RUNTIME_DIR"
echo "pool = 2" > "$XDG_CONFIG_HOME/sbxtop/sbxtop.conf"
S="$BUILD/sbxtop"
cleanup() {
	"$S" ls --json 2>/dev/null | python3 -c 'import json,sys; [print(s["id"]) for s in json.load(sys.stdin)]' |
		xargs -r -n 20 "$S" destroy >/dev/null 2>&1 || true
	"$S" serve --stop >/dev/null 2>&1 || true
	rm -rf "$T"
}
trap cleanup EXIT

"$S" --log-level debug serve --foreground > "$T/serve.log" 2>&1 &
for _i in $(seq 50); do [ -S "$XDG_RUNTIME_DIR/sbxtop/core.sock" ] && break; sleep 0.1; done
# The image cache, and a full pool.
"$S" destroy "$("$S" create --pids 4000 </dev/null)" >/dev/null
sleep 1

python3 - "$S" "$N" "$T" <<'PY'
import json, os, re, statistics, subprocess, sys, time
S, N, T = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def run(argv):
    r, w = os.pipe()
    null = os.open(os.devnull, os.O_RDWR)
    t = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, os.environ,
                         file_actions=[(os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, w, 1),
                                       (os.POSIX_SPAWN_DUP2, null, 2)])
    os.close(w)
    out = b""
    while True:
        b = os.read(r, 4096)
        if not b:
            break
        out += b
    os.waitpid(pid, 0)
    ms = (time.perf_counter() - t) * 1000
    os.close(r); os.close(null)
    return ms, out.decode().strip()
def destroy(i):
    subprocess.run([S, "destroy", i], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
def pct(v, p):
    v = sorted(v); return v[min(len(v) - 1, int(len(v) * p))]
bwrap = ["/usr/bin/bwrap", "--unshare-all", "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin",
         "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/sbin",
         "/sbin", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "/bin/bash", "-c", "true"]
res = {"claim": [], "cold": [], "bwrap": [], "true": [], "ls": []}
pooled = 0
for i in range(N):
    # Interleaved, each after the pool refilled (it waits 150 ms after a claim).
    ms, sid = run([S, "create", "--max-duration", "3600"]); res["claim"].append(ms)
    destroy(sid)
    time.sleep(0.35)
    ms, sid = run([S, "create", "--pids", "4000", "--max-duration", "3600"]); res["cold"].append(ms)
    destroy(sid)
    res["ls"].append(run([S, "ls"])[0])
    res["true"].append(run(["/bin/true"])[0])
    if os.path.exists(bwrap[0]):
        res["bwrap"].append(run(bwrap)[0])
    time.sleep(0.35)
log = open(os.path.join(T, "serve.log"), errors="replace").read()
pooled = len(re.findall(r"from pool pool-1", log))
print("%-48s %10s %10s" % ("warm pool, ns backend (pool = 2)", "p50 ms", "p90 ms"))
rows = [("sbxtop create, from the pool", "claim", "   (target p50 <= 5 ms)"),
        ("sbxtop create, cold (a profile not pooled)", "cold", "   (target p50 <= 15 ms)"),
        ("sbxtop ls (a round trip to the server)", "ls", ""),
        ("peer: bwrap --unshare-all ... bash -c true", "bwrap", ""),
        ("peer: /bin/true (starting any process)", "true", "")]
for label, k, note in rows:
    if res[k]:
        print("  %-46s %10.2f %10.2f%s" % (label, statistics.median(res[k]), pct(res[k], 0.9), note))
print("  %-46s %10d   (of %d)" % ("creates the pool served", pooled, N))
claims = [tuple(map(float, m)) for m in re.findall(r"from pool \S+, pick ([0-9.]+), registry ([0-9.]+), agent ([0-9.]+), inside ([0-9.]+)", log)]
cold = [tuple(map(float, m)) for m in re.findall(r" create \S+ \(ms\): checks (\d+), reserve (\d+), backend (\d+), store (\d+)", log)]
ns = {}
for l in re.findall(r"ns create \S+ \(ms\): (.*); total", log):
    for part in l.split(", "):
        name, _, v = part.rpartition(" ")
        ns.setdefault(name, []).append(float(v))
print("    %-44s %10s" % ("where the time goes (server log)", "median"))
for i, name in enumerate(("pick", "registry (one write)", "agent (POST /v1/claim)", "hostname (ns claimed)")):
    if claims:
        print("    %-44s %10.2f" % ("claim: " + name, statistics.median(c[i] for c in claims)))
for i, name in enumerate(("checks", "name and id", "backend", "store (one write)")):
    if cold:
        print("    %-44s %10.2f" % ("create: " + name, statistics.median(c[i] for c in cold)))
for name, v in ns.items():
    print("    %-44s %10.2f" % ("ns backend: " + name, statistics.median(v)))
PY

command -v qemu-system-x86_64 > /dev/null 2>&1 || exit 0
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
def ready():
    try:
        return any(s.get("pool") and s["state"] == "running" for s in json.load(open(REG))["sandboxes"])
    except (OSError, ValueError):
        return False
def run(argv):
    t = time.perf_counter()
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return (time.perf_counter() - t) * 1000, r.stdout.strip()
claim, cold = [], []
for i in range(N):
    for _ in range(600):
        if ready():
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
print("  %-46s %10.2f %10.2f   (target p50 <= 50 ms)" % ("sbxtop create --backend qemu, from the pool",
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
if c:
    print("    %-44s %10.2f" % ("claim: registry (two writes)", statistics.median(x[1] for x in c)))
    print("    %-44s %10.2f" % ("claim: seed, reseed, watchdog", statistics.median(x[2] for x in c)))
PY
