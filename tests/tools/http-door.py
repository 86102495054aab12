#!/usr/bin/env python3
"""The HTTP listener's door (tests/integration/http-flood.sh).

    http-door.py flood PORT COUNT SECONDS
        hold COUNT connections to 127.0.0.1:PORT that send nothing, opening a
        new one for each the server closes, for SECONDS; print what it saw.
    http-door.py clients URL TOKEN N
        N authorized MCP requests (initialize, tools/list) and N REST requests
        (GET /v1/sandboxes), each on a new connection: their times.
    http-door.py deadlines URL TOKEN HEADER IDLE
        what the deadlines do: a head that never ends, a client without the
        token, an idle one with it, a held tool call and an SSE stream that
        outlive them.

Prints one JSON object.  Standard library only: the flood runs as another
user, in a clean environment.
"""
import functools
import json
import selectors
import socket
import sys
import threading
import time
import urllib.error
import urllib.request


def sc_flood(port, count, seconds):
    port, count, seconds = int(port), int(count), float(seconds)
    sel = selectors.DefaultSelector()
    out = {'opened': 0, 'closed_by_server': 0, 'refused': 0, 'open_max': 0}
    samples = []
    live = 0

    def opens():
        nonlocal live
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect(('127.0.0.1', port))
        except BlockingIOError:
            pass
        except OSError:
            out['refused'] += 1
            s.close()
            return
        sel.register(s, selectors.EVENT_READ)
        out['opened'] += 1
        live += 1
    for _ in range(count):
        opens()
    t0 = time.time()
    end = t0 + seconds
    while time.time() < end:
        for key, _ in sel.select(0.05):
            s = key.fileobj
            try:
                data = s.recv(1)
            except OSError:
                data = b''
            if data:
                continue
            sel.unregister(s)
            s.close()
            live -= 1
            out['closed_by_server'] += 1
        while live < count and time.time() < end:
            opens()
        out['open_max'] = max(out['open_max'], live)
        if time.time() - t0 > 3:
            samples.append(live)
    samples.sort()
    out['open_median_after_3s'] = samples[len(samples) // 2] if samples else 0
    return out


@functools.lru_cache(maxsize=None)
def core_client():
    """tests/tools/core-client.py (beside this file), for what runs as root."""
    import importlib.util
    import os
    spec = importlib.util.spec_from_file_location(
        'cc', os.path.join(os.path.dirname(os.path.abspath(__file__)), 'core-client.py'))
    cc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cc)
    return cc


def post(url, token, body, sid=None, timeout=20):
    return core_client().http_post(url, token, body, sid, timeout)


def initialize(url, token, name='door-client'):
    r, sid = post(url, token, {'jsonrpc': '2.0', 'id': 1, 'method': 'initialize',
                               'params': {'protocolVersion': '2025-11-25', 'capabilities': {},
                                          'clientInfo': {'name': name, 'version': '1'}}})
    post(url, token, {'jsonrpc': '2.0', 'method': 'notifications/initialized'}, sid)
    return r, sid


def timed(fn):
    t0 = time.time()
    try:
        ok = fn()
    except (OSError, urllib.error.URLError, ValueError) as e:
        ok = 'error: %s' % e
    return ok, round(time.time() - t0, 3)


def sc_clients(url, token, n):
    base = url.rsplit('/mcp', 1)[0]
    out = {'mcp': [], 'rest': []}
    sid = None
    for i in range(int(n)):
        def mcp():
            nonlocal sid
            if sid is None:
                r, sid = initialize(url, token)
                return 'result' in r
            r, _ = post(url, token, {'jsonrpc': '2.0', 'id': 10 + i, 'method': 'tools/list'}, sid)
            return 'result' in r
        out['mcp'].append(timed(mcp))

        def rest():
            req = urllib.request.Request(base + '/v1/sandboxes',
                                         headers={'Authorization': 'Bearer ' + token})
            with urllib.request.urlopen(req, timeout=20) as r:
                return r.status == 200 and 'sandboxes' in json.loads(r.read())
        out['rest'].append(timed(rest))
        time.sleep(0.3)
    return out


