/* sbxtop status: one sandbox in detail, reconciled with its backend, and whether
 * its agent answers. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "core/client.h"
#include "core/paths.h"
#include "lib/util.h"

static int cmd_status(struct cli *cli, int argc, char **argv);

const struct cmd_entry cmd_status_entry = {
	"status", "ID [--json]", "show one sandbox in detail",
	"  ID       an id, a unique prefix of one, or a name\n"
	"  --json   the record as JSON, with \"agent\": the agent's /health or null, and\n"
	"           \"usage\": what it uses now (cpu_pct, mem_bytes, pids, disk_bytes,\n"
	"           net_rx_bytes, net_tx_bytes, oom_kills) where its backend can tell;\n"
	"           \"limits\" has disk_mib, the most disk_bytes may reach\n",
	cmd_status,
};

/* Network rules: the entries and what the proxy counted (STATE/net/ID,
 * core/net.h), read here so the thin binary needs no core. */
static void
print_net(const struct sandbox *s)
{
	struct sbx_err e;
	_cleanup_free_ char *state = paths_dir(PATHS_STATE, &e), *path = NULL, *text = NULL;
	const char *lists[] = { "allow", "deny" };
	cJSON *k = NULL;

	for (size_t i = 0; i < ARRAY_SIZE(lists); i++) {
		const cJSON *it;
		int n = 0;
		printf("          %s", lists[i]);
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(s->net, lists[i]))
			if (cJSON_IsString(it))
				printf("%s%s", n++ ? ", " : " ", it->valuestring);
		printf("%s\n", n ? "" : " -");
	}
	if (state != NULL) {
		path = xasprintf("%s/net/%s/counts.json", state, s->id);
		text = read_file(path, 4096, NULL);
		k = text ? cJSON_Parse(text) : NULL;
	}
	printf("          %.0f allowed, %.0f denied, %.0f asked, %.0f bytes up, %.0f down "
	    "(`sbxtop net %s` for more)\n",
	    cJSON_GetNumberValue(cJSON_GetObjectItem(k, "allowed")) > 0 ?
	    cJSON_GetNumberValue(cJSON_GetObjectItem(k, "allowed")) : 0,
	    cJSON_GetNumberValue(cJSON_GetObjectItem(k, "denied")) > 0 ?
	    cJSON_GetNumberValue(cJSON_GetObjectItem(k, "denied")) : 0,
	    cJSON_GetNumberValue(cJSON_GetObjectItem(k, "asked")) > 0 ?
	    cJSON_GetNumberValue(cJSON_GetObjectItem(k, "asked")) : 0,
	    cJSON_GetNumberValue(cJSON_GetObjectItem(k, "bytes_up")) > 0 ?
	    cJSON_GetNumberValue(cJSON_GetObjectItem(k, "bytes_up")) : 0,
	    cJSON_GetNumberValue(cJSON_GetObjectItem(k, "bytes_down")) > 0 ?
	    cJSON_GetNumberValue(cJSON_GetObjectItem(k, "bytes_down")) : 0, s->id);
	cJSON_Delete(k);
}

