// The image routes of the REST API against a registry on loopback, every
// answer validated against docs/openapi.json (tests/rest/lib.mjs): /v1/images
// (list, pull, remove, gc) and seed 2's GET /exec/templates with a session
// made from a template.  Run by tests/integration/image-rest.sh with REG (the
// registry) and SBXTOP_TEMPLATES naming test/tool:1 as "tool".
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, makeFetch, compileAll } from './lib.mjs';

const REG = process.env.REG;
const srv = await startServer();
const f = makeFetch(srv.token);
const J = (method, path, body) => f(`${srv.base}${path}`, { method,
	headers: body ? { 'content-type': 'application/json' } : {},
	body: body ? JSON.stringify(body) : undefined });
after(() => srv.proc.kill());
compileAll();

test('GET /v1/images: the store, empty', async () => {
	const r = await J('GET', '/v1/images');
	assert.equal(r.status, 200);
	const b = await r.json();
	assert.deepEqual(b.images, []);
	assert.equal(b.total.images, 0);
});

test('POST /v1/images pulls an image from the registry', async () => {
	const r = await J('POST', '/v1/images', { ref: `${REG}/test/tool:1` });
	const b = await r.json();
	assert.equal(r.status, 201, JSON.stringify(b));
	assert.equal(b.ref, `${REG}/test/tool:1`);
	assert.match(b.id, /^sha256:[0-9a-f]{64}$/);
	assert.equal(b.unpacked_for, 'ns');
	const l = await (await J('GET', '/v1/images')).json();
	assert.deepEqual(l.images.map((i) => i.ref), [`${REG}/test/tool:1`]);
});

test('POST /v1/images with a bad reference: 400 with a hint', async () => {
	const r = await J('POST', '/v1/images', { ref: 'Not A Ref' });
	assert.equal(r.status, 400);
	const b = await r.json();
	assert.match(b.error.hint, /REGISTRY/);
});

test('POST /v1/images of an image the registry lacks: 404', async () => {
	const r = await J('POST', '/v1/images', { ref: `${REG}/test/none:1` });
	assert.equal(r.status, 404);
});

test('GET /exec/templates: base and the configured ones', async () => {
	const r = await J('GET', '/exec/templates');
	assert.equal(r.status, 200);
	const b = await r.json();
	assert.deepEqual(b.templates.map((t) => [t.name, t.image, t.pulled]),
		[['base', null, true], ['tool', `${REG}/test/tool:1`, true]]);
});

test('a session made from a template runs in its image', async () => {
	let r = await J('POST', '/exec/tpl-s1/execute', { command: 'cat /etc/marker',
		template: 'tool' });
	const b = await r.json();
	assert.equal(r.status, 200, JSON.stringify(b));
	assert.equal(b.exitCode, 0);
	assert.equal(b.output.map((o) => o.data).join(''), 'made by image-rest.sh\n');
	r = await J('POST', '/exec/tpl-s2/execute', { command: 'true', template: 'nope' });
	assert.equal(r.status, 400);
	assert.match((await r.json()).error.message, /unknown template 'nope': there are base, tool/);
	r = await J('DELETE', '/exec/tpl-s1');
	assert.equal(r.status, 200);
});

test('DELETE /v1/images?ref= and POST /v1/images/gc', async () => {
	let r = await J('DELETE', `/v1/images?ref=${encodeURIComponent(`${REG}/test/tool:1`)}`);
	assert.equal(r.status, 200);
	assert.deepEqual((await r.json()).removed, [`${REG}/test/tool:1`]);
	r = await J('DELETE', `/v1/images?ref=${encodeURIComponent(`${REG}/test/tool:1`)}`);
	assert.equal(r.status, 404);
	r = await J('POST', '/v1/images/gc');
	assert.equal(r.status, 200);
	const b = await r.json();
	assert.ok(b.blobs >= 3 && b.layers >= 1, JSON.stringify(b));
});
