# The same sandbox feature checks on every local backend: backend_checks runs
# them against one sandbox of the backend it is given, through the public CLI
# and `sbxtop --mcp` (the core server): create, exec exit codes and streaming,
# env, stdin, a file and a directory round trip, suspend/resume, logs, ls and
# status, a forward to busybox httpd inside, a core server killed with -9 while
# the sandbox runs (a new one finds it, execs in it and destroys it), and
# destroy leaving no process and no directory.  Called for ns and for qemu
# (one VM, under TCG here; skipped when qemu-system-x86_64 is missing).
. "$(dirname "$0")/../lib.sh"

skip() { _n=$((_n + 1)); echo "ok $_n - # SKIP $1"; }
sbx() { "$SBXTOP" "$@"; }
export HOME="$T/home"
mkdir -p "$HOME"
export SBXTOP="$SBXTOP"
CC="python3 $TOP/tests/tools/core-client.py"
J() { json_get "$1" "$2"; }
SDIR="$XDG_STATE_HOME/sbxtop/sandboxes"
RUN="$XDG_RUNTIME_DIR/sbxtop"
# Whatever happens, no QEMU of ours outlives the test.
at_exit 'for f in "$SDIR"/*/qemu.pid; do [ -f "$f" ] && kill -9 "$(cat "$f")"; done'

gone() {	# gone PID: no such process, or a zombie
	_st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
	[ -z "$_st" ] || [ "$_st" = Z ] || [ "$_st" = X ]
}
state_of() { J "$(sbx ls --json)" "[s['state'] for s in d if s['id'] == '$1'][0]"; }

