// sbxtop serve --listen: MCP over Streamable HTTP, through the official SDK's
// StreamableHTTPClientTransport (the full sandbox flow, progress, cancellation,
// concurrent calls) and through raw fetch() for what a well-behaved SDK never
// sends (no token, a foreign Origin, no session, an ended session, a bad
// protocol version), plus /health and /metrics.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { pgrep, until, sleep, listen, stopListener } from './lib.mjs';

let server, url, token, base, client, stderr;
const created = new Set();
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sbxtop-http-'));

const text = (r) => r.content.map((c) => c.text).join('\n');

async function connect(name = 'http-tests') {
	const transport = new StreamableHTTPClientTransport(new URL(url), {
		requestInit: { headers: { Authorization: `Bearer ${token}` } },
	});
	const c = new Client({ name, version: '1.0' }, { capabilities: {} });
	await c.connect(transport);
	c.transportRef = transport;
	return c;
}

async function call(c, name, args, opts) {
	const r = await c.callTool({ name, arguments: args }, CallToolResultSchema, opts);
	assert.equal(r.isError, false, `${name}: ${text(r)}`);
	return r.structuredContent;
}

const initBody = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {
	protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } });
const jsonHeaders = (extra = {}) => ({ 'Content-Type': 'application/json',
	Accept: 'application/json, text/event-stream', Authorization: `Bearer ${token}`, ...extra });

// A session made with raw requests: its id.
async function rawSession() {
	const r = await fetch(url, { method: 'POST', headers: jsonHeaders(), body: initBody });
	assert.equal(r.status, 200);
	const sid = r.headers.get('mcp-session-id');
	assert.match(sid, /^[0-9a-f]{64}$/);
	await r.json();
	return sid;
}

before(async () => {
	({ proc: server, url, token, base, stderr } = await listen());
	assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
	client = await connect();
});

after(async () => {
	await client?.close().catch(() => {});
	// Sandboxes the flow did not get to destroy, through a fresh session.
	if (created.size > 0 && server.exitCode === null) {
		const c = await connect('cleanup').catch(() => null);
		for (const id of created)
			await c?.callTool({ name: 'sandbox_destroy', arguments: { sandbox_id: id } })
				.catch(() => {});
		await c?.close().catch(() => {});
	}
	await stopListener(server);
	fs.rmSync(tmp, { recursive: true, force: true });
});

test('the SDK connects over HTTP: a session id, the tools', async () => {
	assert.match(client.transportRef.sessionId, /^[0-9a-f]{64}$/);
	assert.equal(client.getServerVersion().name, 'sbxtop');
	const { tools } = await client.listTools();
	assert.ok(tools.some((t) => t.name === 'sandbox_exec'));
	assert.ok(!tools.some((t) => t.name.startsWith('test_')), 'no fixture tools without the test flag');
});

test('the full flow: create, write, upload, exec with progress, read, list, download, suspend, resume, destroy', async () => {
	const s = await call(client, 'sandbox_create', { name: 'http-flow' });
	const id = s.sandbox_id;
	created.add(id);
	assert.equal(s.state, 'running');

	await call(client, 'sandbox_write_file', { sandbox_id: id, path: 'hello.txt',
		content: 'hello over http\n' });

	const src = path.join(tmp, 'src');
	fs.mkdirSync(path.join(src, 'sub'), { recursive: true });
	fs.writeFileSync(path.join(src, 'a.txt'), 'A');
	fs.writeFileSync(path.join(src, 'sub', 'b.txt'), 'BB');
	const up = await call(client, 'sandbox_upload_dir', { sandbox_id: id, local_path: src,
		remote_path: 'proj' });
	assert.equal(up.files, 2);

	const seen = [];
	const ex = await call(client, 'sandbox_exec', { sandbox_id: id, command:
		'cat proj/a.txt proj/sub/b.txt; for i in 1 2 3 4 5 6; do echo line$i; sleep 0.2; done; '
		+ 'cat hello.txt > out.txt' }, { onprogress: (p) => seen.push(p) });
	assert.equal(ex.exit_code, 0);
	assert.match(ex.stdout, /^ABBline1\n/);
	assert.ok(seen.length >= 2, `progress over SSE: ${JSON.stringify(seen)}`);
	assert.match(seen[seen.length - 1].message, /line\d/);

	const rd = await call(client, 'sandbox_read_file', { sandbox_id: id, path: 'out.txt' });
	assert.equal(rd.content, 'hello over http\n');

	const ls = await call(client, 'sandbox_list_files', { sandbox_id: id, recursive: true });
	const names = ls.entries.map((e) => e.path);
	for (const want of ['hello.txt', 'out.txt', 'proj/a.txt', 'proj/sub/b.txt'])
		assert.ok(names.some((n) => n.endsWith(want)), `${want} in ${JSON.stringify(names)}`);

	const dst = path.join(tmp, 'dl');
	const dl = await call(client, 'sandbox_download', { sandbox_id: id, remote_path: 'proj',
		local_path: dst });
	assert.equal(dl.files, 2);
	const found = fs.readdirSync(dst, { recursive: true }).map(String);
	assert.ok(found.some((f) => f.endsWith('b.txt')), JSON.stringify(found));

	assert.equal((await call(client, 'sandbox_suspend', { sandbox_id: id })).state, 'suspended');
	assert.equal((await call(client, 'sandbox_resume', { sandbox_id: id })).state, 'running');
	const again = await call(client, 'sandbox_exec', { sandbox_id: id, command: 'cat out.txt' });
	assert.equal(again.stdout, 'hello over http\n');

	const d = await call(client, 'sandbox_destroy', { sandbox_id: id });
	created.delete(id);
	assert.equal(d.sandbox_id, id);
	const st = await client.callTool({ name: 'sandbox_status', arguments: { sandbox_id: id } });
	assert.equal(st.isError, true);
	assert.match(text(st), /sandbox_list/);
});

