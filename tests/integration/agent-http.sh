# The agent's HTTP layer: health, auth, routing errors, body limits, events.
. "$(dirname "$0")/../lib.sh"
agent_start

h=$(curl -s --unix-socket "$SOCK" http://a/health)
is "health answers without a secret" "$(json_get "$h" 'd["ok"], d["ready"]')" "(True, True)"
is "health reports the version" "$(json_get "$h" 'd["version"]')" "$("$AGENT" --version | cut -d' ' -f2)"

curl -s --unix-socket "$SOCK" -o /dev/null -w '%{http_code}' http://a/v1/events?follow=0 > "$T/st"
is "no secret: 401" "$(cat "$T/st")" 401
curl -s --unix-socket "$SOCK" -H 'X-Sandbox-Secret: wrong' -o /dev/null -w '%{http_code}' \
	http://a/v1/events?follow=0 > "$T/st"
is "wrong secret: 401" "$(cat "$T/st")" 401
curl -s --unix-socket "$SOCK" -H "X-Sandbox-Secret: ${SECRET}x" -o /dev/null -w '%{http_code}' \
	http://a/v1/events?follow=0 > "$T/st"
is "secret with a suffix: 401" "$(cat "$T/st")" 401

b=$(api GET /v1/nope)
is "unknown route: 404" "$(status)" 404
is "404 names the error" "$(json_get "$b" 'd["error"]')" not_found
api POST /health > /dev/null
is "wrong method: 405" "$(status)" 405

ev=$(api GET '/v1/events?from=1&follow=0')
like "events replay the agent's start" "$ev" '"type":"agent.started"'
api GET '/v1/events?from=abc' > /dev/null
is "bad from: 400" "$(status)" 400

# No secret known: the API is not ready (the AWS case, before the run hook).
"$AGENT" --listen "unix:$T/nosecret.sock" --workspace "$T/ws" --log "$T/ns.log" &
p=$!
at_exit "kill $p"
for i in $(seq 50); do [ -S "$T/nosecret.sock" ] && break; sleep 0.02; done
h=$(curl -s --unix-socket "$T/nosecret.sock" http://a/health)
is "without a secret health says not ready" "$(json_get "$h" 'd["ready"]')" False
c=$(curl -s --unix-socket "$T/nosecret.sock" -H "X-Sandbox-Secret: $SECRET" -o /dev/null \
	-w '%{http_code}' http://a/v1/events?follow=0)
is "without a secret the API answers 503" "$c" 503

# Bad options are refused with a message.
"$AGENT" --listen bogus:1 2> "$T/err"; rc=$?
is "bad listener exits 1" "$rc" 1
like "bad listener says what is allowed" "$(cat "$T/err")" 'unix:PATH or tcp:HOST:PORT'
printf 'short\n' > "$T/short"
"$AGENT" --listen "unix:$T/x.sock" --secret-file "$T/short" 2> "$T/err"; rc=$?
is "short secret refused" "$rc" 1
like "short secret message" "$(cat "$T/err")" 'at least 16'

# TERM stops the agent cleanly and removes its socket.
kill -TERM "$AGENT_PID"
wait "$AGENT_PID"; rc=$?
is "TERM: exit 0" "$rc" 0
check "TERM: socket removed" test ! -e "$SOCK"
done_testing
