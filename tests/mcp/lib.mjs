// Helpers for the end-to-end MCP tests: the sbxtop binary, an SDK client over
// stdio, a raw line-level client for what the SDK will not send, and sandboxes
// made with the CLI.  Run through tests/integration/mcp-sdk.sh, which exports
// private XDG directories and SBXTOP.
import { spawn, execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const here = path.dirname(fileURLToPath(import.meta.url));
export const SBXTOP = process.env.SBXTOP || path.resolve(here, '../../build/sbxtop');

export { sleep };

// An SDK client connected to a fresh `sbxtop --mcp`; its stderr is collected.
export async function connect(name = 'sbxtop-tests') {
	const transport = new StdioClientTransport({
		command: SBXTOP, args: ['--mcp'], env: { ...process.env }, stderr: 'pipe',
	});
	const client = new Client({ name, version: '1.0' }, { capabilities: {} });
	let stderr = '';
	transport.stderr?.on('data', (d) => { stderr += d; });
	await client.connect(transport);
	client.stderrText = () => stderr;
	return client;
}

// A raw client: write lines, read parsed lines back (sbxtop ARGS, in env).
export class Raw {
	constructor(args = ['--mcp'], env = process.env) {
		this.proc = spawn(SBXTOP, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
		this.lines = [];
		this.waiters = [];
		this.stderr = '';
		this.nonjson = [];
		let acc = '';
		this.proc.stdout.setEncoding('utf8');
		this.proc.stdout.on('data', (d) => {
			acc += d;
			let i;
			while ((i = acc.indexOf('\n')) >= 0) {
				const line = acc.slice(0, i);
				acc = acc.slice(i + 1);
				let msg;
				try { msg = JSON.parse(line); } catch { this.nonjson.push(line); continue; }
				this.lines.push(msg);
				this.poke();
			}
		});
		this.proc.stderr.on('data', (d) => { this.stderr += d; });
		this.exited = new Promise((resolve) => this.proc.on('exit', (code, sig) => {
			this.exitCode = code;
			this.exitSignal = sig;
			this.poke();
			resolve(code);
		}));
	}

	poke() {
		const w = this.waiters;
		this.waiters = [];
		w.forEach((f) => f());
	}

	write(text) {
		return new Promise((resolve, reject) =>
			this.proc.stdin.write(text, (err) => (err ? reject(err) : resolve())));
	}

	send(obj) {
		return this.write(JSON.stringify(obj) + '\n');
	}

	// The first message (consumed) matching pred, within ms.
	async waitFor(pred, ms = 10000) {
		const end = Date.now() + ms;
		for (;;) {
			const i = this.lines.findIndex(pred);
			if (i >= 0)
				return this.lines.splice(i, 1)[0];
			if (Date.now() > end || this.exitCode !== undefined)
				throw new Error(`no matching message in ${ms} ms; got ${JSON.stringify(this.lines)}; stderr: ${this.stderr}`);
			await new Promise((resolve) => {
				this.waiters.push(resolve);
				setTimeout(resolve, 50);
			});
		}
	}

	reply(id, ms) {
		return this.waitFor((m) => m.id === id && ('result' in m || 'error' in m), ms);
	}

	async request(id, method, params, ms) {
		await this.send(params === undefined ? { jsonrpc: '2.0', id, method }
			: { jsonrpc: '2.0', id, method, params });
		return this.reply(id, ms);
	}

	async initialize(version = '2025-11-25') {
		const r = await this.request(0, 'initialize', {
			protocolVersion: version, capabilities: {},
			clientInfo: { name: 'raw-test', version: '0' },
		});
		await this.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
		return r;
	}

	async close() {
		if (this.exitCode === undefined) {
			this.proc.stdin.end();
			const t = setTimeout(() => this.proc.kill('SIGKILL'), 10000);
			await this.exited;
			clearTimeout(t);
		}
	}
}

export function sbxtop(...args) {
	return execFileSync(SBXTOP, args, { env: process.env, encoding: 'utf8',
		stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

export function createSandbox() {
	return sbxtop('create').split('\n').pop();
}

export function destroySandbox(id) {
	try { sbxtop('destroy', id); } catch { /* already gone */ }
}

// Processes in sandbox id whose command line matches the regex (pgrep -f).
export function pgrep(id, regex) {
	try {
		return sbxtop('exec', '-n', id, '--', `pgrep -f '${regex}' || true`);
	} catch (e) {
		return `error: ${e.message}`;
	}
}

// Poll fn until it returns truthy or ms pass; returns its last value.
export async function until(fn, ms = 10000, step = 100) {
	const end = Date.now() + ms;
	let v;
	while (!(v = await fn()) && Date.now() < end)
		await sleep(step);
	return v;
}

// `sbxtop serve --listen 127.0.0.1:0` for a file of tests: {proc, url (its
// /mcp), base, token, stderr()}, once it has printed its URL and token.
export async function listen() {
	let stderr = '';
	const proc = spawn(SBXTOP, ['serve', '--listen', '127.0.0.1:0'], { env: process.env,
		stdio: ['ignore', 'ignore', 'pipe'] });
	proc.stderr.setEncoding('utf8');
	proc.stderr.on('data', (d) => { stderr += d; });
	if (!await until(() => /at (http:\S+)/.test(stderr) && /token: (\S+)/.test(stderr),
		10000, 50))
		throw new Error(`the server printed no URL and token: ${stderr}`);
	const url = stderr.match(/at (http:\S+)/)[1];
	return { proc, url, base: url.replace(/\/mcp$/, ''), token: stderr.match(/token: (\S+)/)[1],
		stderr: () => stderr };
}

// Stop a listen() server: SIGTERM, SIGKILL after 15 s; resolves once it exited.
export async function stopListener(proc) {
	if (proc.exitCode !== null)
		return;
	proc.kill('SIGTERM');
	const t = setTimeout(() => proc.kill('SIGKILL'), 15000);
	await new Promise((resolve) => (proc.exitCode !== null ? resolve() : proc.on('exit', resolve)));
	clearTimeout(t);
}
