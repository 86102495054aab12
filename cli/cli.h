/* The admin commands: one file per command (cli/cmd-<name>.c), each exporting a
 * struct cmd_entry listed in cmd_table (cli/cmd.c), as tmux does.  Commands call
 * core/ only. */
#ifndef SBX_CLI_H
#define SBX_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "core/config.h"
#include "core/core.h"
#include "core/err.h"

struct cli {
	struct core	*core;
	struct config	*cfg;		/* the core's, for flags that set options */
	int		 standalone;	/* --standalone: no core server, the core here */
};

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
/* Print a usage error for cmd and return 2. */
int cli_usage(const struct cmd_entry *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A usage error for what getopt_long returned ('?' or ':'); returns 2. */
int cli_bad_option(const struct cmd_entry *cmd, int c, char **argv);
/* The body of a command that takes only sandbox keys (suspend, resume, destroy):
 * run fn on each, report each failure, and return the worst exit status. */
typedef int (*cli_sandbox_fn)(struct core *c, const char *key, struct sbx_err *e);
int cli_each_sandbox(const struct cmd_entry *cmd, struct cli *cli, int argc, char **argv,
    cli_sandbox_fn fn);
/* The full help of a command, to f. */
void cli_help(const struct cmd_entry *cmd, FILE *f);
/* The whole program's help, to f. */
void cli_main_help(FILE *f);

/* "3h41m", "5m03s", "12s" for a span in seconds (negative: "-"). */
void cli_span(int64_t s, char *buf, size_t len);
/* Parse K=V into the object env (created when NULL); -1 with e. */
int cli_env_add(cJSON **env, const char *kv, struct sbx_err *e);

#endif
