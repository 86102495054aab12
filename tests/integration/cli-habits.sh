# The CLI as a docker user reaches for it: the option a bundle got wrong is
# named, "did you mean", the thin sbxtop's command list, exec's -i -t -e -w
# with `--` optional and docker's exit statuses, sbxtop shell on a real
# terminal (tmux), ls -q and --format, forwards as 127.0.0.1:8080->80, --json
# compact on a pipe, cp with - as a tar stream (tar is the judge), shell
# completion judged by bash, zsh and fish themselves, and --mcp answering what
# is in flight when its input ends.
. "$(dirname "$0")/../lib.sh"

sbx() { "$SBXTOP" "$@"; }
export HOME="$T/home"
mkdir -p "$HOME"

# --- options: the word that was wrong, and the nearest one --------------------
sbx exec -zi box -- bash > /dev/null 2> "$T/err"; rc=$?
is "exec -zi: sbxtop's own failure, 125" "$rc" 125
like "a bad letter in a bundle is named by itself" "$(cat "$T/err")" "unknown option '-z'"
if grep -q "option 'exec'" "$T/err"; then not_ok "and not the command's name"; else ok "and not the command's name"; fi
sbx logs -xf box > /dev/null 2> "$T/err"; rc=$?
is "logs -xf: exit 2" "$rc" 2
like "logs -xf names -x" "$(cat "$T/err")" "unknown option '-x'"
sbx ls --josn > /dev/null 2> "$T/err"
like "a long option a letter off: did you mean" "$(cat "$T/err")" "unknown option '--josn' \(did you mean '--json'\?\)"
sbx exce > /dev/null 2> "$T/err"; rc=$?
is "an unknown command: exit 2" "$rc" 2
like "a command a letter off: did you mean" "$(cat "$T/err")" "unknown command 'exce' \(did you mean 'exec'\?"
sbx --standlone ls > /dev/null 2> "$T/err"
like "a global option: did you mean" "$(cat "$T/err")" "unknown option '--standlone' \(did you mean '--standalone'\?\)"
sbx frobnicate > /dev/null 2> "$T/err"
like "nothing near: no guess" "$(cat "$T/err")" "unknown command 'frobnicate' \(run"

# --- the thin sbxtop's list of commands -------------------------------------------
# On a pipe the thin binary is the one that answers a bad global option.
sbx --bogus 2> "$T/err" | cat > /dev/null; rc=$?
is "--bogus: exit 2" "$(sbx --bogus > /dev/null 2>&1; echo $?)" 2
awk '/^commands:/{c=1; next} c && /^$/{exit} c' "$T/err" > "$T/cmds"
n=$(wc -l < "$T/cmds")
check "--bogus lists the commands ($n)" test "$n" -ge 20
is "each with its description" "$(awk 'NF < 3' "$T/cmds")" ""
like "fork's description is there" "$(cat "$T/cmds")" 'fork +copy a running sandbox'

# --- a real sandbox -----------------------------------------------------------------
id=$(sbx create --name habits --max-duration 900 < /dev/null 2> "$T/err"); rc=$?
if [ "$rc" -ne 0 ]; then
	not_ok "create a sandbox"; diag "$(cat "$T/err")"; exit 1
fi
at_exit "$SBXTOP destroy $id"

