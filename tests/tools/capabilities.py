#!/usr/bin/env python3
"""Who may call what (tests/integration/capabilities.sh).

    capabilities.py walk DOC URL TOKEN
        every method of sbxtop/methods, called by every kind of caller: raw
        socket clients of each kind, none (no hello), a hello of kind rest, the
        real `sbxtop --mcp` bridge, and an HTTP MCP session at URL; each answer
        checked against the table, and the table against DOC's.
    capabilities.py attacks SANDBOX VICTIM SECRET PLANT URL TOKEN
        what an agent tried before there was a table, through the bridge and
        over HTTP MCP: each refused.
    capabilities.py scopes OPENAPI RESTMD URL TOKEN
        every route of the listener (sbxtop/methods' routes) and every MCP
        method over HTTP, with an API key of each scope, none and the token,
        each answer checked against the scope the table names, and the table
        against docs/openapi.json's x-scope and docs/rest-api.md's.

Prints one JSON object of what it saw.  Uses the XDG directories and SBXTOP of
the caller, and tests/tools/core-client.py's clients.
"""
import importlib.util
import json
import os
import re
import subprocess
import sys
import time

spec = importlib.util.spec_from_file_location(
    'cc', os.path.join(os.path.dirname(os.path.abspath(__file__)), 'core-client.py'))
cc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cc)

KIND_ERR = -32012
HELLO_ERR = -32011

# Parameters for each method that reach its handler and change nothing: they
# are refused by its checks (invalid params, an unknown sandbox) or only read.
# A method missing here fails the walk: a new method needs its kinds decided in
# server/server.c's table and a harmless call here.
SAFE = {
    'initialize': {},
    'ping': None,
    'tools/list': {},
    'tools/call': {},
    'resources/list': {},
    'resources/read': {},
    'resources/templates/list': {},
    'resources/subscribe': {},
    'resources/unsubscribe': {},
    'logging/setLevel': {'level': 'no-such-level'},
    'server/discover': {},
    'subscriptions/listen': {},
    'tasks/get': {},
    'tasks/update': {},
    'tasks/cancel': {},
    'sbxtop/hello': {},
    'sbxtop/shutdown': None,
    'sbxtop/methods': None,
    'sbxtop/subscribe': {'from': -1},
    'sbxtop/clients': None,
    'sbxtop/sandboxes': None,
    'sbxtop/follow': {'sandbox': 7},
    'sbxtop/logs': {'sandbox': 'sbx-nosuch0'},
    'sbxtop/pty': {'sandbox': 'sbx-nosuch0'},
    'sbxtop/approvals': None,
    'sbxtop/approve': {},
    'sbxtop/approve_mode': {'mode': 'no-such-mode'},
    'sbxtop/forward_start': {'sandbox': 'sbx-nosuch0', 'remote_port': 1},
    'sbxtop/forward_stop': {'sandbox': 'sbx-nosuch0'},
    'sbxtop/forward_list': {'sandbox': 'sbx-nosuch0'},
    'sbxtop/forward_restore': None,
    'sbxtop/list': None,
    'sbxtop/status': {'sandbox': 'sbx-nosuch0'},
    'sbxtop/create': {'memory_mib': -5},
    'sbxtop/suspend': {'sandbox': 'sbx-nosuch0'},
    'sbxtop/resume': {'sandbox': 'sbx-nosuch0'},
    'sbxtop/destroy': {'sandbox': 'sbx-nosuch0'},
    'sbxtop/exec_stdin': {},
    'sbxtop/exec': {'sandbox': 'sbx-nosuch0'},
    'sbxtop/copy_in': {},
    'sbxtop/copy_out': {},
    'sbxtop/log_path': {'sandbox': 'sbx-nosuch0'},
    'sbxtop/http_listen': {},
    'sbxtop/http_stop': None,
    'sbxtop/net_show': {},
    'sbxtop/net_pending': {'sandbox': 'sbx-nosuch0'},
    'sbxtop/net_decide': {},
    'sbxtop/net_change': {},
}


def code_of(r):
    if r is None:
        return 'no answer'
    return r.get('error', {}).get('code') if 'error' in r else 'result'


