/* sbxtop gc: remove what sandboxes that are no longer live left on the host,
 * found from what runs as well as from what is written. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static int cmd_gc(struct cli *cli, int argc, char **argv);

static const struct option options[] = {
	{ "dry-run", no_argument, NULL, 'n' }, { NULL, 0, NULL, 0 },
};

const struct cmd_entry cmd_gc_entry = {
	"gc", "[--dry-run]", "remove what dead and unrecorded sandboxes left behind",
	"  Each backend looks for what sandboxes of this state directory hold on the\n"
	"  host: agents (by their command line), cgroups, mounts and loop devices (by\n"
	"  the sandbox id in their names), VMs (by pid file and command line) and\n"
	"  directories.  What belongs to a sandbox the registry does not hold as\n"
	"  live is removed: a terminated sandbox's leftovers, and an orphan that no\n"
	"  record names at all (its create was killed before the record was\n"
	"  written).  A sandbox still being made is left alone.  Then records of\n"
	"  terminated sandboxes with nothing left are dropped.  Each thing found is\n"
	"  printed as ID KIND WHAT.\n"
	"  --dry-run   list what would be removed, remove nothing\n",
	cmd_gc,
	.options = options,
	.words = "",
};

/* How many sandboxes the items are of. */
static size_t
gc_ids(const struct core_gc_result *res)
{
	size_t n = 0;

	for (size_t i = 0; i < res->nitems; i++) {
		size_t k = 0;
		while (k < i && strcmp(res->items[k].id, res->items[i].id) != 0)
			k++;
		n += k == i;
	}
	return n;
}

static int
cmd_gc(struct cli *cli, int argc, char **argv)
{
	struct core_gc_result res;
	struct sbx_err e;
	char safe[1024];
	int c, dry = 0;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", options, NULL)) != -1) {
		if (c == 'n')
			dry = 1;
		else
			return cli_bad_option(&cmd_gc_entry, c, argv);
	}
	if (optind < argc)
		return cli_usage(&cmd_gc_entry, "unexpected argument '%s'", argv[optind]);
	if (core_gc(cli->core, dry, &res, &e) < 0)
		return cli_error(&e);
	for (size_t i = 0; i < res.nitems; i++)
		printf("%-14s %-10s %s%s\n", res.items[i].id, res.items[i].kind,
		    cli_safe(res.items[i].what, safe, sizeof safe),
		    res.items[i].orphan ? " (no record)" : "");
	if (dry)
		printf("would remove the leftovers of %zu sandbox%s (%d orphan%s no record "
		    "names), drop %d record%s\n", gc_ids(&res), gc_ids(&res) == 1 ? "" : "es",
		    res.orphans, res.orphans == 1 ? "" : "s", res.dropped_records,
		    res.dropped_records == 1 ? "" : "s");
	else
		printf("removed %d leftover%s, dropped %d record%s\n", res.removed_backend,
		    res.removed_backend == 1 ? "" : "s", res.dropped_records,
		    res.dropped_records == 1 ? "" : "s");
	core_gc_result_free(&res);
	return 0;
}
