// sbxtop's REST API end to end: the document's schemas are those of the MCP
// tools behind the routes; a client generated from docs/openapi.json runs
// the agent flow; streams, cancellation, forwards, logs and events;
// bad input; the Agent Sandbox session routes.  Every response goes through
// checkResponse, so each one is validated against the document, and the
// last test asserts that every operation the document describes was seen.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PAIRS, withoutId } from './sync-schemas.mjs';
import { doc, DOC_PATH, compileAll, check, checkResponse, makeFetch, startServer,
	readEvents, until, sleep, seen, validated, operation } from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
let srv, api;
const created = new Set();
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sbxtop-rest-'));

// A request through the checking fetch: {r, body (parsed JSON or text)}.
async function call(method, p, { body, headers = {}, token, raw = false } = {}) {
	const h = { ...headers };
	if (body !== undefined && typeof body === 'object' && !(body instanceof Uint8Array))
		h['Content-Type'] ??= 'application/json';
	const f = raw ? (u, init) => fetch(u, { ...init, headers: { ...init.headers,
		Authorization: `Bearer ${srv.token}` } }) :
		token === null ? makeFetch(null) : makeFetch(token ?? srv.token);
	const r = await f(`${srv.base}${p}`, { method, headers: h, body: body === undefined ? undefined :
		typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body) });
	const t = await r.text();
	let j = t;
	try { j = JSON.parse(t); } catch { /* not JSON */ }
	return { r, body: j };
}

async function sandbox(name) {
	const { r, body } = await call('POST', '/v1/sandboxes', { body: { name } });
	assert.equal(r.status, 201, JSON.stringify(body));
	created.add(body.sandbox_id);
	return body.sandbox_id;
}

async function destroy(id) {
	const { r } = await call('DELETE', `/v1/sandboxes/${id}`);
	assert.equal(r.status, 200);
	created.delete(id);
}

before(async () => {
	srv = await startServer();
	api = makeFetch(srv.token);
});

after(async () => {
	for (const id of created)
		await call('DELETE', `/v1/sandboxes/${id}`).catch(() => {});
	srv?.proc.kill('SIGTERM');
	fs.rmSync(tmp, { recursive: true, force: true });
});

test('the server serves the document kept in the tree, and it compiles', async () => {
	const { r, body } = await call('GET', '/v1/openapi.json');
	assert.equal(r.status, 200);
	assert.deepEqual(body, JSON.parse(fs.readFileSync(DOC_PATH, 'utf8')));
	assert.equal(doc.openapi, '3.1.0');
	compileAll();
	for (const [p, item] of Object.entries(doc.paths))
		for (const [m, o] of Object.entries(item))
			if (m !== 'parameters')
				assert.ok(o.operationId && o.responses, `${m} ${p} has an operationId`);
});

test('the document\'s schemas are the MCP tools\' own', async () => {
	// The tools' schemas from tools/list, through MCP on the same listener.
	const h = { Authorization: `Bearer ${srv.token}`, 'Content-Type': 'application/json',
		Accept: 'application/json, text/event-stream' };
	let r = await fetch(`${srv.base}/mcp`, { method: 'POST', headers: h, body: JSON.stringify({
		jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18',
			capabilities: {}, clientInfo: { name: 'rest-doc', version: '1' } } }) });
	const sid = r.headers.get('mcp-session-id');
	await r.json();
	r = await fetch(`${srv.base}/mcp`, { method: 'POST', headers: { ...h, 'Mcp-Session-Id': sid,
		'MCP-Protocol-Version': '2025-06-18' }, body: JSON.stringify({ jsonrpc: '2.0', id: 2,
		method: 'tools/list', params: { _meta: { 'sbxtop/schemas': 'full' } } }) });
	const tools = Object.fromEntries((await r.json()).result.tools.map((t) => [t.name, t]));
	await fetch(`${srv.base}/mcp`, { method: 'DELETE', headers: { ...h, 'Mcp-Session-Id': sid } });
	const S = doc.components.schemas;
	const pairs = PAIRS.map(([name, tool, which, strip]) =>
		[name, strip ? withoutId(tools[tool][which]) : tools[tool][which]]);
	for (const [name, want] of pairs)
		assert.deepEqual(S[name], want, `components.schemas.${name} is ${name}'s tool schema`);
	// The exec result: each branch's fields are the tool's.
	const out = tools.sandbox_exec.outputSchema;
	for (const branch of S.ExecResult.oneOf)
		for (const [k, v] of Object.entries(branch.properties))
			assert.deepEqual(v, out.properties[k], `ExecResult.${k}`);
	assert.deepEqual(S.ExecResult.oneOf.map((b) => b.required), out.anyOf.map((b) => b.required));
});

