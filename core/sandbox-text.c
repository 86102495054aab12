/* A sandbox record as a person reads it: `sbxtop status`'s lines, which the
 * console's Info tab shows too.  libc and cJSON only: the thin sbxtop has it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/paths.h"
#include "core/sandbox.h"
#include "lib/buf.h"
#include "lib/utf8.h"
#include "lib/util.h"

void
sandbox_span(int64_t s, char *buf, size_t len)
{
	if (s < 0)
		snprintf(buf, len, "-");
	else if (s >= 86400)
		snprintf(buf, len, "%lldd%02lldh", (long long)(s / 86400),
		    (long long)(s % 86400 / 3600));
	else if (s >= 3600)
		snprintf(buf, len, "%lldh%02lldm", (long long)(s / 3600),
		    (long long)(s % 3600 / 60));
	else if (s >= 60)
		snprintf(buf, len, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
	else
		snprintf(buf, len, "%llds", (long long)s);
}

static void
when(int64_t ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
}

/* Text a sandbox or an agent wrote, with its control characters escaped. */
static const char *
safe(const char *s, char *buf, size_t len)
{
	utf8_escape_controls(s, strlen(s), buf, len, 0);
	return buf;
}

static double
count(const cJSON *k, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(k, name);

	return cJSON_IsNumber(v) && v->valuedouble > 0 ? v->valuedouble : 0;
}

/* Network rules: the entries, and what the proxy counted (STATE/net/ID,
 * core/net.h), read from its file so no core is needed. */
static void
describe_net(const struct sandbox *s, struct buf *out)
{
	struct sbx_err e;
	_cleanup_free_ char *state = paths_dir(PATHS_STATE, &e), *path = NULL, *text = NULL;
	const char *lists[] = { "allow", "deny" };
	char sb[1024];
	cJSON *k = NULL;

	for (size_t i = 0; i < ARRAY_SIZE(lists); i++) {
		const cJSON *it;
		int n = 0;
		buf_printf(out, "          %s", lists[i]);
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(s->net, lists[i]))
			if (cJSON_IsString(it))
				buf_printf(out, "%s%s", n++ ? ", " : " ",
				    safe(it->valuestring, sb, sizeof sb));
		buf_printf(out, "%s\n", n ? "" : " -");
	}
	if (state != NULL) {
		path = xasprintf("%s/net/%s/counts.json", state, s->id);
		text = read_file(path, 4096, NULL);
		k = text ? cJSON_Parse(text) : NULL;
	}
	buf_printf(out, "          %.0f allowed, %.0f denied, %.0f asked, %.0f bytes up, %.0f "
	    "down (`sbxtop net %s` for more)\n", count(k, "allowed"), count(k, "denied"),
	    count(k, "asked"), count(k, "bytes_up"), count(k, "bytes_down"), s->id);
	cJSON_Delete(k);
}

/* What it uses now ("usage" in the record). */
static void
describe_usage(const struct sandbox *s, struct buf *out)
{
	const cJSON *u = s->usage, *x;

	buf_printf(out, "use:     ");
	if (cJSON_IsNumber(x = cJSON_GetObjectItem(u, "cpu_pct")))
		buf_printf(out, " cpu %.1f%%", x->valuedouble);
	if (cJSON_IsNumber(x = cJSON_GetObjectItem(u, "mem_bytes")))
		buf_printf(out, " mem %.1f MiB", x->valuedouble / 1048576);
	if (cJSON_IsNumber(x = cJSON_GetObjectItem(u, "pids")))
		buf_printf(out, " pids %.0f", x->valuedouble);
	if (cJSON_IsNumber(x = cJSON_GetObjectItem(u, "disk_bytes"))) {
		if (s->limits.disk_mib > 0)
			buf_printf(out, " disk %.1f of %lld MiB", x->valuedouble / 1048576,
			    (long long)s->limits.disk_mib);
		else
			buf_printf(out, " disk %.1f MiB", x->valuedouble / 1048576);
	}
	if (cJSON_IsNumber(x = cJSON_GetObjectItem(u, "net_rx_bytes")))
		buf_printf(out, " net in %.0f B", x->valuedouble);
	if (cJSON_IsNumber(x = cJSON_GetObjectItem(u, "net_tx_bytes")))
		buf_printf(out, " out %.0f B", x->valuedouble);
	if (cJSON_IsNumber(x = cJSON_GetObjectItem(u, "oom_kills")) && x->valuedouble > 0)
		buf_printf(out, " oom-kills %.0f", x->valuedouble);
	buf_printf(out, "\n");
}

