# The AWS Lambda MicroVMs lifecycle hooks on the --hooks listener (TCP loopback):
# ready before and after the API is up, run (secret and environment, bad payloads,
# no secret swap), validate, suspend, resume, terminate, and the events they emit.
. "$(dirname "$0")/../lib.sh"

P=/aws/lambda-microvms/runtime/v1
GOOD=good-secret-0123456789
OTHER=other-secret-0123456789

# hooks_start NAME [AGENT ARGS...]: an agent with no secret on $T/NAME.sock and
# hooks on a random loopback port; sets SOCK, HOOKS (base URL), AGENT_PID.
# HOOKS_WRAP (a command prefix) may run the agent under another program.
hooks_start() {
	_name=$1; shift
	SOCK="$T/$_name.sock"
	: > "$T/$_name.log"
	${HOOKS_WRAP:-} "$AGENT" --listen "unix:$SOCK" --hooks tcp:127.0.0.1:0 \
		--workspace "$T" --log "$T/$_name.log" "$@" &
	AGENT_PID=$!
	at_exit "kill $AGENT_PID; wait $AGENT_PID"
	_port=""
	for _i in $(seq 250); do
		_port=$(sed -n 's/.*listening on tcp:127\.0\.0\.1:\([0-9][0-9]*\) .*/\1/p' "$T/$_name.log")
		[ -n "$_port" ] && break
		sleep 0.02
	done
	[ -n "$_port" ] || { echo "agent did not report its hooks port:"; cat "$T/$_name.log"; return 1; }
	HOOKS="http://127.0.0.1:$_port$P"
}
# hook NAME [curl args]: POST to the hook; body on stdout, status in $T/status.
hook() {
	_h=$1; shift
	curl -s -X POST -o "$T/body" -w '%{http_code}' "$@" "$HOOKS/$_h" > "$T/status"
	cat "$T/body"
}
# run_payload JSON: the envelope {microvmId, runHookPayload: "<JSON>"} for JSON.
run_payload() {
	python3 -c 'import json,sys; print(json.dumps({"microvmId": "mvm-test", "runHookPayload": sys.argv[1]}))' "$1"
}
api_as() {	# api_as SECRET PATH: status of a GET on the main API
	curl -s --unix-socket "$SOCK" -H "X-Sandbox-Secret: $1" -o /dev/null -w '%{http_code}' "http://a$2"
}
wait_api() {
	for _i in $(seq 250); do
		[ -S "$SOCK" ] && curl -sf --unix-socket "$SOCK" http://a/health >/dev/null && return 0
		sleep 0.02
	done
	return 1
}

# --- ready before the API is up: hold the second bind() (the API socket; the hooks
# listener binds first) for 1.5 s with strace's fault injection.
if command -v strace >/dev/null 2>&1 && strace -qq -o /dev/null true 2>/dev/null; then
	# (LeakSanitizer cannot run under ptrace: no leak check for this one.)
	HOOKS_WRAP="env ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -qq \
-o /dev/null -e trace=bind -e inject=bind:delay_exit=1500000:when=2" hooks_start slow
	b=$(hook ready)
	is "ready before the API listeners are up: 503" "$(status)" 503
	like "ready 503 says to call again" "$b" '"error":"starting"'
	hook validate > /dev/null
	is "validate before the API listeners are up: 503" "$(status)" 503
	wait_api
	hook ready > /dev/null
	is "ready once the API listeners are up: 200" "$(status)" 200
	# The body itself may be the run payload (what the platform sends when the
	# payload is delivered as is).
	hook run -d "{\"secret\":\"$GOOD\",\"env\":{\"BARE\":\"1\"}}" > /dev/null
	is "run with the payload as the body: 200" "$(status)" 200
	is "the API takes that secret" "$(api_as "$GOOD" '/v1/events?follow=0')" 200
	apid=$(sed -n 's/.*ready (pid \([0-9]*\)).*/\1/p' "$T/slow.log")
	[ -n "$apid" ] && kill "$apid"