# exec: -- optional, options after the id, -e, -w, the command's own options.
is "exec ID CMD, no --" "$(sbx exec -n "$id" echo hi)" hi
is "the command's options stay its own" "$(sbx exec -n "$id" ls -d -1 /etc)" /etc
is "-e and -w, docker's" "$(sbx exec -n -e A=1 -e 'B=x y' -w / "$id" sh -c 'echo "$A|$B|$(pwd)"')" "1|x y|/"
is "options after the id (--cwd)" "$(sbx exec -n "$id" --cwd /tmp pwd)" /tmp
is "-- still ends the options" "$(sbx exec -n "$id" -- sh -c 'echo -n; echo ok')" ok
sbx exec -n "$id" 'exit 7'; is "the command's status" "$?" 7
sbx exec -n "$id" no-such-command-here 2> /dev/null; is "not found: 127" "$?" 127
sbx exec -n "$id" 'printf x > /tmp/plain; chmod 644 /tmp/plain'
sbx exec -n "$id" /tmp/plain 2> /dev/null; is "not executable: 126" "$?" 126
sbx exec -n -w /no/such/dir "$id" true 2> "$T/err"; rc=$?
is "a working directory that is not there: 126, the command cannot be started" "$rc" 126
like "and says why" "$(cat "$T/err")" 'cwd does not exist: /no/such/dir'
sbx exec -n nope true 2> /dev/null; is "an unknown sandbox: 125" "$?" 125
sbx exec -n "$id" 2> /dev/null; is "no command (and no -t): 125" "$?" 125
is "-i passes standard input" "$(printf 'in\n' | sbx exec -i "$id" cat)" in

