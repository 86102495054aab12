/* sbxtop resume: thaw suspended sandboxes. */
#include "cli/cli.h"

static int cmd_resume(struct cli *cli, int argc, char **argv);

const struct cmd_entry cmd_resume_entry = {
	"resume", "ID...", "thaw suspended sandboxes",
	"  Each ID is an id, a unique prefix of one, or a name.  Every sandbox is\n"
	"  tried; the exit status is that of the worst failure.\n",
	cmd_resume,
	.words = "sandbox...",
};

static int
cmd_resume(struct cli *cli, int argc, char **argv)
{
	return cli_each_sandbox(&cmd_resume_entry, cli, argc, argv, core_resume,
	    "resume");
}
