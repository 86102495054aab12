# The core server (sbxtop serve) end to end, in the private XDG directories of
# lib.sh so the server is the test's own: autostart, the socket's directory, a
# stale socket, the peer uid check, the version handshake, two MCP bridges at
# once, the event stream, approvals, a core killed mid-session, sandbox inits
# reaped, a forward served by the server, the idle exit and serve --stop; logs
# followed (and not through a link a sandbox put there) and a shell relayed.
. "$(dirname "$0")/../lib.sh"

CC="python3 $TOP/tests/tools/core-client.py"
export SBXTOP
RUN="$XDG_RUNTIME_DIR/sbxtop"
SOCK="$RUN/core.sock"
at_exit '"$SBXTOP" serve --stop'
destroy_left_at_exit
srv_pid() { cat "$RUN/server.lock" 2>/dev/null; }
# gone PID: no such process, or a zombie (PID 1 of a container may not reap).
gone() { ! kill -0 "$1" 2>/dev/null || [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ]; }
J() { json_get "$1" "$2"; }
# Sanitizer reports of the bridges the scripts drive (a sanitizer build).
export SANITIZER_LOG="$T/sanitizer.log"

# --- autostart ----------------------------------------------------------------
check "no server at first" test ! -e "$SOCK"
out=$($CC two_bridges)
pid=$(srv_pid)
is "the first bridge started a server: two bridges at once both initialize" \
	"$(J "$out" 'd["init_a"] and d["init_b"]')" True
is "both bridges' calls work" "$(J "$out" 'd["list_a"] and d["list_b"]')" True
is "sbxtop/clients lists both MCP sessions by their client names" \
	"$(J "$out" 'd["mcp_clients"]')" "['agent-a 1.0', 'agent-b 1.0']"
is "both bridges exit 0 when stdin closes" "$(J "$out" '[d["exit_a"], d["exit_b"]]')" "[0, 0]"
check "the server runs after its clients left" kill -0 "$pid"
is "it goes by the name sbxtop-core (ps, pgrep)" "$(cat "/proc/$pid/comm")" sbxtop-core
is "the socket's directory is 0700" "$(stat -c %a "$RUN")" 700
is "the socket is ours, not group or world accessible" "$(stat -c %a "$SOCK" | cut -c2-)" 00
ppid=$(awk '{print $4}' "/proc/$pid/stat")
check "the server is detached (not our child, in its own session)" \
	test "$ppid" != "$$" -a "$(ps -o sid= -p "$pid" | tr -d ' ')" != "$(ps -o sid= -p $$ | tr -d ' ')"
is "its stdio is /dev/null" "$(readlink /proc/$pid/fd/0 /proc/$pid/fd/1 /proc/$pid/fd/2 | sort -u)" /dev/null
check "it logs to STATE/server.log" test -f "$XDG_STATE_HOME/sbxtop/server.log"

# --- the handshake ---------------------------------------------------------------
out=$($CC hello)
is "hello answers with the server's version and pid" \
	"$(J "$out" '[d["hello"]["result"]["server_version"], d["hello"]["result"]["pid"]]')" \
	"['$("$SBXTOP" --version | cut -d' ' -f2)', $pid]"
out=$($CC no_hello)
is "sbxtop/... methods before the hello are refused" \
	"$(J "$out" 'd["clients_before_hello"]["error"]["code"]')" -32011
SBXTOP_TEST_FAKE_VERSION=0.0-other "$SBXTOP" serve > "$T/out" 2> "$T/err"; rc=$?
check "a client of another version is refused (exit != 0)" test "$rc" -ne 0
like "with a message that names both versions and the way out" "$(cat "$T/err")" \
	"sbxtop 0\.0-other talks to a core server of version .*: stop it with \`sbxtop serve --stop\`"
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"ping"}' |
	SBXTOP_TEST_FAKE_VERSION=0.0-other "$SBXTOP" --mcp > "$T/out" 2> "$T/err"; rc=$?
is "a bridge of another version exits 1" "$rc" 1
like "and says why on stderr" "$(cat "$T/err")" "talks to a core server of version"
is "and writes nothing on the protocol stream" "$(cat "$T/out")" ""
check "the refused clients left the server running" kill -0 "$pid"

