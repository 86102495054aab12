// A scripted model API on loopback for tests/integration/agent-cli.sh: the agent
// CLI is real, only the model is replaced.  It speaks the wire formats the pinned
// CLIs use (Anthropic Messages for Claude Code, OpenAI Responses for Codex, Gemini
// generateContent/streamGenerateContent for Gemini CLI), answers each turn of the
// main conversation with the script's next tool call, and records what the CLI
// sent back: a tool result in the next request is exactly what the model saw.
//
//   node model-endpoint.mjs SCRIPT.json RECORD_DIR
//
// prints "listening http://127.0.0.1:PORT" once it listens, then runs until killed.
// SCRIPT: {"steps": [STEP...], "final": "text"}; a STEP is {"label", "tool" (an MCP
// tool name), "args", "save": {"var": "regex"}, "repeat", "per_turn"}.  The name the CLI
// gave the model for the tool is looked up in the request's tools.  "{{var}}" in a
// string argument becomes what an earlier step's "save" captured from its result's
// text (the regex's first group, or its whole match); a step with "repeat": N is
// N calls made as parallel tool calls, "per_turn" of them a turn (default all),
// "{{i}}" numbering them from 1.
// RECORD_DIR gets requests/NNN.json (each request: method, path, body),
// results.jsonl (a line per call: what the model got back), tools.json (sbxtop's
// tool definitions as the CLI sent them to the model) and log.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';

const [scriptFile, recordDir] = process.argv.slice(2);
if (!scriptFile || !recordDir) {
	console.error('usage: model-endpoint.mjs SCRIPT.json RECORD_DIR');
	process.exit(2);
}
const script = JSON.parse(fs.readFileSync(scriptFile, 'utf8'));
// The calls in order, each with the turn it belongs to.
const calls = script.steps.flatMap((s, n) => (s.repeat
	? Array.from({ length: s.repeat }, (_, k) => ({ ...s, turn: `${n}.${Math.floor(k / (s.per_turn ?? s.repeat))}`, i: k + 1 }))
	: [{ ...s, turn: `${n}` }]));
fs.mkdirSync(path.join(recordDir, 'requests'), { recursive: true });
const log = (s) => fs.appendFileSync(path.join(recordDir, 'log'), `${new Date().toISOString()} ${s}\n`);

let nreq = 0;
const recorded = new Set();
const vars = {};
let toolsSeen = 0;

// Every string in X, in order: the text of a result however the CLI wrapped it.
function strings(x, out = []) {
	if (typeof x === 'string') out.push(x);
	else if (Array.isArray(x)) x.forEach((v) => strings(v, out));
	else if (x && typeof x === 'object') Object.values(x).forEach((v) => strings(v, out));
	return out;
}

// --- per wire format: the tools offered, the conversation so far, a tool search --
// tools(body): [{name, def, call?}] (call: how to name it in a call, when not name);
// history(body): {calls: [{id, name, search?}], results: Map id -> {text, raw,
// isError}}; search(body): the move that loads deferred tools, if the CLI has one.

const anthropic = {
	tools: (body) => (body.tools ?? []).filter((t) => t.name).map((t) => ({ name: t.name, def: t })),
	history(body) {
		const made = [], results = new Map();
		for (const m of body.messages ?? []) {
			if (!Array.isArray(m.content)) continue;
			for (const b of m.content) {
				if (m.role === 'assistant' && b.type === 'tool_use')
					made.push({ id: b.id, name: b.name, search: b.name === 'ToolSearch' });
				if (m.role === 'user' && b.type === 'tool_result') {
					const text = typeof b.content === 'string' ? b.content
						: (b.content ?? []).map((c) => (c.type === 'text' ? c.text : `[${c.type} block]`)).join('\n');
					results.set(b.tool_use_id, { text, raw: b, isError: !!b.is_error });
				}
			}
		}
		return { calls: made, results };
	},
	// Claude Code defers MCP tools behind ToolSearch: select every sbxtop tool the
	// deferred list names, so each later request carries all their definitions.
	search(body) {
		if (!this.tools(body).some((t) => t.name === 'ToolSearch')) return undefined;
		const wanted = [...new Set(JSON.stringify(body).match(/mcp__sbxtop__\w+/g) ?? [])];
		return { calls: [{ name: 'ToolSearch', args: { query: `select:${wanted.join(',')}`, max_results: wanted.length } }] };
	},
};