def sock_call(s, method, timeout=20):
    return s.call(method, SAFE[method], timeout)


def bridge_call(b, method, timeout=20):
    return b.request(method, SAFE[method], timeout)


class Http:
    """An initialized HTTP MCP session of `sbxtop serve --listen`, with the
    listener's token or an API key."""

    def __init__(self, url, token, name='http-agent'):
        self.url, self.token, self.next = url, token, 10
        _, self.sid = cc.http_post(url, token, {
            'jsonrpc': '2.0', 'id': 1, 'method': 'initialize',
            'params': {'protocolVersion': '2025-11-25', 'capabilities': {},
                       'clientInfo': {'name': name, 'version': '1'}}})
        cc.http_post(url, token, {'jsonrpc': '2.0', 'method': 'notifications/initialized'},
                     self.sid)

    def call(self, method, params):
        self.next += 1
        msg = {'jsonrpc': '2.0', 'id': self.next, 'method': method}
        if params is not None:
            msg['params'] = params
        return cc.http_post(self.url, self.token, msg, self.sid)[0]


def doc_table(path):
    """docs/core-protocol.md's table of who may call what: {method: [kinds]}."""
    out, cols = {}, None
    for line in open(path):
        if line.startswith('| method | console'):
            cols = [c.strip() for c in line.strip().strip('|').split('|')][1:]
            continue
        if cols is None:
            continue
        if not line.startswith('|'):
            if out:
                break
            continue
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if set(cells[0]) <= {'-'}:
            continue
        kinds = [k for k, v in zip(cols, cells[1:]) if v == 'yes']
        for m in re.findall(r'`([^`]+)`', cells[0]):
            out[m] = kinds
    return out


def restart_server():
    subprocess.run([cc.SBXTOP, 'serve'], capture_output=True, timeout=30)


def stopped():
    """The server is gone (its socket answers no more)."""
    for _ in range(100):
        try:
            s = cc.Sock(kind=None)
        except OSError:
            return True
        s.close()
        time.sleep(0.1)
    return False