void
sandbox_describe(const struct sandbox *s, int asked, const cJSON *health, int64_t now,
    struct buf *out)
{
	char a[32], span[16], sb[2048];
	const cJSON *f;
	int i = 0;

	buf_printf(out, "id:       %s\n", s->id);
	buf_printf(out, "name:     %s\n", s->name ? s->name : "-");
	buf_printf(out, "backend:  %s\n", s->backend ? s->backend : "-");
	if (s->host != NULL)
		buf_printf(out, "host:     %s\n", safe(s->host, sb, sizeof sb));
	buf_printf(out, "image:    %s", s->image ? safe(s->image, sb, sizeof sb) :
	    "(backend default)");
	/* An OCI image's id (its config's digest), short as docker shows one. */
	if (s->image_id != NULL && strncmp(s->image_id, "sha256:", 7) == 0)
		buf_printf(out, " (%.19s)", s->image_id);
	buf_printf(out, "\n");
	buf_printf(out, "state:    %s%s%s\n", sbx_state_name(s->state), s->state_reason ? ": " : "",
	    s->state_reason ? safe(s->state_reason, sb, sizeof sb) : "");
	when(s->created_at, a, sizeof a);
	sandbox_span((now - s->created_at) / 1000, span, sizeof span);
	buf_printf(out, "created:  %s (%s ago)\n", a, span);
	if (s->expires_at) {
		when(s->expires_at, a, sizeof a);
		sandbox_span((s->expires_at - now) / 1000, span, sizeof span);
		buf_printf(out, "expires:  %s (%s)\n", a, s->expires_at > now ? span : "passed");
	}
	if (s->idle_s) {
		sandbox_span(s->idle_s, span, sizeof span);
		buf_printf(out, "idle:     stops after %s without requests\n", span);
	} else {
		buf_printf(out, "idle:     no idle policy\n");
	}
	if (s->idle_suspend_s) {
		sandbox_span(s->idle_suspend_s, span, sizeof span);
		buf_printf(out, "suspend:  after %s without calls (the next call resumes it)\n", span);
	}
	buf_printf(out, "limits:   memory ");
	if (s->limits.memory_mib)
		buf_printf(out, "%lld MiB", (long long)s->limits.memory_mib);
	else
		buf_printf(out, "none");
	if (s->limits.cpus > 0)
		buf_printf(out, ", cpus %g", s->limits.cpus);
	else
		buf_printf(out, ", cpus none");
	if (s->limits.pids)
		buf_printf(out, ", pids %lld", (long long)s->limits.pids);
	else
		buf_printf(out, ", pids none");
	if (s->limits.disk_mib)
		buf_printf(out, ", disk %lld MiB\n", (long long)s->limits.disk_mib);
	else
		buf_printf(out, ", disk none\n");
	if (s->limits_note)
		buf_printf(out, "          not enforced: %s\n", safe(s->limits_note, sb, sizeof sb));
	buf_printf(out, "network:  %s\n", s->network ? s->network : "-");
	if (s->net != NULL)
		describe_net(s, out);
	if (s->usage != NULL)
		describe_usage(s, out);
	buf_printf(out, "owner:    %s\n", s->owner ? safe(s->owner, sb, sizeof sb) : "-");
	if (s->api_key != NULL)
		buf_printf(out, "api key:  %s\n", safe(s->api_key, sb, sizeof sb));
	cJSON_ArrayForEach(f, s->forwards) {
		const char *fb = cJSON_GetStringValue(cJSON_GetObjectItem(f, "bind"));
		buf_printf(out, "%s %s:%d->%d (pid %d)\n", i++ ? "         " : "forwards:",
		    fb ? safe(fb, sb, sizeof sb) : "?",
		    (int)cJSON_GetNumberValue(cJSON_GetObjectItem(f, "local")),
		    (int)cJSON_GetNumberValue(cJSON_GetObjectItem(f, "remote")),
		    (int)cJSON_GetNumberValue(cJSON_GetObjectItem(f, "pid")));
	}
	if (i == 0)
		buf_printf(out, "forwards: none\n");
	buf_printf(out, "agent:    %s", s->agent_endpoint ? safe(s->agent_endpoint, sb,
	    sizeof sb) : "-");
	if (health)
		buf_printf(out, " (answering, version %s)\n", safe(cJSON_GetStringValue(
		    cJSON_GetObjectItem(health, "version")) ?: "?", sb, sizeof sb));
	else
		buf_printf(out, "%s\n", asked && s->state == SBX_RUNNING ? " (not answering)" : "");
}
