/* sbxtop host: add, list, check and remove the remote hosts sandboxes can run on
 * (`create --host`), reached over SSH. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "backends/ssh/hosts.h"
#include "lib/util.h"

static int cmd_host(struct cli *cli, int argc, char **argv);

const struct cmd_entry cmd_host_entry = {
	"host",
	"add NAME ssh://USER@HOST[:PORT] [--identity KEY] [--max-sandboxes N] [--accept-new]\n"
	"       | ls [--json] | check NAME | rm NAME",
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
	"  --json               print JSON\n",
	cmd_host,
};

enum { OPT_IDENTITY = 1000, OPT_MAX, OPT_ACCEPT, OPT_JSON };

static int
host_add(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "identity", required_argument, NULL, OPT_IDENTITY },
		{ "max-sandboxes", required_argument, NULL, OPT_MAX },
		{ "accept-new", no_argument, NULL, OPT_ACCEPT },
		{ NULL, 0, NULL, 0 },
	};
	struct host h;
	struct sbx_err e;
	int c, accept_new = 0, rc = 0;

	memset(&h, 0, sizeof h);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", lo, NULL)) != -1) {
		if (c == OPT_IDENTITY) {
			free(h.identity);
			h.identity = xstrdup(optarg);
		} else if (c == OPT_MAX) {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || v < 0 || v > 100000) {
				rc = cli_usage(&cmd_host_entry, "--max-sandboxes: '%s' is not a number "
				    "from 0 to 100000", optarg);
				goto out;
			}
			h.max_sandboxes = (int)v;
		} else if (c == OPT_ACCEPT) {
			accept_new = 1;
		} else {
			rc = cli_bad_option(&cmd_host_entry, c, argv);
			goto out;
		}
	}
	if (argc - optind != 2) {
		rc = cli_usage(&cmd_host_entry, "host add needs NAME and ssh://USER@HOST[:PORT]");
		goto out;
	}
	h.name = xstrdup(argv[optind]);
	if (hosts_parse_url(argv[optind + 1], &h, &e) < 0 || hosts_add(&h, accept_new, &e) < 0) {
		rc = cli_error(&e);
		goto out;
	}
	printf("%s\n", h.name);
out:
	free(h.name);
	free(h.user);
	free(h.addr);
	free(h.identity);
	return rc;
}

static int
host_ls(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, OPT_JSON }, { NULL, 0, NULL, 0 },
	};
	struct host *v;
	size_t n;
	struct sbx_err e;
	int c, json = 0;
	cJSON *arr;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", lo, NULL)) != -1) {
		if (c == OPT_JSON)
			json = 1;
		else
			return cli_bad_option(&cmd_host_entry, c, argv);
	}
	if (optind < argc)
		return cli_usage(&cmd_host_entry, "unexpected argument '%s'", argv[optind]);
	if (hosts_list(&v, &n, &e) < 0)
		return cli_error(&e);
	arr = cJSON_CreateArray();
	if (!json)
		printf("%-12s %-28s %-5s %-20s %-8s %-9s %s\n", "NAME", "ADDRESS", "UP", "KERNEL",
		    "BACKENDS", "SANDBOXES", "MEM FREE");
	for (size_t i = 0; i < n; i++) {
		cJSON *p = hosts_probe(&v[i]);
		const cJSON *k = cJSON_GetObjectItemCaseSensitive(p, "kernel");
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(p, "mem_free_mib");
		const cJSON *bk = cJSON_GetObjectItemCaseSensitive(p, "backends"), *it;
		const cJSON *er = cJSON_GetObjectItemCaseSensitive(p, "error");
		int up = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "reachable"));
		int count = hosts_sandbox_count(v[i].name);
		char addr[300], bks[64] = "", sb[32], mem[32];
		size_t bn = 0;

		snprintf(addr, sizeof addr, "%s@%s:%d", v[i].user, v[i].addr, v[i].port);
		cJSON_ArrayForEach(it, bk)
			if (cJSON_IsString(it) && bn < sizeof bks)
				bn += (size_t)snprintf(bks + bn, sizeof bks - bn, "%s%s",
				    bn ? "," : "", it->valuestring);
		if (v[i].max_sandboxes > 0)
			snprintf(sb, sizeof sb, "%d/%d", count, v[i].max_sandboxes);
		else
			snprintf(sb, sizeof sb, "%d", count);
		if (cJSON_IsNumber(m))
			snprintf(mem, sizeof mem, "%.0f MiB", m->valuedouble);
		else
			snprintf(mem, sizeof mem, "-");
		if (json) {
			cJSON_AddStringToObject(p, "name", v[i].name);
			cJSON_AddStringToObject(p, "user", v[i].user);
			cJSON_AddStringToObject(p, "addr", v[i].addr);
			cJSON_AddNumberToObject(p, "port", v[i].port);
			if (v[i].identity)
				cJSON_AddStringToObject(p, "identity", v[i].identity);
			cJSON_AddNumberToObject(p, "max_sandboxes", v[i].max_sandboxes);
			/* The registry's count: the sandboxes sbxtop made there. */
			cJSON_DeleteItemFromObjectCaseSensitive(p, "sandboxes");
			cJSON_AddNumberToObject(p, "sandboxes", count);
			cJSON_AddItemToArray(arr, p);
			continue;
		}
		printf("%-12s %-28s %-5s %-20s %-8s %-9s %s\n", v[i].name, addr, up ? "yes" : "no",
		    cJSON_IsString(k) ? k->valuestring : "-", bn ? bks : "-", sb, mem);
		if (!up && cJSON_IsString(er))
			fprintf(stderr, "sbxtop: %s\n", er->valuestring);
		cJSON_Delete(p);
	}
	if (json) {
		char *t = cJSON_Print(arr);
		printf("%s\n", t);
		free(t);
	}
	cJSON_Delete(arr);
	hosts_free(v, n);
	return 0;
}

