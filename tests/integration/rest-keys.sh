# API keys on the listener, with curl as Agent Sandbox's README gives its calls:
# keys of each scope (exec, admin, metrics) made with `sbxtop key` and with
# POST /admin/keys, taken from Authorization: Bearer, X-API-Key or ?api_key;
# each refusal's status and body exactly as Agent Sandbox says them; a rate
# limit hit, and its window's reset (key_rate_window made short); revoked and
# expired keys refused; one key neither seeing nor ending another's sessions,
# an admin key seeing all; the console's journal naming the key; /metrics
# counting calls per key under bounded, escaped labels; and a key sent in a
# query string in no log line, journal event or file of the state directory.
. "$(dirname "$0")/../lib.sh"

# Debug: every log line the server can write is looked at for keys.
export SBXTOP SBXTOP_KEY_RATE_WINDOW=3 SBXTOP_LOG_LEVEL=debug
J() { json_get "$1" "$2"; }

EXEC=$("$SBXTOP" key add ci 2> "$T/add.err")
OTHER=$("$SBXTOP" key add other-team 2>> "$T/add.err")
BOSS=$("$SBXTOP" key add boss --scope exec,admin 2>> "$T/add.err")
ADMIN=$("$SBXTOP" key add keys-only --scope admin 2>> "$T/add.err")
METRICS=$("$SBXTOP" key add prom --scope metrics 2>> "$T/add.err")
like "sbxtop key add prints each key once, on stdout" "$EXEC $METRICS" \
	"^sbxk_[0-9a-f]{64} sbxk_[0-9a-f]{64}$"
like "  and what it made on stderr" "$(head -n 1 "$T/add.err")" \
	"^sbxtop: key key-[0-9a-f]{8} 'ci' \(exec, 100 requests a window\): the key is shown only now$"
check "the store is 0600 and holds no key" sh -c "[ \"\$(stat -c %a '$XDG_STATE_HOME/sbxtop/keys.json')\" = 600 ] && ! grep -q '${EXEC#sbxk_}' '$XDG_STATE_HOME/sbxtop/keys.json'"

serve_listen
destroy_left_at_exit
B=http://localhost:${URL##*:}; B=${B%/mcp}
# req METHOD PATH [CURL ARGS...]: "STATUS BODY"
req() {
	_m=$1 _p=$2; shift 2
	_c=$(curl -s -o "$T/body" -w '%{http_code}' -X "$_m" "$B$_p" "$@")
	printf '%s %s' "$_c" "$(cat "$T/body")"
}
CT="Content-Type: application/json"
EXECUTE='{"command":"sh","args":["-c","echo hello from the sandbox"]}'

# --- the README's calls, with a key of each scope --------------------------------
is "execute with an exec key (Authorization: Bearer)" \
	"$(req POST /exec/session1/execute -H "Authorization: Bearer $EXEC" -H "$CT" -d "$EXECUTE")" \
	'200 {"exitCode":0,"duration":'"$(J "$(cat "$T/body")" 'd["duration"]')"',"output":[{"stream":"stdout","data":"hello from the sandbox\n"}]}'
is "write with X-API-Key" "$(req POST /exec/session1/write -H "X-API-Key: $EXEC" -H "$CT" \
	-d '{"path":"a.js","content":"console.log(1)"}' | head -c 3)" 200
is "read with ?api_key" "$(J "$(req GET "/exec/session1/read?path=a.js&api_key=$EXEC" | tail -c +5)" \
	'd["content"]')" "console.log(1)"
is "files" "$(J "$(req GET "/exec/session1/files?recursive=true" -H "X-API-Key: $EXEC" | tail -c +5)" \
	'[f["path"] for f in d["files"]]')" "['/workspace/a.js']"
is "GET /exec/ lists the key's session" "$(J "$(req GET /exec/ -H "X-API-Key: $EXEC" | tail -c +5)" \
	'[s["id"] for s in d["sessions"]]')" "['session1']"