# backend_checks BACKEND: every check on one new sandbox of BACKEND; each
# check's name starts with the backend's.
backend_checks() {
	b=$1
	t0=$(date +%s)
	out=$($CC create_backend "$b" 900); id=$(J "$out" 'd["id"]')
	case "$id" in sbx-*) ;; *) not_ok "$b: sandbox_create through the core server"; diag "$out"; return ;; esac
	at_exit "$SBXTOP destroy $id"
	ok "$b: sandbox_create through the core server ($(($(date +%s) - t0)) s)"
	pid=$(J "$(cat "$SDIR/$id/backend.json")" 'd["pid"]')
	check "$b: its process runs (pid $pid)" test -n "$pid" -a -d "/proc/$pid"
	js=$(sbx ls --json)
	is "$b: ls --json: running, on $b" "$(J "$js" "[(s['state'], s['backend']) for s in d if s['id'] == '$id']")" \
		"[('running', '$b')]"
	like "$b: ls shows it" "$(sbx ls)" "$id .* $b +running"
	like "$b: status shows it" "$(sbx status "$id")" 'state: +running'

	# exec: exit codes, the two streams apart, env, stdin, streaming.
	sbx exec -n "$id" -- 'echo out; echo err >&2; exit 3' > "$T/o" 2> "$T/e"; rc=$?
	is "$b: exit code passed through" "$rc" 3
	is "$b: stdout carries stdout only" "$(cat "$T/o")" out
	is "$b: stderr carries stderr only" "$(cat "$T/e")" err
	sbx exec -n "$id" -- 'kill -9 $$'; rc=$?
	is "$b: killed by signal 9: 128+9" "$rc" 137
	is "$b: --env reaches the command" "$(sbx exec -n --env 'GREETING=hi there' "$id" -- 'echo "$GREETING"')" "hi there"
	is "$b: stdin passed through" "$(printf 'l1\nl2\n' | sbx exec "$id" -- 'cat; echo end')" "$(printf 'l1\nl2\nend')"
	sbx exec -n "$id" -- 'echo first; sleep 3; echo second' | while IFS= read -r l; do
		echo "$(date +%s.%N) $l"; done > "$T/stream"
	t1=$(awk '$2=="first"{print $1}' "$T/stream"); t2=$(awk '$2=="second"{print $1}' "$T/stream")
	check "$b: output streams: 'first' came >= 2 s before 'second'" \
		python3 -c "import sys; sys.exit(0 if float('${t2:-0}') - float('${t1:-0}') >= 2 else 1)"

	# A file both ways (sha256), then a directory both ways (diff -r).
	head -c 200000 /dev/urandom > "$T/big.bin"
	want=$(sha256sum < "$T/big.bin" | cut -d' ' -f1)
	sbx cp "$T/big.bin" "$id:big.bin"; rc=$?
	is "$b: cp a file in: exit 0" "$rc" 0
	is "$b: the file inside has the same sha256" "$(sbx exec -n "$id" -- sha256sum big.bin | cut -d' ' -f1)" "$want"
	sbx exec -n "$id" -- 'cat big.bin big.bin > twice.bin'
	sbx cp "$id:twice.bin" "$T/twice.bin"; rc=$?
	is "$b: cp a file out: exit 0" "$rc" 0
	is "$b: the file out has the guest's sha256" "$(sha256sum < "$T/twice.bin" | cut -d' ' -f1)" \
		"$(cat "$T/big.bin" "$T/big.bin" | sha256sum | cut -d' ' -f1)"
	rm -rf "$T/tree" "$T/tree-back"
	mkdir -p "$T/tree/a/b" && head -c 70000 /dev/urandom > "$T/tree/a/b/bin" && echo top > "$T/tree/top" &&
		: > "$T/tree/a/empty" && ln -s top "$T/tree/link"
	sbx cp "$T/tree" "$id:tree"; rc=$?
	is "$b: cp a directory in: exit 0" "$rc" 0
	sbx exec -n "$id" -- 'echo made inside > tree/a/new'
	echo made inside > "$T/tree/a/new"
	sbx cp "$id:tree" "$T/tree-back"; rc=$?
	is "$b: and out again: exit 0" "$rc" 0
	check "$b: the directory came back identical, a file made inside included" diff -r "$T/tree" "$T/tree-back"
	is "$b: a symlink comes back a symlink" "$(readlink "$T/tree-back/link")" top

	# Suspend, resume, exec.
	sbx suspend "$id"; rc=$?
	is "$b: suspend: exit 0" "$rc" 0
	is "$b: ls says suspended" "$(state_of "$id")" suspended
	timeout 5 "$SBXTOP" exec -n "$id" -- echo no > "$T/o" 2> /dev/null; rc=$?
	check "$b: a suspended sandbox runs nothing (exit $rc)" test "$rc" -ne 0 -a ! -s "$T/o"
	sbx resume "$id"; rc=$?
	is "$b: resume: exit 0" "$rc" 0
	is "$b: ls says running" "$(state_of "$id")" running
	is "$b: exec after resume" "$(sbx exec -n "$id" -- echo back)" back

	sbx logs "$id" > "$T/logs"; rc=$?
	is "$b: logs: exit 0" "$rc" 0
	check "$b: logs shows something" test -s "$T/logs"

	# A forward to busybox httpd inside (both images carry busybox).
	sbx exec -n "$id" -- 'mkdir -p www && echo "hello from $(hostname)" > www/index.html'
	sbx exec -n "$id" --background -- 'exec busybox httpd -f -p 127.0.0.1:8000 -h "$PWD/www"' > /dev/null
	"$SBXTOP" forward "$id" 8000 --foreground > "$T/fwd.out" 2> "$T/fwd.err" &
	fpid=$!
	at_exit "kill $fpid"
	url=""
	for _i in $(seq 200); do url=$(head -1 "$T/fwd.out"); [ -n "$url" ] && break; sleep 0.05; done
	out=""
	for _i in $(seq 30); do out=$(curl -s -m 10 "$url/index.html") && [ -n "$out" ] && break; sleep 0.5; done
	like "$b: a forward reaches busybox httpd inside" "$out" '^hello from '
	kill "$fpid"; wait "$fpid" 2> /dev/null

	# The core server that started the sandbox is killed; a new one takes over.
	out=$($CC restart "$id" "$RUN/server.lock")
	is "$b: after kill -9 of the core server, a new one sees it running" "$(J "$out" 'd["status_after"]')" running
	check "$b: a new core server it is" test "$(J "$out" 'd["new_pid"]')" != "$(J "$out" 'd["old_pid"]')"
	is "$b: the new core server execs in it" "$(J "$out" 'd["exec"]')" "['after-restart', 5]"
	is "$b: and destroys it" "$(J "$out" 'd["destroy_error"]')" False
	[ "$(J "$out" 'd["destroy_error"]')" = False ] || diag "$(J "$out" 'd.get("destroy_text")')"
	is "$b: sandbox_list no longer has it" "$(J "$out" "'$id' in d['listed']")" False

	# Destroy left nothing.
	for _i in $(seq 50); do gone "$pid" && break; sleep 0.1; done
	check "$b: its process is gone" gone "$pid"
	check "$b: its directory is gone" test ! -e "$SDIR/$id"
	is "$b: ls no longer shows it" "$(J "$(sbx ls --json)" "[s['id'] for s in d if s['id'] == '$id']")" "[]"
	sbx exec -n "$id" -- true 2> /dev/null; rc=$?
	is "$b: exec in it now: unknown sandbox, exit 125 (sbxtop's own failure)" "$rc" 125
	diag "$b: the checks took $(($(date +%s) - t0)) s"
}

