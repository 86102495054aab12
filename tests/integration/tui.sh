# The operator console end to end, in a real terminal (tmux), on the standalone
# console with private XDG dirs: it starts; sandboxes and commands made from
# outside show up live; the console runs and kills commands, filters, follows a
# resize, switches themes, shows help, opens a shell, destroys with a
# confirmation; read-only hides actions; and the terminal is restored on quit,
# on SIGTERM and on a fatal error.  Then on the core server: an MCP client's
# work shows live, the Logs tab follows a log, a shell opens and closes,
# approvals are denied and approved, and a killed core is replaced.
. "$(dirname "$0")/../lib.sh"

skip() { _n=$((_n + 1)); echo "ok $_n - # SKIP $1"; }
if ! command -v tmux >/dev/null 2>&1; then
	skip "tmux is not installed"
	exit 0
fi
export HOME="$T/home" TERM=xterm-256color LANG=C.UTF-8 LC_ALL=C.UTF-8
unset NO_COLOR
mkdir -p "$HOME"
SOCKNAME="sbxtest-$$"
tm() { tmux -L "$SOCKNAME" "$@"; }
at_exit "tmux -L $SOCKNAME kill-server"
IDS=""
at_exit 'for i in $IDS; do "$SBXTOP" destroy "$i"; done'

screen() { tm capture-pane -p -t con; }
# wait_for REGEX [SECONDS]: until the screen matches (extended regex).
wait_for() {
	_deadline=$(( $(date +%s%N) / 1000000 + ${2:-10} * 1000 ))
	while [ $(( $(date +%s%N) / 1000000 )) -lt $_deadline ]; do
		screen | grep -Eq -- "$1" && return 0
		sleep 0.05
	done
	return 1
}
wait_gone() {
	_deadline=$(( $(date +%s%N) / 1000000 + ${2:-10} * 1000 ))
	while [ $(( $(date +%s%N) / 1000000 )) -lt $_deadline ]; do
		screen | grep -Eq -- "$1" || return 0
		sleep 0.05
	done
	return 1
}
# A session that stays, so the server does not exit (and race the next
# new-session) when the console's session is replaced.
tm new-session -d -s keep -x 80 -y 24 "sleep 100000"
# A shell in a 120x32 pane, then the console in it.
console() {
	tm kill-session -t con 2>/dev/null
	tm new-session -d -s con -x 120 -y 32 "PS1='$ ' sh"
	tm send-keys -t con "clear; $* ; echo EXITED-\$?" Enter
}
ESC=$(printf '\033')
COLOUR_RE="$ESC\\[([0-9;]*;)?(3[0-7]|4[0-7]|38;5;[0-9]+|48;5;[0-9]+)(;[0-9;]*)?m"
alt_on() { tm display-message -p -t con '#{alternate_on}'; }
ms() { echo $(( $(date +%s%N) / 1000000 )); }
keys() { tm send-keys -t con "$@"; }

# --- start ------------------------------------------------------------------
console "$SBXTOP --standalone"
check "the console starts and shows its title" wait_for '^ sbxtop [0-9.]+ .*core: standalone'
check "an empty list says how to create a sandbox" wait_for 'no sandboxes yet'
check "the key bar is at the bottom" sh -c "tmux -L $SOCKNAME capture-pane -p -t con | tail -1 | grep -q 'q quit'"
is "the console uses the alternate screen" "$(alt_on)" 1
if tm capture-pane -p -e -t con | grep -Eq "$COLOUR_RE"; then ok "colours are used on a 256-colour terminal"; else not_ok "colours are used on a 256-colour terminal"; fi

# --- live: a sandbox created from outside ------------------------------------
id=$("$SBXTOP" create --name from-cli --max-duration 900 2>"$T/err")
t0=$(ms)
IDS="$IDS $id"
if wait_for "$id +from-cli +ns +running" 10; then
	ok "a sandbox created from outside appears ($(( $(ms) - t0 )) ms after create returned)"
