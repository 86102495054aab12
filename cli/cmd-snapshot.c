/* sbxtop snapshot: save a qemu sandbox's memory and disk under a name, so that
 * `create --from-snapshot NAME` starts new sandboxes from it without booting;
 * list and remove snapshots. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "lib/jspec.h"
#include "lib/util.h"

static int cmd_snapshot(struct cli *cli, int argc, char **argv);

const struct cmd_entry cmd_snapshot_entry = {
	"snapshot",
	"ID NAME | ls [--json] | rm NAME...",
	"save a qemu sandbox as a snapshot; list and remove snapshots",
	"  ID NAME           save sandbox ID (running, qemu backend) as snapshot NAME:\n"
	"                    its memory and disk at one instant; the VM pauses for\n"
	"                    that long, and gets a new agent secret afterwards\n"
	"  ls                list snapshots\n"
	"  rm NAME...        remove snapshots (sandboxes started from one go on)\n"
	"  --json            print JSON\n"
	"  Start a sandbox from one with `sbxtop create --backend qemu --from-snapshot\n"
	"  NAME`.  A sandbox named ls or rm is given by its id here.\n",
	cmd_snapshot,
	.words = "sandbox|ls|rm",
};

/* The qemu backend's verb with the name (may be NULL): 0 with *out, or the
 * CLI's error. */
static int
snapshot_verb(struct cli *cli, enum backend_verb verb, const char *name, cJSON **out)
{
	cJSON *args = cJSON_CreateObject();
	struct sbx_err e;
	int rc;

	if (name != NULL)
		cJSON_AddStringToObject(args, "name", name);
	rc = core_admin(cli->core, "qemu", verb, args, NULL, out, &e);
	cJSON_Delete(args);
	return rc < 0 ? cli_error(&e) : 0;
}

static int
snapshot_ls(struct cli *cli, int argc, char **argv)
{
	int json = argc == 2 && strcmp(argv[1], "--json") == 0;
	cJSON *arr = NULL, *o;
	int rc;

	if (argc > 1 && !json)
		return cli_usage(&cmd_snapshot_entry, "unexpected argument '%s'", argv[1]);
	if ((rc = snapshot_verb(cli, BACKEND_SNAPSHOT_LIST, NULL, &arr)) != 0)
		return rc;
	if (json) {
		cli_json_print(arr);
	} else {
		cli_printf(stdout, "%-20s %-12s %-10s %-6s %-5s %s\n", "NAME", "SOURCE", "IMAGE",
		    "MEMORY", "VCPUS", "STATE");
		cJSON_ArrayForEach(o, arr) {
			const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "memory_mib");
			const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, "cpus");
			const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, "memory_bytes");
			if (cJSON_GetObjectItemCaseSensitive(o, "error") != NULL) {
				cli_printf(stdout, "%-20s (broken: %s)\n", jstr(o, "name", "-"), jstr(o, "error", "-"));
				continue;
			}
			cli_printf(stdout, "%-20s %-12s %-10s %-6.0f %-5.0f %.0fM\n", jstr(o, "name", "-"),
			    jstr(o, "source", "-"), jstr(o, "image", "-"), cJSON_IsNumber(m) ? m->valuedouble : 0,
			    cJSON_IsNumber(c) ? c->valuedouble : 0,
			    cJSON_IsNumber(b) ? b->valuedouble / (1 << 20) : 0);
		}
	}
	cJSON_Delete(arr);
	return 0;
}

static int
cmd_snapshot(struct cli *cli, int argc, char **argv)
{
	struct sbx_err e;
	int rc = 0;

	if (argc >= 2 && strcmp(argv[1], "ls") == 0)
		return snapshot_ls(cli, argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "rm") == 0) {
		if (argc < 3)
			return cli_usage(&cmd_snapshot_entry, "rm takes snapshot names");
		for (int i = 2; i < argc; i++) {
			cJSON *out = NULL;
			int r = snapshot_verb(cli, BACKEND_SNAPSHOT_RM, argv[i], &out);
			cJSON_Delete(out);
			rc = r > rc ? r : rc;
		}
		return rc;
	}
	if (argc != 3 || argv[1][0] == '-' || argv[2][0] == '-')
		return cli_usage(&cmd_snapshot_entry, "expected a sandbox and a snapshot name, ls or rm");
	if (core_snapshot(cli->core, argv[1], argv[2], &e) < 0)
		return cli_error(&e);
	cli_printf(stdout, "%s\n", argv[2]);
	return 0;
}
