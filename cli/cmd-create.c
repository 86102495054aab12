/* sbxtop create: bring up a sandbox and print its id. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/client/client.h"
#include "lib/util.h"

static int cmd_create(struct cli *cli, int argc, char **argv);
static const struct option *create_options(void);

enum { OPT_NAME = 1000, OPT_ENV, OPT_JSON, OPT_SNAPSHOT, OPT_HOST, OPT_ALLOW, OPT_DENY, OPT_ASK,
	OPT_SECRET, OPT_CONFIG = 2000 };

const struct cmd_entry cmd_create_entry = {
	"create",
	"[--name N] [--backend B] [--host NAME|auto] [--image REF|DIR] [--memory MiB]\n"
	"       [--disk MiB] [--cpus N] [--pids N] [--max-duration S] [--idle S]\n"
	"       [--network none|egress|rules] [--allow ENTRY]... [--deny ENTRY]... [--ask]\n"
	"       [--secret NAME]...\n"
	"       [--env K=V]... [--from-snapshot NAME] [--json]",
	"create a sandbox and print its id",
	"  --name N          a name to use instead of the id (unique among live sandboxes)\n"
	"  --backend B       ns or qemu (default: the backend option)\n"
	"  --host NAME       on remote host NAME (`sbxtop host ls`), an ns sandbox reached\n"
	"                    over SSH; auto: the host with the most headroom\n"
	"  --image REF|DIR   an OCI image (debian:12, HOST:PORT/name:tag; pulled when\n"
	"                    the store lacks it, `sbxtop image`); ns: or a root filesystem\n"
	"                    directory; qemu: or a VM image's name (default: the\n"
	"                    backend's own: the host's system on ns)\n"
	"  --memory MiB      memory limit, 0 to 1048576 (0: none); on ns /tmp and\n"
	"                    /dev/shm count against it (at most a half and a quarter)\n"
	"  --disk MiB        disk limit of what the sandbox writes (its root's writable\n"
	"                    layers and /workspace), 0 to 1048576 (default 4096; 0: none).\n"
	"                    ns as root: its own filesystem, writes past it get ENOSPC;\n"
	"                    ns as an ordinary user: no file above it, and the core\n"
	"                    server suspends a sandbox over it (sbxtop(1), LIMITS);\n"
	"                    qemu: the image's size bounds it\n"
	"  --cpus N          CPU limit, 0 to 1024, may be fractional (0: none)\n"
	"  --pids N          process limit, 0 to 4194304 (default 4096; 0: none)\n"
	"  --max-duration S  lifetime in seconds, 1 to 86400 (default 14400)\n"
	"  --idle S          stop after S seconds without requests, 0 to 86400 (0: never)\n"
	"  --idle-suspend S  suspend after S seconds without calls, execs or forwarded\n"
	"                    connections, 0 to 86400 (0: never); the next one resumes it.\n"
	"                    The core server watches; the deadline keeps counting\n"
	"  --network MODE    none (loopback only, default), egress (everything, directly)\n"
	"                    or rules (only what --allow names, through the core's proxy;\n"
	"                    ns and qemu on this host)\n"
	"  --allow ENTRY     with network rules (implied): allow a domain (api.github.com),\n"
	"                    *.domain (its subdomains), *, an address or CIDR, each with\n"
	"                    :PORT or not (repeatable; `sbxtop help net`)\n"
	"  --deny ENTRY      deny one (repeatable; wins over every allow entry)\n"
	"  --ask             hold a connection no entry covers until the operator answers\n"
	"                    (`sbxtop net ID pending`, the console)\n"
	"  --secret NAME     give the sandbox $NAME holding a placeholder; its proxy puts\n"
	"                    the secret (`sbxtop secret`) in the secret's header of\n"
	"                    requests to the secret's host only (repeatable; implies\n"
	"                    network rules)\n"
	"  --env K=V         environment of every command in the sandbox (repeatable)\n"
	"  --from-snapshot NAME  qemu: resume snapshot NAME (`sbxtop snapshot ls`)\n"
	"                    instead of booting: its memory, disk, memory size and\n"
	"                    vCPUs, with a new id, secret, deadline and host port\n"
	"  --json            print the whole record as JSON instead of the id\n"
	"With a pool in sbxtop.conf (pool = 2, say) the core server keeps sandboxes\n"
	"ready: a create that matches a profile takes one (sbxtop.conf(5), pool).\n",
	cmd_create,
	.options_fn = create_options,
	.words = "",
};

/* The configuration's options that create takes (their flags are the option
 * table's), then its own; made once. */
static const struct option *
create_options(void)
{
	static const char *const create_opts[] = {
		"backend", "image", "memory", "disk", "cpus", "pids", "max_duration", "idle",
		"idle_suspend", "network",
	};
	static struct option *lo;
	size_t nopt, n = 0;
	const struct config_option *opts = config_options(&nopt);

	if (lo != NULL)
		return lo;
	lo = xcalloc(ARRAY_SIZE(create_opts) + 10, sizeof *lo);
	for (size_t i = 0; i < ARRAY_SIZE(create_opts); i++) {
		const struct config_option *o = config_option_find(create_opts[i]);
		lo[n++] = (struct option){ o->flag, required_argument, NULL,
		    OPT_CONFIG + (int)(o - opts) };
	}
	lo[n++] = (struct option){ "name", required_argument, NULL, OPT_NAME };
	lo[n++] = (struct option){ "env", required_argument, NULL, OPT_ENV };
	lo[n++] = (struct option){ "json", no_argument, NULL, OPT_JSON };
	lo[n++] = (struct option){ "from-snapshot", required_argument, NULL, OPT_SNAPSHOT };
	lo[n++] = (struct option){ "host", required_argument, NULL, OPT_HOST };
	lo[n++] = (struct option){ "allow", required_argument, NULL, OPT_ALLOW };
	lo[n++] = (struct option){ "deny", required_argument, NULL, OPT_DENY };
	lo[n++] = (struct option){ "ask", no_argument, NULL, OPT_ASK };
	lo[n++] = (struct option){ "secret", required_argument, NULL, OPT_SECRET };
	return lo;
}


