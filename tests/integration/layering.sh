#!/bin/sh
# The rules of the house (docs/ARCHITECTURE.md, "Layout"), checked on every
# #include and on the MCP wire words of the tree:
#   lib/                  includes nothing of ours but lib/
#   agent/                lib/ only
#   core/                 lib/, core/, backends/backend.h (the vtable) and
#                         backends/backend-options.h (the backends' options)
#   backends/backend.*    lib/, core/ and the backends it lists
#   backends/NAME/        lib/, core/, backends/backend.h and its own folder,
#                         never another backend
#   launch/               the ns backend as a program: lib/, core/, backends/ns/
#   cli/ tui/ mcp/ server/ (front ends): lib/, core/ and the front ends, never a
#                         backend
#   only tui/ includes curses; only mcp/ spells MCP's wire shapes
# The checker runs first on small trees made to break each rule, so a checker
# that finds nothing cannot pass.
. "$(dirname "$0")/../lib.sh"

# layering DIR: print one line per broken rule in the C files under DIR.
layering() {
	(cd "$1" && find lib core backends agent launch cli tui mcp server \
	    -name '*.[ch]' 2>/dev/null | sort | while read -r f; do
		case $f in
		lib/*)        from=lib;     allow="lib" ;;
		agent/*)      from=agent;   allow="lib agent" ;;
		core/*)       from=core;    allow="lib core backends/backend.h backends/backend-options.h" ;;
		backends/backend*.[ch]) from=backends; allow="lib core backends" ;;
		backends/*/*) from=${f%/*}; allow="lib core backends/backend.h backends/backend-options.h $from" ;;
		launch/*)     from=launch;  allow="lib core launch backends/backend.h backends/ns" ;;
		cli/*|tui/*|mcp/*|server/*)
		              from=${f%%/*}; allow="lib core cli tui mcp server" ;;
		*)            continue ;;
		esac
		sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
		while read -r inc; do
			case $inc in */*) ;; *) continue ;; esac	# a file beside it
			ok=0
			for a in $allow; do
				case $inc in "$a"|"$a"/*) ok=1 ;; esac
			done
			[ $ok -eq 1 ] || echo "$f: $from may not include \"$inc\""
		done
		case $f in tui/*) ;; *)
			grep -n '#[[:space:]]*include[[:space:]]*<\(n\|\)curses' "$f" |
			    sed "s|^|$f:|; s|\$| (only tui/ uses curses)|" ;;
		esac
		case $f in mcp/*) ;; *)
			grep -n '"\(isError\|structuredContent\|protocolVersion\|inputSchema\|outputSchema\|clientInfo\|serverInfo\|tools/call\|tools/list\|resources/read\|server/discover\|initialize\|notifications/[a-z]*\)"' "$f" |
			    sed "s|^|$f:|; s|\$| (only mcp/ spells MCP wire shapes)|" ;;
		esac
	done)
}

# A tree of one file: DIR/PATH with the text TEXT.
tree() {
	rm -rf "$T/tree"
	mkdir -p "$T/tree/$(dirname "$1")"
	printf '%s\n' "$2" >"$T/tree/$1"
}
# broken "what" PATH TEXT: the checker must flag the tree.
broken() {
	tree "$2" "$3"
	out=$(layering "$T/tree")
	if [ -n "$out" ]; then ok "the checker flags $1"; else not_ok "the checker flags $1"; fi
}
broken "tui/ including a backend" tui/x.c '#include "backends/ns/ns.h"'
broken "a backend including another" backends/ns/x.c '#include "backends/qemu/qemu.h"'
broken "lib/ including core/" lib/x.c '#include "core/core.h"'
broken "agent/ including core/" agent/x.c '#include "core/sandbox.h"'
broken "core/ including a backend's own header" core/x.c '#include "backends/ssh/hosts.h"'
broken "cli/ including a backend" cli/x.c '#include "backends/qemu/qemu-image.h"'
broken "curses outside tui/" server/x.c '#include <ncurses.h>'
broken "MCP wire words outside mcp/" tui/x.c 'cJSON_GetObjectItem(r, "isError");'
tree tui/x.c '#include "core/core.h"
#include <curses.h>
#include "mcp/rpc.h"'
is "the checker passes what the rules allow" "$(layering "$T/tree")" ""

out=$(layering "$TOP")
is "the tree keeps the rules of the house" "$out" ""
# Rooms (core/net/, core/image/, core/diff/, core/gc/) hold a concern each; the flat core/ is what grows.
n=$(find "$TOP/core" -maxdepth 1 -name '*.c' | wc -l)
check "core/ holds at most 31 C files of its own, rooms apart ($n)" [ "$n" -le 31 ]
big=$(find "$TOP/lib" "$TOP/core" "$TOP/backends" "$TOP/agent" "$TOP/launch" "$TOP/cli" \
    "$TOP/tui" "$TOP/mcp" "$TOP/server" -name '*.c' -exec wc -l {} + |
    awk '$2 != "total" && $1 > 1200 { print $2 " (" $1 " lines)" }')
is "no C file over 1200 lines" "$big" ""
# --- host-side readers of what a sandbox controls ------------------------------
# A sandbox's root writes its run/ (ns: /run/sbxtop) and may replace any name in
# it with a link to a host file or a FIFO: the host opens such paths only with
# open_regular_nofollow (lib/util.h) or sandbox_log_open, and connects to the
# agent's socket only with agent_sock_connect/agent_sock_open (core/agent-sock.h).
# plain_readers DIR: a line per plain open(2)/fopen(3)/read_file/connect(2)
# whose path was built, in the same function, from a sandbox-controlled name.
plain_readers() {
	(cd "$1" && find core backends cli tui mcp server launch -name '*.c' 2>/dev/null |
	    sort | while read -r f; do
		awk -v f="$f" '
		function marked(s) {
			return s ~ /run\/agent|agent\.log|agent\.sock|SOCK_SUFFIX|"\/run\/|core_log_path\(|workspace\/|\/upper\//
		}
		/^[a-z_][a-z_0-9]*\(/ || /^}/ { delete v }
		{
			if (marked($0)) {
				if (match($0, /[A-Za-z_][A-Za-z_0-9]*(\[[^]]*\])? *= *[^=]/)) {
					w = substr($0, RSTART, RLENGTH); sub(/[ \[=].*/, "", w); v[w] = 1
				}
				if (match($0, /(snprintf|strcpy)\( *[A-Za-z_][A-Za-z_0-9.>-]*/)) {
					w = substr($0, RSTART, RLENGTH); sub(/.*\( */, "", w); v[w] = 1
				}
			}
			if (match($0, /(^|[^a-z_])(open|fopen|read_file|openat)\( *[A-Za-z_][A-Za-z_0-9.>-]*/)) {
				w = substr($0, RSTART, RLENGTH); sub(/.*\( */, "", w)
				if ($0 ~ /O_WRONLY|O_RDWR|O_DIRECTORY|O_PATH|"[wa]/) next
				if (w in v) print f ":" NR ": plain read of " w " (a sandbox-controlled path): use open_regular_nofollow"
			}
			if (match($0, /(strcpy|snprintf)\( *[a-z_.>-]*sun_path/) && marked($0))
				print f ":" NR ": a unix socket path of the sandbox: use agent_sock_connect"
		}' "$f"
	done)
}
tree backends/ns/x.c 'static void
f(const char *dir)
{
	char *p = xasprintf("%s/run/agent.log", dir);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
}'
out=$(plain_readers "$T/tree")
like "the reader check flags a plain open of run/agent.log" "$out" 'plain read of p'
tree mcp/x.c 'static char *
g(struct core *c, const char *id)
{
	char *path = core_log_path(c, id, "agent", &e);
	FILE *f = fopen(path, "re");
}'
like "the reader check flags an fopen of a log path" "$(plain_readers "$T/tree")" 'plain read of path'
tree core/x.c 'static int
h(struct sockaddr_un *un, const char *dir)
{
	snprintf(un->sun_path, sizeof un->sun_path, "%s/run/agent.sock", dir);
}'
like "the reader check flags a socket path of the sandbox" "$(plain_readers "$T/tree")" 'agent_sock_connect'
tree backends/ns/x.c 'static void
f(const char *dir)
{
	char *p = xasprintf("%s/run/agent.log", dir);
	int fd = open_regular_nofollow(p);
	int w = open(p, O_WRONLY | O_APPEND);
}'
is "the reader check passes the safe helper" "$(plain_readers "$T/tree")" ""
is "every host-side reader of a sandbox path uses the safe helper" "$(plain_readers "$TOP")" ""
# The readers there are, each with the helper it must call.
for r in "mcp/server.c open_regular_nofollow" "backends/ns/ns-state.c open_regular_nofollow" \
    "core/sandbox.c open_regular_nofollow" "server/logs.c open_regular_nofollow" \
    "tui/model.c open_regular_nofollow" "mcp/tool-vm-logs.c open_regular_nofollow" \
    "cli/cmd-logs.c sandbox_log_open" "core/core.c sandbox_log_open" \
    "core/agentc.c agent_sock_open" "core/core-exec.c agent_sock_connect" \
    "core/fwd-relay.c agent_sock_connect"; do
	set -- $r
	check "$1 reads the sandbox's files with $2" grep -q "$2(" "$TOP/$1"
done
exit 0
