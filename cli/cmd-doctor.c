/* sbxtop doctor: check what sbxtop and its backends need on this host. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/paths.h"
#include "lib/util.h"

static int cmd_doctor(struct cli *cli, int argc, char **argv);

const struct cmd_entry cmd_doctor_entry = {
	"doctor", "[--backend B] [--json]", "check this host for what sandboxes need",
	"  --backend B   only that backend's checks (and the state directories)\n"
	"  --json        one JSON object: {\"ok\", \"checks\": [{\"level\", \"what\",\n"
	"                \"detail\", \"fix\"}]}, level one of ok, warn, fail\n"
	"\n"
	"  One line per check: ok, warn (works, with less) or FAIL, with the fix.\n"
	"  The checks of a backend other than the default one warn instead of\n"
	"  failing, unless --backend names it.  A configuration file that cannot be\n"
	"  read is a FAIL with its file and line; the other checks still run.\n"
	"  Exit status 1 when a check fails, else 0.\n",
	cmd_doctor,
};

static const char *const level_name[] = { "ok", "warn", "fail" };

static void
report_line(void *arg, enum check_level level, const char *what, const char *detail,
    const char *fix)
{
	static const char *const tag[] = { "ok  ", "warn", "FAIL" };

	printf("%s %s: %s", tag[level], what, detail ? detail : "");
	if (fix != NULL && fix[0] != '\0' && level != CHECK_OK)
		printf(" (fix: %s)", fix);
	printf("\n");
	fflush(stdout);
}

static void
report_json(void *arg, enum check_level level, const char *what, const char *detail,
    const char *fix)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "level", level_name[level]);
	cJSON_AddStringToObject(o, "what", what);
	cJSON_AddStringToObject(o, "detail", detail ? detail : "");
	if (fix != NULL && fix[0] != '\0' && level != CHECK_OK)
		cJSON_AddStringToObject(o, "fix", fix);
	else
		cJSON_AddNullToObject(o, "fix");
	cJSON_AddItemToArray(arg, o);
}

static int
cmd_doctor(struct cli *cli, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "backend", required_argument, NULL, 'b' }, { "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	const char *backend = NULL;
	check_fn report = report_line;
	cJSON *checks = NULL;
	struct sbx_err e;
	int c, worst, cfg_worst = CHECK_OK, json = 0;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", lo, NULL)) != -1) {
		if (c == 'b')
			backend = optarg;
		else if (c == 'j')
			json = 1;
		else
			return cli_bad_option(&cmd_doctor_entry, c, argv);
	}
	if (optind < argc)
		return cli_usage(&cmd_doctor_entry, "unexpected argument '%s'", argv[optind]);
	if (json) {
		report = report_json;
		checks = cJSON_CreateArray();
	}
	/* The configuration comes first: what follows ran on the defaults for
	 * whatever it could not read. */
	if (cli->cfg_err != NULL) {
		report(checks, CHECK_FAIL, "configuration", cli->cfg_err->msg,
		    cli->cfg_err->hint[0] ? cli->cfg_err->hint : NULL);
		cfg_worst = CHECK_FAIL;
	} else {
		struct sbx_err sub;
		_cleanup_free_ char *p = paths_file(PATHS_CONFIG, "sbxtop.conf", 0, &sub);
		_cleanup_free_ char *m = p == NULL ? NULL : xasprintf(access(p, F_OK) == 0 ?
		    "%s read" : "%s absent: the defaults", p);
		report(checks, CHECK_OK, "configuration", m, NULL);
	}
	if ((worst = core_doctor(cli->core, backend, report, checks, &e)) < 0) {
		cJSON_Delete(checks);
		return cli_error(&e);
	}
	if (cfg_worst > worst)
		worst = cfg_worst;
	if (json) {
		cJSON *o = cJSON_CreateObject();
		char *t;

		cJSON_AddBoolToObject(o, "ok", worst != CHECK_FAIL);
		cJSON_AddItemToObject(o, "checks", checks);
		t = cJSON_PrintUnformatted(o);
		if (t == NULL)
			fatal("out of memory");
		printf("%s\n", t);
		free(t);
		cJSON_Delete(o);
	}
	return worst == CHECK_FAIL ? 1 : 0;
}
