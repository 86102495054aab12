// What a model reads, through the official TypeScript SDK client: every tool
// result within its budget (20,000 characters unless set), its status first,
// what it left out said and reachable: a 2 MB build that fails at its end, its
// whole output paged back from the sandbox to the last byte, a listing of /
// breadth first with its total and a working cursor, a 1 MB text file and a
// binary one read by offset, 200 background commands; the budget set per
// call, at initialize and by the mcp_budget option, and refused out of its
// limits.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { connect, createSandbox, destroySandbox, Raw, SBXTOP } from './lib.mjs';

const BUDGET = 20000;
let sbx, client;

before(async () => {
	sbx = createSandbox();
	client = await connect('budget-tests');
});
after(async () => {
	await client?.close();
	if (sbx) destroySandbox(sbx);
});

const text = (r) => r.content.map((c) => c.text).join('\n');
const chars = (s) => s.length;		// what a client counts: UTF-16 units
const jsonSize = (o) => Buffer.byteLength(JSON.stringify(o));

async function call(name, args, meta) {
	const r = await client.callTool(meta ? { name, arguments: args, _meta: meta } :
		{ name, arguments: args }, CallToolResultSchema, { timeout: 120000 });
	assert.equal(r.isError, false, `${name}: ${text(r)}`);
	return r;
}

// Within the budget: the text, and the object for programs.
function fits(r, budget = BUDGET) {
	assert.ok(chars(text(r)) <= budget, `text: ${chars(text(r))} characters`);
	assert.ok(jsonSize(r.structuredContent) <= budget,
		`structuredContent: ${jsonSize(r.structuredContent)} bytes`);
}

const BUILD = 'seq -f %09g 1 200000; echo "error: the last line" >&2; exit 3';
const seqOut = () => execFileSync('seq', ['-f', '%09g', '1', '200000'], { encoding: 'utf8',
	maxBuffer: 4 << 20 });

test('a 2 MB build failing at its end: the status first, the end of each stream, '
	+ 'what was left out and where it is', async () => {
	const r = await call('sandbox_exec', { sandbox_id: sbx, command: BUILD });
	fits(r);
	const t = text(r), sc = r.structuredContent;
	assert.match(t, /^exit 3 after [0-9.]+ m?s \(exec x\d+\)\n/);
	assert.match(t, /^stdout: 2,000,000 bytes; the first [\d,]+ and the last [\d,]+ below$/m);
	// The end of the output is there: stdout's last line, and stderr (last).
	assert.match(t, /000200000\n/);
	assert.ok(t.endsWith('error: the last line'), t.slice(-200));
	assert.equal(sc.exit_code, 3);
	assert.equal(sc.stdout_bytes, 2000000);
	assert.equal(sc.stderr, 'error: the last line\n');
	assert.equal(sc.truncated, true);
	assert.ok(sc.stdout_tail.endsWith('000199999\n000200000\n'));
	// Its head, the gap and the tail are the whole stream, and the text says so.
	const gap = sc.stdout_omitted;
	assert.equal(gap.offset, Buffer.byteLength(sc.stdout));
	assert.equal(gap.offset + gap.length + Buffer.byteLength(sc.stdout_tail), 2000000);
	assert.ok(sc.stdout_tail.length > 4 * sc.stdout.length, 'the tail gets the larger share');
	assert.match(sc.stdout_path, /^\/tmp\/sbxtop\/exec-x\d+(\.\d+)?\.stdout$/);
	assert.ok(t.includes(`sandbox_read_file path ${sc.stdout_path} offset ${gap.offset} `
		+ `length ${gap.length}`), t.slice(0, 600));
	// Page through the whole of it, as the text says, to the last byte.
	const whole = seqOut();
	let got = '', off = 0, pages = 0;
	for (;;) {
		const p = await call('sandbox_read_file', { sandbox_id: sbx, path: sc.stdout_path,
			offset: off });
		fits(p);
		assert.equal(p.structuredContent.size, 2000000);
		assert.equal(p.structuredContent.offset, off);
		got += p.structuredContent.content;
		off += p.structuredContent.length;
		pages++;
		if (!p.structuredContent.truncated)
			break;
		assert.equal(p.structuredContent.next_offset, off);
		assert.match(text(p), new RegExp(`the next page: offset ${off}$`, 'm'));
	}
	assert.equal(off, 2000000);
	assert.equal(crypto.createHash('sha256').update(got).digest('hex'),
		crypto.createHash('sha256').update(whole).digest('hex'), `paged in ${pages} pages`);
	// What was left out, by the offset and length the result named.
	const mid = await call('sandbox_read_file', { sandbox_id: sbx, path: sc.stdout_path,
		offset: gap.offset, length: 100 });
	assert.equal(mid.structuredContent.content, whole.slice(gap.offset, gap.offset + 100));
});

