# GET /v1/pty: a login shell on a PTY over an HTTP upgrade with the small framing
# ([type][len BE32][payload]): input, output, resize, signals, exit, hang-up.
. "$(dirname "$0")/../lib.sh"
agent_start

UC="python3 $TOP/tests/tools/upgrade-client.py --sock $SOCK --secret $SECRET"
# pty PATH SCRIPT [client args...]: run a scripted exchange; JSON on stdout.
pty() { _p=$1; _s=$2; shift 2; timeout 60 $UC "$@" --script "$_s" pty "$_p"; }
# gone PID: wait up to 6 s for the process to disappear (reaped by the agent).
gone() { for _i in $(seq 120); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.05; done; return 1; }

r=$(pty '/v1/pty?cols=100&rows=30' '[
	["send", "echo hello-$((6*7))\n"], ["expect", "hello-(42)"],
	["send", "tty\n"], ["expect", "(/dev/pts/[0-9]+)"],
	["send", "echo \"pwd=$(pwd)\"\n"], ["expect", "pwd=(/[^\\r]*)\r"],
	["send", "echo \"size=$(stty size)\"\n"], ["expect", "size=(\\d+ \\d+)\r"],
	["resize", 132, 43],
	["send", "echo \"size=$(stty size)\"\n"], ["expect", "size=(\\d+ \\d+)\r"],
	["send", "echo term=$TERM\n"], ["expect", "term=([^$\\s]+)\r"],
	["send", "sleep 100\n"], ["sleep", 0.5], ["signal", "INT"],
	["send", "echo back-$((2+3))\n"], ["expect", "back-(5)", 5],
	["send", "exit 3\n"], ["exit", 10]]')
is "typed input runs: hello-42" "$(json_get "$r" 'd["matches"][0]')" 42
like "tty is a pts" "$(json_get "$r" 'd["matches"][1]')" '^/dev/pts/[0-9]+$'
is "cwd defaults to the workspace" "$(json_get "$r" 'd["matches"][2]')" "$T/ws"
is "stty size from cols/rows at start" "$(json_get "$r" 'd["matches"][3]')" "30 100"
is "stty size after a resize frame" "$(json_get "$r" 'd["matches"][4]')" "43 132"
is "TERM is set" "$(json_get "$r" 'd["matches"][5]')" xterm-256color
is "signal INT interrupts sleep 100" "$(json_get "$r" 'd["matches"][6]')" 5
is "exit 3: exit frame" "$(json_get "$r" 'd["exit"]')" "{'exit_code': 3, 'signal': None}"

# Defaults (80x24), a command instead of the interactive shell, and cwd.
mkdir -p "$T/ws/sub dir"
r=$(pty '/v1/pty?cwd=sub%20dir&command=stty%20size%3B%20pwd%3B%20exit%207' '[["exit", 10]]')
like "command: stty size defaults to 24 80" "$(json_get "$r" 'd["output"]')" '24 80'
like "command: cwd relative to the workspace" "$(json_get "$r" 'd["output"]')" "$T/ws/sub dir"
is "command: exit code 7" "$(json_get "$r" 'd["exit"]["exit_code"]')" 7
r=$(pty '/v1/pty?command=kill%20-TERM%20%24%24' '[["exit", 10]]')
is "killed by a signal: exit frame names it" "$(json_get "$r" 'd["exit"]')" \
	"{'exit_code': None, 'signal': 'TERM'}"

# Input sent with the request head (one data frame of 20 bytes) is not lost.
r=$(pty '/v1/pty' '[["expect", "early-(9)"], ["send", "exit\n"], ["exit", 10]]' \
	--early '\x00\x00\x00\x00\x14echo early-$((3*3))\n')
is "early input frame reaches the shell" "$(json_get "$r" 'd["matches"][0]')" 9

# Closing the connection hangs up the shell.
r=$(pty '/v1/pty' '[["send", "echo pid-$$\n"], ["expect", "pid-(\\d+)"], ["close"]]')
pid=$(json_get "$r" 'd["matches"][0]')
check "closing the connection kills the shell (pid $pid gone)" gone "$pid"

# A command that ignores SIGHUP is killed after the grace.
r=$(pty "/v1/pty?command=$(printf '%s' "trap '' HUP; echo pid-\$\$; sleep 1000" | python3 -c \
	'import sys,urllib.parse; print(urllib.parse.quote(sys.stdin.read()))')" \
	'[["expect", "pid-(\\d+)"], ["close"]]')
