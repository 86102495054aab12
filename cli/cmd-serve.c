/* sbxtop serve: run the core as a server.  Here only the HTTP MCP listener in
 * the foreground (--listen); cli/serve-http.c does the work. */
#include <getopt.h>
#include <stdio.h>

#include "cli/cli.h"
#include "cli/serve-http.h"

static int cmd_serve(struct cli *cli, int argc, char **argv);

const struct cmd_entry cmd_serve_entry = {
	"serve", "--listen HOST:PORT [--token-file FILE]",
	"serve MCP over Streamable HTTP (and /health, /metrics)",
	"  --listen HOST:PORT   where to listen (127.0.0.1 unless you mean otherwise;\n"
	"                       port 0 picks a free one); MCP is at /mcp\n"
	"  --token-file FILE    the bearer token clients must send; without it one is\n"
	"                       made up and printed once on standard error\n"
	"  --conformance-fixtures\n"
	"                       TEST ONLY: the MCP conformance suite's fixture tools,\n"
	"                       and no token\n",
	cmd_serve,
};

static int
cmd_serve(struct cli *cli, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "token-file", required_argument, NULL, 't' },
		{ "conformance-fixtures", no_argument, NULL, 'C' },
		{ NULL, 0, NULL, 0 },
	};
	const char *listen = NULL, *token_file = NULL;
	int c, fixtures = 0;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", lo, NULL)) != -1) {
		if (c == 'l')
			listen = optarg;
		else if (c == 't')
			token_file = optarg;
		else if (c == 'C')
			fixtures = 1;
		else
			return cli_bad_option(&cmd_serve_entry, c, argv);
	}
	if (optind < argc)
		return cli_usage(&cmd_serve_entry, "unexpected argument '%s'", argv[optind]);
	if (listen == NULL)
		return cli_usage(&cmd_serve_entry, "--listen HOST:PORT is needed (e.g. "
		    "--listen 127.0.0.1:8765)");
	return serve_http(cli, listen, token_file, fixtures);
}
