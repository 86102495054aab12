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

# The connection itself, byte by byte.  raw BYTES [LATER] (printf escapes): what
# the agent answers on one connection, each CRLF shown as '|', then <closed> if
# it closed the connection or <open> if it still held it 2 s after the last
# byte.  LATER is sent once the first answer's head is in; '^' marks where.
raw() {
	printf "$1" > "$T/raw.in"
	printf "${2:-}" > "$T/raw.later"
	python3 - "$SOCK" "$T/raw.in" "$T/raw.later" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(open(sys.argv[2], "rb").read())
later = open(sys.argv[3], "rb").read()
s.settimeout(2)
out = b""
try:
    while True:
        if later and b"\r\n\r\n" in out:
            s.sendall(later)
            out += b"^"
            later = b""
        b = s.recv(65536)
        if not b:
            out += b"<closed>"
            break
        out += b
except socket.timeout:
    out += b"<open>"
sys.stdout.write(out.decode("latin-1").replace("\r\n", "|").replace("\n", "~"))
EOF
}
H='GET /health HTTP/1.1\r\nHost: a\r\n\r\n'
r=$(raw "$H$H")
like "two pipelined requests get two answers, and the connection stays open" "$r" \
	'^HTTP/1.1 200 OK\|.*"ok":true.*HTTP/1.1 200 OK\|.*"ok":true[^|]*<open>$'
r=$(raw 'GET /health HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n')
like "Connection: close is answered so and closed" "$r" '\|Connection: close\|.*<closed>$'
r=$(raw "GET /v1/events?from=1&follow=0 HTTP/1.0\r\nX-Sandbox-Secret: $SECRET\r\n\r\n")
like "HTTP/1.0 gets a stream unchunked, ended by the close" "$r" \
	'^HTTP/1.1 200 OK\|([^|]+\|)+\|\{"seq":1,"type":"agent.started"[^|]*~<closed>$'
r=$(raw "GET /v1/events?from=1&follow=0 HTTP/1.1\r\nHost: a\r\nX-Sandbox-Secret: $SECRET\r\n\r\n")
like "HTTP/1.1 gets it chunked, to the last chunk, and keeps the connection" "$r" \
	'\|Transfer-Encoding: chunked\|.*\|[0-9a-f]+\|\{"seq":1,.*\|0\|\|<open>$'
r=$(raw 'HEAD /health HTTP/1.1\r\nHost: a\r\n\r\n')
like "HEAD: 405 with its length and no body" "$r" '^HTTP/1.1 405 [^|]*\|.*Content-Length: [1-9][0-9]*\|\|<open>$'
r=$(raw 'GET /health HTTP/1.1\r\n\r\n')
like "HTTP/1.1 without Host: 400, and closed" "$r" '^HTTP/1.1 400 .*needs a Host header.*<closed>$'
r=$(raw 'GET /health HTTP/1.1\r\nHost a\r\n\r\n')
like "a malformed head: 400 naming it, and closed" "$r" \
	'^HTTP/1.1 400 .*"error":"bad_request","message":"malformed request: .*<closed>$'
r=$(raw "GET /health HTTP/1.1\r\nHost: a\r\nX-Big: $(head -c 70000 /dev/zero | tr '\0' x)\r\n\r\n")
like "a head over 64 KiB: 431, and closed" "$r" '^HTTP/1.1 431 .*"error":"too_large".*<closed>$'
r=$(raw 'POST /v1/exec HTTP/1.1\r\nHost: a\r\nContent-Length: 20\r\nExpect: 100-continue\r\n\r\n')
like "Expect: 100-continue without the secret: 401 (no 100), and closed" "$r" '^HTTP/1.1 401 .*<closed>$'
r=$(raw "POST /v1/exec HTTP/1.1\r\nHost: a\r\nX-Sandbox-Secret: $SECRET\r\nContent-Length: 21\r\nExpect: 100-continue\r\n\r\n" \
	'{"command":"echo hi"}')
like "Expect: 100-continue: 100 first, then the answer to the body sent after it" "$r" \
	'^HTTP/1.1 100 Continue\|\|\^HTTP/1.1 200 OK\|.*"stdout":"hi\\n".*<open>$'

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