static void
when(int64_t ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
}

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
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' }, { NULL, 0, NULL, 0 },
	};
	struct sandbox *s;
	struct client *cl;
	cJSON *health = NULL;
	struct sbx_err e;
	char safe[4096];
	int json = 0, c, rc;
	int64_t now = wall_ms();
	char a[32], b[32], span[16];

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", lo, NULL)) != -1) {
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
		char *t = cJSON_Print(o);
		printf("%s\n", t);
		free(t);
		cJSON_Delete(o);
	} else {
		printf("id:       %s\n", s->id);
		printf("name:     %s\n", s->name ? s->name : "-");
		printf("backend:  %s\n", s->backend ? s->backend : "-");
		if (s->host != NULL)
			printf("host:     %s\n", s->host);
		printf("image:    %s\n", s->image ? s->image : "(backend default)");
		printf("state:    %s%s%s\n", sbx_state_name(s->state),
		    s->state_reason ? ": " : "", s->state_reason ?
		    cli_safe(s->state_reason, safe, sizeof safe) : "");
		when(s->created_at, a, sizeof a);
		cli_span((now - s->created_at) / 1000, span, sizeof span);
		printf("created:  %s (%s ago)\n", a, span);
		if (s->expires_at) {
			when(s->expires_at, b, sizeof b);
			cli_span((s->expires_at - now) / 1000, span, sizeof span);
			printf("expires:  %s (%s)\n", b, s->expires_at > now ? span : "passed");
		}
		if (s->idle_s) {
			cli_span(s->idle_s, span, sizeof span);
			printf("idle:     stops after %s without requests\n", span);
		} else {
			printf("idle:     no idle policy\n");
		}
		if (s->idle_suspend_s) {
			cli_span(s->idle_suspend_s, span, sizeof span);
			printf("suspend:  after %s without calls (the next call resumes it)\n", span);
		}
		printf("limits:   memory ");
		if (s->limits.memory_mib)
			printf("%lld MiB", (long long)s->limits.memory_mib);
		else
			printf("none");
		printf(", cpus ");
		if (s->limits.cpus > 0)
			printf("%g", s->limits.cpus);
		else
			printf("none");
		printf(", pids ");
		if (s->limits.pids)
			printf("%lld", (long long)s->limits.pids);
		else
			printf("none");
		if (s->limits.disk_mib)
			printf(", disk %lld MiB\n", (long long)s->limits.disk_mib);
		else
			printf(", disk none\n");
		if (s->limits_note)
			printf("          not enforced: %s\n",
			    cli_safe(s->limits_note, safe, sizeof safe));
		printf("network:  %s\n", s->network ? s->network : "-");
		if (s->net != NULL)
			print_net(s);
		if (s->usage != NULL) {
			/* What it uses now ("usage" in --json). */
			const cJSON *u = s->usage, *x;
			printf("use:     ");
			if (cJSON_IsNumber(x = cJSON_GetObjectItem(u, "cpu_pct")))
				printf(" cpu %.1f%%", x->valuedouble);
			if (cJSON_IsNumber(x = cJSON_GetObjectItem(u, "mem_bytes")))
				printf(" mem %.1f MiB", x->valuedouble / 1048576);
			if (cJSON_IsNumber(x = cJSON_GetObjectItem(u, "pids")))
				printf(" pids %.0f", x->valuedouble);
			if (cJSON_IsNumber(x = cJSON_GetObjectItem(u, "disk_bytes")))
			{
				if (s->limits.disk_mib > 0)
					printf(" disk %.1f of %lld MiB", x->valuedouble / 1048576,
					    (long long)s->limits.disk_mib);
				else
					printf(" disk %.1f MiB", x->valuedouble / 1048576);
			}
			if (cJSON_IsNumber(x = cJSON_GetObjectItem(u, "net_rx_bytes")))
				printf(" net in %.0f B", x->valuedouble);
			if (cJSON_IsNumber(x = cJSON_GetObjectItem(u, "net_tx_bytes")))
				printf(" out %.0f B", x->valuedouble);
			if (cJSON_IsNumber(x = cJSON_GetObjectItem(u, "oom_kills")) && x->valuedouble > 0)
				printf(" oom-kills %.0f", x->valuedouble);
			printf("\n");
		}
		printf("owner:    %s\n", s->owner ? s->owner : "-");
		{
			const cJSON *f;
			int i = 0;
			cJSON_ArrayForEach(f, s->forwards) {
				const char *fb = cJSON_GetStringValue(cJSON_GetObjectItem(f, "bind"));
				printf("%s %s:%d -> port %d (pid %d)\n", i++ ? "         " : "forwards:",
				    fb ? fb : "?", (int)cJSON_GetNumberValue(cJSON_GetObjectItem(f, "local")),
				    (int)cJSON_GetNumberValue(cJSON_GetObjectItem(f, "remote")),
				    (int)cJSON_GetNumberValue(cJSON_GetObjectItem(f, "pid")));
			}
			if (i == 0)
				printf("forwards: none\n");
		}
		printf("agent:    %s", s->agent_endpoint ? s->agent_endpoint : "-");
		if (health)
			printf(" (answering, version %s)\n",
			    cJSON_GetStringValue(cJSON_GetObjectItem(health, "version")) ?: "?");
		else
			printf("%s\n", s->state == SBX_RUNNING ? " (not answering)" : "");
	}
	cJSON_Delete(health);
	sandbox_free(s);
	return 0;
}
