/* sbxtop status: one sandbox in detail, reconciled with its backend, and whether
 * its agent answers. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/client/client.h"
#include "lib/buf.h"
#include "lib/util.h"

static int cmd_status(struct cli *cli, int argc, char **argv);

static const struct option options[] = {
	{ "json", no_argument, NULL, 'j' }, { NULL, 0, NULL, 0 },
};

const struct cmd_entry cmd_status_entry = {
	"status", "ID [--json]", "show one sandbox in detail",
	"  ID       an id, a unique prefix of one, or a name\n"
	"  --json   the record as JSON, with \"agent\": the agent's /health or null, and\n"
	"           \"usage\": what it uses now (cpu_pct, mem_bytes, pids, disk_bytes,\n"
	"           net_rx_bytes, net_tx_bytes, oom_kills) where its backend can tell;\n"
	"           \"limits\" has disk_mib, the most disk_bytes may reach\n",
	cmd_status,
	.options = options,
	.words = "sandbox",
};

/* core_status in the core server: the record and the agent's /health. */
static int
status_remote(struct client *c, const char *key, struct sandbox **out, cJSON **health,
    struct sbx_err *e)
{
	cJSON *p = cJSON_CreateObject(), *r = NULL, *h;

	cJSON_AddStringToObject(p, "sandbox", key);
	cJSON_AddBoolToObject(p, "health", 1);
	if (cli_call(c, "sbxtop/status", p, &r, e) < 0) {
		cJSON_Delete(p);
		return -1;
	}
	cJSON_Delete(p);
	if ((*out = sandbox_from_json(cJSON_GetObjectItemCaseSensitive(r, "sandbox"), e)) ==
	    NULL) {
		cJSON_Delete(r);
		return -1;
	}
	h = cJSON_DetachItemFromObjectCaseSensitive(r, "agent");
	if (cJSON_IsObject(h))
		*health = h;
	else
		cJSON_Delete(h);
	cJSON_Delete(r);
	return 0;
}

static int
cmd_status(struct cli *cli, int argc, char **argv)
{
	struct sandbox *s;
	struct client *cl;
	cJSON *health = NULL;
	struct sbx_err e;
	int json = 0, c, rc;
	int64_t now = wall_ms();

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", options, NULL)) != -1) {
		if (c == 'j')
			json = 1;
		else
			return cli_bad_option(&cmd_status_entry, c, argv);
	}
	if (argc - optind != 1)
		return cli_usage(&cmd_status_entry, "expected one sandbox");
	if (cli_remote(cli, &cl)) {
		rc = status_remote(cl, argv[optind], &s, &health, &e);
		client_close(cl);
	} else {
		rc = core_status(cli->core, argv[optind], &s, &health, &e);
	}
	if (rc < 0)
		return cli_error(&e);
	if (json) {
		cJSON *o = sandbox_to_json(s, 0);
		cJSON_AddItemToObject(o, "agent", health ? health : cJSON_CreateNull());
		health = NULL;
		cli_json_print(o);
		cJSON_Delete(o);
	} else {
		struct buf b;
		buf_init(&b, 1 << 20);
		sandbox_describe(s, 1, health, now, &b);
		fwrite(b.data, 1, b.len, stdout);
		buf_free(&b);
	}
	cJSON_Delete(health);
	sandbox_free(s);
	return 0;
}