# ls: -q, --format, forwards as ports.
is "ls -q: the ids alone" "$(sbx ls -q)" "$id"
is "ls --format: a template, \\t as a tab" "$(sbx ls --format '{{.ID}}\t{{.Name}}')" "$(printf '%s\thabits' "$id")"
like "ls --format table: headings" "$(sbx ls --format 'table {{.ID}} {{.State}}' | head -1)" '^ID STATE$'
out=$(sbx ls --format id,name,state)
like "ls --format with a field list: a table of them" "$out" "^ID +NAME +STATE
$id +habits +running$"
sbx ls --format '{{.Nmae}}' > /dev/null 2> "$T/err"; rc=$?
is "an unknown field: exit 2" "$rc" 2
like "an unknown field: did you mean" "$(cat "$T/err")" "no field 'Nmae' \(did you mean 'Name'\?\)"
url=$(sbx forward "$id" 8000 2> "$T/err")
port=${url##*:}; port=${port%%/*}
like "forward gives a local URL" "$url" '^http://127.0.0.1:[0-9]+'
like "ls shows the forward as docker ps shows ports" "$(sbx ls | tail -1)" " 127\.0\.0\.1:$port->8000$"
is "ls --format {{.Ports}}" "$(sbx ls --format '{{.Ports}}')" "127.0.0.1:$port->8000"
like "status says it the same way" "$(sbx status "$id")" "forwards: 127\.0\.0\.1:$port->8000 "
sbx forward --stop "$id" > /dev/null 2>&1

# --json: compact on a pipe, a document either way.
is "ls --json on a pipe is one line" "$(sbx ls --json | wc -l)" 1
is "and JSON" "$(sbx ls --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')" "$id"
is "status --json on a pipe is one line" "$(sbx status --json "$id" | wc -l)" 1

# cp with -: tar on standard output and input, read and made by GNU tar.
is "cp ID:PATH - writes a tar of it" "$(sbx cp "$id:/etc/hostname" - | tar -tf -)" hostname
mkdir -p "$T/src/sub"
printf 'one\n' > "$T/src/a.txt"; printf 'two\n' > "$T/src/sub/b.txt"; ln -s a.txt "$T/src/link"
tar -C "$T/src" -cf - . | sbx cp - "$id:/workspace/in"; rc=$?
is "tar | cp - ID:DIR: exit 0" "$rc" 0
is "the files are there" "$(sbx exec -n "$id" sh -c 'cd /workspace/in && cat a.txt sub/b.txt && readlink link')" "one
two
a.txt"
mkdir -p "$T/back"
sbx cp "$id:/workspace/in" - | tar -C "$T/back" -xf -
check "and come back through cp ID:DIR - | tar -x" diff -r "$T/src" "$T/back/in"
tar -C "$T/src" -czf - a.txt | sbx cp - "$id:/workspace/gz"; rc=$?
is "a gzip'ed tar too" "$rc:$(sbx exec -n "$id" cat /workspace/gz/a.txt)" "0:one"
python3 - "$T/evil.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    for name in ("../escaped", "/abs-escaped", "ok.txt"):
        data = b"x\n"
        i = tarfile.TarInfo(name); i.size = len(data)
        t.addfile(i, io.BytesIO(data))
PY
sbx cp - "$id:/workspace/evil" < "$T/evil.tar"
is "names that leave the directory are not written" "$(sbx exec -n "$id" sh -c 'ls /workspace/evil; ls /workspace/escaped /escaped /abs-escaped 2>/dev/null')" ok.txt
printf 'not a tar' | sbx cp - "$id:/workspace/x" 2> "$T/err"; rc=$?
is "garbage on standard input: exit 2" "$rc" 2
like "garbage: says so" "$(cat "$T/err")" 'not a tar archive'

# --- a terminal: exec -it, exec -t, shell (tmux) -------------------------------------
if command -v tmux > /dev/null 2>&1; then
	export TERM=xterm-256color LANG=C.UTF-8
	tmux_start
	tmux_run 100 30 "$SBXTOP exec -it $id bash"
	if tmux_wait '\$ *$' 15; then ok "exec -it ID bash: a prompt"; else not_ok "exec -it ID bash: a prompt"; tmux_screen | sed 's/^/# /'; fi
	tmux_keys 'echo "T=$(tty) S=$(stty size)"' Enter
	check "on a PTY of the pane's size" tmux_wait 'T=/dev/pts/[0-9]+ S=30 100' 10
	tmux -L "$TMUX_SOCK" resize-window -t con -x 120 -y 40
	sleep 1
	tmux_keys 'echo "R=$(stty size)"' Enter
	check "a resize follows the window (SIGWINCH)" tmux_wait 'R=40 120' 10
	tmux_keys 'exit 5' Enter
	check "the shell's exit status is sbxtop's" tmux_wait '^EXITED-5' 10
	tmux_run 100 30 "$SBXTOP shell $id"
	tmux_wait '\$ *$' 15
	tmux_keys 'echo "IN-$((1+1)) $(pwd)"' Enter
	check "sbxtop shell ID: a login shell in /workspace" tmux_wait 'IN-2 /workspace' 10
	tmux_keys 'exit 3' Enter
	check "sbxtop shell: its status" tmux_wait '^EXITED-3' 10
	tmux_run 100 30 "$SBXTOP exec -t -e GREET=hi -w /tmp $id sh -c 'test -t 1 && echo \"TTY \$GREET \$(pwd)\"'"
	check "exec -t: a terminal, -e and -w there too" tmux_wait 'TTY hi /tmp' 10
	check "exec -t: status 0" tmux_wait '^EXITED-0' 10
	tmux_run 100 30 "$SBXTOP exec -t -w /no/such $id true"
	check "exec -t -w missing: 126" tmux_wait '^EXITED-126' 10
	tmux_run 100 30 "$SBXTOP exec -it nope"
	check "exec -it of an unknown sandbox: 125" tmux_wait '^EXITED-125' 10
else
	ok "# SKIP tmux is not installed"
fi

# --- completion, judged by the shells -------------------------------------------------
mkdir -p "$T/bin"
ln -sf "$SBXTOP" "$T/bin/sbxtop"
export PATH="$T/bin:$PATH"
sbx completion bash > "$T/sbxtop.bash"
bash_complete() {	# bash_complete WORD...: what bash completes the last word to
	bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _sbxtop
	printf "%s\n" "${COMPREPLY[@]}" | sort' bash "$T/sbxtop.bash" "$@"
}
is "bash: a command" "$(bash_complete sbxtop ex)" exec
is "bash: a command's flags" "$(bash_complete sbxtop exec --wo)" --workdir
is "bash: sandbox ids and names" "$(bash_complete sbxtop exec '')" "$(printf 'habits\n%s' "$id")"
is "bash: after a global option" "$(bash_complete sbxtop --log-level debug shell ha)" habits
is "bash: an option's choices from the configuration" "$(bash_complete sbxtop create --network '')" "$(printf 'egress\nnone\nrules')"
is "bash: a global option's choices" "$(bash_complete sbxtop --approve d)" destructive
like "bash: the backends" "$(bash_complete sbxtop create --backend '')" '^lambda
ns
qemu'
is "bash: a subcommand" "$(bash_complete sbxtop host c)" check
is "bash: repeating sandboxes" "$(bash_complete sbxtop destroy "$id" ha)" habits
is "bash: cp's sandbox side" "$(bash_complete sbxtop cp ha)" "habits:"
is "bash: no flags the help does not give" "$(bash_complete sbxtop net "$id" --pro)" ""
if command -v fish > /dev/null 2>&1; then
	sbx completion fish > "$T/sbxtop.fish"
	fish_complete() { XDG_CONFIG_HOME="$T/fishcfg" fish --no-config -c "source $T/sbxtop.fish; complete -C '$1'" | cut -f1 | sort; }
	is "fish: a command" "$(fish_complete 'sbxtop ex')" exec
	like "fish: with its description" "$(XDG_CONFIG_HOME="$T/fishcfg" fish --no-config -c "source $T/sbxtop.fish; complete -C 'sbxtop fo'")" 'fork	copy a running sandbox'
	is "fish: sandbox ids and names" "$(fish_complete 'sbxtop shell ')" "$(printf 'habits\n%s' "$id")"
	is "fish: an option's choices" "$(fish_complete 'sbxtop create --network ')" "$(printf 'egress\nnone\nrules')"
	is "fish: flags" "$(fish_complete 'sbxtop ls --f')" --format
else
	not_ok "fish is installed (scripts/deps.sh --test)"
fi
if command -v zsh > /dev/null 2>&1 && command -v tmux > /dev/null 2>&1; then
	mkdir -p "$T/zfunc"
	sbx completion zsh > "$T/zfunc/_sbxtop"
	tmux -L "$TMUX_SOCK" kill-session -t con 2> /dev/null
	tmux -L "$TMUX_SOCK" new-session -d -s con -x 100 -y 30 "env PATH='$PATH' HOME='$HOME' zsh -f"
	sleep 0.5
	tmux_keys "PS1='zsh%% '; fpath=($T/zfunc \$fpath); autoload -U compinit; compinit -u -D" Enter
	sleep 1
	tmux_keys 'clear' Enter
	tmux_keys 'sbxtop exe' Tab
	check "zsh: a command" tmux_wait 'zsh% sbxtop exec *$' 10
	tmux_keys C-u 'sbxtop shell h' Tab
	check "zsh: a sandbox's name" tmux_wait 'zsh% sbxtop shell habits *$' 10
	tmux_keys C-u 'sbxtop create --netw' Tab
	check "zsh: a flag" tmux_wait 'zsh% sbxtop create --network *$' 10
	tmux_keys 'e' Tab
	check "zsh: its choice" tmux_wait 'zsh% sbxtop create --network egress *$' 10
else
	not_ok "zsh and tmux are installed (scripts/deps.sh --test)"
fi
make -s -C "$TOP" BUILD="$BUILD" install-completions DESTDIR="$T/dest" PREFIX=/usr > "$T/make" 2>&1; rc=$?
is "make install-completions: exit 0" "$rc" 0
for f in share/bash-completion/completions/sbxtop share/zsh/site-functions/_sbxtop \
    share/fish/vendor_completions.d/sbxtop.fish; do
	check "installed: $f" test -s "$T/dest/usr/$f"
done
cmp -s "$T/dest/usr/share/bash-completion/completions/sbxtop" "$T/sbxtop.bash"
is "the installed bash script is the generated one" "$?" 0

# --- --mcp answers what is in flight when its input ends ------------------------------
# How people smoke-test an MCP server: two lines on a pipe, nothing after.
out=$(printf '%s\n' \
	'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"smoke","version":"1"}}}' \
	"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"sandbox_exec\",\"arguments\":{\"sandbox_id\":\"$id\",\"command\":\"sleep 1; echo SMOKE-DONE\"}}}" |
	timeout 30 "$SBXTOP" --mcp 2> "$T/mcp.err")
like "printf ... | sbxtop --mcp: the initialize is answered" "$out" '"id":1,"result"'
like "and the call in flight too, once it is done" "$(printf '%s\n' "$out" | grep '"id":2')" 'SMOKE-DONE'

done_testing
