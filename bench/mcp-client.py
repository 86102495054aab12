#!/usr/bin/env python3
"""The MCP side of bench/30-mcp.sh: a raw JSON-RPC client of `sbxtop --mcp` on
stdio (python3, no SDK: the least client overhead, so what is measured is the
server).  Usage: mcp-client.py SBXTOP SANDBOX_ID SEQ_N CONC_N OUT_SAMPLES
Appends one microsecond sample per sequential call to OUT_SAMPLES; with CONC_N
above 0, then prints the concurrent round's figures (count, total ms, correct)."""
import io
import json
import subprocess
import sys
import time

sbxtop, sbx, seq_n, conc_n, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
p = subprocess.Popen([sbxtop, '--mcp'], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
# Buffered reads (an unbuffered readline reads a byte per system call).
rd = io.BufferedReader(p.stdout, 1 << 16)


def send(msg):
    p.stdin.write((json.dumps(msg) + '\n').encode())


def recv():
    line = rd.readline()
    if not line:
        sys.exit('sbxtop --mcp closed its output')
    return json.loads(line)


def exec_req(i, command):
    return {'jsonrpc': '2.0', 'id': i, 'method': 'tools/call', 'params': {
        'name': 'sandbox_exec', 'arguments': {'sandbox_id': sbx, 'command': command}}}


send({'jsonrpc': '2.0', 'id': 0, 'method': 'initialize', 'params': {
    'protocolVersion': '2025-11-25', 'capabilities': {}, 'clientInfo': {'name': 'bench', 'version': '0'}}})
recv()
send({'jsonrpc': '2.0', 'method': 'notifications/initialized'})

samples = []
for i in range(1, seq_n + 1):
    t = time.perf_counter()
    send(exec_req(i, 'true'))
    m = recv()
    samples.append((time.perf_counter() - t) * 1e6)
    sc = m.get('result', {}).get('structuredContent', {})
    if m.get('id') != i or sc.get('exit_code') != 0:
        sys.exit(f'call {i}: unexpected answer {m}')
with open(out, 'a') as f:
    f.write(''.join(f'{s:.0f}\n' for s in samples))

if conc_n == 0:
    p.stdin.close()
    p.wait(timeout=30)
    sys.exit(0)

# Concurrent: every request written before any answer is read.
base = seq_n + 1000
t = time.perf_counter()
for k in range(conc_n):
    send(exec_req(base + k, f'echo c{k}'))
got = {}
while len(got) < conc_n:
    m = recv()
    if 'id' in m:
        got[m['id']] = m
total_ms = (time.perf_counter() - t) * 1e3
bad = [k for k in range(conc_n)
       if got.get(base + k, {}).get('result', {}).get('structuredContent', {}).get('stdout') != f'c{k}\n']
print(f'{conc_n} {total_ms:.1f} {conc_n - len(bad)}')
p.stdin.close()
p.wait(timeout=30)
