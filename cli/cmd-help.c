/* sbxtop help: the list of commands, or one command's help. */
#include <stdio.h>

#include "cli/cli.h"

static int cmd_help(struct cli *cli, int argc, char **argv);

const struct cmd_entry cmd_help_entry = {
	"help", "[COMMAND]", "show the commands, or how to use one", NULL, cmd_help,
	.words = "command",
};

static int
cmd_help(struct cli *cli, int argc, char **argv)
{
	const struct cmd_entry *cmd;

	if (argc < 2) {
		cli_main_help(stdout);
		return 0;
	}
	if (argc > 2)
		return cli_usage(&cmd_help_entry, "expected at most one command");
	if ((cmd = cmd_find(argv[1])) == NULL) {
		cli_printf(stderr, "sbxtop: unknown command '%s' (run `sbxtop --help`)\n", argv[1]);
		return 2;
	}
	cli_help(cmd, stdout);
	return 0;
}
