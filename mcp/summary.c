/* The sandbox summary: the one object create, status, suspend, resume and list
 * answer with, so an agent learns one shape. */
#include <stdio.h>
#include <time.h>

#include "lib/util.h"
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