pid=$(json_get "$r" 'd["matches"][0]')
check "a shell ignoring SIGHUP is killed after the grace" gone "$pid"

# A frame over 1 MiB closes the connection and ends the shell.
r=$(pty '/v1/pty' '[["send", "echo pid-$$\n"], ["expect", "pid-(\\d+)"],
	["raw", "0000200000"], ["eof", 10]]')
check "oversized frame: connection closed" test -n "$(json_get "$r" 'd["matches"][0]')"
check "oversized frame: shell gone" gone "$(json_get "$r" 'd["matches"][0]')"
# An unknown frame type too.
r=$(pty '/v1/pty' '[["sleep", 0.2], ["raw", "0900000000"], ["eof", 10]]')
is "unknown frame type: connection closed" "$(json_get "$r" 'd.get("error")')" None

# Malformed control frames are ignored: the shell goes on.
r=$(pty '/v1/pty' '[["raw", "0100000003414243"], ["signal", "NOPE"],
	["send", "echo alive-$((1+1))\n"], ["expect", "alive-(2)"], ["send", "exit\n"], ["exit", 10]]')
is "bad resize and unknown signal ignored" "$(json_get "$r" 'd["matches"][0]')" 2

# Errors before any upgrade.
for q in cols=0 cols=abc rows=10001 rows=-1 as_root=maybe command= 'cwd=no/such/dir'; do
	r=$(timeout 20 $UC request "/v1/pty?$q")
	is "$q: 400" "$(json_get "$r" 'd["status"]')" 400
done
r=$(timeout 20 $UC request "/v1/pty?cols=0")
like "400 names the field" "$(json_get "$r" 'd["body"]')" "'cols'"
r=$(timeout 20 $UC --no-upgrade request "/v1/pty")
is "no Upgrade headers: 400" "$(json_get "$r" 'd["status"]')" 400
r=$(timeout 20 $UC --secret '' request "/v1/pty")
is "no secret: 401" "$(json_get "$r" 'd["status"]')" 401
r=$(timeout 20 $UC --secret wrong-secret-xxxxxxxx request "/v1/pty")
is "wrong secret: 401" "$(json_get "$r" 'd["status"]')" 401

# as_root=1 is accepted (the test agent has no --user, so it runs as itself).
r=$(pty '/v1/pty?as_root=1&command=id%20-u' '[["exit", 10]]')
like "as_root=1 runs" "$(json_get "$r" 'd["output"]')" "^$(id -u)"

# Output still waiting for the client when the command exits arrives whole and in
# order.  The client reads nothing until the command is done; it exits while the
# agent holds output the socket would not take only for some sizes (the socket's,
# the terminal's buffers), so a range of them runs at once.
pids=""
for n in $(seq 20000 4000 72000); do
	pty "/v1/pty?command=seq%201%20$n" '[["stall", 2], ["exit", 30]]' > "$T/seq-$n.json" &
	pids="$pids $!"
done
wait $pids
got=$(python3 -c '
import json, sys
for n in range(20000, 72001, 4000):
    o = json.load(open("%s/seq-%d.json" % (sys.argv[1], n)))["output"]
    if o != "".join("%d\r\n" % i for i in range(1, n + 1)):
        print("seq %d: %d bytes, %r" % (n, len(o), o[:24]))
' "$T")
is "output held back at the exit comes whole" "$got" ""

# Events.
sleep 0.3
ev=$(api GET '/v1/events?follow=0')
like "pty.opened event" "$ev" '"type":"pty.opened","ts_ms":[0-9]+,"id":[0-9]+,"pid":[0-9]+'
like "pty.closed event with exit code" "$ev" '"type":"pty.closed",[^}]*"exit_code":3,"signal":null'
like "pty.closed event with a signal" "$ev" '"type":"pty.closed",[^}]*"exit_code":null,"signal":"KILL"'
is "every opened pty closed" "$(printf '%s\n' "$ev" | grep -c '"pty.closed"')" \
	"$(printf '%s\n' "$ev" | grep -c '"pty.opened"')"
h=$(curl -s --unix-socket "$SOCK" http://a/health)
is "agent still healthy" "$(json_get "$h" 'd["ok"]')" True
done_testing
