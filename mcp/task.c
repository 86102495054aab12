/* The io.modelcontextprotocol/tasks extension: a modern tools/call of a long
 * tool (MCP_TASK) from a client that declares the extension is answered at once
 * with a task, and runs on a thread of its own, apart from the session that
 * started it: the client polls tasks/get (from any connection: the task id is
 * the whole handle), follows its statusMessage, and cancels it with
 * tasks/cancel, which kills the command as notifications/cancelled would.
 * Tasks are in memory, kept TASK_TTL_MS after they finish; the journal gets
 * task.created, task.updated and task.finished events. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "lib/util.h"
#include "mcp/session-int.h"
#include "mcp/tool-util.h"

#define TASKS_MAX	256		/* tasks kept at once, running or finished */
#define TASK_TTL_MS	3600000		/* a task is kept an hour after it began */
#define TASK_POLL_MS	1000		/* the polling interval suggested */
#define TASK_MSG_MAX	2048		/* the longest statusMessage */

enum tstatus { T_WORKING, T_COMPLETED, T_CANCELLED };
static const char *const tstatus_names[] = { "working", "completed", "cancelled" };

struct mcp_task {
	struct mcp_task		*next;
	char			 id[33];
	struct core		*core;
	enum tstatus		 status;
	char			*message;	/* statusMessage, or NULL */
	int64_t			 created_ms, updated_ms;	/* wall clock */
	cJSON			*result;	/* completed: the CallToolResult */
	struct mcp_call		*call;		/* while it runs */
	pthread_t		 th;
	int			 ended;		/* th is done: join it */
	char			 tool[64];
	char			 sandbox[72];
	char			 client[160];
};

static pthread_mutex_t tasks_mu = PTHREAD_MUTEX_INITIALIZER;
static struct mcp_task *tasks;
static unsigned ntasks;

const char *
sess_task_id(const struct mcp_task *t)
{
	return t->id;
}

/* With tasks_mu held. */
static struct mcp_task *
find(const char *id)
{
	for (struct mcp_task *t = tasks; t != NULL; t = t->next)
		if (strcmp(t->id, id) == 0)
			return t;
	return NULL;
}

/* The DetailedTask of t; with tasks_mu held. */
static cJSON *
task_json(const struct mcp_task *t)
{
	cJSON *o = cJSON_CreateObject();
	char ts[40];

	cJSON_AddStringToObject(o, "taskId", t->id);
	cJSON_AddStringToObject(o, "status", tstatus_names[t->status]);
	if (t->message != NULL)
		cJSON_AddStringToObject(o, "statusMessage", t->message);
	mcp_iso8601(t->created_ms, ts, sizeof ts);
	cJSON_AddStringToObject(o, "createdAt", ts);
	mcp_iso8601(t->updated_ms, ts, sizeof ts);
	cJSON_AddStringToObject(o, "lastUpdatedAt", ts);
	cJSON_AddNumberToObject(o, "ttlMs", TASK_TTL_MS);
	cJSON_AddNumberToObject(o, "pollIntervalMs", TASK_POLL_MS);
	if (t->status == T_COMPLETED && t->result != NULL)
		cJSON_AddItemToObject(o, "result", cJSON_Duplicate(t->result, 1));
	return o;
}

cJSON *
sess_task_json(const char *id)
{
	struct mcp_task *t;
	cJSON *o = NULL;

	pthread_mutex_lock(&tasks_mu);
	if ((t = find(id)) != NULL)
		o = task_json(t);
	pthread_mutex_unlock(&tasks_mu);
	return o;
}

/* The journal's record of t (type "task.created", ...); not with tasks_mu
 * held: subscribers run inside core_events_emit. */
static void
journal(struct mcp_task *t, const char *type)
{
	cJSON *d = cJSON_CreateObject();

	pthread_mutex_lock(&tasks_mu);
	cJSON_AddStringToObject(d, "task_id", t->id);
	cJSON_AddStringToObject(d, "tool", t->tool);
	cJSON_AddStringToObject(d, "client", t->client[0] ? t->client : "unknown");
	cJSON_AddStringToObject(d, "status", tstatus_names[t->status]);
	if (t->message != NULL)
		cJSON_AddStringToObject(d, "message", t->message);
	if (t->status != T_WORKING)
		cJSON_AddNumberToObject(d, "duration_ms", (double)(t->updated_ms -
		    t->created_ms));
	pthread_mutex_unlock(&tasks_mu);
	core_events_emit(t->core, type, t->sandbox[0] ? t->sandbox : NULL, d);
}

