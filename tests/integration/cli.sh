# The admin CLI end to end: help and usage, bad flags and ranges, unknown ids,
# the registry's place and its corruption, then the whole flow on a real ns
# sandbox: create, ls, exec, cp, logs, suspend/resume, destroy.
. "$(dirname "$0")/../lib.sh"

skip() { _n=$((_n + 1)); echo "ok $_n - # SKIP $1"; }
sbx() { "$SBXTOP" "$@"; }
export HOME="$T/home"
mkdir -p "$HOME"

# --- help, usage, version -------------------------------------------------
out=$(sbx --version); rc=$?
is "--version exits 0" "$rc" 0
like "--version prints the version" "$out" '^sbxtop [0-9]+\.[0-9]+\.[0-9]+$'
out=$(sbx --help); rc=$?
is "--help exits 0" "$rc" 0
for c in create ls exec cp logs status suspend resume destroy doctor gc help; do
	case "$out" in *"  $c "*) ;; *) not_ok "--help lists $c"; continue ;; esac
done
ok "--help lists every command"
out=$(sbx help exec); rc=$?
is "help exec exits 0" "$rc" 0
like "help exec shows its usage" "$out" 'usage: sbxtop exec .*ID \[--\] \[CMD \[ARG...\]\]'
is "exec --help is the same as help exec" "$(sbx exec --help)" "$out"
is "create -h works too" "$(sbx create -h | head -1)" "$(sbx help create | head -1)"
sbx help nosuch 2> "$T/err"; rc=$?
is "help of an unknown command: exit 2" "$rc" 2
sbx frobnicate 2> "$T/err"; rc=$?
is "unknown command: exit 2" "$rc" 2
like "unknown command is named" "$(cat "$T/err")" "unknown command 'frobnicate'"
# The thin sbxtop loads none of the core's libraries; sbxtop-core does.
is "sbxtop links none of the core's libraries" \
	"$(ldd "$SBXTOP" | grep -cE 'libcurl|libmicrohttpd|libarchive|libseccomp|ncurses|libssl|pcre2')" 0
like "sbxtop-core, next to it, does" "$(ldd "$(dirname "$SBXTOP")/sbxtop-core")" 'libcurl'
sbx --frob 2> /dev/null; rc=$?
is "unknown global option: exit 2" "$rc" 2
out=$(sbx); rc=$?
is "sbxtop alone exits 0" "$rc" 0
like "sbxtop alone says there are no sandboxes" "$out" '^sbxtop .*: 0 sandboxes'
like "sbxtop alone says how to make one" "$out" 'Create one with `sbxtop create`'

# --- bad flags and ranges -------------------------------------------------
bad() {	# bad "what" 'expected message regex' ARGS...
	_w=$1; _re=$2; shift 2
	# exec's own failures are docker's 125, the others' 2.
	_want=2; [ "$1" = exec ] && _want=125
	sbx "$@" > "$T/stdout" 2> "$T/err"; _rc=$?
	is "$_w: exit $_want" "$_rc" "$_want"
	like "$_w: says what is allowed" "$(cat "$T/err")" "$_re"
	is "$_w: nothing on stdout" "$(cat "$T/stdout")" ""
}
bad "--memory too big" '--memory.*0 to 1048576 MiB' create --memory 99999999
bad "--memory not a number" "--memory: '12x' is not valid" create --memory 12x
bad "--max-duration 0" '--max-duration.*1 to 86400 seconds' create --max-duration 0
bad "--max-duration over a day" '1 to 86400' create --max-duration 86401
bad "--idle negative" '--idle.*0 to 86400' create --idle -5
bad "--cpus too many" '--cpus.*0 to 1024' create --cpus 5000
bad "--pids too many" '--pids.*0 to 4194304' create --pids 99999999
bad "--network unknown" '--network.*none\|egress' create --network wifi
bad "--env without =" 'NAME=VALUE' create --env FOO
bad "--name with a slash" "name 'a/b' is not valid" create --name a/b
bad "--backend unknown" "unknown backend 'vmware'.*ns" create --backend vmware
bad "exec --timeout 0" '--timeout.*1 to 86400 seconds' exec x --timeout 0 -- true
bad "exec without a command" 'expected a command' exec x
bad "create with an unknown flag" "unknown option '--frob'" create --frob
bad "create flag without a value" "needs a value" create --memory
bad "cp with no sandbox side" 'one side must be ID:PATH' cp a b
bad "cp with two sandbox sides" 'both sides' cp x:a y:b
bad "doctor for an unknown backend" "unknown backend 'nope'" doctor --backend nope
SBXTOP_MEMORY=lots sbx ls 2> "$T/err" > /dev/null; rc=$?
is "a bad SBXTOP_ variable: exit 2" "$rc" 2
like "a bad SBXTOP_ variable is named" "$(cat "$T/err")" 'SBXTOP_MEMORY'
mkdir -p "$XDG_CONFIG_HOME/sbxtop"
printf 'memory = 1\nnetwrok = egress\n' > "$XDG_CONFIG_HOME/sbxtop/sbxtop.conf"
sbx ls 2> "$T/err" > /dev/null; rc=$?
is "a bad config file: exit 2" "$rc" 2
like "a bad config file names file:line" "$(cat "$T/err")" "sbxtop.conf:2: unknown option 'netwrok'"
rm "$XDG_CONFIG_HOME/sbxtop/sbxtop.conf"

