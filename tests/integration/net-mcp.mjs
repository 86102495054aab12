// The MCP side of network rules, with the official SDK client (run by
// tests/integration/net.sh, which answers the held requests with the CLI):
// sandbox_create with allow entries and secrets within the operator's limit, and
// sandbox_net_request waiting on the operator's answer.  One JSON object a
// line on stdout, one per step.
const { connect } = await import(`${process.env.TOP}/tests/tools/mcp-stdio.mjs`);

const { client, say, call } = await connect('net-agent');

const tools = await client.listTools();
const req = tools.tools.find((t) => t.name === 'sandbox_net_request');
say('listed', { has: !!req, required: req?.inputSchema?.required ?? [] });

let r = await call('sandbox_create', { name: 'net-mcp', max_duration_s: 600,
	allow: ['up.test', '*.nope.example'] });
say('beyond-limit', { isError: !!r.isError, text: r.content?.[0]?.text ?? '' });

// A secret names its host: beyond the limit, the secret opens nothing.
r = await call('sandbox_create', { name: 'net-mcp-secret', max_duration_s: 600,
	secrets: ['BEYONDTOKEN'] });
say('secret-beyond-limit', { isError: !!r.isError, text: r.content?.[0]?.text ?? '' });

// A fork is a create: an agent's copy of the operator's egress sandbox is
// beyond the limit, as an egress create would be.
r = await call('sandbox_fork', { sandbox_id: 'net-opfork' });
say('fork-beyond-limit', { isError: !!r.isError, text: r.content?.[0]?.text ?? '' });

r = await call('sandbox_create', { name: 'net-mcp', max_duration_s: 600, allow: ['up.test'] });
const id = r.structuredContent?.sandbox_id;
say('created', { isError: !!r.isError, id, network: r.structuredContent?.network });

// Its own sandbox, within the limit: the copy is the agent's.
r = await call('sandbox_fork', { sandbox_id: id });
const fk = r.structuredContent?.sandboxes?.[0];
say('fork-within', { isError: !!r.isError, owner: fk?.owner, network: fk?.network });
if (fk)
	await call('sandbox_destroy', { sandbox_id: fk.sandbox_id });

const exec = async (command) => {
	const x = await call('sandbox_exec', { sandbox_id: id, command });
	return (x.structuredContent?.stdout ?? '').trim();
};
say('allowed', { out: await exec('curl -s -m 10 http://up.test/hello') });
say('not-yet', { out: await exec('curl -s -m 10 -o /dev/null -w "%{http_code}" http://other.test/hello') });

r = await call('sandbox_net_request', { sandbox_id: id, destination: 'other.test:80',
	reason: 'the tests fetch a fixture from other.test' });
say('request-once', r.structuredContent ?? { isError: true, text: r.content?.[0]?.text });
say('after-once', { out: await exec('curl -s -m 10 http://other.test/hello') });

r = await call('sandbox_net_request', { sandbox_id: id, destination: 'up.test:80',
	reason: 'already allowed' });
say('request-covered', r.structuredContent ?? {});

r = await call('sandbox_net_request', { sandbox_id: id, destination: 'evil.example:443',
	reason: 'beyond the limit' });
say('request-limit', r.structuredContent ?? {});

r = await call('sandbox_net_request', { sandbox_id: id, destination: '127.0.0.1:8080',
	reason: 'a dev server' });
say('request-local', r.structuredContent ?? {});

r = await call('sandbox_net_request', { sandbox_id: id, destination: 'third.test:443',
	reason: 'please' });
say('request-deny', r.structuredContent ?? {});

await call('sandbox_destroy', { sandbox_id: id });

// Ask mode in an agent's sandbox: a destination beyond the limit is not asked.
r = await call('sandbox_create', { name: 'net-mcp2', max_duration_s: 600, allow: ['up.test'],
	ask: true });
const id2 = r.structuredContent?.sandbox_id;
const t0 = Date.now();
const x = await call('sandbox_exec', { sandbox_id: id2,
	command: 'curl -s -m 30 -w " %{http_code}" http://beyond.example/' });
say('ask-beyond-limit', { out: (x.structuredContent?.stdout ?? '').trim(), ms: Date.now() - t0 });
await call('sandbox_destroy', { sandbox_id: id2 });
await client.close();