else
	not_ok "a sandbox created from outside appears"; screen | head -5 | sed 's/^/# /'
fi
check "the right pane shows the selected sandbox" wait_for "$id  from-cli .* ns .* running"

# --- live: a command run from outside ----------------------------------------
"$SBXTOP" exec "$id" -- 'echo OUTSIDE-MARKER-$((40+2))' >/dev/null
check "an exec run from outside appears with its output" wait_for 'OUTSIDE-MARKER-42' 5
check "its header names the origin, the exit and the command" wait_for '✓ cli .* x[0-9]+ +exit 0 .*echo OUTSIDE'

# --- x runs a command --------------------------------------------------------
keys x
check "x asks for a command" wait_for "run in $id:"
keys 'echo CONSOLE-$((6*7)) from-the-console' Enter
check "its output shows in the Exec tab" wait_for '^│?.*CONSOLE-42 from-the-console' 10
check "it is marked as the human's" wait_for '✓ human .*echo CONSOLE'
check "the result is said on the prompt line" wait_for 'command exited 0'

# --- K kills a long one ------------------------------------------------------
keys x
wait_for "run in $id:"
keys 'echo LONG-START; sleep 300; echo NEVER' Enter
check "a long command is shown running" wait_for '▸ human .*running .*echo LONG-START' 10
keys K
# The prompt line says TERM was sent, until the command's end replaces it.
check "K sends TERM" wait_for 'TERM sent to x[0-9]+|command killed by TERM' 5
check "the command shows as killed" wait_for '✗ human .*killed TERM.*echo LONG-START' 10
left=$("$SBXTOP" exec "$id" -- 'for f in /proc/[0-9]*/comm; do cat $f 2>/dev/null; done | grep -c "^sleep$"')
is "no sleep is left inside the sandbox" "$left" 0
if screen | grep -q NEVER; then not_ok "the killed command did not go on"; else ok "the killed command did not go on"; fi

# --- the Files tab -------------------------------------------------------------
"$SBXTOP" exec "$id" -- 'echo file-content-ok > /workspace/hello.txt; mkdir -p /workspace/sub' >/dev/null
keys Enter
keys Tab Tab Tab
check "Tab reaches the Files tab" wait_for '\[Files\]'
check "Files lists the workspace" wait_for 'hello.txt' 10
check "directories come first" wait_for 'sub/ *│$' 5
keys Enter
check "Enter opens a directory" wait_for '/workspace/sub +\(Enter' 10
keys BSpace
check "Backspace goes up" wait_for 'hello.txt' 10
keys j Enter
check "Enter on a file shows it" wait_for 'file-content-ok' 10
keys Escape
sleep 0.3
keys Escape
sleep 0.3

# --- Activity shows the console's own tool calls --------------------------------
keys Enter Tab
check "Activity lists tool calls with client, tool and outcome" wait_for 'console +sandbox_exec .* ok ' 5
keys Escape
sleep 0.2
keys Tab Tab Tab Tab

# --- the filter ----------------------------------------------------------------
id2=$("$SBXTOP" create --name other-one --max-duration 900 2>>"$T/err")
IDS="$IDS $id2"
check "a second sandbox appears" wait_for "$id2 +other-one" 10
keys /
check "/ asks for a regex" wait_for 'filter sandboxes'
keys 'fr[o]m-c' Enter
check "the regex keeps the matching sandbox" wait_for 'Sandboxes \(1 of 2\)' 5
if screen | grep -q "$id2"; then not_ok "the regex hides the others"; else ok "the regex hides the others"; fi
keys / '!from' Enter
check "! inverts the filter" wait_for "$id2 +other-one" 5
if screen | grep -q "$id +from-cli"; then not_ok "the inverted filter hides the match"; else ok "the inverted filter hides the match"; fi
keys / '(' Enter
check "a bad regex is reported, with where" wait_for 'filter: at [0-9]+: ' 5
keys Escape
check "Esc clears the filter" wait_for 'Sandboxes \(2\)' 5
keys g

