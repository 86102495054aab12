/* sbxtop create: bring up a sandbox and print its id.  Its flags are the rows
 * of the create's option table (core/create-opts.h), its help made from them:
 * each flag adds its field to the request, which goes to the core server's
 * sbxtop/create, or with --standalone through core_create_opts_from_json as
 * every front end's create does. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/client/client.h"
#include "core/create-opts.h"
#include "lib/util.h"

static int cmd_create(struct cli *cli, int argc, char **argv);
static const struct option *create_flags(void);
static const char *create_help(void);

enum { OPT_JSON = 1000, OPT_ROW = 2000 };

const struct cmd_entry cmd_create_entry = {
	"create",
	"[--name N] [--backend B] [--host NAME|auto] [--image REF|DIR] [--memory MiB]\n"
	"       [--disk MiB] [--cpus N] [--pids N] [--max-duration S] [--idle S]\n"
	"       [--network none|egress|rules] [--allow ENTRY]... [--deny ENTRY]... [--ask]\n"
	"       [--secret NAME]...\n"
	"       [--env K=V]... [--from-snapshot NAME] [--json]",
	"create a sandbox and print its id",
	NULL,
	cmd_create,
	.options_fn = create_flags,
	.help_fn = create_help,
	.words = "",
};

/* A flag per row of the option table, then --json; made once. */
static const struct option *
create_flags(void)
{
	static struct option *lo;
	size_t n;
	const struct create_option *rows = create_options(&n);

	if (lo != NULL)
		return lo;
	lo = xcalloc(n + 2, sizeof *lo);
	for (size_t i = 0; i < n; i++)
		lo[i] = (struct option){ create_option_flag(&rows[i]),
		    rows[i].arg ? required_argument : no_argument, NULL, OPT_ROW + (int)i };
	lo[n] = (struct option){ "json", no_argument, NULL, OPT_JSON };
	return lo;
}

/* "  --flag ARG" and text (%r and %d: the range and default of row r's
 * configuration option), in lines of at most 80 columns, the text from column
 * 20 on. */
static void
help_item(FILE *f, const char *left, const char *text, const struct create_option *r)
{
	const struct config_option *c = r && r->config ? config_option_find(r->config) : NULL;
	char word[256];
	int col = fprintf(f, "%s", left), first = 1;

	col += fprintf(f, "%*s", col <= 18 ? 20 - col : 2, "");
	for (const char *p = text; *p != '\0'; first = 0) {
		size_t n = 0;
		while (*p == ' ')
			p++;
		for (; *p != '\0' && *p != ' ' && n + 48 < sizeof word; p++) {
			if (p[0] == '%' && p[1] == 'r' && c != NULL)
				n += (size_t)snprintf(word + n, sizeof word - n, c->type ==
				    CONFIG_INT ? "%.0f to %.0f" : "%g to %g", c->min, c->max), p++;
			else if (p[0] == '%' && p[1] == 'd' && c != NULL)
				n += (size_t)snprintf(word + n, sizeof word - n, "%s", c->def), p++;
			else
				word[n++] = *p;
		}
		word[n] = '\0';
		if (!first && col + 1 + (int)n > 80)
			col = fprintf(f, "\n%20s", "") - 1;
		else if (!first)
			col += fprintf(f, " ");
		col += fprintf(f, "%s", word);
	}
	fputc('\n', f);
}

/* The option lines, from the table; made once. */
static const char *
create_help(void)
{
	static char *text;
	size_t len, n;
	const struct create_option *rows = create_options(&n);
	FILE *f;

	if (text != NULL)
		return text;
	if ((f = open_memstream(&text, &len)) == NULL)
		fatal("out of memory");
	for (size_t i = 0; i < n; i++) {
		char left[64];
		snprintf(left, sizeof left, "  --%s%s%s", create_option_flag(&rows[i]),
		    rows[i].arg ? " " : "", rows[i].arg ? rows[i].arg : "");
		help_item(f, left, rows[i].help, &rows[i]);
	}
	help_item(f, "  --json", "print the whole record as JSON instead of the id", NULL);
	fprintf(f, "With a pool in sbxtop.conf (pool = 2, say) the core server keeps sandboxes\n"
	    "ready: a create that matches a profile takes one (sbxtop.conf(5), pool).\n");
	fclose(f);
	return text;
}

/* The flag of row r with its value v (NULL: none) into the request args, or
 * for a configuration option into cli's configuration (which checks it and
 * names the range): 0, or -1 with e. */
static int
flag_take(struct cli *cli, cJSON *args, const struct create_option *r, const char *v,
    struct sbx_err *e)
{
	cJSON *x = cJSON_GetObjectItemCaseSensitive(args, r->key);

