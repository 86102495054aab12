# Command execution: POST /v1/exec (buffered, streamed, background), the exec
# journal (/v1/execs...), timeouts, output caps, signals and client disconnects.
. "$(dirname "$0")/../lib.sh"

# The agent's own environment must never reach a command.
export SBX_AGENT_MARKER=agent-env-leaked
agent_start
unset SBX_AGENT_MARKER
WS="$T/ws"

# x JSON: a buffered exec; body on stdout, status in $T/status.
x() { api POST /v1/exec -H 'Content-Type: application/json' -d "$1"; }
j() { json_get "$1" "$2"; }
# pid_gone PID [TRIES]: true once PID no longer exists (or is a zombie).
pid_gone() {
	for _i in $(seq "${2:-100}"); do
		if [ ! -e "/proc/$1" ] || grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; then
			return 0
		fi
		sleep 0.05
	done
	return 1
}
# wait_state ID STATE: poll the journal until the exec is in STATE (max ~5 s).
wait_state() {
	for _i in $(seq 100); do
		[ "$(j "$(api GET "/v1/execs/$1")" 'd["state"]')" = "$2" ] && return 0
		sleep 0.05
	done
	return 1
}
# ndjson ARGS...: curl with the NDJSON Accept header, unbuffered.
ndjson() {
	curl -sN --unix-socket "$SOCK" -H "X-Sandbox-Secret: $SECRET" \
		-H 'Accept: application/x-ndjson' "$@"
}

# --- Exit status, streams, stdin, env, cwd ---
r=$(x '{"command":"echo out; echo err >&2; exit 3"}')
is "exit 3: 200" "$(status)" 200
is "exit 3: exit_code" "$(j "$r" 'd["exit_code"]')" 3
is "stdout and stderr are separate" "$(j "$r" 'repr((d["stdout"], d["stderr"]))')" "('out\\n', 'err\\n')"
is "text output is utf-8" "$(j "$r" 'd["stdout_encoding"], d["stderr_encoding"], d["signal"], d["timed_out"], d["truncated"]')" \
	"('utf-8', 'utf-8', None, False, False)"
like "an id" "$(j "$r" 'd["id"]')" '^x[0-9]+$'

r=$(x '{"command":"true"}')
is "exit 0" "$(j "$r" 'd["exit_code"]')" 0

r=$(x '{"command":"kill -KILL $$"}')
is "killed by a signal: exit_code null, signal KILL" "$(j "$r" 'd["exit_code"], d["signal"]')" "(None, 'KILL')"

r=$(x '{"command":"tr a-z A-Z","stdin":"hello\nworld"}')
is "stdin reaches the command" "$(j "$r" 'repr(d["stdout"])')" "'HELLO\\nWORLD'"
r=$(x '{"command":"cat; echo end"}')
is "no stdin: the command reads EOF (/dev/null)" "$(j "$r" 'repr(d["stdout"])')" "'end\\n'"
# More stdin than a pipe holds, while the command writes as much back.
python3 -c 'import json; print(json.dumps({"command": "cat | wc -c", "stdin": "x" * 300000}))' > "$T/stdin.json"
r=$(api POST /v1/exec --data-binary "@$T/stdin.json")
is "large stdin is written without blocking" "$(j "$r" 'd["stdout"].strip()')" 300000

tr '\0' '\n' < "/proc/$AGENT_PID/environ" | grep -q '^SBX_AGENT_MARKER=' && ok "the agent has the marker" ||
	not_ok "the agent has the marker"
r=$(x '{"command":"env","env":{"MY_VAR":"v 1","PATH":"/bin:/usr/bin"}}')
out=$(j "$r" 'd["stdout"]')
check "request env is visible" sh -c 'printf "%s\n" "$1" | grep -qx "MY_VAR=v 1"' - "$out"
check "request env wins over the base env" sh -c 'printf "%s\n" "$1" | grep -qx "PATH=/bin:/usr/bin"' - "$out"
case "$out" in *SBX_AGENT_MARKER*) not_ok "the agent's environment is not visible" ;;
	*) ok "the agent's environment is not visible" ;; esac
like "the base env is there" "$out" 'LANG=C.UTF-8'

