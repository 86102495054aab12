#!/bin/sh
# The HTTP listener of `sbxtop serve --listen` under a slow client flood:
# another local user, without the token, holds 300 connections that send
# nothing (a new one for each the server closes), and authorized MCP and REST
# requests are still answered within a second each.  Then the deadlines one
# by one: a head that never ends is closed after http_header_timeout, a client
# without the token once answered, one with it after http_idle_timeout idle;
# a tool call held longer than both, and an SSE stream open as long, go on.
. "$(dirname "$0")/../lib.sh"

if [ "$(id -u)" -ne 0 ]; then
	echo "ok 1 # SKIP needs root (another local user floods the listener)"
	exit 0
fi
export SBXTOP SBXTOP_HTTP_HEADER_TIMEOUT=1 SBXTOP_HTTP_IDLE_TIMEOUT=3
DOOR="$TOP/tests/tools/http-door.py"
J() { json_get "$1" "$2"; }
users_init
fu=sbxflood$$
user_make "$fu" no || { not_ok "useradd $fu"; exit 1; }
cp "$DOOR" "$U/http-door.py"
chmod 0755 "$U/http-door.py"
serve_listen
PORT=${URL##*:}; PORT=${PORT%/mcp}

# --- the flood ---------------------------------------------------------------------
"$U/run-$fu" python3 "$U/http-door.py" flood "$PORT" 300 8 > "$T/flood.out" 2> "$T/flood.err" &
fpid=$!
at_exit "kill $fpid 2>/dev/null"
sleep 3
out=$(python3 "$DOOR" clients "$URL" "$TOKEN" 5 2> "$T/clients.err")
[ -n "$out" ] || { sed 's/^/# /' "$T/clients.err"; out='{"mcp":[],"rest":[]}'; }
wait $fpid
flood=$(cat "$T/flood.out")
[ -n "$flood" ] || { sed 's/^/# /' "$T/flood.err"; flood='{}'; }
diag "flood: $flood"
diag "authorized requests meanwhile (ok, seconds): $out"
is "another local user held 300 connections to the listener the whole time" \
	"$(J "$flood" '[d.get("open_max"), d.get("open_median_after_3s", 0) >= 290]')" "[300, True]"
like "  which the door closed, again and again (header deadline, the oldest first)" \
	"$(J "$flood" 'd.get("closed_by_server", 0)')" '^[0-9]{3,}$'
is "authorized MCP requests (initialize, tools/list) were answered" \
	"$(J "$out" '[ok for ok, s in d["mcp"]]')" "[True, True, True, True, True]"
is "  each within a second" "$(J "$out" '[s < 1 for ok, s in d["mcp"]]')" \
	"[True, True, True, True, True]"
is "authorized REST requests (GET /v1/sandboxes) were answered" \
	"$(J "$out" '[ok for ok, s in d["rest"]]')" "[True, True, True, True, True]"
is "  each within a second" "$(J "$out" '[s < 1 for ok, s in d["rest"]]')" \
	"[True, True, True, True, True]"
check "the core server still runs" kill -0 "$(cat "$XDG_RUNTIME_DIR/sbxtop/server.lock")"

# --- the deadlines -------------------------------------------------------------------
out=$(TOP=$TOP python3 "$DOOR" deadlines "$URL" "$TOKEN" 1 3 2> "$T/dl.err")
[ -n "$out" ] || { sed 's/^/# /' "$T/dl.err" | tail -20; out='{}'; }
diag "deadlines: $out"
like "half a head is closed after the header deadline (1 s)" \
	"$(J "$out" 'd.get("half_head_closed_s")')" '^(0\.[89]|1\.[0-9]+)[0-9]*$'
is "a client without the token gets its 401, and the connection closes at once" \
	"$(J "$out" '[d.get("no_token_status"), d.get("no_token_closed_s", 9) < 0.5]')" \
	"['HTTP/1.1 401 Unauthorized', True]"
is "one with the token is kept past the header deadline" \
	"$(J "$out" '[d.get("token_status"), d.get("token_open_past_header")]')" \
	"['HTTP/1.1 200 OK', True]"
like "  and closed after the idle timeout (3 s) without a request" \
	"$(J "$out" 'd.get("token_closed_s")')" '^(2\.9|3\.[0-9]|4\.0)$'
is "an SSE stream stays open longer than both" \
	"$(J "$out" '[d.get("sse_status"), d.get("sse_open")]')" "['HTTP/1.1 200 OK', True]"
is "a tool call held longer than both is answered once the operator allows it" \
	"$(J "$out" '[d.get("held_while_waiting"), d.get("held_ok"), (d.get("held_s") or 0) > 4]')" \
	"[1, True, True]"

kill "$SERVE_PID"; wait "$SERVE_PID"
"$SBXTOP" serve --stop 2> /dev/null
check "no sanitizer report in the core server's log" sh -c \
	"! grep -E 'ERROR: AddressSanitizer|runtime error:|LeakSanitizer' '$XDG_STATE_HOME/sbxtop/server.log'"
done_testing