	if (r->config != NULL)
		return config_set(cli->cfg, r->config, v, CONFIG_FLAG, e);
	switch (r->kind) {
	case CREATE_ENV:
		if (x == NULL) {
			if (cli_env_add(&x, v, e) < 0)
				return -1;
			cJSON_AddItemToObject(args, r->key, x);
			return 0;
		}
		return cli_env_add(&x, v, e);
	case CREATE_NET_LIST:
		if (x == NULL)
			x = cJSON_AddArrayToObject(args, r->key);
		cJSON_AddItemToArray(x, cJSON_CreateString(v));
		return 0;
	case CREATE_NET_BOOL:
		cJSON_DeleteItemFromObjectCaseSensitive(args, r->key);
		cJSON_AddTrueToObject(args, r->key);
		return 0;
	default:
		cJSON_DeleteItemFromObjectCaseSensitive(args, r->key);
		cJSON_AddStringToObject(args, r->key, v);
		return 0;
	}
}

/* The configuration options of the table as cli resolved them (flags, this
 * process's environment and config file) into args, so the sandbox is the one
 * this command would have made itself wherever the core runs.  An allow, deny,
 * ask or secret alone implies network rules, which a default "none" sent along
 * would refuse. */
static void
config_take(struct cli *cli, cJSON *args)
{
	size_t n;
	const struct create_option *rows = create_options(&n);
	int net = 0;

	for (size_t i = 0; i < n; i++)
		net |= (rows[i].kind == CREATE_NET_LIST || rows[i].kind == CREATE_NET_BOOL) &&
		    cJSON_HasObjectItem(args, rows[i].key);
	for (size_t i = 0; i < n; i++) {
		const char *k = rows[i].key, *o = rows[i].config;
		if (o == NULL || (net && strcmp(o, "network") == 0 &&
		    config_source_of(cli->cfg, o) == CONFIG_DEFAULT))
			continue;
		if (rows[i].kind == CREATE_INT)
			cJSON_AddNumberToObject(args, k, (double)config_int(cli->cfg, o));
		else if (rows[i].kind == CREATE_NUMBER)
			cJSON_AddNumberToObject(args, k, config_num(cli->cfg, o));
		else	/* "" too: the backend's default, not the server's image */
			cJSON_AddStringToObject(args, k, config_str(cli->cfg, o));
	}
}

/* The request args made in this process: the options as every front end
 * builds them. */
static int
create_here(struct cli *cli, const cJSON *args, struct sandbox **out, struct sbx_err *e)
{
	struct core_create_opts o;
	cJSON *net;
	int rc;

	if (core_create_opts_from_json(&o, args, &net, e) < 0)
		return -1;
	o.owner = "cli";
	rc = core_create(cli->core, &o, out, e);
	cJSON_Delete(net);
	return rc;
}

static int
create_remote(struct client *c, cJSON *args, struct sandbox **out, struct sbx_err *e)
{
	cJSON *r = NULL;

	if (cli_call(c, "sbxtop/create", args, &r, e) < 0)
		return -1;
	*out = sandbox_from_json(r, e);
	cJSON_Delete(r);
	return *out ? 0 : -1;
}

static int
cmd_create(struct cli *cli, int argc, char **argv)
{
	size_t nrows;
	const struct create_option *rows = create_options(&nrows);
	const struct option *lo = create_flags();
	cJSON *args = cJSON_CreateObject();
	struct sandbox *s = NULL;
	struct client *cl;
	char safe[4096];
	struct sbx_err e;
	int json = 0, c, n = 0, rc = 0;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:", lo, NULL)) != -1) {
		if (c == OPT_JSON) {
			json = 1;
		} else if (c >= OPT_ROW && c < OPT_ROW + (int)nrows) {
			if (flag_take(cli, args, &rows[c - OPT_ROW], optarg, &e) < 0) {
				rc = cli_error(&e);
				goto out;
			}
		} else {
			rc = cli_bad_option(&cmd_create_entry, c, argv);
			goto out;
		}
	}
	if (optind < argc) {
		rc = cli_usage(&cmd_create_entry, "unexpected argument '%s'", argv[optind]);
		goto out;
	}
	config_take(cli, args);
	if (cli_remote(cli, &cl)) {
		n = create_remote(cl, args, &s, &e);
		client_close(cl);
	} else {
		n = create_here(cli, args, &s, &e);
	}
	if (n < 0) {
		rc = cli_error(&e);
		goto out;
	}
	if (json) {
		cJSON *o = sandbox_to_json(s, 0);
		cli_json_print(o);
		cJSON_Delete(o);
	} else {
		cli_printf(stdout, "%s\n", s->id);
	}
	/* What was asked for but is not enforced, and how it runs (qemu: KVM or
	 * TCG and the boot time). */
	if (s->limits_note != NULL)
		cli_printf(stderr, "sbxtop: %s: %s\n", s->id, cli_safe(s->limits_note, safe, sizeof safe));
out:
	sandbox_free(s);
	cJSON_Delete(args);
	return rc;
}
