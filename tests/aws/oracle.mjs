// The official AWS SDK for JavaScript v3 (@aws-sdk/client-lambda-microvms) as the
// oracle of what sbxtop's lambda backend sends and parses.  Used by
// tests/integration/lambda-sdk.sh; prints "PASS what" and "FAIL what: why" lines,
// which the shell test turns into TAP.
//
//   oracle.mjs proxy UPSTREAM LOG PORTFILE
//       a recording proxy: every request, as received, one JSON line in LOG, then
//       passed to UPSTREAM (the fake) and its answer passed back
//   oracle.mjs compare LOG
//       each Lambda MicroVMs request in LOG (sbxtop's): the operation of the SDK's
//       model it is (method and path template), its body checked against the
//       operation's input schema, then the same operation sent through the SDK
//       to a recorder here and the two requests compared: method, path, query,
//       Content-Type, JSON body, the SigV4 scope (service "lambda")
//   oracle.mjs parse FAKE_URL IMAGE_ARN REGION AK SK
//       the SDK against the fake: every operation sbxtop uses, its answers read
//       by the SDK and checked against the output schemas, and the errors the
//       fake gives parsed into the SDK's exceptions with their fields
//   oracle.mjs error FAKE_URL REGION AK SK OP JSON_INPUT
//       one SDK call; prints the exception name it raised ("-" for none)
//   oracle.mjs endpoint REGION...
//       the endpoint the SDK's rules resolve for each region, one a line
import http from "node:http";
import fs from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "package.json"));
const sdk = require("@aws-sdk/client-lambda-microvms");

// --- the SDK's own model: operations and schemas ---------------------------------

// A member or shape reference as the SDK's static schemas write it: a number
// (simple type), a function returning the schema, or [schema, traits].
function deref(s) {
	return typeof s === "function" ? s() : s;
}
function member(m) {
	// [schema, traits] pairs, as against a static schema array [kind, ns, name, ...].
	if (Array.isArray(m) && typeof m[1] !== "string")
		return { schema: deref(m[0]), traits: m[1] };
	return { schema: deref(m), traits: 0 };
}
const TRAIT_LABEL = 1, TRAIT_IDEMPOTENCY = 4;

function structMembers(s) {
	s = deref(s);
	if (!Array.isArray(s) || (s[0] !== 3 && s[0] !== -3 && s[0] !== 4))
		return null;
	const names = s[4], types = s[5], required = s[6] || 0;
	return names.map((n, i) => {
		const m = member(types[i]);
		const t = m.traits;
		return {
			name: n, schema: m.schema,
			label: typeof t === "number" && (t & TRAIT_LABEL) !== 0,
			token: typeof t === "number" && (t & TRAIT_IDEMPOTENCY) !== 0,
			query: typeof t === "object" && t !== null ? t.httpQuery : undefined,
			header: typeof t === "object" && t !== null ? t.httpHeader : undefined,
			required: i < required,
		};
	});
}

// Every operation: name, method, path template, input and output schemas.
const OPS = Object.keys(sdk).filter((k) => k.endsWith("$")).map((k) => sdk[k])
	.filter((s) => Array.isArray(s) && s[0] === 9).map((s) => ({
		name: s[2], method: s[3].http[0], template: s[3].http[1], status: s[3].http[2],
		input: deref(s[4]), output: deref(s[5]),
	}));

function matchOp(method, rawPath) {
	for (const op of OPS) {
		if (op.method !== method)
			continue;
		const labels = [];
		const re = new RegExp("^" + op.template.replace(/[.*+?^$()|[\]\\]/g, "\\$&")
			.replace(/\{(\w+)\}/g, (_, n) => { labels.push(n); return "([^/]+)"; }) + "$");
		const m = rawPath.match(re);
		if (m) {
			const vals = {};
			labels.forEach((n, i) => { vals[n] = decodeURIComponent(m[i + 1]); });
			return { op, labels: vals };
		}
	}
	return null;
}

