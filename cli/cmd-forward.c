/* sbxtop forward: a server inside a sandbox on a local port.  A forward lives
 * in the core server (started on demand), so it outlasts this command; with
 * --foreground (or --standalone) it lives in this process instead.  --list and
 * --stop work from any process through the registry. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>

#include "cli/cli.h"
#include "core/client/client.h"
#include "lib/util.h"

static int cmd_forward(struct cli *cli, int argc, char **argv);

static const struct option options[] = {
	{ "bind", required_argument, NULL, 'b' },
	{ "foreground", no_argument, NULL, 'f' },
	{ "list", no_argument, NULL, 'l' },
	{ "stop", no_argument, NULL, 's' },
	{ "restore", no_argument, NULL, 'r' },
	{ "json", no_argument, NULL, 'j' },
	{ "http", no_argument, NULL, 'H' },
	{ NULL, 0, NULL, 0 },
};

const struct cmd_entry cmd_forward_entry = {
	"forward", "ID REMOTE[:LOCAL]... [--bind ADDR] [--http] [--foreground] | --list [ID] [--json] | "
	"--stop ID [REMOTE] | --restore [--foreground]",
	"forward local ports to ports inside a sandbox",
	"  REMOTE[:LOCAL]  a port inside the sandbox (on its 127.0.0.1), and the local\n"
	"                  port to listen on (0 or left out: a free one).  Prints\n"
	"                  http://ADDR:LOCAL for each forward, one per line\n"
	"  --bind ADDR     listen on ADDR rather than 127.0.0.1 (e.g. 0.0.0.0: every\n"
	"                  interface; anyone who can reach it reaches the sandbox)\n"
	"  --http          lambda sandboxes: send HTTP requests straight to the port\n"
	"                  through the AWS endpoint (X-aws-proxy-port; the server must\n"
	"                  listen on 0.0.0.0), not through the agent's tunnel\n"
	"  --foreground    run the forwards in this process until SIGINT or SIGTERM,\n"
	"                  until `sbxtop forward --stop` or until the sandbox is\n"
	"                  destroyed (without it they run in the core server, which\n"
	"                  starts on demand, and this command returns at once)\n"
	"  --list [ID]     the recorded forwards: local address, remote port, open and\n"
	"                  total connections, bytes each way, failures, age, owner\n"
	"  --json          with --list: a JSON array\n"
	"  --stop ID [REMOTE]  stop the sandbox's forwards (to REMOTE only), whichever\n"
	"                  process runs them, and drop their records\n"
	"  --restore       run again every recorded forward whose process is gone\n"
	"                  (after a crash or a reboot; a core server does it when it\n"
	"                  starts)\n",
	cmd_forward,
	.options = options,
	.words = "sandbox",
};

static volatile sig_atomic_t stop_flag;

static void
on_signal(int sig)
{
	stop_flag = sig;
}

/* A port number: 0..65535 (min says whether 0 is allowed); -1 when not one. */
static int
parse_port(const char *s, int min)
{
	char *end;
	long v;

	if (*s < '0' || *s > '9')
		return -1;
	v = strtol(s, &end, 10);
	if (*end != '\0' || v < min || v > 65535)
		return -1;
	return (int)v;
}

static void
human_bytes(uint64_t b, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "K", "M", "G", "T" };
	double v = (double)b;
	size_t u = 0;

	while (v >= 1024 && u + 1 < ARRAY_SIZE(unit)) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, u == 0 ? "%.0f%s" : "%.1f%s", v, unit[u]);
}

static void
url_of(const struct core_forward *f, char *buf, size_t len)
{
	const char *host = f->bind;

	if (strcmp(host, "0.0.0.0") == 0)
		host = "127.0.0.1";
	if (strchr(host, ':') != NULL)
		snprintf(buf, len, "http://[%s]:%d", strcmp(host, "::") == 0 ? "::1" : host,
		    f->local_port);
	else
		snprintf(buf, len, "http://%s:%d", host, f->local_port);
}

