/* sbxtop resume: thaw suspended sandboxes. */
#include <getopt.h>
#include <stdio.h>

#include "cli/cli.h"

static int cmd_resume(struct cli *cli, int argc, char **argv);

const struct cmd_entry cmd_resume_entry = {
	"resume", "ID...", "thaw suspended sandboxes",
	"  Each ID is an id, a unique prefix of one, or a name.  Every sandbox is\n"
	"  tried; the exit status is that of the worst failure.\n",
	cmd_resume,
};

static int
cmd_resume(struct cli *cli, int argc, char **argv)
{
	static const struct option lo[] = { { NULL, 0, NULL, 0 } };
	struct sbx_err e;
	int c, rc = 0;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", lo, NULL)) != -1)
		return cli_bad_option(&cmd_resume_entry, c, argv);
	if (optind >= argc)
		return cli_usage(&cmd_resume_entry, "expected at least one sandbox");
	for (int i = optind; i < argc; i++) {
		int r = core_resume(cli->core, argv[i], &e);
		if (r < 0) {
			r = cli_error(&e);
			if (r > rc)
				rc = r;
		}
	}
	return rc;
}
