// The official SDK's SSEClientTransport against `sbxtop serve --listen`: connect
// to URL (its /mcp) with an API key in X-API-Key, call TOOL with ARGS (JSON),
// print the result's structuredContent as one JSON line, or "error TEXT".  Run
// by tests/integration/mcp-sse.sh, which answers the approvals it raises.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';

const [url, key, tool, args] = process.argv.slice(2);
const client = new Client({ name: 'sse-call', version: '1.0' }, { capabilities: {} });
await client.connect(new SSEClientTransport(new URL(url), {
	requestInit: { headers: { 'X-API-Key': key } } }));
const r = await client.callTool({ name: tool, arguments: JSON.parse(args || '{}') });
console.log(r.isError ? `error ${r.content.map((c) => c.text).join(' ')}` :
	JSON.stringify(r.structuredContent));
await client.close();