static int
do_list(struct cli *cli, const char *key, int json)
{
	struct core_forward *v;
	size_t n;
	struct sbx_err e;
	int64_t now = wall_ms();

	if (core_forward_list(cli->core, key, &v, &n, &e) < 0)
		return cli_error(&e);
	if (json) {
		cJSON *a = cJSON_CreateArray();
		for (size_t i = 0; i < n; i++) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "sandbox", v[i].sandbox);
			cJSON_AddStringToObject(o, "bind", v[i].bind);
			cJSON_AddNumberToObject(o, "local", v[i].local_port);
			cJSON_AddNumberToObject(o, "remote", v[i].remote_port);
			if (v[i].http)
				cJSON_AddStringToObject(o, "mode", "http");
			cJSON_AddNumberToObject(o, "pid", v[i].pid);
			cJSON_AddBoolToObject(o, "live", v[i].live);
			cJSON_AddNumberToObject(o, "since", (double)v[i].since_ms);
			cJSON_AddNumberToObject(o, "conns", (double)v[i].conns_now);
			cJSON_AddNumberToObject(o, "conns_total", (double)v[i].conns_total);
			cJSON_AddNumberToObject(o, "bytes_in", (double)v[i].bytes_in);
			cJSON_AddNumberToObject(o, "bytes_out", (double)v[i].bytes_out);
			cJSON_AddNumberToObject(o, "failures", (double)v[i].failures);
			if (v[i].last_error[0])
				cJSON_AddStringToObject(o, "last_error", v[i].last_error);
			else
				cJSON_AddNullToObject(o, "last_error");
			cJSON_AddItemToArray(a, o);
		}
		cli_json_print(a);
		cJSON_Delete(a);
	} else {
		cli_printf(stdout, "%-12s %-21s %6s %6s %6s %8s %8s %6s %-7s %s\n", "SANDBOX", "LOCAL",
		    "REMOTE", "CONNS", "TOTAL", "IN", "OUT", "FAILED", "SINCE", "OWNER");
		for (size_t i = 0; i < n; i++) {
			char local[80], in[16], out[16], since[16], owner[32];
			snprintf(local, sizeof local, strchr(v[i].bind, ':') ? "[%s]:%d" : "%s:%d",
			    v[i].bind, v[i].local_port);
			human_bytes(v[i].bytes_in, in, sizeof in);
			human_bytes(v[i].bytes_out, out, sizeof out);
			sandbox_span((now - v[i].since_ms) / 1000, since, sizeof since);
			snprintf(owner, sizeof owner, "pid %d%s", v[i].pid, v[i].live ? "" : " (gone)");
			cli_printf(stdout, "%-12s %-21s %6d %6llu %6llu %8s %8s %6llu %-7s %s\n", v[i].sandbox,
			    local, v[i].remote_port, (unsigned long long)v[i].conns_now,
			    (unsigned long long)v[i].conns_total, in, out,
			    (unsigned long long)v[i].failures, since, owner);
		}
	}
	free(v);
	return 0;
}

