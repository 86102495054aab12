// MCP 2026-07-28 with the official v2 TypeScript client (@modelcontextprotocol/client,
// pinned by package-lock.json), in both of its versionNegotiation modes (pinned to
// 2026-07-28, and auto) over stdio (sbxtop --mcp, through the core server) and over
// Streamable HTTP (sbxtop serve --listen): the whole agent flow (create, write, exec
// with progress and with a cancel, upload, download, forward, destroy), then a task
// (io.modelcontextprotocol/tasks) driven through the SDK's own transports, which
// set the HTTP headers (Mcp-Method, Mcp-Name) the server checks.  Last, Claude
// Code's probe line, byte for byte, on stdio.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { SBXTOP, Raw, pgrep, until, sleep } from './lib.mjs';

const MODERN = '2026-07-28';
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sbxtop-sdk2-'));
const created = new Set();
let server, url, token, stderr = '';

const text = (r) => r.content.map((c) => c.text).join('\n');
const modes = {
	pinned: { mode: { pin: MODERN } },
	auto: { mode: 'auto' },
};

function stdioTransport() {
	return new StdioClientTransport({ command: SBXTOP, args: ['--mcp'],
		env: { ...process.env }, stderr: 'pipe' });
}

function httpTransport() {
	return new StreamableHTTPClientTransport(new URL(url), {
		requestInit: { headers: { Authorization: `Bearer ${token}` } },
	});
}

async function connect(kind, mode, capabilities = {}) {
	const c = new Client({ name: `sdk2-${kind}-${mode}`, version: '2.4.0' },
		{ capabilities, versionNegotiation: modes[mode] });
	await c.connect(kind === 'stdio' ? stdioTransport() : httpTransport());
	return c;
}

async function call(c, name, args, opts) {
	const r = await c.callTool({ name, arguments: args }, opts);
	assert.equal(r.isError, false, `${name}: ${text(r)}`);
	return r.structuredContent;
}

before(async () => {
	server = spawn(SBXTOP, ['serve', '--listen', '127.0.0.1:0'], { env: process.env,
		stdio: ['ignore', 'ignore', 'pipe'] });
	server.stderr.setEncoding('utf8');
	server.stderr.on('data', (d) => { stderr += d; });
	const ok = await until(() => /at (http:\S+)/.test(stderr) && /token: (\S+)/.test(stderr),
		10000, 50);
	assert.ok(ok, `the server printed its URL and token: ${stderr}`);
	url = stderr.match(/at (http:\S+)/)[1];
	token = stderr.match(/token: (\S+)/)[1];
});

after(async () => {
	for (const id of created) {
		const c = await connect('stdio', 'pinned').catch(() => null);
		await c?.callTool({ name: 'sandbox_destroy', arguments: { sandbox_id: id } })
			.catch(() => {});
		await c?.close().catch(() => {});
	}
	server.kill('SIGTERM');
	const t = setTimeout(() => server.kill('SIGKILL'), 15000);
	await new Promise((resolve) => (server.exitCode !== null ? resolve() : server.on('exit', resolve)));
	clearTimeout(t);
	fs.rmSync(tmp, { recursive: true, force: true });
});

