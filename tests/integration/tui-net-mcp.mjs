// sandbox_create's secrets and idle_suspend_s, and net_limit by the session's
// kind, with the official SDK client over `sbxtop --mcp` (run by
// tests/integration/tui-net.sh).  One JSON object a line on stdout.
const { connect } = await import(`${process.env.TOP}/tests/tools/mcp-stdio.mjs`);

// An agent that calls itself "console": still an agent to net_limit.
const { client, say, call } = await connect('console');

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
