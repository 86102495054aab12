/* sbxtop: the admin commands (and, later, the operator console and the MCP
 * server).  Until the core server exists, each command runs the core in its own
 * process. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/log.h"
#include "core/util.h"

static int
wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return 1;
	return 0;
}

static void
apply_log_level(const struct config *cfg)
{
	static const char *const names[] = { "error", "warn", "info", "debug" };
	const char *l = config_str(cfg, "log_level");

	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (strcmp(l, names[i]) == 0)
			log_set_level((enum log_level)i);
}

/* `sbxtop` alone: the console is not built yet, so say what there is. */
static int
short_status(struct cli *cli)
{
	struct sandbox **v;
	size_t n, running = 0;
	struct sbx_err e;

	if (core_list(cli->core, &v, &n, &e) < 0)
		return cli_error(&e);
	for (size_t i = 0; i < n; i++)
		running += v[i]->state == SBX_RUNNING;
	printf("sbxtop %s: %zu sandbox%s, %zu running\n", SBX_VERSION, n, n == 1 ? "" : "es",
	    running);
	for (size_t i = 0; i < n; i++)
		printf("  %-12s %-16s %s\n", v[i]->id, v[i]->name ? v[i]->name : "-",
		    sbx_state_name(v[i]->state));
	if (n == 0)
		printf("Create one with `sbxtop create`.\n");
	printf("The operator console is not built yet: `sbxtop ls`, `sbxtop status ID` and "
	    "`sbxtop logs ID -f` show what there is; `sbxtop --help` lists the commands.\n");
	core_list_free(v, n);
	return 0;
}

int
main(int argc, char **argv)
{
	const struct cmd_entry *cmd;
	struct sbx_err e;
	struct config *cfg;
	struct cli cli;
	const char *level = NULL;
	int i, rc;

	/* Output to a closed pipe is an error to report, not a reason to die. */
	signal(SIGPIPE, SIG_IGN);
	log_open("sbxtop", NULL);

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "-V") == 0) {
			printf("sbxtop %s\n", SBX_VERSION);
			return 0;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			cli_main_help(stdout);
			return 0;
		} else if (strcmp(argv[i], "--log-level") == 0 && i + 1 < argc) {
			level = argv[++i];
		} else if (strncmp(argv[i], "--log-level=", 12) == 0) {
			level = argv[i] + 12;
		} else {
			fprintf(stderr, "sbxtop: unknown option '%s'\n", argv[i]);
			cli_main_help(stderr);
			return 2;
		}
	}
	cmd = i < argc ? cmd_find(argv[i]) : NULL;
	if (i < argc && cmd == NULL) {
		fprintf(stderr, "sbxtop: unknown command '%s' (run `sbxtop --help`)\n", argv[i]);
		return 2;
	}
	if (cmd != NULL && wants_help(argc - i, argv + i)) {
		cli_help(cmd, stdout);
		return 0;
	}

	cfg = config_new();
	if (config_load(cfg, &e) < 0 ||
	    (level != NULL && config_set(cfg, "log_level", level, CONFIG_FLAG, &e) < 0)) {
		config_free(cfg);
		return cli_error(&e);
	}
	apply_log_level(cfg);
	cli.cfg = cfg;
	cli.core = core_new(cfg);
	rc = cmd != NULL ? cmd->run(&cli, argc - i, argv + i) : short_status(&cli);
	core_free(cli.core);
	if (fflush(stdout) != 0 && rc == 0)
		rc = 1;
	return rc;
}