mkdir -p "$WS/sub/dir"
r=$(x '{"command":"pwd"}')
is "cwd defaults to the workspace" "$(j "$r" 'd["stdout"].strip()')" "$WS"
r=$(x '{"command":"pwd","cwd":"sub/dir"}')
is "relative cwd is taken against the workspace" "$(j "$r" 'd["stdout"].strip()')" "$WS/sub/dir"
r=$(x "{\"command\":\"pwd\",\"cwd\":\"$WS/sub\"}")
is "absolute cwd" "$(j "$r" 'd["stdout"].strip()')" "$WS/sub"
r=$(x '{"command":"pwd","cwd":"/no/such/dir"}')
is "missing cwd: 400" "$(status)" 400
is "missing cwd: message" "$(j "$r" 'd["error"], d["message"]')" "('exec_failed', 'cwd does not exist: /no/such/dir')"
touch "$WS/afile"
x '{"command":"pwd","cwd":"afile"}' > /dev/null
is "cwd that is a file: 400" "$(status)" 400

# --- Plain words run straight from PATH; anything a shell reads goes to the shell ---
# bash exports SHLVL and _ to what it runs: their absence shows no shell ran.
r=$(x '{"command":"env"}')
out=$(j "$r" 'd["stdout"]')
case "$out" in *SHLVL=*) not_ok "a plain command runs without a shell" ;;
	*) ok "a plain command runs without a shell" ;; esac
check "it gets PWD, as under a shell" sh -c 'printf "%s\n" "$1" | grep -qx "PWD=$2"' - "$out" "$WS"
r=$(x '{"command":"env","cwd":"sub/dir","env":{"PATH":"/no/such/dir:relative:/usr/bin:/bin"}}')
out=$(j "$r" 'd["stdout"]')
check "a relative PATH entry before the command's: the shell searches" \
	sh -c 'printf "%s\n" "$1" | grep -q "^SHLVL="' - "$out"
check "... in the cwd asked for" sh -c 'printf "%s\n" "$1" | grep -qx "PWD=$2"' - "$out" "$WS/sub/dir"
r=$(x '{"command":"env; true"}')
check "a list goes to the shell" sh -c 'printf "%s\n" "$1" | grep -q "^SHLVL="' - "$(j "$r" 'd["stdout"]')"
r=$(x '{"command":"MY_ASSIGN=1 env"}')
check "an assignment goes to the shell" sh -c 'printf "%s\n" "$1" | grep -qx "MY_ASSIGN=1"' - "$(j "$r" 'd["stdout"]')"
r=$(x '{"command":"cd /tmp"}')
is "a builtin goes to the shell" "$(j "$r" 'd["exit_code"], d["stderr"]')" "(0, '')"
r=$(x '{"command":"ls -d /no/such/path /"}')
is "arguments pass as they are" "$(j "$r" 'd["exit_code"], d["stdout"]')" "(2, '/\\n')"
r=$(x '{"command":"no-such-command-here --x"}')
is "a command not in PATH: the shell's word on it" "$(j "$r" 'd["exit_code"]')" 127
like "... on stderr" "$(j "$r" 'd["stderr"]')" 'no-such-command-here: command not found'
printf 'echo from a script with no interpreter line\n' > "$WS/noshebang"
chmod +x "$WS/noshebang"
r=$(x '{"command":"./noshebang"}')
is "a script with no #! still runs (the shell takes it)" "$(j "$r" 'd["exit_code"], d["stdout"]')" \
	"(0, 'from a script with no interpreter line\\n')"
r=$(x '{"command":"env","env":{"BASH_FUNC_env%%":"() { echo a function; }"}}')
is "a function in the environment: the shell runs it" "$(j "$r" 'd["stdout"].strip()')" \
	"a function"
printf 'touch %s/bash-env-read\n' "$WS" > "$WS/rc"
r=$(x "{\"command\":\"true\",\"env\":{\"BASH_ENV\":\"$WS/rc\"}}")
check "BASH_ENV in the request: the shell runs and reads it" test -e "$WS/bash-env-read"

