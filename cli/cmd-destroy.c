/* sbxtop destroy: stop sandboxes and remove everything they had. */
#include "cli/cli.h"

static int cmd_destroy(struct cli *cli, int argc, char **argv);

const struct cmd_entry cmd_destroy_entry = {
	"destroy", "ID...", "stop sandboxes and remove everything they had",
	"  Each ID is an id, a unique prefix of one, or a name.  Every sandbox is\n"
	"  tried; the exit status is that of the worst failure.\n",
	cmd_destroy,
	.words = "sandbox...",
};

static int
destroy_one(struct core *c, const char *key, struct sbx_err *e)
{
	return core_destroy(c, key, NULL, e);
}

static int
cmd_destroy(struct cli *cli, int argc, char **argv)
{
	return cli_each_sandbox(&cmd_destroy_entry, cli, argc, argv, destroy_one,
	    "destroy");
}
