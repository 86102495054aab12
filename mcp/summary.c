/* The sandbox summary: the one object create, status, suspend, resume and list
 * answer with, so an agent learns one shape. */
#include <math.h>
#include <stdio.h>
#include <time.h>

#include "lib/jspec.h"
#include "lib/util.h"
#include "mcp/budget.h"
#include "mcp/tool-util.h"

void
mcp_iso8601(int64_t ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void
add_str(cJSON *o, const char *k, const char *v)
{
	/* Absent rather than null: portable schemas have no "type": [.., "null"]. */
	if (v != NULL)
		cJSON_AddStringToObject(o, k, v);
}

cJSON *
mcp_summary(const struct sandbox *s)
{
	cJSON *o = cJSON_CreateObject(), *l;
	char t[40];

	cJSON_AddStringToObject(o, "sandbox_id", s->id);
	add_str(o, "name", s->name);
	cJSON_AddStringToObject(o, "backend", s->backend ? s->backend : "");
	add_str(o, "host", s->host);
	cJSON_AddStringToObject(o, "state", sbx_state_name(s->state));
	add_str(o, "state_reason", s->state_reason);
	mcp_iso8601(s->created_at, t, sizeof t);
	cJSON_AddStringToObject(o, "created_at", t);
	if (s->expires_at > 0) {
		int64_t left = (s->expires_at - wall_ms()) / 1000;
		mcp_iso8601(s->expires_at, t, sizeof t);
		cJSON_AddStringToObject(o, "expires_at", t);
		if (s->state == SBX_TERMINATED || s->state == SBX_ERROR || left < 0)
			left = 0;
		cJSON_AddNumberToObject(o, "time_left_s", (double)left);
	}
	cJSON_AddStringToObject(o, "network", s->network ? s->network : "none");
	l = cJSON_AddObjectToObject(o, "limits");
	cJSON_AddNumberToObject(l, "memory_mib", (double)s->limits.memory_mib);
	cJSON_AddNumberToObject(l, "cpus", s->limits.cpus);
	cJSON_AddNumberToObject(l, "pids", (double)s->limits.pids);
	cJSON_AddNumberToObject(l, "disk_mib", (double)s->limits.disk_mib);
	add_str(o, "limits_note", s->limits_note);
	add_str(o, "owner", s->owner);
	add_str(o, "image", s->image);
	return o;
}

void
mcp_render_summary(const cJSON *o, struct mcp_text *t, int one_line)
{
	const cJSON *l = cJSON_GetObjectItemCaseSensitive(o, "limits");
	const cJSON *u = cJSON_GetObjectItemCaseSensitive(o, "usage");
	const char *name = jstr(o, "name", NULL), *reason = jstr(o, "state_reason", NULL);
	const char *host = jstr(o, "host", NULL), *note = jstr(o, "limits_note", NULL);
	double left = jnum(o, "time_left_s", NAN);
	char a[32];

	mcp_text_printf(t, "%s%s%s%s: %s, %s%s%s", jstr(o, "sandbox_id", NULL), name ? " \"" : "",
	    name ? name : "", name ? "\"" : "", jstr(o, "state", NULL), jstr(o, "backend", NULL),
	    host ? " on " : "", host ? host : "");
	if (!isnan(left))
		mcp_text_printf(t, ", %s left", mcp_fmt_ms((int64_t)left * 1000, a, sizeof a));
	if (reason != NULL)
		mcp_text_printf(t, " (%s)", reason);
	if (one_line) {
		if (jstr(o, "owner", NULL) != NULL)
			mcp_text_printf(t, ", owner %s", jstr(o, "owner", NULL));
		return;
	}
	mcp_text_add(t, "\nlimits:", 8);
	for (int i = 0; i < 4; i++) {
		static const char *const k[] = { "memory_mib", "cpus", "pids", "disk_mib" };
		static const char *const what[] = { "memory", "CPUs", "processes", "disk" };
		static const char *const unit[] = { " MiB", "", "", " MiB" };
		double v = jnum(l, k[i], NAN);
		if (v > 0)
			mcp_text_printf(t, "%s %s %g%s", i ? "," : "", what[i], v, unit[i]);
		else
			mcp_text_printf(t, "%s %s unlimited", i ? "," : "", what[i]);
	}
	mcp_text_printf(t, "; network %s", jstr(o, "network", NULL));
	if (note != NULL)
		mcp_text_printf(t, "\nnot enforced: %s", note);
	mcp_text_printf(t, "\ncreated %s", jstr(o, "created_at", NULL));
	if (jstr(o, "expires_at", NULL) != NULL)
		mcp_text_printf(t, ", expires %s", jstr(o, "expires_at", NULL));
	if (jstr(o, "owner", NULL) != NULL)
		mcp_text_printf(t, ", owner %s", jstr(o, "owner", NULL));
	if (jstr(o, "image", NULL) != NULL)
		mcp_text_printf(t, ", image %s", jstr(o, "image", NULL));
	if (cJSON_IsObject(u)) {
		static const struct {
			const char	*key, *label;
			int		 kind;	/* 0 a count, 1 bytes, 2 a percentage */
		} fields[] = {
			{ "cpu_pct", "CPU", 2 }, { "mem_bytes", "memory", 1 },
			{ "pids", "processes", 0 }, { "disk_bytes", "disk", 1 },
			{ "net_rx_bytes", "network in", 1 }, { "net_tx_bytes", "out", 1 },
			{ "oom_kills", "OOM kills", 0 },
		};
		const char *sep = "\nusage: ";
		for (size_t i = 0; i < ARRAY_SIZE(fields); i++) {
			double v = jnum(u, fields[i].key, NAN);
			if (isnan(v))
				continue;
			if (fields[i].kind == 1)
				mcp_text_printf(t, "%s%s %s", sep, fields[i].label,
				    mcp_fmt_size((uint64_t)v, a, sizeof a));
			else
				mcp_text_printf(t, "%s%s %g%s", sep, fields[i].label, v,
				    fields[i].kind == 2 ? "%" : "");
			sep = ", ";
		}
	}
}

void
mcp_render_summary_result(const cJSON *r, struct mcp_text *t)
{
	mcp_render_summary(r, t, 0);
}

void
mcp_render_sandboxes(const cJSON *r, struct mcp_text *t)
{
	const cJSON *it, *arr = cJSON_GetObjectItemCaseSensitive(r, "sandboxes");
	const cJSON *van = cJSON_GetObjectItemCaseSensitive(r, "vanished");
	double total = jnum(r, "total", NAN), off = jnum(r, "offset", NAN);
	const char *next = jstr(r, "next_cursor", NULL);
	int n = cJSON_GetArraySize(arr);
	char a[32];

	if (isnan(total))
		total = n;
	mcp_text_printf(t, "%s sandbox%s", mcp_fmt_count((uint64_t)total, a, sizeof a),
	    total == 1 ? "" : "es");
	mcp_text_page(t, isnan(off) ? 0 : (uint64_t)off, (size_t)n, next);
	cJSON_ArrayForEach(it, arr) {
		mcp_text_add(t, "\n", 1);
		mcp_render_summary(it, t, 1);
	}
	cJSON_ArrayForEach(it, van)
		mcp_text_printf(t, "\n%s vanished since the last sandbox_list: %s",
		    jstr(it, "sandbox_id", NULL), jstr(it, "reason", NULL));
}
