/* sbxtop host: add, list, check and remove the remote hosts sandboxes can run on
 * (`create --host`), reached over SSH. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "lib/jspec.h"
#include "lib/util.h"

static int cmd_host(struct cli *cli, int argc, char **argv);

enum { OPT_IDENTITY = 1000, OPT_MAX, OPT_ACCEPT, OPT_JSON };

/* Every form's options: each takes its own and refuses the others. */
static const struct option options[] = {
	{ "identity", required_argument, NULL, OPT_IDENTITY },
	{ "max-sandboxes", required_argument, NULL, OPT_MAX },
	{ "accept-new", no_argument, NULL, OPT_ACCEPT },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "quiet", no_argument, NULL, 'q' },
	{ NULL, 0, NULL, 0 },
};

const struct cmd_entry cmd_host_entry = {
	"host",
	"add NAME ssh://USER@HOST[:PORT] [--identity KEY] [--max-sandboxes N] [--accept-new]\n"
	"       | ls [--json | -q] | check NAME | rm NAME",
	"manage the remote hosts sandboxes run on (over SSH)",
	"  add NAME URL         connect (host key checked against ~/.ssh/known_hosts,\n"
	"                       public-key auth) and remember the host as NAME\n"
	"  --identity KEY       private key file (default: ssh-agent, then ~/.ssh/id_*)\n"
	"  --max-sandboxes N    at most N sandboxes there, 0 to 100000 (0: no limit)\n"
	"  --accept-new         trust an unknown host key and record it (a changed key\n"
	"                       is always refused)\n"
	"  ls                   every host: reachable, kernel, backends, sandboxes,\n"
	"                       free memory\n"
	"  check NAME           the doctor's checks, run on the host\n"
	"  rm NAME              forget the host (it must have no sandboxes)\n"
	"  --json               print JSON\n"
	"  -q, --quiet          ls: the names alone, one a line\n",
	cmd_host,
	.options = options,
	.shortopts = "q",
	.words = "add|ls|check|rm host",
};

/* The ssh backend's verb with args (taken): 0 with *out, or the CLI's error. */
static int
host_verb(struct cli *cli, enum backend_verb verb, cJSON *args, cJSON **out)
{
	struct sbx_err e;
	int rc = core_admin(cli->core, "ssh", verb, args, NULL, out, &e);

	cJSON_Delete(args);
	return rc < 0 ? cli_error(&e) : 0;
}

static int
host_add(struct cli *cli, int argc, char **argv)
{
	cJSON *args = cJSON_CreateObject(), *out = NULL;
	int c, rc;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":q", options, NULL)) != -1) {
		if (c == OPT_IDENTITY) {
			cJSON_DeleteItemFromObjectCaseSensitive(args, "identity");
			cJSON_AddStringToObject(args, "identity", optarg);
		} else if (c == OPT_MAX) {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || v < 0 || v > 100000) {
				cJSON_Delete(args);
				return cli_usage(&cmd_host_entry, "--max-sandboxes: '%s' is not a number "
				    "from 0 to 100000", optarg);
			}
			cJSON_AddNumberToObject(args, "max_sandboxes", (double)v);
		} else if (c == OPT_ACCEPT) {
			cJSON_AddTrueToObject(args, "accept_new");
		} else {
			cJSON_Delete(args);
			return cli_bad_option(&cmd_host_entry, c, argv);
		}
	}
	if (argc - optind != 2) {
		cJSON_Delete(args);
		return cli_usage(&cmd_host_entry, "host add needs NAME and ssh://USER@HOST[:PORT]");
	}
	cJSON_AddStringToObject(args, "name", argv[optind]);
	cJSON_AddStringToObject(args, "url", argv[optind + 1]);
	if ((rc = host_verb(cli, BACKEND_HOST_ADD, args, &out)) == 0)
		cli_printf(stdout, "%s\n", jstr(out, "name", ""));
	cJSON_Delete(out);
	return rc;
}