/* Start the forwards o[1..n-1] in the core server; all or none. */
static int
start_in_server(const char *key, const struct core_forward_opts *o, int n, int restore)
{
	struct sbx_err e;
	struct client *c = client_connect("cli", 1, &e);
	cJSON *r = NULL;
	int rc = 0;

	if (c == NULL)
		return cli_error(&e);
	if (restore) {
		if (client_call(c, "sbxtop/forward_restore", NULL, &r, &e) < 0) {
			rc = cli_error(&e);
		} else {
			int k = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(r, "restored"));
			cli_printf(stderr, "sbxtop: %d forward%s restored\n", k, k == 1 ? "" : "s");
		}
		cJSON_Delete(r);
		client_close(c);
		return rc;
	}
	for (int i = 1; i < n; i++) {
		cJSON *p = cJSON_CreateObject();
		struct core_forward f = { 0 };
		char url[128];

		cJSON_AddStringToObject(p, "sandbox", key);
		cJSON_AddNumberToObject(p, "remote_port", o[i].remote_port);
		cJSON_AddNumberToObject(p, "local_port", o[i].local_port);
		if (o[i].bind)
			cJSON_AddStringToObject(p, "bind", o[i].bind);
		if (o[i].http)
			cJSON_AddBoolToObject(p, "http", 1);
		if (client_call(c, "sbxtop/forward_start", p, &r, &e) < 0) {
			cJSON_Delete(p);
			rc = cli_error(&e);
			/* The ones started already go too. */
			for (int k = 1; k < i; k++) {
				cJSON *q = cJSON_CreateObject();
				cJSON_AddStringToObject(q, "sandbox", key);
				cJSON_AddNumberToObject(q, "remote_port", o[k].remote_port);
				(void)client_call(c, "sbxtop/forward_stop", q, NULL, &e);
				cJSON_Delete(q);
			}
			break;
		}
		cJSON_Delete(p);
		snprintf(f.bind, sizeof f.bind, "%s",
		    cJSON_GetStringValue(cJSON_GetObjectItem(r, "bind")));
		f.local_port = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(r, "local_port"));
		cJSON_Delete(r);
		r = NULL;
		url_of(&f, url, sizeof url);
		cli_printf(stdout, "%s\n", url);
	}
	client_close(c);
	return rc;
}

/* Run until a signal, or until every forward of this process has stopped (the
 * sandbox destroyed, `forward --stop` from elsewhere). */
static int
run_foreground(struct cli *cli)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct sbx_err e;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	while (!stop_flag && core_forward_running(cli->core) > 0)
		poll(NULL, 0, 100);
	if (!stop_flag) {
		cli_printf(stderr, "sbxtop: every forward has stopped\n");
		return 0;
	}
	/* Asked to end: these forwards end with the process, records and all. */
	if (core_forward_stop(cli->core, NULL, 0, NULL, &e) < 0)
		return cli_error(&e);
	return 0;
}

/* --stop ID [REMOTE]. */
static int
do_stop(struct cli *cli, char **args, int nargs)
{
	struct sbx_err e;
	int remote = 0, n;

	if (nargs < 1 || nargs > 2)
		return cli_usage(&cmd_forward_entry, "--stop takes a sandbox and optionally a remote port");
	if (nargs == 2 && (remote = parse_port(args[1], 1)) < 0)
		return cli_usage(&cmd_forward_entry, "remote port '%s' is not valid: expected 1 to 65535",
		    args[1]);
	if (core_forward_stop(cli->core, args[0], remote, &n, &e) < 0)
		return cli_error(&e);
	return 0;
}

/* --restore --foreground: the saved forwards, served by this process, their
 * addresses printed first (a script reads them before it blocks). */
static int
restore_foreground(struct cli *cli)
{
	struct core_forward *v;
	struct sbx_err e;
	size_t n;
	int k;

	if ((k = core_forward_restore(cli->core, 1, NULL, &e)) < 0)
		return cli_error(&e);
	if (k == 0) {
		cli_printf(stderr, "sbxtop: no forward to restore\n");
		return 0;
	}
	if (core_forward_list(cli->core, NULL, &v, &n, &e) == 0) {
		for (size_t i = 0; i < n; i++) {
			char url[128];
			if (v[i].pid != (int)getpid())
				continue;
			url_of(&v[i], url, sizeof url);
			cli_printf(stdout, "%s\n", url);
		}
		free(v);
	}
	fflush(stdout);
	return run_foreground(cli);
}

/* The REMOTE[:LOCAL] words after the sandbox (args[1..nargs-1]) into *out
 * (its [0] unused; caller frees): every forward or none, so all are checked
 * before any listens.  0, or cli_usage's status. */
