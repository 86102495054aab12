/* The agent's exec journal from the host: list the running and recent execs of
 * a sandbox, and signal one (background jobs, runaway commands). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core-int.h"
#include "lib/util.h"

#define PROCS_TIMEOUT_MS 30000

int
core_execs(struct core *c, const char *key, cJSON **out, struct sbx_err *e)
{
	struct sandbox *s = NULL;
	struct agentc *a = NULL;
	cJSON *ans = NULL, *v;
	int rc = -1;

	*out = NULL;
	if (core_agent_for(c, key, &s, &a, e) < 0)
		return -1;
	if (agentc_call(a, "GET", "/v1/execs", NULL, PROCS_TIMEOUT_MS, &ans, e) >= 0) {
		v = cJSON_DetachItemFromObject(ans, "execs");
		if (cJSON_IsArray(v)) {
			*out = v;
			rc = 0;
		} else {
			cJSON_Delete(v);
			sbx_error(e, SBX_EAGENT, NULL, "sandbox %s: the agent's journal has no "
			    "\"execs\" array", s->id);
		}
	}
	cJSON_Delete(ans);
	agentc_free(a);
	sandbox_free(s);
	return rc;
}

/* Exec ids are the agent's ("x12"): keep them to what can go in a path. */
static int
exec_id_ok(const char *id)
{
	size_t n = strlen(id);

	return n > 0 && n < 32 &&
	    strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

int
core_exec_signal(struct core *c, const char *key, const char *exec_id, const char *sig,
    const char *origin, struct sbx_err *e)
{
	struct sandbox *s = NULL;
	struct agentc *a = NULL;
	cJSON *req, *ans = NULL, *ev;
	char path[80];
	int rc;

	if (!exec_id_ok(exec_id))
		return sbx_error(e, SBX_EINVAL, NULL, "'%s' is not an exec id (like x12)", exec_id);
	if (core_agent_for(c, key, &s, &a, e) < 0)
		return -1;
	agentc_set_origin(a, origin ? origin : "cli");
	req = cJSON_CreateObject();
	/* A number goes as a number: the agent takes names as strings only. */
	if (sig[0] >= '0' && sig[0] <= '9' && strspn(sig, "0123456789") == strlen(sig))
		cJSON_AddNumberToObject(req, "signal", atoi(sig));
	else
		cJSON_AddStringToObject(req, "signal", sig);
	snprintf(path, sizeof path, "/v1/execs/%s/signal", exec_id);
	rc = agentc_call(a, "POST", path, req, PROCS_TIMEOUT_MS, &ans, e);
	if (rc >= 0) {
		ev = cJSON_CreateObject();
		cJSON_AddStringToObject(ev, "exec", exec_id);
		cJSON_AddStringToObject(ev, "signal", sig);
		cJSON_AddStringToObject(ev, "origin", origin ? origin : "cli");
		core_events_emit(c, "exec.signalled", s->id, ev);
	}
	cJSON_Delete(req);
	cJSON_Delete(ans);
	agentc_free(a);
	sandbox_free(s);
	return rc < 0 ? -1 : 0;
}