# --- unknown ids ------------------------------------------------------------
for c in "status" "suspend" "resume" "destroy" "logs" "exec -n"; do
	# shellcheck disable=SC2086
	if [ "$c" = "exec -n" ]; then sbx exec -n nope -- true 2> "$T/err"; rc=$?; want=125
	else sbx $c nope 2> "$T/err"; rc=$?; want=2; fi
	is "$c unknown id: exit $want (125: sbxtop itself failed, as docker exec)" "$rc" "$want"
	is "$c unknown id: the message" "$(cat "$T/err")" "sbxtop: unknown sandbox 'nope' (run \`sbxtop ls\`)"
done
sbx cp nope:/x "$T/x" 2> "$T/err"; rc=$?
is "cp from an unknown id: exit 2" "$rc" 2
is "cp from an unknown id: the message" "$(cat "$T/err")" "sbxtop: unknown sandbox 'nope' (run \`sbxtop ls\`)"

# --- the registry's place, corruption, gc -----------------------------------
REG="$XDG_STATE_HOME/sbxtop/sandboxes.json"
now=$(($(date +%s) * 1000))
plant() {	# plant ID STATE ENDPOINT [NAME]: write a registry of one record
	mkdir -p "$XDG_STATE_HOME/sbxtop"
	# Renamed in whole, as sbxtop writes it: a core server's threads read it
	# each second, and one that read it half-written would keep it aside as
	# corrupt.
	cat > "$REG.plant" <<-EOF
	{"version": 1, "sandboxes": [{"id": "$1", "name": "${4:-planted}", "backend": "ns",
	 "state": "$2", "state_reason": "planted by the test", "created_at": $now,
	 "expires_at": $((now + 3600000)), "max_duration_s": 3600, "network": "none",
	 "agent_endpoint": "$3", "agent_secret": "$SECRET",
	 "limits": {"memory_mib": 256, "cpus": 0, "pids": 100, "disk_mib": 0}}]}
	EOF
	chmod 600 "$REG.plant" && mv -f "$REG.plant" "$REG"
}
plant sbx-0a0b0c terminated "unix:$T/nothing.sock"
js=$(sbx ls --json)
is "ls --json reads the registry under XDG_STATE_HOME" "$(json_get "$js" 'd[0]["id"]')" sbx-0a0b0c
is "ls --json has the documented fields" "$(json_get "$js" \
	'all(k in d[0] for k in ("id","name","backend","state","state_reason","created_at","expires_at"))')" True
is "ls --json never shows the secret" "$(json_get "$js" '"agent_secret" in d[0]')" False
like "ls shows the table" "$(sbx ls)" '^ID +NAME +BACKEND +STATE +AGE +LEFT +CPU% +MEM +LIMITS'
like "ls shows the record and its limits" "$(sbx ls | tail -1)" 'sbx-0a0b0c +planted +ns +terminated .*mem=256M pids=100'
is "another XDG_STATE_HOME sees nothing" "$(XDG_STATE_HOME="$T/other" sbx ls --json)" "[]"
check "nothing was written under HOME" test ! -e "$HOME/.local"
is "find by name" "$(sbx status --json planted | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')" sbx-0a0b0c
is "find by id prefix" "$(sbx status --json 0a0b | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')" sbx-0a0b0c
sbx exec -n planted -- true 2> "$T/err"; rc=$?
is "exec in a terminated sandbox: exit 125" "$rc" 125
like "exec in a terminated sandbox says so" "$(cat "$T/err")" 'sbx-0a0b0c is terminated: planted by the test'
out=$(sbx gc); rc=$?
is "gc exits 0" "$rc" 0
like "gc drops the terminated record with nothing left" "$out" 'dropped 1 record'
is "the registry is empty after gc" "$(sbx ls --json)" "[]"
is "registry file mode 0600" "$(stat -c %a "$REG")" 600
is "state directory mode 0700" "$(stat -c %a "$XDG_STATE_HOME/sbxtop")" 700