static int
forward_specs(char **args, int nargs, const char *bind, int http, struct core_forward_opts **out)
{
	struct core_forward_opts *o = xcalloc((size_t)nargs, sizeof *o);

	for (int i = 1; i < nargs; i++) {
		const char *a = args[i], *colon = strchr(a, ':');
		_cleanup_free_ char *r = colon ? xstrndup(a, (size_t)(colon - a)) : xstrdup(a);
		o[i].bind = bind;
		o[i].http = http;
		o[i].remote_port = parse_port(r, 1);
		o[i].local_port = colon ? parse_port(colon + 1, 0) : 0;
		if (o[i].remote_port < 0 || o[i].local_port < 0) {
			free(o);
			return cli_usage(&cmd_forward_entry, "'%s' is not valid: expected REMOTE[:LOCAL], "
			    "REMOTE 1 to 65535 and LOCAL 0 (a free port) to 65535", a);
		}
	}
	*out = o;
	return 0;
}

/* --foreground: the forwards of sandbox id (o[1..n-1]) served by this
 * process, their addresses printed first; none when one cannot start. */
static int
start_foreground(struct cli *cli, const char *id, const struct core_forward_opts *o, int n)
{
	struct sbx_err e;

	for (int i = 1; i < n; i++) {
		struct core_forward f;
		char url[128];
		if (core_forward_start(cli->core, id, &o[i], &f, &e) < 0) {
			int rc = cli_error(&e);
			(void)core_forward_stop(cli->core, NULL, 0, NULL, &e);
			return rc;
		}
		url_of(&f, url, sizeof url);
		cli_printf(stdout, "%s\n", url);
	}
	fflush(stdout);
	return run_foreground(cli);
}

static int
cmd_forward(struct cli *cli, int argc, char **argv)
{
	const struct cmd_entry *me = &cmd_forward_entry;
	const char *bind = NULL;
	int fg = 0, list = 0, stop = 0, restore = 0, json = 0, http = 0, c, nargs, rc;
	struct core_forward_opts *o = NULL;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", options, NULL)) != -1) {
		switch (c) {
		case 'b': bind = optarg; break;
		case 'f': fg = 1; break;
		case 'l': list = 1; break;
		case 's': stop = 1; break;
		case 'r': restore = 1; break;
		case 'j': json = 1; break;
		case 'H': http = 1; break;
		default: return cli_bad_option(me, c, argv);
		}
	}
	nargs = argc - optind;
	if (list + stop + restore > 1)
		return cli_usage(me, "--list, --stop and --restore go alone");
	if (json && !list)
		return cli_usage(me, "--json goes with --list");
	if ((list || stop) && (fg || bind))
		return cli_usage(me, "--%s takes no --bind or --foreground", list ? "list" : "stop");
	if (list) {
		if (nargs > 1)
			return cli_usage(me, "--list takes at most one sandbox");
		return do_list(cli, nargs ? argv[optind] : NULL, json);
	}
	if (stop)
		return do_stop(cli, argv + optind, nargs);
	if (!fg && cli->standalone) {
		cli_printf(stderr, "sbxtop: with --standalone there is no core server to run the "
		    "forwards: add --foreground (they then live as long as this process)\n");
		return 2;
	}
	if (restore) {
		if (nargs != 0 || bind)
			return cli_usage(me, "--restore takes no sandbox, ports or --bind");
		return fg ? restore_foreground(cli) : start_in_server(NULL, NULL, 0, 1);
	}
	if (nargs < 2)
		return cli_usage(me, "expected a sandbox and at least one REMOTE[:LOCAL]");
	if ((rc = forward_specs(argv + optind, nargs, bind, http, &o)) != 0)
		return rc;
	rc = fg ? start_foreground(cli, argv[optind], o, nargs) :
	    start_in_server(argv[optind], o, nargs, 0);
	free(o);
	return rc;
}
