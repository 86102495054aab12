# The operator console end to end, in a real terminal (tmux), on the standalone
# console with private XDG dirs: it starts; sandboxes and commands made from
# outside show up live; the console runs and kills commands, filters, follows a
# resize, switches themes, shows help, opens a shell, destroys with a
# confirmation; read-only hides actions; and the terminal is restored on quit,
# on SIGTERM and on a fatal error.  Then on the core server: an MCP client's
# work shows live, a call made with an API key shows its key's name, the Logs
# tab follows a log, a shell opens and closes,
# approvals are denied and approved, a killed core is replaced, and --approve
# given to a console applies to the core server it finds running.
. "$(dirname "$0")/../lib.sh"

skip() { _n=$((_n + 1)); echo "ok $_n - # SKIP $1"; }
tmux_console
tm() { tmux -L "$TMUX_SOCK" "$@"; }
IDS=""
at_exit 'for i in $IDS; do "$SBXTOP" destroy "$i"; done'

screen() { tmux_screen; }
wait_for() { tmux_wait "$@"; }	# wait_for REGEX [SECONDS]
wait_gone() { tmux_gone "$@"; }
# check_screen WHAT COMMAND...: check, with the screen as diagnostics when it fails.
check_screen() { _w=$1; shift; if "$@"; then ok "$_w"; else not_ok "$_w"; screen | sed 's/^/# /'; return 1; fi; }
# A shell in a 120x32 pane, then the console in it.
console() { tmux_run 120 32 "$@"; }
ESC=$(printf '\033')
COLOUR_RE="$ESC\\[([0-9;]*;)?(3[0-7]|4[0-7]|38;5;[0-9]+|48;5;[0-9]+)(;[0-9;]*)?m"
alt_on() { tm display-message -p -t con '#{alternate_on}'; }
ms() { echo $(( $(date +%s%N) / 1000000 )); }
keys() { tmux_keys "$@"; }

# --- start ------------------------------------------------------------------
console "$SBXTOP --standalone"
check "the console starts and shows its title" wait_for '^ sbxtop [0-9.]+ .*core: standalone'
check "an empty list says how to create a sandbox" wait_for 'no sandboxes yet'
check "the key bar is at the bottom" sh -c "tmux -L $TMUX_SOCK capture-pane -p -t con | tail -1 | grep -q 'q quit'"
is "the console uses the alternate screen" "$(alt_on)" 1
if tm capture-pane -p -e -t con | grep -Eq "$COLOUR_RE"; then ok "colours are used on a 256-colour terminal"; else not_ok "colours are used on a 256-colour terminal"; fi

# --- live: a sandbox created from outside ------------------------------------
id=$("$SBXTOP" create --name from-cli --max-duration 900 2>"$T/err")
t0=$(ms)
IDS="$IDS $id"
if wait_for "$id +from-cli +running" 10; then
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
check "Activity lists tool calls with client, tool and outcome (the operator's as human)" wait_for 'human +sandbox_exec .* ok ' 5

# --- Activity details and the client filter ---------------------------------------
# The newest call first under the cursor; the long-running one was the last exec.
keys j
keys Enter
check "Enter shows a call's details, arguments whole" wait_for '^│?.*arguments:' 5
# The newest call is at the bottom under the cursor; k goes to older ones.
for i in 1 2 3 4 5 6 7 8 9 10; do
	screen | grep -q 'echo LONG-START; sleep' && break
	keys Escape k Enter
	sleep 0.2
done
check "the details show the command it ran, whole" wait_for '"command": *"echo LONG-START; sleep 300; echo NEVER"' 5
check "and that it runs as the sandbox's, in the background" wait_for '"background": *true' 5
keys Escape
check "Esc goes back to the list of calls" wait_for 'human +sandbox_exec .* ok ' 5
keys : 'client nobody' Enter
check ":client NAME shows that client's calls only" wait_for 'no calls from that client' 5
keys : 'client human' Enter
check ":client human lists the console's calls" wait_for 'human +sandbox_exec .* ok ' 5
keys : 'client' Enter
keys Escape
sleep 0.2
keys Tab Tab Tab Tab Tab

