// Bring the schemas docs/openapi.json shares with the MCP tools up to date:
// the tools' own, from tools/list of the sbxtop-core built in BUILD (default
// build), with sandbox_id left out of the request bodies (it is in the path).
// rest.test.mjs checks that they agree (with PAIRS and withoutId from here); run
// this after changing a tool's schema:
//   node tests/rest/sync-schemas.mjs [BUILD]
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const top = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const build = path.resolve(top, process.argv[2] || 'build');
const docPath = path.join(top, 'docs/openapi.json');

// The component each tool schema is, and whether sandbox_id comes out.
export const PAIRS = [
	['CreateRequest', 'sandbox_create', 'inputSchema', true],
	['ExecRequest', 'sandbox_exec', 'inputSchema', true],
	['ForwardRequest', 'sandbox_port_forward', 'inputSchema', true],
	['Sandbox', 'sandbox_status', 'outputSchema', false],
	['SandboxList', 'sandbox_list', 'outputSchema', false],
	['Destroyed', 'sandbox_destroy', 'outputSchema', false],
	['Processes', 'sandbox_process_list', 'outputSchema', false],
	['ForwardStarted', 'sandbox_port_forward', 'outputSchema', false],
	['ForwardStopped', 'sandbox_port_forward_stop', 'outputSchema', false],
	['SessionRead', 'sandbox_read_file', 'outputSchema', false],
];

export function withoutId(x) {
	const c = structuredClone(x);
	delete c.properties.sandbox_id;
	if (c.required) {
		c.required = c.required.filter((k) => k !== 'sandbox_id');
		if (c.required.length === 0)
			delete c.required;
	}
	return c;
}

async function toolsList() {
	const xdg = fs.mkdtempSync(path.join(os.tmpdir(), 'sbxtop-sync-'));
	const env = { ...process.env, XDG_STATE_HOME: xdg, XDG_CONFIG_HOME: xdg,
		XDG_RUNTIME_DIR: xdg, XDG_DATA_HOME: xdg, XDG_CACHE_HOME: xdg };
	const p = spawn(path.join(build, 'sbxtop-core'), ['--standalone', '--mcp'],
		{ env, stdio: ['pipe', 'pipe', 'inherit'] });
	const send = (o) => p.stdin.write(JSON.stringify(o) + '\n');
	let buf = '';
	const tools = await new Promise((resolve, reject) => {
		p.on('error', reject);
		p.stdout.on('data', (d) => {
			buf += d;
			for (let nl; (nl = buf.indexOf('\n')) >= 0; buf = buf.slice(nl + 1)) {
				const m = JSON.parse(buf.slice(0, nl));
				if (m.id === 1) {
					send({ jsonrpc: '2.0', method: 'notifications/initialized' });
					// The schemas as checked, whole (tools/list gives a model less).
					send({ jsonrpc: '2.0', id: 2, method: 'tools/list',
						params: { _meta: { 'sbxtop/schemas': 'full' } } });
				} else if (m.id === 2) {
					resolve(m.result.tools);
				}
			}
		});
		send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {
			protocolVersion: '2025-06-18', capabilities: {},
			clientInfo: { name: 'sync-schemas', version: '1' } } });
	});
	p.stdin.end();
	p.kill();
	fs.rmSync(xdg, { recursive: true, force: true });
	return Object.fromEntries(tools.map((t) => [t.name, t]));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
	const tools = await toolsList();
	const doc = JSON.parse(fs.readFileSync(docPath, 'utf8'));
	const S = doc.components.schemas;
	for (const [name, tool, which, strip] of PAIRS) {
		const s = tools[tool][which];
		S[name] = strip ? withoutId(s) : s;
	}
	// The exec result: each branch's fields and required list are the tool's.
	const out = tools.sandbox_exec.outputSchema;
	S.ExecResult.oneOf.forEach((branch, i) => {
		for (const k of Object.keys(branch.properties))
			branch.properties[k] = out.properties[k];
		if (out.anyOf && out.anyOf[i])
			branch.required = out.anyOf[i].required;
	});
	fs.writeFileSync(docPath, JSON.stringify(doc, null, 1) + '\n');
	console.log(`docs/openapi.json: ${PAIRS.length} schemas from ${build}/sbxtop-core`);
}