for r in "POST /exec/session1/execute" "POST /exec/session1/write" "GET /exec/session1/read?path=a.js" \
    "GET /exec/session1/files" "GET /exec/" "GET /exec/templates" "DELETE /exec/session1"; do
	set -- $r
	is "$r without a key: 401 API key required" "$(req "$1" "$2" -H "$CT" -d '{}')" \
		'401 {"error":"API key required"}'
	is "$r with a wrong key: 401 Invalid API key" "$(req "$1" "$2" -H "X-API-Key: sbxk_nope" -H "$CT" -d '{}')" \
		'401 {"error":"Invalid API key"}'
	is "$r with a metrics key: 403" "$(req "$1" "$2" -H "X-API-Key: $METRICS" -H "$CT" -d '{}')" \
		'403 {"error":"Missing required scope: exec"}'
	is "$r with an admin-only key: 403" "$(req "$1" "$2" -H "Authorization: Bearer $ADMIN" -H "$CT" -d '{}')" \
		'403 {"error":"Missing required scope: exec"}'
done
is "GET /metrics with an exec key: 403" "$(req GET /metrics -H "X-API-Key: $EXEC")" \
	'403 {"error":"Missing required scope: metrics"}'
like "GET /metrics with a metrics key: Prometheus text" "$(req GET "/metrics?api_key=$METRICS")" \
	"^200 # HELP sbxtop_up"
is "GET /metrics without a key: 401" "$(req GET /metrics)" '401 {"error":"API key required"}'
is "GET /admin/keys with an exec key: 403" "$(req GET /admin/keys -H "X-API-Key: $EXEC")" \
	'403 {"error":"Missing required scope: admin"}'
is "GET /ready needs no key" "$(J "$(req GET /ready | tail -c +5)" 'd["status"]')" ready
is "GET /health neither" "$(J "$(req GET /health | tail -c +5)" 'd["status"]')" ok
is "the listener's token is the operator's key: /admin/keys" \
	"$(req GET /admin/keys -H "Authorization: Bearer $TOKEN" | head -c 3)" 200
is "  /metrics" "$(req GET /metrics -H "X-API-Key: $TOKEN" | head -c 3)" 200