test('a client generated from the document runs the agent flow', async () => {
	// Types from the document, a file that uses them, and tsc in strict mode.
	const gen = path.join(here, 'node_modules/openapi-typescript/bin/cli.js');
	const tsc = path.join(here, 'node_modules/typescript/bin/tsc');
	fs.symlinkSync(path.join(here, 'node_modules'), path.join(tmp, 'node_modules'));
	fs.writeFileSync(path.join(tmp, 'package.json'), '{"type":"module"}\n');
	execFileSync(process.execPath, [gen, DOC_PATH, '--default-non-nullable', 'false', '-o',
		path.join(tmp, 'schema.d.ts')],
		{ stdio: 'pipe' });
	const dts = fs.readFileSync(path.join(tmp, 'schema.d.ts'), 'utf8');
	assert.match(dts, /"\/v1\/sandboxes\/\{id\}\/exec"/);
	fs.copyFileSync(path.join(here, 'flow.ts'), path.join(tmp, 'flow.ts'));
	const tscArgs = ['--strict', '--noEmitOnError', '--module', 'nodenext',
		'--moduleResolution', 'nodenext', '--target', 'es2022', '--lib', 'es2022,dom',
		'--skipLibCheck', '--outDir', path.join(tmp, 'out')];
	try {
		execFileSync(process.execPath, [tsc, ...tscArgs, path.join(tmp, 'flow.ts')],
			{ stdio: 'pipe', cwd: tmp });
	} catch (e) {
		assert.fail(`tsc: ${e.stdout}${e.stderr}`);
	}
	// The types are the document's: a route it does not have fails the check.
	fs.writeFileSync(path.join(tmp, 'bad.ts'), "import createClient from 'openapi-fetch';\n" +
		"import type { paths } from './schema.js';\n" +
		"await createClient<paths>({}).GET('/v1/no-such-route', {});\n");
	assert.throws(() => execFileSync(process.execPath, [tsc, ...tscArgs,
		path.join(tmp, 'bad.ts')], { stdio: 'pipe', cwd: tmp }),
		(e) => /no-such-route/.test(String(e.stdout)));

	const { flow } = await import(path.join(tmp, 'out/flow.js'));
	const name = `flow-${process.pid}`;
	const res = await flow(srv.base, api, name);
	assert.deepEqual(res.steps, ['create', 'write', 'exec', 'read', 'list', 'archive',
		'delete', 'destroy']);
});

// Lines of an NDJSON response as they come: an async iterator of objects.
async function* ndjson(r) {
	const dec = new TextDecoder();
	let acc = '';
	for await (const chunk of r.body) {
		acc += dec.decode(chunk, { stream: true });
		let i;
		while ((i = acc.indexOf('\n')) >= 0) {
			const l = JSON.parse(acc.slice(0, i));
			acc = acc.slice(i + 1);
			check('ExecLine', l, 'a streamed exec line');
			yield l;
		}
	}
}

