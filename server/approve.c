/* Approvals (approve.h).  One mutex and one condition variable for every held
 * call: decisions are rare and human-paced, and each waiter re-checks only its
 * own record. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/log.h"
#include "lib/util.h"
#include "mcp/tool.h"
#include "mcp/tool-util.h"
#include "server/approve.h"

#define TICK_MS 200	/* how often a waiter looks at cancellation and the clock */

enum verdict { PENDING, ALLOWED, DENIED };

struct held {
	uint64_t	 id;
	char		*tool, *client, *kind;
	cJSON		*args;
	int64_t		 since_ms;	/* wall clock */
	enum verdict	 verdict;
	char		 reason[256];
	struct held	*next;
};

struct approvals {
	struct core	*core;
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;
	enum approve_mode mode;
	int64_t		 timeout_s;
	int		 default_allow;
	int		 consoles;
	uint64_t	 next_id;
	struct held	*held;		/* newest first */
	size_t		 nheld;
};

static const char *const mode_names[] = { "none", "destructive", "all" };

int
approve_mode_parse(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(mode_names); i++)
		if (name != NULL && strcmp(name, mode_names[i]) == 0)
			return (int)i;
	return -1;
}

const char *
approve_mode_name(enum approve_mode m)
{
	return mode_names[m];
}

struct approvals *
approvals_new(struct core *c, enum approve_mode m, int64_t timeout_s, int default_allow)
{
	struct approvals *a = xcalloc(1, sizeof *a);
	pthread_condattr_t ca;

	a->core = c;
	a->mode = m;
	a->timeout_s = timeout_s;
	a->default_allow = default_allow;
	a->next_id = 1;
	pthread_mutex_init(&a->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&a->cv, &ca);
	pthread_condattr_destroy(&ca);
	return a;
}

void
approvals_free(struct approvals *a)
{
	if (a == NULL)
		return;
	pthread_cond_destroy(&a->cv);
	pthread_mutex_destroy(&a->mu);
	free(a);
}

void
approvals_set_mode(struct approvals *a, enum approve_mode m)
{
	pthread_mutex_lock(&a->mu);
	a->mode = m;
	pthread_mutex_unlock(&a->mu);
}

enum approve_mode
approvals_mode(struct approvals *a)
{
	enum approve_mode m;

	pthread_mutex_lock(&a->mu);
	m = a->mode;
	pthread_mutex_unlock(&a->mu);
	return m;
}

void
approvals_set_consoles(struct approvals *a, int n)
{
	pthread_mutex_lock(&a->mu);
	a->consoles = n;
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
}

size_t
approvals_pending(struct approvals *a)
{
	size_t n;

	pthread_mutex_lock(&a->mu);
	n = a->nheld;
	pthread_mutex_unlock(&a->mu);
	return n;
}

static cJSON *
held_json(const struct held *h)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "id", (double)h->id);
	cJSON_AddStringToObject(o, "tool", h->tool);
	cJSON_AddStringToObject(o, "client", h->client);
	cJSON_AddStringToObject(o, "kind", h->kind);
	cJSON_AddItemToObject(o, "arguments", cJSON_Duplicate(h->args, 1));
	cJSON_AddNumberToObject(o, "since_ms", (double)h->since_ms);
	return o;
}

cJSON *
approvals_list(struct approvals *a)
{
	cJSON *arr = cJSON_CreateArray();

	pthread_mutex_lock(&a->mu);
	for (struct held *h = a->held; h != NULL; h = h->next)
		cJSON_InsertItemInArray(arr, 0, held_json(h));
	pthread_mutex_unlock(&a->mu);
	return arr;
}

static void
unlink_held(struct approvals *a, struct held *h)
{
	for (struct held **pp = &a->held; *pp != NULL; pp = &(*pp)->next)
		if (*pp == h) {
			*pp = h->next;
			a->nheld--;
			return;
		}
}

static void
resolved(struct approvals *a, const struct held *h, const char *outcome, const char *by)
{
	cJSON *d = cJSON_CreateObject();

	cJSON_AddNumberToObject(d, "id", (double)h->id);
	cJSON_AddStringToObject(d, "tool", h->tool);
	cJSON_AddStringToObject(d, "client", h->client);
	cJSON_AddStringToObject(d, "outcome", outcome);
	cJSON_AddStringToObject(d, "by", by);
	if (h->reason[0])
		cJSON_AddStringToObject(d, "reason", h->reason);
	core_events_emit(a->core, "approval.resolved", NULL, d);
}

