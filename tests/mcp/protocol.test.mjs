// The protocol at line level, with a raw client: version negotiation, what each
// revision leaves out, bad input of every kind, the lifecycle, and stdin closing
// in the middle of an exec.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Raw, createSandbox, destroySandbox, pgrep, sbxtop, until, sleep } from './lib.mjs';

const REVISIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'];
let sbx;

before(() => { sbx = createSandbox(); });
after(() => { if (sbx) destroySandbox(sbx); });

test('initialize answers each supported revision with itself', async () => {
	for (const v of REVISIONS) {
		const raw = new Raw();
		try {
			const r = await raw.initialize(v);
			assert.equal(r.result.protocolVersion, v);
			assert.equal(r.result.serverInfo.name, 'sbxtop');
			assert.ok(r.result.capabilities.tools, 'tools capability');
			assert.deepEqual(r.result.capabilities.logging, {});
			assert.equal(r.result.capabilities.resources.subscribe, false);
			assert.match(r.result.instructions, /sandbox_destroy/);
			assert.match(r.result.instructions, /0\.0\.0\.0/);
			assert.match(r.result.instructions, /sandbox_port_forward/);
			assert.equal('title' in r.result.serverInfo, v >= '2025-06-18');
		} finally {
			await raw.close();
		}
	}
});

test('initialize answers an unknown revision with the latest', async () => {
	const raw = new Raw();
	try {
		const r = await raw.initialize('1999-01-01');
		assert.equal(r.result.protocolVersion, '2025-11-25');
	} finally {
		await raw.close();
	}
});

test('initialize without protocolVersion is invalid params', async () => {
	const raw = new Raw();
	try {
		const r = await raw.request(1, 'initialize', { capabilities: {} });
		assert.equal(r.error.code, -32602);
	} finally {
		await raw.close();
	}
});

test('tools/list leaves out what an older revision does not have', async () => {
	for (const v of REVISIONS) {
		const raw = new Raw();
		try {
			await raw.initialize(v);
			const r = await raw.request(1, 'tools/list');
			assert.ok(r.result.tools.length >= 2);
			for (const t of r.result.tools) {
				assert.equal(t.inputSchema.type, 'object', t.name);
				assert.equal('outputSchema' in t, v >= '2025-06-18', `${v} ${t.name} outputSchema`);
				assert.equal('title' in t, v >= '2025-06-18', `${v} ${t.name} title`);
				assert.equal('annotations' in t, v >= '2025-03-26', `${v} ${t.name} annotations`);
			}
			const call = await raw.request(2, 'tools/call', { name: 'sandbox_list', arguments: {} });
			assert.equal(call.result.isError, false);
			assert.equal('structuredContent' in call.result, v >= '2025-06-18');
			// The text is written for a model, in every revision: the count first.
			assert.match(call.result.content[0].text, /^\d+ sandbox(es)?\b/);
			if (v >= '2025-06-18')
				assert.ok(Array.isArray(call.result.structuredContent.sandboxes));
		} finally {
			await raw.close();
		}
	}
});

test('requests before initialize get an error; ping works', async () => {
	const raw = new Raw();
	try {
		const p = await raw.request(1, 'ping');
		assert.deepEqual(p.result, {});
		const r = await raw.request(2, 'tools/list');
		assert.equal(r.error.code, -32600);
		assert.match(r.error.message, /initialize/);
		const c = await raw.request(3, 'tools/call', { name: 'sandbox_list', arguments: {} });
		assert.equal(c.error.code, -32600);
		await raw.initialize();
		const l = await raw.request(4, 'tools/list');
		assert.ok(l.result.tools.length >= 2);
		const again = await raw.request(5, 'initialize', { protocolVersion: '2025-11-25',
			capabilities: {}, clientInfo: { name: 'x', version: '1' } });
		assert.equal(again.error.code, -32600);
	} finally {
		await raw.close();
	}
});

test('invalid JSON is -32700 and the server keeps serving', async () => {
	const raw = new Raw();
	try {
		await raw.initialize();
		for (const bad of ['{"jsonrpc":"2.0","id":1,', 'not json', '{"a":1} trailing', '\xff\xfe']) {
			await raw.write(bad + '\n');
			const e = await raw.waitFor((m) => m.error);
			assert.equal(e.error.code, -32700, bad);
			assert.equal(e.id, null);
		}
		await raw.write(Buffer.from([0x7b, 0xc3, 0x28, 0x7d, 0x0a]));	// invalid UTF-8
		assert.equal((await raw.waitFor((m) => m.error)).error.code, -32700);
		const p = await raw.request(9, 'ping');
		assert.deepEqual(p.result, {});
		assert.deepEqual(raw.nonjson, [], 'stdout carries only JSON-RPC');
	} finally {
		await raw.close();
	}
});