test('exec streams NDJSON as it runs; DELETE or closing the connection kills it', async () => {
	const id = await sandbox(`stream-${process.pid}`);
	const headers = { Authorization: `Bearer ${srv.token}`, 'Content-Type': 'application/json' };
	// The documented stream, whole, through the checking fetch.
	const whole = await call('POST', `/v1/sandboxes/${id}/exec?stream=ndjson`, { body: {
		command: 'echo one; echo two >&2; exit 3' } });
	const lines = whole.body.split('\n').filter(Boolean).map((l) => JSON.parse(l));
	assert.equal(lines[0].type, 'started');
	assert.deepEqual(lines.filter((l) => l.type === 'output').map((l) => [l.stream, l.data]),
		[['stdout', 'one\n'], ['stderr', 'two\n']]);
	assert.equal(lines.at(-1).type, 'exit');
	assert.equal(lines.at(-1).exit_code, 3);

	// Output arrives while the command still runs; DELETE stops it.
	const t0 = Date.now();
	let r = await fetch(`${srv.base}/v1/sandboxes/${id}/exec`, { method: 'POST', headers: {
		...headers, Accept: 'application/x-ndjson' }, body: JSON.stringify({
		command: 'echo a; sleep 0.3; echo b; sleep 60; echo never' }) });
	await checkResponse('POST', `${srv.base}/v1/sandboxes/${id}/exec`, r, { streaming: true });
	assert.match(r.headers.get('content-type'), /application\/x-ndjson/);
	const got = [];
	let execId, end;
	for await (const l of ndjson(r)) {
		got.push(l);
		if (l.type === 'started')
			execId = l.id;
		if (l.type === 'output' && l.data === 'b\n') {
			assert.ok(Date.now() - t0 < 30000, 'b came before the command ended');
			const c = await call('DELETE', `/v1/sandboxes/${id}/execs/${execId}`);
			assert.equal(c.r.status, 200);
			assert.equal(c.body.cancelled, true);
		}
		if (l.type === 'exit' || l.type === 'error')
			end = l;
	}
	assert.ok(Date.now() - t0 < 30000, 'DELETE ended the stream well before the sleep');
	assert.equal(end?.type, 'error');
	assert.equal(end.error.code, 'cancelled');
	assert.ok(!got.some((l) => l.data === 'never\n'));

	// Closing the connection kills the command (the agent's journal says so).
	const ac = new AbortController();
	r = await fetch(`${srv.base}/v1/sandboxes/${id}/exec?stream=ndjson`, { method: 'POST',
		headers, body: JSON.stringify({ command: 'echo started-long; sleep 120' }),
		signal: ac.signal });
	const it = ndjson(r);
	for (let l = await it.next(); !l.done; l = await it.next())
		if (l.value.data === 'started-long\n')
			break;
	ac.abort();
	const stopped = await until(async () => {
		const p = await call('GET', `/v1/sandboxes/${id}/execs`);
		const x = p.body.processes.find((q) => q.command?.includes('started-long'));
		return x && x.state !== 'running';
	}, 20000, 200);
	assert.ok(stopped, 'the command stopped once its client hung up');

	// A buffered exec is cancelled by DELETE with its agent exec_id.
	// (listed as running is not yet printed: it says when it did)
	const pending = call('POST', `/v1/sandboxes/${id}/exec`, { body: {
		command: 'echo buffered-long; touch /tmp/buffered-said; sleep 120' } });
	let running;
	await until(async () => {
		const said = await call('POST', `/v1/sandboxes/${id}/exec`, { body: {
			command: 'test -e /tmp/buffered-said && echo yes' } });
		if (said.body.stdout !== 'yes\n')
			return false;
		const p = await call('GET', `/v1/sandboxes/${id}/execs`);
		running = p.body.processes.find((q) => q.command?.includes('buffered-long') &&
			q.state === 'running');
		return running;
	}, 20000, 200);
	assert.ok(running, 'the buffered command is listed while it runs');
	const k = await call('DELETE', `/v1/sandboxes/${id}/execs/${running.exec_id}`);
	assert.equal(k.r.status, 200, JSON.stringify(k.body));
	const done = await pending;
	assert.equal(done.r.status, 200);
	assert.equal(done.body.signal, 'KILL');
	assert.equal(done.body.exit_code, undefined, 'no exit code: killed by a signal (a field with nothing to say is left out)');
	assert.equal(done.body.stdout, 'buffered-long\n');

	// A buffered exec answers with the tool's result.
	const b = await call('POST', `/v1/sandboxes/${id}/exec`, { body: { command: 'echo hi',
		timeout_s: 10 } });
	assert.equal(b.r.status, 200);
	assert.equal(b.body.stdout, 'hi\n');
	await destroy(id);
});