# --- Timeout: TERM to the whole group, KILL after the grace ---
r=$(x '{"command":"sleep 100 & echo $!; sleep 100","timeout_s":1}')
is "timeout: timed_out, signal TERM" "$(j "$r" 'd["timed_out"], d["signal"], d["exit_code"]')" "(True, 'TERM', None)"
d=$(j "$r" 'd["duration_ms"]')
check "timeout: after about 1 s ($d ms)" test "$d" -ge 900 -a "$d" -lt 2500
gc=$(j "$r" 'd["stdout"].strip()')
check "timeout: the grandchild ($gc) is gone too" pid_gone "$gc"
r=$(x '{"command":"trap \"\" TERM; sleep 100 & echo $!; sleep 100","timeout_s":1}')
is "TERM ignored: KILL after the grace" "$(j "$r" 'd["timed_out"], d["signal"]')" "(True, 'KILL')"
d=$(j "$r" 'd["duration_ms"]')
check "TERM ignored: killed about 2 s after TERM ($d ms)" test "$d" -ge 2900 -a "$d" -lt 4500
gc=$(j "$r" 'd["stdout"].strip()')
check "TERM ignored: the grandchild ($gc) is gone too" pid_gone "$gc"

# --- Output cap, encodings ---
r=$(x '{"command":"for i in 1 2 3 4 5 6 7 8 9 10; do printf \"\\303\\251\"; done","max_output_bytes":5}')
is "cap cuts on a character boundary" "$(j "$r" 'd["stdout"], d["stdout_encoding"], d["truncated"]')" "('éé', 'utf-8', True)"
r=$(x '{"command":"head -c 3000000 /dev/zero | tr \"\\000\" a; echo done >&2","max_output_bytes":1000,"timeout_s":20}')
is "over the cap the command runs on to the end" "$(j "$r" 'd["exit_code"], d["timed_out"], d["stderr"], len(d["stdout"]), d["truncated"]')" \
	"(0, False, 'done\\n', 1000, True)"
r=$(x '{"command":"head -c 4096 /dev/urandom | tee bin.dat"}')
is "binary output is base64" "$(j "$r" 'd["stdout_encoding"]')" base64
want=$(sha256sum < "$WS/bin.dat" | cut -d' ' -f1)
got=$(python3 -c 'import json,sys,base64,hashlib; d=json.load(sys.stdin); print(hashlib.sha256(base64.b64decode(d["stdout"])).hexdigest())' < "$T/body")
is "binary output round trip (sha256)" "$got" "$want"
r=$(x '{"command":"printf \"a\\000b\""}')
is "NUL bytes in text survive" "$(j "$r" 'd["stdout"] == "a\0b", d["stdout_encoding"]')" "(True, 'utf-8')"

# --- Streaming ---
rm -f "$WS/b.flag"
ndjson -d '{"command":"echo a; sleep 1; touch b.flag; echo b; echo e >&2"}' http://a/v1/exec |
	while IFS= read -r l; do
		if [ -e "$WS/b.flag" ]; then f=flag; else f=noflag; fi
		printf '%s %s\n' "$f" "$l"
	done > "$T/stream"
types=$(sed 's/^[a-z]* //' "$T/stream" | python3 -c '
import json,sys
ev=[json.loads(l) for l in sys.stdin]
print(" ".join(e["type"] + ":" + (e.get("data") or "").strip() for e in ev))')
is "stream: events in order" "$types" "start: stdout:a stdout:b stderr:e exit:"
like "stream: the first line arrived before the second existed" "$(grep '"data":"a' "$T/stream")" '^noflag '
last=$(tail -n1 "$T/stream" | cut -d' ' -f2-)
is "stream: exit event" "$(j "$last" 'd["exit_code"], d["signal"], d["timed_out"], d["truncated"]')" "(0, None, False, False)"
like "stream: start has id and pid" "$(head -n1 "$T/stream")" '"id":"x[0-9]+","pid":[0-9]+'
seqs=$(grep -o '"seq":[0-9]*' "$T/stream" | cut -d: -f2 | tr '\n' ' ')
is "stream: chunks are numbered" "$seqs" "1 2 3 "
ndjson -d '{"command":"printf \"\\377\\376\""}' http://a/v1/exec > "$T/s2"
like "stream: a chunk that is not UTF-8 is data_b64" "$(cat "$T/s2")" '"data_b64":"//4="'
ndjson -d '{"command":"printf \"\\342\"; sleep 0.3; printf \"\\202\\254\""}' http://a/v1/exec > "$T/s3"
like "stream: a character split across writes arrives whole" "$(cat "$T/s3")" '"data":"€"'
ndjson -d '{"command":"echo 1234567890","max_output_bytes":4}' http://a/v1/exec > "$T/s4"
like "stream: the cap applies" "$(sed -n 2p "$T/s4")" '"data":"1234"\}$'
like "stream: the cap is reported" "$(tail -n 1 "$T/s4")" '"truncated":true'

# A slow streaming client gets every byte (the command waits for it) and no gap.
ndjson -d '{"command":"head -c 5000000 /dev/zero | tr \"\\000\" a","max_output_bytes":8000000}' \
	http://a/v1/exec | (sleep 1.5; cat) > "$T/s5"
is "stream: a slow client loses nothing" "$(python3 -c '
import json,sys
ev=[json.loads(l) for l in open(sys.argv[1])]
print(sum(len(e.get("data","")) for e in ev if e["type"] == "stdout"),
      [e["type"] for e in ev if e["type"] not in ("stdout",)], ev[-1].get("exit_code"))' "$T/s5")" \
	"5000000 ['start', 'exit'] 0"

# --- Kept output: the whole of each stream in a file inside the sandbox ---
# 2 MB of numbered lines, then an error on stderr, then exit 3.
cmd='seq -f %09g 1 200000; echo "error: the last line" >&2; exit 3'
r=$(x "$(python3 -c 'import json,sys; print(json.dumps({"command": sys.argv[1],
	"max_output_bytes": 100}))' "$cmd")")
