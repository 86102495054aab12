// sandbox_diff after an `npm install` inside a sandbox, through the official
// TypeScript SDK client: one call with no arguments is a summary within the
// budget (totals, /workspace first, node_modules and ~/.npm folded, the
// agent's own edits named); contents page with the cursor to the end, every
// page within the budget; no JSON-RPC line the server writes reaches 1 MiB
// (the SDK's stdio transport closes on one over 10 MiB).  The server's stdout
// is copied to a file on its way to the SDK, to measure its lines.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { SBXTOP, createSandbox, destroySandbox, sbxtop } from './lib.mjs';

const BUDGET = 20000;		// characters of a result's text, and of its structuredContent
const LINE_MAX = 1 << 20;

// 90 packages as npm makes them (tarballs of package/), then a real, offline
// npm install of them in /workspace/app, then the agent's own edits.
const NPM_INSTALL = `set -e
mkdir -p /tmp/pkgs /workspace/app && cd /tmp/pkgs
deps=""
for i in $(seq 1 90); do
	d=p$i/package; mkdir -p $d/lib
	printf '{"name":"pkg-%s","version":"1.0.%s","main":"index.js"}\\n' $i $i > $d/package.json
	echo "module.exports = require('./lib/f1');" > $d/index.js
	for j in 1 2 3 4 5; do echo "exports.v$j = $i * $j;" > $d/lib/f$j.js; done
	echo "# pkg-$i" > $d/README.md; echo MIT > $d/LICENSE
	tar -C p$i -czf pkg-$i-1.0.$i.tgz package
	deps="$deps\\"pkg-$i\\":\\"file:/tmp/pkgs/pkg-$i-1.0.$i.tgz\\","
done
cd /workspace/app
printf '{"name":"app","version":"1.0.0","dependencies":{%s}}\\n' "\${deps%,}" > package.json
npm install --offline --no-audit --no-fund --no-update-notifier > /tmp/npm.log 2>&1
mkdir -p src && printf 'import { x } from "./util.js";\\nconsole.log(x);\\n' > src/main.js
printf 'export const x = 1;\\n' > src/util.js`;

let sbx, client, dir, tap;

before(async () => {
	sbx = createSandbox();
	sbxtop('exec', sbx, '--', NPM_INSTALL);
	dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sbxt-diff-'));
	tap = path.join(dir, 'server-lines');
	const transport = new StdioClientTransport({
		command: 'sh', args: ['-c', 'exec "$0" --mcp | tee "$1"', SBXTOP, tap],
		env: { ...process.env }, stderr: 'pipe',
	});
	client = new Client({ name: 'diff-test', version: '1.0' }, { capabilities: {} });
	await client.connect(transport);
	await client.listTools();	// the SDK checks structuredContent against outputSchema
});
after(async () => {
	await client?.close();
	if (sbx)
		destroySandbox(sbx);
	if (dir)
		fs.rmSync(dir, { recursive: true, force: true });
});

const text = (r) => r.content.map((c) => c.text).join('\n');
const count = (cmd) => Number(sbxtop('exec', sbx, '--', cmd));

async function diff(args) {
	const r = await client.callTool({ name: 'sandbox_diff', arguments: { sandbox_id: sbx, ...args } });
	assert.ok(!r.isError, text(r));
	assert.ok(text(r).length <= BUDGET, `text of ${text(r).length} characters`);
	assert.ok(JSON.stringify(r.structuredContent).length <= BUDGET,
		`structuredContent of ${JSON.stringify(r.structuredContent).length} characters`);
	return r;
}

// Every page of a listing from its first, by next_cursor.
async function pages(args) {
	const out = [];
	let cursor;
	do {
		const r = await diff(cursor ? { ...args, cursor } : args);
		out.push(r);
		cursor = r.structuredContent.next_cursor;
		assert.ok(out.length < 200, 'the cursor ends');
	} while (cursor);
	return out;
}

