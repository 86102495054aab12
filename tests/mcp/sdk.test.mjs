// sbxtop --mcp through the official TypeScript SDK client: tools, a real exec in
// a real sandbox, progress, cancellation, concurrent calls, tool errors,
// resources, logging.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { CallToolResultSchema, LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { connect, createSandbox, destroySandbox, pgrep, until, sleep } from './lib.mjs';

let sbx, client;

before(async () => {
	sbx = createSandbox();
	client = await connect();
});
after(async () => {
	await client?.close();
	if (sbx) destroySandbox(sbx);
});

const text = (r) => r.content.map((c) => c.text).join('\n');

test('the server introduces itself', () => {
	assert.equal(client.getServerVersion().name, 'sbxtop');
	assert.match(client.getInstructions(), /create.*upload.*exec.*download.*destroy/s);
	assert.ok(client.getServerCapabilities().tools);
	assert.ok(client.getServerCapabilities().resources);
	assert.ok(client.getServerCapabilities().logging);
});

// A hint as a client takes it: what the tool says, else the revision's default.
const DEFAULT_HINTS = { readOnlyHint: false, destructiveHint: true, idempotentHint: false,
	openWorldHint: true };
const hint = (t, h) => t.annotations?.[h] ?? DEFAULT_HINTS[h];

test('tools/list: every tool has schemas, a title and annotations, in 12 KB in all', async () => {
	const { tools } = await client.listTools();
	const names = tools.map((t) => t.name);
	assert.ok(names.includes('sandbox_exec') && names.includes('sandbox_list'), names.join());
	for (const t of tools) {
		assert.match(t.name, /^sandbox_[a-z_]+$/);
		assert.ok(t.title, `${t.name} title`);
		assert.ok(t.description.length > 10, `${t.name} description`);
		assert.equal(t.inputSchema.type, 'object', `${t.name} inputSchema`);
		assert.equal(t.outputSchema?.type, 'object', `${t.name} outputSchema`);
		assert.equal(hint(t, 'openWorldHint'), t.name === 'sandbox_net_request', `${t.name} openWorld`);
		// The title is said once, at the top.
		assert.equal(t.annotations.title, undefined, `${t.name} annotations.title`);
		// Every sandbox is named the same way, mirrored into a header (SEP-2243).
		if (t.inputSchema.properties.sandbox_id)
			assert.equal(t.inputSchema.properties.sandbox_id['x-mcp-header'], 'Sandbox', t.name);
	}
	const by = Object.fromEntries(tools.map((t) => [t.name, t]));
	assert.equal(hint(by.sandbox_list, 'readOnlyHint'), true);
	assert.equal(hint(by.sandbox_exec, 'readOnlyHint'), false);
	assert.equal(hint(by.sandbox_exec, 'destructiveHint'), false, 'exec is not destructive');
	assert.equal(hint(by.sandbox_destroy, 'destructiveHint'), true);
	assert.equal(hint(by.sandbox_destroy, 'idempotentHint'), true);
	assert.equal(hint(by.sandbox_create, 'idempotentHint'), false);
	// What every agent carries in its context on each turn: 12 KB at most.
	const size = Buffer.byteLength(JSON.stringify({ tools }));
	assert.ok(size <= 12 * 1024, `tools/list is ${size} bytes of JSON`);
});

test('sandbox_list shows the sandbox, as structuredContent and as text for a model', async () => {
	const r = await client.callTool({ name: 'sandbox_list', arguments: {} });
	assert.equal(r.isError, false);
	const mine = r.structuredContent.sandboxes.find((s) => s.sandbox_id === sbx);
	assert.equal(mine?.state, 'running');
	assert.equal(r.structuredContent.total, r.structuredContent.sandboxes.length);
	// The text is a rendering, not the JSON again: a line per sandbox.
	assert.throws(() => JSON.parse(r.content[0].text));
	assert.match(r.content[0].text, new RegExp(`^${sbx}: running, ns, \\d+ h \\d+ min left`, 'm'));
});

test('sandbox_exec runs a command in the sandbox', async () => {
	const r = await client.callTool({ name: 'sandbox_exec', arguments: {
		sandbox_id: sbx, command: 'echo out; echo err >&2; hostname >/dev/null; exit 7' } });
	assert.equal(r.isError, false, text(r));
	assert.equal(r.structuredContent.exit_code, 7);
	assert.equal(r.structuredContent.stdout, 'out\n');
	assert.equal(r.structuredContent.stderr, 'err\n');
	// It really ran inside: the sandbox's workspace, not the host's cwd.
	const pwd = await client.callTool({ name: 'sandbox_exec', arguments: { sandbox_id: sbx,
		command: 'pwd' } });
	assert.equal(pwd.structuredContent.stdout, '/workspace\n');
});

test('progress notifications carry the output of a running exec', async () => {
	const seen = [];
	const t0 = Date.now();
	const r = await client.callTool({ name: 'sandbox_exec', arguments: { sandbox_id: sbx,
		command: 'for i in 1 2 3 4 5 6 7 8 9 10; do echo line$i; sleep 0.2; done' } },
	CallToolResultSchema, { onprogress: (p) => seen.push({ ...p, at: Date.now() - t0 }) });
	assert.equal(r.structuredContent.exit_code, 0);
	assert.ok(seen.length >= 3, `progress notifications: ${JSON.stringify(seen)}`);
	for (let i = 1; i < seen.length; i++)
		assert.ok(seen[i].progress > seen[i - 1].progress, 'progress grows');
	// The message holds the latest output lines, newest last.
	assert.ok(seen.every((p) => p.message.split('\n').every((l) => /^line\d+$/.test(l))),
		JSON.stringify(seen));
	assert.match(seen[seen.length - 1].message, /line(9|10)$/);
	assert.ok(seen[0].at < 1500, `the first came early (${seen[0].at} ms)`);
});