// The flow an agent runs, on one connection.
async function flow(c, kind, mode) {
	const tag = `${kind}-${mode}`;
	const tools = (await c.listTools()).tools.map((t) => t.name);
	for (const want of ['sandbox_create', 'sandbox_exec', 'sandbox_upload_dir',
		'sandbox_download', 'sandbox_port_forward', 'sandbox_destroy'])
		assert.ok(tools.includes(want), `${want} in tools/list`);

	const s = await call(c, 'sandbox_create', { name: `v2-${tag}` });
	const id = s.sandbox_id;
	created.add(id);
	assert.equal(s.state, 'running');
	assert.match(s.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/, 'RFC 3339');

	await call(c, 'sandbox_write_file', { sandbox_id: id, path: 'hello.txt',
		content: `hello ${tag}\n` });

	// Each progress message says what is new: no line comes twice.
	const seen = [];
	const ex = await call(c, 'sandbox_exec', { sandbox_id: id, command:
		'for i in 1 2 3 4 5 6 7 8; do echo line$i; sleep 0.2; done; cat hello.txt' },
	{ onprogress: (p) => seen.push(p) });
	assert.equal(ex.exit_code, 0);
	assert.equal(ex.stdout, 'line1\nline2\nline3\nline4\nline5\nline6\nline7\nline8\n'
		+ `hello ${tag}\n`);
	assert.ok(seen.length >= 3, `progress arrived: ${JSON.stringify(seen)}`);
	const lines = seen.flatMap((p) => (p.message ?? '').split('\n').filter(Boolean));
	assert.equal(new Set(lines).size, lines.length, `no line twice: ${JSON.stringify(seen)}`);
	assert.ok(lines.every((l) => /^(line\d|hello .*)$/.test(l)), JSON.stringify(lines));
	assert.ok(lines.length >= 3, `the messages carry the output: ${JSON.stringify(lines)}`);

	// A cancel (the SDK aborts: notifications/cancelled on stdio, closing the
	// stream on HTTP) kills the command in the sandbox.
	const mark = 700000 + Math.floor(Math.random() * 99999);
	const ac = new AbortController();
	const p = c.callTool({ name: 'sandbox_exec', arguments: { sandbox_id: id,
		command: `sleep ${mark}` } }, { signal: ac.signal, onprogress: () => {} });
	assert.ok(await until(() => pgrep(id, `[${String(mark)[0]}]${String(mark).slice(1)}`)),
		'the exec started');
	ac.abort('test');
	await assert.rejects(p);
	assert.ok(await until(() => pgrep(id, `[${String(mark)[0]}]${String(mark).slice(1)}`) === '',
		15000), 'the cancelled exec is gone from the sandbox');

	const src = path.join(tmp, `src-${tag}`);
	fs.mkdirSync(path.join(src, 'sub'), { recursive: true });
	fs.writeFileSync(path.join(src, 'a.txt'), 'A');
	fs.writeFileSync(path.join(src, 'sub', 'b.txt'), 'BB');
	const up = await call(c, 'sandbox_upload_dir', { sandbox_id: id, local_path: src,
		remote_path: 'proj' });
	assert.equal(up.files, 2);
	const dst = path.join(tmp, `dl-${tag}`);
	const dl = await call(c, 'sandbox_download', { sandbox_id: id, remote_path: 'proj',
		local_path: dst });
	assert.equal(dl.files, 2);
	const found = fs.readdirSync(dst, { recursive: true }).map(String);
	assert.ok(found.some((f) => f.endsWith('b.txt')), JSON.stringify(found));

	await call(c, 'sandbox_exec', { sandbox_id: id, command:
		`mkdir -p www && echo "served ${tag}" > www/index.html` });
	await call(c, 'sandbox_exec', { sandbox_id: id, background: true, command:
		'exec busybox httpd -f -p 127.0.0.1:8000 -h "$PWD/www"' });
	const fw = await call(c, 'sandbox_port_forward', { sandbox_id: id, remote_port: 8000 });
	let body = '';
	for (let i = 0; i < 40 && !body.includes('served'); i++) {
		body = await fetch(`${fw.url}/index.html`).then((r) => r.text()).catch(() => '');
		if (!body.includes('served'))
			await sleep(250);
	}
	assert.equal(body, `served ${tag}\n`, 'the forward reaches httpd in the sandbox');

	const d = await call(c, 'sandbox_destroy', { sandbox_id: id });
	created.delete(id);
	assert.equal(d.sandbox_id, id);
	const st = await c.callTool({ name: 'sandbox_status', arguments: { sandbox_id: id } });
	assert.equal(st.isError, true);
}

for (const kind of ['stdio', 'http']) {
	for (const mode of ['pinned', 'auto']) {
		test(`v2 client, ${mode}, over ${kind}: 2026-07-28 and the whole flow`, async () => {
			const c = await connect(kind, mode);
			try {
				assert.equal(c.getProtocolEra(), 'modern');
				assert.equal(c.getNegotiatedProtocolVersion(), MODERN);
				const info = c.getServerVersion?.();
				if (info)
					assert.equal(info.name, 'sbxtop');
				await flow(c, kind, mode);
			} finally {
				await c.close();
			}
		});
	}
}