is "kept: the exit and the sizes" "$(j "$r" 'd["exit_code"], d["stdout_bytes"], d["stderr_bytes"], d["truncated"], len(d["stdout"])')" \
	"(3, 2000000, 21, True, 100)"
kout=$(j "$r" 'd["stdout_path"]')
kerr=$(j "$r" 'd["stderr_path"]')
like "kept: stdout's file is named" "$kout" '^/tmp/sbxtop/exec-x[0-9]+(\.[0-9]+)?\.stdout$'
is "kept: all of both streams" "$(j "$r" 'd["stdout_kept"], d["stderr_kept"]')" "(2000000, 21)"
is "kept: stdout's file is the whole output" "$(sha256sum < "$kout" | cut -d' ' -f1)" \
	"$(seq -f %09g 1 200000 | sha256sum | cut -d' ' -f1)"
is "kept: stderr's file" "$(cat "$kerr")" "error: the last line"
kid=$(j "$r" 'd["id"]')
l=$(api GET "/v1/execs/$kid")
is "kept: the journal names the files" "$(j "$l" 'd["stdout_path"], d["stdout_kept"], d["stdout_bytes"]')" \
	"('$kout', 2000000, 2000000)"
# Read back page by page through files/read, to the last byte.
pages=$(python3 - "$SOCK" "$SECRET" "$kout" <<'PYEOF'
import http.client, json, socket, sys, hashlib
class U(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX); self.sock.connect(sys.argv[1])
off, h, n = 0, hashlib.sha256(), 0
while True:
    c = U("a"); c.request("POST", "/v1/files/read", json.dumps({"path": sys.argv[3],
        "offset": off, "max_bytes": 300000}), {"X-Sandbox-Secret": sys.argv[2]})
    d = json.loads(c.getresponse().read())
    assert d["offset"] == off and d["length"] == len(d["content"]), d
    h.update(d["content"].encode()); off += d["length"]; n += 1
    if not d["truncated"]:
        break
print(n, off, d["size"], h.hexdigest())
PYEOF
)
is "kept: paged back to the last byte" "$pages" \
	"7 2000000 2000000 $(seq -f %09g 1 200000 | sha256sum | cut -d' ' -f1)"
r=$(x '{"command":"true"}')
is "kept: no output, no file" "$(j "$r" 'd["stdout_bytes"], "stdout_path" in d, "stderr_path" in d')" \
	"(0, False, False)"
ndjson -d '{"command":"echo streamed; echo e >&2"}' http://a/v1/exec > "$T/sk"
last=$(tail -n 1 "$T/sk")
is "kept: a stream's exit line names its files" \
	"$(j "$last" 'd["stdout_bytes"], d["stdout_kept"], open(d["stdout_path"]).read(), open(d["stderr_path"]).read()')" \
	"(9, 9, 'streamed\n', 'e\n')"
# At most 16 MiB per stream, whatever the command writes.
r=$(x '{"command":"head -c 17000000 /dev/zero","timeout_s":60,"max_output_bytes":10}')
is "kept: a stream keeps its first 16 MiB" "$(j "$r" 'd["stdout_bytes"], d["stdout_kept"]')" \
	"(17000000, 16777216)"
