# Port forwards end to end on real ns sandboxes: HTTP (python http.server),
# WebSocket (npm ws, 1,000 messages), a 50 MB raw TCP echo with sha256 checks
# both ways, 100 connections at once, nothing listening, suspended sandboxes,
# --bind, stop and restart, restore after a crash, destroy with connections open,
# and that a forward reaches the sandbox's own loopback, never the host's.
. "$(dirname "$0")/../lib.sh"

skip() { _n=$((_n + 1)); echo "ok $_n - # SKIP $1"; }
sbx() { "$SBXTOP" "$@"; }
FT="$TOP/tests/forward"
export HOME="$T/home"
mkdir -p "$HOME"

# --- usage, without a sandbox ----------------------------------------------
sbx --standalone forward nope 8000 > "$T/out" 2> "$T/err"; rc=$?
is "--standalone without --foreground: exit 2" "$rc" 2
like "--standalone without --foreground: says why" "$(cat "$T/err")" \
	'no core server to run the forwards: add --foreground'
is "--standalone without --foreground: nothing on stdout" "$(cat "$T/out")" ""
# Without --foreground the core server (started on demand) answers.
at_exit '"$SBXTOP" serve --stop'
sbx forward nope 8000 > "$T/out" 2> "$T/err"; rc=$?
is "through the core server, unknown sandbox: exit 2" "$rc" 2
like "through the core server: the core's message" "$(cat "$T/err")" "unknown sandbox 'nope'"
is "through the core server: nothing on stdout" "$(cat "$T/out")" ""
sbx forward nope 0 --foreground 2> "$T/err"; rc=$?
is "remote port 0: exit 2" "$rc" 2
like "remote port 0: says the range" "$(cat "$T/err")" "REMOTE 1 to 65535"
sbx forward nope 80:70000 --foreground 2> "$T/err"; rc=$?
is "local port too big: exit 2" "$rc" 2
sbx forward nope 8000 --foreground 2> "$T/err"; rc=$?
is "unknown sandbox: exit 2" "$rc" 2
like "unknown sandbox: named" "$(cat "$T/err")" "unknown sandbox 'nope'"
sbx forward --list --json > "$T/out"; rc=$?
is "--list with no sandboxes: exit 0" "$rc" 0
is "--list with no sandboxes: empty" "$(json_get "$(cat "$T/out")" 'len(d)')" 0
like "help forward documents --bind" "$(sbx help forward)" '--bind ADDR'

# --- a sandbox ----------------------------------------------------------------
id=$(sbx create --max-duration 900 2> "$T/err" < /dev/null); rc=$?
if [ "$rc" -ne 0 ]; then
	diag "create: $(cat "$T/err")"
	skip "no ns backend"
	done_testing
	exit
fi
at_exit "$SBXTOP destroy $id"

# run_fg NAME ARGS...: `sbxtop forward ARGS --foreground` in the background, its
# stdout in $T/NAME.out and stderr in $T/NAME.err; waits for the first URL and
# sets FG_PID and URL.
run_fg() {
	_name=$1; shift
	"$SBXTOP" forward "$@" --foreground > "$T/$_name.out" 2> "$T/$_name.err" &
	FG_PID=$!
	at_exit "kill $FG_PID"
	URL=""
	for _i in $(seq 100); do
		URL=$(head -1 "$T/$_name.out")
		[ -n "$URL" ] && return 0
		kill -0 "$FG_PID" 2>/dev/null || break
		sleep 0.05
	done
	diag "forward did not start: $(cat "$T/$_name.err")"
	return 1
}
port_of() { echo "${1##*:}"; }
# exited PID SECONDS: 0 when PID is gone within SECONDS (its status in $T/rc).
exited() {
	for _i in $(seq $(($2 * 20))); do
		if ! kill -0 "$1" 2>/dev/null; then wait "$1"; echo $? > "$T/rc"; return 0; fi
		sleep 0.05
	done
	return 1
}
list_json() { sbx forward --list --json "$@"; }

