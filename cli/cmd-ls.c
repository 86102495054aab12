/* sbxtop ls: every known sandbox, as a table or JSON. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "lib/util.h"

static int cmd_ls(struct cli *cli, int argc, char **argv);

const struct cmd_entry cmd_ls_entry = {
	"ls", "[--json]", "list sandboxes",
	"  --json   a JSON array of records (id, name, backend, state, state_reason,\n"
	"           created_at, expires_at in ms since the epoch, limits, forwards, ...)\n"
	"  FWD is the number of port forwards (`sbxtop forward --list` shows them)\n"
	"  CPU%% is of one core since the previous listing, MEM what is charged to\n"
	"  the sandbox's cgroup (\"usage\" in --json; - where not known)\n",
	cmd_ls,
};

/* "mem=512M cpus=1 pids=4096 disk=4096M", and a mark when some were asked for but are not
 * enforced (limits_note says why; `sbxtop status` shows it). */
static void
limits_text(const struct sandbox *s, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	if (s->limits.memory_mib > 0)
		n += (size_t)snprintf(buf + n, len - n, "mem=%lldM ",
		    (long long)s->limits.memory_mib);
	if (s->limits.cpus > 0 && n < len)
		n += (size_t)snprintf(buf + n, len - n, "cpus=%g ", s->limits.cpus);
	if (s->limits.pids > 0 && n < len)
		n += (size_t)snprintf(buf + n, len - n, "pids=%lld ", (long long)s->limits.pids);
	if (s->limits.disk_mib > 0 && n < len)
		n += (size_t)snprintf(buf + n, len - n, "disk=%lldM ", (long long)s->limits.disk_mib);
	if (s->limits_note != NULL && n < len)
		n += (size_t)snprintf(buf + n, len - n, "(not all enforced) ");
	if (n == 0)
		snprintf(buf, len, "-");
	else if (n < len)
		buf[n - 1] = '\0';
}

static int
cmd_ls(struct cli *cli, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' }, { NULL, 0, NULL, 0 },
	};
	struct sandbox **v;
	size_t n;
	struct sbx_err e;
	char safe[4096];
	int json = 0, c, orphans;
	int64_t now = wall_ms();

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", lo, NULL)) != -1) {
		if (c == 'j')
			json = 1;
		else
			return cli_bad_option(&cmd_ls_entry, c, argv);
	}
	if (optind < argc)
		return cli_usage(&cmd_ls_entry, "unexpected argument '%s'", argv[optind]);
	if (cli_list(cli, &v, &n, &orphans, &e) < 0)
		return cli_error(&e);
	if (json) {
		cJSON *a = cJSON_CreateArray();
		for (size_t i = 0; i < n; i++)
			cJSON_AddItemToArray(a, sandbox_to_json(v[i], 0));
		char *t = cJSON_Print(a);
		printf("%s\n", t);
		free(t);
		cJSON_Delete(a);
	} else {
		printf("%-12s %-16s %-8s %-10s %-7s %-7s %5s %7s %-28s %s\n", "ID", "NAME",
		    "BACKEND", "STATE", "AGE", "LEFT", "CPU%", "MEM", "LIMITS", "FWD");
		for (size_t i = 0; i < n; i++) {
			struct sandbox *s = v[i];
			char age[16], left[16], lim[128], fwd[16];
			int live = s->state == SBX_RUNNING || s->state == SBX_SUSPENDED ||
			    s->state == SBX_CREATING;
			cli_span((now - s->created_at) / 1000, age, sizeof age);
			cli_span(live && s->expires_at ? (s->expires_at - now) / 1000 : -1, left,
			    sizeof left);
			limits_text(s, lim, sizeof lim);
			/* How many port forwards; `sbxtop forward --list` shows them. */
			snprintf(fwd, sizeof fwd, "%d", cJSON_GetArraySize(s->forwards));
			char bk[48];
			/* A remote sandbox shows its host: "ssh:big". */
			snprintf(bk, sizeof bk, "%s%s%s", s->backend ? s->backend : "-",
			    s->host ? ":" : "", s->host ? s->host : "");
			char cpu[16] = "-", mem[16] = "-";
			const cJSON *pc = cJSON_GetObjectItem(s->usage, "cpu_pct");
			const cJSON *mb = cJSON_GetObjectItem(s->usage, "mem_bytes");
			if (cJSON_IsNumber(pc))
				snprintf(cpu, sizeof cpu, "%.1f", pc->valuedouble);
			if (cJSON_IsNumber(mb))
				snprintf(mem, sizeof mem, "%.1fM", mb->valuedouble / 1048576);
			printf("%-12s %-16s %-8s %-10s %-7s %-7s %5s %7s %-28s %s\n", s->id,
			    s->name ? s->name : "-", bk, sbx_state_name(s->state), age, left, cpu,
			    mem, lim, s->forwards ? fwd : "-");
		}
	}
	/* Why a host's sandboxes are out of reach (they come back when it does),
	 * and which were suspended for idleness. */
	for (size_t i = 0; !json && i < n; i++)
		if (v[i]->state == SBX_SUSPENDED && v[i]->state_reason != NULL &&
		    strcmp(v[i]->state_reason, "idle") == 0)
			fprintf(stderr, "sbxtop: %s: suspended: idle (the next call resumes it)\n",
			    v[i]->id);
		else if (v[i]->state == SBX_UNREACHABLE)
			fprintf(stderr, "sbxtop: %s: %s\n", v[i]->id, v[i]->state_reason ?
			    cli_safe(v[i]->state_reason, safe, sizeof safe) : "its host is unreachable");
	/* Sandboxes no record names (a create whose core was killed): the
	 * next core server removes them, gc does at once. */
	if (orphans > 0)
		fprintf(stderr, "sbxtop: %d orphan%s: sandbox%s that no record names hold "
		    "processes or files on this host (`sbxtop gc --dry-run` lists them, "
		    "`sbxtop gc` removes them)\n", orphans, orphans == 1 ? "" : "s",
		    orphans == 1 ? "" : "es");
	core_list_free(v, n);
	return 0;
}
