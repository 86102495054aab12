/* sbxtop exec: run a command in a sandbox, its output streamed live, and exit
 * with its status. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "lib/b64.h"
#include "lib/buf.h"
#include "core/client/client.h"
#include "core/core-watch.h"
#include "core/client/pty-term.h"
#include "lib/util.h"

#define STDIN_MAX	(16u << 20)
#define TIMEOUT_MAX	86400
#define STDIN_CHUNK	(4u << 20)	/* base64 of it fits a protocol line */

static int cmd_exec(struct cli *cli, int argc, char **argv);

static const struct option options[] = {
	{ "interactive", no_argument, NULL, 'i' },
	{ "tty", no_argument, NULL, 't' },
	{ "env", required_argument, NULL, 'e' },
	{ "workdir", required_argument, NULL, 'w' },
	{ "cwd", required_argument, NULL, 'w' },
	{ "timeout", required_argument, NULL, 'T' },
	{ "root", no_argument, NULL, 'r' },
	{ "detach", no_argument, NULL, 'd' },
	{ "background", no_argument, NULL, 'd' },
	{ "no-stdin", no_argument, NULL, 'n' },
	{ NULL, 0, NULL, 0 },
};

const struct cmd_entry cmd_exec_entry = {
	"exec",
	"[-i] [-t] [-e K=V]... [-w DIR] [--timeout S] [--root] [-d] [-n] ID [--] [CMD [ARG...]]",
	"run a command in a sandbox",
	"  -i, --interactive  pass standard input even when it is a terminal (until ^D);\n"
	"                     with -t, type into the command\n"
	"  -t, --tty          run it on a terminal (a PTY in the sandbox): raw mode, the\n"
	"                     window's size followed; with no CMD, a login shell\n"
	"  -e, --env K=V      environment variable for the command (repeatable)\n"
	"  -w, --workdir DIR  working directory (default /workspace; --cwd too)\n"
	"  --timeout S        stop the command after S seconds, 1 to 86400 (default 600)\n"
	"  --root             run as the sandbox's root instead of its user\n"
	"  -d, --detach       start it in the background and print its exec id, pid and\n"
	"                     log file (--background too)\n"
	"  -n, --no-stdin     do not pass standard input to the command\n"
	"\n"
	"Options go before CMD, before or after ID; `--` ends them when CMD starts\n"
	"with a '-'.  One CMD argument is a shell command line (`sbxtop exec ID 'make\n"
	"&& ls'`); several are quoted word by word.  Output is streamed as it comes;\n"
	"standard input is passed when it is not a terminal (at most 16 MiB), or with\n"
	"-i.  The exit status is the command's, or 128+N when signal N killed it; one\n"
	"the kernel's OOM killer ended at the memory limit is named on stderr (\"oom:\n"
	"...\", status 137).  sbxtop's own failures exit 125 (a bad option, an unknown\n"
	"sandbox, no core server), 126 when the command cannot be started there (its\n"
	"working directory does not exist), 127 when it is not found, as docker exec.\n",
	cmd_exec,
	.options = options,
	.shortopts = "ite:w:dn",
	.words = "sandbox",
};

/* Quote a word for sh unless it needs none. */
static void
shell_quote(struct buf *b, const char *w)
{
	static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789_@%+=:,./-";

	if (w[0] != '\0' && strspn(w, safe) == strlen(w)) {
		buf_printf(b, "%s", w);
		return;
	}
	buf_append(b, "'", 1);
	for (const char *p = w; *p; p++) {
		if (*p == '\'')
			buf_append(b, "'\\''", 4);
		else
			buf_append(b, p, 1);
	}
	buf_append(b, "'", 1);
}

static int
output(int stream, const char *data, size_t len, void *arg)
{
	return write_all(stream == 2 ? 2 : 1, data, len);
}

/* All of standard input into *out, when it is not a terminal or tty_too (*out
 * NULL when there is none to pass); -1 with e. */