test('cancelling a long exec kills it in the sandbox', async () => {
	const ac = new AbortController();
	const call = client.callTool({ name: 'sandbox_exec', arguments: { sandbox_id: sbx,
		command: 'sleep 876542' } }, CallToolResultSchema, { signal: ac.signal });
	assert.ok(await until(() => pgrep(sbx, '[8]76542')), 'the exec started');
	ac.abort('test');
	await assert.rejects(call);
	assert.ok(await until(() => pgrep(sbx, '[8]76542') === '', 10000), 'the exec is gone');
	// The session goes on.
	await client.ping();
});

test('20 concurrent calls while a slow exec runs; ping stays fast', async () => {
	const slow = client.callTool({ name: 'sandbox_exec', arguments: { sandbox_id: sbx,
		command: 'sleep 3; echo slow' } });
	await sleep(200);
	const t0 = Date.now();
	await client.ping();
	const pingMs = Date.now() - t0;
	const calls = [];
	for (let i = 0; i < 20; i++) {
		calls.push(i % 2
			? client.callTool({ name: 'sandbox_exec', arguments: { sandbox_id: sbx,
				command: `echo n${i}` } })
			: client.callTool({ name: 'sandbox_list', arguments: {} }));
	}
	const rs = await Promise.all(calls);
	const fastMs = Date.now() - t0;
	rs.forEach((r, i) => {
		assert.equal(r.isError, false, text(r));
		if (i % 2)
			assert.equal(r.structuredContent.stdout, `n${i}\n`);
		else
			assert.ok(r.structuredContent.sandboxes.some((s) => s.sandbox_id === sbx));
	});
	const s = await slow;
	const slowMs = Date.now() - t0;
	assert.equal(s.structuredContent.stdout, 'slow\n');
	assert.ok(pingMs < 1000, `ping took ${pingMs} ms`);
	assert.ok(fastMs < slowMs, `the 20 calls (${fastMs} ms) finished before the slow one (${slowMs} ms)`);
});

test('wrong argument types: isError naming the field and the type', async () => {
	let r = await client.callTool({ name: 'sandbox_exec', arguments: { sandbox_id: 42,
		command: 'true' } });
	assert.equal(r.isError, true);
	assert.match(text(r), /sandbox_id/);
	assert.match(text(r), /string/);
	r = await client.callTool({ name: 'sandbox_exec', arguments: { sandbox_id: sbx } });
	assert.equal(r.isError, true);
	assert.match(text(r), /command: required/);
	r = await client.callTool({ name: 'sandbox_exec', arguments: { sandbox_id: sbx,
		command: 'true', timeout_s: 'soon' } });
	assert.match(text(r), /timeout_s: expected integer/);
	r = await client.callTool({ name: 'sandbox_exec', arguments: { sandbox_id: sbx,
		command: 'true', timeout_s: 99999 } });
	assert.match(text(r), /timeout_s must be between 1 and 3600 seconds/);
	r = await client.callTool({ name: 'sandbox_exec', arguments: { sandbox_id: sbx,
		command: 'true', bogus: 1 } });
	assert.match(text(r), /bogus: unknown field/);
});

test('an unknown sandbox: isError that says to run sandbox_list', async () => {
	const r = await client.callTool({ name: 'sandbox_exec', arguments: {
		sandbox_id: 'sbx-000000', command: 'true' } });
	assert.equal(r.isError, true);
	assert.match(text(r), /sbx-000000/);
	assert.match(text(r), /sandbox_list/);
});

test('an unknown tool is a protocol error naming tools/list', async () => {
	await assert.rejects(client.callTool({ name: 'sandbox_teleport', arguments: {} }),
		(e) => e.code === -32602 && /tools\/list/.test(e.message));
});

test('resources: each sandbox log is listed and readable', async () => {
	const { resources } = await client.listResources();
	const mine = resources.find((r) => r.uri === `sbx://${sbx}/logs`);
	assert.ok(mine, JSON.stringify(resources));
	assert.equal(mine.mimeType, 'text/plain');
	const { contents } = await client.readResource({ uri: mine.uri });
	assert.equal(contents[0].uri, mine.uri);
	assert.match(contents[0].text, /sbxtop-agent/);
	const { resourceTemplates } = await client.listResourceTemplates();
	assert.equal(resourceTemplates[0].uriTemplate, 'sbx://{sandbox_id}/logs');
	await assert.rejects(client.readResource({ uri: 'sbx://sbx-000000/logs' }),
		(e) => e.code === -32002);
	await assert.rejects(client.readResource({ uri: 'file:///etc/passwd' }),
		(e) => e.code === -32002);
});

test('logging/setLevel: debug messages about the calls arrive, then stop', async () => {
	const got = [];
	client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => got.push(n.params));
	await client.setLoggingLevel('debug');
	await client.callTool({ name: 'sandbox_list', arguments: {} });
	assert.ok(await until(() => got.some((m) => /sandbox_list: ok/.test(m.data)), 3000),
		JSON.stringify(got));
	await client.setLoggingLevel('warning');
	got.length = 0;
	await client.callTool({ name: 'sandbox_list', arguments: {} });
	await client.ping();
	assert.deepEqual(got, []);
});