static int
host_ls(struct cli *cli, int argc, char **argv)
{
	const cJSON *p;
	cJSON *arr = NULL, *args = cJSON_CreateObject();
	int c, rc, json = 0, quiet = 0;
	char safe[1024];

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":q", options, NULL)) != -1) {
		if (c == OPT_JSON)
			json = 1;
		else if (c == 'q')
			quiet = 1;
		else {
			cJSON_Delete(args);
			return cli_bad_option(&cmd_host_entry, c, argv);
		}
	}
	if (optind < argc) {
		cJSON_Delete(args);
		return cli_usage(&cmd_host_entry, "unexpected argument '%s'", argv[optind]);
	}
	/* The names alone need no host reached. */
	if (quiet)
		cJSON_AddFalseToObject(args, "probe");
	if ((rc = host_verb(cli, BACKEND_HOST_LIST, args, &arr)) != 0)
		return rc;
	if (json) {
		cli_json_print(arr);
		cJSON_Delete(arr);
		return 0;
	}
	if (quiet) {
		cJSON_ArrayForEach(p, arr)
			cli_printf(stdout, "%s\n", cli_safe(jstr(p, "name", ""), safe, sizeof safe));
		cJSON_Delete(arr);
		return 0;
	}
	cli_printf(stdout, "%-12s %-28s %-5s %-20s %-8s %-9s %s\n", "NAME", "ADDRESS", "UP", "KERNEL",
	    "BACKENDS", "SANDBOXES", "MEM FREE");
	cJSON_ArrayForEach(p, arr) {
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(p, "mem_free_mib"), *it;
		int up = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "reachable"));
		int max = (int)jnum(p, "max_sandboxes", 0), count = (int)jnum(p, "sandboxes", 0);
		char addr[300], bks[64] = "", sb[32], mem[32];
		size_t bn = 0;

		snprintf(addr, sizeof addr, "%s@%s:%.0f", jstr(p, "user", "-"), jstr(p, "addr", "-"),
		    jnum(p, "port", 0));
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(p, "backends"))
			if (cJSON_IsString(it) && bn < sizeof bks)
				bn += (size_t)snprintf(bks + bn, sizeof bks - bn, "%s%s",
				    bn ? "," : "", it->valuestring);
		if (max > 0)
			snprintf(sb, sizeof sb, "%d/%d", count, max);
		else
			snprintf(sb, sizeof sb, "%d", count);
		if (cJSON_IsNumber(m))
			snprintf(mem, sizeof mem, "%.0f MiB", m->valuedouble);
		else
			snprintf(mem, sizeof mem, "-");
		cli_printf(stdout, "%-12s %-28s %-5s %-20s %-8s %-9s %s\n", jstr(p, "name", "-"), addr,
		    up ? "yes" : "no", jstr(p, "kernel", "-"),
		    bn ? bks : "-", sb, mem);
		if (!up && jstr(p, "error", NULL))
			cli_printf(stderr, "sbxtop: %s\n", jstr(p, "error", ""));
	}
	cJSON_Delete(arr);
	return 0;
}

static int
host_check(struct cli *cli, int argc, char **argv)
{
	cJSON *args, *arr = NULL;
	const cJSON *o;
	int rc, fail = 0;

	if (argc != 2)
		return cli_usage(&cmd_host_entry, "host check needs NAME");
	args = cJSON_CreateObject();
	cJSON_AddStringToObject(args, "name", argv[1]);
	if ((rc = host_verb(cli, BACKEND_HOST_CHECK, args, &arr)) != 0)
		return rc;
	cJSON_ArrayForEach(o, arr) {
		const char *lv = jstr(o, "level", "fail"), *d = jstr(o, "detail", NULL);
		const char *f = jstr(o, "fix", NULL);
		int ok = strcmp(lv, "ok") == 0, warn = strcmp(lv, "warn") == 0;
		cli_printf(stdout, "%-4s %s%s%s\n", ok ? "ok" : warn ? "warn" : "FAIL", jstr(o, "what", "-"),
		    d ? ": " : "", d ? d : "");
		if (f != NULL && !ok)
			cli_printf(stdout, "     fix: %s\n", f);
		fail |= !ok && !warn;
	}
	cJSON_Delete(arr);
	return fail;
}

static int
cmd_host(struct cli *cli, int argc, char **argv)
{
	cJSON *args, *out = NULL;
	int rc;

	if (argc < 2)
		return cli_usage(&cmd_host_entry, "say what to do: add, ls, check or rm");
	if (strcmp(argv[1], "add") == 0)
		return host_add(cli, argc - 1, argv + 1);
	if (strcmp(argv[1], "ls") == 0)
		return host_ls(cli, argc - 1, argv + 1);
	if (strcmp(argv[1], "check") == 0)
		return host_check(cli, argc - 1, argv + 1);
	if (strcmp(argv[1], "rm") == 0) {
		if (argc != 3)
			return cli_usage(&cmd_host_entry, "host rm needs NAME");
		args = cJSON_CreateObject();
		cJSON_AddStringToObject(args, "name", argv[2]);
		rc = host_verb(cli, BACKEND_HOST_RM, args, &out);
		cJSON_Delete(out);
		return rc;
	}
	return cli_usage(&cmd_host_entry, "unknown host command '%s': expected add, ls, check "
	    "or rm", argv[1]);
}
