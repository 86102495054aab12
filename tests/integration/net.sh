# Network rules on real ns sandboxes, without the internet: upstream HTTP,
# HTTPS (a CA the test makes) and raw TCP servers in a network namespace the
# test makes, their names given to the proxy by SBXTOP_NET_RESOLVE.  What the
# policy allows gets through the core's proxy; what it does not, and every way
# around the proxy (direct addresses, other DNS servers, UDP, IPv6, raw
# sockets and new routes as the sandbox's root), goes nowhere.  Live changes,
# the log, ask mode answered through the CLI, and the cleanup at destroy.
. "$(dirname "$0")/../lib.sh"

if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null || ! command -v openssl >/dev/null; then
	echo "ok 1 # SKIP needs root (ip netns) and openssl"
	exit 0
fi
sbx() { "$SBXTOP" "$@" < /dev/null; }
# run ID CMD: the command's stdout (stderr to $T/err), status in $rc.
run() { _id=$1; shift; "$SBXTOP" exec -n "$_id" -- "$@" 2> "$T/err"; rc=$?; }
runroot() { _id=$1; shift; "$SBXTOP" exec -n --root "$_id" -- "$@" 2> "$T/err"; rc=$?; }

# --- the upstream: a network namespace with HTTP, HTTPS, TCP and UDP servers ----
upstream_ns || { not_ok "ip netns add"; exit 1; }

