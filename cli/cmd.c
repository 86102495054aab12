/* The command table and what the commands share: errors, usage and help. */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "core/util.h"

extern const struct cmd_entry cmd_create_entry, cmd_ls_entry, cmd_exec_entry,
    cmd_cp_entry, cmd_logs_entry, cmd_forward_entry, cmd_status_entry, cmd_suspend_entry,
    cmd_resume_entry, cmd_destroy_entry, cmd_doctor_entry, cmd_gc_entry,
    cmd_help_entry, cmd_image_entry, cmd_setup_entry, cmd_serve_entry,
    cmd_snapshot_entry, cmd_host_entry;

/* Adding a command: one file and one line here. */
const struct cmd_entry *const cmd_table[] = {
	&cmd_create_entry,
	&cmd_ls_entry,
	&cmd_exec_entry,
	&cmd_cp_entry,
	&cmd_logs_entry,
	&cmd_forward_entry,
	&cmd_status_entry,
	&cmd_suspend_entry,
	&cmd_resume_entry,
	&cmd_destroy_entry,
	&cmd_doctor_entry,
	&cmd_gc_entry,
	&cmd_image_entry,
	&cmd_snapshot_entry,
	&cmd_host_entry,
	&cmd_setup_entry,
	&cmd_serve_entry,
	&cmd_help_entry,
	NULL,
};

const struct cmd_entry *
cmd_find(const char *name)
{
	for (size_t i = 0; cmd_table[i] != NULL; i++)
		if (strcmp(cmd_table[i]->name, name) == 0)
			return cmd_table[i];
	return NULL;
}

int
cli_error(const struct sbx_err *e)
{
	if (e->hint[0] != '\0')
		fprintf(stderr, "sbxtop: %s (%s)\n", e->msg, e->hint);
	else
		fprintf(stderr, "sbxtop: %s\n", e->msg);
	return sbx_err_exit_status(e);
}

int
cli_usage(const struct cmd_entry *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "sbxtop %s: ", cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nusage: sbxtop %s %s\n(`sbxtop help %s` for more)\n", cmd->name,
	    cmd->usage, cmd->name);
	return 2;
}

int
cli_bad_option(const struct cmd_entry *cmd, int c, char **argv)
{
	if (c == ':')
		return cli_usage(cmd, "option '%s' needs a value", argv[optind - 1]);
	return cli_usage(cmd, "unknown option '%s'", argv[optind - 1]);
}

void
cli_help(const struct cmd_entry *cmd, FILE *f)
{
	fprintf(f, "usage: sbxtop %s %s\n\n%s\n", cmd->name, cmd->usage, cmd->summary);
	if (cmd->help != NULL)
		fprintf(f, "\n%s", cmd->help);
}

void
cli_main_help(FILE *f)
{
	fprintf(f, "usage: sbxtop [--standalone] [--log-level LEVEL] [--approve MODE] COMMAND "
	    "[ARGS...]\n"
	    "       sbxtop [--standalone] [--log FILE] --mcp\n"
	    "       sbxtop --help | --version\n\n"
	    "Disposable Linux sandboxes for AI coding agents.\n\ncommands:\n");
	for (size_t i = 0; cmd_table[i] != NULL; i++)
		fprintf(f, "  %-8s %s\n", cmd_table[i]->name, cmd_table[i]->summary);
	fprintf(f, "\n--mcp serves the Model Context Protocol on standard input and output\n"
	    "(for an agent's MCP configuration) through the core server, which starts\n"
	    "on demand (`sbxtop serve`); --standalone runs the core in this process\n"
	    "instead; --log FILE sends logs to FILE instead of standard error.\n");
	fprintf(f, "\n`sbxtop help COMMAND` or `sbxtop COMMAND --help` tells more; see also "
	    "sbxtop(1), sbxtop-mcp(7) and sbxtop.conf(5).\n");
}

void
cli_span(int64_t s, char *buf, size_t len)
{
	if (s < 0)
		snprintf(buf, len, "-");
	else if (s >= 86400)
		snprintf(buf, len, "%lldd%02lldh", (long long)(s / 86400),
		    (long long)(s % 86400 / 3600));
	else if (s >= 3600)
		snprintf(buf, len, "%lldh%02lldm", (long long)(s / 3600),
		    (long long)(s % 3600 / 60));
	else if (s >= 60)
		snprintf(buf, len, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
	else
		snprintf(buf, len, "%llds", (long long)s);
}

int
cli_env_add(cJSON **env, const char *kv, struct sbx_err *e)
{
	const char *eq = strchr(kv, '=');
	_cleanup_free_ char *k = NULL;

	if (eq == NULL || eq == kv)
		return sbx_error(e, SBX_EINVAL, NULL, "--env: '%s' is not valid: expected NAME=VALUE",
		    kv);
	k = xstrndup(kv, (size_t)(eq - kv));
	if (*env == NULL)
		*env = cJSON_CreateObject();
	cJSON_DeleteItemFromObjectCaseSensitive(*env, k);
	cJSON_AddStringToObject(*env, k, eq + 1);
	return 0;
}

int
cli_each_sandbox(const struct cmd_entry *cmd, struct cli *cli, int argc, char **argv,
    cli_sandbox_fn fn)
{
	static const struct option lo[] = { { NULL, 0, NULL, 0 } };
	struct sbx_err e;
	int c, rc = 0;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", lo, NULL)) != -1)
		return cli_bad_option(cmd, c, argv);
	if (optind >= argc)
		return cli_usage(cmd, "expected at least one sandbox");
	for (int i = optind; i < argc; i++) {
		if (fn(cli->core, argv[i], &e) < 0) {
			int r = cli_error(&e);
			if (r > rc)
				rc = r;
		}
	}
	return rc;
}
