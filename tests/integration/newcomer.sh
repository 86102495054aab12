# A new user's first minutes, from a fresh clone: `make run` in a temporary
# clone of this tree's HEAD (empty caches: private XDG directories, so no kernel
# cache, no KVM verdict; no build/, so no agent bundle), under tmux in a real
# terminal (TERM=xterm-256color).  The console opens; `c` and a name make a
# running sandbox; `sbxtop exec` runs in it from the CLI; a mouse click (press,
# then release) leaves the clock ticking; `q` gives the terminal back (main
# screen, mouse reporting off, cursor shown).  The packages are already here,
# so `make run` only builds.
. "$(dirname "$0")/../lib.sh"

if ! command -v tmux >/dev/null 2>&1 || ! command -v git >/dev/null 2>&1; then
	not_ok "tmux and git are needed (scripts/deps.sh --test installs tmux)"
	exit 1
fi
if ! git -C "$TOP" rev-parse HEAD >/dev/null 2>&1; then
	ok "# SKIP not a git checkout"
	exit 0
fi
C="$T/clone"
S="$C/build/sbxtop"
TM="tmux -S $T/tmux.sock"
at_exit "rm -rf '$C'"
at_exit "$TM kill-server"
at_exit "[ -x '$S' ] && '$S' serve --stop"
at_exit 'for id in $("$S" ls 2>/dev/null | awk "NR>1{print \$1}"); do "$S" destroy "$id"; done'

t0=$(date +%s)
if ! git clone -q "$TOP" "$C" 2> "$T/clone.log"; then
	not_ok "git clone of this tree"; sed 's/^/# /' "$T/clone.log"; exit 1
fi
ok "a fresh clone of HEAD ($(git -C "$C" rev-parse --short HEAD))"
check "... with no build/ (no agent bundle)" test ! -e "$C/build"
check "... and empty caches" test -z "$(ls -A "$XDG_CACHE_HOME")"

# The terminal: a private tmux server whose environment is ours, minus what the
# suite's own make would pass down.
pane() { $TM capture-pane -p -t nc; }
fmt() { $TM display-message -p -t nc "$1"; }
# wait_for SECONDS REGEX: until the screen matches.
wait_for() {
	_end=$(($(date +%s) + $1))
	while [ "$(date +%s)" -lt "$_end" ]; do
		pane 2>/dev/null | grep -Eq -- "$2" && return 0
		[ "$(fmt '#{pane_dead}' 2>/dev/null)" = 1 ] && return 1
		sleep 0.5
	done
	return 1
}
env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS -u BUILD -u SANITIZE -u TMUX TERM=xterm-256color \
	$TM -f /dev/null new-session -d -s nc -x 120 -y 40 -c "$C" \
	'make run; echo "make run exited: $?"; sleep 60' || { not_ok "tmux new-session"; exit 1; }
if wait_for 300 'q quit|\? help'; then
	t1=$(date +%s)
	ok "make run in a fresh clone opens the console ($((t1 - t0)) s from the clone)"
	diag "newcomer: clone to console $((t1 - t0)) s"
else
	not_ok "make run in a fresh clone opens the console"
	pane | sed 's/^/# /' | tail -n 30
	exit 1
fi
check "make run built the agent bundle" test -x "$C/build/agent-bundle/sbxtop-agent"

# c, a name, Enter: a running sandbox.
$TM send-keys -t nc c
wait_for 10 'create sandbox, name' && ok "c asks for a name" || not_ok "c asks for a name"
$TM send-keys -t nc -l demo
$TM send-keys -t nc Enter
t2=$(date +%s)
id=""
for _i in $(seq 240); do
	id=$("$S" ls 2>/dev/null | awk '$2 == "demo" && $4 == "running" {print $1}')
	[ -n "$id" ] && break
	sleep 0.5
done
if [ -n "$id" ]; then
	t3=$(date +%s)
	ok "the console made a running sandbox named demo ($((t3 - t2)) s)"
	diag "newcomer: c + name to running $((t3 - t2)) s"
