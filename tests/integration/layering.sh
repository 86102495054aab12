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
#   core/'s top holds the API and the model, its rooms a subsystem each, and
#                         no two rooms (nor two files at its top) call each
#                         other in a circle (read from the objects' symbols
#                         with nm: the build comes first)
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
# --- core/ in rooms -------------------------------------------------------------
# The top of core/ holds the API (core.c and core-*.c) and the model (the
# sandbox record, the registry, the configuration, a create's options, the
# paths); a subsystem's parts live in a room of their own (a folder: net/, fwd/,
# copy/, client/, image/, diff/, keys/), and a room's arrows point one way: the core calls the rooms
# below it (they report upward through hooks: net_watch, fwd_hooks) and the rooms
# above it (diff/) call the core, never both.
MODEL="config.c create-opts.c paths.c paths-passwd.c registry.c sandbox.c sandbox-text.c"
ROOM_MAX=12
# top_files DIR: a line per C file at the top of DIR/core that is neither API nor model.
top_files() {
	for f in "$1"/core/*.c; do
		[ -e "$f" ] || continue
		b=${f##*/}
		case " $MODEL " in *" $b "*) continue ;; esac
		case $b in core.c|core-*.c) continue ;; esac
		echo "core/$b: neither the API (core-*.c) nor the model: it goes into a room"
	done
	for d in "$1"/core/*/; do
		[ -d "$d" ] || continue
		n=$(find "$d" -name '*.c' | wc -l)
		[ "$n" -le $ROOM_MAX ] ||
		    echo "core/${d#"$1"/core/}: $n C files, more than $ROOM_MAX: two concerns, two rooms"
	done
}
# room_calls SRC OBJ: "FROM TO NAME" for each name an object of core/ under OBJ
# (nm: undefined there) takes from another room, where a room is a folder under
# core/ or one file at its top.  Objects without their source in SRC (left
# from a file moved away) are not read.
room_calls() {
	(cd "$2" && find core -name '*.o' | sort | while read -r o; do
		[ -e "$1/${o%.o}.c" ] || continue
		nm "$o" | awk -v o="$o" '
		BEGIN { r = o; sub(/\.o$/, ".c", r)
			if (split(r, p, "/") > 2) r = p[1] "/" p[2] "/" }
		$1 == "U" { print "U", r, $2; next }
		$2 ~ /^[TDBRCVW]$/ { print "D", r, $3 }'
	done) | awk '$1 == "D" { def[$3] = $2; next }
		{ use[++n] = $2 " " $3 }
		END { for (i = 1; i <= n; i++) { split(use[i], a, " ")
			if ((a[2] in def) && def[a[2]] != a[1]) print a[1], def[a[2]], a[2] } }' |
	    sort -u
}
# room_circles SRC OBJ: for each room of core/ (a folder, or a file at its top)
# that calls, through any number of rooms, a room that calls it back, its calls
# into that circle.  The API's files too: the ground (core-base.c, the event ring,
# the registry cache) reaches up only through hooks core.c installs.
room_circles() {
	room_calls "$1" "$2" | awk '
	{ e[$1, $2] = 1; n[$1, $2] = n[$1, $2] " " $3; v[$1]; v[$2] }
	END {
		for (a in v) for (b in v) r[a, b] = ((a, b) in e)
		for (k in v) for (a in v) if (r[a, k]) for (b in v) if (r[k, b]) r[a, b] = 1
		for (a in v) for (b in v)
			if (b != a && r[a, b] && r[b, a] && ((a, b) in e))
				print "circle: " a " -> " b ":" n[a, b]
	}' | sort
}
tree core/net/x.c 'int x;'
printf 'int y;\n' >"$T/tree/core/sandbox.c"
printf 'int z;\n' >"$T/tree/core/tar-dir.c"
like "the room rule flags a file of neither API nor model at the top" \
    "$(top_files "$T/tree")" 'core/tar-dir.c: neither'
i=0; while [ $i -le $ROOM_MAX ]; do printf 'int v%d;\n' $i >"$T/tree/core/net/x$i.c"; i=$((i + 1)); done
like "the room rule flags a room of more than $ROOM_MAX files" "$(top_files "$T/tree")" 'core/net/: 14 C files'
is "the top of core/ holds the API and model only, each room at most $ROOM_MAX files" \
    "$(top_files "$TOP")" ""
# A planted circle: core/a/ calls core/b/, which calls it back through core.c.
plant() {	# plant PATH TEXT: a source and its object
	mkdir -p "$T/tree/$(dirname "$1")" "$T/obj/$(dirname "$1")"
	printf '%s\n' "$2" >"$T/tree/$1"
	cc -c -o "$T/obj/${1%.c}.o" -x c "$T/tree/$1"
}
rm -rf "$T/tree" "$T/obj"
plant core/a/x.c 'void b_go(void); void a_go(void) { b_go(); }'
plant core/b/y.c 'void core_go(void); void b_go(void) { core_go(); }'
plant core/core.c 'void a_go(void); void core_go(void) { a_go(); }'
plant core/sandbox.c 'void sandbox_go(void) { }'
out=$(room_circles "$T/tree" "$T/obj")
like "the call check flags a room that calls what calls it back" "$out" 'circle: core/a/ -> core/b/: b_go'
like "the call check names the core's part of a circle" "$out" 'circle: core/b/ -> core/core.c: core_go'
plant core/core.c 'void a_go(void); void core_go(void) { }'
is "the call check passes calls that point one way" "$(room_circles "$T/tree" "$T/obj")" ""
plant core/core-x.c 'void core_go(void); void x_go(void) { core_go(); }'
plant core/core.c 'void x_go(void); void core_go(void) { x_go(); }'
like "the call check flags two files at the top that call each other" \
    "$(room_circles "$T/tree" "$T/obj")" 'circle: core/core-x.c -> core/core.c: core_go'
plant core/core-x.c 'void x_go(void) { }'
plant core/core.c 'void core_go(void) { }'
plant core/gone.c 'void b_go(void); void gone_go(void) { b_go(); }'
rm "$T/tree/core/gone.c"
plant core/core.c 'void gone_go(void); void core_go(void) { gone_go(); }'
is "the call check reads no object whose source is gone" "$(room_circles "$T/tree" "$T/obj")" ""
if [ -d "$BUILD/obj/core" ]; then
	like "the call check reads the tree's calls between rooms" \
	    "$(room_calls "$TOP" "$BUILD/obj")" 'core/fwd/ core/client/ agent_sock_connect'
	is "no circle of calls between rooms of core/, nor between the files at its top" \
	    "$(room_circles "$TOP" "$BUILD/obj")" ""
else
	not_ok "no circle of calls between rooms of core/ (no objects in $BUILD/obj: build first)"
fi
big=$(find "$TOP/lib" "$TOP/core" "$TOP/backends" "$TOP/agent" "$TOP/launch" "$TOP/cli" \
    "$TOP/tui" "$TOP/mcp" "$TOP/server" -name '*.c' -exec wc -l {} + |
    awk '$2 != "total" && $1 > 1200 { print $2 " (" $1 " lines)" }')
is "no C file over 1200 lines" "$big" ""
# --- host-side readers of what a sandbox controls ------------------------------
# A sandbox's root writes its run/ (ns: /run/sbxtop) and may replace any name in
# it with a link to a host file or a FIFO: the host opens such paths only with
# open_regular_nofollow (lib/util.h) or sandbox_log_open, and connects to the
# agent's socket only with agent_sock_connect/agent_sock_open (core/client/agentc.h).
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
# tail_read and tail_text (lib/util.c, the one reader of a log's tail) open
# with open_regular_nofollow.
for r in "mcp/resource-logs.c tail_read" "backends/ns/ns-state.c tail_text" \
    "lib/util.c open_regular_nofollow" \
    "core/sandbox.c open_regular_nofollow" "server/logs.c open_regular_nofollow" \
    "tui/model.c open_regular_nofollow" "mcp/tool-vm-logs.c tail_read" \
    "cli/cmd-logs.c sandbox_log_open" "core/core.c sandbox_log_open" \
    "core/client/agentc.c agent_sock_open" "core/core-exec.c agent_sock_connect" \
    "core/fwd/relay.c agent_sock_connect"; do
	set -- $r
	check "$1 reads the sandbox's files with $2" grep -q "$2(" "$TOP/$1"
done
exit 0