static int
read_stdin(char **out, size_t *len, int tty_too, struct sbx_err *e)
{
	struct buf b;
	char chunk[65536];

	*out = NULL;
	*len = 0;
	if ((isatty(0) && !tty_too) || fcntl(0, F_GETFD) < 0)
		return 0;
	buf_init(&b, STDIN_MAX);
	for (;;) {
		ssize_t n = read(0, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			if (errno == EISDIR)	/* stdin a directory: nothing to pass */
				break;
			buf_free(&b);
			return sbx_error_errno(e, SBX_EIO, NULL, "cannot read standard input");
		}
		if (n == 0)
			break;
		if (buf_append(&b, chunk, (size_t)n) < 0) {
			buf_free(&b);
			return sbx_error(e, SBX_EINVAL, "copy it in with `sbxtop cp` and redirect "
			    "from the file, or use -n", "standard input is over %u MiB",
			    STDIN_MAX >> 20);
		}
	}
	*len = b.len;
	*out = b.data ? buf_steal(&b) : xstrdup("");
	return 0;
}

/* core_exec in the core server: standard input first (sbxtop/exec_stdin, in
 * pieces), then sbxtop/exec, whose output the connection writes to our
 * standard output and error as it comes (cli_remote). */
static int
exec_remote(struct client *c, const char *key, const struct core_exec_opts *o,
    struct core_exec_result *res, struct sbx_err *e)
{
	cJSON *p, *r = NULL;
	const char *lp;
	int rc;

	for (size_t off = 0; o->stdin_data != NULL && off < o->stdin_len; off += STDIN_CHUNK) {
		size_t k = o->stdin_len - off < STDIN_CHUNK ? o->stdin_len - off : STDIN_CHUNK;
		char *b = b64_encode(o->stdin_data + off, k);
		p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "data", b);
		free(b);
		rc = cli_call(c, "sbxtop/exec_stdin", p, NULL, e);
		cJSON_Delete(p);
		if (rc < 0)
			return -1;
	}
	p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "sandbox", key);
	cJSON_AddStringToObject(p, "command", o->command);
	if (o->cwd)
		cJSON_AddStringToObject(p, "cwd", o->cwd);
	if (o->env)
		cJSON_AddItemToObject(p, "env", cJSON_Duplicate(o->env, 1));
	if (o->timeout_s > 0)
		cJSON_AddNumberToObject(p, "timeout_s", (double)o->timeout_s);
	cJSON_AddBoolToObject(p, "as_root", o->as_root);
	cJSON_AddBoolToObject(p, "background", o->background);
	cJSON_AddBoolToObject(p, "stdin", o->stdin_data != NULL);
	rc = cli_call(c, "sbxtop/exec", p, &r, e);
	cJSON_Delete(p);
	if (rc < 0)
		return -1;
	memset(res, 0, sizeof *res);
	res->exit_code = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(r, "exit_code"));
	res->signo = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(r, "signal"));
	res->timed_out = cJSON_IsTrue(cJSON_GetObjectItem(r, "timed_out"));
	res->truncated = cJSON_IsTrue(cJSON_GetObjectItem(r, "truncated"));
	res->oom = strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(r, "reason")) ?: "", "oom") == 0;
	res->duration_ms = (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(r, "duration_ms"));
	snprintf(res->exec_id, sizeof res->exec_id, "%s",
	    cJSON_GetStringValue(cJSON_GetObjectItem(r, "exec_id")) ?: "");
	res->pid = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(r, "pid"));
	if ((lp = cJSON_GetStringValue(cJSON_GetObjectItem(r, "log_path"))) != NULL)
		res->log_path = xstrdup(lp);
	cJSON_Delete(r);
	return 0;
}

int
cli_pty(struct cli *cli, const char *key, const char *command, int input)
{
	struct client *cl = NULL;
	struct sbx_err e;
	int cols, rows, fd, st;

	pty_term_size(&cols, &rows);
	if (cli_remote(cli, &cl)) {
		client_close(cl);
		fd = client_pty_open(key, cols, rows, command, &e);
	} else {
		fd = core_pty_open(cli->core, key, cols, rows, command, "human", &e);
	}
	if (fd < 0)
		return cli_error_exec(&e);
	st = pty_term_relay(fd, input);
	close(fd);
	if (st < 0) {
		cli_printf(stderr, "sbxtop: the terminal's connection ended before the command's "
		    "exit status came (run `sbxtop status %s`)\n", key);
		return CLI_EXIT_TOOL;
	}
	return st;
}