# --- resize --------------------------------------------------------------------
tm resize-window -t con -x 90 -y 24
sleep 0.5
last=$(screen | sed -n 24p)
like "after a resize the key bar is on the new last line" "$last" 'filter : command'
w=$(screen | sed -n 2p | sed 's/ *$//' | wc -m)
is "after a resize the boxes span the new width" "$w" 91
tm resize-window -t con -x 120 -y 32
sleep 0.5
like "and back" "$(screen | sed -n 32p)" 'q quit'

# --- 80x24 ---------------------------------------------------------------------
# Every list row inside its pane (the border at column 38 on every line of the
# panes), the header over its columns, the clock and "? help q quit" kept.
tm resize-window -t con -x 80 -y 24
sleep 0.5
scr=$(screen)
like "at 80x24 the key bar keeps ? help and q quit" "$(printf '%s\n' "$scr" | sed -n 24p)" '\? help q quit *$'
like "at 80x24 the title keeps the clock" "$(printf '%s\n' "$scr" | sed -n 1p)" ' [0-9]{2}:[0-9]{2}:[0-9]{2} *$'
geo=$(printf '%s\n' "$scr" | python3 -c '
import sys
ls = sys.stdin.read().split("\n")
spill = [i + 1 for i in range(1, 22) if len(ls[i]) < 39 or ls[i][37] not in "\u2502\u2510\u2518" or ls[i][38] not in "\u2502\u250c\u2514"]
hdr = ls[2]
row = [l for l in ls[3:16] if sys.argv[1] in l][0]
print("spill" if spill else "inside", spill)
print(hdr.index("NAME") == row.index("from-cli"), hdr.index("STATE") == row.index("running"))
' "$id")
like "at 80x24 no row spills out of its pane" "$geo" '^inside'
like "at 80x24 the header lines up with the rows (NAME, STATE)" "$geo" 'True True$'
tm resize-window -t con -x 120 -y 32
sleep 0.5
check "back at 120x32 the list shows BACKEND again" wait_for ' ID +NAME +BACKEND +STATE +LEFT +FWD' 5

# --- themes --------------------------------------------------------------------
before=$(tm capture-pane -p -e -t con | head -1)
keys : 'theme light' Enter
if wait_for 'theme light' 5; then ok ":theme light switches"; else
	not_ok ":theme light switches"; screen | tail -3 | sed 's/^/# /'; fi
after=$(tm capture-pane -p -e -t con | head -1)
if [ "$before" != "$after" ]; then ok "the title's colours changed"; else not_ok "the title's colours changed"; fi
keys : 'theme nosuch' Enter
check "an unknown theme is an error naming it" wait_for "no theme 'nosuch'" 5
keys : 'theme default' Enter
wait_for 'theme default' 5

# --- :create with keys ----------------------------------------------------------
keys : 'create pal-made backend=ns network=none' Enter
check ":create NAME backend=ns network=none makes a sandbox" wait_for 'created sbx-[0-9a-f]{6}' 30
check "and it shows up in the list" wait_for 'pal-made' 5
pid_made=$("$SBXTOP" status --json pal-made 2> /dev/null |
	python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["id"], d["network"])')
IDS="$IDS ${pid_made%% *}"
is "with the network asked for" "${pid_made#* }" none
"$SBXTOP" destroy pal-made > /dev/null 2>&1
wait_gone 'pal-made' 20
keys : 'create bogus=1' Enter
check ":create refuses an unknown key, naming it" wait_for "not 'bogus='" 5

# --- help ----------------------------------------------------------------------
keys '?'
check "? shows the help from the keymap" wait_for 'Help — keys' 5
check "the help lists the keys" wait_for 'kill the newest running command' 2
keys PageDown
check "the help scrolls to the palette" wait_for ':forward PORT' 2
keys Escape
check "Esc closes the help" wait_for 'Sandboxes \(2\)' 5

# --- shell ---------------------------------------------------------------------
keys s
if wait_for '\[sbxtop\] shell in' 10; then
	ok "s opens a shell"
	sleep 1
	keys 'echo SHELL-$((2+3)) in $(pwd)' Enter
	check "the shell runs commands in the sandbox" wait_for 'SHELL-5 in /workspace' 10
	keys 'exit' Enter
	check "leaving the shell comes back to the console" wait_for '^ sbxtop [0-9.]+ .*core: standalone' 10
	check "and says so" wait_for 'back from the shell' 5
else
	not_ok "s opens a shell"; screen | tail -3 | sed 's/^/# /'
fi

# --- suspend, resume, forward ----------------------------------------------------
keys g
wait_for "▶$id" 5
keys z
check "z suspends" wait_for "▶$id +from-cli +ns +suspended" 15
keys z
check "z again resumes" wait_for "▶$id +from-cli +ns +running" 15
keys p
check "p asks for a port" wait_for "forward a port of $id" 5
keys 8080 Enter
check "the forward shows in the Forwards pane" wait_for "127.0.0.1:[0-9]+ → $id:8080" 10
check "the list counts it in FWD" wait_for "▶$id +from-cli +ns +running +[0-9hms.]+ +1 " 10

# --- destroy -------------------------------------------------------------------
keys g
wait_for "▶$id" 5
keys d
check "d asks to confirm" wait_for "destroy $id\\? \\[y\\] yes" 5
keys n
check "n keeps it" wait_for 'not destroyed' 5
keys d
wait_for "destroy $id\\?" 5
keys y
check "d then y destroys it" wait_gone "$id +from-cli" 20
if "$SBXTOP" ls 2>/dev/null | grep -q "$id"; then not_ok "it is gone from sbxtop ls"; else ok "it is gone from sbxtop ls"; fi

# --- quit ----------------------------------------------------------------------
keys q
check "q quits with status 0" wait_for '^EXITED-0' 10
is "the terminal is back on the main screen" "$(alt_on)" 0
check "the shell prompt is back" wait_for '^\$ ?$' 5

# --- the mouse -----------------------------------------------------------------
# On xterm's terminal description (SGR mouse reports, releases included): a
# press selects the row under it, and neither its release nor a right click
# stops the console (the clock goes on ticking with no key pressed).
id4=$("$SBXTOP" create --name click-me --max-duration 900 2>>"$T/err")
IDS="$IDS $id4"
tm kill-session -t con 2>/dev/null
tm new-session -d -s con -x 80 -y 24 "PS1='$ ' sh"
keys "clear; TERM=xterm-256color $SBXTOP --standalone ; echo EXITED-\$?" Enter
wait_for "$id4 +click-me" 10
wait_for "$id2 +other-one" 5
hex() { printf "$1" "$2" | od -An -tx1; }
row=$(screen | grep -n '^. sbx-[0-9a-f]\{6\} ' | head -1 | cut -d: -f1)
target=$(screen | sed -n "${row:-0}p" | grep -o 'sbx-[0-9a-f]\{6\}' | head -1)
clock() { screen | head -1 | grep -oE '[0-9]{2}:[0-9]{2}:[0-9]{2} *$'; }
ticks() {
	_c=$(clock)
	_deadline=$(( $(ms) + 3000 ))
	while [ "$(ms)" -lt $_deadline ]; do
		[ "$(clock)" != "$_c" ] && [ -n "$(clock)" ] && return 0
		sleep 0.1
	done
	return 1
}
if [ -n "$target" ]; then
	keys -H $(hex '\033[<0;5;%dM' "$row")
	check "a mouse press selects the row under it" wait_for "▶$target" 5
	keys -H $(hex '\033[<0;5;%dm' "$row")
	sleep 0.3
	check "after the release the clock still ticks, with no key pressed" ticks
	keys -H $(hex '\033[<2;60;%dM' 10) $(hex '\033[<2;60;%dm' 10)
	sleep 0.3
	check "after a right click too" ticks
else
	not_ok "a mouse press selects the row under it"; screen | sed 's/^/# /'
fi
keys q
check "q quits after clicks" wait_for '^EXITED-0' 10

# --- readonly ------------------------------------------------------------------
console "$SBXTOP --standalone --readonly"
check "--readonly starts" wait_for 'read-only' 10
wait_for "$id2 +other-one" 10
bar=$(screen | tail -1)
case "$bar" in *destroy*|*exec*|*kill*) not_ok "--readonly hides the actions in the key bar" ;; *) ok "--readonly hides the actions in the key bar" ;; esac
keys d
check "d is refused" wait_for 'read-only console' 5
keys x
sleep 0.3
if screen | grep -q 'run in'; then not_ok "x is refused"; else ok "x is refused"; fi
keys : "destroy" Enter
check ":destroy is refused" wait_for "read-only console: 'destroy'" 5
keys '?'
wait_for 'Help — keys' 5
if screen | grep -q 'destroy the sandbox'; then not_ok "help leaves out the actions"; else ok "help leaves out the actions"; fi
keys Escape
"$SBXTOP" ls | grep -q "$id2" && ok "the sandbox is still there" || not_ok "the sandbox is still there"
keys q
wait_for '^EXITED-0' 10

