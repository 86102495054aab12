# The agent: its start, exec round trip, streamed output, idle memory.
set -eu
BUILD=${BUILD:-build}
T=$(mktemp -d /tmp/sbxbench.XXXXXX)
pids=""
trap 'for p in $pids; do kill $p 2>/dev/null; done; rm -rf "$T"' EXIT
cc -O2 -Wall -Wextra -Werror -o "$T/agent-bench" bench/agent-bench.c

secret=bench-secret-0123456789abcdef
printf '%s\n' "$secret" > "$T/secret"
mkdir "$T/ws"
"$BUILD/sbxtop-agent" --listen "unix:$T/a.sock" --secret-file "$T/secret" \
	--workspace "$T/ws" --log "$T/agent.log" &
pid=$!
pids="$pid"
for i in $(seq 100); do [ -S "$T/a.sock" ] && break; sleep 0.02; done
sleep 0.5

# Idle memory first, before any request has grown anything.
rss=$(awk '/^VmRSS/ {print $2}' /proc/$pid/status)
pss=$(awk '/^Pss:/ {print $2}' /proc/$pid/smaps_rollup)
anon=$(awk '/^RssAnon/ {print $2}' /proc/$pid/status)
python3 -m http.server 0 --bind 127.0.0.1 >/dev/null 2>&1 &
peer=$!
pids="$pids $peer"
sleep 1
prss=$(awk '/^VmRSS/ {print $2}' /proc/$peer/status)
printf '%-44s %10s %10s %10s\n' "idle memory" "RSS KiB" "PSS KiB" "anon KiB"
printf '  %-42s %10s %10s %10s   (target RSS <= 4096 KiB)\n' "sbxtop-agent" "$rss" "$pss" "$anon"
printf '  %-42s %10s\n' "peer: python3 -m http.server" "$prss"
echo

"$T/agent-bench" "$T/a.sock" "$secret" "${BENCH_EXEC_N:-1000}" "${BENCH_STREAM_MB:-200}"
echo
mkdir "$T/start"
"$T/agent-bench" --start "$BUILD/agent-bundle" "$T/start" "${BENCH_START_N:-300}"