static void
set_message(struct mcp_task *t, const char *msg)
{
	free(t->message);
	t->message = NULL;
	if (msg != NULL && msg[0] != '\0') {
		size_t n = strlen(msg);
		t->message = xstrdup(n > TASK_MSG_MAX ? msg + n - TASK_MSG_MAX : msg);
	}
	t->updated_ms = wall_ms();
}

void
sess_task_progress(struct mcp_task *t, const char *message)
{
	if (message == NULL)
		return;
	pthread_mutex_lock(&tasks_mu);
	set_message(t, message);
	pthread_mutex_unlock(&tasks_mu);
}

void
sess_task_held(struct mcp_task *t, const char *why)
{
	pthread_mutex_lock(&tasks_mu);
	set_message(t, why);
	pthread_mutex_unlock(&tasks_mu);
	journal(t, "task.updated");
}

static void *
task_thread(void *arg)
{
	struct mcp_task *t = arg;
	struct mcp_call *call = t->call;
	struct sess_fault f = { 0, "", NULL };
	cJSON *r;

	sess_set_related(NULL);
	sess_act_for(call);
	r = sess_run_tool(call, &f);
	cJSON_Delete(f.data);
	sess_act_for(NULL);
	pthread_mutex_lock(&tasks_mu);
	if (r == NULL) {
		t->status = T_CANCELLED;
		set_message(t, "cancelled (tasks/cancel); the command was killed");
	} else {
		int err = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "isError"));
		t->status = T_COMPLETED;
		t->result = r;
		set_message(t, err ? "finished with an error (see result)" : "finished");
	}
	t->call = NULL;
	pthread_mutex_unlock(&tasks_mu);
	journal(t, "task.finished");
	sess_call_free(call);
	pthread_mutex_lock(&tasks_mu);
	t->ended = 1;
	pthread_mutex_unlock(&tasks_mu);
	return NULL;
}

static void
task_free(struct mcp_task *t)
{
	pthread_join(t->th, NULL);
	cJSON_Delete(t->result);
	free(t->message);
	free(t);
}

/* Drop the tasks past their time (joined outside the lock). */
static void
reap(void)
{
	struct mcp_task *gone = NULL, **pp, *t;
	int64_t now = wall_ms();

	pthread_mutex_lock(&tasks_mu);
	for (pp = &tasks; (t = *pp) != NULL;)
		if (t->ended && now - t->created_ms >= TASK_TTL_MS) {
			*pp = t->next;
			ntasks--;
			t->next = gone;
			gone = t;
		} else
			pp = &t->next;
	pthread_mutex_unlock(&tasks_mu);
	while ((t = gone) != NULL) {
		gone = t->next;
		task_free(t);
	}
}

void
sess_task_start(struct mcp_session *s, struct jsonrpc_msg *m, const struct mcp_tool *tool,
    const struct mcp_reqinfo *ri)
{
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(m->params, "arguments");
	const char *sbx = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(args,
	    "sandbox_id"));
	struct mcp_task *t;
	struct mcp_call *call;
	cJSON *r, *rid;
	int full;

	reap();
	pthread_mutex_lock(&tasks_mu);
	full = ntasks >= TASKS_MAX;
	pthread_mutex_unlock(&tasks_mu);
	if (full) {
		sess_send_error(s, m->id, JSONRPC_SERVER_BUSY, "Server busy: %d tasks are kept "
		    "(running, or finished within the hour); retry later", TASKS_MAX);
		return;
	}
	t = xcalloc(1, sizeof *t);
	random_hex(t->id, 16);
	t->core = s->core;
	t->status = T_WORKING;
	t->created_ms = t->updated_ms = wall_ms();
	snprintf(t->tool, sizeof t->tool, "%s", tool->name);
	snprintf(t->sandbox, sizeof t->sandbox, "%s", sbx ? sbx : "");
	snprintf(t->client, sizeof t->client, "%s", ri->client);
	t->message = xstrdup("started");
	/* The request is the task's from here, and may be gone before the
	 * answer below: answer with a copy of its id. */
	rid = cJSON_Duplicate(m->id, 1);

	call = xcalloc(1, sizeof *call);
	call->req = steal_pointer(&m->root);
	call->id = m->id;
	call->params = m->params;
	call->method = m->method;
	call->tool = tool;
	call->ri = *ri;
	sess_call_bind(call, s);
	call->task = t;		/* progress and held calls go to the task */
	pthread_mutex_init(&call->progress_mu, NULL);
	t->call = call;

	pthread_mutex_lock(&tasks_mu);
	if (pthread_create(&t->th, NULL, task_thread, t) != 0) {
		pthread_mutex_unlock(&tasks_mu);
		sess_send_error(s, rid, JSONRPC_INTERNAL_ERROR, "Internal error: cannot "
		    "start a thread for the task; retry");
		sess_call_free(call);
		cJSON_Delete(rid);
		free(t->message);
		free(t);
		return;
	}
	t->next = tasks;
	tasks = t;
	ntasks++;
	/* Created before it is answered: a tasks/get right after finds it. */
	r = task_json(t);
	pthread_mutex_unlock(&tasks_mu);
	cJSON_AddStringToObject(r, "resultType", "task");
	sess_modern_result(r, ri->method);
	log_info("mcp: task %s: %s for %s", t->id, t->tool, t->client[0] ? t->client :
	    "an unnamed client");
	journal(t, "task.created");
	sess_send_text(s, jsonrpc_result(rid, r));
	cJSON_Delete(rid);
}