# --- NO_COLOR ------------------------------------------------------------------
console "NO_COLOR=1 $SBXTOP --standalone"
wait_for '^ sbxtop' 10
sleep 0.3
if tm capture-pane -p -e -t con | grep -Eq "$COLOUR_RE"; then
	not_ok "NO_COLOR: no colours are sent"
else
	ok "NO_COLOR: no colours are sent"
fi
if tm capture-pane -p -e -t con | head -1 | grep -Eq "$ESC\\[([0-9;]*;)?7(;[0-9;]*)?m"; then
	ok "NO_COLOR: the title is shown with attributes (reverse)"
else
	not_ok "NO_COLOR: the title is shown with attributes (reverse)"
fi

# --- SIGTERM restores the terminal -----------------------------------------------
pid=$(pgrep -n -f "^$SBXTOP --standalone" || true)
if [ -n "$pid" ]; then
	kill -TERM "$pid"
	check "SIGTERM ends the console" wait_for '^EXITED-143' 10
	is "after SIGTERM the terminal is back on the main screen" "$(alt_on)" 0
else
	not_ok "the console process was found"
fi

# --- a fatal error restores the terminal -----------------------------------------
console "SBXTOP_TEST_HOOKS=1 $SBXTOP --standalone"
wait_for '^ sbxtop' 10
keys : 'fatal-test' Enter
check "a fatal error ends the console" wait_for '^EXITED-134' 10
is "after a fatal error the terminal is back on the main screen" "$(alt_on)" 0
check "the fatal message is readable on the restored terminal" wait_for 'fatal: a fatal error asked for' 5