const responses = {
	// Offered up front, or loaded by a tool search (its output item carries them).
	tools(body) {
		const out = [];
		const loaded = (Array.isArray(body.input) ? body.input : [])
			.filter((it) => it.type === 'tool_search_output').flatMap((it) => it.tools ?? []);
		for (const t of [...(body.tools ?? []), ...loaded]) {
			if (t.type === 'namespace' && Array.isArray(t.tools))
				for (const u of t.tools) out.push({ name: `${t.name}/${u.name}`, call: { namespace: t.name, name: u.name }, def: u });
			else out.push({ name: t.name ?? t.type, def: t });
		}
		return out;
	},
	history(body) {
		const made = [], results = new Map();
		for (const it of Array.isArray(body.input) ? body.input : []) {
			if (it.type === 'function_call')
				made.push({ id: it.call_id, name: it.namespace ? `${it.namespace}/${it.name}` : it.name });
			if (it.type === 'tool_search_call') made.push({ id: it.call_id, name: 'tool_search', search: true });
			if (it.type === 'function_call_output') {
				const o = it.output;
				const text = typeof o === 'string' ? o
					: Array.isArray(o) ? o.map((c) => c.text ?? `[${c.type} item]`).join('\n') : strings(o).join('\n');
				results.set(it.call_id, { text, raw: it, isError: o?.success === false });
			}
		}
		return { calls: made, results };
	},
	// Codex defers MCP tools behind its client-side tool_search (BM25 over names
	// and descriptions) for the models that support it; a wide query finds them all.
	search(body) {
		if (!(body.tools ?? []).some((t) => t.type === 'tool_search')) return undefined;
		const wanted = [...new Set(calls.map((c) => c.tool))];
		return { search: { query: `sbxtop sandbox ${wanted.join(' ')}`, limit: 100 } };
	},
};

const gemini = {
	tools: (body) => (body.tools ?? []).flatMap((t) => t.functionDeclarations ?? []).map((f) => ({ name: f.name, def: f })),
	history(body) {
		const made = [], results = new Map();
		for (const c of body.contents ?? []) {
			for (const p of c.parts ?? []) {
				if (p.functionCall) made.push({ id: p.functionCall.id, name: p.functionCall.name });
				if (p.functionResponse) {
					const resp = p.functionResponse.response ?? {};
					const text = typeof resp.output === 'string' ? resp.output
						: typeof resp.error === 'string' ? resp.error : strings(resp).join('\n');
					results.set(p.functionResponse.id, { text, raw: p, isError: 'error' in resp });
				}
			}
		}
		return { calls: made, results };
	},
	search: () => undefined,
};

// --- the script ---------------------------------------------------------------------

// The tool offered for MCP tool NAME (Claude Code: mcp__sbxtop__NAME; Codex: NAME in
// the namespace mcp__sbxtop; Gemini CLI: mcp_sbxtop_NAME), or undefined.
function findTool(offered, name) {
	const re = new RegExp(`(^|_|/)${name}$`);
	return offered.find((t) => t.name === name) ?? offered.find((t) => re.test(t.name) && /sbxtop/.test(t.name)) ??
		offered.find((t) => re.test(t.name));
}

function fill(x, i) {
	if (typeof x === 'string')
		return x.replace(/\{\{(\w+)\}\}/g, (m, v) => (v === 'i' && i !== undefined ? String(i) : v in vars ? vars[v] : m));
	if (Array.isArray(x)) return x.map((v) => fill(v, i));
	if (x && typeof x === 'object') return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, fill(v, i)]));
	return x;
}

function recordTools(offered) {
	const mine = offered.filter((t) => /sbxtop/.test(t.name));
	if (mine.length <= toolsSeen) return;
	toolsSeen = mine.length;
	const defs = mine.map((t) => t.def);
	// What the CLI adds to every tool of its own accord is not sbxtop's to
	// answer for: Gemini CLI puts a `wait_for_previous` parameter in each
	// (about 300 bytes).  own_bytes leaves those out.
	const own = JSON.parse(JSON.stringify(defs));
	for (const d of own)
		for (const sch of [d.parametersJsonSchema, d.parameters, d.input_schema])
			if (sch && sch.properties) delete sch.properties.wait_for_previous;
	fs.writeFileSync(path.join(recordDir, 'tools.json'), JSON.stringify({
		count: defs.length, bytes: JSON.stringify(defs).length,
		own_bytes: JSON.stringify(own).length,
		deferred: defs.filter((t) => t.defer_loading).length, tools: defs }));
}

