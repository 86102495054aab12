// Helpers for the REST tests: a private `sbxtop serve --listen`, and a fetch
// that checks every response against docs/openapi.json (ajv, JSON Schema
// 2020-12 as OpenAPI 3.1 uses it) and counts which operations were seen.  Run
// through tests/integration/rest-api.sh, which exports private XDG
// directories and SBXTOP.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import fs from 'node:fs';
import path from 'node:path';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

const here = path.dirname(fileURLToPath(import.meta.url));
export const TOP = path.resolve(here, '../..');
export const SBXTOP = process.env.SBXTOP || path.join(TOP, 'build/sbxtop');
export const DOC_PATH = path.join(TOP, 'docs/openapi.json');
export const doc = JSON.parse(fs.readFileSync(DOC_PATH, 'utf8'));
export { sleep };

// The document's schemas under one $id, with its references rewritten to
// point there, so ajv can run in strict mode (an unknown keyword or a typo
// in a schema is an error, not silently ignored).
// (strictRequired is off: the exec result's anyOf names fields its branches
// inherit from the object around them.)
const ajv = new Ajv2020({ strict: true, strictRequired: false, allErrors: true,
	allowUnionTypes: true });
addFormats(ajv);
ajv.addKeyword('example');
const rewrite = (v) => JSON.parse(JSON.stringify(v).replaceAll('"#/components/schemas/',
	'"api#/$defs/'));
ajv.addSchema({ $id: 'api', $defs: rewrite(doc.components.schemas) });
const compiled = new Map();
let nschemas = 0;
function validator(schema) {
	const key = JSON.stringify(schema);
	if (!compiled.has(key))
		compiled.set(key, ajv.compile({ $id: `s${nschemas++}`, ...rewrite(schema) }));
	return compiled.get(key);
}
export function compileAll() {
	for (const [name] of Object.entries(doc.components.schemas))
		validator({ $ref: `#/components/schemas/${name}` });
}

// One schema (a component name, or an object) against a value: an assert.
export function check(schema, value, what) {
	const s = typeof schema === 'string' ? { $ref: `#/components/schemas/${schema}` } : schema;
	const v = validator(s);
	assert.ok(v(value), `${what}: ${JSON.stringify(value).slice(0, 400)} does not match ` +
		`the document: ${ajv.errorsText(v.errors)}`);
}

const deref = (o) => o?.$ref ? o.$ref.split('/').slice(1).reduce((a, k) => a[k], doc) : o;

// The document's operation for a method and a URL path.
export function operation(method, pathname) {
	for (const [tmpl, item] of Object.entries(doc.paths)) {
		const re = new RegExp('^' + tmpl.replace(/[.]/g, '\\.').replace(/\{[^}]+\}/g,
			'[^/]+') + '$');
		if (re.test(pathname) && item[method.toLowerCase()])
			return { tmpl, op: item[method.toLowerCase()] };
	}
	return null;
}

export const seen = new Set();	// "GET /v1/sandboxes 200"
export const validated = [];