test('cancelling a long exec over HTTP kills it; the session goes on', async () => {
	const s = await call(client, 'sandbox_create', {});
	created.add(s.sandbox_id);
	const ac = new AbortController();
	const p = client.callTool({ name: 'sandbox_exec', arguments: { sandbox_id: s.sandbox_id,
		command: 'sleep 876543' } }, CallToolResultSchema, { signal: ac.signal });
	assert.ok(await until(() => pgrep(s.sandbox_id, '[8]76543')), 'the exec started');
	ac.abort('test');
	await assert.rejects(p);
	assert.ok(await until(() => pgrep(s.sandbox_id, '[8]76543') === '', 10000), 'the exec is gone');
	await client.ping();

	// Concurrent calls on one session, while a slow exec runs.
	const slow = call(client, 'sandbox_exec', { sandbox_id: s.sandbox_id, command: 'sleep 2; echo slow' });
	const t0 = Date.now();
	const rs = await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2
		? call(client, 'sandbox_exec', { sandbox_id: s.sandbox_id, command: `echo n${i}` })
		: call(client, 'sandbox_list', {}))));
	const fastMs = Date.now() - t0;
	rs.forEach((r, i) => {
		if (i % 2)
			assert.equal(r.stdout, `n${i}\n`);
		else
			assert.ok(r.sandboxes.some((x) => x.sandbox_id === s.sandbox_id));
	});
	assert.equal((await slow).stdout, 'slow\n');
	assert.ok(fastMs < 1900, `the quick calls did not wait for the slow one (${fastMs} ms)`);

	await call(client, 'sandbox_destroy', { sandbox_id: s.sandbox_id });
	created.delete(s.sandbox_id);
});

test('a missing or wrong token: 401 with WWW-Authenticate', async () => {
	let r = await fetch(url, { method: 'POST', headers: jsonHeaders({ Authorization: '' }),
		body: initBody });
	assert.equal(r.status, 401);
	assert.match(r.headers.get('www-authenticate'), /^Bearer/);
	r = await fetch(url, { method: 'POST', headers: jsonHeaders({ Authorization: `Bearer ${token}x` }),
		body: initBody });
	assert.equal(r.status, 401);
	assert.match(r.headers.get('www-authenticate'), /invalid_token/);
	r = await fetch(`${base}/metrics`);
	assert.equal(r.status, 401, '/metrics needs the token too');
	// And an SDK client without the token cannot connect.
	const c = new Client({ name: 'anon', version: '0' }, { capabilities: {} });
	await assert.rejects(c.connect(new StreamableHTTPClientTransport(new URL(url))));
});

