#!/usr/bin/env python3
"""Test clients of the core server (tests/integration/core-server.sh).

Raw JSON lines on the core's socket (Sock) and `sbxtop --mcp` bridges driven on
their stdio (Bridge).  Each scenario prints one JSON object of what it saw; the
shell test asserts on it.  Uses the XDG directories and SBXTOP of the caller.

    core-client.py SCENARIO [ARGS...]
"""
import json
import os
import socket
import subprocess
import sys
import threading
import time

SBXTOP = os.environ.get('SBXTOP', 'sbxtop')


def sock_path():
    return os.path.join(os.environ['XDG_RUNTIME_DIR'], 'sbxtop', 'core.sock')


class Lines:
    """Parsed JSON lines read by a thread; wait() for one matching a predicate."""

    def __init__(self, stream):
        self.msgs = []
        self.nonjson = []
        self.closed = False
        self.cv = threading.Condition()
        self.t = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.t.start()

    def _read(self, stream):
        for line in stream:
            try:
                m = json.loads(line)
            except ValueError:
                with self.cv:
                    self.nonjson.append(line)
                continue
            with self.cv:
                self.msgs.append(m)
                self.cv.notify_all()
        with self.cv:
            self.closed = True
            self.cv.notify_all()

    def wait(self, pred, timeout=20):
        end = time.time() + timeout
        with self.cv:
            while True:
                for m in self.msgs:
                    if pred(m):
                        return m
                left = end - time.time()
                if left <= 0 or self.closed:
                    return None
                self.cv.wait(left)

    def events(self, type_=None):
        with self.cv:
            return [m['params'] for m in self.msgs if m.get('method') == 'sbxtop/event'
                    and (type_ is None or m['params']['type'] == type_)]


class Sock:
    """A raw client of the core socket; hello unless kind is None."""

    def __init__(self, kind='cli', name=None, version=None):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(sock_path())
        self.lines = Lines(self.s.makefile('rb'))
        self.next = 1
        self.hello = None
        if kind is not None:
            self.hello = self.call('sbxtop/hello', {'client': {
                'kind': kind, 'name': name or kind, 'pid': os.getpid(),
                'version': version or server_version()}})

    def send(self, obj):
        self.s.sendall((json.dumps(obj) + '\n').encode())

    def call(self, method, params=None, timeout=20):
        i = self.next
        self.next += 1
        msg = {'jsonrpc': '2.0', 'id': i, 'method': method}
        if params is not None:
            msg['params'] = params
        self.send(msg)
        return self.lines.wait(lambda m: m.get('id') == i and 'method' not in m, timeout)

    def close(self):
        self.s.close()


