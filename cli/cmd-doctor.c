/* sbxtop doctor: check what sbxtop and its backends need on this host. */
#include <getopt.h>
#include <stdio.h>

#include "cli/cli.h"

static int cmd_doctor(struct cli *cli, int argc, char **argv);

const struct cmd_entry cmd_doctor_entry = {
	"doctor", "[--backend B]", "check this host for what sandboxes need",
	"  --backend B   only that backend's checks (and the state directories)\n"
	"\n"
	"  One line per check: ok, warn (works, with less) or FAIL, with the fix.\n"
	"  Exit status 1 when a check fails.\n",
	cmd_doctor,
};

static void
report(void *arg, enum check_level level, const char *what, const char *detail,
    const char *fix)
{
	static const char *const tag[] = { "ok  ", "warn", "FAIL" };

	printf("%s %s: %s", tag[level], what, detail ? detail : "");
	if (fix != NULL && fix[0] != '\0' && level != CHECK_OK)
		printf(" (fix: %s)", fix);
	printf("\n");
}

static int
cmd_doctor(struct cli *cli, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "backend", required_argument, NULL, 'b' }, { NULL, 0, NULL, 0 },
	};
	const char *backend = NULL;
	struct sbx_err e;
	int c, worst;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", lo, NULL)) != -1) {
		if (c == 'b')
			backend = optarg;
		else
			return cli_bad_option(&cmd_doctor_entry, c, argv);
	}
	if (optind < argc)
		return cli_usage(&cmd_doctor_entry, "unexpected argument '%s'", argv[optind]);
	if ((worst = core_doctor(cli->core, backend, report, NULL, &e)) < 0)
		return cli_error(&e);
	return worst == CHECK_FAIL ? 1 : 0;
}