def raw(port):
    s = socket.create_connection(('127.0.0.1', port))
    s.settimeout(30)
    return s


def closed_after(s, limit):
    """Seconds until the server closes s (reading what it sends), or None."""
    t0 = time.time()
    s.settimeout(limit)
    try:
        while s.recv(65536):
            pass
    except socket.timeout:
        return None
    except OSError:
        pass
    return round(time.time() - t0, 2)


def sc_deadlines(url, token, header, idle):
    header, idle = float(header), float(idle)
    port = int(url.split(':')[2].split('/')[0])
    out = {}
    # Half a head, then nothing.
    s = raw(port)
    s.sendall(('GET /health HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n' % port).encode())
    out['half_head_closed_s'] = closed_after(s, header + 5)
    s.close()
    # A request without the token: answered, then closed.
    s = raw(port)
    s.sendall(('GET /v1/sandboxes HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n' % port).encode())
    first = s.recv(4096)
    out['no_token_status'] = first.split(b'\r\n', 1)[0].decode(errors='replace')
    out['no_token_closed_s'] = closed_after(s, header + 5)
    s.close()
    # With the token: kept between requests until the idle timeout.
    s = raw(port)
    t0 = time.time()
    s.sendall(('GET /v1/sandboxes HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n'
               'Authorization: Bearer %s\r\n\r\n' % (port, token)).encode())
    out['token_status'] = s.recv(4096).split(b'\r\n', 1)[0].decode(errors='replace')
    s.settimeout(header + 1)
    try:
        out['token_open_past_header'] = s.recv(1) != b''
    except socket.timeout:
        out['token_open_past_header'] = True
    left = closed_after(s, idle + 5)
    out['token_closed_s'] = left and round(time.time() - t0, 1)
    s.close()
    # A tool call held longer than both deadlines (the operator answers
    # after them), and an SSE stream of the same session open as long.
    op = core_client().Sock('cli', 'door-operator')
    op.call('sbxtop/approve_mode', {'mode': 'all'})
    _, sid = initialize(url, token, 'held-client')
    res = {}

    def held():
        res['r'] = timed(lambda: post(url, token, {'jsonrpc': '2.0', 'id': 5,
                                                   'method': 'tools/call',
                                                   'params': {'name': 'sandbox_list',
                                                              'arguments': {}}},
                                      sid, timeout=60)[0])
    t = threading.Thread(target=held)
    t.start()
    s = raw(port)
    s.sendall(('GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n'
               'Accept: text/event-stream\r\nMcp-Session-Id: %s\r\n'
               'MCP-Protocol-Version: 2025-11-25\r\n\r\n' % (port, token, sid)).encode())
    out['sse_status'] = s.recv(4096).split(b'\r\n', 1)[0].decode(errors='replace')
    wait = idle + header + 1
    s.settimeout(wait)
    try:
        out['sse_open'] = s.recv(1) != b''
    except socket.timeout:
        out['sse_open'] = True
    out['sse_open_s'] = wait
    s.close()
    held_ids = [a['id'] for a in op.call('sbxtop/approvals')['result']['approvals']]
    out['held_while_waiting'] = len(held_ids)
    for i in held_ids:
        op.call('sbxtop/approve', {'id': i, 'allow': True})
    t.join(60)
    op.call('sbxtop/approve_mode', {'mode': 'none'})
    op.close()
    r = res.get('r')
    out['held_ok'] = bool(r and isinstance(r[0], dict) and
                          r[0].get('result', {}).get('isError') is False)
    out['held_s'] = r and r[1]
    return out


def main():
    name, args = sys.argv[1], sys.argv[2:]
    print(json.dumps(globals()['sc_' + name](*args)), flush=True)


if __name__ == '__main__':
    main()
