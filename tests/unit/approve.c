/* Unit tests for the approval gate (server/approve.c): which calls are held in
 * each mode, an operator's allow and deny (with the reason in the result), the
 * default after the timeout when no console is attached, a console that stops
 * the clock, a cancelled call, and the events announced.  TAP lines. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "core/core.h"
#include "lib/util.h"
#include "mcp/mcp.h"
#include "mcp/tool.h"
#include "server/approve.h"


struct run {
	struct approvals *a;
	struct mcp_gate	  g;
	int		  rc;
	char		  why[400];
	int		  done;	/* atomic */
};

static void *
gate_thread(void *arg)
{
	struct run *r = arg;

	r->rc = approvals_gate(r->a, &r->g, r->why, sizeof r->why);
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void
run_init(struct run *r, struct approvals *a, struct core *c, const char *tool,
    unsigned hints, cJSON *args)
{
	memset(r, 0, sizeof *r);
	r->a = a;
	r->g.tool = tool;
	r->g.hints = hints;
	r->g.arguments = args;
	r->g.client = "unit 1.0";
	r->g.kind = "mcp";
	r->g.origin = "test";
	r->g.call = mcp_call_local_new(c, "unit 1.0");
}

/* The id of the next approval.requested event, waiting for it up to 2 s (it is
 * emitted a moment after the call is listed). */
static uint64_t last_requested;	/* atomic */
static uint64_t
wait_held(struct approvals *a, size_t n)
{
	uint64_t id = 0;

	for (int i = 0; i < 200 && (approvals_pending(a) < n ||
	    (id = __atomic_load_n(&last_requested, __ATOMIC_ACQUIRE)) == 0); i++)
		usleep(10000);
	__atomic_store_n(&last_requested, 0, __ATOMIC_RELEASE);
	return id;
}

static char last_resolved[256];

static void
on_event(const struct core_event *ev, void *arg)
{
	(void)arg;
	if (strcmp(ev->type, "approval.requested") == 0)
		__atomic_store_n(&last_requested, (uint64_t)cJSON_GetNumberValue(
		    cJSON_GetObjectItem(ev->data, "id")), __ATOMIC_RELEASE);
	if (strcmp(ev->type, "approval.resolved") == 0)
		snprintf(last_resolved, sizeof last_resolved, "%s by %s",
		    cJSON_GetStringValue(cJSON_GetObjectItem(ev->data, "outcome")),
		    cJSON_GetStringValue(cJSON_GetObjectItem(ev->data, "by")));
}

int
main(void)
{
	struct core *c = core_new(config_new());
	struct approvals *a = approvals_new(c, APPROVE_NONE, 1, 0);
	cJSON *args = cJSON_Parse("{\"sandbox_id\":\"sbx-123456\"}");
	struct run r;
	pthread_t th;
	struct sbx_err e;
	cJSON *list;
	int64_t t0;

	core_events_subscribe(c, on_event, NULL);
	check(approve_mode_parse("destructive") == APPROVE_DESTRUCTIVE &&
	    approve_mode_parse("nope") == -1 && strcmp(approve_mode_name(APPROVE_ALL), "all") == 0,
	    "modes by name");

	run_init(&r, a, c, "sandbox_destroy", MCP_DESTRUCTIVE, args);
	check(approvals_gate(a, &r.g, r.why, sizeof r.why) == 1 && approvals_pending(a) == 0,
	    "mode none: a destructive call runs at once");
	mcp_call_local_free(r.g.call);

	approvals_set_mode(a, APPROVE_DESTRUCTIVE);
	run_init(&r, a, c, "sandbox_list", MCP_READONLY, args);
	check(approvals_gate(a, &r.g, r.why, sizeof r.why) == 1,
	    "mode destructive: a read-only call runs at once");
	mcp_call_local_free(r.g.call);

	/* An operator denies, with a reason. */
	approvals_set_consoles(a, 1);
	run_init(&r, a, c, "sandbox_destroy", MCP_DESTRUCTIVE, args);
	pthread_create(&th, NULL, gate_thread, &r);
	uint64_t id = wait_held(a, 1);
	check(approvals_pending(a) == 1 && id > 0, "mode destructive: a destructive call is held "
	    "and announced");
	list = approvals_list(a);
	check(cJSON_GetArraySize(list) == 1 && strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(
	    cJSON_GetArrayItem(list, 0), "tool")), "sandbox_destroy") == 0 &&
	    strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(
	    cJSON_GetArrayItem(list, 0), "arguments"), "sandbox_id")), "sbx-123456") == 0,
	    "the list shows the tool and its arguments");
	cJSON_Delete(list);
	usleep(1300 * 1000);
	check(!__atomic_load_n(&r.done, __ATOMIC_ACQUIRE), "with a console attached the "
	    "timeout does not apply");
	check(approvals_answer(a, id, 0, "too soon", "op", &e) == 0, "the operator denies");
	pthread_join(th, NULL);
	check(r.rc == 0 && strcmp(r.why, "denied by the operator: too soon") == 0,
	    "denied: the reason is in the text (%s)", r.why);
	check(strcmp(last_resolved, "denied by operator") == 0, "approval.resolved: %s",
	    last_resolved);
	check(approvals_answer(a, id, 1, NULL, "op", &e) < 0 && e.code == SBX_ENOTFOUND,
	    "a second answer is refused: %s", e.msg);
	mcp_call_local_free(r.g.call);

	/* An operator allows. */
	run_init(&r, a, c, "sandbox_destroy", MCP_DESTRUCTIVE, args);
	pthread_create(&th, NULL, gate_thread, &r);
	id = wait_held(a, 1);
	approvals_answer(a, id, 1, NULL, "op", &e);
	pthread_join(th, NULL);
	check(r.rc == 1 && approvals_pending(a) == 0, "allowed: the call runs");
	mcp_call_local_free(r.g.call);

	/* Mode all holds everything; no console: the default after 1 s. */
	approvals_set_mode(a, APPROVE_ALL);
	approvals_set_consoles(a, 0);
	run_init(&r, a, c, "sandbox_list", MCP_READONLY, args);
	t0 = now_ms();
	check(approvals_gate(a, &r.g, r.why, sizeof r.why) == 0, "mode all, no console: a "
	    "read-only call is held and then denied by default");
	check(now_ms() - t0 >= 900 && now_ms() - t0 < 5000, "after the timeout (%lld ms)",
	    (long long)(now_ms() - t0));
	check(strcmp(r.why, "no operator answered within 1 s; denied by default") == 0,
	    "the result says so: %s", r.why);
	check(strcmp(last_resolved, "denied by timeout") == 0, "approval.resolved: %s",
	    last_resolved);
	mcp_call_local_free(r.g.call);

	/* A cancelled call stops waiting. */
	approvals_set_consoles(a, 1);
	run_init(&r, a, c, "sandbox_destroy", MCP_DESTRUCTIVE, args);
	pthread_create(&th, NULL, gate_thread, &r);
	wait_held(a, 1);
	mcp_call_local_cancel(r.g.call);
	pthread_join(th, NULL);
	check(r.rc == 0 && approvals_pending(a) == 0 &&
	    strcmp(last_resolved, "denied by cancelled") == 0,
	    "a cancelled call is dropped and does not run");
	mcp_call_local_free(r.g.call);
	approvals_free(a);

	/* approval_default allow. */
	a = approvals_new(c, APPROVE_DESTRUCTIVE, 1, 1);
	run_init(&r, a, c, "sandbox_destroy", MCP_DESTRUCTIVE, args);
	check(approvals_gate(a, &r.g, r.why, sizeof r.why) == 1, "approval_default allow: the "
	    "call runs after the timeout");
	mcp_call_local_free(r.g.call);
	approvals_free(a);

	cJSON_Delete(args);
	core_free(c);
	return tap_end();
}