# --- with the core server: MCP sessions, logs, a shell, approvals, a crash -------
console "$SBXTOP"
wait_for '^ sbxtop' 10
if screen | head -1 | grep -q 'core: standalone'; then
	skip "core server not built yet: the console on the core server"
else
	check "the console is on the core server" wait_for 'core: local' 5
	keys : 'approve destructive' Enter
	check ":approve destructive is taken" wait_for 'approvals: destructive' 5
	# mcp.py SBXTOP [SANDBOX]: an MCP client (the sbxtop --mcp bridge) that
	# creates a sandbox, runs a command in it and asks to destroy it; with
	# SANDBOX, only asks to destroy that one.
	cat > "$T/mcp.py" <<'PY'
import json, subprocess, sys
p = subprocess.Popen([sys.argv[1], "--mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def rpc(i, m, params):
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": m, "params": params}) + "\n"); p.stdin.flush()
    while True:
        r = json.loads(p.stdout.readline())
        if r.get("id") == i: return r
rpc(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "tui-test", "version": "1"}})
p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n"); p.stdin.flush()
if len(sys.argv) > 2:
    sid = sys.argv[2]
else:
    r = rpc(2, "tools/call", {"name": "sandbox_create", "arguments": {"name": "via-mcp", "max_duration_s": 900}})
    sid = r["result"]["structuredContent"]["sandbox_id"]
    print(sid, flush=True)
    rpc(3, "tools/call", {"name": "sandbox_exec", "arguments": {"sandbox_id": sid, "command": "echo MCP-MARKER"}})
