/* sbxtop diff: what changed in a sandbox since it was created. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "lib/util.h"

static int cmd_diff(struct cli *cli, int argc, char **argv);

static const struct option options[] = {
	{ "json", no_argument, NULL, 'j' }, { "stat", no_argument, NULL, 's' },
	{ NULL, 0, NULL, 0 },
};

const struct cmd_entry cmd_diff_entry = {
	"diff", "ID [PATH] [--stat] [--json]", "show what changed in a sandbox",
	"  ID       an id, a unique prefix of one, or a name\n"
	"  PATH     only changes at or under this sandbox path (relative: under /workspace)\n"
	"  --stat   one line per file (A added, M changed, D removed) with its size\n"
	"  --json   {sandbox_id, changes: [{path, change, type, size, lower_size, binary,\n"
	"           diff}], truncated}\n"
	"  Text files get a unified diff against the layer below; binary files their sizes.\n"
	"  ns sandboxes only: the changes are read from the overlay's upper layers.\n",
	cmd_diff,
	.options = options,
	.words = "sandbox",
};

static int
cmd_diff(struct cli *cli, int argc, char **argv)
{
	struct core_diff_opts o = { 0 };
	struct sbx_err e;
	cJSON *r = NULL, *x;
	int json = 0, stat = 0, c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", options, NULL)) != -1) {
		if (c == 'j')
			json = 1;
		else if (c == 's')
			stat = 1;
		else
			return cli_bad_option(&cmd_diff_entry, c, argv);
	}
	if (argc - optind < 1 || argc - optind > 2)
		return cli_usage(&cmd_diff_entry, "expected a sandbox and at most one path");
	o.path = argc - optind == 2 ? argv[optind + 1] : NULL;
	o.content = !stat;
	if (core_diff(cli->core, argv[optind], &o, &r, &e) < 0)
		return cli_error(&e);
	if (json) {
		char *t = cJSON_Print(r);
		printf("%s\n", t);
		free(t);
		cJSON_Delete(r);
		return 0;
	}
	cJSON_ArrayForEach(x, cJSON_GetObjectItem(r, "changes")) {
		const char *ch = cJSON_GetStringValue(cJSON_GetObjectItem(x, "change"));
		const char *ty = cJSON_GetStringValue(cJSON_GetObjectItem(x, "type"));
		const char *d = cJSON_GetStringValue(cJSON_GetObjectItem(x, "diff"));
		const cJSON *sz = cJSON_GetObjectItem(x, "size"), *lz = cJSON_GetObjectItem(x, "lower_size");
		char k = ch && ch[0] == 'a' ? 'A' : ch && ch[0] == 'r' ? 'D' : 'M';
		char size[64] = "";

		if (cJSON_IsNumber(lz) && cJSON_IsNumber(sz))
			snprintf(size, sizeof size, "%.0f -> %.0f bytes", lz->valuedouble,
			    sz->valuedouble);
		else if (cJSON_IsNumber(sz) || cJSON_IsNumber(lz))
			snprintf(size, sizeof size, "%.0f bytes", cJSON_IsNumber(sz) ?
			    sz->valuedouble : lz->valuedouble);
		if (stat || d == NULL || *d == '\0' || cJSON_IsTrue(cJSON_GetObjectItem(x, "binary")))
			printf("%c %s%s%s%s%s%s\n", k, cJSON_GetStringValue(cJSON_GetObjectItem(x,
			    "path")), ty && strcmp(ty, "file") != 0 ? " (" : "",
			    ty && strcmp(ty, "file") != 0 ? ty : "", ty && strcmp(ty, "file") != 0 ?
			    ")" : "", *size ? "  " : "", size);
		if (!stat && cJSON_IsTrue(cJSON_GetObjectItem(x, "binary")))
			printf("  binary file: not shown\n");
		else if (!stat && d && *d)
			fputs(d, stdout);
	}
	if (cJSON_IsTrue(cJSON_GetObjectItem(r, "truncated")))
		fprintf(stderr, "sbxtop: more changes than shown (give a PATH to see fewer)\n");
	cJSON_Delete(r);
	return 0;
}