// Check a response r to (method, url) against the document: its status is
// one the operation declares, its Content-Type one that status declares, and
// a JSON or NDJSON body matches the schema.  Returns the body text when read.
// With streaming, a stream's lines are left to the caller to check as it
// reads them.
export async function checkResponse(method, url, r, { streaming = false } = {}) {
	const u = new URL(url);
	const found = operation(method, u.pathname);
	assert.ok(found, `${method} ${u.pathname} is not in the document`);
	const resp = deref(found.op.responses[String(r.status)] ?? found.op.responses.default);
	assert.ok(resp, `${method} ${found.tmpl}: status ${r.status} is not documented`);
	seen.add(`${method} ${found.tmpl} ${r.status}`);
	const ct = (r.headers.get('content-type') || '').split(';')[0].trim();
	if (!resp.content)
		return null;
	if (streaming)
		validated.push(`${method} ${found.tmpl} ${r.status} (stream)`);
	const media = resp.content[ct];
	assert.ok(media, `${method} ${found.tmpl} ${r.status}: Content-Type ${ct} is not ` +
		`documented (${Object.keys(resp.content)})`);
	if (ct === 'application/json') {
		const t = await r.clone().text();
		check(media.schema, JSON.parse(t), `${method} ${found.tmpl} ${r.status}`);
		validated.push(`${method} ${found.tmpl} ${r.status}`);
		return t;
	}
	if (ct === 'application/x-ndjson' && !streaming) {
		const t = await r.clone().text();
		const lines = t.split('\n').filter((l) => l !== '');
		assert.ok(lines.length > 0, 'an NDJSON stream with no line');
		for (const l of lines)
			check(media.schema, JSON.parse(l), `${method} ${found.tmpl} line`);
		validated.push(`${method} ${found.tmpl} ${r.status}`);
		return t;
	}
	return null;	// bytes, text, event streams: their readers check them
}

// fetch, with every response checked against the document.
export function makeFetch(token) {
	return async (input, init) => {
		const req = input instanceof Request ? input : new Request(input, init);
		if (token && !req.headers.has('authorization'))
			req.headers.set('authorization', `Bearer ${token}`);
		const r = await fetch(req);
		await checkResponse(req.method, req.url, r);
		return r;
	};
}

export async function until(fn, ms = 10000, step = 50) {
	for (const end = Date.now() + ms; Date.now() < end; await sleep(step))
		if (await fn())
			return true;
	return false;
}

// `sbxtop serve --listen 127.0.0.1:0`: {proc, base, token, stderr()}.
export async function startServer() {
	let stderr = '';
	const proc = spawn(SBXTOP, ['serve', '--listen', '127.0.0.1:0'], { env: process.env,
		stdio: ['ignore', 'ignore', 'pipe'] });
	proc.stderr.setEncoding('utf8');
	proc.stderr.on('data', (d) => { stderr += d; });
	const ok = await until(() => /at (http:\S+)/.test(stderr) && /token: (\S+)/.test(stderr));
	assert.ok(ok, `the server printed its URL and token: ${stderr}`);
	const url = stderr.match(/at (http:\S+)/)[1];
	return { proc, base: url.replace(/\/mcp$/, ''), token: stderr.match(/token: (\S+)/)[1],
		stderr: () => stderr };
}

// Read a text/event-stream until fn(events) is true or ms pass; then abort.
export async function readEvents(base, token, query, fn, ms = 10000) {
	const ac = new AbortController();
	const r = await fetch(`${base}/v1/events${query}`, { headers: {
		Authorization: `Bearer ${token}` }, signal: ac.signal });
	await checkResponse('GET', `${base}/v1/events`, r);
	assert.equal(r.status, 200);
	assert.match(r.headers.get('content-type'), /^text\/event-stream/);
	const events = [];
	const dec = new TextDecoder();
	let acc = '';
	const timer = setTimeout(() => ac.abort(), ms);
	try {
		for await (const chunk of r.body) {
			acc += dec.decode(chunk, { stream: true });
			let i;
			while ((i = acc.indexOf('\n\n')) >= 0) {
				const block = acc.slice(0, i);
				acc = acc.slice(i + 2);
				const data = block.split('\n').filter((l) => l.startsWith('data: '))
					.map((l) => l.slice(6)).join('\n');
				if (!data)
					continue;
				const ev = JSON.parse(data);
				check('Event', ev, 'an event');
				const id = block.match(/^id: (\d+)$/m)?.[1];
				assert.equal(Number(id), ev.seq, 'the SSE id is the seq');
				events.push(ev);
			}
			if (fn(events))
				break;
		}
	} catch (e) {
		if (e.name !== 'AbortError')
			throw e;
	} finally {
		clearTimeout(timer);
		ac.abort();
	}
	return events;
}
