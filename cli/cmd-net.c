/* sbxtop net: a sandbox's network policy, its log, and answers to what its
 * proxy holds for the operator (core/net.h). */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/net.h"
#include "lib/jspec.h"
#include "lib/util.h"

static int cmd_net(struct cli *cli, int argc, char **argv);

static const struct option options[] = {
	{ "json", no_argument, NULL, 'j' },
	{ "follow", no_argument, NULL, 'f' },
	{ "proxy-daemon", no_argument, NULL, 'P' },
	{ NULL, 0, NULL, 0 },
};

const struct cmd_entry cmd_net_entry = {
	"net",
	"ID [--json] | ID allow|deny|remove ENTRY... | ID log [-f] [--json]\n"
	"       | ID pending [--json] | ID answer REQ once|always|deny",
	"show or change a sandbox's network policy, its log and held connections",
	"  ID                 the policy, the proxy, counts, held requests and the last\n"
	"                     connections of a sandbox with --network rules\n"
	"  allow ENTRY        allow a destination from the next connection on: a domain\n"
	"                     (api.github.com), *.domain (its subdomains), *, an address\n"
	"                     or CIDR (10.0.0.0/8, [2001:db8::/32]), each with :PORT or not\n"
	"  deny ENTRY         deny it (a deny entry wins over every allow entry)\n"
	"  remove ENTRY       drop it from both lists\n"
	"  log                every connection and request: time, verdict, host:port,\n"
	"                     address, kind, bytes up and down, duration, deciding entry\n"
	"  -f, --follow       keep printing the log until the sandbox stops\n"
	"  pending            what waits for an answer (ask mode, sandbox_net_request)\n"
	"  answer REQ A       answer request REQ: once (that connection; a request made\n"
	"                     ahead: ten minutes), always (an allow entry for its\n"
	"                     host:port) or deny\n"
	"  --json             print JSON (the log: one object a line)\n",
	cmd_net,
	.options = options,
	.shortopts = "fj",
	.words = "sandbox allow|deny|remove|log|pending|answer",
};

static volatile int stop;

static void
on_signal(int sig)
{
	stop = 1;
}

static void
print_list(const char *what, const cJSON *arr)
{
	const cJSON *it;
	int n = 0;

	cli_printf(stdout, "%-8s", what);
	cJSON_ArrayForEach(it, arr) {
		const char *t = cJSON_GetStringValue(it);
		if (t == NULL)
			t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "rule"));
		cli_printf(stdout, "%s%s", n++ ? ", " : " ", t ? t : "?");
	}
	cli_printf(stdout, "%s\n", n ? "" : " -");
}

static void
print_pending(const cJSON *arr)
{
	const cJSON *it;
	int64_t now = wall_ms();

	cJSON_ArrayForEach(it, arr) {
		const char *host = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "host"));
		const char *reason = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "reason"));
		double port = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(it, "port"));
		double exp = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(it, "expires_ms"));
		cli_printf(stdout, "%s  %s  %s:%d  %s  %llds left%s%s\n",
		    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "req")) ?: "?",
		    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "sandbox")) ?: "?",
		    host ? host : "?", (int)port,
		    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "kind")) ?: "?",
		    (long long)((exp - (double)now) / 1000), reason ? "  reason: " : "",
		    reason ? reason : "");
	}
}