// Check value against schema s; errors pushed as strings naming the path.
function validate(s, v, where, errs) {
	s = deref(s);
	if (typeof s === "number") {
		if (s === 0) {
			if (typeof v !== "string") errs.push(`${where}: not a string`);
		} else if (s === 1) {
			if (typeof v !== "number") errs.push(`${where}: not a number`);
		} else if (s === 2) {
			if (typeof v !== "boolean") errs.push(`${where}: not a boolean`);
		} else if (s >= 4 && s <= 7) {
			if (typeof v !== "number" && typeof v !== "string") errs.push(`${where}: not a timestamp`);
		} else if (s & 64) {
			if (!Array.isArray(v)) errs.push(`${where}: not a list`);
			else v.forEach((x, i) => validate(s & 63, x, `${where}[${i}]`, errs));
		} else if (s & 128) {
			if (typeof v !== "object" || v === null || Array.isArray(v)) errs.push(`${where}: not a map`);
			else for (const k of Object.keys(v)) validate(s & 63, v[k], `${where}.${k}`, errs);
		}
		return;
	}
	if (s === "unit") {
		if (typeof v !== "object" || v === null || Object.keys(v).length) errs.push(`${where}: not {}`);
		return;
	}
	if (!Array.isArray(s)) return;
	if (s[0] === 0) return validate(s[4], v, where, errs);
	if (s[0] === 1) {
		if (!Array.isArray(v)) return errs.push(`${where}: not a list`);
		return v.forEach((x, i) => validate(member(s[4]).schema, x, `${where}[${i}]`, errs));
	}
	if (s[0] === 2) {
		if (typeof v !== "object" || v === null) return errs.push(`${where}: not a map`);
		for (const k of Object.keys(v)) validate(member(s[5]).schema, v[k], `${where}.${k}`, errs);
		return;
	}
	if (s[0] === 3 || s[0] === 4) {
		if (typeof v !== "object" || v === null || Array.isArray(v))
			return errs.push(`${where}: not an object`);
		const ms = structMembers(s).filter((m) => !m.label && !m.query && !m.header);
		for (const k of Object.keys(v))
			if (!ms.find((m) => m.name === k)) errs.push(`${where}.${k}: not a member of ${s[2]}`);
		if (s[0] === 4 && Object.keys(v).length !== 1)
			errs.push(`${where}: a union (${s[2]}) holds exactly one member`);
		for (const m of ms) {
			if (m.name in v) validate(m.schema, v[m.name], `${where}.${m.name}`, errs);
			else if (m.required && s[0] === 3) errs.push(`${where}.${m.name}: required, missing`);
		}
	}
}

// --- recording ------------------------------------------------------------------

function readBody(req) {
	return new Promise((resolve) => {
		const parts = [];
		req.on("data", (c) => parts.push(c));
		req.on("end", () => resolve(Buffer.concat(parts)));
	});
}

function record(req, body) {
	return { method: req.method, url: req.url, headers: req.headers, body: body.toString("utf8") };
}

async function proxy(upstream, log, portFile) {
	const up = new URL(upstream);
	const srv = http.createServer(async (req, res) => {
		const body = await readBody(req);
		fs.appendFileSync(log, JSON.stringify(record(req, body)) + "\n");
		const headers = { ...req.headers };
		const p = http.request({ host: up.hostname, port: up.port, method: req.method, path: req.url,
			headers }, (r) => {
			res.writeHead(r.statusCode, r.headers);
			r.pipe(res);
		});
		p.on("error", (e) => { res.writeHead(502); res.end(String(e)); });
		p.end(body);
	});
	await new Promise((r) => srv.listen(0, "127.0.0.1", r));
	fs.writeFileSync(portFile + ".tmp", `${srv.address().port}\n`);
	fs.renameSync(portFile + ".tmp", portFile);
}

// A recorder answering {} to everything: where the SDK's copy of each request goes.
async function recorder() {
	const got = [];
	const srv = http.createServer(async (req, res) => {
		got.push(record(req, await readBody(req)));
		res.writeHead(200, { "content-type": "application/json" });
		res.end("{}");
	});
	await new Promise((r) => srv.listen(0, "127.0.0.1", r));
	return { srv, got, url: `http://127.0.0.1:${srv.address().port}` };
}