backend_checks ns

if ! command -v qemu-system-x86_64 >/dev/null 2>&1; then
	skip "qemu: qemu-system-x86_64 is not installed (scripts/deps.sh)"
	done_testing
	exit
fi
# The default image, as tests/integration/qemu.sh builds it (the kernel package
# is fetched once and kept in $BUILD/kernel-cache: tests/lib.sh).
export SBXTOP_QEMU_BOOT_TIMEOUT=150
sbx image build > /dev/null 2> "$T/err"; rc=$?
is "qemu: image build: exit 0" "$rc" 0
if [ "$rc" -ne 0 ]; then diag "$(cat "$T/err")"; done_testing; exit 1; fi
backend_checks qemu

# A core server killed while QEMU boots: its create never finished, so the
# record holds no pid; a new core finds the VM by its pid file and QMP socket.
$CC create_backend qemu 900 > /dev/null 2>&1 &
cpid=$!
at_exit "kill $cpid"
pf=""
for _i in $(seq 600); do
	set -- "$SDIR"/*/qemu.pid
	[ -s "$1" ] && { pf=$1; break; }
	sleep 0.1
done
if [ -z "$pf" ]; then
	not_ok "qemu: a create through the core server started QEMU"
else
	oid=$(basename "$(dirname "$pf")"); opid=$(cat "$pf")
	at_exit "kill -9 $opid"
	kill -9 "$(cut -d' ' -f1 "$RUN/server.lock")"
	wait "$cpid" 2> /dev/null
	check "qemu: QEMU of the interrupted create runs on (pid $opid)" test -d "/proc/$opid"
	like "qemu: its backend.json holds no pid: the create never finished" "$(cat "$SDIR/$oid/backend.json")" '^\{"backend":"qemu","dir":"[^"]*"\}$'
	# Aged past the time a live create may take (the registry's 120 s).
	record_age "$oid"
	like "qemu: a new core's status says the create never finished, and how to remove it" \
		"$(sbx status "$oid")" "terminated: its create never finished .*QEMU pid $opid runs on until .sbxtop destroy $oid"
	check "qemu: status left its QEMU alone" test -d "/proc/$opid"
	sbx gc > "$T/out" 2> "$T/err"; rc=$?
	is "qemu: gc: exit 0" "$rc" 0
	for _i in $(seq 50); do gone "$opid" && break; sleep 0.1; done
	check "qemu: gc killed its QEMU, found by pid file and QMP socket" gone "$opid"
	check "qemu: and removed its directory" test ! -e "$SDIR/$oid"
	is "qemu: and dropped its record" "$(sbx ls --json)" "[]"
fi
left=""
for p in $(pgrep -x qemu-system-x86); do
	gone "$p" || ! grep -q "$T" "/proc/$p/cmdline" 2>/dev/null || left="$left $p"
done
is "no QEMU of this test is left" "$left" ""
done_testing
