# Copies between the host and an ns sandbox: `sbxtop cp` in and out of a tree of
# BENCH_COPY_FILES files (BENCH_COPY_MB MB of random data in all) beside
# `tar -C a -cf - . | tar -C b -xf -` on the same tree, and `podman cp` when
# podman is installed; medians of BENCH_COPY_N runs, interleaved, and the median
# of each round's ratio to tar (the machine's load moves all of them at once).
set -eu
BUILD=${BUILD:-build}
N=${BENCH_COPY_N:-5}
FILES=${BENCH_COPY_FILES:-1000}
MB=${BENCH_COPY_MB:-200}
T=$(mktemp -d /tmp/sbxbench.XXXXXX)
export XDG_STATE_HOME="$T/state" XDG_RUNTIME_DIR="$T/run" XDG_CONFIG_HOME="$T/config" \
	XDG_DATA_HOME="$T/data" XDG_CACHE_HOME="$T/cache"
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
S="$BUILD/sbxtop"
id=""; pod=""
trap '[ -n "$id" ] && "$S" destroy "$id" >/dev/null 2>&1; [ -n "$pod" ] && podman rm -f "$pod" >/dev/null 2>&1; "$S" serve --stop >/dev/null 2>&1; rm -rf "$T"' EXIT

now_us() { echo $(( $(date +%s%N) / 1000 )); }
# med FILE: the median (ms) of microsecond samples, one per line.
med() { sort -n "$1" | awk '{v[NR]=$1} END {printf "%8.0f", v[int((NR+1)/2)]/1000}'; }
# cmed FILE: the median of CPU samples (ms).
cmed() { sort -n "$1" | awk '{v[NR]=$1} END {printf "%8.0f", v[int((NR+1)/2)]}'; }
# ratio FILE: the median of FILE's samples over tar's in the same round.
ratio() { paste "$1" "$T/t.tar" | awk '{print $1 / $2}' | sort -n | awk '{v[NR]=$1} END {printf "%5.2fx", v[int((NR+1)/2)]}'; }
# rate FILE: MB/s at the median.
rate() { sort -n "$1" | awk -v mb="$MB" '{v[NR]=$1} END {printf "%8.0f", mb/(v[int((NR+1)/2)]/1e6)}'; }

# The tree: FILES files of MB/FILES MB each in 20 directories, a few symlinks.
A="$T/a"
per=$(( MB * 1000 * 1000 / FILES ))
python3 - "$A" "$FILES" "$per" <<'EOF'
import os, sys
root, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(n):
    d = os.path.join(root, "d%02d" % (i % 20))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%04d" % i), "wb") as f:
        f.write(os.urandom(size))
for i in range(10):
    os.symlink("d00/f%04d" % (i * 20), os.path.join(root, "l%d" % i))
EOF

id=$("$S" create --memory 0 --max-duration 3600 </dev/null)
if command -v podman >/dev/null 2>&1; then
	pod=$(podman run -d debian:12 sleep 3600 2>/dev/null) || pod=""
fi

: > "$T/t.tar"; : > "$T/t.in"; : > "$T/t.out"; : > "$T/t.pin"; : > "$T/t.pout"
# CPU time (ms) too, which the machine's load moves less than wall time: both tars;
# the sandbox's agent and the core server for sbxtop (the thin client is noise).
: > "$T/c.tar"; : > "$T/c.in"; : > "$T/c.out"
"$S" exec -n "$id" -- true
apid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$XDG_STATE_HOME/sbxtop/sandboxes/$id/backend.json")
spid=$(pgrep -f "$XDG_STATE_HOME/sbxtop/server.log serve" | head -1)
tck=$(getconf CLK_TCK)
cpu() { awk -v t="$tck" '{s += $14 + $15} END {print s * 1000 / t}' "/proc/$apid/stat" "/proc/$spid/stat"; }
# Each copy goes to a place emptied (and synced) just before, the same for all.
for i in $(seq "$N"); do
	rm -rf "$T/b"; mkdir "$T/b"; sync
	t=$(now_us)
	/usr/bin/time -f '%U %S' -o "$T/time" sh -c 'tar -C "$1" -cf - . | tar -C "$2" -xf -' _ "$A" "$T/b"
	echo $(( $(now_us) - t )) >> "$T/t.tar"
	awk '{print ($1 + $2) * 1000}' "$T/time" >> "$T/c.tar"
	"$S" exec -n "$id" -- 'rm -rf /workspace/in' >/dev/null; sync
	c=$(cpu); t=$(now_us); "$S" cp "$A" "$id:/workspace/in"; echo $(( $(now_us) - t )) >> "$T/t.in"
	awk -v a="$(cpu)" -v b="$c" 'BEGIN {print a - b}' >> "$T/c.in"
	rm -rf "$T/out"; sync
	c=$(cpu); t=$(now_us); "$S" cp "$id:/workspace/in" "$T/out"; echo $(( $(now_us) - t )) >> "$T/t.out"
	awk -v a="$(cpu)" -v b="$c" 'BEGIN {print a - b}' >> "$T/c.out"
	if [ -n "$pod" ]; then
		podman exec "$pod" rm -rf /in >/dev/null; sync
		t=$(now_us); podman cp "$A" "$pod:/in"; echo $(( $(now_us) - t )) >> "$T/t.pin"
		rm -rf "$T/pout"; sync
		t=$(now_us); podman cp "$pod:/in" "$T/pout"; echo $(( $(now_us) - t )) >> "$T/t.pout"
	fi
done
# What came back is what went in.
diff -r --no-dereference "$A" "$T/out" >/dev/null || echo "  WARNING: the copy out differs from the tree"

printf '%-48s %8s %8s %8s %8s\n' "copy $MB MB in $FILES files (ns, median of $N)" "ms" "MB/s" "/ tar" "CPU ms"
printf '  %-46s %s %s %8s %s\n' "peer: tar -C a -cf - . | tar -C b -xf -" "$(med "$T/t.tar")" "$(rate "$T/t.tar")" "" "$(cmed "$T/c.tar")"
printf '  %-46s %s %s   %s %s  (target <= 2x)\n' "sbxtop cp DIR ID:PATH (in)" "$(med "$T/t.in")" "$(rate "$T/t.in")" "$(ratio "$T/t.in")" "$(cmed "$T/c.in")"
printf '  %-46s %s %s   %s %s  (target <= 2x)\n' "sbxtop cp ID:PATH DIR (out)" "$(med "$T/t.out")" "$(rate "$T/t.out")" "$(ratio "$T/t.out")" "$(cmed "$T/c.out")"
if [ -n "$pod" ]; then
	printf '  %-46s %s %s   %s\n' "peer: podman cp DIR CTR:PATH (in)" "$(med "$T/t.pin")" "$(rate "$T/t.pin")" "$(ratio "$T/t.pin")"
	printf '  %-46s %s %s   %s\n' "peer: podman cp CTR:PATH DIR (out)" "$(med "$T/t.pout")" "$(rate "$T/t.pout")" "$(ratio "$T/t.pout")"
else
	printf '  %-46s\n' "peer: podman cp: not measured (podman is not installed)"
fi