int
approvals_gate(void *arg, const struct mcp_gate *g, char *why, size_t len)
{
	struct approvals *a = arg;
	struct held *h;
	int64_t waited_alone = 0, last = now_ms();
	const char *by = "operator";
	int allow;

	/* The console is the operator: its own actions are not held for itself
	 * (it asks its user first, as for a destroy). */
	if (g->kind != NULL && strcmp(g->kind, "console") == 0)
		return 1;
	pthread_mutex_lock(&a->mu);
	if (a->mode == APPROVE_NONE ||
	    (a->mode == APPROVE_DESTRUCTIVE && !(g->hints & MCP_DESTRUCTIVE))) {
		pthread_mutex_unlock(&a->mu);
		return 1;
	}
	h = xcalloc(1, sizeof *h);
	h->id = a->next_id++;
	h->tool = xstrdup(g->tool);
	h->client = xstrdup(g->client);
	h->kind = xstrdup(g->kind);
	h->args = g->arguments ? cJSON_Duplicate(g->arguments, 1) : cJSON_CreateObject();
	h->since_ms = wall_ms();
	h->next = a->held;
	a->held = h;
	a->nheld++;
	pthread_mutex_unlock(&a->mu);

	/* Announced outside the lock: subscribers must not wait on it. */
	core_events_emit(a->core, "approval.requested", NULL, held_json(h));
	log_info("approval %llu: %s from %s (%s) is held", (unsigned long long)h->id, h->tool,
	    h->client, h->kind);
	{
		char what[200];
		snprintf(what, sizeof what, "%s is held for approval (#%llu): a human in the "
		    "sbxtop console is deciding; it runs once allowed", g->tool,
		    (unsigned long long)h->id);
		mcp_gate_held(g, what);
	}

	pthread_mutex_lock(&a->mu);
	while (h->verdict == PENDING) {
		struct timespec ts;
		int64_t now = now_ms();

		if (mcp_gate_cancelled(g)) {
			by = "cancelled";
			h->verdict = DENIED;
			break;
		}
		/* The timeout counts only the time no console was there to answer. */
		if (a->consoles == 0)
			waited_alone += now - last;
		last = now;
		if (a->consoles == 0 && waited_alone >= a->timeout_s * 1000) {
			by = "timeout";
			h->verdict = a->default_allow ? ALLOWED : DENIED;
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += TICK_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&a->cv, &a->mu, &ts);
	}
	unlink_held(a, h);
	allow = h->verdict == ALLOWED;
	pthread_mutex_unlock(&a->mu);

	if (strcmp(by, "timeout") == 0) {
		snprintf(h->reason, sizeof h->reason, "no operator answered within %lld s; %s "
		    "by default", (long long)a->timeout_s, allow ? "allowed" : "denied");
		if (allow)
			mcp_call_log(g->call, "warning", "%s: %s", g->tool, h->reason);
		snprintf(why, len, "%s", h->reason);
	} else if (strcmp(by, "operator") == 0 && !allow) {
		if (h->reason[0])
			snprintf(why, len, "denied by the operator: %s", h->reason);
		else
			snprintf(why, len, "denied by the operator");
	}
	resolved(a, h, allow ? "allowed" : "denied", by);
	free(h->tool);
	free(h->client);
	free(h->kind);
	cJSON_Delete(h->args);
	free(h);
	return allow;
}

int
approvals_answer(struct approvals *a, uint64_t id, int allow, const char *reason,
    const char *by, struct sbx_err *e)
{
	struct held *h;

	pthread_mutex_lock(&a->mu);
	for (h = a->held; h != NULL; h = h->next)
		if (h->id == id && h->verdict == PENDING)
			break;
	if (h == NULL) {
		pthread_mutex_unlock(&a->mu);
		return sbx_error(e, SBX_ENOTFOUND, "sbxtop/approvals lists the held calls",
		    "no held call with id %llu (answered already, or timed out)",
		    (unsigned long long)id);
	}
	h->verdict = allow ? ALLOWED : DENIED;
	if (reason != NULL)
		snprintf(h->reason, sizeof h->reason, "%s", reason);
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
	log_info("approval %llu: %s by %s", (unsigned long long)id, allow ? "allowed" : "denied",
	    by ? by : "an operator");
	return 0;
}

/* --- the methods: sbxtop/approvals, approve, approve_mode ----------------- */

void
approvals_method_answer(struct srv_call *c)
{
	const cJSON *params = c->params;
	int64_t aid = srv_int_param(params, "id", 1, INT64_MAX / 2, -2);
	const cJSON *allow = cJSON_GetObjectItemCaseSensitive(params, "allow");
	const char *reason = mcp_arg_str(params, "reason");
	struct sbx_err e;
	cJSON *r;

	if (aid < 0 || !cJSON_IsBool(allow)) {
		srv_invalid(c, "Invalid params: sbxtop/approve needs {id: a held call's id, "
		    "allow: true|false, reason?: a string}");
		return;
	}
	if (approvals_answer(c->ap, (uint64_t)aid, cJSON_IsTrue(allow), reason, c->name,
	    &e) < 0) {
		srv_reply_err(c, &e);
		return;
	}
	r = cJSON_CreateObject();
	cJSON_AddNumberToObject(r, "id", (double)aid);
	cJSON_AddBoolToObject(r, "allow", cJSON_IsTrue(allow));
	mcp_session_reply(c->s, c->id, r);
}

void
approvals_method_mode(struct srv_call *c)
{
	const cJSON *params = c->params;
	const char *name = mcp_arg_str(params, "mode");
	int m = approve_mode_parse(name);
	cJSON *r;

	if (name != NULL && m < 0) {
		srv_invalid(c, "Invalid params: \"mode\" must be none, destructive or all");
		return;
	}
	if (name != NULL && (enum approve_mode)m != approvals_mode(c->ap)) {
		cJSON *d = cJSON_CreateObject();
		approvals_set_mode(c->ap, (enum approve_mode)m);
		cJSON_AddStringToObject(d, "mode", name);
		cJSON_AddStringToObject(d, "by", c->name);
		core_events_emit(c->core, "approval.mode", NULL, d);
		log_info("approval mode set to %s by %s", name, c->name);
	}
	r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "mode", approve_mode_name(approvals_mode(c->ap)));
	mcp_session_reply(c->s, c->id, r);
}

void
approvals_method_list(struct srv_call *c)
{
	cJSON *r = cJSON_CreateObject();

	cJSON_AddItemToObject(r, "approvals", approvals_list(c->ap));
	cJSON_AddStringToObject(r, "mode", approve_mode_name(approvals_mode(c->ap)));
	mcp_session_reply(c->s, c->id, r);
}
