# The console's network policy end to end, in a real terminal (tmux), on the
# core server, with upstreams in a network namespace the test makes: the
# Network tab shows a sandbox's rules and its allowed and denied connections
# with the rules that decided them; in ask mode a held connection is shown on
# the prompt line and y lets it through, n denies it (the program is told why,
# naming the host), a adds an allow rule; /metrics (serve --listen) counts
# connections and bytes; sandbox_create over MCP takes secrets and
# idle_suspend_s, and net_limit holds for an agent whatever its name.  Then
# the tab and the prompt again in the standalone console.
. "$(dirname "$0")/../lib.sh"

if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null || ! command -v tmux >/dev/null; then
	echo "ok 1 # SKIP needs root (ip netns) and tmux"
	exit 0
fi
export HOME="$T/home" TERM=xterm-256color LANG=C.UTF-8 LC_ALL=C.UTF-8
mkdir -p "$HOME"
sbx() { "$SBXTOP" "$@" < /dev/null; }
IDS=""
at_exit 'for i in $IDS; do "$SBXTOP" destroy "$i"; done'

check "the upstream is up" net_upstream
export SBXTOP_NET_RESOLVE="up.test:$UPIP,other.test:$UPIP,third.test:$UPIP"
export SBXTOP_NET_ASK_TIMEOUT=40 SBXTOP_NET_LIMIT='*.test'
W=160 H=40

# The console first: it starts the core server every command below uses.
tmux_start
tmux_run $W $H "$SBXTOP"
check "the console runs on the core server" tmux_wait 'core: local' 15
a=$(sbx create --name tn-a --max-duration 600 --allow up.test --deny other.test:80)
IDS="$IDS $a"
b=$(sbx create --name tn-b --max-duration 600 --allow up.test --ask)
IDS="$IDS $b"
check "two sandboxes with rules" test -n "$a" -a -n "$b"

# --- the Network tab -----------------------------------------------------------
tmux_keys / 'tn-a' Enter
check "the first is selected" tmux_wait "▶$a +tn-a" 10
tmux_keys Tab Tab Tab
check "Tab reaches the Network tab" tmux_wait '\[Network\]'
check "it shows the policy: ask off" tmux_wait 'network rules — ask off — proxy pid [0-9]+'
check "  the allow entries" tmux_wait 'allow +up\.test'
check "  the deny entries" tmux_wait 'deny +other\.test:80'
check "  no connection yet" tmux_wait 'no connections yet'

# /metrics through serve --listen, before and after.
"$SBXTOP" serve --listen 127.0.0.1:0 2> "$T/serve.err" &
SERVE=$!
at_exit "kill $SERVE"
for _i in $(seq 100); do grep -q 'token: ' "$T/serve.err" && break; sleep 0.1; done
URL=$(sed -n 's/.* at \(http:[^ ]*\).*/\1/p' "$T/serve.err" | head -1)
TOK=$(sed -n 's/.*token: \([^ ]*\).*/\1/p' "$T/serve.err" | head -1)
BASE=${URL%/mcp}
metric() {	# metric NAME LABELS: its value, 0 when absent
	curl -s -H "Authorization: Bearer $TOK" "$BASE/metrics" |
	    awk -v k="$1{$2}" '$1 == k { v = $2 } END { print v + 0 }'
}
check "serve --listen gives a URL and a token" test -n "$URL" -a -n "$TOK"
m_allow0=$(metric sbxtop_sandbox_net_connections_total "sandbox=\"$a\",verdict=\"allowed\"")
m_deny0=$(metric sbxtop_sandbox_net_connections_total "sandbox=\"$a\",verdict=\"denied\"")
m_in0=$(metric sbxtop_sandbox_net_bytes_total "sandbox=\"$a\",direction=\"in\"")
like "/metrics has the network counters of a sandbox with rules" \
	"$(curl -s -H "Authorization: Bearer $TOK" "$BASE/metrics")" \
	"sbxtop_sandbox_net_connections_total\\{sandbox=\"$a\",verdict=\"asked\"\\} 0"