static int
show(struct cli *cli, const char *key, int json)
{
	struct sbx_err e;
	cJSON *o = NULL, *pol, *k, *px, *it;
	char line[1024];

	if (core_net_show(cli->core, key, 20, &o, &e) < 0)
		return cli_error(&e);
	if (json) {
		cli_json_print(o);
		cJSON_Delete(o);
		return 0;
	}
	pol = cJSON_GetObjectItemCaseSensitive(o, "policy");
	px = cJSON_GetObjectItemCaseSensitive(o, "proxy");
	k = cJSON_GetObjectItemCaseSensitive(o, "counts");
	cli_printf(stdout, "sandbox  %s\nnetwork  %s\n",
	    cJSON_GetStringValue(cJSON_GetObjectItem(o, "id")),
	    cJSON_GetStringValue(cJSON_GetObjectItem(o, "network")));
	if (cJSON_IsObject(pol)) {
		print_list("allow", cJSON_GetObjectItem(pol, "allow"));
		print_list("deny", cJSON_GetObjectItem(pol, "deny"));
		if (cJSON_GetArraySize(cJSON_GetObjectItem(pol, "grants")) > 0)
			print_list("grants", cJSON_GetObjectItem(pol, "grants"));
		if (cJSON_GetArraySize(cJSON_GetObjectItem(pol, "limit")) > 0)
			print_list("limit", cJSON_GetObjectItem(pol, "limit"));
		cli_printf(stdout, "ask      %s (%d s)\n", cJSON_IsTrue(cJSON_GetObjectItem(pol, "ask")) ?
		    "yes" : "no", (int)cJSON_GetNumberValue(cJSON_GetObjectItem(pol, "ask_timeout_s")));
		if (cJSON_IsTrue(cJSON_GetObjectItem(px, "running")))
			cli_printf(stdout, "proxy    pid %d, %s:%d inside\n",
			    (int)cJSON_GetNumberValue(cJSON_GetObjectItem(px, "pid")),
			    cJSON_GetStringValue(cJSON_GetObjectItem(px, "address")) ?
			    cJSON_GetStringValue(cJSON_GetObjectItem(px, "address")) : "127.0.0.1",
			    (int)cJSON_GetNumberValue(cJSON_GetObjectItem(px, "port")));
		else
			cli_printf(stdout, "proxy    not running (the sandbox has no way out)\n");
		cli_printf(stdout, "counts   %.0f allowed, %.0f denied, %.0f asked, %.0f bytes up, %.0f down\n",
		    jnum(k, "allowed", 0), jnum(k, "denied", 0), jnum(k, "asked", 0), jnum(k, "bytes_up", 0),
		    jnum(k, "bytes_down", 0));
	}
	if (cJSON_GetArraySize(cJSON_GetObjectItem(o, "pending")) > 0) {
		cli_printf(stdout, "pending\n");
		print_pending(cJSON_GetObjectItem(o, "pending"));
	}
	if (cJSON_GetArraySize(cJSON_GetObjectItem(o, "recent")) > 0)
		cli_printf(stdout, "recent\n");
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(o, "recent")) {
		net_log_format(it, line, sizeof line);
		cli_printf(stdout, "  %s\n", line);
	}
	cJSON_Delete(o);
	return 0;
}

/* An entry of the log, as text or as one line of JSON; -1 when the reader
 * went away. */
static int
log_text(void *arg, const cJSON *o)
{
	char line[1024];

	net_log_format(o, line, sizeof line);
	cli_printf(stdout, "%s\n", line);
	return fflush(stdout) == 0 ? 0 : -1;
}

static int
log_json(void *arg, const cJSON *o)
{
	cli_print_json(stdout, o, 0);
	return fflush(stdout) == 0 ? 0 : -1;
}

static int
cmd_net(struct cli *cli, int argc, char **argv)
{
	struct sbx_err e;
	int json = 0, follow = 0, daemon = 0, c, rc = 0;
	const char *key, *verb;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":fj", options, NULL)) != -1) {
		if (c == 'j')
			json = 1;
		else if (c == 'f')
			follow = 1;
		else if (c == 'P')
			daemon = 1;
		else
			return cli_bad_option(&cmd_net_entry, c, argv);
	}
	argc -= optind;
	argv += optind;
	if (daemon) {
		/* The proxy itself (core/net/proxy.c): started by the core, the
		 * listener on fd 3. */
		if (argc != 2)
			return cli_usage(&cmd_net_entry, "--proxy-daemon takes ID and PID");
		netproxy_main(argv[0], (pid_t)atoi(argv[1]), 3);
	}
	if (argc < 1)
		return cli_usage(&cmd_net_entry, "missing sandbox ID");
	key = argv[0];
	if (argc == 1)
		return show(cli, key, json);
	verb = argv[1];
	if (strcmp(verb, "allow") == 0 || strcmp(verb, "deny") == 0 || strcmp(verb, "remove") == 0) {
		if (argc < 3)
			return cli_usage(&cmd_net_entry, "%s needs an ENTRY", verb);
		for (int i = 2; i < argc; i++)
			if (core_net_change(cli->core, key, verb, argv[i], &e) < 0)
				return cli_error(&e);
		return 0;
	}
	if (strcmp(verb, "log") == 0) {
		if (argc != 2)
			return cli_usage(&cmd_net_entry, "log takes no arguments");
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
		signal(SIGPIPE, SIG_IGN);
		if (core_net_log(cli->core, key, follow, json ? log_json : log_text, NULL, &stop,
		    &e) < 0)
			rc = cli_error(&e);
		return rc;
	}
	if (strcmp(verb, "pending") == 0) {
		cJSON *arr = NULL;
		if (core_net_pending(cli->core, strcmp(key, "all") == 0 ? NULL : key, &arr, &e) < 0)
			return cli_error(&e);
		if (json)
			cli_json_print(arr);
		else
			print_pending(arr);
		cJSON_Delete(arr);
		return 0;
	}
	if (strcmp(verb, "answer") == 0) {
		if (argc != 4)
			return cli_usage(&cmd_net_entry, "answer takes REQ and once, always or deny");
		if (core_net_decide(cli->core, key, argv[2], argv[3], "cli", &e) < 0)
			return cli_error(&e);
		return 0;
	}
	return cli_usage(&cmd_net_entry, "unknown subcommand '%s'", verb);
}