r = rpc(4, "tools/call", {"name": "sandbox_destroy", "arguments": {"sandbox_id": sid}})
print("DESTROY", "denied" if r["result"].get("isError") else "done", flush=True)
p.stdin.close(); p.wait()
PY
	python3 "$T/mcp.py" "$SBXTOP" > "$T/mcp.out" 2>&1 &
	mpid=$!
	at_exit "kill $mpid"
	check "an MCP client's sandbox appears live" wait_for 'via-mcp' 15
	# Another sandbox (other-one) is still listed: select the agent's.
	keys / 'via-mcp' Enter
	check "its command's output appears live" wait_for 'MCP-MARKER' 15
	check "its destroy waits for approval" wait_for 'tui-test.* wants sandbox_destroy' 15
	check "the approval prompt names the sandbox, by id and name" \
	    wait_for '! tui-test 1 wants sandbox_destroy on sbx-[0-9a-f]{6} \(via-mcp\) ' 5
	check "the status line counts the MCP session and the pending approval" \
	    wait_for 'core: local .* 1 MCP session .*approvals: destructive \(1 pending\)' 5
	keys n
	wait_for 'deny: reason' 5
	keys 'not now' Enter
	wait $mpid
	like "the denied destroy is an error for the agent" "$(cat "$T/mcp.out")" 'DESTROY denied'
	check "nothing is pending any more" wait_for 'approvals: destructive \(0 pending\)' 5
	mid=$(head -1 "$T/mcp.out")
	IDS="$IDS $mid"

	# The Logs tab: the tail of the agent's log, then what is appended, live.
	keys ']'
	if wait_for 'sbxtop-agent info: sbxtop-agent' 10; then
		ok "the Logs tab on the core server shows the agent's log"
	else
		not_ok "the Logs tab on the core server shows the agent's log"; screen | sed 's/^/# /'
	fi
	alog=$(find "$XDG_STATE_HOME" -path "*$mid*" -name agent.log | head -1)
	if [ -n "$alog" ]; then
		t0=$(ms)
		echo "LOG-LIVE-MARKER-$((40+2)) appended" >> "$alog"
		if wait_for 'LOG-LIVE-MARKER-42 appended' 5; then
			ok "a line appended to the log shows live ($(( $(ms) - t0 )) ms)"
		else
			not_ok "a line appended to the log shows live"; screen | sed 's/^/# /'
		fi
	else
		not_ok "the sandbox's agent log is found on the host"
	fi
	keys '['

	# s: a shell through the core server, then back.
	keys s
	if wait_for '\[sbxtop\] shell in' 10; then
		ok "s opens a shell through the core server"
		sleep 1
		keys 'echo MARK$((1+1))' Enter
		check "typing in it runs in the sandbox" wait_for '^MARK2' 10
		keys 'exit' Enter
		check "exit comes back to the console" wait_for '^ sbxtop [0-9.]+ .*core: local' 10
		check "which says so" wait_for 'back from the shell' 5
		is "the console is on the alternate screen again" "$(alt_on)" 1
		check "and draws its list" wait_for "▶$mid +via-mcp" 5
	else
		not_ok "s opens a shell through the core server"; screen | tail -3 | sed 's/^/# /'
	fi

	# y approves: the agent's destroy goes on.
	python3 "$T/mcp.py" "$SBXTOP" "$mid" > "$T/mcp2.out" 2>&1 &
	mpid=$!
	at_exit "kill $mpid"
	check "a second destroy waits for approval" wait_for 'tui-test.* wants sandbox_destroy' 15
	keys y
	wait $mpid
	like "the approved destroy ran for the agent" "$(cat "$T/mcp2.out")" 'DESTROY done'
	check "the sandbox leaves the console's list" wait_gone "$mid +via-mcp" 15
	if "$SBXTOP" ls 2>/dev/null | grep -q "$mid"; then not_ok "and sbxtop ls"; else ok "and sbxtop ls"; fi
	keys Escape

	# A download whose long sandbox path comes first: the approvals screen
	# shows every argument, the host path first and whole.
	python3 - "$SBXTOP" "$id2" "$T/dl-target-$$" > "$T/mcp3.out" 2>&1 <<'PY' &