# Servers inside the sandbox.
sbx cp "$FT/echo.py" "$id:echo.py"
sbx cp "$FT/ws-echo-server.js" "$id:ws-echo-server.js"
[ -d "$FT/node_modules/ws" ] || npm ci --prefix "$FT" --no-audit --no-fund > /dev/null 2>&1
sbx cp "$FT/node_modules/" "$id:node_modules"	# '/': follow it if it is a link
sbx exec -n "$id" -- 'mkdir -p www sums && echo "hello from the sandbox" > www/index.html' 
sbx exec -n "$id" --background -- 'cd www && exec python3 -m http.server 8000 --bind 127.0.0.1' > /dev/null
sbx exec -n "$id" --background -- 'exec python3 echo.py 7000 /workspace/sums' > /dev/null
sbx exec -n "$id" --background -- 'exec node ws-echo-server.js 8080' > /dev/null
up() { sbx exec -n "$id" -- "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", $1))'" 2> /dev/null; }
until_ok 20 up 8000 && until_ok 20 up 7000 && until_ok 20 up 8080
is "the servers inside listen (http, echo, ws)" "$?" 0

# --- HTTP, WebSocket, raw TCP -------------------------------------------------
run_fg main "$id" 8000 7000 8080:0
check "forward --foreground starts" test -n "$URL"
like "it prints http://127.0.0.1:PORT" "$URL" '^http://127\.0\.0\.1:[0-9]+$'
is "one line per forward" "$(wc -l < "$T/main.out" | tr -d ' ')" 3
MAIN_PID=$FG_PID
fds() { ls /proc/"$1"/fd | wc -l; }
BASE_FDS=$(fds "$MAIN_PID")
HTTP=$(port_of "$(sed -n 1p "$T/main.out")")
ECHO=$(port_of "$(sed -n 2p "$T/main.out")")
WS=$(port_of "$(sed -n 3p "$T/main.out")")
is "curl through the forward gets the sandbox's page" \
	"$(curl -s -m 10 "http://127.0.0.1:$HTTP/index.html")" "hello from the sandbox"
out=$(for i in 1 2 3 4 5; do curl -s -m 10 -o /dev/null -w '%{http_code} ' \
	"http://127.0.0.1:$HTTP/index.html"; done)
is "five requests in a row" "$out" "200 200 200 200 200 "

out=$(cd "$FT" && node ws-client.js "ws://127.0.0.1:$WS/" 1000 2>&1); rc=$?
is "WebSocket: 1,000 messages echoed through the forward" "$out" "echoed 1000"

set -- $(python3 "$FT/tcp-client.py" "$ECHO" bulk 50)
is "50 MB raw TCP: what came back is what was sent (sha256)" "$2" "$1"
is "50 MB raw TCP: every byte came back" "${3:-0}" 52428800
sent=$1
server_got() { sbx exec -n "$id" -- 'cat sums/*.sha256 2>/dev/null' | grep -qx "$sent"; }
check "50 MB raw TCP: what the server got is what was sent (sha256)" until_ok 10 server_got

out=$(python3 "$FT/tcp-client.py" "$ECHO" many 100 64)
is "100 connections at once, each echo checked" "$out" "ok 100"
# field REMOTE KEY: that counter of the forward to REMOTE, as --list shows it.
field() { list_json "$id" | python3 -c 'import json,sys; print(sum(f[sys.argv[2]] for f in json.load(sys.stdin) if f["remote"] == int(sys.argv[1])))' "$1" "$2"; }
ge() { [ "$(field "$1" "$2")" -ge "$3" ]; }
both_ways() { ge 7000 bytes_in $((52428800 + 6553600)) && ge 7000 bytes_out $((52428800 + 6553600)); }
check "--list counts the connections (101 to the echo port)" until_ok 5 ge 7000 conns_total 101
is "no descriptor left behind after 101 connections" "$(fds "$MAIN_PID")" "$BASE_FDS"
# The counters reach the registry on the relay's next flush, a moment after the client is done.
check "--list has bytes both ways" until_ok 5 both_ways
js=$(list_json "$id")
is "--list says who runs it" "$(json_get "$js" '[f["pid"] for f in d if f["remote"] == 7000][0]')" "$MAIN_PID"
# The relay counts a connection closed a moment after its descriptors go.
none_open() { [ "$(field 7000 conns)" -eq 0 ]; }
check "--list: no connection open now" until_ok 5 none_open
like "--list table" "$(sbx forward --list)" "127\.0\.0\.1:$ECHO +7000 "
like "ls shows the forwards as docker does" "$(sbx ls | grep "$id")" \
	"$id .*127\.0\.0\.1:$HTTP->8000, 127\.0\.0\.1:$ECHO->7000, 127\.0\.0\.1:[0-9]+->8080$"
