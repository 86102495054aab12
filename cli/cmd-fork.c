/* sbxtop fork: make copies of a running sandbox, each a sandbox of its own. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "lib/util.h"

static int cmd_fork(struct cli *cli, int argc, char **argv);

static const struct option options[] = {
	{ "json", no_argument, NULL, 'j' },
	{ NULL, 0, NULL, 0 },
};

const struct cmd_entry cmd_fork_entry = {
	"fork", "ID [-n N] [--json]",
	"copy a running sandbox into N new ones and print their ids",
	"  -n N      how many copies, 1 to 64 (default 1)\n"
	"  --json    print the new records as a JSON array instead of the ids\n"
	"  Each copy is a sandbox of its own: a new id, name (the source's with the\n"
	"  new id's suffix), secret and deadline, with the source's image, limits,\n"
	"  network and environment.  ns copies the source's files (its root's\n"
	"  changes, /workspace and the host layers' changes), holding it still\n"
	"  while it copies; qemu copies its memory and disk through a snapshot.\n"
	"  Processes do not carry over on ns: a copy starts with a fresh init.\n",
	cmd_fork,
	.options = options,
	.shortopts = "n:",
	.words = "sandbox",
};

static int
cmd_fork(struct cli *cli, int argc, char **argv)
{
	struct sandbox **v = NULL;
	struct sbx_err e;
	size_t nv = 0;
	int json = 0, n = 1, c, rc = 0;
	char *end;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":n:", options, NULL)) != -1) {
		if (c == 'n') {
			long x = strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || x < 1 || x > CORE_FORK_MAX)
				return cli_usage(&cmd_fork_entry, "-n takes a number from 1 to %d, "
				    "not '%s'", CORE_FORK_MAX, optarg);
			n = (int)x;
		} else if (c == 'j') {
			json = 1;
		} else {
			return cli_bad_option(&cmd_fork_entry, c, argv);
		}
	}
	if (argc - optind != 1)
		return cli_usage(&cmd_fork_entry, "expected one sandbox id");
	if (core_fork(cli->core, argv[optind], n, NULL, &v, &nv, &e) < 0)
		rc = cli_error(&e);
	if (json) {
		cJSON *a = cJSON_CreateArray();
		for (size_t i = 0; i < nv; i++)
			cJSON_AddItemToArray(a, sandbox_to_json(v[i], 0));
		cli_json_print(a);
		cJSON_Delete(a);
	} else {
		for (size_t i = 0; i < nv; i++)
			cli_printf(stdout, "%s\n", v[i]->id);
	}
	core_list_free(v, nv);
	return rc;
}