big1=$(j "$r" 'd["stdout_path"]')
is "kept: the file holds what it says" "$(stat -c %s "$big1")" 16777216
# All of them together at most 64 MiB: the oldest exited exec's files go first.
for i in 1 2 3 4; do
	x '{"command":"head -c 16777216 /dev/zero","timeout_s":60,"max_output_bytes":10}' > /dev/null
done
check "kept: the oldest kept file went to make room" test ! -e "$big1"
is "kept: and the journal says so" "$(j "$(api GET /v1/execs)" '[("stdout_path" in e) for e in d["execs"] if e.get("stdout_bytes") == 17000000]')" \
	"[False]"
check "kept: the newest stay" test -e "$(j "$(api GET /v1/execs)" '[e["stdout_path"] for e in d["execs"] if "stdout_path" in e][-1]')"

# --- Background ---
t0=$(date +%s%N)
# The job waits for the test's go, so "running" does not race a loaded machine.
r=$(api POST /v1/exec -H 'X-Sbx-Origin: agent' -d '{"command":"echo bg-start; until [ -e '"$T"'/bg-go ]; do sleep 0.05; done; echo bg-end >&2","background":true}')
t1=$(date +%s%N)
is "background: 200" "$(status)" 200
check "background: returns at once" test $(((t1 - t0) / 1000000)) -lt 800
bg=$(j "$r" 'd["id"]')
log=$(j "$r" 'd["log_path"]')
like "background: log path" "$log" "^/tmp/sbxtop/exec-$bg(\\.[0-9]+)?\\.log\$"
is "background: running after the request returned" "$(j "$(api GET "/v1/execs/$bg")" 'd["state"], d["background"]')" "('running', True)"
touch "$T/bg-go"
check "background: exits on its own" wait_state "$bg" exited
is "background: log holds both streams" "$(cat "$log")" "$(printf 'bg-start\nbg-end')"
rm -f "$log"

# --- Journal ---
api POST /v1/exec -H 'X-Sbx-Origin: human' -d '{"command":"echo journal-marker"}' > "$T/jr"
jid=$(j "$(cat "$T/jr")" 'd["id"]')
l=$(api GET /v1/execs)
is "journal: list 200" "$(status)" 200
e=$(j "$l" "json.dumps([e for e in d['execs'] if e['id'] == '$jid'][0])")
is "journal: entry" "$(j "$e" 'd["command"], d["origin"], d["state"], d["exit_code"], d["signal"], d["background"], d["as_root"], d["timed_out"]')" \
	"('echo journal-marker', 'human', 'exited', 0, None, False, False, False)"
is "journal: pid, started_ms, duration_ms" "$(j "$e" 'd["pid"] > 0 and d["started_ms"] > 1600000000000 and d["duration_ms"] >= 0')" True
is "journal: default origin is api" "$(j "$l" "[e['origin'] for e in d['execs'] if e['command'] == 'true'][0]")" api
is "journal: origin of the background job" "$(j "$(api GET "/v1/execs/$bg")" 'd["origin"]')" agent
g=$(api GET "/v1/execs/$jid")
is "journal: get one" "$(j "$g" 'd["id"], d["command"]')" "('$jid', 'echo journal-marker')"
g=$(api GET /v1/execs/x9999)
is "journal: unknown id 404" "$(status)" 404
is "journal: 404 message" "$(j "$g" 'd["error"], d["message"]')" \
	"('not_found', \"no exec 'x9999' (GET /v1/execs lists them)\")"
api POST /v1/exec -H 'X-Sbx-Origin: bad origin!' -d '{"command":"true"}' > /dev/null
is "bad X-Sbx-Origin: 400" "$(status)" 400
ev=$(api GET '/v1/events?from=1&follow=0')
like "events: exec.started with origin" "$ev" "\"type\":\"exec.started\",\"ts_ms\":[0-9]+,\"id\":\"$jid\",\"command\":\"echo journal-marker\",\"origin\":\"human\",\"pid\":[0-9]+,\"background\":false"
like "events: exec.exited" "$ev" "\"type\":\"exec.exited\",\"ts_ms\":[0-9]+,\"id\":\"$jid\",\"exit_code\":0,\"signal\":null"
s=$(api GET "/v1/execs/$jid/stream?from=1")
is "journal: replay a finished exec" "$(printf '%s\n' "$s" | python3 -c '
import json,sys
print(" ".join(json.loads(l)["type"] for l in sys.stdin))')" "start stdout exit"
s=$(api GET "/v1/execs/$jid/stream?from=2")
is "journal: replay from a later seq" "$(printf '%s\n' "$s" | python3 -c '
import json,sys
print(" ".join(json.loads(l)["type"] for l in sys.stdin))')" "start exit"
api GET "/v1/execs/$jid/stream?from=x" > /dev/null
is "journal: bad from 400" "$(status)" 400

