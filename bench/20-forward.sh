#!/bin/sh
# Port forwards: throughput and added latency through `sbxtop forward`, against a
# direct loopback connection to the same server process.  The server runs inside
# an ns sandbox; "direct" is the same client run inside the sandbox (sbxtop exec)
# on the sandbox's own loopback; "forward" is that client on the host, through
# host loopback -> sbxtop forward -> the agent's unix socket -> the agent's tunnel
# -> the sandbox's loopback.  Targets: >= 50% of direct throughput, < 0.3 ms added
# at p50 for a small request on an open connection.
set -eu
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$(pwd)/$BUILD" ;; esac
SBXTOP="$BUILD/sbxtop"
T=$(mktemp -d /tmp/sbxbench.XXXXXX)
export XDG_STATE_HOME="$T/state" XDG_RUNTIME_DIR="$T/run" XDG_CONFIG_HOME="$T/config" \
	XDG_DATA_HOME="$T/data" XDG_CACHE_HOME="$T/cache"
mkdir -m 0700 -p "$XDG_RUNTIME_DIR"
id=""
fpid=""
trap '[ -n "$fpid" ] && kill $fpid 2>/dev/null; [ -n "$id" ] && "$SBXTOP" destroy $id; rm -rf "$T"' EXIT
MB=${BENCH_FORWARD_MB:-500}
N=${BENCH_FORWARD_N:-5000}

echo "port forward (server in an ns sandbox; same server process, same client code)"
if ! id=$("$SBXTOP" create --max-duration 900 </dev/null 2>"$T/err"); then
	echo "  skipped: cannot create an ns sandbox: $(cat "$T/err")"
	id=""
	exit 0
fi
"$SBXTOP" cp bench/forward-bench.py "$id:fb.py"
"$SBXTOP" exec -n "$id" --background -- 'exec python3 fb.py server 9000' >/dev/null
"$SBXTOP" forward "$id" 9000 --foreground >"$T/url" 2>"$T/fwd.err" &
fpid=$!
for i in $(seq 100); do [ -s "$T/url" ] && break; sleep 0.05; done
port=$(sed 's/.*://' "$T/url")
sleep 0.5

inside() { "$SBXTOP" exec -n "$id" -- python3 fb.py client 9000 "$@"; }
outside() { python3 bench/forward-bench.py client "$port" "$@"; }

# Interleaved, best of 3 each, so both paths see the same load on the machine.
d_tp=0 f_tp=0
for i in 1 2 3; do
	v=$(inside throughput "$MB"); [ "$v" -gt "$d_tp" ] && d_tp=$v
	v=$(outside throughput "$MB"); [ "$v" -gt "$f_tp" ] && f_tp=$v
done
set -- $(inside latency "$N"); d50=$1 d90=$2 d99=$3
set -- $(outside latency "$N"); f50=$1 f90=$2 f99=$3
d_c=$(inside connect 300)
f_c=$(outside connect 300)

printf '  %-40s %10s   (load average %s)\n' "throughput, $MB MB, best of 3" "MB/s" \
	"$(cut -d' ' -f1 /proc/loadavg)"
printf '    %-38s %10s\n' "direct (sandbox loopback)" "$d_tp"
printf '    %-38s %10s   ratio %s%% (target >= 50%%)\n' "through the forward" "$f_tp" \
	"$(awk -v a="$f_tp" -v b="$d_tp" 'BEGIN { printf "%.0f", 100 * a / b }')"
printf '  %-40s %10s %10s %10s\n' "round trip, 64 B on an open connection" "p50 us" "p90 us" "p99 us"
printf '    %-38s %10s %10s %10s\n' "direct (sandbox loopback)" "$d50" "$d90" "$d99"
printf '    %-38s %10s %10s %10s\n' "through the forward" "$f50" "$f90" "$f99"
printf '    %-38s %10s   (target < 300 us at p50)\n' "added by the forward" "$((f50 - d50))"
printf '  %-40s %10s\n' "new connection + one round trip" "p50 us"
printf '    %-38s %10s\n' "direct (sandbox loopback)" "$d_c"
printf '    %-38s %10s   (tunnel opened through the agent each time)\n' "through the forward" "$f_c"