like "status lists the forwards" "$(sbx status "$id")" "forwards: 127\.0\.0\.1:$HTTP->8000 \(pid $MAIN_PID\)"
is "ls --json has the forwards" "$(json_get "$(sbx ls --json)" 'sorted(f["remote"] for f in d[0]["forwards"])')" "[7000, 8000, 8080]"
listening() { grep -q "^ *[0-9]*: $1:$(printf '%04X' "$2") 00000000:0000 0A " /proc/net/tcp; }
check "--bind defaults to 127.0.0.1" listening 0100007F "$HTTP"
check "...and only 127.0.0.1" sh -c "! grep -q ' 00000000:$(printf '%04X' "$HTTP") 00000000:0000 0A ' /proc/net/tcp"

# --- nothing listening --------------------------------------------------------
run_fg dead "$id" 7001
DEAD_PID=$FG_PID
DEAD=$(port_of "$URL")
out=$(python3 "$FT/tcp-client.py" "$DEAD" refused)
like "nothing listening inside: the local connection closes promptly" "$out" '^(0\.[0-9]+|1\.[0-9]+) (0|reset)$'
check "nothing listening inside: the forward stays up" kill -0 "$DEAD_PID"
check "nothing listening inside: the failure is counted in --list" until_ok 5 ge 7001 failures 1
like "nothing listening inside: --list says why" "$(json_get "$(list_json "$id")" '[f["last_error"] for f in d if f["remote"] == 7001][0]')" 'nothing listens on 127.0.0.1:7001'
like "nothing listening inside: the forward's log says why" "$(cat "$T/dead.err")" 'nothing listens on 127.0.0.1:7001'
sbx exec -n "$id" --background -- 'exec python3 echo.py 7001 /tmp' > /dev/null
until_ok 20 up 7001
out=$(python3 "$FT/tcp-client.py" "$DEAD" many 3 4)
is "once a server listens, the same forward reaches it" "$out" "ok 3"

# --- the host's own ports are out of reach --------------------------------------
python3 -c 'import http.server,socketserver
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"the host")
    def log_message(self, *a): pass