# Read in this process, with no core server up: a server's own threads read
# the registry each second, and the first reader keeps it aside and warns in
# its log.
sbx serve --stop > /dev/null 2>&1
echo '{"version":1,"sandboxes":[{"id":' > "$REG"
"$SBXTOP" --standalone ls > /dev/null 2> "$T/err"; rc=$?
is "ls over a corrupt registry still works" "$rc" 0
set -- "$XDG_STATE_HOME"/sbxtop/sandboxes.json.corrupt-*
check "the corrupt registry is kept aside" test -f "$1"
like "the warning names the registry" "$(cat "$T/err")" "$REG was corrupt"
like "the warning names where it went" "$(cat "$T/err")" "kept as $1"
is "the corrupt file keeps its content" "$(cat "$1")" '{"version":1,"sandboxes":[{"id":'
rm -f "$XDG_STATE_HOME"/sbxtop/sandboxes.json.corrupt-*

# A running sandbox whose agent is gone.
plant sbx-dead01 running "unix:$T/nothing.sock" ghost
sbx exec -n ghost -- true 2> "$T/err"; rc=$?
is "exec in a sandbox whose agent is gone: exit 125" "$rc" 125
is "the agent that is not there" "$(cat "$T/err")" \
	"sbxtop: sandbox sbx-dead01 is not answering (its init may have died): run \`sbxtop status sbx-dead01\`"
like "status finds its init gone and says so" "$(sbx status ghost 2>/dev/null)" 'state: +terminated: init exited'
rm -f "$REG"

