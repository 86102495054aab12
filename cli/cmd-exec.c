/* sbxtop exec: run a command in a sandbox, its output streamed live, and exit
 * with its status. */
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
#include "core/client.h"
#include "lib/util.h"

#define STDIN_MAX	(16u << 20)
#define TIMEOUT_MAX	86400
#define STDIN_CHUNK	(4u << 20)	/* base64 of it fits a protocol line */

static int cmd_exec(struct cli *cli, int argc, char **argv);

const struct cmd_entry cmd_exec_entry = {
	"exec",
	"ID [--cwd D] [--env K=V]... [--timeout S] [--root] [--background] [-n] -- CMD [ARG...]",
	"run a command in a sandbox",
	"  --cwd D         working directory (default /workspace)\n"
	"  --env K=V       environment variable for the command (repeatable)\n"
	"  --timeout S     stop the command after S seconds, 1 to 86400 (default 600)\n"
	"  --root          run as the sandbox's root instead of its user\n"
	"  --background    start it and print its exec id, pid and log file\n"
	"  -n, --no-stdin  do not pass standard input to the command\n"
	"\n"
	"One CMD argument is a shell command line (`sbxtop exec ID -- 'make && ls'`);\n"
	"several are quoted word by word.  Output is streamed as it comes; the exit\n"
	"status is the command's, or 128+N when signal N killed it; one the kernel's\n"
	"OOM killer ended at the memory limit is named on stderr (\"oom: ...\", status\n"
	"137).  Standard input is passed to the command when it is not a terminal\n"
	"(UTF-8 text, at most 16 MiB).\n",
	cmd_exec,
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

/* All of standard input into *out, when it is not a terminal (*out NULL when
 * there is none to pass); -1 with e. */
static int
read_stdin(char **out, size_t *len, struct sbx_err *e)
{
	struct buf b;
	char chunk[65536];

	*out = NULL;
	*len = 0;
	if (isatty(0) || fcntl(0, F_GETFD) < 0)
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

static int
cmd_exec(struct cli *cli, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "cwd", required_argument, NULL, 'c' },
		{ "env", required_argument, NULL, 'e' },
		{ "timeout", required_argument, NULL, 't' },
		{ "root", no_argument, NULL, 'r' },
		{ "background", no_argument, NULL, 'b' },
		{ "no-stdin", no_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	struct core_exec_opts o = { .origin = "cli" };
	struct core_exec_result res;
	struct client *cl = NULL;
	int remote;
	cJSON *env = NULL;
	struct buf cmd;
	struct sbx_err e;
	_cleanup_free_ char *in = NULL;
	const char *id;
	int c, rc, no_stdin = 0;
	char *end;

	buf_init(&cmd, 1u << 20);
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":n", lo, NULL)) != -1) {
		switch (c) {
		case 'c':
			o.cwd = optarg;
			break;
		case 'e':
			if (cli_env_add(&env, optarg, &e) < 0) {
				rc = cli_error(&e);
				goto out;
			}
			break;
		case 't':
			errno = 0;
			o.timeout_s = strtoll(optarg, &end, 10);
			if (optarg[0] < '0' || optarg[0] > '9' || *end != '\0' || errno != 0 ||
			    o.timeout_s < 1 || o.timeout_s > TIMEOUT_MAX) {
				fprintf(stderr, "sbxtop: --timeout: '%s' is not valid: expected a whole "
				    "number from 1 to %d seconds\n", optarg, TIMEOUT_MAX);
				rc = 2;
				goto out;
			}
			break;
		case 'r':
			o.as_root = 1;
			break;
		case 'b':
			o.background = 1;
			break;
		case 'n':
			no_stdin = 1;
			break;
		default:
			rc = cli_bad_option(&cmd_exec_entry, c, argv);
			goto out;
		}
	}
	if (argc - optind < 2) {
		rc = cli_usage(&cmd_exec_entry, argc - optind < 1 ? "expected a sandbox" :
		    "expected a command after the sandbox");
		goto out;
	}
	id = argv[optind++];
	if (argc - optind == 1) {
		buf_printf(&cmd, "%s", argv[optind]);
	} else {
		for (int i = optind; i < argc; i++) {
			if (i > optind)
				buf_append(&cmd, " ", 1);
			shell_quote(&cmd, argv[i]);
		}
	}
	if (cmd.data == NULL || cmd.len == 0) {
		rc = cli_usage(&cmd_exec_entry, "the command is empty");
		goto out;
	}
	o.command = cmd.data;
	o.env = env;
	/* Where it runs is settled first: running here may mean execing the full
	 * binary, which must find standard input unread. */
	remote = cli_remote(cli, &cl);
	if (!no_stdin && !o.background) {
		if (read_stdin(&in, &o.stdin_len, &e) < 0) {
			rc = cli_error(&e);
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
		rc = cli_error(&e);
		goto out;
	}
	if (o.background) {
		printf("%s pid %d log %s\n", res.exec_id, res.pid,
		    res.log_path ? res.log_path : "-");
		free(res.log_path);
		rc = 0;
		goto out;
	}
	if (res.timed_out)
		fprintf(stderr, "sbxtop: the command timed out and was stopped\n");
	if (res.oom)
		fprintf(stderr, "sbxtop: oom: the kernel's OOM killer ended the command at the "
		    "sandbox's memory limit (raise it with create --memory)\n");
	if (res.truncated)
		fprintf(stderr, "sbxtop: some output was dropped (over the agent's limit)\n");
	rc = res.signo > 0 ? 128 + res.signo : res.exit_code;	/* core_exec_status */
out:
	cJSON_Delete(env);
	buf_free(&cmd);
	return rc;
}