test('after npm install, one sandbox_diff with no arguments: totals, /workspace first, folded', async () => {
	const r = await diff({});
	const sc = r.structuredContent, t = text(r);
	const modules = count('find /workspace/app/node_modules ! -type d | wc -l');
	const cache = count('find ~/.npm ! -type d | wc -l');
	assert.ok(modules >= 800 && cache >= 100, `${modules} files in node_modules, ${cache} in ~/.npm`);
	assert.ok(sc.totals.added >= modules + cache + 4, JSON.stringify(sc.totals));
	assert.match(t.split('\n')[0], new RegExp(`^Sandbox ${sbx}: ${sc.totals.added} added, ` +
		`${sc.totals.changed} changed, ${sc.totals.removed} removed`));
	const byPath = Object.fromEntries(sc.changes.map((c) => [c.path, c]));
	const nm = byPath['/workspace/app/node_modules/'], npm = byPath['/home/sandbox/.npm/'];
	assert.equal(nm?.folded, 'packages', JSON.stringify(sc.changes));
	assert.equal(nm.files, modules, 'node_modules counted whole');
	assert.equal(npm?.folded, 'cache');
	assert.equal(npm.files, cache, '~/.npm counted whole');
	assert.match(t, new RegExp(`^A /workspace/app/node_modules/  ${modules} files, .* \\(packages\\)$`, 'm'));
	// The agent's own edits are named, and /workspace comes first.
	for (const p of ['/workspace/app/src/main.js', '/workspace/app/src/util.js', '/workspace/app/package.json'])
		assert.ok(byPath[p] && t.includes(`A ${p}  `), `${p} listed`);
	const paths = sc.changes.map((c) => c.path);
	const firstElse = paths.findIndex((p) => !p.startsWith('/workspace/'));
	assert.ok(firstElse > 0 && paths.slice(firstElse).every((p) => !p.startsWith('/workspace/')),
		paths.join(' '));
	assert.equal(sc.next_cursor, undefined, 'the summary fits in one page');
	assert.match(t, /content: true and a path/);
});

test('contents of /workspace/app page with the cursor to the end, within the budget', async () => {
	const all = await pages({ path: '/workspace/app', content: true });
	const lock = [];
	const seen = new Set();
	for (const r of all)
		for (const c of r.structuredContent.changes) {
			seen.add(c.path);
			if (c.path === '/workspace/app/package-lock.json')
				lock.push(c.diff);
		}
	assert.ok(all.length >= 2, `${all.length} pages: package-lock.json is longer than one`);
	for (const p of ['/workspace/app/package.json', '/workspace/app/package-lock.json',
		'/workspace/app/src/main.js', '/workspace/app/src/util.js', '/workspace/app/node_modules/'])
		assert.ok(seen.has(p), `${p} on a page`);
	// The parts of the lock file's diff, joined, are the file, line by line.
	const want = sbxtop('exec', sbx, '--', 'cat /workspace/app/package-lock.json');
	const got = lock.join('').split('\n').filter((l) => l.startsWith('+') && !l.startsWith('+++'))
		.map((l) => l.slice(1)).join('\n');
	assert.equal(got, want);
	assert.match(text(all[0]), /^More: items 1-\d+ of \d+ are shown; call sandbox_diff again with cursor "d1\./m);
});

test('node_modules asked for by path: every file on some page, once', async () => {
	const all = await pages({ path: '/workspace/app/node_modules', content: true });
	const files = sbxtop('exec', sbx, '--', 'find /workspace/app/node_modules ! -type d').split('\n').sort();
	// An item is on one page, but a diff longer than a page goes on on the next.
	const got = all.flatMap((r) => r.structuredContent.changes.filter((c) => !c.diff_line)
		.map((c) => c.path)).sort();
	assert.ok(all.length >= 3, `${all.length} pages`);
	assert.deepEqual(got, files);
	assert.equal(all[0].structuredContent.totals.items, files.length);
});

test('a smaller budget for the call: each page of contents fits it, and the note that says how to go on is there', async () => {
	let cursor, n = 0;
	do {
		const r = await client.callTool({ name: 'sandbox_diff', arguments: { sandbox_id: sbx,
			path: '/workspace/app', content: true, ...(cursor ? { cursor } : {}) },
			_meta: { 'sbxtop/budget': 4000 } });
		assert.ok(!r.isError, text(r));
		assert.ok(text(r).length <= 4000, `text of ${text(r).length} characters`);
		cursor = r.structuredContent.next_cursor;
		if (cursor)
			assert.ok(text(r).includes(cursor), 'the text names the cursor to go on with');
		assert.ok(++n < 400, 'the cursor ends');
	} while (cursor);
	assert.ok(n >= 5, `${n} pages of 4000 characters`);
});

test('no JSON-RPC line from the server reaches 1 MiB', async () => {
	const lines = fs.readFileSync(tap).toString('utf8').split('\n').filter((l) => l);
	assert.ok(lines.length >= 10, `${lines.length} lines`);
	const big = Math.max(...lines.map((l) => Buffer.byteLength(l)));
	assert.ok(big < LINE_MAX, `the longest line is ${big} bytes`);
});
