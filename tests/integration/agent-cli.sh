# What the model sees, judged by the real agent CLIs: Claude Code, Codex CLI and
# Gemini CLI, pinned by tests/agents/package-lock.json, each configured with
# `sbxtop --mcp` through its own configuration (Claude Code: --mcp-config JSON;
# Codex: config.toml [mcp_servers]; Gemini CLI: settings.json mcpServers) in a
# private HOME, and driven by a scripted model on loopback
# (tests/tools/model-endpoint.mjs) that speaks the CLI's model API.  The model's
# side is tests/agents/session.json: the error paths, a build printing 2 MB that
# fails at its end, a 1 MB text file and a binary file read, a listing of / in
# depth, 200 background jobs and the process list, an npm install's node_modules
# and ~/.npm cache beside the agent's own edits and then a diff, destroy.  The
# endpoint records every request the CLI makes; a tool result in the next request
# is what the model saw, and the checks are on that: each result inline (no
# "exceeds maximum allowed tokens", "Output too large", "tokens truncated" or
# other stand-in)
# and within DESIGN.md section 14's budget (25,000 characters), the build's exit
# code and last stderr line visible, the diff's totals and the agent's edits
# named, the listing reaching /workspace with a total, the binary file said to
# be binary, each error saying what to do next, sbxtop's tool definitions as the
# CLI sent them (and tools/list over stdio) at most 12 KB, no sandbox left.
# Run it alone with `tests/run.sh agent-cli` (after `npm ci --prefix tests/agents`);
# AGENT_CLIS="claude codex" picks CLIs; AGENT_CLI_KEEP=DIR keeps the records.
. "$(dirname "$0")/../lib.sh"

A="$TOP/tests/agents/node_modules"
npm_ready agents @anthropic-ai/claude-code-linux-x64/claude \
	@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex @google/gemini-cli/bundle/gemini.js
CLAUDE="$A/@anthropic-ai/claude-code-linux-x64/claude"
CODEX="$A/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
GEMINI="$A/@google/gemini-cli/bundle/gemini.js"
SESSION="$TOP/tests/agents/session.json"
BUDGET=25000
TOOLS_MAX=12288
# AGENT_CLI_KEEP=DIR: each CLI's records (rec/: every request, what came back,
# the log; out: what the CLI printed) are copied to DIR/<cli> at the end.
if [ -n "${AGENT_CLI_KEEP:-}" ]; then
	mkdir -p "$AGENT_CLI_KEEP"
	at_exit 'for _d in "$T"/*/rec; do _c=${_d%/rec}; _c=${_c##*/}; mkdir -p "$AGENT_CLI_KEEP/$_c"; cp -r "$_d" "$T/$_c/out" "$AGENT_CLI_KEEP/$_c/"; done'
fi
destroy_left_at_exit
PROMPT="Build the project in an sbxtop sandbox, find why it fails, and clean up."