mkdir -p "$T/pki"
head -c 8388608 /dev/zero > "$T/www/big"
(
	cd "$T/pki"
	openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 \
		-subj /CN=sbxtop-test-ca 2>/dev/null
	openssl req -newkey rsa:2048 -nodes -keyout up.key -out up.csr -subj /CN=up.test 2>/dev/null
	printf 'subjectAltName=DNS:up.test,DNS:front.test\n' > ext
	openssl x509 -req -in up.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out up.pem \
		-days 2 -extfile ext 2>/dev/null
)
cat > "$T/servers.py" <<'EOF'
import base64, gzip, http.server, socketserver, ssl, sys, threading, os, socket, time
www, pki, ip = sys.argv[1], sys.argv[2], sys.argv[3]
os.chdir(www)
class H(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a): pass
    def raw(self, head, *parts):
        # An answer written by hand, in as many writes (and TLS records) as parts.
        self.close_connection = True
        self.wfile.write(head.encode())
        for p in parts:
            self.wfile.write(p)
            self.wfile.flush()
            time.sleep(0.01)
    def do_GET(self):
        got = (self.requestline + "\n" + str(self.headers)).encode()
        # What the upstream got, for the test to read (the sandbox sees only
        # what the proxy lets back).
        open(www + "/../seen", "ab").write(got + b"\n")
        auth = (self.headers.get("Authorization") or "").encode()
        if self.path.startswith("/echo-header"):
            return self.raw("HTTP/1.1 200 OK\r\nX-Echo: %s\r\nContent-Length: 3\r\n\r\n" %
                auth.decode(), b"ok\n")
        if self.path.startswith("/echo-chunked"):
            pieces = [got[i:i + 5] for i in range(0, len(got), 5)]
            return self.raw("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                *[b"%x\r\n%s\r\n" % (len(p), p) for p in pieces], b"0\r\n\r\n")
        if self.path.startswith("/error"):
            page = b"<html><p>400: bad header Authorization: " + auth + b"</p></html>\n"
            return self.raw("HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\n"
                "Content-Length: %d\r\n\r\n" % len(page), page)
        if self.path.startswith("/echo-b64"):
            body = base64.b64encode(got) + b"\n"
            return self.raw("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body), body)
        if self.path.startswith("/gzip"):
            body = gzip.compress(got)
            return self.raw("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n"
                "Content-Length: %d\r\n\r\n" % len(body), body)
        if not self.path.startswith("/echo"):
            return super().do_GET()
        body = str(self.headers).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        open(www + "/../seen", "ab").write(body + b"\n")
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
plain = S((ip, 80), H)
tls = S((ip, 443), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(pki + "/up.pem", pki + "/up.key")
tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        self.request.sendall(b"banner\n")
        while True:
            d = self.request.recv(4096)
            if not d: break
            self.request.sendall(d)
class T(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True
echo = T((ip, 7000), Echo)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind((ip, 53))
def udp():
    while True:
        d, a = u.recvfrom(4096)
        open(www + "/../udp-seen", "a").write("seen\n")
        u.sendto(d, a)
for s in (plain.serve_forever, tls.serve_forever, echo.serve_forever, udp):
    threading.Thread(target=s, daemon=True).start()
open(www + "/../ready", "w").write("1")
threading.Event().wait()
EOF
ip netns exec "$UPNS" python3 "$T/servers.py" "$T/www" "$T/pki" "$UPIP" &
SRV=$!
at_exit "kill $SRV"
for _i in $(seq 100); do [ -e "$T/ready" ] && break; sleep 0.05; done
check "the upstream servers are up" curl -sf "http://$UPIP/hello" -o /dev/null

export SBXTOP_NET_RESOLVE="up.test:$UPIP,other.test:$UPIP,front.test:$UPIP,bad.test:$UPIP,beyond.example:$UPIP,local.test:127.0.0.1,map6.test:[::ffff:127.0.0.1],compat6.test:[::127.0.0.1],nat64.test:[64:ff9b::7f00:1],own.test:$HOSTIP"
# The upstream's CA, which the proxies verify upstreams with where they end TLS.
export SBXTOP_NET_CA_FILE="$T/pki/ca.pem"
export SBXTOP_NET_ASK_TIMEOUT=20
# What an agent's own allow entries must stay within (MCP creates, below).
export SBXTOP_NET_LIMIT='*.test'

# --- create with rules ---------------------------------------------------------
a=$(sbx create --name net-a --max-duration 600 --allow up.test --allow 'up.test:7000' \
	--allow local.test --deny 'other.test:7000'); rc=$?
at_exit "$SBXTOP destroy $a"
is "create with --allow" "$rc" 0
out=$(sbx net "$a" --json)
is "network is rules" "$(json_get "$out" 'd["network"]')" rules
is "the policy holds the allow entries" "$(json_get "$out" '",".join(d["policy"]["allow"])')" \
	"up.test,up.test:7000,local.test"
is "the proxy runs" "$(json_get "$out" 'd["proxy"]["running"]')" True
proxy=$(json_get "$out" 'd["proxy"]["pid"]')
out=$(sbx status "$a" | tr "\n" " ")
like "status says rules" "$out" 'network: *rules'
out=$(sbx create --network egress --allow up.test 2>&1); rc=$?
check "egress with --allow is refused" test "$rc" -ne 0
like "  saying why" "$out" 'need network rules'
out=$(sbx create --allow 'bad entry!' 2>&1)
like "a bad entry is refused with what is accepted" "$out" "not valid.*a domain"

out=$(run "$a" 'echo $HTTP_PROXY $https_proxy $ALL_PROXY $NO_PROXY')
is "the proxy variables are set inside" "$out" \
	"http://127.0.0.1:3128 http://127.0.0.1:3128 http://127.0.0.1:3128 localhost,127.0.0.1,::1"
out=$(run "$a" 'env -i /bin/bash -l -c "echo \$HTTPS_PROXY"')
is "  and a login shell (the console's) gets them from /etc/profile.d" "$out" "http://127.0.0.1:3128"

# --- what the policy allows ------------------------------------------------------
out=$(run "$a" 'curl -sS -m 10 http://up.test/hello')
is "plain HTTP to an allowed name" "$out" "hello from upstream"
sbx cp "$T/pki/ca.pem" "$a:/workspace/ca.pem"
out=$(run "$a" 'curl -sS -m 10 --cacert /workspace/ca.pem https://up.test/hello')
is "HTTPS through CONNECT, certificate checked inside" "$out" "hello from upstream"
out=$(run "$a" 'python3 - <<EOF
import socket
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"CONNECT up.test:7000 HTTP/1.1\r\nHost: up.test:7000\r\n\r\n")
f = s.makefile("rb")
print(f.readline().decode().split()[1])
while f.readline() not in (b"\r\n", b""): pass
print(f.readline().decode().strip())
s.sendall(b"ping\n")
print(f.readline().decode().strip())
EOF')
is "raw TCP through CONNECT (server speaks first, then echoes)" "$(echo $out)" "200 banner ping"

# --- what it does not -------------------------------------------------------------
out=$(run "$a" 'curl -s -m 10 -w " %{http_code}" http://other.test/hello | tr "\n" " "')
like "a name no entry covers: 403 naming the host" "$out" "other.test:80 is not allowed.* 403 ?$"
out=$(run "$a" 'curl -s -m 10 -w " %{http_code}" http://other.test:7000/ | tr "\n" " "')
like "a deny entry wins, and is named" "$out" "denied .*deny other.test:7000.* 403 ?$"
out=$(run "$a" 'curl -s -m 10 -w " %{http_code}" http://local.test/ | tr "\n" " "')
like "an allowed name resolving to the host's loopback is refused" "$out" "host-local.* 403 ?$"
out=$(run "$a" "curl -s -m 10 -w ' %{http_code}' http://$UPIP/hello | tr '\n' ' '")
like "an address through the proxy needs an address entry" "$out" " 403 ?$"
out=$(run "$a" 'curl -sS -m 10 --cacert /workspace/ca.pem https://other.test/ 2>&1')
like "CONNECT to a name no entry covers is refused" "$out" "403"

# SNI: CONNECT up.test (allowed), then a ClientHello naming another server.
out=$(run "$a" 'echo | timeout 10 openssl s_client -proxy 127.0.0.1:3128 -connect up.test:443 \
	-servername front.test 2>&1 | grep -c "BEGIN CERTIFICATE"')
is "a TLS server name other than the CONNECT host is cut off" "$out" 0
out=$(run "$a" 'echo | timeout 10 openssl s_client -proxy 127.0.0.1:3128 -connect up.test:443 \
	-servername up.test 2>&1 | grep -c "BEGIN CERTIFICATE"')
is "  and the matching one gets through" "$out" 1
# A ClientHello split over two records (tests/tools/split-hello.py, Python's
# ssl): the name is read across them, wherever the split falls.
sbx cp "$TOP/tests/tools/split-hello.py" "$a:/workspace/split-hello.py"
out=$(run "$a" 'python3 /workspace/split-hello.py front.test ext')
is "a split ClientHello naming another server, cut before its name: cut off" "$out" cut
out=$(run "$a" 'python3 /workspace/split-hello.py front.test mid')
is "  and cut inside its name: cut off" "$out" cut
out=$(run "$a" 'python3 /workspace/split-hello.py up.test ext')
is "a split ClientHello naming the CONNECT host gets through" "$out" "hello from upstream"
out=$(run "$a" 'python3 /workspace/split-hello.py up.test mid')
is "  however it is split" "$out" "hello from upstream"
out=$(run "$a" 'python3 - <<EOF
import socket
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"CONNECT up.test:443 HTTP/1.1\r\n\r\n")
s.recv(100)
# A handshake record over the TLS limit, which could carry any server name.
s.sendall(b"\x16\x03\x01\xff\xff" + b"\x01" * 20000)
s.settimeout(10)
try:
    print("closed" if s.recv(100) == b"" else "answered")
except OSError as e:
    print("closed")
EOF')
is "a ClientHello too big to read is cut off too" "$out" closed

# --- around the proxy ---------------------------------------------------------------
run "$a" "curl -sS -m 5 --noproxy '*' http://$UPIP/hello"
check "a direct connection to an address fails" test "$rc" -ne 0
like "  at once: no route" "$(cat "$T/err")" "(Couldn't connect|unreachable|Failed to connect)"
out=$(run "$a" "python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    s.sendto(b\"x\", (\"$UPIP\", 53)); print(\"sent\")
except OSError as e: print(e.errno)
'")
is "UDP (a DNS server of one's own) goes nowhere" "$out" 101
out=$(run "$a" 'getent hosts up.test || echo none')
is "names do not resolve inside (the proxy resolves them)" "$out" none
out=$(run "$a" "python3 -c '
import socket
s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
try:
    s.connect((\"2001:db8::1\", 80)); print(\"connected\")
except OSError as e: print(e.errno)
'")
like "IPv6 goes nowhere" "$out" '^(101|99|97)$'
out=$(runroot "$a" "python3 -c '
import socket
try:
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    s.sendto(b\"\\x08\\x00\\xf7\\xff\\x00\\x00\\x00\\x00\", (\"$UPIP\", 0)); print(\"sent\")
except OSError as e: print(e.errno)
'")
like "a raw socket as the sandbox's root goes nowhere" "$out" '^(101|1|93|97)$'
runroot "$a" "ip link add sbxd0 type dummy && ip addr add $HOSTIP/30 dev sbxd0 &&
	ip link set sbxd0 up && ip route add default dev sbxd0 && ip route"
diag "the sandbox root's own route: rc $rc $(cat "$T/err" | head -1)"
run "$a" "curl -sS -m 4 --noproxy '*' http://$UPIP/hello"
check "  a route the sandbox's root adds leads nowhere either" test "$rc" -ne 0
run "$a" "python3 -c '
import socket
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.sendto(b\"x\", (\"$UPIP\", 53))
'"
sleep 0.3
check "  nothing the sandbox sent reached the upstream's UDP server" test ! -e "$T/udp-seen"
out=$(run "$a" 'curl -sS -m 10 http://up.test/hello')
is "the proxy still serves after the sandbox changed its routes" "$out" "hello from upstream"

# --- the host's own addresses, under every spelling, even with --allow '*' -----------
# A server on the host's loopback and one on its own address on the upstream's
# link, each counting the connections it gets.
lport=18$(( $$ % 900 + 100 ))
cat > "$T/counting.py" <<'EOF'
import socketserver, sys
class H(socketserver.BaseRequestHandler):
    def handle(self):
        open(sys.argv[3], "a").write("hit\n")
        got = b""
        while b"\r\n\r\n" not in got:
            d = self.request.recv(4096)
            if not d: return
            got += d
        self.request.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 6\r\n\r\nlocal\n")
socketserver.ThreadingTCPServer.allow_reuse_address = True
socketserver.ThreadingTCPServer((sys.argv[1], int(sys.argv[2])), H).serve_forever()
EOF
python3 "$T/counting.py" 127.0.0.1 "$lport" "$T/hits-lo" & lpid=$!
at_exit "kill $lpid"
python3 "$T/counting.py" "$HOSTIP" "$lport" "$T/hits-own" & opid=$!
at_exit "kill $opid"
e=$(sbx create --name net-e --max-duration 600 --allow '*')
at_exit "$SBXTOP destroy $e"
check "a service on the host's loopback is up" until_ok 10 curl -sf "http://127.0.0.1:$lport/" -o /dev/null
check "and one on the host's own address" until_ok 10 curl -sf "http://$HOSTIP:$lport/" -o /dev/null
rm -f "$T/hits-lo" "$T/hits-own"
spellings="127.0.0.1 127.1 2130706433 localhost 0.0.0.0 [::1] [::ffff:127.0.0.1] [::ffff:7f00:1]
	[::127.0.0.1] [64:ff9b::7f00:1] [64:ff9b::127.0.0.1] local.test map6.test compat6.test
	nat64.test $HOSTIP own.test"
out=$(run "$e" "for h in $(echo $spellings); do
	curl --noproxy '' -s -m 5 -o /dev/null -w '%{http_code} ' \"http://\$h:$lport/\"
	curl --noproxy '' -s -m 5 -o /dev/null -w '%{http_connect} ' -p \"http://\$h:$lport/\"
done")
n=$(echo $spellings | wc -w)
is "--allow '*' reaches none of $n spellings of the host's addresses (GET and CONNECT)" \
	"$out" "$(for _i in $(seq $((n * 2))); do printf '403 '; done)"
check "  nothing reached the service on the host's loopback" test ! -e "$T/hits-lo"
check "  nor the one on its own address" test ! -e "$T/hits-own"
out=$(run "$e" "curl -s -m 5 http://nat64.test:$lport/")
like "  the refusal says why, naming the address" "$out" 'resolves to 64:ff9b::7f00:1, a host-local address'
like "  and the log says host-local" "$(sbx net "$e" log | tail -1)" 'deny .*host-local'
sbx net "$e" allow "127.0.0.1:$lport"
out=$(run "$e" "for h in 127.0.0.1 '[::ffff:127.0.0.1]' local.test; do
	curl --noproxy '' -s -m 5 \"http://\$h:$lport/\"; done")
is "an address entry naming 127.0.0.1 allows it, by address, mapped or by name" "$(echo $out)" \
	"local local local"
out=$(run "$e" "curl --noproxy '' -s -m 5 -o /dev/null -w '%{http_code}' http://own.test:$lport/")
is "  and nothing else of the host's" "$out" 403
sbx net "$e" remove "127.0.0.1:$lport"

# --- live changes ------------------------------------------------------------------
out=$(run "$a" 'curl -s -m 10 -o /dev/null -w "%{http_code}" http://other.test/hello')
is "other.test before allow" "$out" 403
sbx net "$a" allow other.test
out=$(run "$a" 'curl -s -m 10 http://other.test/hello')
is "allowed while the sandbox runs: the next connection gets through" "$out" "hello from upstream"
sbx net "$a" deny other.test
out=$(run "$a" 'curl -s -m 10 -o /dev/null -w "%{http_code}" http://other.test/hello')
is "denied again" "$out" 403
out=$(sbx net "$a" --json)
is "the record says so" "$(json_get "$out" '"other.test" in d["policy"]["deny"] and "other.test" not in d["policy"]["allow"]')" True
runroot "$a" "cat $XDG_STATE_HOME/sbxtop/net/$a/policy.json"
check "the policy file is out of the sandbox root's reach" test "$rc" -ne 0

# --- the log -----------------------------------------------------------------------
log=$(sbx net "$a" log --json)
n=$(printf '%s\n' "$log" | grep -c '"type":"connection"')
check "every connection is logged (saw $n)" test "$n" -ge 12
line=$(printf '%s\n' "$log" | grep '"host":"up.test"' | grep '"kind":"http"' | head -1)
is "a log entry has verdict, rule, address, port and bytes" \
	"$(json_get "$line" 'd["verdict"],d["rule"],d["addr"],d["port"],d["down"]>0,"ms" in d')" \
	"('allow', 'allow up.test', '$UPIP', 80, True, True)"
line=$(printf '%s\n' "$log" | grep '"rule":"sni' | head -1)
like "the SNI refusal is logged" "$line" '"verdict":"deny"'
like "  and the unreadable one" "$(printf '%s\n' "$log" | grep '"rule":"sni unreadable"' | head -1)" \
	'"verdict":"deny"'
out=$(sbx net "$a" log | tail -3)
like "the text log" "$out" "deny +other.test:80"
sbx net "$a" log -f > "$T/follow" 2>&1 & fpid=$!
at_exit "kill $fpid"
sleep 0.5
run "$a" 'curl -s -m 10 http://up.test/hello?followed' > /dev/null
for _i in $(seq 50); do grep -q "up.test:80" "$T/follow" && [ "$(grep -c . "$T/follow")" -gt "$n" ] && break; sleep 0.1; done
kill $fpid 2>/dev/null
check "log -f shows a new connection" test "$(grep -c . "$T/follow")" -gt "$n"
out=$(sbx net "$a")
like "net ID shows counts" "$out" 'counts +[0-9]+ allowed, [0-9]+ denied'
out=$(sbx status "$a" | tr "\n" " ")
like "status shows the entries and the counts" "$out" \
	'allow up.test, up.test:7000, local.test.*[1-9][0-9]* allowed, [1-9][0-9]* denied'

# --- ask mode ------------------------------------------------------------------------
b=$(sbx create --name net-b --max-duration 600 --allow up.test --ask); rc=$?
at_exit "$SBXTOP destroy $b"
is "create with --ask" "$rc" 0
# pending_req ID: the request id of the first held request, waiting for one.
pending_req() {
	for _i in $(seq 100); do
		_p=$(sbx net "$1" pending --json)
		_r=$(json_get "$_p" 'd[0]["req"] if d else ""')
		[ -n "$_r" ] && { echo "$_r"; return 0; }
		sleep 0.1
	done
	return 1
}
"$SBXTOP" exec -n "$b" -- 'curl -s -m 30 -w " %{http_code}" http://other.test/hello | tr "\n" " "' > "$T/ask1" 2>&1 &
p1=$!
req=$(pending_req "$b")
check "a connection no entry covers is held" test -n "$req"
out=$(sbx net "$b" pending)
like "pending names the host" "$out" "other.test:80"
"$SBXTOP" exec -n "$b" -- 'curl -s -m 30 -w " %{http_code}" http://other.test/hello | tr "\n" " "' > "$T/ask1b" 2>&1 &
p1b=$!
sleep 1
is "a second connection to the same destination shares the question" \
	"$(json_get "$(sbx net "$b" pending --json)" 'len(d)')" 1
out=$(sbx net "$b" answer 0000000000000000 once 2>&1)
like "an unknown request is an error that says where to look" "$out" "no request .* pending"
sbx net "$b" answer "$req" once
wait $p1 $p1b
is "answered once: the held connection gets through" "$(cat "$T/ask1")" "hello from upstream  200"
is "  and so does the one that shared the question" "$(cat "$T/ask1b")" "hello from upstream  200"
"$SBXTOP" exec -n "$b" -- 'curl -s -m 30 -w " %{http_code}" http://other.test/hello | tr "\n" " "' > "$T/ask2" 2>&1 &
p2=$!
req=$(pending_req "$b")
check "once is once: the next connection is held again" test -n "$req"
sbx net "$b" answer "$req" deny
wait $p2
like "denied: the program gets a 403 naming the host" "$(cat "$T/ask2")" \
	"other.test:80 is not allowed.*operator denied it.* 403 ?$"
"$SBXTOP" exec -n "$b" -- 'curl -s -m 30 -w " %{http_code}" http://other.test/hello | tr "\n" " "' > "$T/ask3" 2>&1 &
p3=$!
req=$(pending_req "$b")
sbx net "$b" answer "$req" always
wait $p3
like "answered always" "$(cat "$T/ask3")" "hello from upstream"
out=$(run "$b" 'curl -s -m 10 http://other.test/hello')
is "  and the next connection needs no answer" "$out" "hello from upstream"
is "  because an allow entry was added" "$(json_get "$(sbx net "$b" --json)" '"other.test:80" in d["policy"]["allow"]')" True

# A harmless-looking name that resolves to the host's loopback: whatever the
# operator would answer, its connection is refused after resolution.
rm -f "$T/hits-lo"
"$SBXTOP" exec -n "$b" -- "curl -s -m 30 -w ' %{http_code}' http://local.test:$lport/ | tr '\n' ' '" \
	> "$T/ask-local" 2>&1 &
p5=$!
for _i in $(seq 30); do
	req=$(json_get "$(sbx net "$b" pending --json)" '([x["req"] for x in d if x["host"] == "local.test"] or [""])[0]' 2>/dev/null)
	[ -n "$req" ] && { sbx net "$b" answer "$req" once; break; }
	kill -0 $p5 2>/dev/null || break
	sleep 0.1
done
wait $p5
like "ask mode: a name resolving to 127.0.0.1 is refused, answered once or not" \
	"$(cat "$T/ask-local")" "host-local address.* 403 ?$"
check "  nothing reached the host's loopback" test ! -e "$T/hits-lo"

c=$(SBXTOP_NET_ASK_TIMEOUT=2 sbx create --name net-c --max-duration 600 --ask --allow up.test)
at_exit "$SBXTOP destroy $c"
t0=$(date +%s)
out=$(run "$c" 'curl -s -m 30 -w " %{http_code}" http://other.test/hello | tr "\n" " "')
t1=$(date +%s)
like "no answer in time: denied" "$out" "did not answer in time.* 403 ?$"
check "  after the timeout ($((t1 - t0)) s)" test $((t1 - t0)) -ge 2 -a $((t1 - t0)) -le 10

# --- events for the console ---------------------------------------------------------
python3 "$TOP/tests/tools/net-events.py" "$XDG_RUNTIME_DIR/sbxtop/core.sock" 10 "$T/events" & subpid=$!
at_exit "kill $subpid"
sleep 1
f=$(sbx create --name net-f --max-duration 600 --allow up.test)
at_exit "$SBXTOP destroy $f"
run "$f" 'curl -s -m 10 http://up.test/hello?first' > /dev/null
"$SBXTOP" exec -n "$b" -- 'curl -s -m 10 http://up.test/hello?event' > /dev/null
"$SBXTOP" exec -n "$b" -- 'curl -s -m 30 http://front.test/' > /dev/null 2>&1 &
p4=$!
req=$(pending_req "$b")
sbx net "$b" answer "$req" deny
wait $p4
for _i in $(seq 50); do grep -q '"net.decided"' "$T/events" 2>/dev/null && break; sleep 0.1; done
kill $subpid 2>/dev/null
ev=$(cat "$T/events" 2>/dev/null)
like "a net.connection event for each connection" "$ev" \
	'"type": "net.connection".*"host": "up.test".*"verdict": "allow"'
like "a net.ask event for a held one" "$ev" '"type": "net.ask".*"host": "front.test"'
like "a new sandbox's very first connection is an event too" "$ev" \
	"\"type\": \"net.connection\", \"sandbox\": \"$f\""
like "a net.decided event for the answer" "$ev" '"type": "net.decided".*"answer": "deny"'

# --- MCP: sandbox_create with allow entries, sandbox_net_request ---------------------
printf 'beyond-value\n' | "$SBXTOP" secret set BEYONDTOKEN --host beyond.example
opf=$(sbx create --name net-opfork --network egress --max-duration 600)
at_exit "$SBXTOP destroy $opf"
if command -v node >/dev/null && [ -d "$TOP/tests/mcp/node_modules/@modelcontextprotocol/sdk" ]; then
	TOP=$TOP SBXTOP=$SBXTOP node "$TOP/tests/integration/net-mcp.mjs" > "$T/mcp.out" 2> "$T/mcp.err" &
	mpid=$!
	at_exit "kill $mpid"
	# answer HOST ANSWER: the request of sandbox net-mcp for HOST, once it waits.
	answer() {
		for _i in $(seq 300); do
			_p=$(sbx net net-mcp pending --json 2>/dev/null)
			_r=$(json_get "${_p:-[]}" "([x['req'] for x in d if x['host'] == '$1'] or [''])[0]" 2>/dev/null)
			[ -n "$_r" ] && { sbx net net-mcp answer "$_r" "$2"; return; }
			sleep 0.1
		done
	}
	answer other.test once
	answer third.test deny
	wait $mpid
	m() { grep "\"step\": *\"$1\"" "$T/mcp.out" | head -1; }
	sed 's/^/# /' "$T/mcp.err" | tail -5
	like "MCP: sandbox_net_request is listed, needing a reason" "$(m listed)" '"has":true.*"reason"'
	like "MCP: allow entries beyond the operator's limit are refused" "$(m beyond-limit)" \
		'"isError":true.*nope.example.*beyond the limit'
	like "MCP: a secret bound to a host beyond the limit is refused" "$(m secret-beyond-limit)" \
		'"isError":true.*secret BEYONDTOKEN is bound to beyond.example:443, which is beyond the limit'
	check "  and made no sandbox" sh -c "! '$SBXTOP' ls 2>/dev/null | grep -q ' net-mcp-secret '"
	like "MCP: sandbox_create with allow entries" "$(m created)" '"isError":false.*"network":"rules"'
	like "MCP: a fork of the operator's egress sandbox is beyond the limit" \
		"$(m fork-beyond-limit)" '"isError":true.*egress is beyond the limit'
	check "  and made no copy" sh -c "! '$SBXTOP' ls 2>/dev/null | grep -q ' net-opfork-'"
	like "MCP: a fork of its own sandbox within the limit is the agent's" "$(m fork-within)" \
		'"isError":false,"owner":"net-agent[^"]*","network":"rules"'
	like "MCP: what it allows gets through" "$(m allowed)" 'hello from upstream'
	like "MCP: what it does not is refused" "$(m not-yet)" '"out":"403"'
	like "MCP: a request the operator allows once" "$(m request-once)" \
		'"verdict":"allowed".*"asked":true'
	like "MCP: then the destination works" "$(m after-once)" 'hello from upstream'
	like "MCP: a request the policy covers needs no operator" "$(m request-covered)" \
		'"verdict":"allowed".*"asked":false'
	like "MCP: a request beyond the limit is refused without asking" "$(m request-limit)" \
		'"verdict":"denied".*"asked":false.*limit'
	like "MCP: a request for a host-local address is refused without asking" \
		"$(m request-local)" '"verdict":"denied".*"rule":"host-local","asked":false'
	like "MCP: a request the operator denies" "$(m request-deny)" \
		'"verdict":"denied".*"asked":true.*operator denied'
	like "MCP: in ask mode, a connection beyond the limit is refused without asking" \
		"$(m ask-beyond-limit)" '"out":"sbxtop: beyond.example:80 is not allowed.*\(limit\).*403","ms":[0-9]{1,4}}'
else
	ok "# SKIP node or the MCP SDK (tests/mcp/node_modules) is missing"
fi

# --- secrets ---------------------------------------------------------------------------
val="s3cr3t-value-$$-$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')"
printf '%s\n' "$val" | "$SBXTOP" secret set TOKEN --host up.test --header 'Authorization: Bearer {}'
check "secret set" test "$?" -eq 0
printf '%s\n' "$val" | "$SBXTOP" secret set BADTOKEN --host bad.test
check "the value is stored 0600" test "$(stat -c %a "$XDG_CONFIG_HOME/sbxtop/secrets/TOKEN.json")" = 600
out=$(sbx secret ls)
like "secret ls names it, without the value" "$out" 'TOKEN +up.test +Authorization: Bearer \{\}'
out=$(sbx secret ls --json)
like "  ls --json" "$out" '"name":[[:space:]]*"TOKEN"'
check "  no value in ls" sh -c "! printf '%s' \"\$1\" | grep -q '$val'" _ "$out"
out=$(sbx secret set 'bad name' --host x < /dev/null 2>&1)
like "a bad name is refused" "$out" "bad secret name"
o=$(sbx create --name net-opsec --max-duration 600 --secret BEYONDTOKEN); rc=$?
at_exit "$SBXTOP destroy $o"
is "the operator's create --secret is not bounded by net_limit (an agent's is)" \
	"$rc $(json_get "$(sbx net "$o" --json)" '"beyond.example:443" in d["policy"]["allow"]')" "0 True"
sbx destroy "$o" > /dev/null
d=$(sbx create --name net-d --max-duration 600 --secret TOKEN --secret BADTOKEN --allow other.test); rc=$?
at_exit "$SBXTOP destroy $d"
is "create --secret" "$rc" 0
ph=$(run "$d" 'echo $TOKEN')
like "the sandbox holds a placeholder" "$ph" '^sbxtop-secret-TOKEN-[0-9a-f]{32}$'
# What the host got is in $T/seen (the upstream writes it there); what the
# sandbox gets is what the proxy lets back.
: > "$T/seen"
out=$(run "$d" 'curl -sS -m 10 -H "X-Token: $TOKEN" -H "Accept-Encoding: gzip" -r 0-99 \
	"https://up.test/echo?q=$TOKEN"')
seen=$(cat "$T/seen")
like "the proxy sets the bound header for the secret's host (TLS ended with the sandbox's CA)" \
	"$seen" "Authorization: Bearer $val"
like "  the placeholder stays a placeholder in another header" "$seen" "X-Token: $ph"
like "  and in the query string" "$seen" "GET /echo\\?q=$ph "
is "  the value is in the bound header only" "$(grep -c -- "$val" "$T/seen")" 1
like "  the answer is asked for uncompressed" "$seen" "Accept-Encoding: identity"
check "  and whole (no Range: ranges of an echo could each hold a part)" \
	sh -c "! grep -qi '^range:' '$T/seen'"
# nov WHAT TEXT: ok when TEXT does not hold the value.
nov() { check "$1" sh -c "! printf '%s' \"\$1\" | grep -qF -- '$val'" _ "$2"; }
nov "an echo of the request head in the body: the value is scrubbed" "$out"
like "  as many '*' in its place" "$out" "Authorization: Bearer \\*{${#val}}"
# echoed PATH WHAT BEFORE [CURL ARGS]: PATH of the secret's host echoes the
# value after BEFORE; the sandbox gets '*'s in its place.
echoed() {
	_o=$(run "$d" "curl -sS -m 10 ${4:-} https://up.test/$1")
	nov "$2: scrubbed" "$_o"
	like "  (it was echoed)" "$_o" "$3 \\*{${#val}}"
}
echoed echo-header "an echo in an answer header" "X-Echo: Bearer" -i
echoed echo-chunked "an echo in a chunked body, 5 bytes a chunk, a write each" \
	"Authorization: Bearer"
echoed error "an error page quoting the request" "bad header Authorization: Bearer"
out=$(run "$d" 'curl -sS -m 10 -w " %{http_code}" https://up.test/gzip | tr "\n" " "')
like "a compressed answer (identity was asked for) is withheld, saying why" "$out" \
	"compressed \\(Content-Encoding: gzip\\).* 502 ?$"
out=$(run "$d" 'curl -sS -m 10 https://up.test/echo-b64')
is "a base64 echo is not found: a transformed value cannot be matched (docs/network.md)" \
	"$(printf '%s' "$out" | base64 -d 2>/dev/null | grep -c -- "$val")" 1
: > "$T/seen"
out=$(run "$d" 'curl -sS -m 10 --data "token=$TOKEN" https://up.test/post')
is "a placeholder in a request body stays a placeholder" "$(cat "$T/seen")" "token=$ph"
out=$(run "$d" 'curl -sS -m 10 -H "X-Token: $TOKEN" http://other.test/echo')
like "requests to another host carry the placeholder unchanged" "$out" "X-Token: $ph"
check "  and not the value" sh -c "! printf '%s' \"\$1\" | grep -q '$val'" _ "$out"
out=$(run "$d" 'curl -sS -m 10 https://bad.test/echo 2>&1')
check "an upstream whose certificate is wrong gets nothing (verified for real)" \
	sh -c "! printf '%s' \"\$1\" | grep -q '$val'" _ "$out"
like "  and the log says why" "$(sbx net "$d" log --json | grep bad.test | tail -1)" \
	'"error":"upstream certificate'
# The value comes on standard input, so no command line inside holds it.
out=$(printf '%s' "$val" | "$SBXTOP" exec --root "$d" -- "python3 -c '
import os, sys
v = sys.stdin.read().encode()
if len(v) < 16: print(\"no value on stdin\"); sys.exit(0)
me = {str(os.getpid()), str(os.getppid())}
hits = []
for p in os.listdir(\"/proc\"):
    if p.isdigit() and p not in me:
        for f in (\"environ\", \"cmdline\"):
            try:
                if v in open(\"/proc/%s/%s\" % (p, f), \"rb\").read(): hits.append(p + f)
            except OSError: pass
for top in (\"/etc\", \"/workspace\", \"/tmp\", \"/run\", \"/root\", \"/home\"):
    for d, _, fs in os.walk(top):
        for f in fs:
            try:
                if v in open(os.path.join(d, f), \"rb\").read(): hits.append(os.path.join(d, f))
            except OSError: pass
print(\" \".join(hits[:5]) + \"end\")
'" 2> "$T/err")
is "the value is nowhere inside the sandbox" "$out" end
check "nor in the record, the log or the proxy's files" \
	sh -c "! grep -rqs '$val' '$XDG_STATE_HOME'"

# --- destroy -------------------------------------------------------------------------
sbx destroy "$a" > /dev/null
for _i in $(seq 50); do kill -0 "$proxy" 2>/dev/null || break; sleep 0.1; done
check "the proxy ends with its sandbox" sh -c "! kill -0 $proxy 2>/dev/null"
check "its directory is removed" test ! -e "$XDG_STATE_HOME/sbxtop/net/$a"

done_testing