# --- an agent's connection stays an agent's -------------------------------------
# What an MCP client sends through the bridge reaches the server's methods
# table as kind mcp: a second hello may not make it a console, nor may it answer
# held calls (tests/integration/capabilities.sh walks the whole table).
ver=$("$SBXTOP" --version | cut -d' ' -f2)
printf '%s\n' \
	'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}}' \
	'{"jsonrpc":"2.0","id":2,"method":"sbxtop/hello","params":{"client":{"kind":"console","name":"me","version":"'"$ver"'","pid":1}}}' \
	'{"jsonrpc":"2.0","id":3,"method":"sbxtop/approve","params":{"id":1,"allow":true}}' \
	'{"jsonrpc":"2.0","id":4,"method":"sbxtop/approve_mode","params":{"mode":"none"}}' |
	timeout 20 "$SBXTOP" --mcp > "$T/out" 2> "$T/err"
errs=$(python3 -c '
import json,sys
d = {m.get("id"): m for m in map(json.loads, open(sys.argv[1]))}
print(*[d.get(i, {}).get("error", {}).get("code") for i in (2, 3, 4)])' "$T/out")
is "through the bridge, a second hello is refused, and the approval methods are not the agent's" \
	"$errs" "-32600 -32012 -32012"

# --- another uid ----------------------------------------------------------------
if [ "$(id -u)" = 0 ]; then
	# Open the way to the socket for uid 65534, then check the server still
	# refuses it: the peer uid is checked, not just the directory's mode.
	chmod o+x "$T" "$XDG_RUNTIME_DIR" "$RUN"; chmod o+rw "$SOCK"
	out=$($CC peer 65534)
	chmod o-x "$T" "$XDG_RUNTIME_DIR" "$RUN"; chmod o-rw "$SOCK"
	like "another uid gets no answer (the server closes)" "$out" \
		'^\{"answer": "(|closed: .*)"\}$'
	like "and the refusal is logged" "$(cat "$XDG_STATE_HOME/sbxtop/server.log")" \
		"refused a connection from uid 65534"
else
	ok "# SKIP another uid: not root"
	ok "# SKIP another uid: not root"
fi

# --- events ----------------------------------------------------------------------
out=$($CC subscribe)
is "subscribe answers" "$(J "$out" 'd["subscribed"]')" True
is "a bridge's call appears as tool.started with client, kind and tool" \
	"$(J "$out" '[(x["tool"], x["client"], x["kind"]) for x in d["started"]]')" \
	"[('sandbox_list', 'journal-agent 1.0', 'mcp')]"
is "and tool.finished with its outcome and duration" \
	"$(J "$out" '[d["finished"]["outcome"], d["finished"]["kind"], d["finished"]["duration_ms"] >= 0]')" \
	"['ok', 'mcp', True]"
is "events arrive in sequence order" "$(J "$out" 'd["seqs_increase"]')" True
is "a subscriber from a sequence number gets the replay from there" \
	"$(J "$out" 'd["replay_first_seq"] == d["finished_seq"]')" True

# --- approvals ----------------------------------------------------------------------
id=$("$SBXTOP" create --max-duration 600 2> "$T/err" < /dev/null); rc=$?
if [ "$rc" -ne 0 ]; then
	diag "create: $(cat "$T/err")"
	not_ok "an ns sandbox for the approval and crash tests"
	done_testing
	exit
fi
out=$($CC approvals "$id")
is "approve_mode sets the mode" "$(J "$out" 'd["mode"]["mode"]')" destructive
is "a read-only call is not held" "$(J "$out" 'd["readonly_not_held"]')" True
is "a destructive call is announced: approval.requested with tool, client, arguments" \
	"$(J "$out" '[d["requested"]["tool"], d["requested"]["client"], d["requested"]["arguments"]["sandbox_id"]]')" \
	"['sandbox_destroy', 'approval-agent 1.0', '$id']"
is "sbxtop/approvals lists it" "$(J "$out" 'd["pending"]')" "[['sandbox_destroy', 'approval-agent 1.0']]"
is "denied: isError" "$(J "$out" 'd["denied_is_error"]')" True
is "denied: the operator's reason in the result" "$(J "$out" 'd["denied_text"]')" \
	"denied by the operator: not this one"
is "approval.resolved says denied by the operator" \
	"$(J "$out" '[d["resolved"]["outcome"], d["resolved"]["by"], d["resolved"]["reason"]]')" \
	"['denied', 'operator', 'not this one']"
is "the journal's tool.finished says denied" "$(J "$out" 'd["journal_outcome"]')" denied
is "answering twice is an error" "$(J "$out" 'd["again"]["code"]')" -32010
like "the denied destroy did not run: the sandbox runs" "$("$SBXTOP" ls)" "$id .*running"
like "approved: the call ran (the tool's own answer)" "$(J "$out" 'd["approved_text"]')" \
	"unknown sandbox"
is "mode all holds a read-only call too" "$(J "$out" '[d["all_holds_list"], d["all_list_ok"]]')" \
	"[True, True]"
out=$($CC held_then_gone "$id")
is "at the end of its input the bridge waits for the held call's answer" "$(J "$out" 'd["waits"]')" \
	True
is "a held call whose client leaves (SIGTERM) is dropped" \
	"$(J "$out" '[d["held"], d["after"], d["bridge_exit"]]')" "[1, 0, -15]"
like "and did not run" "$("$SBXTOP" ls)" "$id .*running"

# --- the admin commands are clients of the server ---------------------------------------
out=$($CC cli "$id")
is "sbxtop exec through the server: its output and status" \
	"$(J "$out" '[d["exec_rc"], d["exec_out"]]')" "[0, 'cli-marker\\n']"
is "the command's call is in the journal as the cli client's" \
	"$(J "$out" '[x for x in d["started"] if x[0] == "sandbox_exec"][0]')" \
	"['sandbox_exec', 'cli', '$id', 'echo cli-marker']"
is "with its outcome" "$(J "$out" 'd["finished"]')" ok
is "a running command is listed among the clients" \
	"$(J "$out" 'd["popen_pid"] in d["cli_pids"]')" True
is "an interrupted exec ends its call" "$(J "$out" 'd["interrupted_finished"]')" True
is "and its command in the sandbox" \
	"$("$SBXTOP" exec -n "$id" -- 'pgrep -f "slee[p] 60" || echo none')" none
n=$(head -c 900000 /dev/zero | tr '\0' a | "$SBXTOP" exec "$id" -- 'wc -c'); rc=$?
is "900 kB of standard input arrive whole" "$rc:$n" "0:900000"
printf 'a\000b' | "$SBXTOP" exec "$id" -- 'cat' > /dev/null 2> "$T/err"; rc=$?
is "standard input that is not text: exit 125 (sbxtop's own failure, as docker exec)" "$rc" 125
"$SBXTOP" exec -n "$id" -- 'printf "\377\000x"' > "$T/bin"; rc=$?
is "output that is not text arrives byte for byte" "$rc:$(od -An -tx1 "$T/bin" | tr -d ' ')" "0:ff0078"
mkdir -p "$T/rel" && echo rel > "$T/rel/f.txt"
(cd "$T/rel" && "$SBXTOP" cp f.txt "$id:rel.txt") && \
	is "cp resolves a relative host path in the client's directory" \
	"$("$SBXTOP" exec -n "$id" -- 'cat rel.txt')" rel
SBXTOP_LAMBDA_REGION=xx-test-1 "$SBXTOP" --log-level info ls > "$T/out" 2> "$T/err"; rc=$?
is "a command whose environment differs from the server's still works" "$rc" 0
like "in its own process, and says so at info level" "$(cat "$T/err")" \
	"runs with another configuration or environment: running the core in this process"
like "with the same answer" "$(cat "$T/out")" "$id .*running"
SBXTOP_LAMBDA_REGION=xx-test-1 "$SBXTOP" cp "$T/rel/f.txt" "$id:rel2.txt"; rc=$?
is "cp with another environment (the full binary, with the arguments as given)" \
	"$rc:$("$SBXTOP" exec -n "$id" -- 'cat rel2.txt')" "0:rel"

# --- HTTP MCP sessions live in the server ------------------------------------------------
out=$($CC http)
like "serve --listen prints its URL" "$(J "$out" 'd["url"]')" '^http://127\.0\.0\.1:[0-9]+/mcp$'
is "an HTTP client's tool call works" "$(J "$out" 'd.get("call_ok")')" True
is "and is in the server's journal, from an MCP session over HTTP" \
	"$(J "$out" 'd.get("started")')" "[['sandbox_list', 'mcp', 'http']]"
is "with its outcome" "$(J "$out" 'd.get("finished")')" ok
is "sbxtop/clients lists the HTTP session by its client's name" \
	"$(J "$out" 'd.get("clients")')" "[['mcp', 'http', 'http-agent 1.0']]"
is "its calls are held for approval and can be denied" "$(J "$out" 'd.get("held_text")')" \
	"denied by the operator: not over http"
is "serve --listen exits 0 on SIGTERM" "$(J "$out" 'd.get("serve_exit")')" 0
is "and the listener closes with it" "$(J "$out" 'd.get("after_stop")')" ConnectionRefusedError
is "and its sessions leave the clients" "$(J "$out" 'd.get("clients_after")')" "[]"

# No console: the default after approval_timeout (a server started with 2 s).
"$SBXTOP" serve --stop 2> /dev/null
SBXTOP_APPROVAL_TIMEOUT=2 "$SBXTOP" serve > /dev/null
out=$($CC approval_timeout "$id")
is "no console: denied by default, said in the result" "$(J "$out" '[d["is_error"], d["text"]]')" \
	"[True, 'no operator answered within 2 s; denied by default']"
like "after about the timeout" "$(J "$out" 'd["seconds"]')" '^(2|3|4|5)\.'
like "the sandbox still runs" "$("$SBXTOP" ls)" "$id .*running"

# --- sbxtop/logs: a sandbox's log followed --------------------------------------------
alog=$(find "$XDG_STATE_HOME" -path "*/$id/run/agent.log" | head -1)
out=$($CC logs "$id" "$alog")
is "sbxtop/logs answers" "$(J "$out" 'd["answer"]["result"]')" "{}"
is "the first notification replays the last lines asked for, as a reset" \
	"$(J "$out" '[d["first"]["reset"], d["first"]["exists"], d["first"]["data"], d["first"]["sandbox"]]')" \
	"[True, True, 'TAIL-2\\nTAIL-3\\n', '$id']"
is "a line appended comes next, alone" "$(J "$out" '[d["live"].get("reset"), d["live"]["data"]]')" \
	"[None, 'LIVE-1\\n']"
like "within a poll or two" "$(J "$out" 'd["live_ms"]')" '^[0-9]{1,3}$'
is "bytes that are not UTF-8 arrive as ?, the rest as it was" \
	"$(J "$out" 'd["not_utf8"] == "??NOT-UTF8 \u00e9t\u00e9\n"')" True
is "a truncated log starts over with a reset" \
	"$(J "$out" '[d["truncated"]["reset"], d["truncated"]["data"]]')" "[True, 'AFTER-TRUNCATE\\n']"
is "bad lines, an unknown log name: invalid params" \
	"$(J "$out" '[d["bad_lines"]["error"]["code"], d["bad_log"]["error"]["code"]]')" "[-32602, -32602]"
is "an unknown sandbox: not_found" "$(J "$out" 'd["unknown"]["error"]["data"]["code"]')" not_found
is "sandbox null stops: nothing follows" "$(J "$out" '[d["stop"]["result"], d["after_stop"]]')" "[{}, None]"

# Errors with reasons: message, reason and hint apart; each audience its hint.
out=$($CC hints)
is "a core error: the message alone, the reason and the hint beside it" \
	"$(J "$out" '[d["rpc"]["message"], d["rpc"]["data"]["code"], d["rpc"]["data"]["reason"], d["rpc"]["data"]["hint"]]')" \
	"[\"unknown sandbox 'sbx-nope00'\", 'not_found', 'unknown_sandbox', 'run \`sbxtop ls\`']"
like "the console's tools/call: the sbxtop command" "$(J "$out" 'd["console"]')" "unknown sandbox 'sbx-nope00'.*sbxtop ls"
is "and no tool names" "$(J "$out" '"sandbox_" in d["console"]')" False
like "an agent's: the tool to call" "$(J "$out" 'd["agent"]')" "unknown sandbox 'sbx-nope00'.*sandbox_list"
is "and no sbxtop commands" "$(J "$out" '"sbxtop" in d["agent"]')" False
is "the bridge exits 0" "$(J "$out" 'd["bridge_exit"]')" 0

# A sandbox's root replaces its log with a link to a host file: not followed.
eid=$("$SBXTOP" create --max-duration 600 2> "$T/err" < /dev/null)
echo "HOST-SECRET-$$" > "$T/hostsecret"
out=$($CC logs_escape "$eid" "$T/hostsecret")
is "a followed log that the sandbox's root replaces with a link to a host file" \
	"$(J "$out" '[d["before"], d["replaced"]]')" "[True, 0]"
is "is reported gone, not read" "$(J "$out" '[d["gone"], d["leaked"]]')" "[True, False]"
is "a new follow finds no log either" "$(J "$out" 'd["again"]')" False
is "nor does sandbox_vm_logs read it" "$(J "$out" 'd["vm_logs_leaked"]')" False
"$SBXTOP" logs "$eid" > "$T/out" 2> "$T/err"; rc=$?
check "nor sbxtop logs (an error)" test "$rc" -ne 0 -a ! -s "$T/out"
like "that says why" "$(cat "$T/err")" "not a regular file"
"$SBXTOP" destroy "$eid" > /dev/null 2>&1

# --- sbxtop/pty: a shell relayed by the core ------------------------------------------------
out=$($CC pty "$id")
is "sbxtop/pty answers" "$(J "$out" 'd["answer"]["result"]')" "{}"
is "then the connection is the PTY: input runs, at the size asked for" "$(J "$out" 'd["mark"]')" True
is "a resize frame reaches the terminal" "$(J "$out" 'd["resized"]')" True
is "the exit frame comes with the shell's status" "$(J "$out" 'd["exit"]')" \
	"{'exit_code': 3, 'signal': None}"
is "and the connection closes" "$(J "$out" 'd["closed_after_exit"]')" True
is "before the hello: refused" "$(J "$out" 'd["before_hello"]["error"]["code"]')" -32011
is "an unknown sandbox: not_found" "$(J "$out" 'd["unknown"]["error"]["data"]["code"]')" not_found
is "a bad size, a command that is not a string: invalid params" \
	"$(J "$out" '[d["bad_size"]["error"]["code"], d["bad_command"]["error"]["code"]]')" "[-32602, -32602]"
is "a connection that subscribed cannot become a PTY" "$(J "$out" 'd["shared"]["error"]["code"]')" -32600
is "a shell whose client went away" "$(J "$out" 'd["started"]')" True
sleeping() { "$SBXTOP" exec "$id" -- 'for f in /proc/[0-9]*/cmdline; do tr "\0" " " < $f; echo; done 2>/dev/null | grep -c "^sleep 777"'; }
n=1; for _i in $(seq 50); do n=$(sleeping); [ "$n" = 0 ] && break; sleep 0.2; done
is "is hung up (nothing of it is left in the sandbox)" "$n" 0

# --- the core killed mid-session -------------------------------------------------------
old=$(srv_pid)
out=$($CC crash "$id" "$RUN/server.lock")
is "the request in flight gets an MCP error" "$(J "$out" 'd["pending_error"]["code"]')" -32603
like "that says the core stopped" "$(J "$out" 'd["pending_error"]["message"]')" "core server stopped"
is "the next call goes to a new core, which still sees the sandbox running" \
	"$(J "$out" 'd["status_after"]')" running
check "a new core it is" test "$(J "$out" 'd["new_pid"]')" != "$old"
like "the client is told of the new session" "$(J "$out" 'd["warning"]')" "new session"
is "nothing but JSON on the bridge's stdout" "$(J "$out" 'len(d["nonjson"])')" 0
is "the bridge exits 0" "$(J "$out" 'd["bridge_exit"]')" 0
check "the old core is gone" gone "$old"
like "the stale socket was replaced (a live one answers)" "$($CC hello)" '"server_version"'

# --- sandbox inits are reaped by the server that created them ------------------------------
out=$($CC create_short 3)
sid=$(J "$out" 'd["id"]')
like "a sandbox created through the server" "$sid" '^sbx-'
pid=$(srv_pid)
zombies() { ps -o stat= --ppid "$pid" | grep -c '^Z'; }
sleep 4
until_ok 10 sh -c "[ \$(ps -o stat= --ppid $pid | grep -c '^Z') -eq 0 ]"
is "its init, ended by its deadline, is no zombie of the server" "$(zombies)" 0
"$SBXTOP" destroy "$sid" > /dev/null 2>&1

# --- a forward served by the server ---------------------------------------------------------
"$SBXTOP" exec -n "$id" -- 'mkdir -p www && echo "served by the core" > www/index.html'
"$SBXTOP" exec -n "$id" --background -- 'cd www && exec python3 -m http.server 8000 --bind 127.0.0.1' > /dev/null
up() { "$SBXTOP" exec -n "$id" -- "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", 8000))'" 2> /dev/null; }
until_ok 20 up
url=$("$SBXTOP" forward "$id" 8000 2> "$T/err"); rc=$?
is "forward without --foreground returns at once, exit 0" "$rc" 0
like "and prints the URL" "$url" '^http://127\.0\.0\.1:[0-9]+$'
is "the server relays it" "$(curl -s --max-time 10 "$url/")" "served by the core"
is "--list names the server as its process" "$("$SBXTOP" forward --list --json | python3 -c \
	'import json,sys; print([f["pid"] for f in json.load(sys.stdin)])')" "[$(srv_pid)]"