test('a foreign Origin or Host: 403 (DNS rebinding)', async () => {
	let r = await fetch(url, { method: 'POST', headers: jsonHeaders({ Origin: 'http://evil.example' }),
		body: initBody });
	assert.equal(r.status, 403);
	r = await fetch(url, { method: 'POST', headers: jsonHeaders({ Origin: 'null' }), body: initBody });
	assert.equal(r.status, 403);
	const port = new URL(url).port;
	r = await fetch(url, { method: 'POST', headers: jsonHeaders({ Origin: `http://127.0.0.1:${Number(port) + 1}` }),
		body: initBody });
	assert.equal(r.status, 403, 'another local port is another origin');
	// The local origins are welcome.
	for (const o of [`http://127.0.0.1:${port}`, `http://localhost:${port}`]) {
		r = await fetch(url, { method: 'POST', headers: jsonHeaders({ Origin: o }), body: initBody });
		assert.equal(r.status, 200, o);
		await fetch(url, { method: 'DELETE', headers: jsonHeaders({
			'Mcp-Session-Id': r.headers.get('mcp-session-id') }) });
	}
});

test('sessions: 400 without an id, 404 for an unknown or ended one, DELETE ends one', async () => {
	const ping = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' });
	let r = await fetch(url, { method: 'POST', headers: jsonHeaders(), body: ping });
	assert.equal(r.status, 400);
	assert.equal((await r.json()).error.code, -32600);
	r = await fetch(url, { method: 'POST', headers: jsonHeaders({ 'Mcp-Session-Id': 'f'.repeat(64) }),
		body: ping });
	assert.equal(r.status, 404);

	const sid = await rawSession();
	r = await fetch(url, { method: 'POST', headers: jsonHeaders({ 'Mcp-Session-Id': sid }), body: ping });
	assert.equal(r.status, 200);
	assert.deepEqual((await r.json()).result, {});
	// A notification is accepted with 202 and no body.
	r = await fetch(url, { method: 'POST', headers: jsonHeaders({ 'Mcp-Session-Id': sid }),
		body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
	assert.equal(r.status, 202);
	assert.equal(await r.text(), '');

	r = await fetch(url, { method: 'DELETE', headers: jsonHeaders({ 'Mcp-Session-Id': sid }) });
	assert.equal(r.status, 200);
	r = await fetch(url, { method: 'POST', headers: jsonHeaders({ 'Mcp-Session-Id': sid }), body: ping });
	assert.equal(r.status, 404, 'an ended session is unknown');
	r = await fetch(url, { method: 'DELETE', headers: jsonHeaders({ 'Mcp-Session-Id': sid }) });
	assert.equal(r.status, 404);
});

test('MCP-Protocol-Version: 400 when unsupported; absent or supported is fine', async () => {
	const sid = await rawSession();
	const ping = JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'ping' });
	let r = await fetch(url, { method: 'POST', headers: jsonHeaders({ 'Mcp-Session-Id': sid,
		'MCP-Protocol-Version': '1999-01-01' }), body: ping });
	assert.equal(r.status, 400);
	r = await fetch(url, { method: 'POST', headers: jsonHeaders({ 'Mcp-Session-Id': sid,
		'MCP-Protocol-Version': '2025-06-18' }), body: ping });
	assert.equal(r.status, 200);
	r = await fetch(url, { method: 'POST', headers: jsonHeaders({ 'Mcp-Session-Id': sid }), body: ping });
	assert.equal(r.status, 200);
	await fetch(url, { method: 'DELETE', headers: jsonHeaders({ 'Mcp-Session-Id': sid }) });
});

test('POST rules: Accept (406), Content-Type (415), bad JSON (400), batches (400)', async () => {
	const sid = await rawSession();
	const ping = JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'ping' });
	let r = await fetch(url, { method: 'POST', headers: jsonHeaders({ 'Mcp-Session-Id': sid,
		Accept: 'application/json' }), body: ping });
	assert.equal(r.status, 406);
	r = await fetch(url, { method: 'POST', headers: jsonHeaders({ 'Mcp-Session-Id': sid,
		'Content-Type': 'text/plain' }), body: ping });
	assert.equal(r.status, 415);
	r = await fetch(url, { method: 'POST', headers: jsonHeaders({ 'Mcp-Session-Id': sid }),
		body: '{"jsonrpc":' });
	assert.equal(r.status, 400);
	assert.equal((await r.json()).error.code, -32700);
	r = await fetch(url, { method: 'POST', headers: jsonHeaders({ 'Mcp-Session-Id': sid }),
		body: `[${ping}]` });
	assert.equal(r.status, 400);
	r = await fetch(url, { method: 'PUT', headers: jsonHeaders({ 'Mcp-Session-Id': sid }), body: ping });
	assert.equal(r.status, 405);
	await fetch(url, { method: 'DELETE', headers: jsonHeaders({ 'Mcp-Session-Id': sid }) });
});

