// The agent flow through a client generated from docs/openapi.json: the
// types come from openapi-typescript (schema.d.ts, made by the test before
// tsc checks this file), the calls from openapi-fetch.  A route or a field
// that the document does not have fails the type check, not just the run.
import createClient from 'openapi-fetch';
import type { components, paths } from './schema.js';

type Fetch = (input: Request) => Promise<Response>;

function must<T>(r: { data?: T; error?: unknown; response: Response }, what: string): T {
	if (r.data === undefined)
		throw new Error(`${what}: ${r.response.status} ${JSON.stringify(r.error)}`);
	return r.data;
}

const raw = { bodySerializer: (b: unknown) => b as BodyInit };

function same(a: Uint8Array, b: Uint8Array): boolean {
	return a.length === b.length && a.every((x, i) => x === b[i]);
}

export async function flow(base: string, fetch: Fetch, name: string) {
	const api = createClient<paths>({ baseUrl: base, fetch });
	const steps: string[] = [];
	const bytes = new Uint8Array(256).map((_, i) => i);
	const text = 'hello from the REST API\n';

	const sb = must(await api.POST('/v1/sandboxes', { body: { name } }), 'create');
	if (sb.state !== 'running' || sb.name !== name)
		throw new Error(`create: ${JSON.stringify(sb)}`);
	const id = { params: { path: { id: sb.sandbox_id } } };
	steps.push('create');
	try {
		must(await api.PUT('/v1/sandboxes/{id}/files/content', { params: { path: { id: name },
			query: { path: 'src/hello.txt' } }, body: text, ...raw }), 'write text');
		const w = must(await api.PUT('/v1/sandboxes/{id}/files/content', { params: {
			path: { id: sb.sandbox_id }, query: { path: 'bin.dat', mode: '600' } },
			body: bytes as unknown as string, ...raw }), 'write bytes');
		if (w.size !== 256)
			throw new Error(`write: ${JSON.stringify(w)}`);
		steps.push('write');

		// Two media types (JSON, or NDJSON when streamed): this call asks for JSON.
		const x = must(await api.POST('/v1/sandboxes/{id}/exec', { ...id, body: {
			command: 'cat src/hello.txt && wc -c < bin.dat && stat -c %a bin.dat' } }),
			'exec') as components['schemas']['ExecResult'];
		if (!('exit_code' in x) || x.exit_code !== 0 || x.stdout !== `${text}256\n600\n`)
			throw new Error(`exec: ${JSON.stringify(x)}`);
		steps.push('exec');

		const r = await api.GET('/v1/sandboxes/{id}/files/content', { params: { path: {
			id: sb.sandbox_id }, query: { path: 'bin.dat' } }, parseAs: 'arrayBuffer' });
		if (!r.data || !same(new Uint8Array(r.data as ArrayBuffer), bytes))
			throw new Error(`read: ${r.response.status}`);
		steps.push('read');

		const ls = must(await api.GET('/v1/sandboxes/{id}/files', { params: { path: {
			id: sb.sandbox_id }, query: { recursive: true } } }), 'list');
		const names = ls.entries.map((e) => e.path).sort();
		if (!names.includes('/workspace/src/hello.txt') || !names.includes('/workspace/bin.dat'))
			throw new Error(`list: ${names}`);
		const st = must(await api.GET('/v1/sandboxes/{id}/files/stat', { params: { path: {
			id: sb.sandbox_id }, query: { path: 'bin.dat' } } }), 'stat');
		if (!('size' in st) || st.size !== 256)
			throw new Error(`stat: ${JSON.stringify(st)}`);
		steps.push('list');

		const tgz = await api.GET('/v1/sandboxes/{id}/archive', { params: { path: {
			id: sb.sandbox_id }, query: { path: '/workspace' } }, parseAs: 'arrayBuffer' });
		const archive = new Uint8Array(tgz.data as ArrayBuffer);
		if (archive[0] !== 0x1f || archive[1] !== 0x8b)
			throw new Error(`archive: not gzip (${tgz.response.status})`);
		const up = must(await api.PUT('/v1/sandboxes/{id}/archive', { params: { path: {
			id: sb.sandbox_id }, query: { path: '/workspace/copy' } },
			body: archive as unknown as string, ...raw }), 'upload');
		if (up.files !== 2 || up.bytes !== 256 + text.length)
			throw new Error(`upload: ${JSON.stringify(up)}`);
		const back = await api.GET('/v1/sandboxes/{id}/files/content', { params: { path: {
			id: sb.sandbox_id }, query: { path: 'copy/bin.dat' } }, parseAs: 'arrayBuffer' });
		if (!same(new Uint8Array(back.data as ArrayBuffer), bytes))
			throw new Error('the archive round trip changed bin.dat');
		const t = await api.GET('/v1/sandboxes/{id}/files/content', { params: { path: {
			id: sb.sandbox_id }, query: { path: 'copy/src/hello.txt' } }, parseAs: 'text' });
		if (t.data !== text)
			throw new Error(`the archive round trip changed hello.txt: ${t.data}`);
		steps.push('archive');

		const del = must(await api.DELETE('/v1/sandboxes/{id}/files', { params: { path: {
			id: sb.sandbox_id }, query: { path: 'copy', recursive: true } } }), 'delete');
		if (del.deleted < 4)
			throw new Error(`delete: ${JSON.stringify(del)}`);
		steps.push('delete');

		const all = must(await api.GET('/v1/sandboxes'), 'list sandboxes');
		if (!all.sandboxes.some((s) => s.sandbox_id === sb.sandbox_id))
			throw new Error('the new sandbox is not listed');
		const got = must(await api.GET('/v1/sandboxes/{id}', id), 'get');
		if (got.sandbox_id !== sb.sandbox_id)
			throw new Error(`get: ${JSON.stringify(got)}`);
	} finally {
		const d = must(await api.DELETE('/v1/sandboxes/{id}', id), 'destroy');
		if (d.state !== 'terminated')
			throw new Error(`destroy: ${JSON.stringify(d)}`);
		steps.push('destroy');
	}
	return { id: sb.sandbox_id, steps };
}
