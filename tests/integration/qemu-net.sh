# Network rules on a qemu guest, without the internet: HTTP and raw TCP
# servers in a network namespace the test makes, their names given to the
# proxy by SBXTOP_NET_RESOLVE (as tests/integration/net.sh does for ns).  The
# guest's one way out is the proxy's address, 10.0.2.100:3128, a guestfwd of
# QEMU's restricted user network that sbxtop-guestfwd hands to the proxy on
# the host.  What the policy allows gets through; what it does not is refused
# with a message naming the host; direct addresses, the host's loopback (by
# 10.0.2.2 and through the proxy), DNS, UDP, IPv6 and ICMP go nowhere, even
# for the guest's root with a route of its own; a live allow
# and deny change the verdict; the log and counts show the connections; a
# secret's placeholder and the sandbox's CA reach the guest, the value does
# not; a fork keeps the policy; ask mode holds a guest's connection until the
# operator answers.  Two boots and a fork's restore, under TCG here.
. "$(dirname "$0")/../lib.sh"

skip() { echo "ok 1 # SKIP $1"; exit 0; }
command -v qemu-system-x86_64 >/dev/null 2>&1 || skip "qemu-system-x86_64 is not installed"
[ "$(id -u)" -eq 0 ] && command -v ip >/dev/null || skip "needs root (ip netns)"
sbx() { "$SBXTOP" "$@" < /dev/null; }
# run CMD: the guest command's stdout (stderr to $T/err), status in $rc.
run() { "$SBXTOP" exec -n "$id" -- "$@" 2> "$T/err"; rc=$?; }
export HOME="$T/home"
mkdir -p "$HOME"
export SBXTOP_QEMU_BOOT_TIMEOUT=150
SDIR="$XDG_STATE_HOME/sbxtop/sandboxes"
at_exit 'for f in "$SDIR"/*/qemu.pid; do [ -f "$f" ] && kill -9 "$(cat "$f")"; done'

# --- the upstream: HTTP, raw TCP and UDP servers in a network namespace ---------
upstream_ns || { not_ok "ip netns add"; exit 1; }
cat > "$T/servers.py" <<'EOF'
import http.server, socketserver, sys, threading, os, socket
www, ip = sys.argv[1], sys.argv[2]
os.chdir(www)
def seen(what):
    open(www + "/../seen", "a").write(what + "\n")