# --- Exec as a pager: search, wrap, timestamps, scroll, stderr, copy -------------
"$SBXTOP" exec "$id" -- 'for i in $(seq 1 60); do echo "row-$i"; done; echo STDERR-MARK >&2; sleep 0.2; echo "wide-$(printf %0150d 7)-END"' >/dev/null 2>&1
keys Tab Tab Tab Tab Tab
wait_for '\[Exec\]' 5
keys Enter
check "the exec's output is shown" wait_for 'wide-0000' 10
if tm capture-pane -p -e -t con | grep 'STDERR-MARK' | grep -q "$ESC\[33m"; then
	ok "a line from stderr has the theme's stderr colour"
else
	not_ok "a line from stderr has the theme's stderr colour"
fi
if screen | grep -q -- '-END'; then not_ok "a long line is cut without wrap"; else ok "a long line is cut without wrap"; fi
keys w
check "w wraps long lines: the end of the long one shows" wait_for '7-END' 5
like "wrap is kept in the console's state file" "$(cat "$XDG_STATE_HOME/sbxtop/console.state")" 'wrap=1'
keys w
wait_gone '7-END' 5
keys Right Right Right Right Right Right Right Right Right Right Right Right Right Right
check "→ scrolls long lines right" wait_for '7-END' 5
keys Left Left Left Left Left Left Left Left Left Left Left Left Left Left
check "← scrolls back" wait_for 'wide-0000' 5
keys t
check "t shows when each line came" wait_for '[0-9]{2}:[0-9]{2}:[0-9]{2} wide-0000' 5
keys t
wait_gone '[0-9]{2}:[0-9]{2}:[0-9]{2} wide-0000' 5
keys /
check "/ in the Exec pane asks for a search" wait_for 'search \(PCRE2' 5
keys 'row-1[0-9]$' Enter
check "the search counts its matches" wait_for 'match 1 of 10' 5
check "the tab row shows the count" wait_for ' 1/10' 5
check "and the first match is in view" wait_for '^│?.*row-10 *│' 5
keys n
check "n goes to the next match" wait_for 'match 2 of 10' 5
keys N N
check "N goes back, past the first to the last" wait_for 'match 10 of 10' 5
keys / 'row-42$' Enter
wait_for 'match 1 of 1' 5
# xterm's terminfo has Ms: the line goes out as OSC 52, which tmux keeps as a
# paste buffer with set-clipboard on.
tm set -g set-clipboard on
tm delete-buffer 2>/dev/null
keys y
check "y copies the match to the clipboard (OSC 52)" wait_for "copied 1 line to the clipboard" 5
is "the terminal got the line" "$(tm show-buffer 2>/dev/null)" "row-42"
keys Y
check "Y copies the whole output to a file too" wait_for "copied 6[0-9] lines to the clipboard and .*console-copy.txt" 5
is "the file holds every line of it" "$(grep -c '^row-' "$XDG_STATE_HOME/sbxtop/console-copy.txt")" 60
keys f
check "f pauses following" wait_for 'follow off' 5
like "follow is kept in the state file" "$(cat "$XDG_STATE_HOME/sbxtop/console.state")" 'follow=0'
keys f
wait_for 'follow on' 5
keys Escape Escape
sleep 0.2

