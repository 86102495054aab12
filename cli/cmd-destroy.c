/* sbxtop destroy: stop sandboxes and remove everything they had. */
#include <getopt.h>
#include <stdio.h>

#include "cli/cli.h"

static int cmd_destroy(struct cli *cli, int argc, char **argv);

const struct cmd_entry cmd_destroy_entry = {
	"destroy", "ID...", "stop sandboxes and remove everything they had",
	"  Each ID is an id, a unique prefix of one, or a name.  Every sandbox is\n"
	"  tried; the exit status is that of the worst failure.\n",
	cmd_destroy,
};

static int
cmd_destroy(struct cli *cli, int argc, char **argv)
{
	static const struct option lo[] = { { NULL, 0, NULL, 0 } };
	struct sbx_err e;
	int c, rc = 0;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", lo, NULL)) != -1)
		return cli_bad_option(&cmd_destroy_entry, c, argv);
	if (optind >= argc)
		return cli_usage(&cmd_destroy_entry, "expected at least one sandbox");
	for (int i = optind; i < argc; i++) {
		int r = core_destroy(cli->core, argv[i], NULL, &e);
		if (r < 0) {
			r = cli_error(&e);
			if (r > rc)
				rc = r;
		}
	}
	return rc;
}
