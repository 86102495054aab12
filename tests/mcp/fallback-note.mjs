// An SDK client that starts `sbxtop --mcp` with the SDK's default environment
// (HOME, LOGNAME, PATH, SHELL, TERM, USER: no XDG_RUNTIME_DIR, as MCP clients do),
// lists the tools, and prints every notifications/message it got as one JSON
// line each, then "tools N".  Run by tests/integration/runtime-dir.sh.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const transport = new StdioClientTransport({ command: process.argv[2], args: ['--mcp'],
	stderr: 'pipe' });
const client = new Client({ name: 'fallback-note', version: '1.0' }, { capabilities: {} });
const notes = [];
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => notes.push(n.params));
let stderr = '';
transport.stderr?.on('data', (d) => { stderr += d; });
await client.connect(transport);
const { tools } = await client.listTools();
await new Promise((r) => setTimeout(r, 300));
for (const n of notes)
	console.log(JSON.stringify(n));
console.log(`tools ${tools.length}`);
for (const l of stderr.split('\n'))
	if (l) console.log(`stderr ${l}`);
await client.close();
