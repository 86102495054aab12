# The REST routes with curl: the Agent Sandbox project's README examples run
# unchanged against `sbxtop serve --listen` (its address and its token put in),
# idle sessions are reaped after session_idle, a session never takes up a
# sandbox the REST API did not make, /ready, per-sandbox metrics,
# and what the console sees: REST calls in the core server's event stream as
# client rest, held by the approval gate like an agent's.
. "$(dirname "$0")/../lib.sh"

export SBXTOP SBXTOP_SESSION_IDLE=4 SBXTOP_APPROVAL_TIMEOUT=2
J() { json_get "$1" "$2"; }
serve_listen
destroy_left_at_exit
if [ -z "$TOKEN" ]; then
	not_ok "serve --listen printed its token"
	sed 's/^/# /' "$T/serve.err"
	exit 1
fi
# The README's host, localhost:3000, is this listener's address.
HOSTPORT=localhost:${URL##*:}; HOSTPORT=${HOSTPORT%/mcp}
AUTH="Authorization: Bearer $TOKEN"

# --- the README's examples, as written ----------------------------------------
out=$(curl -s -X POST http://$HOSTPORT/exec/session1/execute -H "$AUTH" -H "Content-Type: application/json" -d '{"command":"node","args":["-e","console.log(\"hello from the sandbox\")"]}')
if command -v node >/dev/null 2>&1; then
	is "execute answers exitCode, duration and output as Agent Sandbox does" \
		"$(J "$out" '[sorted(d), d["exitCode"], d["output"], type(d["duration"]).__name__]')" \
		"[['duration', 'exitCode', 'output'], 0, [{'stream': 'stdout', 'data': 'hello from the sandbox\\n'}], 'int']"
else
	diag "no node on the host (the sandbox sees the host's /usr): checked with sh"
	out=$(curl -s -X POST http://$HOSTPORT/exec/session1/execute -H "$AUTH" -H "Content-Type: application/json" -d '{"command":"sh","args":["-c","echo hello from the sandbox"]}')
	is "execute answers exitCode, duration and output" "$(J "$out" 'd["output"]')" \
		"[{'stream': 'stdout', 'data': 'hello from the sandbox\\n'}]"
fi
out=$(curl -s -X POST http://$HOSTPORT/exec/session1/write -H "$AUTH" -H "Content-Type: application/json" -d '{"path":"hello.js","content":"console.log(1+1)"}')
is "write answers success" "$(J "$out" '[d["success"], d["path"]]')" "[True, '/workspace/hello.js']"
out=$(curl -s "http://$HOSTPORT/exec/session1/read?path=hello.js" -H "$AUTH")
is "read gives the content back" "$(J "$out" 'd["content"]')" "console.log(1+1)"
out=$(curl -s "http://$HOSTPORT/exec/session1/files?recursive=true" -H "$AUTH")
is "files lists what was written" "$(J "$out" '[f["path"] for f in d["files"]]')" \
	"['/workspace/hello.js']"
out=$(curl -s http://$HOSTPORT/exec/ -H "$AUTH")
is "GET /exec/ lists the session" "$(J "$out" '[s["id"] for s in d["sessions"]]')" "['session1']"
sid=$(J "$out" 'd["sessions"][0]["sandbox_id"]')
is "its sandbox is named after it, on the default backend" \
	"$("$SBXTOP" ls 2>/dev/null | awk -v i="$sid" '$1 == i {print $2, $3}')" "session1 ns"
out=$(curl -s -X DELETE http://$HOSTPORT/exec/session1 -H "$AUTH")
is "DELETE /exec/session1 ends it" "$(J "$out" 'd["success"]')" True
check "and destroys its sandbox" sh -c "! '$SBXTOP' ls 2>/dev/null | grep -q '^$sid '"
out=$(curl -s http://$HOSTPORT/health)
is "GET /health" "$(J "$out" 'd["status"]')" ok
code=$(curl -s -o "$T/ready" -w '%{http_code}' http://$HOSTPORT/ready)
is "GET /ready: 200 with the memory figures" "$code $(J "$(cat "$T/ready")" '[d["status"], d["memory"]["availableMiB"] >= d["memory"]["thresholdMiB"]]')" \
	"200 ['ready', True]"
code=$(curl -s -o /dev/null -w '%{http_code}' http://$HOSTPORT/exec/)
is "without the token: 401" "$code" 401

# --- reaping -----------------------------------------------------------------------
out=$(curl -s -X POST http://$HOSTPORT/exec/idle1/execute -H "$AUTH" -d '{"command":"true"}')
is "a new session" "$(J "$out" 'd["exitCode"]')" 0
idle_id=$("$SBXTOP" ls 2>/dev/null | awk '$2 == "idle1" {print $1}')
check "has its sandbox" test -n "$idle_id"
# Kept busy for longer than session_idle: not reaped.
for _ in 1 2 3; do
	curl -s -X POST http://$HOSTPORT/exec/idle1/execute -H "$AUTH" -d '{"command":"sleep 1.5"}' > /dev/null
done
check "a session in use is not reaped" sh -c "'$SBXTOP' ls 2>/dev/null | grep -q '^$idle_id '"
gone=no
for _ in $(seq 40); do
	"$SBXTOP" ls 2>/dev/null | grep -q "^$idle_id " || { gone=yes; break; }
	sleep 0.5
done
is "left idle past session_idle (4 s), its sandbox is destroyed" "$gone" yes
out=$(curl -s http://$HOSTPORT/exec/ -H "$AUTH")
is "and the session is gone" "$(J "$out" 'd["sessions"]')" "[]"

# --- a session adopts only what the REST API made ------------------------------------
# GET /exec/NAME/read is never held; it used to adopt the operator's sandbox
# NAME as a session, which the reaper then destroyed.
op=$("$SBXTOP" create --name opbox --max-duration 600 2> "$T/err" < /dev/null)
check "the operator's sandbox opbox (sbxtop create)" test -n "$op"
code=$(curl -s -o "$T/adopt" -w '%{http_code}' "http://$HOSTPORT/exec/opbox/read?path=/etc/hostname" -H "$AUTH")
is "a read in session opbox, the name of the operator's sandbox: 403 denied" \
	"$code $(J "$(cat "$T/adopt")" 'd["error"]["code"]')" "403 denied"
like "  saying whose it is and what to do" \
	"$(J "$(cat "$T/adopt")" 'd["error"]["message"] + " / " + d["error"]["hint"]')" \
	"sandbox $op \('opbox'\) was not made by a REST session \(its owner is .*\) / name the session otherwise"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST http://$HOSTPORT/exec/opbox/execute -H "$AUTH" -d '{"command":"touch /workspace/by-rest"}')
is "  nor does a session run in it" "$code" 403
code=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE http://$HOSTPORT/exec/opbox -H "$AUTH")
is "  nor end it" "$code" 403
out=$(curl -s http://$HOSTPORT/exec/ -H "$AUTH")
is "  no session holds it" "$(J "$out" '[s["id"] for s in d["sessions"]]')" "[]"
sleep 6		# past session_idle (4 s), and a reaper tick
is "past session_idle it is alive and untouched" \
	"$(json_get "$("$SBXTOP" status "$op" --json)" 'd["state"]') $("$SBXTOP" exec -n "$op" -- 'test -e /workspace/by-rest && echo ran || echo no' 2>&1)" \
	"running no"
"$SBXTOP" destroy "$op" > /dev/null 2>&1
# One the REST API made is a session's to take up (after a restart, say).
curl -s -X POST http://$HOSTPORT/v1/sandboxes -H "$AUTH" -d '{"name":"restmade"}' > /dev/null
code=$(curl -s -o /dev/null -w '%{http_code}' "http://$HOSTPORT/exec/restmade/files" -H "$AUTH")
out=$(curl -s http://$HOSTPORT/exec/ -H "$AUTH")
is "a sandbox POST /v1/sandboxes made is taken up by the session of its name" \
	"$code $(J "$out" '[s["id"] for s in d["sessions"]]')" "200 ['restmade']"
out=$(curl -s -X DELETE http://$HOSTPORT/exec/restmade -H "$AUTH")
is "  and ended with it" "$(J "$out" 'd["success"]')" True

# --- metrics -----------------------------------------------------------------------
out=$(curl -s -X POST http://$HOSTPORT/v1/sandboxes -H "$AUTH" -d '{"name":"metered"}')
mid=$(J "$out" 'd["sandbox_id"]')
for c in true "sleep 0.2" false; do
	curl -s -X POST http://$HOSTPORT/v1/sandboxes/metered/exec -H "$AUTH" -d "{\"command\":\"$c\"}" > /dev/null
done
curl -s http://$HOSTPORT/metrics -H "$AUTH" > "$T/metrics"
check "the sandbox's state is a series of its own" \
	grep -qx "sbxtop_sandbox_state{sandbox=\"$mid\",backend=\"ns\",state=\"running\"} 1" "$T/metrics"
check "its execs are counted in its histogram" \
	grep -qx "sbxtop_sandbox_exec_duration_seconds_count{sandbox=\"$mid\"} 3" "$T/metrics"
check "one of them took 0.1 s or more" \
	grep -qx "sbxtop_sandbox_exec_duration_seconds_bucket{sandbox=\"$mid\",le=\"0.1\"} 2" "$T/metrics"
check "its forward bytes are there (no forward: 0)" \
	grep -qx "sbxtop_sandbox_forward_bytes_total{sandbox=\"$mid\",direction=\"in\"} 0" "$T/metrics"
check "the reaped session's series went with it" sh -c "! grep -q '$idle_id' '$T/metrics'"

# --- the console's view: the event stream and the approval gate ------------------
cat > "$T/watch.py" <<'PY'
import importlib.util, json, os, subprocess, sys, threading
spec = importlib.util.spec_from_file_location('cc', os.path.join(os.environ['TOP'], 'tests/tools/core-client.py'))
cc = importlib.util.module_from_spec(spec); spec.loader.exec_module(cc)
hostport, auth = sys.argv[1], sys.argv[2]
s = cc.Sock('console', 'rest-test')
s.call('sbxtop/subscribe', {'from': 0})
ev = lambda m: m.get('params', {}) if m.get('method') == 'sbxtop/event' else {}
out = {}
started = s.lines.wait(lambda m: ev(m).get('type') == 'tool.started' and
    ev(m).get('data', {}).get('tool') == 'sandbox_create' and
    ev(m).get('data', {}).get('arguments', {}).get('name') == 'metered', 5)
out['journal'] = started and {k: started['params']['data'][k] for k in ('client', 'kind', 'origin')}
s.call('sbxtop/approve_mode', {'mode': 'all'})
def curl(body, key):
    out[key] = subprocess.run(['curl', '-s', '-w', '\n%{http_code}', '-X', 'POST',
        f'http://{hostport}/v1/sandboxes', '-H', auth, '-d', body],
        capture_output=True, text=True).stdout
t = threading.Thread(target=curl, args=('{"name":"held"}', 'allowed')); t.start()
req = s.lines.wait(lambda m: ev(m).get('type') == 'approval.requested', 10)
out['held'] = req and {k: req['params']['data'][k] for k in ('tool', 'client', 'kind')}
if req:
    out['answer'] = s.call('sbxtop/approve', {'id': req['params']['data']['id'], 'allow': True})
t.join(60)
# The operator denies the next one.
t = threading.Thread(target=curl, args=('{"name":"refused"}', 'denied')); t.start()
req = s.lines.wait(lambda m: ev(m).get('type') == 'approval.requested' and
    'refused' in json.dumps(ev(m).get('data', {})), 10)
if req:
    s.call('sbxtop/approve', {'id': req['params']['data']['id'], 'allow': False,
        'reason': 'not now'})
t.join(60)
# A client that hangs up while its call is held: the call is dropped at once.
subprocess.Popen(['curl', '-s', '--max-time', '1', '-X', 'POST',
    f'http://{hostport}/v1/sandboxes', '-H', auth, '-d', '{"name":"gone"}'],
    stdout=subprocess.DEVNULL)
req = s.lines.wait(lambda m: ev(m).get('type') == 'approval.requested' and
    'gone' in json.dumps(ev(m).get('data', {})), 10)
res = req and s.lines.wait(lambda m: ev(m).get('type') == 'approval.resolved' and
    ev(m)['data']['id'] == req['params']['data']['id'], 10)
out['hung_up'] = res and res['params']['data']['by']
s.call('sbxtop/approve_mode', {'mode': 'none'})
s.close()
print(json.dumps(out))
PY
out=$(TOP="$TOP" timeout 60 python3 "$T/watch.py" "$HOSTPORT" "$AUTH" 2> "$T/watch.err")
rc=$?
[ "$rc" -ne 0 ] && diag "watch.py exited $rc"
sed 's/^/# /' "$T/watch.err"
is "the console's event stream has the REST call as client rest" "$(J "$out" 'd["journal"]')" \
	"{'client': 'rest', 'kind': 'rest', 'origin': 'rest'}"
is "with approve=all a REST create is held for the console" "$(J "$out" 'd["held"]')" \
	"{'tool': 'sandbox_create', 'client': 'rest', 'kind': 'rest'}"
is "and runs once the operator allows it" "$(J "$out" 'd["allowed"].split()[-1]')" 201
is "and is refused, 403 in the error shape, when the operator denies it" \
	"$(J "$out" '[d["denied"].split()[-1], json.loads(d["denied"].rsplit(chr(10), 1)[0])["error"]["code"], json.loads(d["denied"].rsplit(chr(10), 1)[0])["error"]["message"]]')" \
	"['403', 'denied', 'denied by the operator: not now']"
is "a held call whose client hung up is dropped without an answer" "$(J "$out" 'd["hung_up"]')" \
	cancelled
check "the denied and the dropped creates made no sandbox" sh -c "! '$SBXTOP' ls 2>/dev/null | grep -qE ' (refused|gone) '"

# The core server stops cleanly, and (a sanitizer build) reported nothing.
kill "$SERVE_PID"; wait "$SERVE_PID"
"$SBXTOP" serve --stop 2> /dev/null
check "no sanitizer report in the core server's log" sh -c \
	"test -e '$XDG_STATE_HOME/sbxtop/server.log' && ! grep -E 'ERROR: AddressSanitizer|runtime error:|LeakSanitizer' '$XDG_STATE_HOME/sbxtop/server.log'"
done_testing