# --- tools/list over stdio ------------------------------------------------------
python3 "$TOP/tests/tools/mcp-calls.py" "$SBXTOP" 30 tools/list '{}' > "$T/tools-list" 2> "$T/tools-list.err"
NTOOLS=$(node -e 'const l = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
	const r = l.find((m) => m.result && m.result.tools).result;
	console.log(r.tools.length, JSON.stringify(r).length)' "$T/tools-list" 2>/dev/null)
TOOLS_BYTES=${NTOOLS#* } NTOOLS=${NTOOLS% *}
like "tools/list over stdio answers" "${NTOOLS:-none}" '^[0-9]+$'
check "tools/list over stdio is at most 12 KB of JSON ($TOOLS_BYTES bytes, $NTOOLS tools)" \
	[ "${TOOLS_BYTES:-999999}" -le "$TOOLS_MAX" ]

# --- the scripted model -----------------------------------------------------------
# endpoint_start DIR: the endpoint for one CLI session, recording into DIR/rec; its
# URL in EP, its pid in EP_PID.
endpoint_start() {
	node "$TOP/tests/tools/model-endpoint.mjs" "$SESSION" "$1/rec" > "$1/endpoint.out" 2> "$1/endpoint.err" &
	EP_PID=$!
	at_exit "kill $EP_PID 2>/dev/null"
	EP=
	for _i in $(seq 100); do
		EP=$(sed -n 's/^listening //p' "$1/endpoint.out")
		[ -n "$EP" ] && return 0
		sleep 0.1
	done
	not_ok "the scripted model endpoint started"
	sed 's/^/# /' "$1/endpoint.err"
	return 1
}

# The environment sbxtop needs, as each CLI's configuration passes it: the test's
# private XDG directories (lib.sh).
SBX_ENV="XDG_STATE_HOME XDG_RUNTIME_DIR XDG_CONFIG_HOME XDG_DATA_HOME XDG_CACHE_HOME SBXTOP_SERVE_GRACE"
sbx_env_json() {	# {"NAME":"value",...}
	for _v in $SBX_ENV; do eval "printf '%s\n' \"\$_v=\$$_v\""; done |
		node -e 'const o = {}; for (const l of require("fs").readFileSync(0, "utf8").trim().split("\n")) {
			const i = l.indexOf("="); o[l.slice(0, i)] = l.slice(i + 1); } console.log(JSON.stringify(o))'
}
# cli_env DIR [VAR=VALUE...] CMD...: CMD in a clean environment: a private HOME and XDG
# directories under DIR, nothing of the machine's (keys, proxies, settings).
cli_env() {
	_h=$1; shift
	mkdir -p "$_h/home" "$_h/xdg/config" "$_h/xdg/cache" "$_h/xdg/data" "$_h/xdg/state" "$_h/work"
	(cd "$_h/work" && timeout -k 5 150 env -i PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 TERM=dumb HOME="$_h/home" \
		XDG_CONFIG_HOME="$_h/xdg/config" XDG_CACHE_HOME="$_h/xdg/cache" XDG_DATA_HOME="$_h/xdg/data" \
		XDG_STATE_HOME="$_h/xdg/state" TMPDIR="$_h" "$@" < /dev/null)
}

# --- each CLI, configured its own way ---------------------------------------------
# Claude Code: Anthropic Messages at ANTHROPIC_BASE_URL (POST /v1/messages?beta=true,
# SSE); the server in an --mcp-config file; -p prints the answer and exits; it
# refuses bypassPermissions as root, so --allowedTools lets sbxtop's tools run.
run_claude() {
	printf '{"mcpServers":{"sbxtop":{"type":"stdio","command":"%s","args":["--mcp"],"env":%s}}}\n' \
		"$SBXTOP" "$(sbx_env_json)" > "$1/mcp.json"
	cli_env "$1" ANTHROPIC_BASE_URL="$EP" ANTHROPIC_API_KEY=sk-ant-judge CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
		"$CLAUDE" -p "$PROMPT" --mcp-config "$1/mcp.json" --strict-mcp-config --allowedTools mcp__sbxtop
}
# Codex: a model provider in a private CODEX_HOME's config.toml, speaking the
# Responses API (POST /v1/responses, SSE) at its base_url; gpt-5.5 is a model
# of its catalogue, so its truncation policy and tool search are the real ones;
# sbxtop in [mcp_servers]; exec runs one prompt to the end.
run_codex() {
	mkdir -p "$1/codex"
	{
		printf 'model = "gpt-5.5"\nmodel_provider = "judge"\ncheck_for_update_on_startup = false\n\n'
		printf '[model_providers.judge]\nname = "judge"\nbase_url = "%s/v1"\nwire_api = "responses"\n\n' "$EP"
		printf '[mcp_servers.sbxtop]\ncommand = "%s"\nargs = ["--mcp"]\ntool_timeout_sec = 240\n' "$SBXTOP"
		printf '[mcp_servers.sbxtop.env]\n'
		for _v in $SBX_ENV; do eval "printf '%s = \"%s\"\n' \"\$_v\" \"\$$_v\""; done
	} > "$1/codex/config.toml"
	cli_env "$1" CODEX_HOME="$1/codex" \
		"$CODEX" exec --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox "$PROMPT"
}
# Gemini CLI: generateContent and streamGenerateContent?alt=sse under
# GOOGLE_GEMINI_BASE_URL with GEMINI_API_KEY; sbxtop in ~/.gemini/settings.json;
# MCP servers only run in a trusted folder: the work folder is in
# ~/.gemini/trustedFolders.json; yolo approves the tool calls.
run_gemini() {
	mkdir -p "$1/home/.gemini" "$1/work"
	printf '{"mcpServers":{"sbxtop":{"command":"%s","args":["--mcp"],"env":%s,"timeout":280000}},%s}\n' \
		"$SBXTOP" "$(sbx_env_json)" \
		'"security":{"auth":{"selectedType":"gemini-api-key"},"folderTrust":{"enabled":true}},"privacy":{"usageStatisticsEnabled":false},"general":{"enableAutoUpdate":false,"enableAutoUpdateNotification":false}' \
		> "$1/home/.gemini/settings.json"
	printf '{"%s":"TRUST_FOLDER"}\n' "$1/work" > "$1/home/.gemini/trustedFolders.json"
	cli_env "$1" GEMINI_API_KEY=judge-key GOOGLE_GEMINI_BASE_URL="$EP" \
		node "$GEMINI" -p "$PROMPT" --approval-mode yolo
}

# --- what the model saw -------------------------------------------------------------
# seen LABEL [FIELD]: FIELD (default text) of what came back for the script's
# call LABEL (the longest, for a repeated call); empty when it never came back.
seen() {
	node -e 'const [f, label, field] = process.argv.slice(1); let best;
		for (const l of require("fs").readFileSync(f, "utf8").split("\n").filter(Boolean)) {
			const r = JSON.parse(l);
			if (r.label === label && (!best || r.chars > best.chars)) best = r;
		}
		if (best) process.stdout.write(String(best[field]));' "$REC/results.jsonl" "$1" "${2:-text}" 2>/dev/null
}
# inline CLI LABEL: what came back for LABEL reached the model whole and in budget.
# The CLIs' stand-ins for a result they would not pass on whole: Claude Code's
# "exceeds maximum allowed tokens. Output has been saved to" and "Output too large
# (N KB). Full output saved to", Gemini CLI's "Output too large. Showing first N and
# last M characters. For full output see", Codex's "…N tokens truncated…".
STANDIN='exceeds maximum allowed tokens|Output has been saved to|Output too large|Full output saved to|For full output see|tokens truncated'
inline() {
	_t=$(seen "$2") _c=$(seen "$2" chars)
	if [ -z "$_c" ]; then
		not_ok "$1: $2: the result reached the model"; return
	fi
	if printf '%s' "$_t" | grep -Eq -- "$STANDIN"; then
		not_ok "$1: $2: the result reached the model inline ($_c characters)"
		diag "the model got: $(printf '%s' "$_t" | grep -Eo -- ".{0,80}($STANDIN).{0,120}" | head -n 1)"
	elif [ "$_c" -gt "$BUDGET" ]; then
		not_ok "$1: $2: the result is within the budget ($_c characters, at most $BUDGET)"
	else
		ok "$1: $2: the result reached the model inline, $_c characters"
	fi
}
# sees CLI LABEL WHAT REGEX: what the model got for LABEL matches REGEX (extended).
sees() {
	if seen "$2" | grep -Eq -- "$4"; then ok "$1: $2: $3"
	else not_ok "$1: $2: $3"; diag "the model got: $(seen "$2" | head -c 300 | tr '\n' ' ')"; diag "wanted: /$4/"; fi
}

judge() {
	_cli=$1 REC="$T/$1/rec"
	if [ ! -s "$REC/results.jsonl" ]; then
		not_ok "$_cli: the session ran (no tool result came back)"
		sed 's/^/# /' "$REC/log" "$T/$_cli/out" 2>/dev/null | tail -n 30
		return
	fi
	_calls=$(wc -l < "$REC/results.jsonl")
	_want=$(node -e 'const s = require(process.argv[1]).steps; console.log(s.reduce((n, x) => n + (x.repeat || 1), 0))' "$SESSION")
	is "$_cli: every scripted call came back to the model" "$_calls" "$_want"
	# count, sbxtop's own bytes (what the CLI adds to every tool left out),
	# and all the bytes as sent.
	set -- $(node -e 'const t = require(process.argv[1]); console.log(t.count, t.own_bytes, t.bytes)' \
	    "$REC/tools.json" 2>/dev/null) "" "" ""
	is "$_cli: sbxtop's tools were offered to the model" "$1" "$NTOOLS"
	check "$_cli: sbxtop's tool definitions as sent to the model are at most 12 KB of JSON ($2 bytes; $3 with what the CLI adds)" \
		[ "${2:-99999}" -le "$TOOLS_MAX" ]
	for _l in "unknown sandbox" "bad argument" "missing file" "bad path" "failing build" "large text file" "binary file" \
		"deep listing" "many processes" "diff"; do
		inline "$_cli" "$_l"
	done
	# Each error says what went wrong and what to do next.
	sees "$_cli" "unknown sandbox" "the error names the id and says how to find the right one" \
		"sbx-000000.*sandbox_list"
	sees "$_cli" "bad argument" "the error names the argument and says how to fix it" \
		"max_entries.*([Ff]ix|must|expected)"
	sees "$_cli" "missing file" "the error names the file and where to look" \
		"no-such-file\.c.*(does not exist|not found).*sandbox_list_files"
	sees "$_cli" "bad path" "the error says the path is a directory and what reads one" \
		"/workspace.*directory.*sandbox_list_files"
	sees "$_cli" "failing build" "the exit code is visible" '(exit|exit_code|exit code)[": =]*3\b'
	sees "$_cli" "failing build" "the end of the build's stdout is visible" 'LD +build/app \(last of 28000 steps\)'
	sees "$_cli" "failing build" "the build's last stderr line is visible" \
		'BUILD FAILED: make: \*\*\* \[Makefile:12: build/main\.o\] Error 1 \(marker 7f3a\)'
	sees "$_cli" "binary file" "the binary file is said to be binary" '[Bb]inary'
	sees "$_cli" "deep listing" "the listing reaches /workspace" '/workspace\b'
	sees "$_cli" "deep listing" "the listing gives a total" '[Tt]otal'
	sees "$_cli" "diff" "the diff gives totals" '[0-9]+ (files? )?(added|changed|removed)|"?(added|changed|removed)"?[: =]+[0-9]+'
	for _f in src/app.js src/util.js src/routes.js; do
		sees "$_cli" "diff" "the diff names the agent's edit $_f" "/workspace/$_f|\\b$_f\\b"
	done
	_jobs=$(node -e 'let n = 0; for (const l of require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean)) {
		const r = JSON.parse(l); if (r.label === "background job" && !r.is_error) n++; }
		console.log(n)' "$REC/results.jsonl")
	is "$_cli: the 200 background jobs started" "$_jobs" 200
	sees "$_cli" "destroy" "the sandbox was destroyed" 'terminated|destroyed'
	_left=$("$SBXTOP" ls 2>/dev/null | awk 'NR > 1 { print $1 }' | tr '\n' ' ')
	is "$_cli: the session left no sandbox behind" "$_left" ""
	diag "$_cli: characters the model got: $(node -e 'const seen = {}; let all = 0;
		for (const l of require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean)) {
			const r = JSON.parse(l); seen[r.label] = Math.max(seen[r.label] || 0, r.chars); all += r.chars; }
		console.log(`${all} in all; the largest per call: ` +
			Object.entries(seen).map(([k, v]) => `${k} ${v}`).join(", "))' "$REC/results.jsonl")"
}

for cli in ${AGENT_CLIS:-claude codex gemini}; do
	mkdir -p "$T/$cli"
	endpoint_start "$T/$cli" || continue
	_s=$(date +%s)
	"run_$cli" "$T/$cli" > "$T/$cli/out" 2>&1
	_rc=$?
	is "$cli: the CLI ran the session to its end (exit status)" "$_rc" 0
	[ "$_rc" -eq 0 ] || sed 's/^/# /' "$T/$cli/out" | tail -n 20
	diag "$cli: $(($(date +%s) - _s)) s, $(ls "$T/$cli/rec/requests" | wc -l) requests to the model: $(
		sed -n 's/.* bytes: //p' "$T/$cli/rec/log" | sort | uniq -c | awk '{ n = $1; $1 = ""; printf "%s%s x%d", s, $0, n; s = "," }')"
	kill "$EP_PID" 2>/dev/null
	judge "$cli"
	# Whatever the session left goes before the next CLI's.
	for id in $("$SBXTOP" ls 2>/dev/null | awk 'NR > 1 { print $1 }'); do "$SBXTOP" destroy "$id" > /dev/null 2>&1; done
done
done_testing