// Record what came back for the calls made so far, then the next move: {calls:
// [{name, call?, args}]}, a tool search, or {text} once the script is done.
function next(d, body) {
	const offered = d.tools(body);
	recordTools(offered);
	const { calls: made, results } = d.history(body);
	const mine = made.filter((c) => !c.search);
	mine.forEach((c, k) => {
		if (k >= calls.length || recorded.has(k)) return;
		const res = results.get(c.id);
		if (!res) return;
		recorded.add(k);
		const s = calls[k];
		for (const [v, re] of Object.entries(s.save ?? {})) {
			const m = res.text.match(new RegExp(re));
			if (m) vars[v] = m[1] ?? m[0];
			else log(`call ${k} (${s.label}): nothing matches /${re}/ for {{${v}}}`);
		}
		fs.appendFileSync(path.join(recordDir, 'results.jsonl'), JSON.stringify({
			call: k, label: s.label, tool: s.tool, called_as: c.name, chars: res.text.length,
			is_error: res.isError, text: res.text, raw: res.raw }) + '\n');
		log(`call ${k} (${s.label}): ${res.text.length} characters back`);
	});
	const k = mine.length;
	if (k >= calls.length) return { text: script.final ?? 'Done.' };
	const turn = calls.filter((c, j) => j >= k && c.turn === calls[k].turn);
	const t = findTool(offered, turn[0].tool);
	if (!t) {
		const search = d.search(body);
		if (search && made.filter((c) => c.search).length < 3) {
			log(`call ${k} (${turn[0].label}): ${turn[0].tool} is not offered; a tool search first`);
			return search;
		}
		log(`call ${k} (${turn[0].label}): ${turn[0].tool} is not among the tools offered: ${offered.map((o) => o.name).join(' ')}`);
		return { text: `FAILED: the tool ${turn[0].tool} was not offered` };
	}
	return { calls: turn.map((c) => ({ name: t.name, call: t.call, args: fill(c.args ?? {}, c.i) })) };
}

// A main turn offers sbxtop's tools (or a way to find them); anything else (a
// title, a summary, a routing classifier, who speaks next) is a side request.
function isMain(d, body) {
	const offered = d.tools(body);
	return offered.some((t) => /sbxtop/.test(t.name)) || d.search(body) !== undefined ||
		calls.some((c) => findTool(offered, c.tool));
}

// --- answers in each wire format ---------------------------------------------------------

const sse = (res) => {
	res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
	return (event, data) => res.write(`${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`);
};
const json = (res, o, status = 200) => {
	res.writeHead(status, { 'content-type': 'application/json' });
	res.end(JSON.stringify(o));
};
const tokens = (body) => Math.ceil(JSON.stringify(body).length / 4);

// Anthropic Messages: content blocks, streamed as message_start, a start, delta and
// stop per block, message_delta (the stop reason), message_stop.
function answerAnthropic(res, body, move) {
	const id = `msg_judge_${nreq}`;
	const usage = { input_tokens: tokens(body), output_tokens: 10, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
	const blocks = move.text !== undefined ? [{ type: 'text', text: move.text }]
		: move.calls.map((c, j) => ({ type: 'tool_use', id: `toolu_judge_${nreq}_${j}`, name: c.name, input: c.args }));
	const stop = move.text !== undefined ? 'end_turn' : 'tool_use';
	const message = { id, type: 'message', role: 'assistant', model: body.model, content: blocks,
		stop_reason: stop, stop_sequence: null, usage };
	if (!body.stream) return json(res, message);
	const ev = sse(res);
	ev('message_start', { type: 'message_start', message: { ...message, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } } });
	blocks.forEach((b, index) => {
		if (b.type === 'text') {
			ev('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
			ev('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: b.text } });
		} else {
			ev('content_block_start', { type: 'content_block_start', index, content_block: { ...b, input: {} } });
			ev('content_block_delta', { type: 'content_block_delta', index,
				delta: { type: 'input_json_delta', partial_json: JSON.stringify(b.input) } });
		}
		ev('content_block_stop', { type: 'content_block_stop', index });
	});
	ev('message_delta', { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 10 } });
	ev('message_stop', { type: 'message_stop' });
	res.end();
}

// OpenAI Responses: output items, streamed as response.created, an added and a done
// event per item, response.completed (with the usage Codex counts).
function answerResponses(res, body, move) {
	const id = `resp_judge_${nreq}`;
	const items = move.text !== undefined
		? [{ type: 'message', id: `msg_judge_${nreq}`, role: 'assistant', status: 'completed',
			content: [{ type: 'output_text', text: move.text, annotations: [] }] }]
		: move.search ? [{ type: 'tool_search_call', id: `tsc_judge_${nreq}`, call_id: `call_judge_${nreq}`,
			status: 'completed', execution: 'client', arguments: move.search }]
		: move.calls.map((c, j) => ({ type: 'function_call', id: `fc_judge_${nreq}_${j}`, call_id: `call_judge_${nreq}_${j}`,
			status: 'completed', ...(c.call ?? { name: c.name }), arguments: JSON.stringify(c.args) }));
	const it = tokens(body);
	const usage = { input_tokens: it, input_tokens_details: { cached_tokens: 0 }, output_tokens: 10,
		output_tokens_details: { reasoning_tokens: 0 }, total_tokens: it + 10 };
	const response = { id, object: 'response', created_at: Math.floor(Date.now() / 1000), model: body.model,
		status: 'in_progress', output: [] };
	if (!body.stream) return json(res, { ...response, status: 'completed', output: items, usage });
	const ev = sse(res);
	let seq = 0;
	ev('response.created', { type: 'response.created', sequence_number: seq++, response });
	items.forEach((item, output_index) => {
		ev('response.output_item.added', { type: 'response.output_item.added', sequence_number: seq++, output_index,
			item: { ...item, status: 'in_progress' } });
		ev('response.output_item.done', { type: 'response.output_item.done', sequence_number: seq++, output_index, item });
	});
	ev('response.completed', { type: 'response.completed', sequence_number: seq++,
		response: { ...response, status: 'completed', output: items, usage } });
	res.end();
}

// Gemini: one candidate whose parts are the text or the function calls; streamed
// (alt=sse) as a single data event.
function answerGemini(res, body, move, stream) {
	const parts = move.text !== undefined ? [{ text: move.text }]
		: move.calls.map((c, j) => ({ functionCall: { id: `judge_${nreq}_${j}`, name: c.name, args: c.args } }));
	const it = tokens(body);
	const chunk = { candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }],
		usageMetadata: { promptTokenCount: it, candidatesTokenCount: 10, totalTokenCount: it + 10 },
		modelVersion: body.model ?? 'judge', responseId: `judge_${nreq}` };
	if (!stream) return json(res, chunk);
	sse(res)(null, chunk);
	res.end();
}