test('suspend, resume, forwards and logs', async () => {
	const id = await sandbox(`life-${process.pid}`);
	let x = await call('POST', `/v1/sandboxes/${id}/suspend`);
	if (x.r.status === 200) {
		assert.equal(x.body.state, 'suspended');
		x = await call('POST', `/v1/sandboxes/${id}/resume`);
		assert.equal(x.r.status, 200, JSON.stringify(x.body));
		assert.equal(x.body.state, 'running');
	} else {
		assert.equal(x.body.error.code, 'unsupported', JSON.stringify(x.body));
		x = await call('POST', `/v1/sandboxes/${id}/resume`);
	}
	const f = await call('POST', `/v1/sandboxes/${id}/forwards`, { body: { remote_port: 8123 } });
	assert.equal(f.r.status, 201, JSON.stringify(f.body));
	assert.ok(f.body.local_port > 0);
	let l = await call('GET', `/v1/sandboxes/${id}/forwards`);
	assert.deepEqual(l.body.forwards.map((q) => q.remote_port), [8123]);
	const s = await call('DELETE', `/v1/sandboxes/${id}/forwards/8123`);
	assert.equal(s.r.status, 200);
	assert.deepEqual(s.body.stopped.map((q) => q.remote_port), [8123]);
	l = await call('GET', `/v1/sandboxes/${id}/forwards`);
	assert.deepEqual(l.body.forwards, []);

	const logs = await call('GET', `/v1/sandboxes/${id}/logs`);
	assert.equal(logs.r.status, 200);
	assert.match(logs.body, /sbxtop-agent/);
	// Followed: what is logged after the request arrives on the open stream.
	const ac = new AbortController();
	const r = await fetch(`${srv.base}/v1/sandboxes/${id}/logs?follow=true`, { headers: {
		Authorization: `Bearer ${srv.token}` }, signal: ac.signal });
	await checkResponse('GET', `${srv.base}/v1/sandboxes/${id}/logs`, r, { streaming: true });
	let text = '';
	const reader = (async () => {
		try {
			for await (const c of r.body) {
				text += Buffer.from(c).toString();
				if (/ready/.test(text) && text.length > 0)
					break;
			}
		} catch { /* aborted */ }
	})();
	await Promise.race([reader, sleep(10000)]);
	ac.abort();
	assert.match(text, /sbxtop-agent/);
	await destroy(id);
});

test('events: the console\'s stream shows REST calls with client rest', async () => {
	const id = await sandbox(`events-${process.pid}`);
	const evs = await readEvents(srv.base, srv.token, '?from=1', (e) =>
		e.some((x) => x.type === 'tool.finished' && x.data.tool === 'sandbox_create' &&
			x.sandbox === null || x.sandbox === id));
	const started = evs.filter((e) => e.type === 'tool.started');
	assert.ok(started.length > 0);
	const mine = started.find((e) => e.data.tool === 'sandbox_create' &&
		e.data.arguments?.name === `events-${process.pid}`);
	assert.ok(mine, 'the create is in the journal');
	assert.equal(mine.data.client, 'rest');
	assert.equal(mine.data.kind, 'rest');
	// Live events arrive too.
	const live = readEvents(srv.base, srv.token, '', (e) => e.some((x) =>
		x.type === 'tool.finished' && x.data.tool === 'sandbox_destroy'));
	await sleep(300);
	await destroy(id);
	const got = await live;
	assert.ok(got.some((e) => e.type === 'tool.started' && e.data.tool === 'sandbox_destroy' &&
		e.data.client === 'rest'));
});