/* The task m's params name, with tasks_mu held; NULL with f (not held). */
static struct mcp_task *
task_of(const struct jsonrpc_msg *m, struct sess_fault *f)
{
	const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m->params,
	    "taskId"));
	struct mcp_task *t;

	if (id == NULL) {
		f->code = JSONRPC_INVALID_PARAMS;
		snprintf(f->msg, sizeof f->msg, "Invalid params: %s needs \"taskId\", a string "
		    "(as the tools/call that made the task answered)", m->method);
		return NULL;
	}
	pthread_mutex_lock(&tasks_mu);
	if ((t = find(id)) == NULL) {
		pthread_mutex_unlock(&tasks_mu);
		f->code = JSONRPC_INVALID_PARAMS;
		snprintf(f->msg, sizeof f->msg, "Unknown task %.64s: a task is kept for an hour "
		    "after it began, and not across a restart of the server", id);
	}
	return t;
}

cJSON *
sess_task_get(struct mcp_session *s, struct jsonrpc_msg *m, const struct mcp_reqinfo *ri,
    struct sess_fault *f)
{
	struct mcp_task *t = task_of(m, f);
	cJSON *r;

	(void)s, (void)ri;
	if (t == NULL)
		return NULL;
	r = task_json(t);
	pthread_mutex_unlock(&tasks_mu);
	return r;
}

/* This server asks for no input, so there is nothing to take. */
cJSON *
sess_task_update(struct mcp_session *s, struct jsonrpc_msg *m, const struct mcp_reqinfo *ri,
    struct sess_fault *f)
{
	(void)s, (void)ri;
	if (task_of(m, f) == NULL)
		return NULL;
	pthread_mutex_unlock(&tasks_mu);
	return cJSON_CreateObject();
}

/* Stop the call (the tool kills its command), which ends the task as
 * cancelled. */
cJSON *
sess_task_cancel(struct mcp_session *s, struct jsonrpc_msg *m, const struct mcp_reqinfo *ri,
    struct sess_fault *f)
{
	struct mcp_task *t = task_of(m, f);

	(void)s, (void)ri;
	if (t == NULL)
		return NULL;
	if (t->call != NULL) {
		__atomic_store_n(&t->call->cancelled, 1, __ATOMIC_RELAXED);
		set_message(t, "cancelling");
	}
	pthread_mutex_unlock(&tasks_mu);
	return cJSON_CreateObject();
}

void
mcp_tasks_shutdown(void)
{
	struct mcp_task *t;

	pthread_mutex_lock(&tasks_mu);
	for (t = tasks; t != NULL; t = t->next)
		if (t->call != NULL)
			__atomic_store_n(&t->call->cancelled, 1, __ATOMIC_RELAXED);
	t = tasks;
	tasks = NULL;
	ntasks = 0;
	pthread_mutex_unlock(&tasks_mu);
	while (t != NULL) {
		struct mcp_task *nx = t->next;
		task_free(t);
		t = nx;
	}
}
