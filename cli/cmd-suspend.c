/* sbxtop suspend: freeze sandboxes (every process stops; memory is kept). */
#include "cli/cli.h"

static int cmd_suspend(struct cli *cli, int argc, char **argv);

const struct cmd_entry cmd_suspend_entry = {
	"suspend", "ID...", "freeze sandboxes (every process stops; memory is kept)",
	"  Each ID is an id, a unique prefix of one, or a name.  Every sandbox is\n"
	"  tried; the exit status is that of the worst failure.\n",
	cmd_suspend,
	.words = "sandbox...",
};

static int
cmd_suspend(struct cli *cli, int argc, char **argv)
{
	return cli_each_sandbox(&cmd_suspend_entry, cli, argc, argv, core_suspend,
	    "suspend");
}
