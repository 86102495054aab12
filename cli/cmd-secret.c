/* sbxtop secret: secrets that never enter a sandbox.  The value is stored 0600
 * beside the configuration; a sandbox created with --secret NAME holds only a
 * placeholder, and its proxy sets the secret's header with the value on
 * requests to the secret's host (docs/network.md). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/net.h"
#include "lib/util.h"

static int cmd_secret(struct cli *cli, int argc, char **argv);

static const struct option options[] = {
	{ "host", required_argument, NULL, 'H' },
	{ "header", required_argument, NULL, 'h' },
	{ "json", no_argument, NULL, 'j' },
	{ NULL, 0, NULL, 0 },
};

const struct cmd_entry cmd_secret_entry = {
	"secret",
	"set NAME --host HOST [--header 'NAME: ...{}...'] < value | ls [--json] | rm NAME",
	"store secrets the network proxy puts in requests, never in a sandbox",
	"  set NAME          read the value from standard input (one line) and store it\n"
	"                    0600 in $XDG_CONFIG_HOME/sbxtop/secrets; NAME is the\n"
	"                    environment variable a sandbox created with --secret NAME\n"
	"                    gets, holding a placeholder\n"
	"  --host HOST       the one host the value is sent to: for requests to it the\n"
	"                    proxy ends TLS (with the sandbox's own CA, which the\n"
	"                    sandbox trusts), puts the value in the secret's header and\n"
	"                    nowhere else, and scrubs it from the answer; requests\n"
	"                    anywhere else carry the placeholder\n"
	"  --header H        the header the value goes into, {} standing for it\n"
	"                    (default 'Authorization: Bearer {}')\n"
	"  ls                the stored secrets' names, hosts and headers (no values)\n"
	"  rm NAME           forget one\n",
	cmd_secret,
	.options = options,
	.words = "set|ls|rm",
};

static int
cmd_secret(struct cli *cli, int argc, char **argv)
{
	const char *host = NULL, *header = NULL;
	struct sbx_err e;
	int json = 0, c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", options, NULL)) != -1) {
		if (c == 'H')
			host = optarg;
		else if (c == 'h')
			header = optarg;
		else if (c == 'j')
			json = 1;
		else
			return cli_bad_option(&cmd_secret_entry, c, argv);
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		return cli_usage(&cmd_secret_entry, "missing set, ls or rm");
	if (strcmp(argv[0], "set") == 0) {
		char buf[8192];
		size_t n;
		int rc;
		if (argc != 2)
			return cli_usage(&cmd_secret_entry, "set takes one NAME");
		if (host == NULL)
			return cli_usage(&cmd_secret_entry, "set needs --host HOST");
		if (isatty(0))
			cli_printf(stderr, "value of %s (one line): ", argv[1]);
		n = fread(buf, 1, sizeof buf - 1, stdin);
		buf[n] = '\0';
		while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
			buf[--n] = '\0';
		rc = net_secret_set(argv[1], host, header, buf, &e);
		explicit_bzero(buf, sizeof buf);
		return rc < 0 ? cli_error(&e) : 0;
	}
	if (strcmp(argv[0], "ls") == 0) {
		cJSON *arr = NULL;
		const cJSON *it;
		if (net_secret_list(&arr, &e) < 0) {
			cJSON_Delete(arr);
			return cli_error(&e);
		}
		if (json) {
			cli_json_print(arr);
		} else {
			cli_printf(stdout, "%-24s %-32s %s\n", "NAME", "HOST", "HEADER");
			cJSON_ArrayForEach(it, arr)
				cli_printf(stdout, "%-24s %-32s %s\n",
				    cJSON_GetStringValue(cJSON_GetObjectItem(it, "name")),
				    cJSON_GetStringValue(cJSON_GetObjectItem(it, "host")),
				    cJSON_GetStringValue(cJSON_GetObjectItem(it, "header")) ?: "-");
		}
		cJSON_Delete(arr);
		return 0;
	}
	if (strcmp(argv[0], "rm") == 0) {
		if (argc != 2)
			return cli_usage(&cmd_secret_entry, "rm takes one NAME");
		return net_secret_rm(argv[1], &e) < 0 ? cli_error(&e) : 0;
	}
	return cli_usage(&cmd_secret_entry, "unknown subcommand '%s'", argv[0]);
}
