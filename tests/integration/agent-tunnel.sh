# GET /v1/tunnel: raw TCP streams to loopback ports inside the sandbox over an
# HTTP upgrade: real listeners, early data, half-close, errors, the WebSocket
# handshake, concurrency and events.
. "$(dirname "$0")/../lib.sh"
agent_start

UC="python3 $TOP/tests/tools/upgrade-client.py --sock $SOCK --secret $SECRET"

# Helper servers on free loopback ports (port 0), each writing its port to a file.
mkdir -p "$T/www"
echo "hello through the tunnel" > "$T/www/index.html"
python3 -u -m http.server 0 --bind 127.0.0.1 --directory "$T/www" > "$T/http.out" 2>&1 &
HTTP_PID=$!
at_exit "kill $HTTP_PID"
cat > "$T/echo.py" <<'EOF'
# Echo every connection back until EOF, then close: one thread per connection.
import socket, sys, threading
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(128)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
def serve(c):
    while True:
        d = c.recv(65536)
        if not d:
            break
        c.sendall(d)
    c.shutdown(socket.SHUT_WR)
    c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
EOF
python3 "$T/echo.py" "$T/echo.port" &
ECHO_PID=$!
at_exit "kill $ECHO_PID"
# A server that reads everything first, then answers with a summary: the test of
# half-close (it only answers after the client's EOF arrives).
cat > "$T/count.py" <<'EOF'
import hashlib, socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
while True:
    c, _ = s.accept()
    h, n = hashlib.sha256(), 0
    while True:
        d = c.recv(65536)
        if not d:
            break
        h.update(d)
        n += len(d)
    c.sendall(("got %d bytes sha256 %s\n" % (n, h.hexdigest())).encode())
    c.close()
EOF
python3 "$T/count.py" "$T/count.port" &
COUNT_PID=$!
at_exit "kill $COUNT_PID"
for i in $(seq 100); do
	grep -q ' port ' "$T/http.out" 2>/dev/null && [ -s "$T/echo.port" ] && [ -s "$T/count.port" ] && break
	sleep 0.05
done
HTTP_PORT=$(sed -n 's/.* port \([0-9]*\) .*/\1/p' "$T/http.out" | head -1)
ECHO_PORT=$(cat "$T/echo.port")
COUNT_PORT=$(cat "$T/count.port")
# A port nothing listens on: bound once, then released.
FREE_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

# A real HTTP server fetched through the tunnel with a raw request.
printf 'GET /index.html HTTP/1.0\r\nHost: x\r\n\r\n' |
	timeout 20 $UC relay "/v1/tunnel?port=$HTTP_PORT" > "$T/fetch" 2> "$T/fetch.err"
like "http.server through the tunnel: 200" "$(head -1 "$T/fetch")" '^HTTP/1\.[01] 200'
like "http.server through the tunnel: the file" "$(cat "$T/fetch")" 'hello through the tunnel'

# Early data: the request to the port rides in the same write as the upgrade head.
r=$(timeout 20 $UC request "/v1/tunnel?port=$HTTP_PORT&host=127.0.0.1" --read-after 100000 \
	--early 'GET /index.html HTTP/1.0\r\n\r\n')
is "early data: 101" "$(json_get "$r" 'd["status"]')" 101
like "early data reaches the port first" "$(json_get "$r" 'd["early"]')" 'hello through the tunnel'

# 20 MB of random data, both ways, through an echo server.
head -c 20000000 /dev/urandom > "$T/big"
timeout 120 $UC relay "/v1/tunnel?port=$ECHO_PORT" < "$T/big" > "$T/big.back"
is "20 MB echoed intact (sha256)" "$(sha256sum < "$T/big.back")" "$(sha256sum < "$T/big")"

# Half-close: the client shuts its write side; the server answers only after that
# EOF arrives, and the answer still comes back.
head -c 3000000 /dev/urandom > "$T/half"
want="got 3000000 bytes sha256 $(sha256sum < "$T/half" | cut -d' ' -f1)"
got=$(timeout 60 $UC relay "/v1/tunnel?port=$COUNT_PORT" < "$T/half")
is "half-close: EOF passed on, reply still received" "$got" "$want"