// A raw JSON-RPC channel over one of the SDK's transports: the SDK's Client has
// no tasks API, but its transports carry any message (and, over HTTP, set the
// headers from the body).
async function channel(kind) {
	const t = kind === 'stdio' ? stdioTransport() : httpTransport();
	const waiting = new Map();
	const notes = [];
	t.onmessage = (m) => {
		if (m.id !== undefined && waiting.has(m.id)) {
			waiting.get(m.id)(m);
			waiting.delete(m.id);
		} else if (m.method)
			notes.push(m);
	};
	await t.start();
	t.setProtocolVersion?.(MODERN);
	let n = 0;
	const meta = { 'io.modelcontextprotocol/protocolVersion': MODERN,
		'io.modelcontextprotocol/clientInfo': { name: 'sdk2-tasks', version: '1' },
		'io.modelcontextprotocol/clientCapabilities': {
			extensions: { 'io.modelcontextprotocol/tasks': {} } } };
	return {
		notes,
		async req(method, params = {}) {
			const id = `t${++n}`;
			const r = new Promise((resolve) => waiting.set(id, resolve));
			await t.send({ jsonrpc: '2.0', id, method, params: { ...params, _meta: meta } });
			return r;
		},
		close: () => t.close(),
	};
}

async function pollTask(ch, taskId, done = (s) => s !== 'working', ms = 30000, messages = []) {
	const end = Date.now() + ms;
	for (;;) {
		const g = await ch.req('tasks/get', { taskId });
		assert.ok(g.result, `tasks/get: ${JSON.stringify(g)}`);
		assert.equal(g.result.resultType, 'complete');
		messages.push(g.result.statusMessage);
		if (done(g.result.status) || Date.now() > end)
			return g.result;
		await sleep(Math.min(g.result.pollIntervalMs ?? 500, 500));
	}
}

for (const kind of ['stdio', 'http']) {
	test(`a task over ${kind}: sandbox_exec as a task, polled, its output followed, and cancelled`,
		async () => {
			const c = await connect(kind, 'pinned');
			const s = await call(c, 'sandbox_create', {});
			created.add(s.sandbox_id);
			const ch = await channel(kind);
			try {
				const r = await ch.req('tools/call', { name: 'sandbox_exec', arguments: {
					sandbox_id: s.sandbox_id,
					command: 'echo first; sleep 1.5; echo second; sleep 1.5; echo third' } });
				assert.equal(r.result?.resultType, 'task', JSON.stringify(r));
				const taskId = r.result.taskId;
				assert.match(taskId, /^[0-9a-f]{32}$/);
				assert.equal(r.result.status, 'working');
				assert.ok(Number.isInteger(r.result.ttlMs) && r.result.ttlMs > 0);
				assert.ok(Number.isInteger(r.result.pollIntervalMs));
				assert.match(r.result.createdAt, /Z$/);

				// Following it: the status message shows the output as it comes.
				const first = [];
				const fin = await pollTask(ch, taskId, (st) => st !== 'working', 30000, first);
				const msgs = [];
				for (;;) {
					const g = await ch.req('tasks/get', { taskId });
					msgs.push(g.result.statusMessage);
					if (g.result.status !== 'working')
						break;
					await sleep(300);
				}
				assert.equal(fin.status, 'completed', JSON.stringify(fin));
				assert.equal(fin.result.isError, false);
				assert.equal(fin.result.structuredContent.stdout, 'first\nsecond\nthird\n');
				assert.equal(fin.result.structuredContent.exit_code, 0);
				assert.ok(first.some((m) => /^(first|second)$/m.test(m ?? '')),
					`the status followed the output: ${JSON.stringify(first)}`);
				assert.equal(msgs.at(-1), fin.statusMessage);

				// Cancelling a task kills its command.
				const mark = 600000 + Math.floor(Math.random() * 99999);
				const pat = `[${String(mark)[0]}]${String(mark).slice(1)}`;
				const r2 = await ch.req('tools/call', { name: 'sandbox_exec', arguments: {
					sandbox_id: s.sandbox_id, command: `sleep ${mark}` } });
				assert.equal(r2.result?.resultType, 'task');
				assert.ok(await until(() => pgrep(s.sandbox_id, pat)), 'the task\'s command runs');
				const cx = await ch.req('tasks/cancel', { taskId: r2.result.taskId });
				assert.equal(cx.result?.resultType, 'complete', JSON.stringify(cx));
				const after2 = await pollTask(ch, r2.result.taskId);
				assert.equal(after2.status, 'cancelled');
				assert.ok(await until(() => pgrep(s.sandbox_id, pat) === '', 15000),
					'the cancelled task\'s command is gone');

				// An unknown task: invalid params, naming the rule.
				const u = await ch.req('tasks/get', { taskId: 'f'.repeat(32) });
				assert.equal(u.error?.code, -32602);
				assert.match(u.error.message, /Unknown task/);
			} finally {
				await ch.close();
				await call(c, 'sandbox_destroy', { sandbox_id: s.sandbox_id }).catch(() => {});
				created.delete(s.sandbox_id);
				await c.close();
			}
		});
}

