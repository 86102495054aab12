// The official SDK client over `sbxtop --mcp` ($SBXTOP), for the scripts that
// tests/integration/*.sh run: connect(name) gives the client, call(tool, args)
// (two minutes a call) and say(step, object) (one JSON object a line on stdout).
const sdk = `${process.env.TOP}/tests/mcp/node_modules/@modelcontextprotocol/sdk/dist/esm`;
const { Client } = await import(`${sdk}/client/index.js`);
const { StdioClientTransport } = await import(`${sdk}/client/stdio.js`);

export async function connect(name) {
	const transport = new StdioClientTransport({
		command: process.env.SBXTOP, args: ['--mcp'], env: { ...process.env }, stderr: 'inherit',
	});
	const client = new Client({ name, version: '1.0' }, { capabilities: {} });
	await client.connect(transport);
	const say = (step, o) => console.log(JSON.stringify({ step, ...o }));
	const call = (tool, args) => client.callTool({ name: tool, arguments: args }, undefined,
		{ timeout: 120000 });
	return { client, say, call };
}