# Two followers of one exec see every line; leaving does not stop it.
r=$(api POST /v1/exec -d '{"command":"for i in 1 2 3 4 5 6; do echo line$i; sleep 0.3; done","background":true}')
fid=$(j "$r" 'd["id"]')
ndjson "http://a/v1/execs/$fid/stream?from=1" > "$T/f1" &
p1=$!
ndjson "http://a/v1/execs/$fid/stream?from=1" > "$T/f2" &
p2=$!
ndjson --max-time 0.5 "http://a/v1/execs/$fid/stream?from=1" > /dev/null
at_exit "kill $p1 $p2"
wait $p1 $p2
want='line1 line2 line3 line4 line5 line6 exit'
for f in f1 f2; do
	got=$(python3 -c '
import json,sys
print(" ".join(e.get("data","").strip() or e["type"] for e in map(json.loads, open(sys.argv[1])) if e["type"] != "start"))' "$T/$f")
	is "follower $f saw every line" "$got" "$want"
done
is "a follower leaving did not stop the exec" "$(j "$(api GET "/v1/execs/$fid")" 'd["exit_code"]')" 0
rm -f "$(j "$(api GET "/v1/execs/$fid")" 'd["log_path"]')"

# Bounded retention: a follower asking for dropped chunks is told so.
r=$(x '{"command":"head -c 3000000 /dev/zero | tr \"\\000\" a","max_output_bytes":4000000}')
gid=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])' < "$T/body")
s=$(api GET "/v1/execs/$gid/stream?from=1" | head -n 2 | tail -n 1)
like "replay of dropped chunks starts with a gap" "$s" '^\{"type":"gap","from":1,"to":[0-9]+\}$'

# --- Signals ---
r=$(api POST /v1/exec -d '{"command":"sleep 100","background":true}')
sid=$(j "$r" 'd["id"]')
spid=$(j "$r" 'd["pid"]')
api POST "/v1/execs/$sid/signal" -d '{"signal":"BOGUS"}' > /dev/null
is "signal: unknown name 400" "$(status)" 400
api POST "/v1/execs/$sid/signal" -d '{"signal":true}' > /dev/null
is "signal: wrong type 400" "$(status)" 400
api POST "/v1/execs/$sid/signal" -d '{"signal":99}' > /dev/null
is "signal: number out of range 400" "$(status)" 400
api POST /v1/execs/x9999/signal -d '{"signal":"TERM"}' > /dev/null
is "signal: unknown exec 404" "$(status)" 404
api POST "/v1/execs/$sid/signal" -d '{"signal":"STOP"}' > /dev/null
is "signal STOP: 200" "$(status)" 200
check "signal STOP: the process is stopped" sh -c "sleep 0.2; grep -q '^State:.*T' /proc/$spid/status"
api POST "/v1/execs/$sid/signal" -d '{"signal":"CONT"}' > /dev/null
api POST "/v1/execs/$sid/signal" -d '{"signal":15}' > /dev/null
is "signal by number: 200" "$(status)" 200
check "signal: the exec exits" wait_state "$sid" exited
is "signal: recorded" "$(j "$(api GET "/v1/execs/$sid")" 'd["signal"], d["exit_code"]')" "('TERM', None)"
api POST "/v1/execs/$sid/signal" -d '{"signal":"TERM"}' > /dev/null
is "signal after exit: 409" "$(status)" 409
rm -f "$(j "$(api GET "/v1/execs/$sid")" 'd["log_path"]')"

# --- A client that goes away takes its exec with it ---
curl -s --unix-socket "$SOCK" -H "X-Sandbox-Secret: $SECRET" --max-time 1 \
	-d '{"command":"sleep 101"}' http://a/v1/exec > /dev/null