def sc_walk(doc, url, token):
    listing = cc.Sock('cli').call('sbxtop/methods')['result']
    declared = {m['method']: sorted(m['kinds']) for m in listing['methods']}
    before = {m['method'] for m in listing['methods'] if m['before_hello']}
    out = {'kinds': listing['kinds'], 'count': len(declared),
           'unknown': sorted(set(declared) - set(SAFE)),
           'doc': sorted(m for m in set(declared) | set(doc_table(doc))
                         if sorted(doc_table(doc).get(m, [])) != declared.get(m))}
    reached = {m: set() for m in declared}
    mismatch = []
    order = [m for m in declared if m not in ('sbxtop/shutdown', 'sbxtop/hello')]

    def note(kind, m, r, refused_code, want):
        c = code_of(r)
        if c == 'no answer':
            mismatch.append((kind, m, c))
            return
        got = c != refused_code
        if got:
            reached[m].add(kind)
        if got != want:
            mismatch.append((kind, m, c))

    # Raw clients of each kind that says hello.  shell is the console's.
    for kind, col in (('console', 'console'), ('cli', 'cli'), ('shell', 'console'),
                      ('mcp', 'mcp')):
        s = cc.Sock(kind)
        for m in order + ['sbxtop/hello']:
            note(kind, m, sock_call(s, m), KIND_ERR, col in declared[m])
        s.close()
    # The real bridge: whatever its agent sends is kind mcp.
    b = cc.Bridge('walk-agent')
    for m in order + ['sbxtop/hello']:
        note('bridge', m, bridge_call(b, m), KIND_ERR, 'mcp' in declared[m])
    # No hello: only what the table says comes before it.
    s = cc.Sock(kind=None)
    for m in order:
        note('none', m, sock_call(s, m), HELLO_ERR, m in before)
    s.close()
    # A hello of kind rest: refused, so nothing is reached from it.
    s = cc.Sock(kind=None)
    r = s.call('sbxtop/hello', {'client': {'kind': 'rest', 'name': 'x', 'pid': 0,
                                           'version': cc.server_version()}})
    out['rest_hello'] = code_of(r)
    if r is None or 'error' not in r:
        reached['sbxtop/hello'].add('rest')
    s.close()
    # An HTTP MCP session: kind mcp, without a hello of its own.
    h = Http(url, token)
    for m in order + ['sbxtop/shutdown']:
        note('http', m, h.call(m, SAFE[m]), KIND_ERR, 'mcp' in declared[m])
    out['http_hello'] = code_of(h.call('sbxtop/hello', {}))

    # shutdown last: refused to the agent's kinds, and it stops the server for
    # the operator's (and before a hello); a new server after each.
    pid = open(os.path.join(os.environ['XDG_RUNTIME_DIR'], 'sbxtop', 'server.lock')).read()
    s = cc.Sock('mcp')
    note('mcp', 'sbxtop/shutdown', sock_call(s, 'sbxtop/shutdown'), KIND_ERR, False)
    s.close()
    note('bridge', 'sbxtop/shutdown', bridge_call(b, 'sbxtop/shutdown'), KIND_ERR, False)
    out['bridge_exit'] = b.close()
    out['alive_after_refusals'] = open(os.path.join(
        os.environ['XDG_RUNTIME_DIR'], 'sbxtop', 'server.lock')).read() == pid
    for kind, col in (('console', 'console'), ('cli', 'cli'), ('shell', 'console'),
                      (None, 'none')):
        s = cc.Sock(kind)
        want = col == 'none' or col in declared['sbxtop/shutdown']
        note(kind or 'none', 'sbxtop/shutdown', sock_call(s, 'sbxtop/shutdown'),
             KIND_ERR if kind else HELLO_ERR, want)
        if want and not stopped():
            mismatch.append((kind, 'sbxtop/shutdown', 'the server did not stop'))
        s.close()
        restart_server()
    # The hello before any other: every kind that says it.
    for kind in ('console', 'cli', 'shell', 'mcp'):
        s = cc.Sock(kind=None)
        r = s.call('sbxtop/hello', {'client': {'kind': kind, 'name': kind, 'pid': 0,
                                               'version': cc.server_version()}})
        if r is not None and 'result' in r:
            reached['sbxtop/hello'].add('none')
        else:
            mismatch.append((kind, 'sbxtop/hello', code_of(r)))
        s.close()

    # What each column of the table is, from what was reached.
    seen = {}
    for m, ks in reached.items():
        cols = set()
        for k in ks:
            cols.add({'bridge': 'mcp', 'http': 'mcp', 'shell': 'console', 'none': None}.get(k, k))
        cols.discard(None)
        seen[m] = sorted(cols)
    out['differs'] = sorted(m for m in declared if seen[m] != declared[m])
    out['mismatch'] = mismatch
    out['mcp_reaches'] = sorted(m for m in declared if 'mcp' in declared[m])
    return out