// A side request that wants JSON back (Gemini CLI's routing classifier, its check of
// who speaks next): an object of the schema's shape, the user speaking next.
function sideGemini(body) {
	const cfg = body.generationConfig ?? {};
	const schema = cfg.responseJsonSchema ?? cfg.responseSchema;
	if (!schema && cfg.responseMimeType !== 'application/json') return { text: 'ok' };
	const o = {};
	for (const [k, v] of Object.entries(schema?.properties ?? {})) {
		const type = String(v.type ?? 'string').toLowerCase();
		o[k] = k === 'next_speaker' ? 'user' : Array.isArray(v.enum) ? v.enum[0]
			: type === 'boolean' ? false : type === 'number' || type === 'integer' ? (v.minimum ?? 1)
			: type === 'array' ? [] : type === 'object' ? {} : 'none';
	}
	return { text: JSON.stringify(o) };
}

// Route a request; what kind it was, for the log.
function route(req, res, body) {
	const p = new URL(req.url, 'http://x').pathname;
	if (req.method === 'POST' && /\/messages\/count_tokens$/.test(p)) {
		json(res, { input_tokens: tokens(body) });
		return 'anthropic count_tokens';
	}
	if (req.method === 'POST' && /\/messages$/.test(p)) {
		const main = isMain(anthropic, body);
		answerAnthropic(res, body, main ? next(anthropic, body) : { text: 'ok' });
		return `anthropic ${main ? 'main' : 'side'}`;
	}
	if (req.method === 'POST' && /\/responses$/.test(p)) {
		const main = isMain(responses, body);
		answerResponses(res, body, main ? next(responses, body) : { text: 'ok' });
		return `responses ${main ? 'main' : 'side'}`;
	}
	if (req.method === 'POST' && /:(stream)?[gG]enerateContent$/.test(p)) {
		const main = isMain(gemini, body);
		answerGemini(res, body, main ? next(gemini, body) : sideGemini(body), /:stream/.test(p));
		return `gemini ${main ? 'main' : 'side'}`;
	}
	if (req.method === 'POST' && /:countTokens$/.test(p)) {
		json(res, { totalTokens: tokens(body) });
		return 'gemini countTokens';
	}
	json(res, { error: { type: 'not_found_error', message: `no such endpoint: ${req.method} ${p}` } }, 404);
	return 'unknown (404)';
}

const server = http.createServer((req, res) => {
	const chunks = [];
	req.on('data', (c) => chunks.push(c));
	req.on('end', () => {
		const n = ++nreq;
		const raw = Buffer.concat(chunks).toString('utf8');
		let body = {};
		try { body = raw ? JSON.parse(raw) : {}; } catch { body = { unparsed: raw.slice(0, 1000) }; }
		fs.writeFileSync(path.join(recordDir, 'requests', `${String(n).padStart(3, '0')}.json`),
			JSON.stringify({ method: req.method, path: req.url, body }));
		try {
			log(`#${n} ${req.method} ${req.url} ${raw.length} bytes: ${route(req, res, body)}`);
		} catch (e) {
			log(`#${n} ${req.method} ${req.url}: ${e.stack}`);
			if (!res.headersSent) res.writeHead(500);
			res.end();
		}
	});
});
server.listen(0, '127.0.0.1', () => console.log(`listening http://127.0.0.1:${server.address().port}`));
process.on('SIGTERM', () => process.exit(0));
