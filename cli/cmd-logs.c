/* sbxtop logs: a sandbox's agent log (or console log), optionally followed. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static int cmd_logs(struct cli *cli, int argc, char **argv);

const struct cmd_entry cmd_logs_entry = {
	"logs", "ID [-f] [--console]", "show a sandbox's log",
	"  -f, --follow  keep printing what is appended until the sandbox stops\n"
	"  --console     the console log (what the sandbox's init printed) instead of\n"
	"                the agent's log\n",
	cmd_logs,
};

static volatile int stop;

static void
on_signal(int sig)
{
	stop = 1;
}

static int
cmd_logs(struct cli *cli, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "follow", no_argument, NULL, 'f' },
		{ "console", no_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	struct sigaction sa;
	struct sbx_err e;
	int c, follow = 0;
	const char *which = "agent";

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":f", lo, NULL)) != -1) {
		if (c == 'f')
			follow = 1;
		else if (c == 'c')
			which = "console";
		else
			return cli_bad_option(&cmd_logs_entry, c, argv);
	}
	if (argc - optind != 1)
		return cli_usage(&cmd_logs_entry, "expected one sandbox");
	/* Ctrl-C ends a follow quietly, as tail -f's users expect. */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	fflush(stdout);
	if (core_logs(cli->core, argv[optind], which, follow, 1, &stop, &e) < 0)
		return cli_error(&e);
	return 0;
}