def sc_attacks(sandbox, victim, secret, plant, url, token):
    """An agent with approvals at all, through the bridge and over HTTP MCP."""
    op = cc.Sock('cli', 'operator')
    op.call('sbxtop/subscribe', {'from': 0})
    op.call('sbxtop/approve_mode', {'mode': 'all'})
    attacks = [
        ('exec', 'sbxtop/exec', {'sandbox': sandbox, 'as_root': True,
                                 'command': 'touch /workspace/pwned-by-agent'}),
        ('destroy', 'sbxtop/destroy', {'sandbox': victim}),
        ('copy_in', 'sbxtop/copy_in', {'sandbox': sandbox, 'local': secret,
                                       'remote': '/workspace/stolen'}),
        ('copy_out', 'sbxtop/copy_out', {'sandbox': sandbox, 'remote': '/etc/hostname',
                                         'local': plant}),
        ('http_listen', 'sbxtop/http_listen', {'listen': '0.0.0.0:0',
                                               'token': 'agent-picked-token-0123'}),
        ('forward_start', 'sbxtop/forward_start', {'sandbox': sandbox, 'remote_port': 8000,
                                             'bind': '0.0.0.0'}),
        ('approve_mode', 'sbxtop/approve_mode', {'mode': 'none'}),
        ('shutdown', 'sbxtop/shutdown', None),
    ]
    out = {}
    b = cc.Bridge('attack-agent')
    b.initialize()
    for key, m, p in attacks:
        r = b.request(m, p)
        out['bridge_' + key] = r.get('error') if r else None
    # Its tools still work, and pass the gate: held until the operator answers.
    i = b.start_call('sandbox_list', {})
    held = None
    for _ in range(100):
        held = op.call('sbxtop/approvals')['result']['approvals']
        if held:
            break
        time.sleep(0.1)
    out['tool_held'] = [(a['tool'], a['kind']) for a in held or []]
    for a in held or []:
        op.call('sbxtop/approve', {'id': a['id'], 'allow': False, 'reason': 'no'})
    ans = b.answer(i)
    out['tool_denied'] = cc.text_of(ans)
    out['bridge_exit'] = b.close()
    h = Http(url, token, 'attack-http')
    for key, m, p in attacks:
        r = h.call(m, p)
        out['http_' + key] = r.get('error') if r else None
    out['mode_after'] = op.call('sbxtop/approve_mode')['result']['mode']
    out['forwards'] = op.call('sbxtop/forward_list')['result']['forwards']
    out['refused_events'] = sorted(set(
        (e['data']['method'], 'bridge' if 'attack-agent' in e['data']['client'] else
         'http' if 'attack-http' in e['data']['client'] else e['data']['client'],
         e['data']['kind']) for e in op.lines.events('client.refused')))
    op.call('sbxtop/approve_mode', {'mode': 'none'})
    op.close()
    return out


# The values of a route's path parameters, and the bodies and queries that
# reach its handler and change nothing (refused by its checks, or only read);
# a route missing here is walked with none.
PARAMS = {'id': 'sbx-nosuch0', 'exec_id': 'x1', 'port': '0', 'session': 'cap-nosuch'}
ROUTE_SAFE = {
    ('POST', '/v1/sandboxes'): ('', {'memory_mib': 'lots'}),
    ('POST', '/v1/sandboxes/{id}/exec'): ('', {'sandbox_id': 'x'}),
    ('POST', '/v1/sandboxes/{id}/forwards'): ('', {}),
    ('POST', '/v1/images'): ('', {'ref': 'Not A Ref'}),
    ('POST', '/exec/{session}/execute'): ('', {}),
    ('POST', '/exec/{session}/write'): ('', {}),
    ('GET', '/exec/{session}/files'): ('?recursive=maybe', None),
    ('POST', '/admin/keys'): ('', {}),
    ('POST', '/mcp'): ('', {'jsonrpc': '2.0', 'id': 1, 'method': 'ping'}),
    ('POST', '/mcp/messages'): ('', {'jsonrpc': '2.0', 'id': 1, 'method': 'ping'}),
}
SCOPES = ('exec', 'admin', 'metrics')


def http_raw(base, method, path, cred=None, body=None, accept='application/json, '
             'text/event-stream'):
    """One request: (status, the message of an error body, or None).  A
    stream's head is all that is read."""
    import http.client
    u = base.split('//', 1)[1]
    c = http.client.HTTPConnection(u, timeout=20)
    h = {'Accept': accept}
    if cred is not None:
        h['X-API-Key'] = cred
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        h['Content-Type'] = 'application/json'
    c.request(method, path, body=data, headers=h)
    r = c.getresponse()
    msg = None
    if (r.getheader('Content-Type') or '').startswith('application/json'):
        try:
            e = json.loads(r.read().decode()).get('error')
            msg = e if isinstance(e, str) else (e or {}).get('message')
        except ValueError:
            pass
    c.close()
    return r.status, msg


def doc_scopes(openapi):
    """{(METHOD, path): scope or None} of docs/openapi.json's x-scope."""
    d = json.load(open(openapi))
    out = {}
    for p, item in d['paths'].items():
        for m, op in item.items():
            if m != 'parameters':
                out[(m.upper(), p)] = op.get('x-scope', 'missing') if op.get(
                    'security') != [] else None
    return out