/* The shell line a PTY runs for exec -t: the agent's PTY takes a command and
 * nothing else, so the working directory and environment are said in it
 * (cd, export), then the command, or a login shell in place of this one. */
static int
tty_command(struct buf *out, const char *cmd, const char *cwd, const cJSON *env,
    struct sbx_err *e)
{
	const cJSON *it;

	if (cwd != NULL) {
		buf_printf(out, "cd -- ");
		shell_quote(out, cwd);
		buf_printf(out, " || exit %d; ", CLI_EXIT_CANNOT_RUN);
	}
	cJSON_ArrayForEach(it, env) {
		const char *k = it->string;
		if (!(isalpha((unsigned char)k[0]) || k[0] == '_') ||
		    strspn(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") !=
		    strlen(k))
			return sbx_error(e, SBX_EINVAL, "leave out -t to pass any other name",
			    "-e: '%s' is not a shell variable name (letters, digits and '_')", k);
		buf_printf(out, "export %s=", k);
		shell_quote(out, cJSON_GetStringValue(it));
		buf_printf(out, "; ");
	}
	if (cmd != NULL)
		buf_printf(out, "%s", cmd);
	else
		buf_printf(out, "command -v bash >/dev/null && exec bash -l; exec sh -l");
	return 0;
}

/* getopt_long over argv from *at, stopping at the first word that is no
 * option (and after `--`): the options before ID, then those after it. */
static int
exec_opts(char **argv, int argc, int *at, struct core_exec_opts *o, cJSON **env,
    int *flags)
{
	char *end, spec[32];
	int c;

	snprintf(spec, sizeof spec, "+:%s", cmd_exec_entry.shortopts);
	optind = *at;
	opterr = 0;
	while ((c = getopt_long(argc, argv, spec, options, NULL)) != -1) {
		struct sbx_err e;
		switch (c) {
		case 'i':
			*flags |= 1;
			break;
		case 't':
			*flags |= 2;
			break;
		case 'n':
			*flags |= 4;
			break;
		case 'w':
			o->cwd = optarg;
			break;
		case 'e':
			if (cli_env_add(env, optarg, &e) < 0) {
				cli_error(&e);
				return -1;
			}
			break;
		case 'T':
			errno = 0;
			o->timeout_s = strtoll(optarg, &end, 10);
			if (optarg[0] < '0' || optarg[0] > '9' || *end != '\0' || errno != 0 ||
			    o->timeout_s < 1 || o->timeout_s > TIMEOUT_MAX) {
				cli_printf(stderr, "sbxtop: --timeout: '%s' is not valid: expected a whole "
				    "number from 1 to %d seconds\n", optarg, TIMEOUT_MAX);
				return -1;
			}
			break;
		case 'r':
			o->as_root = 1;
			break;
		case 'd':
			o->background = 1;
			break;
		default:
			cli_bad_option(&cmd_exec_entry, c, argv);
			return -1;
		}
	}
	*at = optind;
	return 0;
}

/* The words of `exec`: the options before ID, then (when the next word is
 * one) after it, `exec -it ID bash` as docker has it, `exec ID --cwd / -- pwd`
 * too; the command (one word as it is, several quoted for the shell) into
 * cmd.  The sandbox, or NULL after saying what is wrong. */
static const char *
exec_args(int argc, char **argv, struct core_exec_opts *o, cJSON **env, int *flags,
    struct buf *cmd)
{
	const char *id;
	int at = 0;