out=$(sbx exec -n "$a" -- 'curl -sS -m 10 http://up.test/hello' 2>&1)
is "an allowed connection gets through" "$out" "hello from upstream"
out=$(sbx exec -n "$a" -- 'curl -s -m 10 -w " %{http_code}" http://other.test/hello | tr "\n" " "' 2>&1)
like "a denied one is refused, naming the rule" "$out" \
	"other\\.test:80 is denied by the network policy .*\\(deny other\\.test:80\\).* 403"
# The pane is under 110 columns: two rows a connection.
check "the tab shows the allowed connection and its rule" \
	tmux_wait 'up\.test:80 +allow +allow up\.test +│' 10
check "  the address it went to, the bytes and how long" \
	tmux_wait "→ $UPIP +up [0-9.]+ [KMG]?i?B +down [0-9.]+ [KMG]?i?B +[0-9]+ms" 5
check "the tab shows the denied connection and its rule" \
	tmux_wait 'other\.test:80 +deny +deny other\.test:80' 10
check "the counts moved" tmux_wait 'allowed 1 +denied 1 +asked 0' 5

for _i in $(seq 30); do
	m_allow1=$(metric sbxtop_sandbox_net_connections_total "sandbox=\"$a\",verdict=\"allowed\"")
	[ "$m_allow1" -gt "$m_allow0" ] && break
	sleep 0.2
done
is "/metrics: allowed connections counted" "$m_allow1" $((m_allow0 + 1))
is "/metrics: denied connections counted" \
	"$(metric sbxtop_sandbox_net_connections_total "sandbox=\"$a\",verdict=\"denied\"")" $((m_deny0 + 1))
m_in1=$(metric sbxtop_sandbox_net_bytes_total "sandbox=\"$a\",direction=\"in\"")
check "/metrics: bytes to the sandbox counted ($m_in0 -> $m_in1)" test "$m_in1" -gt "$m_in0"
like "sbxtop status has the counts" "$(sbx status "$a")" '1 allowed, 1 denied, 0 asked'

# --- ask mode: the prompt, y, n, a ------------------------------------------------
tmux_keys / 'tn-b' Enter
check "the ask-mode sandbox is selected" tmux_wait "▶$b +tn-b" 10
check "its Network tab says ask is on" tmux_wait 'ask on \(40 s\)' 10
held() {	# held OUT: a curl of third.test in the background, its output in OUT
	sbx exec -n "$b" -- 'curl -s -m 60 -w " %{http_code}" http://third.test/hello | tr "\n" " "' \
	    > "$1" 2>&1 &
	HELD=$!
}
PROMPT="! $b \\(tn-b\\) wants third\\.test:80 — \\[y\\] once  \\[a\\] always  \\[n\\] deny"
held "$T/ask1"
if tmux_wait "$PROMPT" 15; then ok "a held connection is on the prompt line"
else not_ok "a held connection is on the prompt line"; tmux_screen | tail -3 | sed 's/^/# /'; fi
check "  and on the tab, waiting" tmux_wait 'waiting: third\.test:80 \(connection\)' 5
tmux_keys y
wait $HELD
like "y lets it through once" "$(cat "$T/ask1")" "hello from upstream +200"
check "the prompt line says so" tmux_wait "third\\.test:80 allowed once" 5
check "the tab shows it decided by the operator" tmux_wait 'third\.test:80 +allow +operator once' 10
held "$T/ask2"
check "once is once: the next one is held again" tmux_wait "$PROMPT" 15
# A picture of the tab with a connection decided and one held, for the record.
[ -n "${TUI_NET_SCREEN:-}" ] && tmux_screen > "$TUI_NET_SCREEN"
tmux_keys n
wait $HELD
like "n denies it: the program is told, naming the host" "$(cat "$T/ask2")" \
	"third\\.test:80 is not allowed.*operator denied it.* 403"