def md_scopes(path):
    """docs/rest-api.md's table of scopes: {(METHOD, path): scope or None}."""
    out, on = {}, False
    for line in open(path):
        if line.startswith('| route | scope |'):
            on = True
            continue
        if on and not line.startswith('|'):
            break
        if on and not line.startswith('|---'):
            cells = [c.strip() for c in line.strip().strip('|').split('|')]
            for r in re.findall(r'`([A-Z]+ [^`]+)`', cells[0]):
                m, p = r.split(' ', 1)
                out[(m, p)] = None if cells[1] == 'none' else cells[1]
    return out


def sc_scopes(openapi, restmd, url, token):
    """Every route of the listener, and every MCP method over HTTP, with a key
    of each scope, none, and the token, against the table's scope."""
    listing = cc.Sock('cli').call('sbxtop/methods')['result']
    routes = listing['routes']
    base = url[:-len('/mcp')]
    keys = {}
    for sc in SCOPES:
        keys[sc] = subprocess.run([cc.SBXTOP, 'key', 'add', 'walk-' + sc, '--scope', sc,
                                   '--rate-limit', '100000'], capture_output=True,
                                  text=True).stdout.strip()
    creds = [('none', None), ('token', token)] + [(sc, keys[sc]) for sc in SCOPES]
    table = {(r['method'], r['path']): r['scope'] for r in routes}
    out = {'routes': len(routes), 'scopes': sorted({r['scope'] or 'none' for r in routes}),
           'mismatch': []}
    for r in routes:
        m, p, want = r['method'], r['path'], r['scope']
        query, body = ROUTE_SAFE.get((m, p), ('', None))
        path = re.sub(r'\{([^}]+)\}', lambda x: PARAMS[x.group(1)], p) + query
        for name, cred in creds:
            status, msg = http_raw(base, m, path, cred, body)
            if want is None:
                ok = status not in (401, 403, 429)
            elif name == 'none':
                ok = status == 401 and msg == 'API key required'
            elif name == 'token' or name == want:
                ok = status not in (401, 429) and not (status == 403 and msg and
                                                       msg.startswith('Missing required scope'))
            else:
                ok = status == 403 and msg == 'Missing required scope: ' + want
            if not ok:
                out['mismatch'].append([m, p, name, status, msg])
    # The MCP methods: the scope the table gives them, asked of each request.
    mcp = {x['method']: x['scope'] for x in listing['methods']
           if 'mcp' in x['kinds'] and not x['method'].startswith('sbxtop/')}
    out['mcp_scopes'] = sorted(set(mcp.values()))
    h = Http(url, keys['exec'], 'walk-exec')
    for meth, want in sorted(mcp.items()):
        if meth != 'initialize':
            r = h.call(meth, SAFE[meth])
            if r is None or ('error' in r and 'scope' in r['error'].get('message', '')):
                out['mismatch'].append(['mcp', meth, 'exec', r])
        msg = {'jsonrpc': '2.0', 'id': 9, 'method': meth}
        for name, cred in creds:
            if name in ('token', want):
                continue
            for path in ('/mcp', '/mcp/messages?mcpSessionId=' + '0' * 64):
                status, m = http_raw(base, 'POST', path, cred, msg)
                if (status, m) != ((401, 'API key required') if name == 'none' else
                                   (403, 'Missing required scope: ' + want)):
                    out['mismatch'].append(['mcp', meth, name, path, status, m])
    # The pages say what the table says.
    docs = doc_scopes(openapi)
    mine = {k: v for k, v in table.items() if k[0] != 'HEAD' and not k[1].startswith('/mcp')}
    out['openapi'] = sorted('%s %s: %s / %s' % (k + (mine.get(k, 'absent'), docs.get(k, 'absent')))
                            for k in set(mine) | set(docs) if mine.get(k, 'absent') != docs.get(k, 'absent'))
    md = md_scopes(restmd)
    walked = {k: v for k, v in table.items() if k[0] != 'HEAD'}
    out['restmd'] = sorted('%s %s: %s / %s' % (k + (walked.get(k, 'absent'), md.get(k, 'absent')))
                           for k in set(walked) | set(md) if walked.get(k, 'absent') != md.get(k, 'absent'))
    return out


def main():
    name, args = sys.argv[1], sys.argv[2:]
    print(json.dumps(globals()['sc_' + name](*args)))


if __name__ == '__main__':
    main()