# --- Diff: what changed since the sandbox was made --------------------------------
"$SBXTOP" exec "$id" -- 'echo diff-added > /workspace/new.txt; head -c 64 /dev/urandom > /workspace/blob.bin' >/dev/null
"$SBXTOP" exec --root "$id" -- 'echo tweak >> /etc/hostname; rm -f /etc/motd' >/dev/null
keys Tab Tab Tab Tab Tab
check "the Diff tab lists a file added" wait_for 'A /workspace/new.txt' 15
check "with its text as a diff" wait_for '^│?.*\+diff-added' 5
check "a host file changed, with its lines" wait_for 'M /etc/hostname' 5
check "a binary file with its size only" wait_for 'A /workspace/blob.bin +64 B +\(binary\)' 5
# A cache is one line; many changes come a page at a time, all of them.
"$SBXTOP" exec "$id" -- 'mkdir -p ~/.npm/_cacache && for i in 1 2 3; do echo $i > ~/.npm/_cacache/$i; done' >/dev/null
keys r
check "a cache is one line with its count" wait_for 'A /home/sandbox/.npm/ +3 files, 6 B \(cache\)' 15
"$SBXTOP" exec "$id" -- 'for d in 0 1 2 3 4 5 6 7 8 9; do mkdir -p /workspace/many/$d; for i in $(seq 10 69); do
	echo "line $i" > /workspace/many/$d/f$i; done; done' >/dev/null
keys r
check "the header gives the totals" wait_for '│ 60[0-9] added, 1 changed, 1 removed \([0-9.]+ KB\) · [0-9]+ lines' 15
# Each file three lines (its own, the hunk's, the line added): many pages' worth.
check "600 files' diffs, read page by page, are all there" \
	wait_for '│ 60[0-9] added, .* · (1[89]|[2-9][0-9])[0-9][0-9] lines' 20
"$SBXTOP" exec "$id" -- 'rm -rf ~/.npm /workspace/many' >/dev/null
out=$("$SBXTOP" diff "$id" 2>&1)
like "sbxtop diff prints a unified diff" "$out" '\+\+\+ b/etc/hostname'
like "with the removal" "$(printf '%s\n' "$out" | grep '/etc/motd')" '^D /etc/motd'
# The oracle: GNU diff -u on the two layers' files gives the same hunks.
"$SBXTOP" exec --root "$id" -- 'sed -i -e "5s/.*/CHANGED FIVE/" -e 20d -e "40a\\inserted after 40" -e 60,62d /etc/services' >/dev/null
for f in etc/hostname etc/services; do
	"$SBXTOP" diff "$id" "/$f" | grep -v '^---\|^+++' > "$T/ours"
	diff -u "$XDG_DATA_HOME/sbxtop/images/host/$f" "$XDG_STATE_HOME/sbxtop/sandboxes/$id/upper/$f" |
	    grep -v '^---\|^+++' > "$T/gnu"
	if [ -s "$T/gnu" ] && cmp -s "$T/ours" "$T/gnu"; then ok "the hunks of /$f are diff -u's"
	else not_ok "the hunks of /$f are diff -u's"; diff "$T/ours" "$T/gnu" | head -5 | sed 's/^/# /'; fi
done
is "sbxtop diff ID PATH --stat keeps to the path, with its totals" "$("$SBXTOP" diff "$id" new.txt --stat)" \
	"$(printf 'A /workspace/new.txt  11 bytes\n1 added, 0 changed, 0 removed; 11 bytes in files added or changed')"
# What the sandbox puts in its layers is never followed on the host: a link to a
# host file is a link, a FIFO is not opened (nothing hangs).
"$SBXTOP" exec --root "$id" -- 'ln -s /etc/shadow /workspace/link-out; mkfifo /workspace/fifo; ln -sf /etc/shadow /etc/motd.d-link' >/dev/null
js=$(timeout 20 "$SBXTOP" diff "$id" --json)
is "diff reads a sandbox with a FIFO and links in it" "$?" 0
is "a link is listed as a link, with no content" "$(printf '%s' "$js" | python3 -c '
import json,sys
d = {c["path"]: c for c in json.load(sys.stdin)["changes"]}
l, f = d.get("/workspace/link-out", {}), d.get("/workspace/fifo", {})
print(l.get("type"), "diff" in l, f.get("type"), "diff" in f)')" "symlink False other False"
if printf '%s' "$js" | grep -q 'root:'; then not_ok "no host file is read through a link"; else ok "no host file is read through a link"; fi
keys Tab Tab Tab Tab

