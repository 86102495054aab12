# End-to-end MCP tests with the official TypeScript SDK client (tests/mcp/*.test.mjs,
# node's built-in runner), against build/sbxtop --mcp on real sandboxes, in the
# private XDG directories of lib.sh.  node's TAP output is flattened to our lines:
# each top-level test is one "ok"/"not ok"; subtests and diagnostics become "#".
. "$(dirname "$0")/../lib.sh"

npm_ready mcp @modelcontextprotocol/sdk @modelcontextprotocol/client
export SBXTOP
# Anything a test leaves behind (it should not) goes with the private state.
destroy_left_at_exit
node_tests "$TOP"/tests/mcp/*.test.mjs
done_testing