/* core_create in the core server.  The options are resolved here (flags, this
 * process's environment and config file) and sent whole, so the sandbox is the
 * one this command would have made itself. */
static int
create_remote(struct client *c, const struct config *cfg, const struct core_create_opts *co,
    struct sandbox **out, struct sbx_err *e)
{
	cJSON *p = cJSON_CreateObject(), *r = NULL;

	if (co->name)
		cJSON_AddStringToObject(p, "name", co->name);
	cJSON_AddStringToObject(p, "backend", config_str(cfg, "backend"));
	/* "" too: the backend's default, not the server's configured image. */
	cJSON_AddStringToObject(p, "image", config_str(cfg, "image"));
	cJSON_AddStringToObject(p, "network", config_str(cfg, "network"));
	cJSON_AddNumberToObject(p, "memory_mib", (double)config_int(cfg, "memory"));
	cJSON_AddNumberToObject(p, "disk_mib", (double)config_int(cfg, "disk"));
	cJSON_AddNumberToObject(p, "cpus", config_num(cfg, "cpus"));
	cJSON_AddNumberToObject(p, "pids", (double)config_int(cfg, "pids"));
	cJSON_AddNumberToObject(p, "max_duration_s", (double)config_int(cfg, "max_duration"));
	cJSON_AddNumberToObject(p, "idle_s", (double)config_int(cfg, "idle"));
	cJSON_AddNumberToObject(p, "idle_suspend_s", (double)config_int(cfg, "idle_suspend"));
	if (co->env)
		cJSON_AddItemToObject(p, "env", cJSON_Duplicate(co->env, 1));
	if (co->host)
		cJSON_AddStringToObject(p, "host", co->host);
	if (co->from_snapshot)
		cJSON_AddStringToObject(p, "from_snapshot", co->from_snapshot);
	if (co->net)
		cJSON_AddItemToObject(p, "net", cJSON_Duplicate(co->net, 1));
	/* --allow alone implies network rules, which a default "none" sent
	 * along would refuse. */
	if (co->net && config_source_of(cfg, "network") == CONFIG_DEFAULT)
		cJSON_DeleteItemFromObjectCaseSensitive(p, "network");
	if (cli_call(c, "sbxtop/create", p, &r, e) < 0) {
		cJSON_Delete(p);
		return -1;
	}
	cJSON_Delete(p);
	*out = sandbox_from_json(r, e);
	cJSON_Delete(r);
	return *out ? 0 : -1;
}

static int
cmd_create(struct cli *cli, int argc, char **argv)
{
	size_t nopt;
	const struct config_option *opts = config_options(&nopt);
	const struct option *lo = create_options();
	struct core_create_opts co;
	cJSON *env = NULL, *net = NULL;
	struct sandbox *s = NULL;
	struct client *cl;
	char safe[4096];
	struct sbx_err e;
	int json = 0, c, n = 0, rc = 0;

	core_create_opts_init(&co);
	co.owner = "cli";
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:", lo, NULL)) != -1) {
		if (c == OPT_NAME)
			co.name = optarg;
		else if (c == OPT_HOST)
			co.host = optarg;
		else if (c == OPT_JSON)
			json = 1;
		else if (c == OPT_SNAPSHOT)
			co.from_snapshot = optarg;
		else if (c == OPT_ALLOW || c == OPT_DENY || c == OPT_ASK || c == OPT_SECRET) {
			const char *k = c == OPT_ALLOW ? "allow" : c == OPT_DENY ? "deny" : "secrets";
			cJSON *arr;
			if (net == NULL)
				net = cJSON_CreateObject();
			if (c == OPT_ASK) {
				cJSON_DeleteItemFromObjectCaseSensitive(net, "ask");
				cJSON_AddTrueToObject(net, "ask");
			} else {
				if ((arr = cJSON_GetObjectItemCaseSensitive(net, k)) == NULL)
					arr = cJSON_AddArrayToObject(net, k);
				cJSON_AddItemToArray(arr, cJSON_CreateString(optarg));
			}
		}
		else if (c == OPT_ENV) {
			if (cli_env_add(&env, optarg, &e) < 0) {
				rc = cli_error(&e);
				goto out;
			}
		} else if (c >= OPT_CONFIG && c < OPT_CONFIG + (int)nopt) {
			/* Through the option table: the range is checked and named there. */
			if (config_set(cli->cfg, opts[c - OPT_CONFIG].name, optarg, CONFIG_FLAG, &e) < 0) {
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
	co.env = env;
	co.net = net;
	if (config_source_of(cli->cfg, "network") != CONFIG_DEFAULT)
		co.network = config_str(cli->cfg, "network");
	if (cli_remote(cli, &cl)) {
		n = create_remote(cl, cli->cfg, &co, &s, &e);
		client_close(cl);
	} else {
		n = core_create(cli->core, &co, &s, &e);
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
	cJSON_Delete(env);
	cJSON_Delete(net);
	return rc;
}