import json, subprocess, sys
p = subprocess.Popen([sys.argv[1], "--mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def rpc(i, m, params):
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": m, "params": params}) + "\n"); p.stdin.flush()
    while True:
        r = json.loads(p.stdout.readline())
        if r.get("id") == i: return r
rpc(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "tui-dl", "version": "1"}})
p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n"); p.stdin.flush()
r = rpc(2, "tools/call", {"name": "sandbox_download", "arguments": {"sandbox_id": sys.argv[2],
    "remote_path": "/workspace/" + "r" * 400 + "/file", "local_path": sys.argv[3]}})
print("DOWNLOAD", "denied" if r["result"].get("isError") else "done", flush=True)
p.stdin.close(); p.wait()
PY
	mpid=$!
	at_exit "kill $mpid"
	check "a download waits for approval" wait_for 'tui-dl.* wants sandbox_download' 15
	keys Enter
	check "the approvals screen shows its host path first and whole" \
	    wait_for "^[^a-z]*local_path: $T/dl-target-$$" 5
	if wait_for 'r*/file' 5 && ! screen | grep -q 'more: a taller'; then
		ok "and the long sandbox path, wrapped to its end"
	else
		not_ok "and the long sandbox path, wrapped to its end"; screen | sed 's/^/# /'
	fi
	keys n
	wait_for 'deny: reason' 5
	keys Enter
	wait $mpid
	like "the denied download is an error for the agent" "$(cat "$T/mcp3.out")" 'DOWNLOAD denied'
	check "nothing was written on the host" test ! -e "$T/dl-target-$$"
	keys Escape

	# The core killed: the console gets a new one (started on demand).
	old=$(cat "$XDG_RUNTIME_DIR/sbxtop/server.lock")
	if wait_for "$id2 +other-one" 5; then
		ok "the other sandbox is listed"
	else
		not_ok "the other sandbox is listed"; screen | sed 's/^/# /'
	fi
	kill -9 "$old"
	if wait_for 'core: local \(reconnected, pid [0-9]+\)' 15; then
		ok "after the core is killed the status line says the console reconnected"
	else
		not_ok "after the core is killed the status line says the console reconnected"
		screen | head -2 | sed 's/^/# /'
	fi
	new=$(screen | head -1 | sed -n 's/.*reconnected, pid \([0-9]*\).*/\1/p')
	check "to a new core server" test -n "$new" -a "$new" != "$old"
	check "which is running" kill -0 "${new:-0}"
	check "the prompt line says so too" wait_for 'reconnected to a new core server' 5
	check "the operator's approval mode holds on the new core" \
	    wait_for 'approvals: destructive \(0 pending\)' 5
	id3=$("$SBXTOP" create --name after-crash --max-duration 900 2>>"$T/err")
	IDS="$IDS $id3"
	if wait_for "$id3 +after-cras" 10; then
		ok "the new core's sandboxes show: one created after the crash"
	else
		not_ok "the new core's sandboxes show: one created after the crash"
		diag "create: $id3 $(cat "$T/err")"; screen | sed 's/^/# /'
	fi
	check "and the one from before" wait_for "$id2 +other-one" 5
	keys q
	check "q quits" wait_for '^EXITED-0' 10
fi

done_testing