held "$T/ask3"
check "held a third time" tmux_wait "$PROMPT" 15
tmux_keys a
wait $HELD
like "a lets it through" "$(cat "$T/ask3")" "hello from upstream +200"
is "  and adds an allow rule that sbxtop net shows" \
	"$(json_get "$(sbx net "$b" --json)" '"third.test:80" in d["policy"]["allow"]')" True
check "  which the tab shows too" tmux_wait 'allow +up\.test +third\.test:80' 10
out=$(sbx exec -n "$b" -- 'curl -s -m 10 http://third.test/hello' 2>&1)
is "  so the next connection is not held" "$out" "hello from upstream"
check "the tab counted the asks" tmux_wait 'asked 3' 5
check "nothing waits any more" sh -c "! tmux -L $TMUX_SOCK capture-pane -p -t con | grep -q 'wants third'"

# --- sandbox_create over MCP: secrets, idle_suspend_s, net_limit ----------------
printf 'tn-secret-value' | "$SBXTOP" secret set TNSECRET --host up.test > /dev/null
TOP=$TOP SBXTOP=$SBXTOP timeout 120 node "$TOP/tests/integration/tui-net-mcp.mjs" \
	> "$T/mcp.out" 2> "$T/mcp.err"
m() { grep "\"step\":\"$1\"" "$T/mcp.out"; }
like "MCP: sandbox_create's schema has secrets and idle_suspend_s" "$(m schema)" \
	'"secrets":"array","idle":"integer"'
like "MCP: an agent named console is still bounded by net_limit" "$(m limit)" \
	'"isError":true.*beyond the limit'
like "MCP: sandbox_create with secrets makes a rules sandbox" "$(m created)" \
	'"isError":false,"id":"sbx-[0-9a-f]+","network":"rules"'
sid=$(json_get "$(m created)" 'd.get("id") or ""')
[ -n "$sid" ] && IDS="$IDS $sid"
like "  whose variable holds the placeholder, not the value" "$(m env)" \
	'"out":"sbxtop-secret-TNSECRET-[0-9a-f]{32}"'
if [ -n "$sid" ]; then
	st=$(sbx status "$sid" --json)
	is "  with idle_suspend_s in its record" "$(json_get "$st" 'd["idle_suspend_s"]')" 300
	is "  and the secret's host allowed" \
		"$(json_get "$(sbx net "$sid" --json)" '"up.test:443" in d["policy"]["allow"]')" True
else
	not_ok "  with idle_suspend_s in its record"; not_ok "  and the secret's host allowed"
	sed 's/^/# /' "$T/mcp.err" | tail -5
fi
like "MCP: an unknown secret is an error" "$(m unknown-secret)" '"isError":true'

tmux_keys q
check "the console quits" tmux_wait 'EXITED-0' 10

# --- the standalone console: the same tab and prompt, the core in its process ----
tmux_run $W $H "$SBXTOP --standalone"
check "the standalone console starts" tmux_wait 'core: standalone' 15
tmux_keys / 'tn-a' Enter
tmux_wait "▶$a +tn-a" 10
tmux_keys Tab Tab Tab
check "standalone: the Network tab shows the connections so far" \
	tmux_wait 'other\.test:80 +deny +deny other\.test:80' 10
sbx exec -n "$b" -- 'curl -s -m 60 -w " %{http_code}" http://other.test/hello | tr "\n" " "' \
    > "$T/ask4" 2>&1 &
HELD=$!
check "standalone: a held connection is on the prompt line" \
	tmux_wait "! $b \\(tn-b\\) wants other\\.test:80 — \\[y\\] once" 15
tmux_keys n
wait $HELD
like "standalone: n denies it" "$(cat "$T/ask4")" "other\\.test:80 is not allowed.*operator denied it"
tmux_keys q
check "the standalone console quits" tmux_wait 'EXITED-0' 10
done_testing
