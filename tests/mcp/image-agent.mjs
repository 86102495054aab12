// An agent's view of OCI images through the official MCP SDK client over
// stdio: the sbx://images resource, sandbox_create with an image the operator
// does not allow (refused) and with one it allows (pulled, created), a
// package installed inside with dpkg (sandbox_upload_dir, sandbox_exec), and
// sandbox_destroy.  Prints one JSON line per step; run by
// tests/integration/image-mcp.sh.
//   node image-agent.mjs SBXTOP ALLOWED_REF REFUSED_REF DEB_DIR
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [sbxtop, allowed, refused, debDir] = process.argv.slice(2);
const say = (step, o) => console.log(JSON.stringify({ step, ...o }));
const text = (r) => r.content.map((c) => c.text).join(' ');
const transport = new StdioClientTransport({ command: sbxtop, args: ['--mcp'],
	env: process.env, stderr: 'ignore' });
const client = new Client({ name: 'image-agent', version: '1.0' }, { capabilities: {} });
await client.connect(transport);

const { resources } = await client.listResources();
say('list', { images_resource: resources.some((r) => r.uri === 'sbx://images') });
const read = await client.readResource({ uri: 'sbx://images' });
say('read', { images: JSON.parse(read.contents[0].text) });

let r = await client.callTool({ name: 'sandbox_create', arguments: { image: refused } });
say('refused', { isError: !!r.isError, text: text(r) });

r = await client.callTool({ name: 'sandbox_create', arguments: { image: allowed,
	max_duration_s: 600 } }, undefined, { timeout: 300000 });
say('create', { isError: !!r.isError, text: r.isError ? text(r) : '',
	sc: r.structuredContent ?? null });
if (!r.isError) {
	const id = r.structuredContent.sandbox_id;
	const up = await client.callTool({ name: 'sandbox_upload_dir', arguments: {
		sandbox_id: id, local_path: debDir } });
	say('upload', { isError: !!up.isError, text: up.isError ? text(up) : '' });
	const ex = await client.callTool({ name: 'sandbox_exec', arguments: { sandbox_id: id,
		command: 'dpkg -i hello-sbx.deb > /dev/null && hello-sbx && dpkg -l hello-sbx | tail -1' } });
	say('exec', { isError: !!ex.isError, sc: ex.structuredContent ?? null, text: text(ex) });
	const d = await client.callTool({ name: 'sandbox_destroy', arguments: { sandbox_id: id } });
	say('destroy', { isError: !!d.isError });
}
await client.close();
