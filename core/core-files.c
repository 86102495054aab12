/* The sandbox's files through its agent's file routes (core_files): one function
 * for the five routes, since the agent already checks every field strictly and
 * names the bad one; the core adds the sandbox lookup, the state checks and the
 * events (core_agent_for, which every call to an agent starts with: copies,
 * execs, watches).  And the agent's exec journal from the host: the running
 * and recent execs of a sandbox, and a signal to one (background jobs,
 * runaway commands). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core-int.h"
#include "lib/util.h"

int
core_agent_for(struct core *c, const char *key, struct sandbox **sp, struct agentc **ap,
    struct sbx_err *e)
{
	struct sandbox *s = core_get(c, key, e);

	*sp = NULL;
	*ap = NULL;
	if (s == NULL)
		return -1;
	/* A call: the sandbox is not idle.  One the idle watcher has just
	 * suspended is read again, and one suspended for idleness resumes. */
	if (s->idle_suspend_s > 0 || core_idle_suspended(s)) {
		if (core_idle_touch(c, s->id) > 0) {
			sandbox_free(s);
			if ((s = core_get(c, key, e)) == NULL)
				return -1;
		}
		if (core_idle_suspended(s) && core_idle_wake(c, s, e) < 0) {
			sandbox_free(s);
			return -1;
		}
	}
	/* Its host may be back: ask again rather than trust the last answer. */
	if (s->state == SBX_UNREACHABLE)
		core_reconcile(c, s);
	if (s->state == SBX_UNREACHABLE) {
		char hint[120];
		snprintf(hint, sizeof hint, "`sbxtop host check %s` says what is wrong; the sandbox "
		    "is kept", s->host ? s->host : "HOST");
		sbx_error(e, SBX_EBACKEND, hint, "sandbox %s is unreachable: %s", s->id,
		    s->state_reason ? s->state_reason : "its host does not answer");
	} else if (s->state == SBX_SUSPENDED) {
		char hint[80];
		snprintf(hint, sizeof hint, "run `sbxtop resume %s`", s->id);
		sbx_error_reason(e, SBX_ESTATE, SBX_R_SUSPENDED, hint, "sandbox %s is suspended",
		    s->id);
	} else if (s->state == SBX_TERMINATED || s->state == SBX_ERROR) {
		sbx_error_reason(e, SBX_ESTATE, SBX_R_GONE,
		    "create a new one; `sbxtop gc` clears old records",
		    "sandbox %s is %s%s%s", s->id, sbx_state_name(s->state),
		    s->state_reason ? ": " : "", s->state_reason ? s->state_reason : "");
	} else if (s->state != SBX_RUNNING) {
		sbx_error(e, SBX_ESTATE, "wait a moment and retry", "sandbox %s is %s", s->id,
		    sbx_state_name(s->state));
	} else if (core_refresh_endpoint(s, e) == 0 && (*ap = agentc_new(s, e)) != NULL) {
		*sp = s;
		return 0;
	}
	sandbox_free(s);
	return -1;
}

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

/* --- the agent's exec journal: list and signal ------------------------------- */

const char *
core_exec_reason(const struct core_exec_result *res)
{
	if (res->oom)
		return "oom";
	if (res->timed_out)
		return "timeout";
	return res->signo > 0 ? "signal" : "exit";
}

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
