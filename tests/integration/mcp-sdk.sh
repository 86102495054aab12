# End-to-end MCP tests with the official TypeScript SDK client (tests/mcp/*.test.mjs,
# node's built-in runner), against build/sbxtop --mcp on real sandboxes, in the
# private XDG directories of lib.sh.  node's TAP output is flattened to our lines:
# each top-level test is one "ok"/"not ok"; subtests and diagnostics become "#".
. "$(dirname "$0")/../lib.sh"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	not_ok "node and npm are needed for the MCP SDK tests (scripts/deps.sh installs them)"
	exit 1
fi
if [ ! -d "$TOP/tests/mcp/node_modules/@modelcontextprotocol/sdk" ] ||
   [ ! -d "$TOP/tests/mcp/node_modules/@modelcontextprotocol/client" ]; then
	if ! npm ci --prefix "$TOP/tests/mcp" --no-audit --no-fund > "$T/npm.log" 2>&1; then
		not_ok "npm ci --prefix tests/mcp"
		sed 's/^/# /' "$T/npm.log" | tail -n 20
		exit 1
	fi
fi
export SBXTOP
# Anything a test leaves behind (it should not) goes with the private state.
at_exit 'for id in $("$SBXTOP" ls 2>/dev/null | awk "NR>1{print \$1}"); do "$SBXTOP" destroy "$id"; done'

node --test --test-reporter=tap --test-concurrency=1 "$TOP"/tests/mcp/*.test.mjs \
	> "$T/tap" 2>&1
rc=$?
# Top-level results only (unindented), renumbered; everything else as comments.
while IFS= read -r l; do
	case "$l" in
	"ok "*" - "*)
		ok "${l#ok * - }" ;;
	"not ok "*" - "*)
		not_ok "${l#not ok * - }" ;;
	"TAP version"*|"1.."*)
		;;
	*)
		printf '# %s\n' "$l" ;;
	esac
done < "$T/tap"
if [ "$rc" -ne 0 ] && [ "$_failed" -eq 0 ]; then
	not_ok "node --test exited with status $rc"
fi
[ "$_n" -gt 0 ] || not_ok "node --test ran no test"
done_testing
