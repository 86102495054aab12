/* sbxtop serve --listen: MCP over Streamable HTTP from the core server, or on
 * this process's core (cli/serve-http.c); cmd-serve.c calls it. */
#ifndef SBX_CLI_SERVE_HTTP_H
#define SBX_CLI_SERVE_HTTP_H

#include "cli/cli.h"

/* Serve MCP at http://LISTEN/mcp until SIGINT or SIGTERM (or until the core
 * server whose listener it is stops); the bearer token is
 * read from token_file, or made up and printed once on stderr when it is NULL.
 * fixtures (test-only) registers the conformance suite's fixture tools and turns
 * the token off, since the suite cannot send one.  Returns the exit status. */
int serve_http(struct cli *cli, const char *listen, const char *token_file, int fixtures);

#endif
