# The console as a k9s user expects it, in a real terminal (tmux) on the core
# server: the Exec tab's headers in colour and the operator's commands as
# "human", every tab reachable and the active one in view at 80 columns, c
# selecting what it made and d keeping the selection near, the filter
# following what is typed, Tab completing in the palette, a forward stopped
# from Ports, Info as the status fields, Activity from the top, help wrapped
# and scrolled, quitting with approvals pending asking first, and a command
# started with x outliving the core server (its forward working after, RUN
# true).  With REPORT_SCREENS=DIR, the screens at 80x24 and 140x40 are kept.
. "$(dirname "$0")/../lib.sh"

tmux_console
sbx() { "$SBXTOP" "$@" < /dev/null; }
IDS=""
at_exit 'for i in $IDS; do "$SBXTOP" destroy "$i"; done'
tm() { tmux -L "$TMUX_SOCK" "$@"; }
screen() { tmux_screen; }
keys() { tmux_keys "$@"; }
wait_for() { tmux_wait "$@"; }
wait_gone() { tmux_gone "$@"; }
ESC=$(printf '\033')

first=$(sbx create --name first --max-duration 900)
IDS="$IDS $first"
mid=$(sbx create --name mid --max-duration 900)
IDS="$IDS $mid"

tmux_run 80 24 "$SBXTOP"
check "the console runs on the core server" wait_for 'core: local' 15
check "it lists both" wait_for "$mid +mid" 10

# --- c selects what it made -----------------------------------------------------
keys g
wait_for "▶$first" 5
keys c
wait_for 'create sandbox, name' 5
keys 'last' Enter
if wait_for '▶sbx-[0-9a-f]{6} +last ' 30; then ok "c: the new sandbox is selected"
else not_ok "c: the new sandbox is selected"; screen | sed 's/^/# /'; fi
last=$(screen | grep -o 'sbx-[0-9a-f]\{6\} \+last ' | head -1 | cut -d' ' -f1)
IDS="$IDS $last"

# --- the Exec tab: x runs as the human's, headers in colour ------------------------
keys x
wait_for "run in $last:" 5
keys 'echo GOOD-$((40+2))' Enter
check "x: its output shows" wait_for 'GOOD-42' 10
check "x: the operator's command is the human's" wait_for '✓ human +[0-9:]+ +x[0-9]+ +exit 0' 10
check "x: its end is said" wait_for 'command exited 0' 10
keys x
wait_for "run in $last:" 5
keys 'echo BAD; exit 3' Enter
check "a failing command's header" wait_for '✗ human .*exit 3' 10
head_ok=$(tm capture-pane -p -e -t con | grep -a '✓ human')
head_bad=$(tm capture-pane -p -e -t con | grep -a '✗ human')
like "the ✓ header is green (the theme's ok)" "$head_ok" "${ESC}\\[([0-9;]*;)?32m✓ human"
like "the ✗ header is red (the theme's fail)" "$head_bad" "${ESC}\\[([0-9;]*;)?31m✗ human"
if printf '%s' "$head_ok$head_bad" | grep -q "${ESC}\\[30m${ESC}\\[40m"; then
	not_ok "no header is black on black"
else
	ok "no header is black on black"
fi
[ -n "${REPORT_SCREENS:-}" ] && { mkdir -p "$REPORT_SCREENS"; tm capture-pane -p -e -t con |
    grep -a -E '[✓✗▸] human' > "$REPORT_SCREENS/exec-headers-e.txt"; }
keys Tab Tab Tab Tab
check "Activity names the console's calls human (at 80 columns: who, what, how)" \
    wait_for 'human +exec +ok ' 10
# Top-anchored: the first call right under the tab row, the pane's foot empty.
like "Activity starts at the top of the pane" "$(screen | sed -n 4p)" '││ [0-9]{2}:[0-9]{2}:[0-9]{2} [a-z]'
like "  and leaves its foot empty" "$(screen | sed -n 21p)" '││ +│$'
keys Tab Tab Tab