test('v2 client, pinned: a legacy 1.x-era initialize on the same server still works', async () => {
	const raw = new Raw();
	try {
		const r = await raw.initialize('2025-06-18');
		assert.equal(r.result.protocolVersion, '2025-06-18');
		assert.equal(r.result.resultType, undefined, 'legacy results are as they were');
		const l = await raw.request(1, 'tools/list', {});
		assert.ok(l.result.tools.length > 5);
		assert.equal(l.result.ttlMs, undefined);
	} finally {
		await raw.close();
	}
});

test("Claude Code's probe line on stdio gets a discover result offering 2026-07-28", async () => {
	const raw = new Raw();
	try {
		await raw.write('{"jsonrpc":"2.0","id":"server-discover-probe-1","method":"server/discover",'
			+ '"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
			+ '"io.modelcontextprotocol/clientInfo":{"name":"claude-code","version":"2.1.332"},'
			+ '"io.modelcontextprotocol/clientCapabilities":{"roots":{},"elicitation":{}}}}}\n');
		const r = await raw.reply('server-discover-probe-1');
		assert.ok(r.result, JSON.stringify(r));
		assert.ok(r.result.supportedVersions.includes(MODERN));
		assert.equal(r.result.supportedVersions[0], MODERN);
		assert.equal(r.result.resultType, 'complete');
		assert.ok(r.result.capabilities.tools);
		assert.ok(r.result.capabilities.extensions['io.modelcontextprotocol/tasks']);
		assert.equal(r.result._meta['io.modelcontextprotocol/serverInfo'].name, 'sbxtop');
		assert.ok(Number.isInteger(r.result.ttlMs));
		assert.match(r.result.instructions, /sandbox_create/);
		// Then an ordinary modern call, with no initialize ever.
		const l = await raw.request(2, 'tools/list', { _meta: {
			'io.modelcontextprotocol/protocolVersion': MODERN,
			'io.modelcontextprotocol/clientCapabilities': {} } });
		assert.ok(l.result.tools.some((t) => t.name === 'sandbox_exec'));
		assert.equal(l.result.cacheScope, 'public');
		// Removed methods: method not found, saying what replaced them.
		const p = await raw.request(3, 'ping', { _meta: {
			'io.modelcontextprotocol/protocolVersion': MODERN,
			'io.modelcontextprotocol/clientCapabilities': {} } });
		assert.equal(p.error.code, -32601);
		// An unsupported version: -32022 listing the supported ones.
		const v = await raw.request(4, 'server/discover', { _meta: {
			'io.modelcontextprotocol/protocolVersion': '2099-01-01',
			'io.modelcontextprotocol/clientCapabilities': {} } });
		assert.equal(v.error.code, -32022);
		assert.deepEqual(v.error.data.requested, '2099-01-01');
		assert.ok(v.error.data.supported.includes(MODERN));
		assert.ok(v.error.data.supported.includes('2025-11-25'));
		assert.match(v.error.message, /2026-07-28/);
	} finally {
		await raw.close();
	}
});
