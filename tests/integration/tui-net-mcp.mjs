// sandbox_create's secrets and idle_suspend_s, and net_limit by the session's
// kind, with the official SDK client over `sbxtop --mcp` (run by
// tests/integration/tui-net.sh).  One JSON object a line on stdout.
const top = process.env.TOP;
const sdk = `${top}/tests/mcp/node_modules/@modelcontextprotocol/sdk/dist/esm`;
const { Client } = await import(`${sdk}/client/index.js`);
const { StdioClientTransport } = await import(`${sdk}/client/stdio.js`);

// An agent that calls itself "console": still an agent to net_limit.
const transport = new StdioClientTransport({
	command: process.env.SBXTOP, args: ['--mcp'], env: { ...process.env }, stderr: 'inherit',
});
const client = new Client({ name: 'console', version: '1.0' }, { capabilities: {} });
await client.connect(transport);
const say = (step, o) => console.log(JSON.stringify({ step, ...o }));
const call = (name, args) => client.callTool({ name, arguments: args }, undefined,
	{ timeout: 120000 });

const tools = await client.listTools();
const props = tools.tools.find((t) => t.name === 'sandbox_create')?.inputSchema?.properties ?? {};
say('schema', { secrets: props.secrets?.type ?? null, idle: props.idle_suspend_s?.type ?? null });

let r = await call('sandbox_create', { name: 'tn-limit', max_duration_s: 600,
	allow: ['beyond.example'] });
say('limit', { isError: !!r.isError, text: r.content?.[0]?.text ?? '' });

r = await call('sandbox_create', { name: 'tn-secret', max_duration_s: 600,
	secrets: ['TNSECRET'], idle_suspend_s: 300 });
const id = r.structuredContent?.sandbox_id;
say('created', { isError: !!r.isError, id, network: r.structuredContent?.network,
	text: r.isError ? r.content?.[0]?.text : '' });
if (id) {
	const x = await call('sandbox_exec', { sandbox_id: id, command: 'echo "$TNSECRET"' });
	say('env', { out: (x.structuredContent?.stdout ?? '').trim() });
}
r = await call('sandbox_create', { name: 'tn-nosecret', max_duration_s: 600,
	secrets: ['NO_SUCH'] });
say('unknown-secret', { isError: !!r.isError, text: r.content?.[0]?.text ?? '' });
await client.close();
