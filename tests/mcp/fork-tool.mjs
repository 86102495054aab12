// An SDK client that starts `sbxtop --mcp` and calls sandbox_fork on the sandbox
// given (count from argv), then prints the tool's structuredContent (checked by
// the SDK against the tool's outputSchema) as one JSON line, or "error TEXT".
// Run by tests/integration/fork.sh.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [sbxtop, id, count] = process.argv.slice(2);
const transport = new StdioClientTransport({ command: sbxtop, args: ['--mcp'],
	env: process.env, stderr: 'ignore' });
const client = new Client({ name: 'fork-tool', version: '1.0' }, { capabilities: {} });
await client.connect(transport);
const { tools } = await client.listTools();
if (!tools.some((t) => t.name === 'sandbox_fork'))
	console.log('error no sandbox_fork in tools/list');
const args = { sandbox_id: id };
if (count !== undefined)
	args.count = Number(count);
const r = await client.callTool({ name: 'sandbox_fork', arguments: args });
if (r.isError)
	console.log(`error ${r.content.map((c) => c.text).join(' ')}`);
else
	console.log(JSON.stringify(r.structuredContent));
await client.close();
