// The scripted agent session of bench/35-agent-reads.sh, through the official
// MCP SDK client (tests/mcp) over `$SBXTOP --mcp`: tools/list, create, upload a
// small C project, build it (a few hundred KB of compiler output), a failing
// test, a fix, diff, download, destroy.  Prints one JSON object: for each step
// the characters of text content a model would read (tools/list: its JSON).
//   node agent-session.mjs PROJECT_DIR DOWNLOAD_DIR
const [project, download] = process.argv.slice(2);
const sdk = `${process.env.TOP}/tests/mcp/node_modules/@modelcontextprotocol/sdk/dist/esm`;
const { Client } = await import(`${sdk}/client/index.js`);
const { StdioClientTransport } = await import(`${sdk}/client/stdio.js`);

const transport = new StdioClientTransport({
	command: process.env.SBXTOP, args: ['--mcp'], env: { ...process.env }, stderr: 'inherit',
});
const client = new Client({ name: 'sbxtop-bench', version: '1.0' }, { capabilities: {} });
await client.connect(transport);
const reads = {};
reads['tools/list (JSON)'] = JSON.stringify(await client.listTools()).length;

// call STEP TOOL ARGS: the result; its text content counted under STEP.
async function call(step, name, args) {
	const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 300000 });
	const text = (r.content ?? []).map((c) => (c.type === 'text' ? c.text : '')).join('');
	reads[step] = (reads[step] ?? 0) + text.length;
	if (r.isError) throw new Error(`${name} failed: ${text.slice(0, 300)}`);
	return { r, text };
}

const { r: made, text } = await call('create', 'sandbox_create', { name: 'bench-session' });
const id = made.structuredContent?.sandbox_id ?? text.match(/sbx-[0-9a-f]+/)?.[0];
if (!id) throw new Error(`sandbox_create gave no sandbox id: ${text.slice(0, 300)}`);
const sid = { sandbox_id: id };
try {
	await call('upload', 'sandbox_upload_dir', { ...sid, local_path: project, remote_path: '/workspace' });
	await call('build', 'sandbox_exec', { ...sid, command: 'make' });
	await call('failing test', 'sandbox_exec', { ...sid, command: 'make test' });
	await call('fix', 'sandbox_write_file', { ...sid, path: 'src/add.c',
		content: 'int add(int a, int b)\n{\n\treturn a + b;\n}\n' });
	await call('diff', 'sandbox_diff', sid);
	await call('download', 'sandbox_download', { ...sid, remote_path: '/workspace/src', local_path: download });
} finally {
	await call('destroy', 'sandbox_destroy', sid);
	await client.close();
}
console.log(JSON.stringify(reads));