	if (exec_opts(argv, argc, &at, o, env, flags) < 0)
		return NULL;
	if (at >= argc) {
		cli_usage(&cmd_exec_entry, "expected a sandbox");
		return NULL;
	}
	id = argv[at++];
	if (at < argc && argv[at][0] == '-') {
		/* getopt starts over on a vector whose first word it skips. */
		argv[at - 1] = (char *)"exec";
		at--;
		if (exec_opts(argv + at, argc - at, &(int){ 0 }, o, env, flags) < 0)
			return NULL;
		at += optind;
	}
	if (at < argc - 1 || (at == argc - 1 && argv[at][0] != '\0')) {
		if (argc - at == 1) {
			buf_printf(cmd, "%s", argv[at]);
		} else {
			for (int i = at; i < argc; i++) {
				if (i > at)
					buf_append(cmd, " ", 1);
				shell_quote(cmd, argv[i]);
			}
		}
	} else if (at < argc || !(*flags & 2)) {
		cli_usage(&cmd_exec_entry, at < argc ? "the command is empty" :
		    "expected a command after the sandbox (or -t for a shell)");
		return NULL;
	}
	if ((*flags & 5) == 5 || ((*flags & 2) && o->background)) {
		cli_usage(&cmd_exec_entry, "%s", (*flags & 5) == 5 ? "-i and -n say opposite "
		    "things: give one" : "-d runs it in the background, where no terminal "
		    "is: leave out -t or -d");
		return NULL;
	}
	return id;
}

/* -t: the command (a shell when none) on a terminal of the sandbox's. */
static int
exec_tty(struct cli *cli, const char *id, const struct core_exec_opts *o, const char *cmd,
    int flags)
{
	struct buf line;
	struct sbx_err e;
	int rc;

	if (o->as_root) {
		cli_printf(stderr, "sbxtop: --root with -t is not available yet: run `sbxtop "
		    "exec --root %s CMD` without -t, or sudo inside the shell\n", id);
		return CLI_EXIT_TOOL;
	}
	if (o->timeout_s > 0)
		cli_printf(stderr, "sbxtop: --timeout does not apply to -t: the terminal's "
		    "command runs until it exits\n");
	buf_init(&line, 2u << 20);
	if (tty_command(&line, cmd, o->cwd, o->env, &e) < 0)
		rc = cli_error_exec(&e);
	else
		rc = cli_pty(cli, id, line.data, (flags & 1) != 0);
	buf_free(&line);
	return rc;
}

/* How the command ended, said as the exit status (core_exec_status), with
 * what cut it short on standard error. */
static int
exec_status(const struct core_exec_result *res)
{
	if (res->timed_out)
		cli_printf(stderr, "sbxtop: the command timed out and was stopped\n");
	if (res->oom)
		cli_printf(stderr, "sbxtop: oom: the kernel's OOM killer ended the command at the "
		    "sandbox's memory limit (raise it with create --memory)\n");
	if (res->truncated)
		cli_printf(stderr, "sbxtop: some output was dropped (over the agent's limit)\n");
	return res->signo > 0 ? 128 + res->signo : res->exit_code;
}

static int
cmd_exec(struct cli *cli, int argc, char **argv)
{
	struct core_exec_opts o = { .origin = "cli" };
	struct core_exec_result res;
	struct client *cl = NULL;
	int remote;
	cJSON *env = NULL;
	struct buf cmd;
	struct sbx_err e;
	_cleanup_free_ char *in = NULL;
	const char *id;
	int rc = CLI_EXIT_TOOL, flags = 0;

	buf_init(&cmd, 1u << 20);
	if ((id = exec_args(argc, argv, &o, &env, &flags, &cmd)) == NULL)
		goto out;
	o.env = env;
	if (flags & 2) {
		rc = exec_tty(cli, id, &o, cmd.data, flags);
		goto out;
	}
	o.command = cmd.data;
	/* Where it runs is settled first: running here may mean execing the full
	 * binary, which must find standard input unread. */
	remote = cli_remote(cli, &cl);
	if (!(flags & 4) && !o.background) {
		if (read_stdin(&in, &o.stdin_len, (flags & 1) != 0, &e) < 0) {
			rc = cli_error_exec(&e);
			if (cl != NULL)
				client_close(cl);
			goto out;
		}
		o.stdin_data = in;
	}
	if (remote) {
		rc = exec_remote(cl, id, &o, &res, &e);
		client_close(cl);
	} else {
		rc = core_exec(cli->core, id, &o, output, NULL, &res, &e);
	}
	if (rc < 0) {
		rc = cli_error_exec(&e);
		goto out;
	}
	if (o.background) {
		cli_printf(stdout, "%s pid %d log %s\n", res.exec_id, res.pid,
		    res.log_path ? res.log_path : "-");
		free(res.log_path);
		rc = 0;
		goto out;
	}
	rc = exec_status(&res);
out:
	cJSON_Delete(env);
	buf_free(&cmd);
	return rc;
}
