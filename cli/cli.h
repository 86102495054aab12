/* The admin commands: one file per command (cli/cmd-<name>.c), each exporting a
 * struct cmd_entry listed in cmd_table (cli/cmd.c), as tmux does.  Commands call
 * core/ only: the core server through core/client/client.h (cli_remote), or with
 * --standalone the core in this process. */
#ifndef SBX_CLI_H
#define SBX_CLI_H

#include <stdarg.h>
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
/* What a global option (given before the command) is: 0 a flag, 1 one that
 * takes the next word, 2 one with its value after '=', -1 none. */
int cli_global_option(const char *arg);
/* The global options' long names (without "--") into names, value[i] set when
 * one takes a value; returns how many. */
size_t cli_globals(const char **names, int *value, size_t max);

struct client;

struct option;

struct cmd_entry {
	const char	*name;
	const char	*usage;		/* arguments after the name */
	const char	*summary;	/* one line */
	const char	*help;		/* option lines, or NULL */
	int		(*run)(struct cli *cli, int argc, char **argv);
	/* Its options, as getopt_long takes them (NULL-terminated; NULL: none),
	 * and its short letters (getopt's optstring, after "+:" or ":"); the
	 * parser, "did you mean" and completion read the same table.  create
	 * makes its table from the configuration's, through options_fn. */
	const struct option *options;
	const struct option *(*options_fn)(void);
	const char	*shortopts;
	/* What its words are, for completion: positions separated by spaces,
	 * each a '|' list of literal words and kinds (cli/complete.c: sandbox,
	 * host, file, ...), "..." after the last when it repeats.  "sandbox",
	 * "add|ls|check|rm host", "sandbox:path|file sandbox:path|file". */
	const char	*words;
	/* Its option lines made by a function instead of help (create's, from
	 * the create's option table). */
	const char	*(*help_fn)(void);
};

/* Every command, NULL-terminated. */
extern const struct cmd_entry *const cmd_table[];
const struct cmd_entry *cmd_find(const char *name);
/* cmd's options table (never NULL: an empty one when it has none). */
const struct option *cmd_options(const struct cmd_entry *cmd);
/* The word of cands (n of them) nearest to word, when one is near enough
 * to be what was meant (a typo: a few letters off, or a unique prefix);
 * NULL otherwise. */
const char *cli_nearest(const char *word, const char *const *cands, size_t n);

/* Print "sbxtop: MESSAGE (HINT)" on stderr and return the exit status for e. */
int cli_error(const struct sbx_err *e);
/* s with every control character escaped (utf8_escape_controls) in buf, for
 * text a sandbox or an agent wrote that goes to a terminal; NULL for NULL.
 * The one escape of the commands' output: cli_printf and cli_print_json are
 * built on it (and diff's lines on utf8_escape_controls, which it wraps), and a command prints what a sandbox, an agent, an MCP client or
 * a remote host could have written through one of the three, never with
 * printf.  Exec output alone is raw, as ssh's is. */
const char *cli_safe(const char *s, char *buf, size_t len);
/* printf to f, every %s (and %c) argument through cli_safe: a name, a host, a
 * reason cannot move the cursor, set the title or the clipboard, or start a
 * line of its own.  The format itself is the caller's (its newlines stay). */
void cli_printf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_vprintf(FILE *f, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* o as JSON (cJSON_Print, or on one line) and a newline to f, with DEL, C1 controls and bytes
 * that are not UTF-8 in its strings written as \u escapes (cJSON writes them
 * raw): the same JSON to a reader, nothing a terminal acts on. */
void cli_print_json(FILE *f, const cJSON *o, int pretty);
/* Print a usage error for cmd and return 2. */
int cli_usage(const struct cmd_entry *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A usage error for what getopt_long returned ('?' or ':'), naming the option
 * that was bad (a short one by its letter, in a bundle too: -it), with the
 * nearest of cmd's options when there is one; returns 2. */
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

/* Print o as JSON on standard output: indented for a terminal, one compact
 * line for a pipe or a file (what jq and scripts read). */
void cli_json_print(const cJSON *o);

/* The exit statuses of the commands that pass a command's own on (exec,
 * shell), as docker's and podman's: sbxtop itself failed, the command could
 * not be started, it was not found. */
#define CLI_EXIT_TOOL		125
#define CLI_EXIT_CANNOT_RUN	126
#define CLI_EXIT_NOT_FOUND	127
/* cli_error for such a command: e printed, CLI_EXIT_CANNOT_RUN when the
 * sandbox could not start the command (its working directory is missing or
 * not a directory), CLI_EXIT_TOOL for everything else. */
int cli_error_exec(const struct sbx_err *e);

/* A terminal on a PTY in sandbox key (cmd-exec.c): command (NULL: a login
 * shell) on this terminal, standard input typed into it when input is set;
 * returns its exit status, or cli_error_exec's for sbxtop's own failure. */
int cli_pty(struct cli *cli, const char *key, const char *command, int input);

/* Parse K=V into the object env (created when NULL); -1 with e. */
int cli_env_add(cJSON **env, const char *kv, struct sbx_err *e);

#endif
