#!/bin/sh
# The REST API (/v1/ and the /exec/SESSION routes) end to end with node's test
# runner (tests/rest/*.test.mjs): a client generated from docs/openapi.json
# (openapi-typescript + openapi-fetch, checked by tsc) runs the agent flow,
# and every response of the suite is validated against the document with
# ajv; against build/sbxtop serve --listen on real sandboxes, in the private
# XDG directories of lib.sh.  node's TAP output is flattened to our lines.
. "$(dirname "$0")/../lib.sh"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	not_ok "node and npm are needed for the REST tests (scripts/deps.sh installs them)"
	exit 1
fi
if [ ! -d "$TOP/tests/rest/node_modules/openapi-fetch" ]; then
	if ! npm ci --prefix "$TOP/tests/rest" --no-audit --no-fund > "$T/npm.log" 2>&1; then
		not_ok "npm ci --prefix tests/rest"
		sed 's/^/# /' "$T/npm.log" | tail -n 20
		exit 1
	fi
fi
export SBXTOP
at_exit 'for id in $("$SBXTOP" ls 2>/dev/null | awk "NR>1{print \$1}"); do "$SBXTOP" destroy "$id"; done'

node --test --test-reporter=tap --test-concurrency=1 "$TOP"/tests/rest/*.test.mjs \
	> "$T/tap" 2>&1
rc=$?
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