class Bridge:
    """`sbxtop --mcp` on pipes."""

    def __init__(self, name='bridge', extra_env=None):
        env = dict(os.environ)
        env.update(extra_env or {})
        self.p = subprocess.Popen([SBXTOP, '--mcp'], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        self.lines = Lines(self.p.stdout)
        self.name = name
        self.next = 100

    def send(self, obj):
        self.p.stdin.write((json.dumps(obj) + '\n').encode())
        self.p.stdin.flush()

    def request(self, method, params=None, timeout=20):
        i = self.next
        self.next += 1
        self.send({'jsonrpc': '2.0', 'id': i, 'method': method, 'params': params or {}})
        return self.lines.wait(lambda m: m.get('id') == i and 'method' not in m, timeout)

    def start_call(self, tool, args):
        i = self.next
        self.next += 1
        self.send({'jsonrpc': '2.0', 'id': i, 'method': 'tools/call',
                   'params': {'name': tool, 'arguments': args}})
        return i

    def answer(self, i, timeout=20):
        return self.lines.wait(lambda m: m.get('id') == i and 'method' not in m, timeout)

    def initialize(self):
        r = self.request('initialize', {'protocolVersion': '2025-06-18', 'capabilities': {},
                                        'clientInfo': {'name': self.name, 'version': '1.0'}})
        self.send({'jsonrpc': '2.0', 'method': 'notifications/initialized'})
        return r

    def tool(self, name, args, timeout=20):
        return self.request('tools/call', {'name': name, 'arguments': args}, timeout)

    def close(self, timeout=15):
        try:
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = 'timeout'
        sanitizer_check(self.p.stderr.read().decode(errors='replace'))
        return rc


def sanitizer_check(text):
    """Sanitizer reports of a bridge go to $SANITIZER_LOG, which the test checks."""
    if ('Sanitizer' in text or 'runtime error' in text) and os.environ.get('SANITIZER_LOG'):
        with open(os.environ['SANITIZER_LOG'], 'a') as f:
            f.write(text)


def server_version():
    out = subprocess.run([SBXTOP, '--version'], capture_output=True, text=True).stdout
    return out.split()[1]


def text_of(r):
    try:
        return r['result']['content'][0]['text']
    except (KeyError, IndexError, TypeError):
        return json.dumps(r)


# --- scenarios ----------------------------------------------------------------

def sc_hello(version=None):
    s = Sock('cli', version=version)
    out = {'hello': s.hello}
    s.close()
    return out


def sc_no_hello():
    """Methods before the hello are refused; shutdown is not one of them."""
    s = Sock(kind=None)
    r = s.call('sbxtop/clients')
    return {'clients_before_hello': r}


def sc_two_bridges():
    a, b = Bridge('agent-a'), Bridge('agent-b')
    out = {'init_a': a.initialize() is not None, 'init_b': b.initialize() is not None}
    ra, rb = a.tool('sandbox_list', {}), b.tool('sandbox_list', {})
    out['list_a'] = ra is not None and ra['result']['isError'] is False
    out['list_b'] = rb is not None and rb['result']['isError'] is False
    s = Sock('cli', 'watcher')
    cl = s.call('sbxtop/clients')['result']['clients']
    out['mcp_clients'] = sorted(c['mcp_client'] for c in cl
                                if c['kind'] == 'mcp' and c['mcp_client'])
    out['kinds'] = sorted(c['kind'] for c in cl)
    out['exit_a'], out['exit_b'] = a.close(), b.close()
    s.close()
    return out


def sc_subscribe():
    s = Sock('cli', 'watcher')
    sub = s.call('sbxtop/subscribe', {'from': 0})
    b = Bridge('journal-agent')
    b.initialize()
    b.tool('sandbox_list', {})
    fin = s.lines.wait(lambda m: m.get('method') == 'sbxtop/event' and
                       m['params']['type'] == 'tool.finished' and
                       m['params']['data'].get('client', '').startswith('journal-agent'))
    st = s.lines.events('tool.started')
    out = {'subscribed': sub is not None and 'result' in sub,
           'started': [e['data'] for e in st if e['data']['client'].startswith('journal-agent')],
           'finished': fin['params']['data'] if fin else None,
           'seqs_increase': all(x['seq'] < y['seq'] for x, y in
                                zip(s.lines.events(), s.lines.events()[1:]))}
    b.close()
    # A second subscriber from a sequence number gets the replay.
    s2 = Sock('cli', 'late')
    s2.call('sbxtop/subscribe', {'from': fin['params']['seq'] if fin else 0})
    first = s2.lines.wait(lambda m: m.get('method') == 'sbxtop/event', 5)
    out['replay_first_seq'] = first['params']['seq'] if first else None
    out['finished_seq'] = fin['params']['seq'] if fin else None
    s.close()
    s2.close()
    return out


def sc_cli(sandbox):
    """The admin commands are clients of the server: their calls are in the
    journal under the client "cli", and they show in sbxtop/clients while they
    run; an interrupted exec is stopped."""
    s = Sock('cli', 'watcher')
    s.call('sbxtop/subscribe', {'from': 0})
    r = subprocess.run([SBXTOP, 'exec', '-n', sandbox, '--', 'echo cli-marker'],
                       capture_output=True, text=True)
    out = {'exec_rc': r.returncode, 'exec_out': r.stdout}
    fin = s.lines.wait(lambda m: m.get('method') == 'sbxtop/event' and
                       m['params']['type'] == 'tool.finished' and
                       m['params']['data'].get('kind') == 'cli' and
                       m['params']['data'].get('tool') == 'sandbox_exec')
    st = [e for e in s.lines.events('tool.started') if e['data'].get('kind') == 'cli']
    out['started'] = [(e['data']['tool'], e['data']['client'], e['sandbox'],
                       e['data']['arguments'].get('command')) for e in st]
    out['finished'] = fin['params']['data']['outcome'] if fin else None
    # A long one: listed among the clients, then interrupted.
    p = subprocess.Popen([SBXTOP, 'exec', '-n', sandbox, '--', 'sleep 60; echo never'],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    s.lines.wait(lambda m: m.get('method') == 'sbxtop/event' and
                 m['params']['type'] == 'tool.started' and
                 m['params']['data'].get('arguments', {}).get('command', '').startswith('sleep 60'))
    cl = s.call('sbxtop/clients')['result']['clients']
    out['cli_pids'] = [c['pid'] for c in cl if c['kind'] == 'cli']
    out['popen_pid'] = p.pid
    t0 = time.time()
    p.send_signal(2)
    p.wait()
    fin2 = s.lines.wait(lambda m: m.get('method') == 'sbxtop/event' and
                        m['params']['type'] == 'tool.finished' and
                        m['params']['data'].get('kind') == 'cli' and
                        m['params']['data'].get('outcome') != 'ok', 10)
    out['interrupted_finished'] = fin2 is not None
    out['interrupted_seconds'] = round(time.time() - t0, 1)
    s.close()
    return out


def http_post(url, token, body, sid=None, timeout=20):
    """POST body to an HTTP MCP endpoint: (the JSON answer, the session id).
    An error status still carries its JSON-RPC answer."""
    import urllib.error
    import urllib.request
    h = {'Content-Type': 'application/json', 'Accept': 'application/json, text/event-stream',
         'Authorization': 'Bearer ' + token}
    if sid:
        h['Mcp-Session-Id'] = sid
        h['MCP-Protocol-Version'] = '2025-11-25'
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=h, method='POST')
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            text = r.read().decode()
            sid = r.headers.get('Mcp-Session-Id') or sid
    except urllib.error.HTTPError as e:
        text = e.read().decode()
    if text.startswith('event:') or text.startswith('data:'):
        text = [l[5:] for l in text.splitlines() if l.startswith('data:')][-1]
    return (json.loads(text) if text.strip() else None), sid


def sc_http():
    """`sbxtop serve --listen`: the listener lives in the core server, so an
    HTTP client's calls are in the journal and its session among the clients."""
    srv = subprocess.Popen([SBXTOP, 'serve', '--listen', '127.0.0.1:0'],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = ''
    url = token = None
    end = time.time() + 20
    while time.time() < end and not (url and token):
        line = srv.stderr.readline()
        if not line:
            break
        err += line
        if ' at http' in line:
            url = line.split(' at ')[1].strip()
        if 'token: ' in line:
            token = line.split('token: ')[1].strip()
    out = {'url': url}
    if not (url and token):
        out['stderr'] = err
        return out
    s = Sock('cli', 'watcher')
    s.call('sbxtop/subscribe', {'from': 0})
    init, sid = http_post(url, token, {'jsonrpc': '2.0', 'id': 1, 'method': 'initialize',
                                       'params': {'protocolVersion': '2025-11-25',
                                                  'capabilities': {},
                                                  'clientInfo': {'name': 'http-agent',
                                                                 'version': '1.0'}}})
    http_post(url, token, {'jsonrpc': '2.0', 'method': 'notifications/initialized'}, sid)
    r, _ = http_post(url, token, {'jsonrpc': '2.0', 'id': 2, 'method': 'tools/call',
                                  'params': {'name': 'sandbox_list', 'arguments': {}}}, sid)
    out['call_ok'] = r is not None and r['result']['isError'] is False
    fin = s.lines.wait(lambda m: m.get('method') == 'sbxtop/event' and
                       m['params']['type'] == 'tool.finished' and
                       m['params']['data'].get('client') == 'http-agent 1.0', 10)
    st = [e['data'] for e in s.lines.events('tool.started')
          if e['data'].get('client') == 'http-agent 1.0']
    out['started'] = [(d['tool'], d['kind'], d['origin']) for d in st]
    out['finished'] = fin['params']['data']['outcome'] if fin else None
    cl = s.call('sbxtop/clients')['result']['clients']
    out['clients'] = [(c['kind'], c.get('origin'), c['mcp_client']) for c in cl
                      if c.get('origin') == 'http']
    # Its calls wait for the operator like any agent's.
    s.call('sbxtop/approve_mode', {'mode': 'all'})
    held = {}
    t = threading.Thread(target=lambda: held.update(r=http_post(
        url, token, {'jsonrpc': '2.0', 'id': 4, 'method': 'tools/call',
                     'params': {'name': 'sandbox_list', 'arguments': {}}}, sid)[0]))
    t.start()
    req = s.lines.wait(lambda m: m.get('method') == 'sbxtop/event' and
                       m['params']['type'] == 'approval.requested' and
                       m['params']['data'].get('client') == 'http-agent 1.0', 10)
    if req:
        s.call('sbxtop/approve', {'id': req['params']['data']['id'], 'allow': False,
                                  'reason': 'not over http'})
    t.join(15)
    s.call('sbxtop/approve_mode', {'mode': 'none'})
    out['held_text'] = text_of(held['r']) if held.get('r') else None
    srv.send_signal(15)
    out['serve_exit'] = srv.wait(15)
    import urllib.error
    try:
        http_post(url, token, {'jsonrpc': '2.0', 'id': 3, 'method': 'ping'}, sid)
        out['after_stop'] = 'answered'
    except urllib.error.URLError as e:
        out['after_stop'] = type(e.reason).__name__
    cl = s.call('sbxtop/clients')['result']['clients']
    out['clients_after'] = [c for c in cl if c.get('origin') == 'http']
    s.close()
    return out


def sc_approvals(sandbox):
    """destructive mode: approve, deny with a reason; the console is a raw client."""
    con = Sock('console', 'test-console')
    con.call('sbxtop/subscribe', {'from': 0})
    out = {'mode': con.call('sbxtop/approve_mode', {'mode': 'destructive'})['result']}
    b = Bridge('approval-agent')
    b.initialize()
    # A read-only tool is not held.
    t0 = time.time()
    r = b.tool('sandbox_list', {})
    out['readonly_not_held'] = r is not None and r['result']['isError'] is False
    out['readonly_ms'] = int((time.time() - t0) * 1000)

    # Deny, with a reason: the sandbox survives.
    i = b.start_call('sandbox_destroy', {'sandbox_id': sandbox})
    req = con.lines.wait(lambda m: m.get('method') == 'sbxtop/event' and
                         m['params']['type'] == 'approval.requested')
    out['requested'] = req['params']['data'] if req else None
    pend = con.call('sbxtop/approvals')['result']
    out['pending'] = [[p['tool'], p['client']] for p in pend['approvals']]
    aid = req['params']['data']['id'] if req else 0
    out['deny'] = con.call('sbxtop/approve', {'id': aid, 'allow': False,
                                              'reason': 'not this one'}).get('result')
    ans = b.answer(i)
    out['denied_text'] = text_of(ans)
    out['denied_is_error'] = ans['result']['isError'] if ans else None
    res = con.lines.wait(lambda m: m.get('method') == 'sbxtop/event' and
                         m['params']['type'] == 'approval.resolved')
    out['resolved'] = res['params']['data'] if res else None
    fin = con.lines.wait(lambda m: m.get('method') == 'sbxtop/event' and
                         m['params']['type'] == 'tool.finished' and
                         m['params']['data']['tool'] == 'sandbox_destroy')
    out['journal_outcome'] = fin['params']['data']['outcome'] if fin else None
    out['again'] = con.call('sbxtop/approve', {'id': aid, 'allow': True}).get('error')

    # Approve: the call runs (an unknown sandbox: the tool's own error).
    i = b.start_call('sandbox_destroy', {'sandbox_id': 'sbx-nope00'})
    req = con.lines.wait(lambda m: m.get('method') == 'sbxtop/event' and
                         m['params']['type'] == 'approval.requested' and
                         m['params']['data']['id'] != aid)
    aid2 = req['params']['data']['id'] if req else 0
    con.call('sbxtop/approve', {'id': aid2, 'allow': True})
    out['approved_text'] = text_of(b.answer(i))

    # mode all holds a read-only call too; back to none lets it through.
    con.call('sbxtop/approve_mode', {'mode': 'all'})
    i = b.start_call('sandbox_list', {})
    req = con.lines.wait(lambda m: m.get('method') == 'sbxtop/event' and
                         m['params']['type'] == 'approval.requested' and
                         m['params']['data']['tool'] == 'sandbox_list')
    out['all_holds_list'] = req is not None
    con.call('sbxtop/approve', {'id': req['params']['data']['id'] if req else 0,
                                'allow': True})
    out['all_list_ok'] = b.answer(i)['result']['isError'] is False
    con.call('sbxtop/approve_mode', {'mode': 'none'})
    out['bridge_exit'] = b.close()
    con.close()
    return out


def sc_approval_timeout(sandbox):
    """No console attached: the default applies after approval_timeout."""
    adm = Sock('cli', 'admin')
    adm.call('sbxtop/approve_mode', {'mode': 'destructive'})
    b = Bridge('lonely-agent')
    b.initialize()
    t0 = time.time()
    r = b.tool('sandbox_destroy', {'sandbox_id': sandbox}, timeout=60)
    out = {'text': text_of(r), 'is_error': r['result']['isError'] if r else None,
           'seconds': round(time.time() - t0, 1)}
    adm.call('sbxtop/approve_mode', {'mode': 'none'})
    out['bridge_exit'] = b.close()
    adm.close()
    return out


def sc_held_then_gone(sandbox):
    """A held call whose client goes away is dropped from the list.  The
    client goes as MCP's stdio shutdown says: its input closed (the bridge
    waits for the answers in flight), then SIGTERM."""
    adm = Sock('console', 'admin')
    adm.call('sbxtop/approve_mode', {'mode': 'destructive'})
    b = Bridge('quitter')
    b.initialize()
    b.start_call('sandbox_destroy', {'sandbox_id': sandbox})
    time.sleep(0.5)
    out = {'held': len(adm.call('sbxtop/approvals')['result']['approvals'])}
    b.p.stdin.close()
    time.sleep(0.5)
    out['waits'] = b.p.poll() is None and \
        len(adm.call('sbxtop/approvals')['result']['approvals']) == 1
    b.p.terminate()
    out['bridge_exit'] = b.close()
    time.sleep(0.6)
    out['after'] = len(adm.call('sbxtop/approvals')['result']['approvals'])
    adm.call('sbxtop/approve_mode', {'mode': 'none'})
    adm.close()
    return out


def sc_crash(sandbox, pidfile):
    """kill -9 the core while a bridge has a call running; the bridge goes on."""
    b = Bridge('crash-agent')
    b.initialize()
    i = b.start_call('sandbox_exec', {'sandbox_id': sandbox, 'command': 'sleep 60'})
    time.sleep(1.0)
    with open(pidfile) as f:
        pid = int(f.read().split()[0])
    os.kill(pid, 9)
    ans = b.answer(i, 10)
    out = {'old_pid': pid, 'pending_error': ans.get('error') if ans else None}
    r = b.tool('sandbox_status', {'sandbox_id': sandbox}, 30)
    out['status_after'] = r['result'].get('structuredContent', {}).get('state') \
        if r and 'result' in r else json.dumps(r)
    warn = b.lines.wait(lambda m: m.get('method') == 'notifications/message' and
                        m['params']['level'] == 'warning', 5)
    out['warning'] = warn['params']['data'] if warn else None
    with open(pidfile) as f:
        out['new_pid'] = int(f.read().split()[0])
    out['bridge_exit'] = b.close()
    out['nonjson'] = b.lines.nonjson
    return out


def sc_create_short(seconds):
    b = Bridge('short-lived')
    b.initialize()
    r = b.tool('sandbox_create', {'max_duration_s': int(seconds)}, 60)
    b.close()
    return {'id': r['result']['structuredContent']['sandbox_id'] if r and not
            r['result']['isError'] else text_of(r)}


def sc_peer(uid):
    """Connect as another uid (the caller opened the directory for it)."""
    def child():
        os.setgid(int(uid))
        os.setuid(int(uid))
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(sock_path())
        s.settimeout(5)
        try:
            s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
            data = s.recv(4096)
        except OSError as e:    # the server may close before or after our line
            data = ('closed: ' + e.strerror).encode()
        os.write(1, json.dumps({'answer': data.decode(errors='replace')}).encode())
        os._exit(0)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.dup2(w, 1)
        try:
            child()
        except Exception as e:  # noqa: BLE001 - report anything to the parent
            os.write(1, json.dumps({'error': str(e)}).encode())
            os._exit(1)
    os.close(w)
    data = os.read(r, 65536)
    os.waitpid(pid, 0)
    return json.loads(data or b'{}')


def sc_logs(sandbox, logpath):
    """sbxtop/logs: the tail, lines appended, text that is not UTF-8, a
    truncation, bad params, and the stop."""
    s = Sock('cli')
    out = {}

    def logs(pred, timeout=5):
        return s.lines.wait(lambda m: m.get('method') == 'sbxtop/log' and pred(m['params']),
                            timeout)
    with open(logpath, 'a') as f:
        f.write('TAIL-1\nTAIL-2\nTAIL-3\n')
    out['answer'] = s.call('sbxtop/logs', {'sandbox': sandbox, 'lines': 2})
    first = logs(lambda p: True)
    out['first'] = first and first['params']
    with open(logpath, 'a') as f:
        f.write('LIVE-1\n')
    t0 = time.time()
    live = logs(lambda p: 'LIVE-1' in p['data'])
    out['live'] = live and live['params']
    out['live_ms'] = int((time.time() - t0) * 1000)
    with open(logpath, 'ab') as f:
        f.write(b'\xff\xfeNOT-UTF8 \xc3\xa9t\xc3\xa9\n')
    bad = logs(lambda p: 'NOT-UTF8' in p['data'])
    out['not_utf8'] = bad and bad['params']['data']
    with open(logpath, 'w') as f:
        f.write('AFTER-TRUNCATE\n')
    tr = logs(lambda p: 'AFTER-TRUNCATE' in p['data'])
    out['truncated'] = tr and tr['params']
    out['bad_lines'] = s.call('sbxtop/logs', {'sandbox': sandbox, 'lines': -1})
    out['bad_log'] = s.call('sbxtop/logs', {'sandbox': sandbox, 'log': '../../etc/passwd'})
    out['unknown'] = s.call('sbxtop/logs', {'sandbox': 'sbx-nosuch'})
    out['stop'] = s.call('sbxtop/logs', {'sandbox': None})
    with open(logpath, 'a') as f:
        f.write('AFTER-STOP\n')
    out['after_stop'] = logs(lambda p: 'AFTER-STOP' in p['data'], 1)
    s.close()
    return out


def sc_logs_escape(sandbox, secretfile):
    """The sandbox's root replaces its log with a link to a host file, while it
    is followed: the follow says the log is gone and never reads the file; a
    new follow and sandbox_vm_logs do not read it either."""
    secret = open(secretfile).read().strip()
    s = Sock('cli')
    out = {}
    s.call('sbxtop/logs', {'sandbox': sandbox})
    first = s.lines.wait(lambda m: m.get('method') == 'sbxtop/log', 5)
    out['before'] = first and first['params']['exists']
    r = subprocess.run([SBXTOP, 'exec', '--root', sandbox, '--',
                        'ln -s %s /run/sbxtop/l && mv -f /run/sbxtop/l /run/sbxtop/agent.log'
                        % secretfile], capture_output=True, text=True)
    out['replaced'] = r.returncode
    gone = s.lines.wait(lambda m: m.get('method') == 'sbxtop/log' and
                        m['params'].get('reset') and not m['params']['exists'], 5)
    out['gone'] = gone is not None
    s.call('sbxtop/logs', {'sandbox': sandbox})
    time.sleep(0.5)
    with s.lines.cv:
        seen = [m['params'] for m in s.lines.msgs if m.get('method') == 'sbxtop/log']
    out['again'] = seen[-1]['exists'] if seen else None
    out['leaked'] = any(secret in p['data'] for p in seen)
    s.close()
    b = Bridge('escape-agent')
    b.initialize()
    r = b.tool('sandbox_vm_logs', {'sandbox_id': sandbox})
    b.close()
    out['vm_logs_leaked'] = secret in json.dumps(r)
    return out


class Pty:
    """A raw connection that becomes a PTY: line-exact reads until the answer,
    then frames."""

    def __init__(self, hello=True):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(sock_path())
        self.s.settimeout(20)
        self.buf = b''
        self.out = bytearray()
        self.exit = None
        if hello:
            self.call('sbxtop/hello', {'client': {'kind': 'shell', 'version': server_version()}})

    def line(self):
        while b'\n' not in self.buf:
            d = self.s.recv(1)
            if not d:
                return None
            self.buf += d
        ln, self.buf = self.buf.split(b'\n', 1)
        return json.loads(ln)

    def call(self, method, params=None):
        msg = {'jsonrpc': '2.0', 'id': 1, 'method': method}
        if params is not None:
            msg['params'] = params
        self.s.sendall((json.dumps(msg) + '\n').encode())
        return self.line()

    def frame(self, t, data):
        self.s.sendall(bytes([t]) + len(data).to_bytes(4, 'big') + data)

    def read_until(self, needle, timeout=10):
        """Output frames until needle shows or the connection ends."""
        end = time.time() + timeout
        seen = 0        # what was searched already (minus a needle's length)

        def found():
            nonlocal seen
            hit = needle in self.out[seen:]
            seen = max(0, len(self.out) - len(needle))
            return hit
        while not found() and self.exit is None and time.time() < end:
            while len(self.buf) < 5 or len(self.buf) < 5 + int.from_bytes(self.buf[1:5], 'big'):
                try:
                    d = self.s.recv(65536)
                except socket.timeout:
                    return needle in self.out
                if not d:
                    return needle in self.out
                self.buf += d
            n = int.from_bytes(self.buf[1:5], 'big')
            t, p, self.buf = self.buf[0], self.buf[5:5 + n], self.buf[5 + n:]
            if t == 0:
                self.out += p
            elif t == 3:
                self.exit = json.loads(p)
        return needle in self.out[max(0, seen - len(needle)):] or needle in self.out

    def closed(self):
        try:
            return self.s.recv(1) == b''
        except OSError:
            return True


def sc_pty(sandbox):
    """sbxtop/pty: a shell through the core, a resize, its exit; the refusals."""
    out = {}
    p = Pty()
    out['answer'] = p.call('sbxtop/pty', {'sandbox': sandbox, 'cols': 100, 'rows': 30})
    p.frame(0, b'echo MARK$((1+1)); stty size\n')
    out['mark'] = p.read_until(b'MARK2') and p.read_until(b'30 100')
    p.frame(1, b'{"cols":132,"rows":40}')
    p.frame(0, b'stty size\n')
    out['resized'] = p.read_until(b'40 132')
    p.frame(0, b'exit 3\n')
    p.read_until(b'NEVER')
    out['exit'] = p.exit
    out['closed_after_exit'] = p.closed()
    # The refusals.
    q = Pty(hello=False)
    out['before_hello'] = q.call('sbxtop/pty', {'sandbox': sandbox})
    q.s.close()
    q = Pty()
    out['unknown'] = q.call('sbxtop/pty', {'sandbox': 'sbx-nosuch'})
    out['bad_size'] = q.call('sbxtop/pty', {'sandbox': sandbox, 'cols': 0})
    out['bad_command'] = q.call('sbxtop/pty', {'sandbox': sandbox, 'command': 7})
    q.s.close()
    q = Sock('cli')
    q.call('sbxtop/subscribe', {'from': 0})
    out['shared'] = q.call('sbxtop/pty', {'sandbox': sandbox})
    q.close()
    # A client that goes away hangs up its shell.
    p = Pty()
    p.call('sbxtop/pty', {'sandbox': sandbox, 'command': 'echo STARTED; exec sleep 777'})
    out['started'] = p.read_until(b'STARTED')
    p.s.close()
    return out


def sc_create_backend(backend, max_duration):
    """sandbox_create through the core server, so the server starts the sandbox."""
    b = Bridge('backends')
    b.initialize()
    r = b.tool('sandbox_create', {'backend': backend, 'memory_mib': 256,
                                  'max_duration_s': int(max_duration)}, 240)
    b.close()
    return {'id': r['result']['structuredContent']['sandbox_id'] if r and not
            r['result']['isError'] else text_of(r)}


def sc_restart(sandbox, pidfile):
    """kill -9 the core server that started a sandbox; a new one must find it
    running, exec in it and destroy it."""
    b = Bridge('restart-agent')
    b.initialize()
    b.tool('sandbox_status', {'sandbox_id': sandbox}, 30)
    with open(pidfile) as f:
        pid = int(f.read().split()[0])
    os.kill(pid, 9)
    time.sleep(0.5)
    out = {'old_pid': pid}
    r = b.tool('sandbox_status', {'sandbox_id': sandbox}, 60)
    out['status_after'] = r['result'].get('structuredContent', {}).get('state') \
        if r and 'result' in r else json.dumps(r)
    r = b.tool('sandbox_exec', {'sandbox_id': sandbox, 'command': 'echo after-restart; exit 5'}, 60)
    sc = r['result'].get('structuredContent', {}) if r and 'result' in r else {}
    out['exec'] = [sc.get('stdout', text_of(r)).strip(), sc.get('exit_code')]
    with open(pidfile) as f:
        out['new_pid'] = int(f.read().split()[0])
    r = b.tool('sandbox_destroy', {'sandbox_id': sandbox}, 60)
    out['destroy_error'] = r['result']['isError'] if r and 'result' in r else json.dumps(r)
    if out['destroy_error']:
        out['destroy_text'] = text_of(r)
    r = b.tool('sandbox_list', {}, 30)
    out['listed'] = [s['sandbox_id'] for s in r['result']['structuredContent']['sandboxes']]
    out['bridge_exit'] = b.close()
    return out


def sc_hints():
    """The same failure (an unknown sandbox) for each audience: an sbxtop/ method's
    error as its separate fields, a console's tools/call and an agent's (through
    `sbxtop --mcp`)."""
    out = {}
    s = Sock('console')
    out['rpc'] = s.call('sbxtop/logs', {'sandbox': 'sbx-nope00'}).get('error')
    s.call('initialize', {'protocolVersion': '2025-06-18', 'capabilities': {},
                          'clientInfo': {'name': 'console', 'version': '1.0'}})
    s.send({'jsonrpc': '2.0', 'method': 'notifications/initialized'})
    out['console'] = text_of(s.call('tools/call', {'name': 'sandbox_status',
                                                   'arguments': {'sandbox_id': 'sbx-nope00'}}))
    s.close()
    b = Bridge('hints-agent')
    b.initialize()
    out['agent'] = text_of(b.tool('sandbox_status', {'sandbox_id': 'sbx-nope00'}))
    out['bridge_exit'] = b.close()
    return out


def main():
    name, args = sys.argv[1], sys.argv[2:]
    out = globals()['sc_' + name](*args)
    print(json.dumps(out))


if __name__ == '__main__':
    main()