test('the budget: per call, at initialize, from mcp_budget, and refused outside its limits',
	async () => {
		// Per call, in the request's _meta.
		const big = await call('sandbox_exec', { sandbox_id: sbx, command: BUILD },
			{ 'sbxtop/budget': 60000 });
		fits(big, 60000);
		assert.ok(chars(text(big)) > 40000, `${chars(text(big))} characters`);
		const small = await call('sandbox_exec', { sandbox_id: sbx, command: BUILD },
			{ 'sbxtop/budget': 3000 });
		fits(small, 3000);
		assert.match(text(small), /^exit 3 after/);
		assert.ok(text(small).endsWith('error: the last line'));
		for (const bad of [1999, 200001, 'lots', 1.5]) {
			await assert.rejects(client.callTool({ name: 'sandbox_list', arguments: {},
				_meta: { 'sbxtop/budget': bad } }), (e) => e.code === -32602 &&
				/sbxtop\/budget.*2000 to 200000/.test(e.message), String(bad));
		}
		// At initialize, for the whole session.
		const raw = new Raw();
		try {
			const init = await raw.request(0, 'initialize', { protocolVersion: '2025-11-25',
				capabilities: {}, clientInfo: { name: 'budget-init', version: '1' },
				_meta: { 'sbxtop/budget': 4000 } });
			assert.equal(init.result._meta['sbxtop/budget'], 4000);
			await raw.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
			const r = await raw.request(1, 'tools/call', { name: 'sandbox_exec',
				arguments: { sandbox_id: sbx, command: BUILD } }, 60000);
			assert.ok(chars(r.result.content[0].text) <= 4000);
			assert.ok(jsonSize(r.result.structuredContent) <= 4000);
			assert.ok(r.result.content[0].text.endsWith('error: the last line'));
		} finally {
			await raw.close();
		}
		const bad = new Raw();
		try {
			const r = await bad.request(0, 'initialize', { protocolVersion: '2025-11-25',
				capabilities: {}, clientInfo: { name: 'budget-bad', version: '1' },
				_meta: { 'sbxtop/budget': 10 } });
			assert.equal(r.error?.code, -32602);
			assert.match(r.error.message, /integer from 2000 to 200000/);
		} finally {
			await bad.close();
		}
		// The mcp_budget option of sbxtop --mcp, told to the core server it uses.
		const env = { ...process.env, SBXTOP_MCP_BUDGET: '5000' };
		const opt = new Raw(['--mcp'], env);
		try {
			const init = await opt.initialize();
			assert.equal(init.result._meta['sbxtop/budget'], 5000);
			const r = await opt.request(1, 'tools/call', { name: 'sandbox_exec',
				arguments: { sandbox_id: sbx, command: BUILD } }, 60000);
			assert.ok(chars(r.result.content[0].text) <= 5000);
			assert.ok(chars(r.result.content[0].text) > 3000);
		} finally {
			await opt.close();
		}
		const worse = execFileSync('sh', ['-c', `SBXTOP_MCP_BUDGET=9 '${SBXTOP}' --mcp `
			+ '</dev/null 2>&1; echo "status $?"'], { encoding: 'utf8' });
		assert.match(worse, /SBXTOP_MCP_BUDGET.*2000 to 200000/);
		assert.match(worse, /status [1-9]/);
	});

