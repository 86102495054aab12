#!/bin/sh
# The REST API (/v1/ and the /exec/SESSION routes) end to end with node's test
# runner (tests/rest/*.test.mjs): a client generated from docs/openapi.json
# (openapi-typescript + openapi-fetch, checked by tsc) runs the agent flow,
# and every response of the suite is validated against the document with
# ajv; against build/sbxtop serve --listen on real sandboxes, in the private
# XDG directories of lib.sh.  node's TAP output is flattened to our lines.
. "$(dirname "$0")/../lib.sh"

npm_ready rest openapi-fetch
export SBXTOP
destroy_left_at_exit
node_tests "$TOP"/tests/rest/*.test.mjs
done_testing