test('bad input gets a clear error, and loses nothing', async () => {
	const id = await sandbox(`bad-${process.pid}`);
	await call('PUT', `/v1/sandboxes/${id}/files/content?path=keep.txt`, { body: 'kept\n' });
	const before = (await call('GET', '/v1/sandboxes')).body.sandboxes.length;
	const expect = async (res, status, code, re) => {
		assert.equal(res.r.status, status, JSON.stringify(res.body));
		assert.equal(res.body.error.code, code);
		assert.match(res.body.error.message, re);
		return res.body.error;
	};
	let e = await expect(await call('POST', '/v1/sandboxes', { body: { memory_mib: 'lots' } }),
		400, 'invalid', /memory_mib/);
	assert.match(e.hint, /openapi/);
	await expect(await call('POST', '/v1/sandboxes', { body: { name: 'x', color: 'red' } }),
		400, 'invalid', /color/);
	await expect(await call('POST', `/v1/sandboxes/${id}/exec`, { body: { command: 5 } }),
		400, 'invalid', /command/);
	await expect(await call('POST', `/v1/sandboxes/${id}/exec`, { body: '{"command": "ls"',
		headers: { 'Content-Type': 'application/json' } }), 400, 'invalid', /not JSON/);
	await expect(await call('POST', `/v1/sandboxes/${id}/exec`, { body: [1, 2] }), 400,
		'invalid', /not an object/);
	await expect(await call('GET', `/v1/sandboxes/${id}/files?recursive=maybe`), 400,
		'invalid', /recursive/);
	await expect(await call('GET', `/v1/sandboxes/${id}/files/content`), 400, 'invalid',
		/path is required/);
	await expect(await call('PUT', `/v1/sandboxes/${id}/files/content?path=x&mode=999`,
		{ body: 'x' }), 400, 'invalid', /mode/);
	await expect(await call('PUT', `/v1/sandboxes/${id}/archive?path=/workspace/z`,
		{ body: 'not an archive at all' }), 400, 'invalid', /not a tar\.gz/);
	// A body over the route's limit: told before it is read, or once it is.
	const huge = new Uint8Array(17 << 20).fill(0x20);
	e = await expect(await call('POST', `/v1/sandboxes/${id}/exec`, { body: huge,
		headers: { 'Content-Type': 'application/json' } }), 400, 'invalid', /16 MiB limit/);
	// Too big a file: refused, and the file it would have replaced is intact.
	await expect(await call('PUT', `/v1/sandboxes/${id}/files/content?path=keep.txt`, {
		body: new Uint8Array((64 << 20) + 1) }), 400, 'invalid', /64 MiB limit/);
	e = await expect(await call('GET', '/v1/sandboxes/no-such-sandbox'), 404, 'not_found',
		/no-such-sandbox/);
	assert.match(e.hint, /GET \/v1\/sandboxes/);
	await expect(await call('POST', '/v1/sandboxes/no-such-sandbox/exec', { body: {
		command: 'true' } }), 404, 'not_found', /no-such-sandbox/);
	// Not in the document, so not through the checking fetch.
	await expect(await call('GET', '/v1/nothing-here', { raw: true }), 404, 'not_found',
		/no route/);
	await expect(await call('PATCH', `/v1/sandboxes/${id}`, { raw: true }), 404, 'not_found',
		/no route PATCH/);
	let x = await call('GET', '/v1/sandboxes', { token: null });
	await expect(x, 401, 'unauthorized', /^API key required$/);
	assert.equal(x.r.headers.get('www-authenticate'), 'Bearer realm="sbxtop"');
	x = await call('GET', '/v1/sandboxes', { token: `${srv.token}x` });
	await expect(x, 401, 'unauthorized', /^Invalid API key$/);
	assert.match(x.r.headers.get('www-authenticate'), /invalid_token/);
	await expect(await call('DELETE', `/v1/sandboxes/${id}`, { headers: {
		Origin: 'http://evil.example' } }), 403, 'denied', /Origin/);
	await expect(await call('POST', '/exec/bad%20name/execute', { body: { command: 'true' } }),
		400, 'invalid', /session name/);
	await expect(await call('POST', '/exec/s/execute', { body: { command: 'ls', args: 'x' } }),
		400, 'invalid', /args/);

	// Nothing was lost: the sandbox, its file, the count of sandboxes.
	const after = await call('GET', '/v1/sandboxes');
	assert.equal(after.body.sandboxes.length, before);
	const r = await call('GET', `/v1/sandboxes/${id}/files/content?path=keep.txt`);
	assert.equal(r.body, 'kept\n');
	assert.equal((await call('GET', `/v1/sandboxes/${id}`)).body.state, 'running');
	await destroy(id);
});