# The WebSocket handshake (RFC 6455 section 1.3 sample key) and echoed protocol.
r=$(timeout 20 $UC request "/v1/tunnel?port=$ECHO_PORT" \
	--header 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' --header 'Sec-WebSocket-Version: 13')
is "Sec-WebSocket-Accept for the RFC 6455 sample key" \
	"$(json_get "$r" 'd["headers"].get("sec-websocket-accept")')" 's3pPLMBiTxaQ9kYGzzhZRbK+xOo='
is "Upgrade token echoed" "$(json_get "$r" 'd["headers"].get("upgrade")')" websocket
r=$(timeout 20 $UC --proto sbx-tcp request "/v1/tunnel?port=$ECHO_PORT")
is "another Upgrade token echoed" "$(json_get "$r" 'd["headers"].get("upgrade")')" sbx-tcp
is "no key, no Sec-WebSocket-Accept" "$(json_get "$r" '"sec-websocket-accept" in d["headers"]')" False

# Errors answer with JSON before any upgrade.
r=$(timeout 20 $UC request "/v1/tunnel?port=$FREE_PORT")
is "refused port: 502" "$(json_get "$r" 'd["status"]')" 502
is "refused port: connect_failed" "$(json_get "$r" 'json.loads(d["body"])["error"]')" connect_failed
is "refused port: message" "$(json_get "$r" 'json.loads(d["body"])["message"]')" \
	"nothing listens on 127.0.0.1:$FREE_PORT inside the sandbox"
r=$(timeout 20 $UC --no-upgrade request "/v1/tunnel?port=$ECHO_PORT")
is "no Upgrade headers: 400" "$(json_get "$r" 'd["status"]')" 400
like "400 names the missing header" "$(json_get "$r" 'd["body"]')" "Connection: Upgrade' is missing"
r=$(timeout 20 $UC --no-upgrade --header 'Connection: keep-alive, Upgrade' request "/v1/tunnel?port=$ECHO_PORT")
is "Connection: Upgrade without Upgrade: 400" "$(json_get "$r" 'd["status"]')" 400
like "400 names Upgrade" "$(json_get "$r" 'd["body"]')" "'Upgrade' is missing"
r=$(timeout 20 $UC --no-upgrade --header 'Connection: keep-alive, Upgrade' --header 'Upgrade: x-raw' \
	request "/v1/tunnel?port=$ECHO_PORT")
is "Upgrade in a Connection list: 101" "$(json_get "$r" 'd["status"]')" 101
for p in 0 65536 abc -1 '' 80x; do
	r=$(timeout 20 $UC request "/v1/tunnel?port=$p")
	is "port '$p': 400" "$(json_get "$r" 'd["status"]')" 400
done
r=$(timeout 20 $UC request "/v1/tunnel")
like "no port: 400 naming it" "$(json_get "$r" 'd["status"], d["body"]')" "400.*port"
for h in 10.0.0.1 8.8.8.8 example.com 0.0.0.0 '::' 169.254.169.254; do
	r=$(timeout 20 $UC request "/v1/tunnel?port=$ECHO_PORT&host=$h")
	is "host '$h': 400" "$(json_get "$r" 'd["status"]')" 400
done
r=$(timeout 20 $UC request "/v1/tunnel?port=$ECHO_PORT&host=localhost" --early 'ping\x00pong' --read-after 9)
is "host localhost: binary early data echoed" "$(json_get "$r" 'd["status"], d["early"]')" "(101, 'ping\\x00pong')"
r=$(timeout 20 $UC --secret '' request "/v1/tunnel?port=$ECHO_PORT")
is "no secret: 401" "$(json_get "$r" 'd["status"]')" 401

# 50 tunnels at once, 1 MB each way, all intact.
r=$(timeout 120 $UC -n 50 --size 1000000 stress "/v1/tunnel?port=$ECHO_PORT")
is "50 concurrent tunnels all correct" "$(json_get "$r" 'd["ok"], d["bad"]')" "(50, [])"

# Events: opened and closed with byte counts (the 20 MB echo).
sleep 0.3
ev=$(api GET '/v1/events?follow=0')
like "tunnel.opened event" "$ev" "\"type\":\"tunnel.opened\",[^}]*\"port\":$HTTP_PORT"
like "tunnel.closed event with counts" "$ev" \
	"\"type\":\"tunnel.closed\",[^}]*\"port\":$ECHO_PORT,\"bytes_in\":20000000,\"bytes_out\":20000000,\"duration_ms\":[0-9]+"
n_open=$(printf '%s\n' "$ev" | grep -c '"tunnel.opened"')
n_closed=$(printf '%s\n' "$ev" | grep -c '"tunnel.closed"')
is "every opened tunnel closed" "$n_closed" "$n_open"

# The agent is still healthy after all that.
h=$(curl -s --unix-socket "$SOCK" http://a/health)
is "agent still healthy" "$(json_get "$h" 'd["ok"]')" True
done_testing
