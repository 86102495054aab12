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

static const struct option options[] = {
	{ "backend", required_argument, NULL, 'b' }, { "json", no_argument, NULL, 'j' },
	{ NULL, 0, NULL, 0 },
};

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
	.options = options,
	.words = "",
};

static const char *const level_name[] = { "ok", "warn", "fail" };

static void
report_line(void *arg, enum check_level level, const char *what, const char *detail,
    const char *fix)
{
	static const char *const tag[] = { "ok  ", "warn", "FAIL" };

	cli_printf(stdout, "%s %s: %s", tag[level], what, detail ? detail : "");
	if (fix != NULL && fix[0] != '\0' && level != CHECK_OK)
		cli_printf(stdout, " (fix: %s)", fix);
	cli_printf(stdout, "\n");
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

/* The configuration's line comes first, but only once core_doctor has taken
 * the arguments: an unknown backend prints nothing on stdout. */
struct doctor_out {
	check_fn	 report;
	void		*arg;
	const struct sbx_err *cfg_err;
	int		 started, worst;
};

static void
config_line(struct doctor_out *o)
{
	if (o->cfg_err != NULL) {
		o->report(o->arg, CHECK_FAIL, "configuration", o->cfg_err->msg,
		    o->cfg_err->hint[0] ? o->cfg_err->hint : NULL);
		o->worst = CHECK_FAIL;
	} else {
		struct sbx_err sub;
		_cleanup_free_ char *p = paths_file(PATHS_CONFIG, "sbxtop.conf", 0, &sub);
		_cleanup_free_ char *m = p == NULL ? NULL : xasprintf(access(p, F_OK) == 0 ?
		    "%s read" : "%s absent: the defaults", p);
		o->report(o->arg, CHECK_OK, "configuration", m, NULL);
	}
}

static void
report_first(void *arg, enum check_level level, const char *what, const char *detail,
    const char *fix)
{
	struct doctor_out *o = arg;

	if (!o->started) {
		o->started = 1;
		config_line(o);
	}
	o->report(o->arg, level, what, detail, fix);
}

static int
cmd_doctor(struct cli *cli, int argc, char **argv)
{
	const char *backend = NULL;
	struct doctor_out o = { report_line, NULL, cli->cfg_err, 0, CHECK_OK };
	struct sbx_err e;
	int c, worst, json = 0;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", options, NULL)) != -1) {
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
		o.report = report_json;
		o.arg = cJSON_CreateArray();
	}
	if ((worst = core_doctor(cli->core, backend, report_first, &o, &e)) < 0) {
		cJSON_Delete(o.arg);
		return cli_error(&e);
	}
	if (!o.started)
		config_line(&o);
	if (o.worst > worst)
		worst = o.worst;
	if (json) {
		cJSON *r = cJSON_CreateObject();

		cJSON_AddBoolToObject(r, "ok", worst != CHECK_FAIL);
		cJSON_AddItemToObject(r, "checks", o.arg);
		cli_print_json(stdout, r, 0);
		cJSON_Delete(r);
	}
	return worst == CHECK_FAIL ? 1 : 0;
}