else
	ok "# SKIP strace cannot trace here: ready-before-up not checked"
fi

# --- the main agent for the rest.
hooks_start main
wait_api
b=$(hook ready)
is "ready: 200" "$(status)" 200
is "ready says ok" "$(json_get "$b" 'd["ok"]')" True
hook validate > /dev/null
is "validate: 200" "$(status)" 200

h=$(curl -s --unix-socket "$SOCK" http://a/health)
is "before run: health says not ready" "$(json_get "$h" 'd["ready"]')" False
is "before run: the API answers 503" "$(api_as "$GOOD" '/v1/events?follow=0')" 503

# Bad payloads: 400 naming the problem, and the secret stays unset.
bad() {	# bad WHAT BODY REGEX
	b=$(hook run -d "$2")
	is "run, $1: 400" "$(status)" 400
	like "run, $1: the message names it" "$b" "$3"
}
bad "malformed JSON" '{"runHookPayload":' 'malformed JSON'
bad "empty object" '{}' "runHookPayload.*required"
bad "payload not a string" '{"runHookPayload": 42}' "runHookPayload.*string"
bad "payload not JSON" "$(run_payload 'not json')" "runHookPayload.*JSON object"
bad "payload with trailing bytes" "$(run_payload "{\"secret\":\"$GOOD\"} x")" "runHookPayload.*JSON object"
bad "payload an array" "$(run_payload '[1]')" "runHookPayload.*JSON object"
bad "no secret" "$(run_payload '{"env":{}}')" "'secret' is required"
bad "secret too short" "$(run_payload '{"secret":"short"}')" "'secret' must be 16"
bad "secret with a space" "$(run_payload '{"secret":"with a space 0123456789"}')" "'secret' must be"
bad "secret a number" "$(run_payload '{"secret":1234567890123456789}')" "'secret' must be a string"
bad "env not an object" "$(run_payload "{\"secret\":\"$GOOD\",\"env\":[1]}")" "'env' must be an object"
bad "env value not a string" "$(run_payload "{\"secret\":\"$GOOD\",\"env\":{\"N\":1}}")" "'env.N' must be a string"
bad "env name with '='" "$(run_payload "{\"secret\":\"$GOOD\",\"env\":{\"A=B\":\"x\"}}")" "invalid variable name 'A=B'"
bad "env name from a digit" "$(run_payload "{\"secret\":\"$GOOD\",\"env\":{\"1X\":\"x\"}}")" "invalid variable name '1X'"
bad "unknown payload field" "$(run_payload "{\"secret\":\"$GOOD\",\"token\":\"x\"}")" "unknown field 'token'"
bad "unknown envelope field" "{\"runHookPayload\":\"{}\",\"extra\":1}" "unknown field 'extra'"
many=$(python3 -c 'import json,sys; print(json.dumps({"secret": sys.argv[1], "env": {"V%d" % i: "x" for i in range(300)}}))' "$GOOD")
bad "too many env vars" "$(run_payload "$many")" "more than 256"
big=$(python3 -c 'print("{\"runHookPayload\":\"" + "x" * 200000 + "\"}")')
printf '%s' "$big" > "$T/big"
hook run --data-binary "@$T/big" > /dev/null
is "run, body over 128 KiB: 413" "$(status)" 413
is "after bad payloads the API still answers 503" "$(api_as "$GOOD" '/v1/events?follow=0')" 503

# A good run: secret and environment.
b=$(hook run -d "$(run_payload "{\"secret\":\"$GOOD\",\"env\":{\"FOO\":\"bar\",\"_X1\":\"y z\"}}")")
is "run: 200" "$(status)" 200
is "run reports the environment it set" "$(json_get "$b" 'd["env"], d["repeated"]')" "(2, False)"
h=$(curl -s --unix-socket "$SOCK" http://a/health)
is "after run: health says ready" "$(json_get "$h" 'd["ready"]')" True
is "after run: the API takes the secret" "$(api_as "$GOOD" '/v1/events?follow=0')" 200
is "after run: a wrong secret is 401" "$(api_as "$OTHER" '/v1/events?follow=0')" 401

b=$(hook run -d "$(run_payload "{\"secret\":\"$GOOD\"}")")
is "run again with the same secret: 200 (a retry)" "$(status)" 200
is "the retry says so" "$(json_get "$b" 'd["repeated"]')" True
b=$(hook run -d "$(run_payload "{\"secret\":\"$OTHER\"}")")
is "run with a different secret: 409" "$(status)" 409
is "409 names the error" "$(json_get "$b" 'd["error"]')" conflict
is "the first secret still works" "$(api_as "$GOOD" '/v1/events?follow=0')" 200
is "the refused secret does not" "$(api_as "$OTHER" '/v1/events?follow=0')" 401

# Suspend waits for foreground commands (none here: exec is a separate module,
# so this checks the quick path and the answer's shape).
t0=$(date +%s%N)
b=$(hook suspend -d 'whatever the platform sends')
t1=$(date +%s%N)
is "suspend: 200" "$(status)" 200
is "suspend with nothing running does not time out" "$(json_get "$b" 'd["timed_out"], d["running"]')" "(False, 0)"
check "suspend with nothing running answers at once" test $(((t1 - t0) / 1000000)) -lt 1000
hook resume > /dev/null
is "resume: 200" "$(status)" 200
b=$(hook terminate)
is "terminate: 200" "$(status)" 200
is "terminate had nothing to kill" "$(json_get "$b" 'd["killed"]')" False
hook terminate > /dev/null
is "terminate again (a retry): 200" "$(status)" 200

# Hooks live only on the hooks listener, and only as POST.
curl -s --unix-socket "$SOCK" -X POST -H "X-Sandbox-Secret: $GOOD" -o /dev/null \
	-w '%{http_code}' "http://a$P/ready" > "$T/st"
is "hooks are not on the API socket" "$(cat "$T/st")" 404
is "the API is not on the hooks listener" \
	"$(curl -s -o /dev/null -w '%{http_code}' "${HOOKS%$P}/health")" 404
is "GET on a hook: 405" "$(curl -s -o /dev/null -w '%{http_code}' "$HOOKS/ready")" 405

ev=$(curl -s --unix-socket "$SOCK" -H "X-Sandbox-Secret: $GOOD" 'http://a/v1/events?follow=0')
types=$(printf '%s\n' "$ev" | python3 -c '
import json, sys
print(" ".join(json.loads(l)["type"] for l in sys.stdin if l.strip()))')
is "events: every hook, in order" "$types" \
	"agent.started lifecycle.ready lifecycle.validate lifecycle.run lifecycle.run lifecycle.suspend lifecycle.resume lifecycle.terminate lifecycle.terminate"
run_ev=$(printf '%s\n' "$ev" | grep '"lifecycle.run"' | head -n 1)
is "lifecycle.run names the variables and the MicroVM" \
	"$(json_get "$run_ev" 'd["env_keys"], d["microvm_id"]')" "(['FOO', '_X1'], 'mvm-test')"
printf '%s\n' "$ev" > "$T/events"
check "no event carries the secret" sh -c "! grep -qF -- '$GOOD' '$T/events'"
check "the log carries no secret" sh -c "! grep -qF -- '$GOOD' '$T/main.log'"

# A secret given at start cannot be replaced by a run hook either.
printf '%s\n' "$GOOD" > "$T/secret"
hooks_start fixed --secret-file "$T/secret"
wait_api
hook run -d "$(run_payload "{\"secret\":\"$OTHER\"}")" > /dev/null
is "with --secret-file, run with another secret: 409" "$(status)" 409
hook run -d "$(run_payload "{\"secret\":\"$GOOD\"}")" > /dev/null
is "with --secret-file, run with the same secret: 200" "$(status)" 200
done_testing