else
	not_ok "the console made a running sandbox named demo"
	"$S" ls 2>&1 | sed 's/^/# /'
	pane | sed 's/^/# /' | tail -n 20
fi
if [ -n "$id" ]; then
	like "sbxtop exec into it from the CLI" "$("$S" exec "$id" -- sh -c 'echo hello; id -u' 2>&1 | tr '\n' ' ')" \
		'^hello [0-9]+ $'
	wait_for 10 'demo' && ok "the console lists it" || not_ok "the console lists it"
fi

# A click on the Logs tab (press, then release a moment later, SGR mouse as
# xterm-256color reports it): the tab changes, so the console got it; then the
# clock must go on ticking without a key.  (Which tab a column hits is the
# console's own test's business.)
clock() { pane | head -n 1 | grep -Eo '[0-9]{2}:[0-9]{2}:[0-9]{2}' | head -n 1; }
tabs=$(pane | grep -m1 -n 'Logs' | cut -d: -f1)
col=$(pane | grep -m1 'Logs' | python3 -c 'import sys; print(sys.stdin.buffer.read().decode("utf-8").find("Logs") + 2)')
clicked=0
for y in $((tabs - 1)) "$tabs"; do
	[ -n "$tabs" ] || break
	$TM send-keys -t nc -l "$(printf '\033[<0;%d;%dM' "$col" "$y")"
	sleep 0.2
	$TM send-keys -t nc -l "$(printf '\033[<0;%d;%dm' "$col" "$y")"
	wait_for 3 '\[(Logs|Ports|Files|Activity|Info)\]' && { clicked=1; break; }
done
if [ "$clicked" = 1 ]; then
	ok "a click on the tab row reaches the console (the tab changes)"
	pane | grep -q '\[Logs\]' || diag "clicked Logs at column $col, row $y; got: $(pane | grep -m1 -o '\[[A-Za-z]*\]')"
else
	not_ok "a click on the tab row reaches the console (the tab changes)"; pane | head -n 4 | sed 's/^/# /'
fi
sleep 0.3
c1=$(clock)
sleep 2.2
c2=$(clock)
if [ -n "$c1" ] && [ -n "$c2" ] && [ "$c1" != "$c2" ]; then
	ok "after the click the clock still ticks ($c1 -> $c2)"
else
	not_ok "after the click the clock still ticks"
	diag "clock before: '$c1', 2 s later: '$c2'"
fi

# q: the console ends, make run with it, and the terminal is as it was.
$TM send-keys -t nc q
if wait_for 10 'make run exited: '; then
	like "q ends the console and make run (status 0)" "$(pane)" 'make run exited: 0'
else
	not_ok "q ends the console and make run"; pane | tail -n 5 | sed 's/^/# /'
fi
is "... back on the main screen, mouse reporting off, cursor shown" \
	"$(fmt 'alt=#{alternate_on} mouse=#{mouse_any_flag} cursor=#{cursor_flag}')" "alt=0 mouse=0 cursor=1"
# The README's first session, from the clone's build, after make run alone.
mkdir -p "$T/proj/src" && echo 'print("hi")' > "$T/proj/src/main.py"
id2=$(cd "$T/proj" && "$S" create --name demo2 2>"$T/create.err"); rc=$?
like "README: build/sbxtop create --name demo" "$rc:$id2" '^0:sbx-'
if [ -n "$id2" ]; then
	like "README: exec 'uname -a; id'" "$("$S" exec "$id2" -- 'uname -a; id' 2>&1 | tr '\n' ' ')" '^Linux .* uid='
	(cd "$T/proj" && "$S" cp ./src "$id2:/workspace/src") > "$T/cp.log" 2>&1
	is "README: cp ./src ID:/workspace/src" "$("$S" exec "$id2" -- cat /workspace/src/main.py 2>&1)" 'print("hi")'
	"$S" destroy "$id2" > /dev/null 2>&1
	is "README: destroy" "$("$S" ls 2>/dev/null | awk -v i="$id2" '$1 == i' | wc -l)" 0
else
	sed 's/^/# /' "$T/create.err"
fi
diag "newcomer: clone to exit $(($(date +%s) - t0)) s"
done_testing