# --- commands against a real agent -------------------------------------------
# The flow both here and on a real sandbox: $1 is the sandbox, $2 how to read a
# workspace file on the host side for cross-checks ("" when there is none).
exec_flow() {
	id=$1
	out=$(sbx exec -n "$id" -- echo hello); rc=$?
	is "exec echo: exit 0" "$rc" 0
	is "exec echo: output" "$out" hello
	sbx exec -n "$id" -- 'echo out; echo err >&2' > "$T/o" 2> "$T/e"; rc=$?
	is "stdout and stderr: exit 0" "$rc" 0
	is "stdout carries stdout only" "$(cat "$T/o")" out
	is "stderr carries stderr only" "$(cat "$T/e")" err
	sbx exec -n "$id" -- 'exit 7'; rc=$?
	is "exit code passed through" "$rc" 7
	sbx exec -n "$id" -- 'kill -9 $$'; rc=$?
	is "killed by signal 9: 128+9" "$rc" 137
	out=$(printf 'line1\nline2\n' | sbx exec "$id" -- 'cat; echo end'); rc=$?
	is "stdin passed through: exit 0" "$rc" 0
	is "stdin passed through" "$out" "$(printf 'line1\nline2\nend')"
	# The help promises 16 MiB of standard input: far more than one JSON body's
	# default cap at the agent.
	head -c 6000000 /dev/zero | tr '\0' x > "$T/big-stdin"
	out=$(sbx exec "$id" -- 'wc -c' < "$T/big-stdin"); rc=$?
	is "6 MB of standard input arrive whole" "$rc:$out" "0:6000000"
	out=$(printf 'ignored\n' | sbx exec -n "$id" -- 'cat; echo end')
	is "-n passes no stdin" "$out" end
	out=$(sbx exec -n "$id" -- printf '%s|' 'a b' "c'd" '$HOME' '')
	is "several words are quoted one by one" "$out" "a b|c'd|\$HOME||"
	out=$(sbx exec -n --env GREETING='hi there' "$id" -- 'echo "$GREETING"')
	is "--env reaches the command" "$out" "hi there"
	out=$(sbx exec -n --cwd / "$id" -- pwd)
	is "--cwd is the working directory" "$out" /
	start=$(date +%s)
	sbx exec -n --timeout 1 "$id" -- 'sleep 30' 2> "$T/e"; rc=$?
	took=$(($(date +%s) - start))
	is "--timeout stops the command with TERM: 128+15" "$rc" 143
	check "--timeout stops it in time (${took}s)" test "$took" -lt 10
	like "--timeout says so" "$(cat "$T/e")" 'timed out'
	head -c 300000 /dev/urandom > "$T/big.bin"
	out=$(sbx exec -n "$id" -- 'head -c 200000 /dev/zero | tr "\0" x' | wc -c)
	is "large output arrives whole" "$out" 200000
	out=$(sbx exec -n --background "$id" -- 'sleep 1'); rc=$?
	is "--background: exit 0" "$rc" 0
	like "--background prints the exec id, pid and log" "$out" '^[^ ]+ pid [0-9]+ log '

	# cp: binary files and directories both ways, compared by sha256.
	want=$(sha256sum < "$T/big.bin" | cut -d' ' -f1)
	sbx cp "$T/big.bin" "$id:big.bin"; rc=$?
	is "cp a binary file in: exit 0" "$rc" 0
	is "the file inside has the same sha256" \
		"$(sbx exec -n "$id" -- 'sha256sum big.bin' | cut -d' ' -f1)" "$want"
	mkdir -p "$T/back"
	sbx cp "$id:big.bin" "$T/back/copy.bin"; rc=$?
	is "cp a binary file out: exit 0" "$rc" 0
	is "the file out has the same sha256" "$(sha256sum < "$T/back/copy.bin" | cut -d' ' -f1)" "$want"
	sbx cp "$id:big.bin" "$T/back"
	check "cp into an existing host directory keeps the name" cmp -s "$T/big.bin" "$T/back/big.bin"
	chmod 0751 "$T/big.bin"
	sbx exec -n "$id" -- 'mkdir -p into'
	sbx cp "$T/big.bin" "$id:into"
	is "cp into an existing sandbox directory keeps the name and mode" \
		"$(sbx exec -n "$id" -- 'stat -c %a into/big.bin')" 751

	mkdir -p "$T/tree/sub/deeper" "$T/tree/.hidden"
	head -c 70000 /dev/urandom > "$T/tree/sub/deeper/r.bin"
	printf 'hello\n' > "$T/tree/a.txt"
	printf 'x' > "$T/tree/.hidden/h"
	: > "$T/tree/empty"
	mkdir "$T/tree/emptydir"
	ln -s a.txt "$T/tree/link"
	sbx cp "$T/tree" "$id:tree"; rc=$?
	is "cp a directory in: exit 0" "$rc" 0
	is "the directory inside has every file" \
		"$(sbx exec -n "$id" -- 'cd tree && find . | sort | tr "\n" " "')" \
		"$(cd "$T/tree" && find . | sort | tr '\n' ' ')"
	is "a symlink stays a symlink" "$(sbx exec -n "$id" -- 'readlink tree/link')" a.txt
	sbx exec -n "$id" -- 'echo added > tree/new.txt'
	mkdir -p "$T/outdir"
	sbx cp "$id:tree" "$T/outdir"; rc=$?
	is "cp a directory out into an existing directory: exit 0" "$rc" 0
	printf 'added\n' > "$T/tree/new.txt"
	check "the directory out is identical (diff -r)" diff -r "$T/tree" "$T/outdir/tree"
	check "binary content out matches" cmp -s "$T/tree/sub/deeper/r.bin" "$T/outdir/tree/sub/deeper/r.bin"
	is "a symlink comes back a symlink" "$(readlink "$T/outdir/tree/link")" a.txt
	sbx cp "$id:tree" "$T/fresh"; rc=$?
	is "cp a directory out to a new name: exit 0" "$rc" 0
	check "the new directory has the content" cmp -s "$T/tree/a.txt" "$T/fresh/a.txt"
	sbx cp "$id:no/such/thing" "$T/x" 2> "$T/e"; rc=$?
	is "cp of a missing sandbox path: exit 2" "$rc" 2
	like "cp of a missing sandbox path says so" "$(cat "$T/e")" 'no/such/thing does not exist'
	sbx cp "$T/no-such-file" "$id:x" 2> "$T/e"; rc=$?
	is "cp of a missing host path: exit 2" "$rc" 2
	# A symlink made inside the sandbox must not lead the copy out of the host
	# directory.
	sbx exec -n "$id" -- 'mkdir -p evil && ln -sfn /etc evil/esc' > /dev/null
	mkdir -p "$T/evilout"
	sbx cp "$id:evil" "$T/evilout" 2> /dev/null
	check "a sandbox symlink out of the tree is not made on the host, nothing written through it" \
		test ! -L "$T/evilout/evil/esc" -a ! -e "$T/evilout/evil/esc/passwd-sbxtop"
}