static void
check_line(void *arg, enum check_level level, const char *what, const char *detail,
    const char *fix)
{
	int *worst = arg;

	printf("%-4s %s%s%s\n", level == CHECK_OK ? "ok" : level == CHECK_WARN ? "warn" : "FAIL",
	    what, detail ? ": " : "", detail ? detail : "");
	if (fix != NULL && level != CHECK_OK)
		printf("     fix: %s\n", fix);
	if ((int)level > *worst)
		*worst = (int)level;
}

static int
host_check(int argc, char **argv)
{
	struct host *h;
	struct sbx_err e;
	int worst = CHECK_OK;

	if (argc != 2)
		return cli_usage(&cmd_host_entry, "host check needs NAME");
	if ((h = hosts_get(argv[1], &e)) == NULL)
		return cli_error(&e);
	if (hosts_doctor(h, check_line, &worst, &e) < 0) {
		check_line(&worst, CHECK_FAIL, "ssh", e.msg, e.hint[0] ? e.hint : NULL);
		worst = CHECK_FAIL;
	}
	host_free(h);
	return worst == CHECK_FAIL ? 1 : 0;
}

static int
cmd_host(struct cli *cli, int argc, char **argv)
{
	struct sbx_err e;

	if (argc < 2)
		return cli_usage(&cmd_host_entry, "say what to do: add, ls, check or rm");
	if (strcmp(argv[1], "add") == 0)
		return host_add(argc - 1, argv + 1);
	if (strcmp(argv[1], "ls") == 0)
		return host_ls(argc - 1, argv + 1);
	if (strcmp(argv[1], "check") == 0)
		return host_check(argc - 1, argv + 1);
	if (strcmp(argv[1], "rm") == 0) {
		if (argc != 3)
			return cli_usage(&cmd_host_entry, "host rm needs NAME");
		if (hosts_rm(argv[2], &e) < 0)
			return cli_error(&e);
		return 0;
	}
	return cli_usage(&cmd_host_entry, "unknown host command '%s': expected add, ls, check "
	    "or rm", argv[1]);
}