function scope(auth) {
	const m = /Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request/.exec(auth || "");
	return m ? { key: m[1], region: m[3], service: m[4] } : null;
}
function signed(auth) {
	const m = /SignedHeaders=([^,]+)/.exec(auth || "");
	return m ? m[1].split(";") : [];
}
function splitUrl(u) {
	const i = u.indexOf("?");
	return i < 0 ? [u, ""] : [u.slice(0, i), u.slice(i + 1)];
}
function sortedQuery(q) {
	return q === "" ? [] : q.split("&").sort();
}
function canon(v) {
	if (Array.isArray(v)) return v.map(canon);
	if (v && typeof v === "object")
		return Object.fromEntries(Object.keys(v).sort().map((k) => [k, canon(v[k])]));
	return v;
}
const same = (a, b) => JSON.stringify(canon(a)) === JSON.stringify(canon(b));

function client(endpoint, region, ak, sk, extra = {}) {
	return new sdk.LambdaMicrovmsClient({ region, endpoint,
		credentials: { accessKeyId: ak, secretAccessKey: sk }, maxAttempts: 1, ...extra });
}

const out = [];
const pass = (what) => out.push(`PASS ${what}`);
const fail = (what, why) => out.push(`FAIL ${what}: ${why}`);
const check = (what, cond, why) => (cond ? pass(what) : fail(what, why));

