/* The admin commands: one file per command (cli/cmd-<name>.c), each exporting a
 * struct cmd_entry listed in cmd_table (cli/cmd.c), as tmux does.  Commands call
 * core/ only: the core server through core/client.h (cli_remote), or with
 * --standalone the core in this process. */
#ifndef SBX_CLI_H
#define SBX_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "core/config.h"
#include "core/core.h"
#include "lib/err.h"

struct cli {
	struct core	*core;
	struct config	*cfg;		/* the core's, for flags that set options */
	int		 standalone;	/* --standalone: no core server, the core here */
	/* Why the configuration could not be read, for doctor (which runs on the
	 * defaults then); other commands stop at it. */
	const struct sbx_err *cfg_err;
	/* NULL, or called when a command is about to run the core in this
	 * process (cli_remote): the thin sbxtop execs the full one there. */
	void		(*run_here)(struct cli *cli);
};

/* The program: global options, then a command, the console or --mcp (main.c).
 * run_here as in struct cli. */
int cli_main(int argc, char **argv, void (*run_here)(struct cli *cli));

struct client;

struct cmd_entry {
	const char	*name;
	const char	*usage;		/* arguments after the name */
	const char	*summary;	/* one line */
	const char	*help;		/* option lines, or NULL */
	int		(*run)(struct cli *cli, int argc, char **argv);
};

/* Every command, NULL-terminated. */
extern const struct cmd_entry *const cmd_table[];
const struct cmd_entry *cmd_find(const char *name);

/* Print "sbxtop: MESSAGE (HINT)" on stderr and return the exit status for e. */
int cli_error(const struct sbx_err *e);
/* s with every control character escaped (utf8_escape_controls) in buf, for
 * text a sandbox or an agent wrote that goes to a terminal; NULL for NULL. */
const char *cli_safe(const char *s, char *buf, size_t len);
/* Print a usage error for cmd and return 2. */
int cli_usage(const struct cmd_entry *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A usage error for what getopt_long returned ('?' or ':'); returns 2. */
int cli_bad_option(const struct cmd_entry *cmd, int c, char **argv);
/* Whether a command asks the core server (1, *out the connection: close it with
 * client_close) or runs the core in this process (0): --standalone, a server
 * that runs with another configuration or environment (config_env_digest), or
 * none that can be reached or started.  The connection prints the log lines the
 * server sends back for a call as this process's own. */
int cli_remote(struct cli *cli, struct client **out);
/* Every known sandbox, reconciled (sbxtop/list, or core_list in this process);
 * free with core_list_free. */
int cli_list(struct cli *cli, struct sandbox ***out, size_t *n, int *orphans,
    struct sbx_err *e);
/* client_call with this process's log level, so the server sends back the log
 * lines of the call that this process would have printed. */
int cli_call(struct client *c, const char *method, cJSON *params, cJSON **result,
    struct sbx_err *e);
/* The body of a command that takes only sandbox keys (suspend, resume, destroy):
 * run fn on each (in this process) or method sbxtop/METHOD (in the core
 * server), report each failure, and return the worst exit status. */
typedef int (*cli_sandbox_fn)(struct core *c, const char *key, struct sbx_err *e);
int cli_each_sandbox(const struct cmd_entry *cmd, struct cli *cli, int argc, char **argv,
    cli_sandbox_fn fn, const char *method);
/* The full help of a command, to f. */
void cli_help(const struct cmd_entry *cmd, FILE *f);
/* The whole program's help, to f. */
void cli_main_help(FILE *f);

/* "3h41m", "5m03s", "12s" for a span in seconds (negative: "-"). */
void cli_span(int64_t s, char *buf, size_t len);
/* Parse K=V into the object env (created when NULL); -1 with e. */
int cli_env_add(cJSON **env, const char *kv, struct sbx_err *e);

#endif
