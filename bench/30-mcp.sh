# MCP overhead: 1,000 sequential sandbox_exec of `true` through `sbxtop --mcp`
# (stdio, a raw python3 JSON-RPC client: bench/mcp-client.py) beside the same
# exec through the core API with no MCP (bench/core-exec-bench.c, built here
# against the core's objects), in the same sandbox in the same run; then 50
# concurrent calls from one client.
set -eu
BUILD=${BUILD:-build}
N=${BENCH_MCP_N:-1000}
C=${BENCH_MCP_CONC:-50}
T=$(mktemp -d /tmp/sbxbench.XXXXXX)
export XDG_STATE_HOME="$T/state" XDG_RUNTIME_DIR="$T/run" XDG_CONFIG_HOME="$T/config" \
	XDG_DATA_HOME="$T/data" XDG_CACHE_HOME="$T/cache"
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
S="$BUILD/sbxtop"
id=
trap '[ -n "$id" ] && "$S" destroy "$id" >/dev/null 2>&1; rm -rf "$T"' EXIT

# stats FILE: p50 p99 (ms) of microsecond samples, one per line.
stats() { sort -n "$1" | awk '{v[NR]=$1} END {p50=v[int((NR+1)/2)]; p99=v[int(NR*0.99+0.999)]; printf "%10.3f %10.3f", p50/1000, p99/1000}'; }
p50_us() { sort -n "$1" | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

objs=$(find "$BUILD/obj" -name '*.o' ! -path '*/agent/*' ! -path '*/cli/main.o' | sort)
# shellcheck disable=SC2086
cc -O2 -std=gnu11 -D_GNU_SOURCE -I. $(pkg-config --cflags libcjson) -o "$T/core-exec-bench" \
	bench/core-exec-bench.c $objs \
	$(pkg-config --libs libmicrohttpd libcjson libcurl libseccomp libarchive openssl ncursesw) \
	-lpthread -lutil $(case "$BUILD" in *san*) echo -fsanitize=address,undefined;; esac)

id=$("$S" create </dev/null)
# Warm both paths (the agent's first exec, page cache) before measuring.
"$T/core-exec-bench" "$id" 20 > /dev/null
# Interleaved in ten rounds, so both paths see the same load on a busy host.
: > "$T/core"; : > "$T/mcp"
for _ in 1 2 3 4 5 6 7 8 9 10; do
	"$T/core-exec-bench" "$id" $((N / 10)) >> "$T/core"
	python3 bench/mcp-client.py "$S" "$id" $((N / 10)) 0 "$T/mcp"
done
python3 bench/mcp-client.py "$S" "$id" 1 "$C" "$T/scratch" > "$T/conc"

printf '%-48s %10s %10s\n' "MCP overhead ($N sequential exec of true)" "p50 ms" "p99 ms"
printf '  %-46s %s\n' "core_exec (C, no MCP)" "$(stats "$T/core")"
printf '  %-46s %s\n' "sandbox_exec via sbxtop --mcp (stdio, python3)" "$(stats "$T/mcp")"
added=$(( $(p50_us "$T/mcp") - $(p50_us "$T/core") ))
printf '  %-46s %10.3f            (target < 0.5 ms)\n' "MCP adds at p50" "$(echo "$added" | awk '{print $1/1000}')"
read -r n ms good < "$T/conc"
printf '  %-46s %10s ms total, %s/%s correct\n' "$n concurrent sandbox_exec from one client" "$ms" "$good" "$n"
[ "$good" -eq "$n" ]
