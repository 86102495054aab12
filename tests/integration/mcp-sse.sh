# MCP over the HTTP+SSE transport, as the console sees it: a session opened by
# the official SDK's SSEClientTransport with an API key makes its tool calls
# through the approval gate (the prompt names the MCP client and the key) and
# into the activity journal (client, kind mcp, the key's name), and a denied
# call is an error result for the agent.  tests/mcp/sse.test.mjs plays the
# transport itself (the agent flow, refusals, the session's end).
. "$(dirname "$0")/../lib.sh"

npm_ready mcp @modelcontextprotocol/sdk
export SBXTOP SBXTOP_APPROVE=all
J() { json_get "$1" "$2"; }
KEY=$("$SBXTOP" key add sse-agent 2> /dev/null)
serve_listen
destroy_left_at_exit

cat > "$T/watch.py" <<'PY'
import importlib.util, json, os, subprocess, sys
spec = importlib.util.spec_from_file_location('cc', os.path.join(os.environ['TOP'],
    'tests/tools/core-client.py'))
cc = importlib.util.module_from_spec(spec); spec.loader.exec_module(cc)
url, key = sys.argv[1], sys.argv[2]
call = os.path.join(os.environ['TOP'], 'tests/mcp/sse-call.mjs')
s = cc.Sock('console', 'watcher')
s.call('sbxtop/subscribe', {'from': 0})
ev = lambda m: m.get('params', {}) if m.get('method') == 'sbxtop/event' else {}
out = {}
def run(args, answer):
    p = subprocess.Popen(['node', call, url, key, 'sandbox_list', args], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    req = s.lines.wait(lambda m: ev(m).get('type') == 'approval.requested' and
        ev(m)['data'].get('tool') == 'sandbox_list' and
        ev(m)['data']['id'] not in out.get('seen', []), 20)
    d = req and req['params']['data']
    if d:
        out.setdefault('seen', []).append(d['id'])
        s.call('sbxtop/approve', {'id': d['id'], 'allow': answer, 'reason': 'not this one'})
    o, e = p.communicate(timeout=60)
    return d and {k: d[k] for k in ('tool', 'client', 'kind')}, o.strip(), e
out['held'], out['allowed'], err = run('{}', True)
out['denied_held'], out['denied'], err2 = run('{}', False)
out['journal'] = sorted({(e['data']['client'], e['data']['kind'], e['data'].get('key', ''),
    e['data']['origin']) for e in s.lines.events('tool.started')
    if e['data'].get('tool') == 'sandbox_list'})
out['stderr'] = (err + err2)[-400:]
s.close()
print(json.dumps(out))
PY
out=$(TOP="$TOP" timeout 120 python3 "$T/watch.py" "$URL" "$KEY" 2> "$T/watch.err")
sed 's/^/# /' "$T/watch.err" | tail -5
is "a tool call of an HTTP+SSE session is held for the operator, the prompt naming the key" \
	"$(J "$out" 'd["held"]')" "{'tool': 'sandbox_list', 'client': 'sse-call 1.0 (key sse-agent)', 'kind': 'mcp'}"
is "  allowed, it answers the agent on the event stream" \
	"$(J "$out" 'json.loads(d["allowed"])["sandboxes"]')" "[]"
is "  denied, the agent gets an error result saying so" "$(J "$out" 'd["denied"]')" \
	"error denied by the operator: not this one"
is "the journal has its calls: the MCP client, kind mcp, the key's name, origin http" \
	"$(J "$out" 'd["journal"]')" "[['sse-call 1.0', 'mcp', 'sse-agent', 'http']]"
kill "$SERVE_PID"; wait "$SERVE_PID" 2> /dev/null
"$SBXTOP" serve --stop > /dev/null 2>&1
check "no key in the server's log" sh -c "! grep -qF '${KEY#sbxk_}' '$XDG_STATE_HOME/sbxtop/server.log'"
done_testing
