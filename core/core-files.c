/* The sandbox's files through its agent's file routes (core_files): one function
 * for the five routes, since the agent already checks every field strictly and
 * names the bad one; the core adds the sandbox lookup, the state checks and the
 * events. */
#include <stdio.h>
#include <string.h>

#include "core/core-int.h"
#include "lib/util.h"

/* A 96 MiB write body takes a while on a slow disk; nothing else should. */
#define FILES_TIMEOUT_MS	(10 * 60 * 1000)

int
core_files(struct core *c, const char *key, const char *op, const cJSON *req,
    const char *origin, cJSON **out, struct sbx_err *e)
{
	static const char *const ops[] = { "read", "write", "list", "stat", "delete" };
	struct sandbox *s = NULL;
	struct agentc *a = NULL;
	char path[32];
	int known = 0, rc;

	*out = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(ops); i++)
		known |= strcmp(op, ops[i]) == 0;
	if (!known)
		return sbx_error(e, SBX_EINTERNAL, NULL, "no file operation '%s'", op);
	if (!cJSON_IsObject(req))
		return sbx_error(e, SBX_EINTERNAL, NULL, "a file request must be an object");
	if (core_agent_for(c, key, &s, &a, e) < 0)
		return -1;
	agentc_set_origin(a, origin ? origin : "cli");
	snprintf(path, sizeof path, "/v1/files/%s", op);
	rc = agentc_call(a, "POST", path, req, FILES_TIMEOUT_MS, out, e);
	if (rc >= 0 && (strcmp(op, "write") == 0 || strcmp(op, "delete") == 0)) {
		cJSON *ev = cJSON_CreateObject();
		const char *p = cJSON_GetStringValue(cJSON_GetObjectItem(*out, "path"));
		cJSON_AddStringToObject(ev, "path", p ? p : "");
		cJSON_AddStringToObject(ev, "origin", origin ? origin : "cli");
		core_events_emit(c, strcmp(op, "write") == 0 ? "file.written" : "file.deleted",
		    s->id, ev);
	}
	agentc_free(a);
	sandbox_free(s);
	return rc < 0 ? -1 : 0;
}
