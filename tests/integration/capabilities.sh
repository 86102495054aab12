#!/bin/sh
# Who may call what (docs/core-protocol.md, "Who may call what"): every method
# of the core server's table (sbxtop/methods) called by every kind of caller (a
# raw socket client of each kind, none, the real `sbxtop --mcp` bridge, an HTTP
# MCP session), each answer checked against the table and the table against
# the page.  Then what an agent tried to get around the operator, with
# approvals at all, through the bridge and over HTTP MCP: sbxtop/exec, destroy
# of another sandbox, copy_in of a 0600 host file, copy_out onto a host path,
# http_listen on 0.0.0.0, forward_start on 0.0.0.0, approve_mode and shutdown;
# each refused, and nothing done.  Last, the scopes of API keys: every route of
# the HTTP listener and every MCP method over it, with a key of each scope.
. "$(dirname "$0")/../lib.sh"

CAP="python3 $TOP/tests/tools/capabilities.py"
export SBXTOP
J() { json_get "$1" "$2"; }
RUN="$XDG_RUNTIME_DIR/sbxtop"
at_exit '"$SBXTOP" serve --stop'
destroy_left_at_exit
srv_pid() { cat "$RUN/server.lock" 2>/dev/null; }
# tcp_listeners PID: the TCP ports PID listens on, one a line.
tcp_listeners() { ss -Hltnp 2>/dev/null | grep "pid=$1," | awk '{print $4}' | sort; }

# --- the table, walked -------------------------------------------------------------
serve_listen
out=$($CAP walk "$TOP/docs/core-protocol.md" "$URL" "$TOKEN" 2> "$T/walk.err")
[ -n "$out" ] || { sed 's/^/# /' "$T/walk.err" | tail -20; out='{}'; }
like "sbxtop/methods lists the table, with the kinds console, cli, mcp, rest" \
	"$(J "$out" '[d.get("count", 0) > 40, d.get("kinds")]')" \
	"^\[True, \['console', 'cli', 'mcp', 'rest'\]\]$"
is "every method of the table has a harmless call in the walk (a new one needs one)" \
	"$(J "$out" 'd.get("unknown")')" "[]"
is "every kind reaches exactly what the table gives it, each method called" \
	"$(J "$out" 'd.get("mismatch")')" "[]"
is "  so each method's callers are its declared kinds" "$(J "$out" 'd.get("differs")')" "[]"
is "docs/core-protocol.md's table is the server's" "$(J "$out" 'd.get("doc")')" "[]"
is "an agent (kind mcp) reaches the MCP methods and the hello, nothing else" \
	"$(J "$out" '[m for m in d.get("mcp_reaches", []) if m.startswith("sbxtop/")]')" \
	"['sbxtop/hello']"
is "a hello of kind rest is refused (REST clients reach none of these)" \
	"$(J "$out" 'd.get("rest_hello")')" -32602
is "an HTTP MCP session has no hello" "$(J "$out" 'd.get("http_hello")')" -32600
is "the refusals left the server running; the bridge exits 0" \
	"$(J "$out" '[d.get("alive_after_refusals"), d.get("bridge_exit")]')" "[True, 0]"
like "a refusal is in the server's log" "$(cat "$XDG_STATE_HOME/sbxtop/server.log")" \
	"refused sbxtop/exec to client [0-9]+ \(walk-agent|mcp\) \(kind mcp\)"

# --- the attacks ---------------------------------------------------------------------
"$SBXTOP" serve --stop > /dev/null 2>&1
serve_listen
op=$("$SBXTOP" create --name cap-op --max-duration 600 2> "$T/err" < /dev/null)
victim=$("$SBXTOP" create --name cap-victim --max-duration 600 2>> "$T/err" < /dev/null)
if [ -z "$op" ] || [ -z "$victim" ]; then
	diag "create: $(cat "$T/err")"
	not_ok "two ns sandboxes for the attacks"
	done_testing
	exit
