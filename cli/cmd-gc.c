/* sbxtop gc: remove what dead sandboxes left behind. */
#include <getopt.h>
#include <stdio.h>

#include "cli/cli.h"

static int cmd_gc(struct cli *cli, int argc, char **argv);

static const struct option options[] = { { NULL, 0, NULL, 0 } };

const struct cmd_entry cmd_gc_entry = {
	"gc", "", "remove what dead sandboxes left behind",
	"  Each backend removes the directories, cgroups and processes of sandboxes\n"
	"  that are no longer live; then records of terminated sandboxes with nothing\n"
	"  left are dropped from the registry.\n",
	cmd_gc,
	.options = options,
	.words = "",
};

static int
cmd_gc(struct cli *cli, int argc, char **argv)
{
	struct core_gc_result res;
	struct sbx_err e;
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", options, NULL)) != -1)
		return cli_bad_option(&cmd_gc_entry, c, argv);
	if (optind < argc)
		return cli_usage(&cmd_gc_entry, "unexpected argument '%s'", argv[optind]);
	if (core_gc(cli->core, &res, &e) < 0)
		return cli_error(&e);
	cli_printf(stdout, "removed %d leftover%s, dropped %d record%s\n", res.removed_backend,
	    res.removed_backend == 1 ? "" : "s", res.dropped_records,
	    res.dropped_records == 1 ? "" : "s");
	return 0;
}