# --- a real ns sandbox ----------------------------------------------------
sbx doctor > "$T/doctor" 2>&1; drc=$?
like "doctor prints one line per check" "$(head -1 "$T/doctor")" '^(ok  |warn|FAIL) '
like "doctor checks the state directory" "$(cat "$T/doctor")" "ok   state directory: $XDG_STATE_HOME/sbxtop"
if grep -q '^FAIL' "$T/doctor"; then is "doctor with a FAIL exits 1" "$drc" 1
else is "doctor without a FAIL exits 0" "$drc" 0; fi

id=$(sbx create --name flow --memory 256 --max-duration 600 2> "$T/err" < /dev/null); rc=$?
if [ "$rc" -ne 0 ] && grep -Eq 'not built yet|unsupported|not supported' "$T/err"; then
	diag "create: $(cat "$T/err")"
	skip "no ns backend"
	done_testing
	exit
fi
at_exit "$SBXTOP destroy $id"
is "create exits 0" "$rc" 0
like "create prints the id alone" "$id" '^sbx-[0-9a-f]{6}$'
js=$(sbx ls --json)
is "ls --json lists it" "$(json_get "$js" '[s["id"] for s in d]')" "['$id']"
is "ls --json: running, with its name" "$(json_get "$js" 'd[0]["state"], d[0]["name"]')" "('running', 'flow')"
is "ls --json: expires after max-duration" "$(json_get "$js" 'd[0]["expires_at"] - d[0]["created_at"]')" 600000
exec_flow "$id"
check "the agent log exists" sbx logs "$id"
# A follow ends on SIGTERM alone, quietly. (Not `timeout`: it also sends
# SIGCONT to its group, which can clear the SIGSTOP LeakSanitizer's exit check
# stops the process with, and that check then waits forever.)
"$SBXTOP" logs -f "$id" > /dev/null 2> "$T/err" & fp=$!
at_exit "kill $fp"
sleep 1
like "logs -f keeps following a live sandbox" "$(ps -o stat= -p "$fp")" '^[RS]'
kill -TERM "$fp"
(sleep 10; kill -KILL "$fp") 2> /dev/null & killer=$!
wait "$fp"; rc=$?
kill "$killer" 2> /dev/null
is "SIGTERM ends the follow: exit 0, nothing on stderr" "$rc:$(cat "$T/err")" "0:"
sbx suspend "$id"; rc=$?
is "suspend exits 0" "$rc" 0
is "ls says suspended" "$(json_get "$(sbx ls --json)" 'd[0]["state"]')" suspended
sbx exec -n "$id" -- true 2> "$T/err"; rc=$?
is "exec in a suspended sandbox: exit 125" "$rc" 125
like "exec in a suspended sandbox says how to resume" "$(cat "$T/err")" "suspended \(run \`sbxtop resume $id\`\)"
sbx resume "$id"; rc=$?
is "resume exits 0" "$rc" 0
is "exec works after resume" "$(sbx exec -n "$id" -- echo back)" back
id2=$(sbx create --json < /dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
at_exit "$SBXTOP destroy $id2"
like "create --json prints the record" "$id2" '^sbx-[0-9a-f]{6}$'
# The same commands running the core in this process (sbxtop-core).
sbx() { "$SBXTOP" --standalone "$@"; }
id3=$(sbx create --name solo < /dev/null); rc=$?
at_exit "$SBXTOP destroy $id3"
is "--standalone create exits 0" "$rc" 0
is "--standalone ls lists every sandbox" "$(json_get "$(sbx ls --json)" 'len(d)')" 3
out=$(printf 'in\n' | sbx exec "$id3" -- 'cat; echo "$0" >&2; exit 3' 2> "$T/e"); rc=$?
is "--standalone exec: output, status" "$out:$rc" "in:3"
sbx cp "$T/big.bin" "$id3:big.bin" && sbx cp "$id3:big.bin" "$T/solo.bin"
check "--standalone cp both ways" cmp -s "$T/big.bin" "$T/solo.bin"
sbx exec -n nope -- true 2> "$T/err"; rc=$?
is "--standalone: the same error for an unknown id" "$rc:$(cat "$T/err")" \
	"125:sbxtop: unknown sandbox 'nope' (run \`sbxtop ls\`)"
sbx destroy "$id3"; rc=$?
is "--standalone destroy exits 0" "$rc" 0
sbx() { "$SBXTOP" "$@"; }
sbx destroy "$id" "$id2"; rc=$?
is "destroy of two exits 0" "$rc" 0
is "ls is empty after destroy" "$(sbx ls --json)" "[]"
sbx status "$id" 2> "$T/err"; rc=$?
is "a destroyed sandbox is unknown: exit 2" "$rc" 2
done_testing