socketserver.TCPServer.allow_reuse_address = True
http.server.HTTPServer(("127.0.0.1", 7002), H).serve_forever()' &
HOSTSRV=$!
at_exit "kill $HOSTSRV"
host_up() { curl -s -m 5 http://127.0.0.1:7002/ | grep -q 'the host'; }
check "the host's server on port 7002 answers directly" until_ok 20 host_up
run_fg hostport "$id" 7002
out=$(curl -s -m 5 "$URL/" ; echo " rc=$?")
like "a port free in the sandbox but open on the host: not reached" "$out" '^ rc=(52|56|7)$'
kill "$FG_PID"; exited "$FG_PID" 5

# --- --bind --------------------------------------------------------------------
sbx forward "$id" 8000 --bind 10.0.0.256 --foreground 2> "$T/err"; rc=$?
is "--bind that is not an address: exit 2" "$rc" 2
like "--bind that is not an address: says so" "$(cat "$T/err")" "'10.0.0.256' is not an IP address"
sbx forward "$id" "8000:$HTTP" --foreground 2> "$T/err"; rc=$?
is "a local port in use: exit 2" "$rc" 2
like "a local port in use: says so" "$(cat "$T/err")" "port $HTTP is already in use"
run_fg any "$id" 8000 --bind 0.0.0.0
ANY_PID=$FG_PID
check "--bind 0.0.0.0 is honoured" listening 00000000 "$(port_of "$URL")"
is "--bind 0.0.0.0 prints a URL that works" "$(curl -s -m 10 "$URL/index.html")" "hello from the sandbox"
V6_PID=
if python3 -c 'import socket; socket.socket(socket.AF_INET6).bind(("::1", 0))' 2>/dev/null; then
	run_fg v6 "$id" 8000 --bind ::1
	V6_PID=$FG_PID
	like "--bind ::1 prints a bracketed URL" "$URL" '^http://\[::1\]:[0-9]+$'
	is "--bind ::1 works" "$(curl -s -m 10 "$URL/index.html")" "hello from the sandbox"
else
	skip "no IPv6 loopback here"
	skip "no IPv6 loopback here"
fi

# --- a suspended sandbox is resumed by the first connection ----------------------
sbx suspend "$id"
is "suspended" "$(json_get "$(sbx status "$id" --json)" 'd["state"]')" suspended
sleep 0.7	# the forward reads the state every 250 ms
is "a connection to a suspended sandbox resumes it and gets through" \
	"$(curl -s -m 20 "http://127.0.0.1:$HTTP/index.html")" "hello from the sandbox"
is "the sandbox is running again" "$(json_get "$(sbx status "$id" --json)" 'd["state"]')" running

# --- stop and restart -------------------------------------------------------------
sbx forward --stop "$id" 7001; rc=$?
is "--stop ID REMOTE: exit 0" "$rc" 0
check "--stop: the process that ran only that forward exits" exited "$DEAD_PID" 5
is "--stop: it exits 0" "$(cat "$T/rc")" 0
like "--stop: it says why" "$(cat "$T/dead.err")" 'every forward has stopped'
out=$(python3 -c "import socket; socket.create_connection(('127.0.0.1', $DEAD))" 2>&1)
like "--stop: the port is closed at once" "$out" 'ConnectionRefused'
is "--stop: the record is gone" "$(json_get "$(list_json "$id")" '[f["remote"] for f in d if f["remote"] == 7001]')" "[]"
check "--stop: the other forwards run on" kill -0 "$MAIN_PID"
sbx forward --stop "$id" 7001 2> "$T/err"; rc=$?
is "--stop of nothing: exit 2" "$rc" 2
like "--stop of nothing: says so" "$(cat "$T/err")" "has no forward to port 7001"
run_fg again "$id" "7001:$DEAD"
is "restart on the same local port" "$URL" "http://127.0.0.1:$DEAD"
out=$(python3 "$FT/tcp-client.py" "$DEAD" many 2 4)
is "the restarted forward works" "$out" "ok 2"
AGAIN_PID=$FG_PID
kill -INT "$AGAIN_PID"
check "SIGINT ends a foreground forward" exited "$AGAIN_PID" 5
is "SIGINT: exit 0" "$(cat "$T/rc")" 0
is "SIGINT: its record goes" "$(json_get "$(list_json "$id")" '[f["remote"] for f in d if f["remote"] == 7001]')" "[]"

# --- restore after a crash -----------------------------------------------------------
run_fg crash "$id" 7000
CRASH=$(port_of "$URL")
kill -9 "$FG_PID"; exited "$FG_PID" 5
is "a killed forward's record stays, marked gone" \
	"$(json_get "$(list_json "$id")" '[f["live"] for f in d if f["local"] == '"$CRASH"']')" "[False]"
like "--list shows it gone" "$(sbx forward --list "$id")" "127\.0\.0\.1:$CRASH .*\(gone\)"
run_fg restore --restore
is "--restore brings it back on the same port" "$URL" "http://127.0.0.1:$CRASH"
RESTORE_PID=$FG_PID
is "the restored forward works" "$(python3 "$FT/tcp-client.py" "$CRASH" many 2 4)" "ok 2"
is "the restored record is the live one only" \
	"$(json_get "$(list_json "$id")" '[(f["live"], f["pid"]) for f in d if f["local"] == '"$CRASH"']')" "[(True, $RESTORE_PID)]"

# --- destroy with connections open ----------------------------------------------------
python3 "$FT/tcp-client.py" "$ECHO" hold > "$T/hold.out" 2>&1 &
HOLD=$!
at_exit "kill $HOLD"
until_ok 10 grep -q connected "$T/hold.out"
nfd=$(fds "$MAIN_PID")
check "--list shows the connection open" until_ok 5 ge 7000 conns 1
sbx destroy "$id"; rc=$?
is "destroy with connections open: exit 0" "$rc" 0
check "destroy: the open connection is closed" until_ok 10 grep -q closed "$T/hold.out"
check "destroy: the foreground forward exits" exited "$MAIN_PID" 5
is "destroy: it exits 0 (sanitizer builds: no leak)" "$(cat "$T/rc")" 0
like "destroy: it says the sandbox is gone" "$(cat "$T/main.err")" "sandbox $id is gone"
check "destroy: the restored forward exits too" exited "$RESTORE_PID" 5
if exited "$ANY_PID" 5 && { [ -z "$V6_PID" ] || exited "$V6_PID" 5; }; then
	ok "destroy: the --bind forwards exit too"
else
	not_ok "destroy: the --bind forwards exit too"
fi
check "destroy: the forward's ports are closed" sh -c "! python3 -c \"import socket; socket.create_connection(('127.0.0.1', $HTTP))\" 2>/dev/null"
diag "the forward process had $nfd descriptors open with one connection"
is "destroy: no record left" "$(sbx forward --list --json)" "[]"

done_testing