# --- an OOM kill is named ----------------------------------------------------------
oid=$("$SBXTOP" create --name oomy --memory 64 --max-duration 900 2>>"$T/err")
IDS="$IDS $oid"
keys / 'oomy' Enter
keys Tab Tab Tab Tab Tab
check "the sandbox with a small memory limit is selected" wait_for "▶$oid +oomy" 10
sleep 3.5	# a listing with its use, so the OOM-kill count before is known
"$SBXTOP" exec "$oid" -- 'python3 -c "x = bytearray(300000000)"' > /dev/null 2>&1
check "a command the OOM killer ended shows as oom, not just KILL" wait_for 'oom \(killed KILL\)' 15
keys Escape Tab Tab
"$SBXTOP" destroy "$oid" > /dev/null 2>&1
wait_gone 'oomy' 20

# --- the filter ----------------------------------------------------------------
id2=$("$SBXTOP" create --name other-one --max-duration 900 2>>"$T/err")
IDS="$IDS $id2"
check "a second sandbox appears" wait_for "$id2 +other-one" 10

# --- live use and sorting -----------------------------------------------------------
"$SBXTOP" exec --background "$id2" -- 'timeout 20 sh -c "while :; do :; done"' >/dev/null
check "the list shows CPU% and MEM, and RUN" wait_for ' ID +NAME +STATE +CPU% +MEM +RUN' 5
u=$("$SBXTOP" status --json "$id2" | python3 -c '
import json,sys
u = json.load(sys.stdin).get("usage", {})
print(u.get("mem_bytes", 0) > 0, u.get("pids", 0) >= 2, "disk_bytes" in u, "oom_kills" in u, "net_rx_bytes" in u)')
is "status --json has the live use: memory, pids (the busy loop too), disk, OOM kills, network" "$u" "True True True True True"
like "ls shows CPU% and MEM columns" "$("$SBXTOP" ls | head -1)" 'CPU% +MEM'
keys : 'sort cpu' Enter
check ":sort cpu marks the column, the most first" wait_for ' CPU%▼' 5
check "the busy sandbox goes to the top" sh -c "for i in \$(seq 60); do tmux -L $TMUX_SOCK capture-pane -p -t con | sed -n 4p | grep -q '$id2 .* [1-9][0-9]*\.[0-9] ' && exit 0; sleep 0.25; done; exit 1"
keys '<' '<' '<'
check "< moves the sort to the column on the left" wait_for ' STATE▼' 5
keys o
check "o turns the order" wait_for ' STATE▲' 5
keys '>'
check "> moves it right, to columns not shown too" wait_for 'sorted by AGE, ascending' 5
keys : 'sort none' Enter
check ":sort none: the order they were made, no mark" wait_for 'order the sandboxes were made' 5
"$SBXTOP" exec "$id2" -- 'pkill -x timeout; true' >/dev/null 2>&1
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
check "back at 120x32 the list shows CPU% and MEM again" wait_for ' ID +NAME +STATE +CPU% +MEM +RUN' 5

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
keys : 'create pal-made backend=ns' Enter
check ":create with a name taken: the hint is an sbxtop command" \
	wait_for "taken by sbx-[0-9a-f]{6} .*sbxtop destroy sbx-[0-9a-f]{6}" 10
if screen | grep 'taken by' | grep -q 'sandbox_'; then not_ok "not an agent's tool names"
else ok "not an agent's tool names"; fi
pid_made=$("$SBXTOP" status --json pal-made 2> /dev/null |
	python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["id"], d["network"])')
IDS="$IDS ${pid_made%% *}"
is "with the network asked for" "${pid_made#* }" none
"$SBXTOP" destroy pal-made > /dev/null 2>&1
wait_gone 'pal-made' 20
keys : 'create bogus=1' Enter
check ":create refuses an unknown key, naming it" wait_for "not 'bogus='" 5
keys c
wait_for 'create sandbox, name' 5
keys 'bad name!' Enter
check "c with a name of two words is refused whole, with the name rule" \
	wait_for "name 'bad name!' is not valid" 10
if "$SBXTOP" ls 2>/dev/null | grep -q 'name!'; then not_ok "no sandbox named name! is made"; else ok "no sandbox named name! is made"; fi
keys : 'create memory=x' Enter
check ":create memory= wants a number" wait_for "memory= takes a positive number" 5
keys : 'create sized memory=300M cpus=0.5' Enter
check ":create memory= cpus= makes a sandbox" wait_for 'created sbx-[0-9a-f]{6}' 30
lim=$("$SBXTOP" status --json sized 2>/dev/null | python3 -c 'import json,sys; l=json.load(sys.stdin)["limits"]; print(l["memory_mib"], l["cpus"])')
IDS="$IDS $("$SBXTOP" status --json sized 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')"
is "with the limits asked for" "$lim" "300 0.5"
"$SBXTOP" destroy sized > /dev/null 2>&1
wait_gone ' sized ' 20

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
check "z suspends" wait_for "▶$id +from-cli +suspended" 15
keys z
check "z again resumes" wait_for "▶$id +from-cli +running" 15
keys p
check "p asks for a port" wait_for "forward a port of $id" 5
keys 8080 Enter
check "the forward shows in the Forwards pane" wait_for "127.0.0.1:[0-9]+ → $id:8080" 10
# Nothing listens on 8080 in the sandbox: a connection fails, as forward --list
# counts it, and the pane says so.
fport=$(screen | grep -o "127.0.0.1:[0-9]* → $id:8080" | head -1 | sed 's/^127.0.0.1:\([0-9]*\).*/\1/')
curl -s -m 3 "http://127.0.0.1:$fport/" > /dev/null 2>&1
check "a forward whose connections fail shows FAILED and the count" wait_for "127.0.0.1:$fport → $id:8080 +FAILED 1" 10
tm resize-window -t con -x 200 -y 32
check "the list counts it in FWD" wait_for "▶$id +from-cli +ns +running +.* 1 +│" 10
tm resize-window -t con -x 120 -y 32

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
# The row goes when the destroy starts; the registry entry when it ends.
gone_from_ls() {
	_n=0
	while "$SBXTOP" ls 2>/dev/null | grep -q "$1"; do
		_n=$((_n + 1)); [ "$_n" -lt 100 ] || return 1; sleep 0.1
	done
}
if gone_from_ls "$id"; then ok "it is gone from sbxtop ls"; else not_ok "it is gone from sbxtop ls"; "$SBXTOP" ls | sed 's/^/# /'; fi

# --- quit ----------------------------------------------------------------------
keys q
q0=$(ms)
if ! check_screen "q quits with status 0" wait_for '^EXITED-0' 10; then
	# How long it took after all, and with what status, for whoever reads this.
	wait_for '^EXITED-' 60
	diag "after q: $(screen | grep -E '^EXITED-' | head -1) at $(( $(ms) - q0 )) ms"
fi
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
	check "the title counts only live MCP sessions: the client has closed" \
	    wait_for 'core: local .* 0 MCP sessions' 10

	# The CLI's calls show in Activity as client cli, named as typed.
	"$SBXTOP" exec via-mcp -- 'echo CLI-IN-ACTIVITY' > /dev/null
	"$SBXTOP" forward "$mid" 8081 > "$T/fwd.out" 2>&1
	keys Enter Tab Tab Tab Tab
	check "the CLI's exec shows in Activity as client cli" wait_for 'cli +sandbox_exec .* ok' 10
	check "and its forward" wait_for 'cli +forward .* ok' 10
	# A REST call made with an API key: Activity names the key, never the key.
	KEYED=$("$SBXTOP" key add tui-ci 2> /dev/null)
	serve_listen
	curl -s -o /dev/null "${URL%/mcp}/v1/sandboxes" -H "X-API-Key: $KEYED"
	check "a call made with an API key shows in Activity as key:NAME" \
	    wait_for 'key:tui-ci +sandbox_list .* ok' 10
	check "  the key itself nowhere on the screen" sh -c "! tmux -L $TMUX_SOCK capture-pane -p -t con | grep -q '${KEYED#sbxk_}'"
	kill "$SERVE_PID"; wait "$SERVE_PID" 2> /dev/null
	# The newest call is under the cursor; k goes to older ones, j back.
	keys Enter
	for i in 1 2 3 4 5 6; do
		screen | grep -q 'CLI-IN-ACTIVITY' && break
		keys Escape k Enter
		sleep 0.2
	done
	check "the exec's details give its command" wait_for '"command": *"echo CLI-IN-ACTIVITY"' 5
	keys Escape j Enter
	check "the forward's details give its ports" wait_for '"remote": *8081' 5
	keys Escape
	"$SBXTOP" forward --stop "$mid" 8081 > /dev/null 2>&1
	# Back to Exec, the list focused, its filter cleared: every sandbox shows.
	keys Tab Tab Tab Escape
	sleep 0.3
	keys Escape
	wait_for 'other-one' 5

	# RUN: what runs in a sandbox that is not selected, and nothing once it ended.
	# (it runs until the test lets it end: a console slowed by the sanitizers
	# and a loaded machine may take longer to show it than a fixed sleep)
	"$SBXTOP" exec other-one -- 'sleep 1; until [ -e /tmp/run-go ]; do sleep 0.1; done; echo RUN-DONE' \
		> /dev/null &
	rpid=$!
	check_screen "RUN shows a command running in an unselected sandbox" wait_for 'other-one .*●1 sleep' 20
	"$SBXTOP" exec other-one -- touch /tmp/run-go
	wait $rpid
	check "and nothing once it ended" wait_gone 'other-one .*●1 sleep' 10
	# A background job is in the agent's journal, which the core server reads:
	# RUN shows it while it runs, and not once it ended.
	"$SBXTOP" exec --background other-one -- 'sleep 4' > /dev/null
	check "RUN shows a background job while it runs" wait_for 'other-one .*●1 sleep' 5
	check "and nothing once it ended" wait_gone 'other-one .*●1' 10

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
	if wait_for "$id3 +after-cra… " 10; then
		ok "the new core's sandboxes show: one created after the crash"
	else
		not_ok "the new core's sandboxes show: one created after the crash"
		diag "create: $id3 $(cat "$T/err")"; screen | sed 's/^/# /'
	fi
	check "and the one from before" wait_for "$id2 +other-one" 5
	keys q
	check "q quits" wait_for '^EXITED-0' 10

	# --approve given to a console whose core server already runs: the
	# console is the operator's, so the server takes it (it used to keep
	# its mode, silently).
	core_mode() {	# core_mode [MODE]: set the core server's mode; print it
		TOP=$TOP SBXTOP=$SBXTOP python3 - "$@" <<'PY'
import importlib.util, os, sys
spec = importlib.util.spec_from_file_location('cc', os.path.join(os.environ['TOP'], 'tests/tools/core-client.py'))
cc = importlib.util.module_from_spec(spec); spec.loader.exec_module(cc)
r = cc.Sock('cli').call('sbxtop/approve_mode', {'mode': sys.argv[1]} if len(sys.argv) > 1 else {})
print(r['result']['mode'])
PY
	}
	is "the running core server's mode, set to none" "$(core_mode none)" none
	console "$SBXTOP --approve all"
	check "--approve all given to the console applies to the running core server" \
	    wait_for 'approvals: all' 10
	check "  and the prompt line says so" \
	    wait_for 'approvals: all, as --approve says \(the running core server had none\)' 5
	is "  the core server's mode is all" "$(core_mode)" all
	keys q
	check "q quits" wait_for '^EXITED-0' 10
	console "$SBXTOP --readonly --approve none"
	check "a --readonly console changes nothing, and says how" \
	    wait_for '--approve none not applied: a --readonly console changes nothing' 10
	is "  the core server keeps all" "$(core_mode)" all
	keys q
	check "q quits" wait_for '^EXITED-0' 10
	core_mode none > /dev/null
fi

done_testing
