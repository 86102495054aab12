// sbxtop serve --listen: MCP over the HTTP+SSE transport of 2024-11-05 (GET
// /mcp opens a session and its event stream, whose first event names
// /mcp/messages?mcpSessionId=...), judged by the official SDK's
// SSEClientTransport (the agent flow, with an API key given each of its ways)
// and by raw fetch() for what the SDK never sends: no key, a key without the
// exec scope, an unknown session, another key's session, the session's end
// with its stream.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SBXTOP, until, listen, stopListener } from './lib.mjs';

let server, url, token, base;
const keys = {};
const created = new Set();

function keyAdd(name, scopes) {
	return execFileSync(SBXTOP, ['key', 'add', name, '--scope', scopes],
		{ env: process.env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
}

async function sseClient(u, init = {}, name = 'sse-tests') {
	const c = new Client({ name, version: '1.0' }, { capabilities: {} });
	await c.connect(new SSEClientTransport(new URL(u), init));
	return c;
}

async function call(c, name, args) {
	const r = await c.callTool({ name, arguments: args });
	assert.equal(r.isError, false, `${name}: ${JSON.stringify(r.content)}`);
	return r.structuredContent;
}

// A raw event stream: GET /mcp, its events as they come.
async function openStream(headers) {
	const ac = new AbortController();
	const r = await fetch(url, { headers: { Accept: 'text/event-stream', ...headers },
		signal: ac.signal });
	const events = [];
	let waiters = [];
	if (r.status === 200) {
		(async () => {
			const dec = new TextDecoder();
			let acc = '';
			try {
				for await (const chunk of r.body) {
					acc += dec.decode(chunk, { stream: true });
					let i;
					while ((i = acc.indexOf('\n\n')) >= 0) {
						const block = acc.slice(0, i);
						acc = acc.slice(i + 2);
						const ev = { event: 'message', data: '' };
						for (const l of block.split('\n')) {
							if (l.startsWith('event: '))
								ev.event = l.slice(7);
							else if (l.startsWith('data: '))
								ev.data += l.slice(6);
						}
						if (!block.startsWith(':'))
							events.push(ev);
						waiters.forEach((w) => w());
					}
				}
			} catch { /* aborted */ }
		})();
	}
	return {
		r, events, close: () => ac.abort(),
		next: async (pred, ms = 10000) => {
			const end = Date.now() + ms;
			for (;;) {
				const e = events.find(pred);
				if (e || Date.now() > end)
					return e;
				await new Promise((res) => { waiters.push(res); setTimeout(res, 100); });
				waiters = [];
			}
		},
	};
}

const post = (path, body, headers) => fetch(base + path, { method: 'POST',
	headers: { 'Content-Type': 'application/json', ...headers }, body: JSON.stringify(body) });
const sessions = async () => (await (await fetch(`${base}/health`)).json()).sessions;

before(async () => {
	keys.exec = keyAdd('sse-exec', 'exec');
	keys.other = keyAdd('sse-other', 'exec');
	keys.metrics = keyAdd('sse-metrics', 'metrics');
	({ proc: server, url, token, base } = await listen());
});

after(async () => {
	if (created.size > 0 && server.exitCode === null) {
		const c = await sseClient(url, { requestInit: { headers: { Authorization:
			`Bearer ${token}` } } }, 'cleanup').catch(() => null);
		for (const id of created)
			await c?.callTool({ name: 'sandbox_destroy', arguments: { sandbox_id: id } })
				.catch(() => {});
		await c?.close().catch(() => {});
	}
	await stopListener(server);
});

test('the SDK\'s SSEClientTransport runs the agent flow with an API key (X-API-Key)', async () => {
	const c = await sseClient(url, { requestInit: { headers: { 'X-API-Key': keys.exec } } });
	assert.equal(c.getServerVersion().name, 'sbxtop');
	const { tools } = await c.listTools();
	for (const t of ['sandbox_create', 'sandbox_exec', 'sandbox_destroy'])
		assert.ok(tools.some((x) => x.name === t), t);
	const s = await call(c, 'sandbox_create', { name: 'sse-flow' });
	created.add(s.sandbox_id);
	assert.equal(s.state, 'running');
	const x = await call(c, 'sandbox_exec', { sandbox_id: s.sandbox_id,
		command: 'echo hello over sse; echo err >&2; exit 3' });
	assert.deepEqual([x.exit_code, x.stdout, x.stderr], [3, 'hello over sse\n', 'err\n']);
	const l = await call(c, 'sandbox_list', {});
	assert.deepEqual(l.sandboxes.map((b) => b.sandbox_id), [s.sandbox_id],
		'the key sees the sandbox it made, and only that');
	// Another key's session does not see it, nor destroy it.
	const o = await sseClient(url, { requestInit: { headers: { Authorization:
		`Bearer ${keys.other}` } } }, 'sse-other');
	assert.deepEqual((await call(o, 'sandbox_list', {})).sandboxes, []);
	const d = await o.callTool({ name: 'sandbox_destroy', arguments: { sandbox_id: s.sandbox_id } });
	assert.equal(d.isError, true);
	assert.match(d.content[0].text, /unknown sandbox/);
	await o.close();
	assert.equal((await call(c, 'sandbox_destroy', { sandbox_id: s.sandbox_id })).state,
		'terminated');
	created.delete(s.sandbox_id);
	await c.close();
});

test('a client that can only name a URL: the key in ?api_key, carried to the endpoint', async () => {
	const c = await sseClient(`${url}?api_key=${keys.exec}`);
	assert.ok((await c.listTools()).tools.length > 0);
	await c.ping();
	await c.close();
	// And the listener's own token is the operator's key.
	const t = await sseClient(url, { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
	await t.ping();
	await t.close();
});

test('no key, a wrong key, a key without exec: the stream is not opened', async () => {
	let s = await openStream({});
	assert.equal(s.r.status, 401);
	assert.equal((await s.r.json()).error.message, 'API key required');
	s = await openStream({ 'X-API-Key': 'sbxk_wrong' });
	assert.equal(s.r.status, 401);
	assert.equal((await s.r.json()).error.message, 'Invalid API key');
	s = await openStream({ 'X-API-Key': keys.metrics });
	assert.equal(s.r.status, 403);
	assert.equal((await s.r.json()).error.message, 'Missing required scope: exec');
	await assert.rejects(sseClient(url, { requestInit: { headers: { 'X-API-Key': keys.metrics } },
		eventSourceInit: {} }));
});

test('the wire: endpoint first, 202 for a message, its answer on the stream, 404 for an unknown session', async () => {
	assert.ok(await until(async () => (await sessions()) === 0, 5000),
		'the earlier tests\' sessions ended with their streams');
	const before = 0;
	const s = await openStream({ 'X-API-Key': keys.exec });
	assert.equal(s.r.status, 200);
	assert.match(s.r.headers.get('content-type'), /^text\/event-stream/);
	const ep = await s.next((e) => e.event === 'endpoint');
	assert.ok(ep, 'an endpoint event');
	assert.equal(s.events[0], ep, 'the endpoint event comes first');
	assert.match(ep.data, /^\/mcp\/messages\?mcpSessionId=[0-9a-f]{64}$/,
		'no key in it for a client that sent its key in a header');
	const hdr = { 'X-API-Key': keys.exec };
	let r = await post(ep.data, { jsonrpc: '2.0', id: 1, method: 'initialize', params: {
		protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'raw-sse',
			version: '0' } } }, hdr);
	assert.equal(r.status, 202);
	assert.equal(await r.text(), 'Accepted');
	const init = await s.next((e) => e.event === 'message' && JSON.parse(e.data).id === 1);
	assert.equal(JSON.parse(init.data).result.protocolVersion, '2024-11-05');
	assert.equal(await sessions(), before + 1, 'one session more');
	r = await post(ep.data, { jsonrpc: '2.0', method: 'notifications/initialized' }, hdr);
	assert.equal(r.status, 202);
	r = await post(ep.data, { jsonrpc: '2.0', id: 2, method: 'ping' }, hdr);
	assert.equal(r.status, 202);
	assert.deepEqual(JSON.parse((await s.next((e) => e.event === 'message' &&
		JSON.parse(e.data).id === 2)).data).result, {});

	r = await post('/mcp/messages?mcpSessionId=' + '0'.repeat(64), { jsonrpc: '2.0', id: 3,
		method: 'ping' }, hdr);
	assert.equal(r.status, 404, 'an unknown session');
	r = await post(ep.data, { jsonrpc: '2.0', id: 4, method: 'ping' },
		{ 'X-API-Key': keys.other });
	assert.equal(r.status, 404, 'another key\'s session is as unknown');
	r = await post(ep.data, { jsonrpc: '2.0', id: 5, method: 'ping' }, {});
	assert.equal(r.status, 401, 'the messages need the key too');
	r = await fetch(base + ep.data, { method: 'POST', headers: { ...hdr, 'Content-Type':
		'application/json' }, body: '{not json' });
	assert.equal(r.status, 400);
	r = await fetch(url, { method: 'POST', headers: { ...hdr, 'Content-Type': 'application/json',
		Accept: 'application/json, text/event-stream', 'Mcp-Session-Id':
		ep.data.split('=')[1] }, body: JSON.stringify({ jsonrpc: '2.0', id: 6, method: 'ping' }) });
	assert.equal(r.status, 400, 'an HTTP+SSE session is not a Streamable HTTP one');

	s.close();
	assert.ok(await until(async () => (await sessions()) === before, 5000),
		'the session ends with its stream');
	r = await post(ep.data, { jsonrpc: '2.0', id: 7, method: 'ping' }, hdr);
	assert.equal(r.status, 404, 'and its messages are refused');
});

test('a key in the query string is carried to the endpoint, and Streamable HTTP still works beside', async () => {
	const s = await openStream({});
	assert.equal(s.r.status, 401);
	const q = await fetch(`${url}?api_key=${encodeURIComponent(keys.exec)}`, { headers:
		{ Accept: 'text/event-stream' } });
	assert.equal(q.status, 200);
	const reader = q.body.getReader();
	const { value } = await reader.read();
	const first = new TextDecoder().decode(value);
	assert.match(first, new RegExp(`^event: endpoint\\ndata: /mcp/messages\\?mcpSessionId=[0-9a-f]{64}&api_key=${keys.exec}\\n\\n`));
	await reader.cancel();
	const c = new Client({ name: 'streamable', version: '1' }, { capabilities: {} });
	await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit:
		{ headers: { 'X-API-Key': keys.exec } } }));
	assert.ok((await c.listTools()).tools.length > 0);
	await c.close();
});
