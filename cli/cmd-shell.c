/* sbxtop shell: a login shell in a sandbox on this terminal, as the console's
 * `s` opens one (exec -it ID without a command). */
#include <getopt.h>
#include <stdio.h>
#include <unistd.h>

#include "cli/cli.h"

static int cmd_shell(struct cli *cli, int argc, char **argv);

static const struct option options[] = { { NULL, 0, NULL, 0 } };

const struct cmd_entry cmd_shell_entry = {
	"shell", "ID",
	"open a login shell in a sandbox on this terminal",
	"  ID       an id, a unique prefix of one, or a name\n"
	"  The same as `sbxtop exec -it ID`: the shell runs on a PTY in the sandbox,\n"
	"  this terminal in raw mode meanwhile, its size followed; the exit status is\n"
	"  the shell's (125 when sbxtop itself failed).\n",
	cmd_shell,
	.options = options,
	.words = "sandbox",
};

static int
cmd_shell(struct cli *cli, int argc, char **argv)
{
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:", options, NULL)) != -1) {
		cli_bad_option(&cmd_shell_entry, c, argv);
		return CLI_EXIT_TOOL;
	}
	if (argc - optind != 1) {
		cli_usage(&cmd_shell_entry, "expected one sandbox");
		return CLI_EXIT_TOOL;
	}
	if (!isatty(0)) {
		fprintf(stderr, "sbxtop: shell needs a terminal on standard input (for a "
		    "command from a script: sbxtop exec %s CMD)\n", argv[optind]);
		return CLI_EXIT_TOOL;
	}
	return cli_pty(cli, argv[optind], NULL, 1);
}