did=$(j "$(api GET /v1/execs)" "[e['id'] for e in d['execs'] if e['command'] == 'sleep 101'][0]")
dpid=$(j "$(api GET "/v1/execs/$did")" 'd["pid"]')
check "disconnect (buffered): the command is gone" pid_gone "$dpid"
check "disconnect (buffered): recorded as exited" wait_state "$did" exited
is "disconnect (buffered): by TERM" "$(j "$(api GET "/v1/execs/$did")" 'd["signal"]')" TERM
ndjson --max-time 1 -d '{"command":"sleep 102"}' http://a/v1/exec > /dev/null
did=$(j "$(api GET /v1/execs)" "[e['id'] for e in d['execs'] if e['command'] == 'sleep 102'][0]")
dpid=$(j "$(api GET "/v1/execs/$did")" 'd["pid"]')
check "disconnect (streamed): the command is gone" pid_gone "$dpid"
check "disconnect (streamed): recorded as exited" wait_state "$did" exited

# --- The journal is bounded, but never drops a running exec ---
r=$(api POST /v1/exec -d '{"command":"sleep 30","background":true}')
kid=$(j "$r" 'd["id"]')
kept=$(j "$(x '{"command":"echo kept"}')" 'd["stdout_path"]')
for i in $(seq 130); do api POST /v1/exec -d '{"command":"true"}' > /dev/null; done
check "journal: a dropped exec's kept output goes with it" test ! -e "$kept"
l=$(api GET /v1/execs)
is "journal: holds the last 128" "$(j "$l" 'len(d["execs"])')" 128
is "journal: the oldest exited ones are gone" "$(j "$l" '"x1" in [e["id"] for e in d["execs"]]')" False
is "journal: the running one stays" "$(j "$l" '[e["state"] for e in d["execs"] if e["id"] == "'"$kid"'"]')" "['running']"
api POST "/v1/execs/$kid/signal" -d '{"signal":"KILL"}' > /dev/null
rm -f "$(j "$(api GET "/v1/execs/$kid")" 'd["log_path"]')"

# --- Bad requests ---
x '{"command":' > /dev/null
is "malformed JSON: 400" "$(status)" 400
r=$(x '{}')
is "missing command: 400" "$(status)" 400
like "missing command: named" "$(j "$r" 'd["message"]')" "'command' is required"
r=$(x '{"command":"true","timeout_s":"5"}')
like "wrong type: named" "$(status) $(j "$r" 'd["message"]')" "^400 .*'timeout_s'"
r=$(x '{"command":"true","timeout_s":0}')
like "timeout_s out of range: named" "$(status) $(j "$r" 'd["message"]')" "^400 .*'timeout_s'"
r=$(x '{"command":"true","max_output_bytes":67108865}')
like "max_output_bytes over 64 MiB: named" "$(status) $(j "$r" 'd["message"]')" "^400 .*'max_output_bytes'"
r=$(x '{"command":"true","env":{"A":1}}')
like "env value not a string: named" "$(status) $(j "$r" 'd["message"]')" "^400 .*'env.A'"
r=$(x '{"command":"true","env":{"A=B":"c"}}')
like "env name with '=': named" "$(status) $(j "$r" 'd["message"]')" "^400 .*'env'"
r=$(x '{"command":"true","colour":"red"}')
is "unknown field: named" "$(status) $(j "$r" 'd["message"]')" "400 unknown field 'colour'"
python3 -c 'import json; print(json.dumps({"command": "true #" + "x" * 200000}))' > "$T/long.json"
r=$(api POST /v1/exec --data-binary "@$T/long.json")
like "a command too long for execve: 400 with advice" "$(status) $(j "$r" 'd["message"]')" "^400 .*write the script to a file"
x '[1]' > /dev/null
is "not an object: 400" "$(status)" 400
# The cap leaves room for 16 MiB of stdin: 96 MiB.
python3 -c 'print("{\"stdin\":\"" + "x" * (96 << 20) + "\",\"command\":\"true\"}")' > "$T/big.json"
api POST /v1/exec --data-binary "@$T/big.json" > /dev/null
is "body over 96 MiB: 413" "$(status)" 413
rm -f "$T/big.json"

# The agent is still well.
r=$(x '{"command":"echo still here"}')
is "still serving" "$(j "$r" 'repr(d["stdout"])')" "'still here\\n'"
# An agent that stops takes every kept file with it.
kept=$(j "$r" 'd["stdout_path"]')
check "kept: there while the agent runs" test -e "$kept"
kill "$AGENT_PID" && wait "$AGENT_PID"
check "kept: gone once the agent stopped" test ! -e "$kept"
done_testing