test('the Agent Sandbox session routes', async () => {
	const s = `sess-${process.pid}`;
	let x = await call('POST', `/exec/${s}/execute`, { body: { command: 'sh', args: ['-c',
		'echo "it\'s $1"; echo err >&2', 'sh', 'quoted arg'] } });
	assert.equal(x.r.status, 200, JSON.stringify(x.body));
	assert.deepEqual(x.body.output, [{ stream: 'stdout', data: "it's quoted arg\n" },
		{ stream: 'stderr', data: 'err\n' }]);
	assert.equal(x.body.exitCode, 0);
	x = await call('POST', `/exec/${s}/execute`, { body: { command: 'exit 7' } });
	assert.equal(x.body.exitCode, 7);
	x = await call('POST', `/exec/${s}/write`, { body: { path: 'notes/a.txt', content: 'é\n' } });
	assert.equal(x.body.success, true);
	x = await call('GET', `/exec/${s}/read?path=notes/a.txt`);
	assert.equal(x.body.content, 'é\n');
	x = await call('GET', `/exec/${s}/files?recursive=true`);
	assert.ok(x.body.files.some((f) => f.path === '/workspace/notes/a.txt'));
	x = await call('GET', '/exec/');
	const mine = x.body.sessions.find((q) => q.id === s);
	assert.ok(mine);
	created.add(mine.sandbox_id);
	// Its sandbox destroyed some other way: the next request makes a new one.
	await destroy(mine.sandbox_id);
	x = await call('POST', `/exec/${s}/execute`, { body: { command: 'ls notes 2>&1; true' } });
	assert.equal(x.r.status, 200, JSON.stringify(x.body));
	assert.match(x.body.output[0].data, /No such file/);
	x = await call('GET', '/exec/');
	const again = x.body.sessions.find((q) => q.id === s);
	assert.notEqual(again.sandbox_id, mine.sandbox_id);
	created.add(again.sandbox_id);
	x = await call('DELETE', `/exec/${s}`);
	assert.equal(x.body.success, true);
	created.delete(again.sandbox_id);
	x = await call('DELETE', `/exec/${s}`);
	assert.equal(x.r.status, 404);
	assert.equal(x.body.error.code, 'not_found');
	x = await call('GET', '/exec/');
	assert.ok(!x.body.sessions.some((q) => q.id === s));
});

test('health, ready and metrics', async () => {
	let x = await call('GET', '/health', { token: null });
	assert.equal(x.body.status, 'ok');
	x = await call('GET', '/ready', { token: null });
	assert.equal(x.r.status, 200);
	assert.equal(x.body.status, 'ready');
	x = await call('GET', '/metrics');
	assert.equal(x.r.status, 200);
	assert.match(x.body, /^sbxtop_up 1$/m);
});

// With no registry here: the routes' shapes and errors (tests/integration/
// image-rest.sh pulls from a real one).
test('the image store\'s routes and the templates', async () => {
	let { r, body } = await call('GET', '/v1/images');
	assert.equal(r.status, 200);
	assert.equal(body.total.images, 0);
	({ r, body } = await call('POST', '/v1/images', { body: { ref: 'Not A Ref' } }));
	assert.equal(r.status, 400);
	assert.match(body.error.hint, /REGISTRY/);
	({ r } = await call('DELETE', '/v1/images?ref=nothing:1'));
	assert.equal(r.status, 404);
	({ r, body } = await call('POST', '/v1/images/gc'));
	assert.equal(r.status, 200);
	assert.deepEqual(body, { blobs: 0, layers: 0, bytes: 0 });
	({ r, body } = await call('GET', '/exec/templates'));
	assert.equal(r.status, 200);
	assert.deepEqual(body.templates.map((t) => t.name), ['base']);
});