test('GET opens the session stream; a second GET on the same session is refused', async () => {
	const sid = await rawSession();
	const ac = new AbortController();
	const r = await fetch(url, { headers: { Accept: 'text/event-stream',
		Authorization: `Bearer ${token}`, 'Mcp-Session-Id': sid }, signal: ac.signal });
	assert.equal(r.status, 200);
	assert.match(r.headers.get('content-type'), /^text\/event-stream/);
	const r2 = await fetch(url, { headers: { Accept: 'text/event-stream',
		Authorization: `Bearer ${token}`, 'Mcp-Session-Id': sid } });
	assert.equal(r2.status, 409);
	// Ending the session ends its stream.
	const reader = r.body.getReader();
	await fetch(url, { method: 'DELETE', headers: jsonHeaders({ 'Mcp-Session-Id': sid }) });
	const end = await Promise.race([
		(async () => { for (;;) { const { done } = await reader.read(); if (done) return 'ended'; } })(),
		sleep(5000).then(() => 'still open'),
	]);
	ac.abort();
	assert.equal(end, 'ended');
});

test('/health without a token; /metrics counts what happened', async () => {
	let r = await fetch(`${base}/health`);
	assert.equal(r.status, 200);
	assert.equal((await r.json()).status, 'ok');

	const metrics = async () => {
		const m = await fetch(`${base}/metrics`, { headers: { Authorization: `Bearer ${token}` } });
		assert.equal(m.status, 200);
		assert.match(m.headers.get('content-type'), /^text\/plain/);
		return m.text();
	};
	const value = (t, series) => {
		const line = t.split('\n').find((l) => l.startsWith(`${series} `));
		return line ? Number(line.split(' ')[1]) : NaN;
	};
	const before = await metrics();
	assert.match(before, /# TYPE sbxtop_tool_calls_total counter/);
	assert.match(before, /# TYPE sbxtop_exec_duration_seconds histogram/);
	assert.match(before, /# TYPE sbxtop_sandboxes gauge/);
	const okList = 'sbxtop_tool_calls_total{tool="sandbox_list",outcome="ok"}';
	const errStatus = 'sbxtop_tool_calls_total{tool="sandbox_status",outcome="error"}';
	const n0 = value(before, okList), e0 = value(before, errStatus);
	const c0 = value(before, 'sbxtop_exec_duration_seconds_count');

	const s = await call(client, 'sandbox_create', {});
	created.add(s.sandbox_id);
	await call(client, 'sandbox_list', {});
	await call(client, 'sandbox_exec', { sandbox_id: s.sandbox_id, command: 'true' });
	await client.callTool({ name: 'sandbox_status', arguments: { sandbox_id: 'sbx-nothere' } });
	const mid = await metrics();
	assert.equal(value(mid, okList), n0 + 1);
	assert.equal(value(mid, errStatus), e0 + 1);
	assert.equal(value(mid, 'sbxtop_exec_duration_seconds_count'), c0 + 1);
	assert.equal(value(mid, 'sbxtop_exec_duration_seconds_bucket{le="+Inf"}'), c0 + 1);
	assert.ok(value(mid, 'sbxtop_sandboxes{state="running",backend="ns"}') >= 1, mid);
	// A sandbox id is a label only of the per-sandbox series (kept for at
	// most 64 sandboxes, so the set stays bounded), never of the others.
	const withId = mid.split('\n').filter((l) => l.includes(s.sandbox_id));
	assert.ok(withId.length > 0, 'the sandbox has series of its own');
	for (const l of withId)
		assert.match(l, new RegExp(`^sbxtop_sandbox_[a-z_]+\\{sandbox="${s.sandbox_id}"[,}]`));
	assert.ok(value(mid, 'sbxtop_mcp_sessions') >= 1);

	await call(client, 'sandbox_destroy', { sandbox_id: s.sandbox_id });
	created.delete(s.sandbox_id);
});

test('SIGTERM stops the server cleanly, open streams included', async () => {
	// Last: the server goes away here.  A GET stream is open while it stops.
	const sid = await rawSession();
	const ac = new AbortController();
	const r = await fetch(url, { headers: { Accept: 'text/event-stream',
		Authorization: `Bearer ${token}`, 'Mcp-Session-Id': sid }, signal: ac.signal });
	assert.equal(r.status, 200);
	await client.close();
	client = null;
	server.kill('SIGTERM');
	const code = await Promise.race([
		new Promise((resolve) => server.on('exit', (c) => resolve(c))),
		sleep(10000).then(() => 'timeout'),
	]);
	ac.abort();
	assert.equal(code, 0, stderr());
});