# An MCP client that calls itself "console" is not the human.
MCP="python3 $TOP/tests/tools/mcp-calls.py $SBXTOP"
MCP_CLIENT=console $MCP 30 tools/call "{\"name\":\"sandbox_exec\",\"arguments\":{\"sandbox_id\":\"$last\",\"command\":\"echo SPOOF-MARK\"}}" > "$T/spoof.out" 2>&1
check "an agent's command shows" wait_for 'SPOOF-MARK' 15
if screen | grep -B1 -A1 'SPOOF-MARK' | grep -q '✓ human'; then
	not_ok "an agent that names itself console is not labelled human"
else
	ok "an agent that names itself console is not labelled human"
fi

# --- the tab row at 80 columns, the active tab always in view -------------------------
# A sandbox with network rules has the Network tab too: eight tabs.
netted=$(sbx create --name netted --max-duration 900 --allow example.org)
IDS="$IDS $netted"
keys / 'netted' Enter
check "the sandbox with rules is selected" wait_for "▶$netted" 10
tabs=$(screen | sed -n 3p)
like "at 80 columns every tab is on the row, Network too" "$tabs" 'Exec Logs Ports Net Files Act Diff Info'
# tabs_active WHAT: Tab through every tab; each becomes the one shown active.
tabs_active() {
	for want in Logs Ports Net Files Act Diff Info Exec; do
		keys Tab
		sleep 0.2
		line=$(tm capture-pane -p -e -t con | sed -n 3p)
		if printf '%s' "$line" | grep -Eq "${ESC}\\[[0-9;]*(46|48;5;[0-9]+)m$want"; then
			ok "$1, Tab to $want: it is on the row, shown as the active one"
		else
			not_ok "$1, Tab to $want: it is on the row, shown as the active one"
			diag "$(printf '%s' "$line" | cat -v)"
		fi
	done
}
tabs_active "at 80 columns"
tm resize-window -t con -x 60 -y 24
sleep 0.5
tabs_active "at 60 columns (the row scrolls)"
tm resize-window -t con -x 80 -y 24
sleep 0.5
keys Escape
wait_for 'Sandboxes \(4\)' 5

# --- the filter follows what is typed; Esc puts back the one before -------------------
keys /
wait_for 'filter sandboxes' 5
keys 'mi'
check "the filter applies as it is typed, before Enter" wait_for 'Sandboxes \(1 of 4\) /mi' 5
check "  and shows the match" wait_for "$mid +mid" 5
keys Escape
check "Esc puts back the list as it was" wait_for 'Sandboxes \(4\)' 5

# --- Tab in the palette -------------------------------------------------------------
keys :
keys 'the' Tab
check ":the<Tab> completes the command" wait_for '^ :theme *$' 5
keys 'li' Tab
check "  and its argument, a theme" wait_for '^ :theme light *$' 5
keys Enter
check "  which runs" wait_for 'theme light' 5
keys : 'theme default' Enter
keys : 's' Tab
check ":s<Tab>: several fit, listed on the bar" wait_for '^ Tab: shell suspend search sort' 5
keys 'o' Tab 'c' Tab
check "  and one more letter picks sort, its column completes" wait_for '^ :sort CPU% *$' 5
keys C-u Escape

# --- Info: the status fields ------------------------------------------------------------
keys / "$mid" Enter
wait_for "▶$mid" 5
keys Enter
for i in 1 2 3 4 5 6; do keys Tab; done
check "Info shows the fields as sbxtop status does" wait_for "id: +$mid" 5
check "  its state" wait_for 'state: +running' 5
check "  when it was made, as a date" wait_for 'created: +[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8} \(' 5
if screen | grep -q '"created_at"'; then not_ok "  not raw JSON"; else ok "  not raw JSON"; fi
keys Tab Escape Escape

# --- help wraps and scrolls at 80 columns ---------------------------------------------
keys '?'
wait_for 'Help — keys' 5
check "help says there is more" wait_for '20 of [0-9]+, j/PgDn: more' 5
keys PageDown
check "help wraps a long line: the end of d's shows, under its column" wait_for '^│ {12,}[a-z ,]*under the cursor' 5
for i in 1 2 3 4 5 6; do keys PageDown; done
check "help scrolls to its last line" wait_for 'Theme: default' 5
keys Escape