class H(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        seen("http " + self.path)
        return super().do_GET()
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        seen("tcp")
        self.request.sendall(b"banner\n")
        try:
            while True:
                d = self.request.recv(4096)
                if not d: break
                self.request.sendall(d)
        except OSError:
            pass
class T(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True
plain, echo = S((ip, 80), H), T((ip, 7000), Echo)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind((ip, 53))
def udp():
    while True:
        d, a = u.recvfrom(4096)
        seen("udp")
for f in (plain.serve_forever, echo.serve_forever, udp):
    threading.Thread(target=f, daemon=True).start()
open(www + "/../ready", "w").write("1")
threading.Event().wait()
EOF
ip netns exec "$UPNS" python3 "$T/servers.py" "$T/www" "$UPIP" &
at_exit "kill $!"
for _i in $(seq 100); do [ -e "$T/ready" ] && break; sleep 0.05; done
check "the upstream servers are up" curl -sf "http://$UPIP/hello" -o /dev/null
: > "$T/seen"
# A service on the host's loopback, which nothing in the guest may reach.
python3 - "$T/lport" "$T/lconns" <<'EOF' &
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(16)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
n = 0
while True:
    c, _ = s.accept(); n += 1
    open(sys.argv[2], "w").write(str(n))
    c.sendall(b"HTTP/1.0 200 OK\r\n\r\nhost loopback reached\n"); c.close()
EOF
at_exit "kill $!"
for _i in $(seq 50); do [ -s "$T/lport" ] && break; sleep 0.1; done
LPORT=$(cat "$T/lport")

export SBXTOP_NET_RESOLVE="up.test:$UPIP,other.test:$UPIP,sec.test:$UPIP,local.test:127.0.0.1"
printf 'tok-value-%s' "$$" | "$SBXTOP" secret set TOK --host sec.test > /dev/null 2>&1
is "a secret for sec.test" "$?" 0

sbx image build > "$T/out" 2> "$T/err"; rc=$?
is "image build: exit 0" "$rc" 0
[ "$rc" -eq 0 ] || { diag "$(cat "$T/err")"; done_testing; exit 1; }

# --- create ----------------------------------------------------------------------
out=$(sbx create --backend qemu --network none --allow up.test 2>&1); rc=$?
check "--network none with --allow is refused" test "$rc" -ne 0
like "  saying why" "$out" 'need network rules, not none'
start=$(date +%s)
id=$(sbx create --backend qemu --memory 256 --max-duration 900 --allow up.test \
	--allow up.test:7000 --allow local.test --deny other.test:7000 --secret TOK 2> "$T/err"); rc=$?
[ -n "$id" ] && at_exit "$SBXTOP destroy $id"
is "create --backend qemu --allow: exit 0" "$rc" 0
[ "$rc" -eq 0 ] || { diag "$(cat "$T/err")"; done_testing; exit 1; }
diag "create took $(($(date +%s) - start))s: $(cat "$T/err")"
out=$(sbx net "$id" --json)
is "network is rules" "$(json_get "$out" 'd["network"]')" rules
is "the proxy runs" "$(json_get "$out" 'd["proxy"]["running"]')" True
is "at the guest's proxy address" "$(json_get "$out" 'd["proxy"]["address"]')" 10.0.2.100
like "net says where the guest reaches it" "$(sbx net "$id")" 'proxy +pid [0-9]+, 10.0.2.100:3128 inside'
check "the proxy's socket is in the VM's directory, 0600" \
	sh -c "[ -S '$SDIR/$id/proxy.sock' ] && [ \$(stat -c %a '$SDIR/$id/proxy.sock') = 600 ]"
like "QEMU's user network is restricted, with one guestfwd" "$(tr '\0' ' ' < /proc/$(cat "$SDIR/$id/qemu.pid")/cmdline)" \
	"restrict=on,hostfwd=tcp:127.0.0.1:[0-9]+-:8080,guestfwd=tcp:10.0.2.100:3128-cmd:'[^']*/sbxtop-guestfwd' '$SDIR/$id/proxy.sock'"

out=$(run 'echo $HTTP_PROXY $https_proxy $ALL_PROXY $NO_PROXY $no_proxy')
is "the proxy variables are set in guest commands" "$out" \
	"http://10.0.2.100:3128 http://10.0.2.100:3128 http://10.0.2.100:3128 localhost,127.0.0.1,::1 localhost,127.0.0.1,::1"
out=$(run 'env -i /bin/sh -l -c ". /etc/profile.d/sbxtop-net.sh; echo \$HTTPS_PROXY"')
is "  and /etc/profile.d has them for login shells" "$out" "http://10.0.2.100:3128"

# --- what the policy allows --------------------------------------------------------
out=$(run 'wget -q -O - http://up.test/hello')
is "plain HTTP to an allowed name, through the proxy (busybox wget)" "$out" "hello from upstream"
out=$(run 'printf "CONNECT up.test:7000 HTTP/1.1\r\nHost: up.test:7000\r\n\r\nping\n" | nc -w 5 10.0.2.100 3128 | tr -d "\r"')
like "raw TCP through CONNECT: 200, the banner, the echo" "$(echo "$out" | tr '\n' ' ')" \
	'^HTTP/1.1 200 Connection established +banner ping $'

# --- what it does not --------------------------------------------------------------
out=$(run 'wget -q -O - http://other.test/hello 2>&1; echo rc=$?' | tr '\n' ' ')
like "a name no entry covers: wget says 403" "$out" '403 Forbidden.*rc=1'
out=$(run 'printf "GET http://other.test/hello HTTP/1.1\r\nHost: other.test\r\n\r\n" | nc -w 5 10.0.2.100 3128')
like "  and the body names the host, the sandbox and the fix" "$out" \
	"other.test:80 is not allowed by the network policy of sandbox $id \\(default\\); the operator can allow it with .sbxtop net $id allow other.test:80."
out=$(run 'printf "CONNECT other.test:7000 HTTP/1.1\r\n\r\n" | nc -w 5 10.0.2.100 3128 | head -1')
like "a denied CONNECT names the deny entry" "$out" '403'
like "  (deny other.test:7000)" "$(sbx net "$id" log | tail -1)" 'deny +other.test:7000 .*deny other.test:7000'
out=$(run "nc -w 3 $UPIP 7000 </dev/null; echo rc=\$?")
like "a direct address goes nowhere" "$out" 'rc=[1-9]'
out=$(run "nc -w 3 10.0.2.2 $LPORT </dev/null; echo rc=\$?")
like "the host's loopback at 10.0.2.2 goes nowhere" "$out" 'rc=[1-9]'
out=$(run "wget -q -O - http://127.0.0.1:$LPORT/ 2>&1; wget -q -O - http://local.test:$LPORT/ 2>&1; printf 'CONNECT 127.0.0.1:$LPORT HTTP/1.1\r\n\r\n' | nc -w 3 10.0.2.100 3128")
check "  nor through the proxy (127.0.0.1, an allowed name resolving there, CONNECT)" \
	test "${out#*reached}" = "$out"
like "  an allowed name that resolves there is refused, saying so" "$(sbx net "$id" log | grep local.test)" \
	'deny +local.test'
is "  and the host's service saw no connection" "$(cat "$T/lconns" 2>/dev/null || echo 0)" 0
out=$(run 'nslookup up.test 2>&1; echo rc=$?')
like "no DNS inside" "$out" 'rc=[1-9]'
run "echo x | nc -u -w 2 $UPIP 53; echo x | nc -u -w 2 10.0.2.3 53" > /dev/null
sleep 1
is "UDP to the upstream's DNS port arrived nowhere" "$(grep -cx udp "$T/seen")" 0
is "  and of TCP only the CONNECT arrived, not the direct try" "$(grep -cx tcp "$T/seen")" 1
out=$(run "nc -w 2 fec0::2 $LPORT </dev/null; echo rc=\$?")
like "IPv6 goes nowhere" "$out" 'rc=[1-9]'

out=$("$SBXTOP" exec -n --root "$id" -- "ping -c 1 -W 2 $UPIP; echo rc=\$?; ip route add $UPIP/32 via 10.0.2.2; nc -w 2 $UPIP 7000 </dev/null; echo rc=\$?" 2>&1 | tr '\n' ' ')
like "as the guest's root, ICMP and a route of its own go nowhere" "$out" '100% packet loss.*rc=1.*rc=[1-9]'
is "  (nothing arrived)" "$(grep -cx tcp "$T/seen")" 1

# --- live changes, and the events a console sees ------------------------------------------
python3 "$TOP/tests/tools/net-events.py" "$XDG_RUNTIME_DIR/sbxtop/core.sock" 60 "$T/events" & subpid=$!
at_exit "kill $subpid"
sleep 1
sbx net "$id" allow other.test:80; rc=$?
is "net allow: exit 0" "$rc" 0
out=$(run 'wget -q -O - http://other.test/hello')
is "a live allow lets the next connection through" "$out" "hello from upstream"
sbx net "$id" deny other.test
out=$(run 'wget -q -O - http://other.test/hello 2>&1')
like "a live deny refuses it again" "$out" '403 Forbidden'
like "  by the deny entry" "$(sbx net "$id" log | tail -1)" 'deny +other.test:80 .*deny other.test +403'

for _i in $(seq 50); do grep -q '"deny other.test"' "$T/events" 2>/dev/null && break; sleep 0.1; done
kill $subpid 2>/dev/null
ev=$(cat "$T/events" 2>/dev/null)
like "events: the qemu sandbox's connections" "$ev" \
	"\"type\": \"net.connection\", \"sandbox\": \"$id\".*\"host\": \"other.test\".*\"verdict\": \"allow\""
like "  and its policy changes" "$ev" "\"type\": \"net.policy\", \"sandbox\": \"$id\""

# --- the log and counts ----------------------------------------------------------------
log=$(sbx net "$id" log)
like "the log has the allowed HTTP connection, with the address" "$log" \
	"allow +up.test:80 +$UPIP +http .*allow up.test"
like "  the CONNECT" "$log" "allow +up.test:7000 +$UPIP +connect"
like "  and the refusals" "$log" 'deny +other.test:80 .* default'
json=$(sbx net "$id" log --json | grep '"policy"' | tail -1)
like "  and the policy changes" "$json" '"deny":\["other.test:7000","other.test"\]'
out=$(sbx net "$id" --json)
is "counts: allowed and denied" "$(json_get "$out" 'd["counts"]["allowed"] >= 3 and d["counts"]["denied"] >= 6')" True
diag "counts: $(json_get "$out" 'd["counts"]')"

# --- a secret: the placeholder and the CA go in, the value does not --------------------
out=$(run 'echo $TOK')
like "the guest's \$TOK is the placeholder" "$out" '^sbxtop-secret-TOK-[0-9a-f]{32}$'
is "SSL_CERT_FILE names the bundle" "$(run 'echo $SSL_CERT_FILE')" /etc/ssl/sbxtop-ca.pem
ca=$(sed -n 2p "$XDG_STATE_HOME/sbxtop/net/$id/ca.pem")
check "the bundle in the guest holds the sandbox's CA" sh -c "$SBXTOP exec -n $id -- 'cat /etc/ssl/sbxtop-ca.pem' | grep -qF '$ca'"
out=$(run "grep -rl 'tok-value-$$' /etc /root /tmp /proc/[0-9]*/environ 2>/dev/null; echo done")
is "the value is nowhere in the guest" "$out" done

# --- a fork keeps the policy (through a snapshot and a restore on qemu) -------------------
f=$(sbx fork "$id" 2> "$T/err"); rc=$?
[ -n "$f" ] && at_exit "$SBXTOP destroy $f"
is "fork: exit 0" "$rc" 0
out=$(sbx net "$f" --json)
is "the fork has the source's entries" "$(json_get "$out" '",".join(d["policy"]["allow"]) + " / " + ",".join(d["policy"]["deny"])')" \
	"up.test,up.test:7000,local.test,other.test:80,sec.test:443 / other.test:7000,other.test"
is "  and a proxy of its own" "$(json_get "$out" 'd["proxy"]["running"]')" True
out=$("$SBXTOP" exec -n "$f" -- 'wget -q -O - http://up.test/hello; wget -q -O - http://other.test/hello 2>&1; echo $TOK' 2>&1 | tr '\n' ' ')
like "  which lets through what it allows and refuses the rest" "$out" '^hello from upstream .*403 Forbidden'
like "  and its own placeholder for the secret" "$out" "sbxtop-secret-TOK-[0-9a-f]{32} \$"
check "  not the source's" test "${out#*$(run 'echo $TOK')}" = "$out"
sbx destroy "$f" > /dev/null

# --- a helper with no proxy behind it says so ---------------------------------------------
kill "$(json_get "$(sbx net "$id" --json)" 'd["proxy"]["pid"]')"
sleep 0.5
out=$(run 'wget -q -O - http://up.test/hello 2>&1')
like "with the proxy gone, the guest is told (502)" "$out" '502'

sbx destroy "$id"
check "destroy removes the VM's directory" test ! -e "$SDIR/$id"
check "and the policy's" test ! -e "$XDG_STATE_HOME/sbxtop/net/$id"

# --- ask mode: a guest's connection held for the operator ---------------------------------
# pending_req ID: the request id of the first held request, waiting for one.
pending_req() {
	for _i in $(seq 150); do
		_p=$(sbx net "$1" pending --json)
		_r=$(json_get "$_p" 'd[0]["req"] if d else ""')
		[ -n "$_r" ] && { echo "$_r"; return 0; }
		sleep 0.1
	done
	return 1
}
q=$(sbx create --backend qemu --memory 256 --max-duration 600 --ask \
	--allow up.test 2> "$T/err"); rc=$?
[ -n "$q" ] && at_exit "$SBXTOP destroy $q"
is "create --backend qemu --ask: exit 0" "$rc" 0
"$SBXTOP" exec -n "$q" -- 'wget -q -O - http://other.test/hello 2>&1' > "$T/ask1" 2>&1 &
p1=$!
req=$(pending_req "$q")
check "a guest's connection no entry covers is held" test -n "$req"
like "  pending names it" "$(sbx net "$q" pending)" 'other.test:80'
sbx net "$q" answer "$req" once
wait $p1
is "  answered once: it goes through" "$(cat "$T/ask1")" "hello from upstream"
"$SBXTOP" exec -n "$q" -- 'wget -q -O - http://other.test/hello 2>&1' > "$T/ask2" 2>&1 &
p2=$!
req=$(pending_req "$q")
check "  once is once: the next one is held again" test -n "$req"
sbx net "$q" answer "$req" deny
wait $p2
like "  denied: wget gets the 403" "$(cat "$T/ask2")" '403 Forbidden'
like "  the log says who decided" "$(sbx net "$q" log | grep other.test | tr '\n' ' ')" \
	'allow +other.test:80 .*operator once.*deny +other.test:80 .*operator deny'
sbx destroy "$q" > /dev/null
done_testing