# --- the key API ---------------------------------------------------------------------
out=$(req POST /admin/keys -H "X-API-Key: $ADMIN" -H "$CT" -d '{"name":"limited","rateLimit":3}')
is "POST /admin/keys: 201 {key, record}" "$(J "${out#* }" '[sorted(d), d["record"]["rateLimit"], d["record"]["scopes"]]')" \
	"[['key', 'record'], 3, ['exec']]"
LIM=$(J "${out#* }" 'd["key"]'); LIMID=$(J "${out#* }" 'd["record"]["id"]')
is "the key is 201's" "${out%% *}" 201
is "GET /admin/keys lists it, without the key" \
	"$(J "$(req GET /admin/keys -H "X-API-Key: $ADMIN" | tail -c +5)" "[k['name'] for k in d['keys'] if k['id'] == '$LIMID'] + [k for k in d['keys'] if 'hash' in k or 'key' in k]")" \
	"['limited']"
is "sbxtop key ls shows it too" "$("$SBXTOP" key ls | awk -v i="$LIMID" '$1 == i {print $2, $3, $4, $6}')" \
	"limited exec 3 active"
is "a bad body: 400 in the same shape" \
	"$(req POST /admin/keys -H "X-API-Key: $ADMIN" -H "$CT" -d '{"name":"x","scopes":["root"]}')" \
	'400 {"error":"unknown scope '"'root'"'","hint":"give one or more of exec, admin, metrics"}'
for r in "POST /admin/keys/key-00000000/revoke" "POST /admin/keys/key-00000000/rotate" \
    "DELETE /admin/keys/key-00000000"; do
	set -- $r
	is "$r: 404" "$(req "$1" "$2" -H "X-API-Key: $ADMIN")" \
		'404 {"error":"API key not found","hint":"GET /admin/keys lists them"}'
done

# --- the rate limit, and its window ------------------------------------------------------
sleep 3	# a fresh window for it
codes=""
for i in 1 2 3 4 5; do
	codes="$codes $(req GET /exec/templates -H "X-API-Key: $LIM" | head -c 3)"
done
is "rateLimit 3: the 4th request of the window is refused" "$codes" " 200 200 200 429 429"
curl -s -D "$T/h" -o "$T/body" "$B/exec/" -H "X-API-Key: $LIM"
is "  429 {\"error\":\"Rate limit exceeded\",\"retryAfter\":N}, N the window (key_rate_window 3 s)" \
	"$(cat "$T/body")" '{"error":"Rate limit exceeded","retryAfter":3}'
like "  with Retry-After" "$(tr -d '\r' < "$T/h")" "^Retry-After: 3$"
is "  on /v1/ in its own shape" "$(J "$(req GET /v1/sandboxes -H "X-API-Key: $LIM" | tail -c +5)" 'd["error"]["code"], d["error"]["message"]')" \
	"('rate_limited', 'Rate limit exceeded')"
is "another key is not held back by it" "$(req GET /exec/templates -H "X-API-Key: $EXEC" | head -c 3)" 200
sleep 3
is "the next window lets it in again" "$(req GET /exec/templates -H "X-API-Key: $LIM" | head -c 3)" 200

# --- revoked, rotated, expired -----------------------------------------------------------
out=$(req POST "/admin/keys/$LIMID/rotate" -H "X-API-Key: $ADMIN")
NEW=$(J "${out#* }" 'd["key"]')
is "rotate: a new key for the same record" "$(J "${out#* }" 'd["record"]["id"]') ${out%% *}" "$LIMID 200"
is "  the old one is refused at once" "$(req GET /exec/ -H "X-API-Key: $LIM")" '401 {"error":"Invalid API key"}'
is "  the new one works" "$(req GET /exec/ -H "X-API-Key: $NEW" | head -c 3)" 200
"$SBXTOP" key revoke limited 2> "$T/rev.err"
is "sbxtop key revoke, on a server that runs: refused from the next request" \
	"$(req GET /exec/ -H "X-API-Key: $NEW")" '401 {"error":"Invalid API key"}'
like "  the log names it by id, never by key" "$(cat "$XDG_STATE_HOME/sbxtop/server.log")" \
	"refused API key $LIMID \('limited'\): revoked"
is "DELETE /admin/keys/ID" "$(req DELETE "/admin/keys/$LIMID" -H "X-API-Key: $ADMIN")" \
	"200 {\"id\":\"$LIMID\",\"deleted\":true}"
SOON=$("$SBXTOP" key add soon --expires 2s 2> /dev/null)
is "a key that expires in 2 s works now" "$(req GET /exec/ -H "X-API-Key: $SOON" | head -c 3)" 200
sleep 3
is "  and not once it has expired" "$(req GET /exec/ -H "X-API-Key: $SOON")" '401 {"error":"Invalid API key"}'
is "  sbxtop key ls says so" "$("$SBXTOP" key ls | awk '$2 == "soon" {print $NF}')" expired

# --- whose sessions ------------------------------------------------------------------------
sid=$(J "$(req GET /exec/ -H "X-API-Key: $EXEC" | tail -c +5)" 'd["sessions"][0]["sandbox_id"]')
is "another key's GET /exec/ does not list session1" "$(req GET /exec/ -H "X-API-Key: $OTHER")" \
	'200 {"sessions":[],"idleTimeoutMs":1800000}'
is "  nor does its GET /v1/sandboxes show the sandbox" \
	"$(J "$(req GET /v1/sandboxes -H "X-API-Key: $OTHER" | tail -c +5)" 'd["sandboxes"]')" "[]"
is "  GET /v1/sandboxes/ID is 404 to it" "$(req GET "/v1/sandboxes/$sid" -H "X-API-Key: $OTHER" | head -c 3)" 404
out=$(req POST /exec/session1/execute -H "X-API-Key: $OTHER" -H "$CT" -d '{"command":"touch /workspace/x"}')
is "  it cannot run in session1" "$(J "${out#* }" '[d["error"]["code"], d["error"]["message"]]') ${out%% *}" \
	"['denied', \"session 'session1' belongs to another API key\"] 403"
is "  nor end it" "$(req DELETE /exec/session1 -H "X-API-Key: $OTHER" | head -c 3)" 403
is "  nor destroy its sandbox through /v1/" "$(req DELETE "/v1/sandboxes/$sid" -H "X-API-Key: $OTHER" | head -c 3)" 404
is "  which is alive and untouched" \
	"$("$SBXTOP" exec -n "$sid" -- 'test -e /workspace/x && echo touched || echo no' 2>&1)" no
is "an admin key sees every key's sessions" "$(J "$(req GET /exec/ -H "X-API-Key: $BOSS" | tail -c +5)" \
	'[s["id"] for s in d["sessions"]]')" "['session1']"
is "  and sandboxes" "$(J "$(req GET /v1/sandboxes -H "X-API-Key: $BOSS" | tail -c +5)" \
	'[s["sandbox_id"] for s in d["sandboxes"]]')" "['$sid']"
is "the sandbox records the key it was made with" \
	"$(J "$("$SBXTOP" status "$sid" --json)" 'd.get("api_key")')" "$(J "$("$SBXTOP" key ls --json)" "[k['id'] for k in d if k['name'] == 'ci'][0]")"
is "its own key ends it" "$(J "$(req DELETE /exec/session1 -H "X-API-Key: $EXEC" | tail -c +5)" 'd["success"]')" True

# --- what the console sees, and what /metrics counts -----------------------------------------
curl -sN --max-time 3 "$B/v1/events?from=1" -H "X-API-Key: $BOSS" > "$T/events"
is "the journal names the key of each call (tool.started), never the key itself" \
	"$(python3 - "$T/events" <<'PY'
import json, sys
seen = set()
for l in open(sys.argv[1]):
    if l.startswith('data: '):
        e = json.loads(l[6:])
        if e['type'] == 'tool.started' and e['data'].get('key'):
            seen.add((e['data']['tool'], e['data']['client'], e['data']['key']))
print(sorted(x for x in seen if x[0] in ('sandbox_create', 'sandbox_exec')))
PY
)" "[('sandbox_create', 'rest', 'ci'), ('sandbox_exec', 'rest', 'ci')]"
# Keys past the labels' bound, and a name that needs escaping.
"$SBXTOP" key add 'we"ird\name' > "$T/weird" 2> /dev/null
curl -s -o /dev/null "$B/v1/sandboxes" -H "X-API-Key: $(cat "$T/weird")"
for i in $(seq 1 33); do
	k=$("$SBXTOP" key add "bulk$i" 2> /dev/null)
	curl -s -o /dev/null "$B/v1/sandboxes" -H "X-API-Key: $k"
done
curl -s "$B/metrics" -H "X-API-Key: $METRICS" > "$T/metrics"
is "/metrics counts calls per key, by name" "$(grep '^sbxtop_key_calls_total{key="ci"}' "$T/metrics" | awk '{print ($2 >= 4)}')" 1
is "  a name escaped as the text format says" "$(grep -c '^sbxtop_key_calls_total{key="we\\"ird\\\\name"} 1$' "$T/metrics")" 1
is "  at most 32 names, the rest under key=\"other\"" \
	"$(grep -c '^sbxtop_key_calls_total{key=' "$T/metrics") $(grep '^sbxtop_key_calls_total{key="other"}' "$T/metrics" | awk '{print ($2 > 0)}')" \
	"33 1"

# --- a key in a query string is never written down ------------------------------------------
curl -s -o /dev/null "$B/exec/?api_key=$EXEC"
curl -s -o /dev/null "$B/exec/?api_key=${EXEC}x"
curl -s -o /dev/null "$B/no/such/route?api_key=$EXEC"
curl -s -o /dev/null "$B/v1/sandboxes?api_key=$EXEC&x=%ZZ"
curl -s -o /dev/null -H "Origin: http://evil.example" "$B/exec/?api_key=$EXEC"
kill "$SERVE_PID"; wait "$SERVE_PID" 2> /dev/null
"$SBXTOP" serve --stop > /dev/null 2>&1
for k in "$EXEC" "$OTHER" "$BOSS" "$ADMIN" "$METRICS" "$NEW" "$SOON"; do
	h=${k#sbxk_}
	grep -rlF "$h" "$XDG_STATE_HOME" "$T/serve.err" "$T/serve.out" "$T/events" 2> /dev/null
done > "$T/leaks"
is "no key in any log line, event or file of the state directory (the server's log at debug)" \
	"$(cat "$T/leaks")" ""
like "  though the log has lines of those requests" "$(cat "$XDG_STATE_HOME/sbxtop/server.log")" \
	"refused a request from Origin http://evil.example"
check "no sanitizer report in the core server's log" sh -c \
	"! grep -E 'ERROR: AddressSanitizer|runtime error:|LeakSanitizer' '$XDG_STATE_HOME/sbxtop/server.log'"
done_testing