port=${url##*:}
# restored WHAT: the forward answers again within 15 s (a new core's try, or retry).
restored() {
	if until_ok 15 sh -c "curl -s --max-time 2 http://127.0.0.1:$port/ | grep -q 'served by the core'"; then
		ok "$1"
	else
		not_ok "$1"
		diag "$("$SBXTOP" forward --list 2>&1)"
		diag "$(grep -i 'forward\|core server' "$XDG_STATE_HOME/sbxtop/server.log" 2>&1 | tail -8)"
	fi
}
kill -9 "$(srv_pid)"
"$SBXTOP" serve > /dev/null
restored "a new core restores it on the same port"
# A killed core whose port is still held (its process slow to go, say): the new
# core tries again until the port is free.
kill -9 "$(srv_pid)"
until_ok 5 sh -c "! curl -s --max-time 1 http://127.0.0.1:$port/ > /dev/null"
python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); time.sleep(3)' "$port" &
holder=$!
sleep 0.5
"$SBXTOP" serve > /dev/null
restored "... and once the port is free again if it was busy at first"
wait "$holder"
"$SBXTOP" forward --stop "$id" 8000; rc=$?
is "forward --stop stops it in the server" "$rc" 0
check "the port is closed" sh -c "! curl -s --max-time 2 http://127.0.0.1:$port/ > /dev/null"