# --- a forward stopped from the Ports tab ---------------------------------------------
keys p
wait_for "forward a port of $mid" 5
keys 8000 Enter
check "the forward is up" wait_for "127.0.0.1:[0-9]+ → $mid:8000" 10
keys Enter Tab Tab
check "the Ports tab lists it" wait_for '127\.0\.0\.1:[0-9]+->8000 +live' 10
keys d
check "d asks to stop that forward" wait_for "stop the forward 127\\.0\\.0\\.1:[0-9]+ → $mid:8000\\? \\[y\\]" 5
keys y
check "y stops it" wait_for 'stopped the forward of port 8000' 10
check "it leaves the Forwards box" wait_gone "→ $mid:8000" 10
is "and sbxtop forward --list" "$(sbx forward --list 2>/dev/null | grep -c ":8000")" 0
keys Escape Escape

# --- x outlives the core server: its forward works after, RUN is true ----------------
keys x
wait_for "run in $mid:" 5
keys 'cd /tmp && echo served-$((6*7)) > index.html && exec python3 -m http.server 8001' Enter
check "the server runs (RUN)" wait_for "▶$mid +mid +running +●1" 10
keys p
wait_for "forward a port of $mid" 5
keys 8001 Enter
wait_for "127.0.0.1:[0-9]+ → $mid:8001" 10
port=$(screen | grep -o "127.0.0.1:[0-9]* → $mid:8001" | head -1 | sed 's/^127.0.0.1:\([0-9]*\).*/\1/')
fetch() { curl -s -m 3 "http://127.0.0.1:$port/index.html" 2>/dev/null | grep -q served-42; }
check "it answers through the forward" until_ok 15 fetch
old=$(cat "$XDG_RUNTIME_DIR/sbxtop/server.lock")
kill -9 "$old"
check "the console reconnects to a new core server" wait_for 'core: local \(new, pid [0-9]+\)' 20
check "the forward answers again, the command still serving" until_ok 30 fetch
keys g
wait_for "▶$first" 5
check "RUN of the unselected sandbox is true after the restart" wait_for "$mid +mid +running +●1" 10
sbx exec "$mid" 'pkill -f http.server' > /dev/null 2>&1
check "and goes when the command ends" wait_gone "$mid +mid +running +●1" 15

# --- d on the last row keeps the selection near ------------------------------------------
keys G
check "the last row is selected" wait_for "▶$netted" 5
keys d
wait_for "destroy $netted\\?" 5
keys y
check "d then y destroys it" wait_gone "$netted +netted" 20
check "the selection moves to the row above, not the first" wait_for "▶$last +last" 10

# --- the screens, for the record -------------------------------------------------------
if [ -n "${REPORT_SCREENS:-}" ]; then
	keys G
	sleep 1
	screen > "$REPORT_SCREENS/console-80x24.txt"
	tm resize-window -t con -x 140 -y 40
	sleep 1
	keys / "$mid" Enter
	sleep 1
	screen > "$REPORT_SCREENS/console-140x40.txt"
	keys Escape
	tm resize-window -t con -x 80 -y 24
fi

# --- quitting with approvals pending asks first ---------------------------------------------
keys : 'approve all' Enter
wait_for 'approvals: all' 5
MCP_CLIENT=held $MCP 120 tools/call "{\"name\":\"sandbox_exec\",\"arguments\":{\"sandbox_id\":\"$last\",\"command\":\"true\"}}" > "$T/held.out" 2>&1 &
mpid=$!
at_exit "kill $mpid"
check "a call waits for approval" wait_for 'held 1 wants sandbox_exec' 15
keys q
check "q asks first, naming what waits" wait_for '1 call waits for your answer: quit anyway\? \[y\] yes' 5
keys n
check "n stays: the console is up, the call still on the prompt line" \
    wait_for '! held 1 wants sandbox_exec' 5
keys y
wait $mpid
like "the call is answered, approved" "$(cat "$T/held.out")" '"isError": false'
keys : 'approve none' Enter
keys q
check "with nothing waiting, q quits at once" wait_for '^EXITED-0' 10

done_testing
