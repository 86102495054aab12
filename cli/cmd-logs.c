/* sbxtop logs: a sandbox's agent log (or console log), optionally followed. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/client/client.h"
#include "lib/util.h"

static int cmd_logs(struct cli *cli, int argc, char **argv);

static const struct option options[] = {
	{ "follow", no_argument, NULL, 'f' },
	{ "console", no_argument, NULL, 'c' },
	{ NULL, 0, NULL, 0 },
};

const struct cmd_entry cmd_logs_entry = {
	"logs", "ID [-f] [--console]", "show a sandbox's log",
	"  -f, --follow  keep printing what is appended until the sandbox stops\n"
	"  --console     the console log (what the sandbox's init printed) instead of\n"
	"                the agent's log\n",
	cmd_logs,
	.options = options,
	.shortopts = "f",
	.words = "sandbox",
};

static volatile int stop;

static void
on_signal(int sig)
{
	stop = 1;
}

struct log_follow {
	struct client	*c;
	const char	*key, *which;
};

/* The log's path from the core server, which brings a copy kept from a remote
 * host up to date when asked; NULL with e set. */
static char *
log_path(const struct log_follow *f, struct sbx_err *e)
{
	cJSON *p = cJSON_CreateObject(), *r = NULL;
	char *path = NULL;
	int rc;

	cJSON_AddStringToObject(p, "sandbox", f->key);
	cJSON_AddStringToObject(p, "which", f->which);
	rc = cli_call(f->c, "sbxtop/log_path", p, &r, e);
	cJSON_Delete(p);
	if (rc == 0)
		path = xstrdup(cJSON_GetStringValue(cJSON_GetObjectItem(r, "path")) ?: "");
	cJSON_Delete(r);
	return path;
}

static void
log_refresh(void *arg)
{
	struct sbx_err e;

	free(log_path(arg, &e));
}

/* 1 when the sandbox is gone (terminated, in error, or unknown), as the core
 * server sees it after reconciling it with its backend. */
static int
log_writer_gone(void *arg)
{
	struct log_follow *f = arg;
	cJSON *p = cJSON_CreateObject(), *r = NULL;
	struct sbx_err e;
	const char *st;
	int gone;

	cJSON_AddStringToObject(p, "sandbox", f->key);
	if (cli_call(f->c, "sbxtop/status", p, &r, &e) < 0) {
		cJSON_Delete(p);
		return e.code == SBX_ENOTFOUND;
	}
	cJSON_Delete(p);
	st = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "sandbox"),
	    "state"));
	gone = st != NULL && (strcmp(st, "terminated") == 0 || strcmp(st, "error") == 0);
	cJSON_Delete(r);
	return gone;
}

/* core_logs with the core server: it names the log file (a host file), which
 * is read here as the core would read it. */
static int
logs_remote(struct client *c, const char *key, const char *which, int follow,
    struct sbx_err *e)
{
	struct log_follow f = { c, key, which };
	struct tail_ops ops = { log_refresh, log_writer_gone, &f };
	_cleanup_free_ char *path = log_path(&f, e);
	_cleanup_close_ int lfd = -1;
	char failed = 0;

	if (path == NULL)
		return -1;
	if ((lfd = sandbox_log_open(path, which, e)) < 0)
		return -1;
	if (tail_fd(lfd, 1, follow, &stop, &ops, &failed) < 0)
		return failed == 'r' ? sbx_error_errno(e, SBX_EIO, NULL, "cannot read %s", path) :
		    sbx_error_errno(e, SBX_EIO, NULL, "cannot write the log");
	return 0;
}

static int
cmd_logs(struct cli *cli, int argc, char **argv)
{
	struct sigaction sa;
	struct client *cl;
	struct sbx_err e;
	int c, follow = 0;
	const char *which = "agent";

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":f", options, NULL)) != -1) {
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
	if (cli_remote(cli, &cl)) {
		c = logs_remote(cl, argv[optind], which, follow, &e);
		client_close(cl);
	} else {
		c = core_logs(cli->core, argv[optind], which, follow, 1, &stop, &e);
	}
	return c < 0 ? cli_error(&e) : 0;
}