test('a recursive listing of /: breadth first, /workspace first, counts, a total and '
	+ 'a cursor that pages on', async () => {
	await call('sandbox_exec', { sandbox_id: sbx, command:
		'mkdir -p proj/src proj/node_modules/dep && touch proj/src/a.c proj/node_modules/dep/x.js' });
	const r = await call('sandbox_list_files', { sandbox_id: sbx, path: '/', recursive: true });
	fits(r);
	const sc = r.structuredContent, t = text(r);
	const paths = sc.entries.map((e) => e.path);
	assert.equal(paths[0], '/workspace', 'the agent\'s own work first');
	assert.ok(paths.includes('/workspace/proj/src/a.c'), paths.slice(0, 12).join(' '));
	const nm = sc.entries.find((e) => e.path === '/workspace/proj/node_modules');
	assert.deepEqual([nm.folded, nm.entries], ['name', 1]);
	assert.ok(!paths.some((p) => p.startsWith('/workspace/proj/node_modules/')));
	const proc = sc.entries.find((e) => e.path === '/proc');
	assert.equal(proc?.folded, 'filesystem');
	assert.ok(sc.total > sc.entries.length, `${sc.total} in all`);
	assert.match(t, new RegExp(`^/ \\(its tree, level by level, the workspace first\\): [\\d,]+ `
		+ `entries in total; 1 to ${sc.entries.length} below; the next page: cursor "${sc.next_cursor}"`));
	assert.match(t, /^\/workspace\/proj\/node_modules\/  1 entry, not listed: tools' files$/m);
	// The next page starts where this one ended: the two are the listing's
	// first entries, as one larger page has them.
	const r2 = await call('sandbox_list_files', { sandbox_id: sbx, path: '/', recursive: true,
		cursor: sc.next_cursor });
	fits(r2);
	const both = [...paths, ...r2.structuredContent.entries.map((e) => e.path)];
	const wide = await call('sandbox_list_files', { sandbox_id: sbx, path: '/', recursive: true },
		{ 'sbxtop/budget': 200000 });
	assert.deepEqual(wide.structuredContent.entries.slice(0, both.length).map((e) => e.path), both);
	assert.equal(wide.structuredContent.total, sc.total);
	const bad = await client.callTool({ name: 'sandbox_list_files', arguments: {
		sandbox_id: sbx, cursor: 'page-two' } });
	assert.equal(bad.isError, true);
	assert.match(text(bad), /cursor "page-two" is not one this tool gave/);
});

test('a 1 MB text file by offset and length, a binary file said to be one', async () => {
	await call('sandbox_exec', { sandbox_id: sbx, command:
		'seq -f %015g 1 65536 > big.txt && head -c 5000 /dev/urandom > noise.bin' });
	const r = await call('sandbox_read_file', { sandbox_id: sbx, path: 'big.txt' });
	fits(r);
	const sc = r.structuredContent;
	assert.equal(sc.size, 1048576);
	assert.equal(sc.offset, 0);
	assert.equal(sc.truncated, true);
	assert.equal(sc.next_offset, sc.length);
	assert.match(text(r), new RegExp(`^/workspace/big.txt: 1,048,576 bytes; bytes 0 to `
		+ `[\\d,]+ below; the next page: offset ${sc.next_offset}\\n000000000000001\\n`));
	const end = await call('sandbox_read_file', { sandbox_id: sbx, path: 'big.txt',
		offset: 1048576 - 32 });
	assert.equal(end.structuredContent.content, '000000000065535\n000000000065536\n');
	assert.equal(end.structuredContent.truncated, false);
	const some = await call('sandbox_read_file', { sandbox_id: sbx, path: 'big.txt',
		offset: 16, length: 16 });
	assert.equal(some.structuredContent.content, '000000000000002\n');
	// An executable: said to be binary, what it is, its first bytes; no base64.
	const elf = await call('sandbox_read_file', { sandbox_id: sbx, path: '/bin/true' });
	assert.equal(elf.structuredContent.binary, true);
	assert.equal(elf.structuredContent.content, '');
	assert.match(text(elf), /^\/bin\/true: [\d,]+ bytes, binary \(an ELF executable or library\), not shown as text\. Its first bytes: 7f 45 4c 46 /);
	assert.ok(text(elf).length < 500);
	const noise = await call('sandbox_read_file', { sandbox_id: sbx, path: 'noise.bin' });
	assert.equal(noise.structuredContent.binary, true);
	assert.doesNotMatch(text(noise), /[A-Za-z0-9+/]{40}/, 'no base64 in the text');
	// Asked for, its bytes come base64, a page within the budget.
	const b64 = await call('sandbox_read_file', { sandbox_id: sbx, path: 'noise.bin',
		encoding: 'base64', length: 3000 });
	fits(b64);
	assert.equal(b64.structuredContent.length, 3000);
	assert.equal(Buffer.from(b64.structuredContent.content, 'base64').length, 3000);
});

test('200 background commands: the running ones, totals and pages', async () => {
	const ids = new Set();
	for (let i = 0; i < 200; i += 20) {
		const rs = await Promise.all(Array.from({ length: 20 }, (_, k) => call('sandbox_exec', {
			sandbox_id: sbx, background: true, command: `exec sleep ${900 + i + k}` })));
		for (const x of rs)
			ids.add(x.structuredContent.exec_id);
	}
	try {
		const r = await call('sandbox_process_list', { sandbox_id: sbx });
		fits(r);
		const sc = r.structuredContent;
		assert.ok(sc.running >= 200, `${sc.running} running`);
		assert.match(text(r), /^\d+ commands: \d{3} running, \d+ ended/);
		assert.ok(sc.next_cursor, 'more than one page');
		assert.ok(sc.processes.slice(0, 200).every((p) => p.state === 'running'),
			'the running ones first');
		const seen = new Set(sc.processes.map((p) => p.exec_id));
		for (let cur = sc.next_cursor; cur;) {
			const p = await call('sandbox_process_list', { sandbox_id: sbx, cursor: cur });
			fits(p);
			for (const x of p.structuredContent.processes) {
				assert.ok(!seen.has(x.exec_id), `${x.exec_id} twice`);
				seen.add(x.exec_id);
			}
			cur = p.structuredContent.next_cursor;
		}
		for (const id of ids)
			assert.ok(seen.has(id), `${id} listed`);
	} finally {
		await call('sandbox_exec', { sandbox_id: sbx, command: 'pkill -f "^sleep 9" || true',
			as_root: true });
	}
});

test('every tool\'s result stays within the budget, its status first', async () => {
	const small = [
		['sandbox_status', { sandbox_id: sbx }, /^sbx-[0-9a-f]+: running, ns, /],
		['sandbox_vm_logs', { sandbox_id: sbx }, /^[\d,]+ log lines?/],
		['sandbox_list', {}, /^\d+ sandbox(es)?/],
		['sandbox_write_file', { sandbox_id: sbx, path: 'w.txt', content: 'x' },
			/^path: \/workspace\/w.txt\nsize: 1$/],
	];
	for (const [name, args, first] of small) {
		const r = await call(name, args);
		fits(r);
		assert.match(text(r), first, name);
	}
});
