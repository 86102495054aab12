# Network rules: HTTP through the core's proxy (--allow) beside direct egress
# (--network egress, slirp4netns) from the same kind of sandbox to the same
# upstream in the same run: download throughput, and the time to the first
# byte of a new connection (curl's time_starttransfer, measured inside).
set -eu
BUILD=${BUILD:-build}
N=${BENCH_NET_N:-200}
MB=${BENCH_NET_MB:-512}
T=$(mktemp -d /tmp/sbxbench.XXXXXX)
export XDG_STATE_HOME="$T/state" XDG_RUNTIME_DIR="$T/run" XDG_CONFIG_HOME="$T/config" \
	XDG_DATA_HOME="$T/data" XDG_CACHE_HOME="$T/cache"
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
S="$BUILD/sbxtop"
ids="" srv=""
trap 'for i in $ids; do "$S" destroy "$i" >/dev/null 2>&1; done; "$S" serve --stop >/dev/null 2>&1;
	[ -n "$srv" ] && kill $srv; rm -rf "$T"' EXIT

if ! command -v slirp4netns >/dev/null && ! command -v pasta >/dev/null; then
	echo "network rules: skipped (direct egress needs slirp4netns or pasta to compare with)"
	exit 0
fi
# The upstream: on the host's first non-loopback address, which egress reaches
# (the host's loopback it does not).
ip=$(ip -4 -o addr show scope global | awk '{split($4, a, "/"); print a[1]; exit}')
[ -n "$ip" ] || { echo "network rules: skipped (no global IPv4 address)"; exit 0; }
cat > "$T/srv.py" <<'EOF'
import socket, sys, threading
ip, port, big = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) << 20
chunk = b"\0" * (1 << 20)
def serve(c):
    f = c.makefile("rb")
    line = f.readline()
    while f.readline() not in (b"\r\n", b""):
        pass
    if b"/big" in line:
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % big)
        for _ in range(big >> 20):
            c.sendall(chunk)
    else:
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
    c.close()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((ip, port))
s.listen(128)
open(sys.argv[4], "w").write("1")
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
EOF
port=18$(( $$ % 900 + 100 ))
python3 "$T/srv.py" "$ip" "$port" "$MB" "$T/ready" & srv=$!
for _i in $(seq 100); do [ -e "$T/ready" ] && break; sleep 0.05; done
export SBXTOP_NET_RESOLVE="bench.test:$ip"

# The server is on the host's own address: only an address entry reaches it.
px=$("$S" create --allow "$ip:$port" </dev/null); ids="$ids $px"
eg=$("$S" create --network egress </dev/null); ids="$ids $eg"

# ttfb ID URL: N first-byte times (microseconds), one a line, each a new connection.
ttfb() {
	"$S" exec -n "$1" -- "for i in \$(seq $N); do curl -s -o /dev/null -w '%{time_starttransfer}\n' $2; done" |
		awk '{printf "%d\n", $1 * 1000000}'
}
# rate ID URL: MB/s of one download of the big body (best of three).
rate() {
	for _k in 1 2 3; do
		"$S" exec -n "$1" -- "curl -s -o /dev/null -w '%{speed_download}\n' $2"
	done | sort -n | tail -1 | awk '{printf "%.0f", $1 / 1048576}'
}
stats() { sort -n "$1" | awk '{v[NR]=$1} END {p50=v[int((NR+1)/2)]; p99=v[int(NR*0.99+0.999)]; printf "%10.2f %10.2f", p50/1000, p99/1000}'; }

ttfb "$px" "http://bench.test:$port/small" > "$T/px.ttfb"
ttfb "$eg" "http://$ip:$port/small" > "$T/eg.ttfb"
rpx=$(rate "$px" "http://bench.test:$port/big")
reg=$(rate "$eg" "http://$ip:$port/big")
p50px=$(sort -n "$T/px.ttfb" | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
p50eg=$(sort -n "$T/eg.ttfb" | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')

printf '%-48s %10s %10s\n' "network: time to first byte ($N new connections)" "p50 ms" "p99 ms"
printf '  %-46s %s\n' "--allow (through the core's proxy)" "$(stats "$T/px.ttfb")"
printf '  %-46s %s\n' "--network egress (slirp4netns, direct)" "$(stats "$T/eg.ttfb")"
printf '  %-46s %10.2f              (target <= 2 ms)\n' "added by the proxy (p50)" \
	"$(echo "$p50px $p50eg" | awk '{print ($1 - $2) / 1000}')"
printf '%-48s %10s\n' "network: HTTP download of $MB MiB (best of 3)" "MiB/s"
printf '  %-46s %10s\n' "--allow (through the core's proxy)" "$rpx"
printf '  %-46s %10s\n' "--network egress (slirp4netns, direct)" "$reg"
printf '  %-46s %9s%%              (target >= 70%%)\n' "proxy / direct" \
	"$(echo "$rpx $reg" | awk '{printf "%.0f", ($2 > 0) ? (100 * $1 / $2) : 0}')"
