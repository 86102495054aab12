# The console under load: 200 real ns sandboxes in the list (created here with a
# short --max-duration) and one command streaming about 1 MB/s into the selected
# sandbox's Exec tab.  Measured: the console's CPU (utime+stime from
# /proc/PID/stat over 10 s) idle and while streaming, and its redraw latency
# (from the first message not yet drawn to the end of the redraw, as the
# console itself records it with SBXTOP_TUI_STATS).  Target: idle <= 1% of one
# core.  BENCH_CONSOLE_N changes the number of sandboxes.
set -eu
BUILD=${BUILD:-build}
N=${BENCH_CONSOLE_N:-200}
T=$(mktemp -d /tmp/sbxbench.XXXXXX)
export XDG_STATE_HOME="$T/state" XDG_RUNTIME_DIR="$T/run" XDG_CONFIG_HOME="$T/config" \
	XDG_DATA_HOME="$T/data" XDG_CACHE_HOME="$T/cache" TERM=xterm-256color LANG=C.UTF-8
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
S="$(cd "$(dirname "$BUILD/sbxtop")" && pwd)/sbxtop"
TM="tmux -L sbxbench-$$"
ids=""
trap '$TM kill-server >/dev/null 2>&1; for i in $ids; do "$S" destroy "$i" >/dev/null 2>&1; done; rm -rf "$T"' EXIT

if ! command -v tmux >/dev/null; then
	echo "console: tmux is not installed, skipped"
	exit 0
fi
t0=$(date +%s%N)
for i in $(seq "$N"); do
	id=$("$S" create --max-duration 600 </dev/null 2>/dev/null) || break
	ids="$ids $id"
done
made=$(echo $ids | wc -w)
create_s=$(( ($(date +%s%N) - t0) / 1000000 ))
first=$("$S" ls --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')

hz=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# cpu_pct PID SECONDS: the share of one core used over SECONDS.
cpu_pct() {
	a=$(cpu_ticks "$1"); sleep "$2"; b=$(cpu_ticks "$1")
	awk -v d=$((b - a)) -v hz="$hz" -v s="$2" 'BEGIN {printf "%.2f", 100 * d / hz / s}'
}

$TM new-session -d -s con -x 120 -y 32 "SBXTOP_TUI_STATS=$T/stats $S --standalone"
sleep 3
pid=$(pgrep -n -f "^$S --standalone")
idle=$(cpu_pct "$pid" 10)

# About 1 MB/s: 10 chunks of ~100 KB of text lines a second, for 14 s.
"$S" exec "$first" -- 'i=0; while [ $i -lt 140 ]; do head -c 75000 /dev/urandom | base64 -w 100; sleep 0.1; i=$((i+1)); done' > "$T/stream.out" &
xpid=$!
sleep 2
stream=$(cpu_pct "$pid" 10)
wait $xpid || true
bytes=$(wc -c < "$T/stream.out")
shown=$($TM capture-pane -p -t con | grep -c '^│.*││  [A-Za-z0-9+/]\{20\}' || true)
$TM send-keys -t con q
sleep 1

printf '%-52s %s\n' "console ($made sandboxes listed, created in ${create_s} ms)" ""
printf '  %-50s %6s %% of a core   (target <= 1%%)\n' "idle, 10 s" "$idle"
printf '  %-50s %6s %% of a core\n' "one exec streaming $((bytes / 14 / 1024)) KB/s into the Exec tab, 10 s" "$stream"
printf '  %-50s %s\n' "redraw latency" "$(cat "$T/stats" 2>/dev/null || echo 'no figures')"
printf '  %-50s %s\n' "output rows on screen at the end" "$shown"