# --- serve --stop and the idle exit -----------------------------------------------------------
pid=$(srv_pid)
"$SBXTOP" serve --stop 2> "$T/err"; rc=$?
is "serve --stop: exit 0" "$rc" 0
like "serve --stop says it stopped" "$(cat "$T/err")" "stopped"
check "the server is gone" gone "$pid"
check "its socket is removed" test ! -e "$SOCK"
"$SBXTOP" serve --stop 2> "$T/err"; rc=$?
is "serve --stop with none running: exit 0" "$rc" 0
like "and says so" "$(cat "$T/err")" "no core server is running"
# A stale socket file (no listener): the next client replaces it.
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$SOCK"
check "a stale socket file is there" test -S "$SOCK"
SBXTOP_SERVE_GRACE=2 "$SBXTOP" serve > "$T/out" 2> "$T/err"; rc=$?
is "a client finding a stale socket starts a server anyway" "$rc" 0
pid=$(srv_pid)
check "which listens" sh -c "$CC hello | grep -q server_version"
until_ok 15 gone "$pid"
is "with no clients and no forwards it exits after its grace period" "$?" 0
check "and removes its socket" test ! -e "$SOCK"

# --- two clients racing to start one ---------------------------------------------------------
for k in 1 2 3 4; do "$SBXTOP" serve > "$T/race$k" 2>&1 & done
wait
is "four clients starting at once end up with one server" \
	"$(cat "$T"/race* | sed -n 's/.*pid \([0-9]*\) on.*/\1/p' | sort -u | wc -l)" 1
"$SBXTOP" serve --stop 2> /dev/null

is "no sanitizer report from any bridge" "$(cat "$SANITIZER_LOG" 2>/dev/null)" ""
done_testing