fi
printf 'host-only-secret\n' > "$T/host-secret"
chmod 600 "$T/host-secret"
pid=$(srv_pid)
before=$(tcp_listeners "$pid")
like "the server's own listener is seen (ss)" "$before" "^127\.0\.0\.1:[0-9]+$"
out=$($CAP attacks "$op" "$victim" "$T/host-secret" "$T/planted" "$URL" "$TOKEN" 2> "$T/att.err")
[ -n "$out" ] || { sed 's/^/# /' "$T/att.err" | tail -20; out='{}'; }
for via in bridge http; do
	for a in exec destroy copy_in copy_out http_listen forward_start approve_mode shutdown; do
		like "$via: sbxtop/$a is refused to the agent, with the reason" \
			"$(J "$out" "(d.get('${via}_$a') or {}).get('code'), (d.get('${via}_$a') or {}).get('message')")" \
			"^\(-32012, 'sbxtop/[a-z_]+ is the operator's \(console, cli|cli\), not an agent's: .*tools/call"
	done
done
is "the console saw each refusal (client.refused: method, MCP client, kind mcp)" \
	"$(J "$out" 'd.get("refused_events")')" \
	"$(python3 -c 'print(sorted([m, c, "mcp"] for m in ("sbxtop/approve_mode", "sbxtop/copy_in", "sbxtop/copy_out", "sbxtop/destroy", "sbxtop/exec", "sbxtop/forward_start", "sbxtop/http_listen", "sbxtop/shutdown") for c in ("bridge", "http")))')"
is "the agent's tool call still passes the gate: held as an mcp call" \
	"$(J "$out" 'd.get("tool_held")')" "[['sandbox_list', 'mcp']]"
like "  and denied by the operator" "$(J "$out" 'd.get("tool_denied")')" "denied by the operator"
is "nothing ran in the operator's sandbox" \
	"$("$SBXTOP" exec -n "$op" -- 'test -e /workspace/pwned-by-agent && echo ran || echo no' 2>&1)" no
is "the other sandbox is alive" "$(json_get "$("$SBXTOP" status "$victim" --json)" 'd["state"]')" running
is "the 0600 host file was not copied in" \
	"$("$SBXTOP" exec -n "$op" -- 'test -e /workspace/stolen && echo copied || echo no' 2>&1)" no
check "nothing was copied out onto the host path" test ! -e "$T/planted"
is "no listener was opened (the server listens on what it did)" "$(tcp_listeners "$pid")" "$before"
is "no forward was started" "$(J "$out" 'd.get("forwards")')" "[]"
is "the approval mode is still the operator's" "$(J "$out" 'd.get("mode_after")')" all
is "the server was not shut down" "$(srv_pid)" "$pid"
check "  and runs" kill -0 "$pid"
is "the bridge exits 0" "$(J "$out" 'd.get("bridge_exit")')" 0

# --- the scopes of API keys, walked --------------------------------------------------
# Every route of the listener and every MCP method over HTTP, with a key of each
# scope (exec, admin, metrics), none, and the listener's token: a route that
# names no scope is not served, and a new one needs its row in both pages.
"$SBXTOP" serve --stop > /dev/null 2>&1
serve_listen
out=$($CAP scopes "$TOP/docs/openapi.json" "$TOP/docs/rest-api.md" "$URL" "$TOKEN" \
	2> "$T/scopes.err")
[ -n "$out" ] || { sed 's/^/# /' "$T/scopes.err" | tail -20; out='{}'; }
is "sbxtop/methods lists the listener's routes, each with its scope (or none: the probes)" \
	"$(J "$out" '[d.get("routes", 0) > 40, d.get("scopes")]')" \
	"[True, ['admin', 'exec', 'metrics', 'none']]"
is "the MCP methods ask the scope exec" "$(J "$out" 'd.get("mcp_scopes")')" "['exec']"
is "each route and MCP method answers a key of each scope, none and the token as its scope says" \
	"$(J "$out" 'd.get("mismatch")')" "[]"
is "docs/openapi.json's x-scope of each operation is the table's" "$(J "$out" 'd.get("openapi")')" "[]"
is "docs/rest-api.md's table of scopes is the server's" "$(J "$out" 'd.get("restmd")')" "[]"

done_testing
