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
import { execFileSync } from 'node:child_process';
import net from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { SBXTOP, Raw, pgrep, until, sleep, listen, stopListener } from './lib.mjs';

const MODERN = '2026-07-28';
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sbxtop-sdk2-'));
const created = new Set();
let server, url, token;

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
	({ proc: server, url, token } = await listen());
});

after(async () => {
	for (const id of created) {
		const c = await connect('stdio', 'pinned').catch(() => null);
		await c?.callTool({ name: 'sandbox_destroy', arguments: { sandbox_id: id } })
			.catch(() => {});
		await c?.close().catch(() => {});
	}
	await stopListener(server);
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
		meta,
		send: (msg) => t.send(msg),
		async req(method, params = {}) {
			const id = `t${++n}`;
			const r = new Promise((resolve) => waiting.set(id, resolve));
			// The argument tools/list marks x-mcp-header goes in its header too
			// (SEP-2243), as the SDK's Client does: the server checks it.
			const sid = params.arguments?.sandbox_id;
			await t.send({ jsonrpc: '2.0', id, method, params: { ...params, _meta: meta } },
				sid === undefined ? undefined : { headers: { 'Mcp-Param-Sandbox': sid } });
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
				// Its status is pushed too, to a subscription that names it.
				await ch.send({ jsonrpc: '2.0', id: 'listen-1', method: 'subscriptions/listen',
					params: { notifications: { taskIds: [taskId] }, _meta: ch.meta } });

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
				const tag = (m) => m.params?._meta?.['io.modelcontextprotocol/subscriptionId'];
				assert.ok(await until(() => ch.notes.some((m) => m.method === 'notifications/tasks'
					&& m.params.taskId === taskId && m.params.status === 'completed'), 5000),
				`notifications/tasks said completed: ${JSON.stringify(ch.notes)}`);
				const ack = ch.notes.find((m) => m.method === 'notifications/subscriptions/acknowledged');
				assert.deepEqual(ack?.params.notifications.taskIds, [taskId]);
				assert.ok(ch.notes.filter((m) => m.method === 'notifications/tasks')
					.every((m) => tag(m) === 'listen-1'), 'tagged with the subscription');

				// An upload runs as a task too.
				const src = path.join(tmp, `task-up-${kind}`);
				fs.mkdirSync(src, { recursive: true });
				fs.writeFileSync(path.join(src, 'x.txt'), 'X');
				const up = await ch.req('tools/call', { name: 'sandbox_upload_dir', arguments: {
					sandbox_id: s.sandbox_id, local_path: src, remote_path: 'up' } });
				assert.equal(up.result?.resultType, 'task', JSON.stringify(up));
				const upd = await pollTask(ch, up.result.taskId);
				assert.equal(upd.status, 'completed');
				assert.equal(upd.result.structuredContent.files, 1);

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

// A raw client of the core server's socket, as the console is one.
async function coreSocket(kind = 'console') {
	const sock = net.connect(path.join(process.env.XDG_RUNTIME_DIR, 'sbxtop', 'core.sock'));
	await new Promise((resolve, reject) => { sock.once('connect', resolve); sock.once('error', reject); });
	const msgs = [];
	let acc = '', n = 0;
	sock.setEncoding('utf8');
	sock.on('data', (d) => {
		acc += d;
		let i;
		while ((i = acc.indexOf('\n')) >= 0) {
			msgs.push(JSON.parse(acc.slice(0, i)));
			acc = acc.slice(i + 1);
		}
	});
	const wait = async (pred, ms = 20000) => {
		const m = await until(() => msgs.find(pred), ms, 20);
		assert.ok(m, `no matching message in ${ms} ms`);
		return m;
	};
	const call = async (method, params = {}) => {
		const id = ++n;
		sock.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
		return wait((m) => m.id === id && !m.method);
	};
	const version = execFileSync(SBXTOP, ['--version'], { encoding: 'utf8' }).split(/\s+/)[1];
	await call('sbxtop/hello', { client: { kind, name: 'sdk2-console', pid: process.pid, version } });
	return { msgs, wait, call, close: () => sock.destroy() };
}

const event = (type, pred = () => true) => (m) => m.method === 'sbxtop/event' &&
	m.params.type === type && pred(m.params.data ?? {});

test('a modern client through the core server: its calls in the journal, held by the gate, '
	+ 'told that a human decides', async () => {
	const raw = new Raw();
	const meta = (extra = {}) => ({ 'io.modelcontextprotocol/protocolVersion': MODERN,
		'io.modelcontextprotocol/clientInfo': { name: 'modern-agent', version: '1.0' },
		'io.modelcontextprotocol/clientCapabilities': { elicitation: {} }, ...extra });
	await raw.request(1, 'server/discover', { _meta: meta() });
	const con = await coreSocket();
	try {
		await con.call('sbxtop/subscribe', { from: 0 });
		assert.ok((await con.call('sbxtop/approve_mode', { mode: 'all' })).result);
		await raw.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: {
			name: 'sandbox_list', arguments: {}, _meta: meta({ progressToken: 'held-1' }) } });
		const req = await con.wait(event('approval.requested', (d) => d.tool === 'sandbox_list'));
		assert.equal(req.params.data.client, 'modern-agent 1.0');
		// Before anyone answers, the client hears why it waits.
		const note = await raw.waitFor((m) => m.method === 'notifications/progress'
			&& m.params.progressToken === 'held-1');
		assert.match(note.params.message, /held for approval .* a human in the sbxtop console is deciding/);
		assert.equal(raw.lines.some((m) => m.id === 2), false, 'no answer while it is held');
		await con.call('sbxtop/approve', { id: req.params.data.id, allow: true });
		const ans = await raw.reply(2);
		assert.equal(ans.result.isError, false, JSON.stringify(ans));
		assert.equal(ans.result.resultType, 'complete');
		const fin = await con.wait(event('tool.finished', (d) => d.client === 'modern-agent 1.0'));
		assert.equal(fin.params.data.tool, 'sandbox_list');
		assert.equal(fin.params.data.outcome, 'ok');
		assert.equal(fin.params.data.protocol, MODERN);
		const st = con.msgs.find(event('tool.started', (d) => d.client === 'modern-agent 1.0'));
		assert.ok(st, 'tool.started is in the journal too');
		assert.equal(st.params.data.kind, 'mcp');
		// The console's client list names it, though it never sent initialize.
		const cl = await con.call('sbxtop/clients');
		assert.ok(cl.result.clients.some((x) => x.mcp_client === 'modern-agent 1.0'),
			JSON.stringify(cl.result.clients));
	} finally {
		await con.call('sbxtop/approve_mode', { mode: 'none' }).catch(() => {});
		con.close();
		await raw.close();
	}
});

test('a task in the journal: task.created and task.finished, with its tool and client', async () => {
	const con = await coreSocket('cli');
	const raw = new Raw();
	try {
		await con.call('sbxtop/subscribe', { from: 0 });
		const meta = { 'io.modelcontextprotocol/protocolVersion': MODERN,
			'io.modelcontextprotocol/clientInfo': { name: 'task-agent', version: '2' },
			'io.modelcontextprotocol/clientCapabilities': {
				extensions: { 'io.modelcontextprotocol/tasks': {} } } };
		const c = await raw.request(1, 'tools/call', { name: 'sandbox_create', arguments: {},
			_meta: meta });
		const id = c.result.structuredContent.sandbox_id;
		created.add(id);
		const r = await raw.request(2, 'tools/call', { name: 'sandbox_exec', arguments: {
			sandbox_id: id, command: 'echo tasked' }, _meta: meta });
		assert.equal(r.result.resultType, 'task');
		const tid = r.result.taskId;
		const made = await con.wait(event('task.created', (d) => d.task_id === tid));
		assert.equal(made.params.sandbox, id);
		assert.deepEqual([made.params.data.tool, made.params.data.client, made.params.data.status],
			['sandbox_exec', 'task-agent 2', 'working']);
		const done = await con.wait(event('task.finished', (d) => d.task_id === tid));
		assert.equal(done.params.data.status, 'completed');
		assert.ok(done.params.data.duration_ms >= 0);
		const tf = await con.wait(event('tool.finished', (d) => d.task_id === tid));
		assert.equal(tf.params.data.outcome, 'ok');
		await raw.request(3, 'tools/call', { name: 'sandbox_destroy', arguments: { sandbox_id: id },
			_meta: meta });
		created.delete(id);
	} finally {
		con.close();
		await raw.close();
	}
});

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