// Agent Sandbox's key API, and a key on the routes: each answer validated
// against the document (tests/integration/rest-keys.sh plays the rest).
test('the key API (/admin/keys), and an API key on the routes', async () => {
	let { r, body } = await call('POST', '/admin/keys', { body: { name: 'rest-ci',
		scopes: ['exec'], rateLimit: 3 } });
	assert.equal(r.status, 201, JSON.stringify(body));
	const key = body.key, id = body.record.id;
	assert.deepEqual([body.record.scopes, body.record.rateLimit, body.record.status],
		[['exec'], 3, 'active']);
	({ r, body } = await call('POST', '/admin/keys', { body: { name: 'rest-ci' } }));
	assert.equal(r.status, 409, 'a name is one key\'s');
	({ r, body } = await call('POST', '/admin/keys', { body: { name: 'x', scopes: ['root'] } }));
	assert.deepEqual([r.status, body.error], [400, "unknown scope 'root'"]);
	({ r, body } = await call('GET', '/admin/keys'));
	assert.ok(body.keys.some((k) => k.id === id && !('hash' in k)), 'listed, without its hash');

	const as = (method, p, k = key) => call(method, p, { token: null,
		headers: { 'X-API-Key': k } });
	({ r, body } = await as('GET', '/v1/sandboxes'));
	assert.deepEqual([r.status, body.sandboxes], [200, []], 'a key sees none of the token\'s');
	({ r, body } = await as('POST', '/v1/images/gc'));
	assert.deepEqual([r.status, body.error.code, body.error.message],
		[403, 'denied', 'Missing required scope: admin']);
	({ r, body } = await as('GET', '/admin/keys'));
	assert.deepEqual([r.status, body], [403, { error: 'Missing required scope: admin' }]);
	({ r, body } = await as('GET', '/exec/'));
	assert.deepEqual([r.status, body, r.headers.get('retry-after')],
		[429, { error: 'Rate limit exceeded', retryAfter: 60 }, '60'], 'the 4th of 3');
	({ r, body } = await as('GET', '/v1/sandboxes'));
	assert.deepEqual([r.status, body.error.code], [429, 'rate_limited']);

	({ r, body } = await call('POST', `/admin/keys/${id}/rotate`));
	assert.equal(r.status, 200);
	assert.notEqual(body.key, key);
	({ r, body } = await as('GET', '/exec/'));
	assert.deepEqual([r.status, body], [401, { error: 'Invalid API key' }], 'the old key');
	({ r, body } = await call('POST', `/admin/keys/${id}/revoke`));
	assert.deepEqual([r.status, body.record.revoked, body.record.status], [200, true, 'revoked']);
	({ r, body } = await call('POST', `/admin/keys/${id}/rotate`));
	assert.equal(r.status, 409, 'a revoked key is not rotated');
	({ r, body } = await call('DELETE', `/admin/keys/${id}`));
	assert.deepEqual([r.status, body], [200, { id, deleted: true }]);
	for (const [m, p] of [['DELETE', `/admin/keys/${id}`], ['POST', `/admin/keys/${id}/revoke`],
		['POST', '/admin/keys/key-00000000/rotate']]) {
		({ r, body } = await call(m, p));
		assert.deepEqual([r.status, body.error], [404, 'API key not found'], `${m} ${p}`);
	}
	({ r, body } = await call('GET', '/exec/', { token: null }));
	assert.deepEqual([r.status, body], [401, { error: 'API key required' }]);
});

test('every operation of the document was exercised and validated', () => {
	const missing = [];
	for (const [p, item] of Object.entries(doc.paths))
		for (const m of Object.keys(item))
			if (m !== 'parameters' && ![...seen].some((s) => s.startsWith(
				`${m.toUpperCase()} ${p} `)))
				missing.push(`${m.toUpperCase()} ${p}`);
	assert.deepEqual(missing, [], 'operations no test called');
	assert.ok(validated.length > 50, `${validated.length} responses validated`);
	assert.ok(operation('GET', '/v1/sandboxes/x/files/content'));
});