test('malformed requests are -32600, with the id when it could be read', async () => {
	const raw = new Raw();
	try {
		await raw.initialize();
		const cases = [
			[{ jsonrpc: '1.0', id: 11, method: 'ping' }, 11],
			[{ id: 12, method: 'ping' }, 12],
			[{ jsonrpc: '2.0', id: 13, method: 5 }, 13],
			[{ jsonrpc: '2.0', id: 1.5, method: 'ping' }, null],
			[{ jsonrpc: '2.0', id: { a: 1 }, method: 'ping' }, null],
			[{ jsonrpc: '2.0', id: 14, method: 'ping', params: 'x' }, 14],
			[[{ jsonrpc: '2.0', id: 15, method: 'ping' }], null],
			['"a string"', null],
		];
		for (const [msg, id] of cases) {
			await raw.write((typeof msg === 'string' ? msg : JSON.stringify(msg)) + '\n');
			const e = await raw.waitFor((m) => m.error);
			assert.equal(e.error.code, -32600, JSON.stringify(msg));
			assert.equal(e.id, id, JSON.stringify(msg));
		}
		const arr = await raw.request(16, 'tools/list', [1, 2]);
		assert.equal(arr.error.code, -32602);
		assert.deepEqual((await raw.request(17, 'ping')).result, {});
	} finally {
		await raw.close();
	}
});

test('a line over 16 MiB is an error, and the next line is served', async () => {
	const raw = new Raw();
	try {
		await raw.initialize();
		const big = '{"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":"' +
			'a'.repeat(17 << 20) + '"}}\n';
		await raw.write(big);
		const e = await raw.waitFor((m) => m.error, 30000);
		assert.equal(e.id, null);
		assert.equal(e.error.code, -32600);
		assert.match(e.error.message, /16 MiB/);
		const p = await raw.request(6, 'ping');
		assert.deepEqual(p.result, {});
		assert.equal(raw.lines.filter((m) => m.id === 5).length, 0, 'the long line was dropped');
	} finally {
		await raw.close();
	}
});

test('unknown method is -32601; unknown tool is -32602 naming tools/list', async () => {
	const raw = new Raw();
	try {
		await raw.initialize();
		const m = await raw.request(1, 'no/such/method', {});
		assert.equal(m.error.code, -32601);
		const t = await raw.request(2, 'tools/call', { name: 'sandbox_nope', arguments: {} });
		assert.equal(t.error.code, -32602);
		assert.match(t.error.message, /tools\/list/);
		const n = await raw.request(3, 'tools/call', { arguments: {} });
		assert.equal(n.error.code, -32602);
		const a = await raw.request(4, 'tools/call', { name: 'sandbox_list', arguments: [1] });
		assert.equal(a.error.code, -32602);
		// Responses and unknown notifications are taken quietly.
		await raw.send({ jsonrpc: '2.0', id: 99, result: {} });
		await raw.send({ jsonrpc: '2.0', method: 'notifications/whatever' });
		assert.deepEqual((await raw.request(5, 'ping')).result, {});
		assert.equal(raw.lines.length, 0, `nothing else was said: ${JSON.stringify(raw.lines)}`);
	} finally {
		await raw.close();
	}
});

test('logging/setLevel takes the spec levels and filters notifications/message', async () => {
	const raw = new Raw();
	try {
		await raw.initialize();
		const bad = await raw.request(1, 'logging/setLevel', { level: 'loud' });
		assert.equal(bad.error.code, -32602);
		assert.deepEqual((await raw.request(2, 'logging/setLevel', { level: 'debug' })).result, {});
		await raw.request(3, 'tools/call', { name: 'sandbox_list', arguments: {} });
		const log = await raw.waitFor((m) => m.method === 'notifications/message');
		assert.equal(log.params.level, 'debug');
		assert.match(log.params.data, /sandbox_list: ok/);
		assert.deepEqual((await raw.request(4, 'logging/setLevel', { level: 'error' })).result, {});
		await raw.request(5, 'tools/call', { name: 'sandbox_list', arguments: {} });
		await raw.request(6, 'ping');
		assert.equal(raw.lines.filter((m) => m.method === 'notifications/message').length, 0);
	} finally {
		await raw.close();
	}
});

test('stdin closed mid-exec: the call is still answered; SIGTERM then kills the exec, the sandbox stays', async () => {
	// MCP's stdio shutdown: the client closes our input, waits, then sends
	// SIGTERM.  What it asked before its input ended is answered first (a
	// pipe of requests into `sbxtop --mcp` gets its answers); SIGTERM ends
	// the wait, and the session with it.
	const raw = new Raw();
	let code;
	try {
		await raw.initialize();
		await raw.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: {
			name: 'sandbox_exec', arguments: { sandbox_id: sbx, command: 'sleep 876541' } } });
		assert.ok(await until(() => pgrep(sbx, '[8]76541')), 'the exec started');
		raw.proc.stdin.end();
		code = await Promise.race([raw.exited, sleep(1500).then(() => 'waiting')]);
		assert.equal(code, 'waiting', 'the bridge waits for the call in flight');
		assert.ok(pgrep(sbx, '[8]76541'), 'the exec still runs');
		const t0 = Date.now();
		raw.proc.kill('SIGTERM');
		code = await Promise.race([raw.exited, sleep(15000).then(() => 'timeout')]);
		assert.notEqual(code, 'timeout', `the bridge ends on SIGTERM; stderr: ${raw.stderr}`);
		assert.ok(code === 0 || raw.exitSignal === 'SIGTERM', `exit ${code} ${raw.exitSignal}`);
		assert.ok(Date.now() - t0 < 10000);
	} finally {
		if (code === undefined || code === 'timeout' || code === 'waiting')
			raw.proc.kill('SIGKILL');
	}
	assert.ok(await until(() => pgrep(sbx, '[8]76541') === ''), 'the exec is gone');
	assert.match(sbxtop('ls'), new RegExp(`${sbx}.*running`));
});