async function compare(log) {
	const lines = fs.readFileSync(log, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
	const rec = await recorder();
	const seen = new Set(), seenShapes = new Set();
	for (const r of lines) {
		const sc = scope(r.headers.authorization);
		const [rawPath, rawQuery] = splitUrl(r.url);
		if (sc && sc.service !== "lambda" && rawPath === "/" && r.method === "POST")
			continue;	/* STS through the same endpoint: not this API */
		const m = matchOp(r.method, rawPath);
		if (m === null) {
			fail(`${r.method} ${rawPath}`, "no operation of the SDK's model has this method and path");
			continue;
		}
		const op = m.op;
		const what = `${op.name} (${r.method} ${rawPath.replace(/\/mvm-[^/]+/, "/ID")
			.replace(/\/arn%3A[^/]+/g, "/ARN")})`;
		// Each shape once: GetMicrovm polls, ListMicrovms pages alike.
		const shape = `${op.name} ${[...new URLSearchParams(rawQuery).keys()].sort()} ` +
			`${r.headers["content-type"] || ""} ${r.body.replace(/mvm-[0-9a-f]+|sbx-[0-9a-f]+-\d+/g, "X")}`;
		if (seenShapes.has(shape))
			continue;
		seenShapes.add(shape);
		const members = structMembers(op.input);
		const input = { ...m.labels };
		const errs = [];
		const q = new URLSearchParams(rawQuery);
		for (const k of q.keys()) {
			const mm = members.find((x) => x.query === k);
			if (!mm) errs.push(`query ${k}: not a query member of ${op.name}`);
			else input[mm.name] = mm.schema === 1 ? Number(q.get(k)) : q.get(k);
		}
		let body = null;
		if (r.body !== "") {
			try { body = JSON.parse(r.body); } catch { errs.push("the body is not JSON"); }
		}
		if (body !== null) {
			validate(op.input, body, op.name, errs);
			Object.assign(input, body);
		} else {
			for (const mm of members)
				if (mm.required && !mm.label && !mm.query && !mm.header)
					errs.push(`${mm.name}: required, and there is no body`);
		}
		check(`${what}: the body fits the SDK's ${op.input[2]} schema`, errs.length === 0, errs.join("; "));
		// The same operation through the SDK.
		const before = rec.got.length;
		const c = client(rec.url, sc ? sc.region : "us-east-1", sc ? sc.key : "AK", "secret");
		try {
			await c.send(new sdk[`${op.name}Command`](input));
		} catch (e) {
			fail(`${what}: the SDK sends it`, e.name + ": " + e.message);
			continue;
		}
		const s = rec.got[before];
		const [sPath, sQuery] = splitUrl(s.url);
		check(`${what}: method`, s.method === r.method, `sbxtop ${r.method}, SDK ${s.method}`);
		check(`${what}: path`, sPath === rawPath, `sbxtop ${rawPath}, SDK ${sPath}`);
		check(`${what}: query`, same(sortedQuery(sQuery), sortedQuery(rawQuery)),
			`sbxtop '${rawQuery}', SDK '${sQuery}'`);
		check(`${what}: Content-Type`, (s.headers["content-type"] || "") === (r.headers["content-type"] || ""),
			`sbxtop '${r.headers["content-type"] || ""}', SDK '${s.headers["content-type"] || ""}'`);
		const sb = s.body === "" ? null : JSON.parse(s.body);
		check(`${what}: JSON body`, same(sb, body), `sbxtop ${r.body}, SDK ${s.body}`);
		const ss = scope(s.headers.authorization);
		check(`${what}: SigV4 scope`, sc !== null && ss !== null && sc.service === ss.service &&
			sc.region === ss.region && sc.service === "lambda",
			`sbxtop ${JSON.stringify(sc)}, SDK ${JSON.stringify(ss)}`);
		const sh = signed(r.headers.authorization);
		const need = ["host", "x-amz-date"].concat(r.headers["content-type"] ? ["content-type"] : []);
		check(`${what}: signed headers hold ${need.join(", ")}`, need.every((h) => sh.includes(h)),
			`sbxtop signs ${sh.join(";")}`);
		seen.add(op.name);
	}
	rec.srv.close();
	out.push(`OPS ${[...seen].sort().join(" ")}`);
}

// --- the SDK reading the fake's answers and errors ---------------------------------

function outputOk(op, o, what) {
	const s = OPS.find((x) => x.name === op).output;
	const errs = [];
	const data = Object.fromEntries(Object.entries(o).filter(([k]) => k !== "$metadata"));
	// The SDK turns timestamps into Dates; the schema check wants numbers.
	const plain = JSON.parse(JSON.stringify(data, (k, v) => (typeof v === "string" &&
		/^\d{4}-\d\d-\d\dT/.test(v) ? 0 : v)));
	validate(s, plain, op, errs);
	check(`${what}: the answer fits the SDK's ${s === "unit" ? "Unit" : s[2]} schema`,
		errs.length === 0, errs.join("; "));
}

async function expectError(what, p, name, fields = []) {
	try {
		await p;
		fail(what, `no error; wanted ${name}`);
	} catch (e) {
		check(`${what}: the SDK raises ${name}`, e.name === name, `${e.name}: ${e.message}`);
		for (const f of fields)
			check(`${what}: ${name}.${f} parsed`, e[f] !== undefined && e[f] !== null,
				`${JSON.stringify(Object.fromEntries(Object.entries(e)))}`);
		return e;
	}
	return null;
}

async function waitState(c, id, want) {
	for (let i = 0; i < 200; i++) {
		const o = await c.send(new sdk.GetMicrovmCommand({ microvmIdentifier: id }));
		if (o.state === want) return o;
		await new Promise((r) => setTimeout(r, 50));
	}
	return null;
}

async function parse(url, image, region, ak, sk) {
	const c = client(url, region, ak, sk);
	const conn = (w) => `arn:aws:lambda:${region}:aws:network-connector:aws-network-connector:${w}`;
	const run = await c.send(new sdk.RunMicrovmCommand({ imageIdentifier: image,
		ingressNetworkConnectors: [conn("ALL_INGRESS"), conn("SHELL_INGRESS")],
		idlePolicy: { autoResumeEnabled: true, maxIdleDurationSeconds: 600, suspendedDurationSeconds: 600 },
		maximumDurationInSeconds: 600, runHookPayload: JSON.stringify({ secret: "0123456789abcdef0123" }) }));
	outputOk("RunMicrovm", run, "RunMicrovm");
	check("RunMicrovm: startedAt read as a Date", run.startedAt instanceof Date, typeof run.startedAt);
	const id = run.microvmId;
	const got = await waitState(c, id, "RUNNING");
	check("GetMicrovm: RUNNING", got !== null, "never RUNNING");
	if (got) outputOk("GetMicrovm", got, "GetMicrovm");
	const run2 = await c.send(new sdk.RunMicrovmCommand({ imageIdentifier: image,
		ingressNetworkConnectors: [conn("ALL_INGRESS")] }));
	await waitState(c, run2.microvmId, "RUNNING");
	// Pagination: one item a page, the SDK's own paginator.
	const ids = [];
	let pages = 0;
	for await (const page of sdk.paginateListMicrovms({ client: c, pageSize: 1 }, {})) {
		pages++;
		outputOk("ListMicrovms", page, `ListMicrovms page ${pages}`);
		for (const it of page.items) ids.push(it.microvmId);
	}
	check("ListMicrovms: the SDK's paginator follows nextToken to every MicroVM",
		ids.includes(id) && ids.includes(run2.microvmId) && pages >= 2, `${pages} pages, ${ids}`);
	const tok = await c.send(new sdk.CreateMicrovmAuthTokenCommand({ microvmIdentifier: id,
		expirationInMinutes: 5, allowedPorts: [{ port: 8080 }, { range: { startPort: 9000, endPort: 9001 } }] }));
	outputOk("CreateMicrovmAuthToken", tok, "CreateMicrovmAuthToken");
	check("CreateMicrovmAuthToken: authToken['X-aws-proxy-auth'] read",
		typeof tok.authToken?.["X-aws-proxy-auth"] === "string", JSON.stringify(tok));
	await expectError("CreateMicrovmAuthToken with two members in one PortSpecification",
		c.send(new sdk.CreateMicrovmAuthTokenCommand({ microvmIdentifier: id, expirationInMinutes: 5,
			allowedPorts: [{ port: 1, allPorts: {} }] })), "ValidationException", ["message"]);
	const sh = await c.send(new sdk.CreateMicrovmShellAuthTokenCommand({ microvmIdentifier: id,
		expirationInMinutes: 5 }));
	outputOk("CreateMicrovmShellAuthToken", sh, "CreateMicrovmShellAuthToken");
	check("CreateMicrovmShellAuthToken: a header map read", Object.keys(sh.authToken || {}).length > 0,
		JSON.stringify(sh));
	await expectError("CreateMicrovmShellAuthToken without SHELL_INGRESS",
		c.send(new sdk.CreateMicrovmShellAuthTokenCommand({ microvmIdentifier: run2.microvmId,
			expirationInMinutes: 5 })), "ValidationException", ["message"]);
	outputOk("SuspendMicrovm", await c.send(new sdk.SuspendMicrovmCommand({ microvmIdentifier: id })),
		"SuspendMicrovm");
	check("SuspendMicrovm: SUSPENDED", (await waitState(c, id, "SUSPENDED")) !== null, "never SUSPENDED");
	await expectError("SuspendMicrovm on a SUSPENDED MicroVM",
		c.send(new sdk.SuspendMicrovmCommand({ microvmIdentifier: id })), "ConflictException",
		["message", "resourceId", "resourceType"]);
	outputOk("ResumeMicrovm", await c.send(new sdk.ResumeMicrovmCommand({ microvmIdentifier: id })),
		"ResumeMicrovm");
	check("ResumeMicrovm: RUNNING", (await waitState(c, id, "RUNNING")) !== null, "never RUNNING");
	for (const v of [id, run2.microvmId])
		outputOk("TerminateMicrovm", await c.send(new sdk.TerminateMicrovmCommand({ microvmIdentifier: v })),
			"TerminateMicrovm");
	await expectError("TerminateMicrovm twice", c.send(new sdk.TerminateMicrovmCommand({
		microvmIdentifier: id })), "ConflictException", ["resourceId", "resourceType"]);
	const e404 = await expectError("GetMicrovm of an unknown id",
		c.send(new sdk.GetMicrovmCommand({ microvmIdentifier: "mvm-0000000000000000" })),
		"ResourceNotFoundException", ["message", "resourceId", "resourceType"]);
	check("ResourceNotFoundException: HTTP 404", e404?.$metadata?.httpStatusCode === 404,
		String(e404?.$metadata?.httpStatusCode));
	await expectError("RunMicrovm over the maximum duration", c.send(new sdk.RunMicrovmCommand({
		imageIdentifier: image, maximumDurationInSeconds: 28801 })), "ValidationException", ["message"]);
	// Throttling: the fake's error carries Retry-After, a header member.
	await fetch(`${url}/_fake/throttle`, { method: "POST",
		body: JSON.stringify({ op: "GetMicrovm", count: 1 }) });
	const te = await expectError("GetMicrovm throttled", c.send(new sdk.GetMicrovmCommand({
		microvmIdentifier: id })), "ThrottlingException", ["message", "quotaCode", "serviceCode"]);
	check("ThrottlingException.retryAfterSeconds from the Retry-After header",
		te?.retryAfterSeconds === 0, String(te?.retryAfterSeconds));
	// Images.
	const img = await c.send(new sdk.GetMicrovmImageCommand({ imageIdentifier: image }));
	outputOk("GetMicrovmImage", img, "GetMicrovmImage");
	check("GetMicrovmImage: state and latestActiveImageVersion read",
		img.state === "CREATED" && typeof img.latestActiveImageVersion === "string", JSON.stringify(img));
	const iv = await c.send(new sdk.GetMicrovmImageVersionCommand({ imageIdentifier: image,
		imageVersion: img.latestActiveImageVersion }));
	outputOk("GetMicrovmImageVersion", iv, "GetMicrovmImageVersion");
	check("GetMicrovmImageVersion: status, buildRoleArn and codeArtifact.uri read",
		iv.status === "ACTIVE" && /:role\//.test(iv.buildRoleArn || "") &&
		/^s3:\/\//.test(iv.codeArtifact?.uri || ""), JSON.stringify(iv));
	const acct = image.split(":")[4];
	const ci = await c.send(new sdk.CreateMicrovmImageCommand({ name: "sdk-oracle",
		baseImageArn: `arn:aws:lambda:${region}:aws:microvm-image:al2023-1`,
		buildRoleArn: `arn:aws:iam::${acct}:role/sbxtop-build`, codeArtifact: { uri: "s3://b/k.zip" },
		cpuConfigurations: [{ architecture: "ARM_64" }] }));
	outputOk("CreateMicrovmImage", ci, "CreateMicrovmImage");
	check("CreateMicrovmImage: 201 with the image's ARN", ci.$metadata.httpStatusCode === 201 &&
		/microvm-image:sdk-oracle$/.test(ci.imageArn || ""), JSON.stringify(ci));
	const lb = await c.send(new sdk.ListMicrovmImageBuildsCommand({ imageIdentifier: image,
		imageVersion: img.latestActiveImageVersion }));
	outputOk("ListMicrovmImageBuilds", lb, "ListMicrovmImageBuilds");
	check("ListMicrovmImageBuilds: a SUCCESSFUL build read", lb.items?.[0]?.buildState === "SUCCESSFUL",
		JSON.stringify(lb));
	await expectError("GetMicrovmImage of an unknown image", c.send(new sdk.GetMicrovmImageCommand({
		imageIdentifier: "nope" })), "ResourceNotFoundException", ["resourceId"]);
	// A wrong signature, as the fake refuses it: the SDK names the exception too.
	const bad = client(url, region, ak, "wrong-secret");
	const se = await expectError("a request signed with the wrong secret", bad.send(
		new sdk.GetMicrovmCommand({ microvmIdentifier: id })), "InvalidSignatureException");
	check("a signature error is a 403", se?.$metadata?.httpStatusCode === 403, String(se?.$metadata?.httpStatusCode));
}

async function oneError(url, region, ak, sk, op, json) {
	const c = client(url, region, ak, sk);
	try {
		await c.send(new sdk[`${op}Command`](JSON.parse(json)));
		console.log("-");
	} catch (e) {
		console.log(e.name);
	}
}

async function endpoints(regions) {
	for (const r of regions) {
		const c = new sdk.LambdaMicrovmsClient({ region: r, credentials: { accessKeyId: "a", secretAccessKey: "b" } });
		const ep = await c.config.endpointProvider({ Region: r, UseFIPS: false, UseDualStack: false });
		console.log(`${r} ${ep.url.href.replace(/\/$/, "")}`);
	}
}

const [cmd, ...args] = process.argv.slice(2);
try {
	if (cmd === "proxy") {
		await proxy(args[0], args[1], args[2]);
	} else if (cmd === "compare") {
		await compare(args[0]);
	} else if (cmd === "parse") {
		await parse(...args);
	} else if (cmd === "error") {
		await oneError(...args);
	} else if (cmd === "endpoint") {
		await endpoints(args);
	} else {
		console.error("usage: oracle.mjs proxy|compare|parse|error|endpoint ...");
		process.exit(2);
	}
} catch (e) {
	fail(`oracle ${cmd}`, e.stack || String(e));
}
if (out.length) console.log(out.join("\n"));
