# The manual pages: mandoc finds nothing at warning level or above, and every
# command and option the program knows is documented.
. "$(dirname "$0")/../lib.sh"
if ! command -v mandoc > /dev/null; then
	ok "# SKIP mandoc is not installed"
	exit 0
fi
for m in "$TOP"/man/*.[1-8]; do
	out=$(mandoc -Tlint -Wwarning "$m" 2>&1); rc=$?
	is "mandoc -Tlint is clean: $(basename "$m")" "$rc:$out" "0:"
done
page=$(cat "$TOP/man/sbxtop.1")
for c in $("$SBXTOP" --help | awk '/^commands:/ {on=1; next} on && NF == 0 {on=0} on {print $1}'); do
	case "$page" in *"Ic $c"*) ok "sbxtop.1 documents $c" ;; *) not_ok "sbxtop.1 documents $c" ;; esac
done
conf=$(cat "$TOP/man/sbxtop.conf.5")
for o in backend image max_duration idle memory cpus pids network log_level approve; do
	case "$conf" in *".It Ic $o No"*) ok "sbxtop.conf.5 documents $o" ;; *) not_ok "sbxtop.conf.5 documents $o" ;; esac
done
for f in name backend image memory cpus pids max-duration idle network env json cwd timeout root background; do
	case "$page" in *"Fl \\-$f"*) ok "sbxtop.1 documents --$f" ;; *) not_ok "sbxtop.1 documents --$f" ;; esac
done
for f in mcp log; do
	case "$page" in *"Fl \\-$f"*) ok "sbxtop.1 documents --$f" ;; *) not_ok "sbxtop.1 documents --$f" ;; esac
done
# Every long option of every command, as the command table has them (the
# completion script carries them), is in sbxtop(1) and in the command's help.
"$SBXTOP" completion bash > "$T/completion.bash"
flat=$(printf '%s' "$page" | sed 's/\\-/-/g')	# mdoc's \- is a -
for c in $("$SBXTOP" --help | awk '/^commands:/ {on=1; next} on && NF == 0 {on=0} on {print $1}'); do
	help=$("$SBXTOP" help "$c")
	undoc="" nohelp=""
	for f in $(bash -c '. "$1"; _sbxtop_flags "$2"' sh "$T/completion.bash" "$c"); do
		case "$f" in --*) ;; *) continue ;; esac
		case "$flat" in *" -${f#--}"*) ;; *) undoc="$undoc $f" ;; esac
		case "$help" in *"$f"*) ;; *) nohelp="$nohelp $f" ;; esac
	done
	is "sbxtop.1 documents every option of $c" "$undoc" ""
	is "sbxtop help $c gives every option" "$nohelp" ""
done
# Every tool the MCP server lists is in sbxtop-mcp.7.
mcp=$(cat "$TOP/man/sbxtop-mcp.7")
tools=$(printf '%s\n' \
	'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"man.sh","version":"1"}}}' \
	'{"jsonrpc":"2.0","id":2,"method":"tools/list"}' | "$SBXTOP" --mcp 2>/dev/null |
	python3 -c 'import json,sys
for l in sys.stdin:
	m = json.loads(l)
	if m.get("id") == 2: print("\n".join(t["name"] for t in m["result"]["tools"]))')
[ -n "$tools" ] || not_ok "sbxtop --mcp lists its tools"
for t in $tools; do
	case "$mcp" in *"Li $t"*) ok "sbxtop-mcp.7 documents $t" ;; *) not_ok "sbxtop-mcp.7 documents $t" ;; esac
done
done_testing
