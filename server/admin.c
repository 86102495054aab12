/* The admin commands' methods (admin.h).  Each runs on the connection's reader
 * thread: a command makes one call at a time, and the client going away is
 * noticed by watching the socket (poll), which is how a running exec learns to
 * stop when `sbxtop exec` is interrupted. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/b64.h"
#include "lib/buf.h"
#include "core/client/client.h"
#include "core/create-opts.h"
#include "lib/log.h"
#include "lib/utf8.h"
#include "lib/util.h"
#include "mcp/jsonrpc.h"
#include "mcp/tool-util.h"
#include "server/admin.h"

#define STDIN_MAX	(16u << 20)	/* as `sbxtop exec` reads at most */

struct admin {
	struct core		*core;
	struct mcp_session	*s;
	int			 fd;
	struct buf		 in;		/* stdin for the next exec */
};

/* One call: what the journal and the log hook need. */
struct call {
	struct admin	*a;
	const cJSON	*id;
	const char	*client;
	const char	*tool;		/* in the journal; NULL: not journaled */
	const char	*verb;		/* the method's name without "sbxtop/" */
	int64_t		 t0;
};

struct admin *
admin_new(struct core *c, struct mcp_session *s, int fd)
{
	struct admin *a = xcalloc(1, sizeof *a);

	a->core = c;
	a->s = s;
	a->fd = fd;
	buf_init(&a->in, STDIN_MAX);
	return a;
}

void
admin_free(struct admin *a)
{
	if (a == NULL)
		return;
	buf_free(&a->in);
	free(a);
}

/* --- answers ------------------------------------------------------------- */

static void
reply_core_err(struct call *k, const struct sbx_err *e)
{
	mcp_session_reply_error(k->a->s, k->id, CLIENT_ERR_CORE, e->msg, client_err_data(e));
}

static void
invalid(struct call *k, const char *msg)
{
	mcp_session_reply_error(k->a->s, k->id, JSONRPC_INVALID_PARAMS, msg, NULL);
}

/* A number in [min, max], def when absent or null; -2 when not valid. */
static double
num_param(const cJSON *params, const char *name, double min, double max, double def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, name);

	if (v == NULL || cJSON_IsNull(v))
		return def;
	if (!cJSON_IsNumber(v) || v->valuedouble < min || v->valuedouble > max)
		return -2;
	return v->valuedouble;
}

static int
bool_param(const cJSON *params, const char *name)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(params, name));
}

/* --- the activity journal ------------------------------------------------ */

/* The tool.started event of a journaled call: the console shows the command
 * line's call among the agents' tool calls, under its client's name. */
static void
journal_started(struct call *k, const char *sandbox, cJSON *args)
{
	cJSON *d;

	k->t0 = now_ms();
	if (k->tool == NULL) {
		cJSON_Delete(args);
		return;
	}
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "tool", k->tool);
	cJSON_AddStringToObject(d, "client", k->client);
	cJSON_AddStringToObject(d, "kind", "cli");
	cJSON_AddStringToObject(d, "origin", "socket");
	cJSON_AddItemToObject(d, "request_id", cJSON_Duplicate(k->id, 1));
	cJSON_AddItemToObject(d, "arguments", args);
	core_events_emit(k->a->core, "tool.started", sandbox, d);
}

static void
journal_finished(struct call *k, const char *sandbox, const struct sbx_err *e)
{
	cJSON *d;

	if (k->tool == NULL)
		return;
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "tool", k->tool);
	cJSON_AddStringToObject(d, "client", k->client);
	cJSON_AddStringToObject(d, "kind", "cli");
	cJSON_AddItemToObject(d, "request_id", cJSON_Duplicate(k->id, 1));
	cJSON_AddNumberToObject(d, "duration_ms", (double)(now_ms() - k->t0));
	cJSON_AddStringToObject(d, "outcome", e == NULL ? "ok" : "error");
	if (e != NULL)
		cJSON_AddStringToObject(d, "message", e->msg);
	core_events_emit(k->a->core, "tool.finished", sandbox, d);
}

/* The end of a journaled call: the journal, then the answer (result taken) or
 * the core's error. */
static void
finish(struct call *k, const char *sandbox, int rc, cJSON *result, const struct sbx_err *e)
{
	journal_finished(k, sandbox, rc < 0 ? e : NULL);
	if (rc < 0) {
		cJSON_Delete(result);
		reply_core_err(k, e);
	} else {
		mcp_session_reply(k->a->s, k->id, result);
	}
}

/* The log lines of the call, to its client (which prints them as its own). */
static void
log_hook(enum log_level level, const char *msg, void *arg)
{
	static const char *const names[] = { "error", "warn", "info", "debug" };
	struct call *k = arg;
	cJSON *p = cJSON_CreateObject();

	cJSON_AddStringToObject(p, "level", names[level]);
	cJSON_AddStringToObject(p, "message", msg);
	mcp_session_notify(k->a->s, "sbxtop/log_line", p);
}

/* --- the methods --------------------------------------------------------- */

static const char *
need_sandbox(struct call *k, const cJSON *params, const char *method)
{
	const char *key = mcp_arg_str(params, "sandbox");
	char msg[200];

	if (key == NULL) {
		snprintf(msg, sizeof msg, "Invalid params: sbxtop/%s needs {sandbox: an id, a "
		    "unique prefix of one, or a name}", method);
		invalid(k, msg);
	}
	return key;
}

static void
m_list(struct call *k, const cJSON *params)
{
	struct sandbox **v;
	struct sbx_err e;
	size_t n;
	cJSON *r, *a;

	(void)params;
	if (core_list(k->a->core, &v, &n, &e) < 0) {
		reply_core_err(k, &e);
		return;
	}
	r = cJSON_CreateObject();
	a = cJSON_AddArrayToObject(r, "sandboxes");
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(a, sandbox_to_json(v[i], 0));
	core_list_free(v, n);
	cJSON_AddNumberToObject(r, "orphans", core_orphans(k->a->core));
	mcp_session_reply(k->a->s, k->id, r);
}

static void
m_status(struct call *k, const cJSON *params)
{
	const char *key = need_sandbox(k, params, "status");
	struct sandbox *s = NULL;
	cJSON *health = NULL, *r;
	struct sbx_err e;

	if (key == NULL)
		return;
	if (core_status(k->a->core, key, &s, bool_param(params, "health") ? &health : NULL,
	    &e) < 0) {
		reply_core_err(k, &e);
		return;
	}
	r = cJSON_CreateObject();
	cJSON_AddItemToObject(r, "sandbox", sandbox_to_json(s, 0));
	cJSON_AddItemToObject(r, "agent", health ? health : cJSON_CreateNull());
	sandbox_free(s);
	mcp_session_reply(k->a->s, k->id, r);
}

static void
m_create(struct call *k, const cJSON *params)
{
	struct core_create_opts o;
	struct sandbox *s = NULL;
	struct sbx_err e;
	cJSON *args, *net, *x;
	char msg[sizeof e.msg + 64];
	int rc;

	if (core_create_opts_from_json(&o, params, &net, &e) < 0) {
		snprintf(msg, sizeof msg, "Invalid params: sbxtop/create: %s", e.msg);
		invalid(k, msg);
		return;
	}
	o.owner = k->client;
	/* The journal shows the arguments without the environment's values. */
	args = cJSON_Duplicate(params, 1);
	cJSON_DeleteItemFromObjectCaseSensitive(args, "log_level");
	if ((x = cJSON_GetObjectItemCaseSensitive(args, "env")) != NULL) {
		cJSON *y;
		cJSON_ArrayForEach(y, x)
			cJSON_SetValuestring(y, "***");
	}
	journal_started(k, NULL, args);
	rc = core_create(k->a->core, &o, &s, &e);
	finish(k, s ? s->id : NULL, rc, rc < 0 ? NULL : sandbox_to_json(s, 0), &e);
	sandbox_free(s);
	cJSON_Delete(net);
}

static cJSON *
sandbox_args(const char *key)
{
	cJSON *a = cJSON_CreateObject();

	cJSON_AddStringToObject(a, "sandbox_id", key);
	return a;
}

/* suspend, resume, destroy: one sandbox, nothing to say but the id (destroy's
 * through id). */
typedef int lifecycle_fn(struct core *c, const char *key, char id[32], struct sbx_err *e);

static void
lifecycle(struct call *k, const cJSON *params, lifecycle_fn *fn)
{
	const char *key = need_sandbox(k, params, k->verb);
	char id[32] = "";
	struct sbx_err e;
	cJSON *r;
	int rc;

	if (key == NULL)
		return;
	journal_started(k, key, sandbox_args(key));
	rc = fn(k->a->core, key, id, &e);
	r = cJSON_CreateObject();
	if (id[0])
		cJSON_AddStringToObject(r, "id", id);
	finish(k, key, rc, r, &e);
}

static int
suspend_one(struct core *c, const char *key, char id[32], struct sbx_err *e)
{
	(void)id;
	return core_suspend(c, key, e);
}

static int
resume_one(struct core *c, const char *key, char id[32], struct sbx_err *e)
{
	(void)id;
	return core_resume(c, key, e);
}

static void
m_suspend(struct call *k, const cJSON *params)
{
	lifecycle(k, params, suspend_one);
}

static void
m_resume(struct call *k, const cJSON *params)
{
	lifecycle(k, params, resume_one);
}

static void
m_destroy(struct call *k, const cJSON *params)
{
	lifecycle(k, params, core_destroy);
}

static void
m_exec_stdin(struct call *k, const cJSON *params)
{
	const char *data = mcp_arg_str(params, "data");
	unsigned char *raw;
	size_t n;
	cJSON *r;

	if (data == NULL || (raw = b64_decode(data, strlen(data), &n)) == NULL) {
		invalid(k, "Invalid params: sbxtop/exec_stdin needs {data: base64}");
		return;
	}
	if (buf_append(&k->a->in, raw, n) < 0) {
		struct sbx_err e;
		free(raw);
		buf_reset(&k->a->in);
		sbx_error(&e, SBX_EINVAL, "copy it in with `sbxtop cp` and redirect from the "
		    "file, or use -n", "standard input is over %u MiB", STDIN_MAX >> 20);
		reply_core_err(k, &e);
		return;
	}
	free(raw);
	r = cJSON_CreateObject();
	cJSON_AddNumberToObject(r, "bytes", (double)k->a->in.len);
	mcp_session_reply(k->a->s, k->id, r);
}

/* The output of an exec, as it comes, to the client: text when it is UTF-8,
 * base64 otherwise, so any bytes arrive as they were. */
static int
exec_output(int stream, const char *data, size_t len, void *arg)
{
	struct call *k = arg;
	cJSON *p = cJSON_CreateObject();

	cJSON_AddItemToObject(p, "request", cJSON_Duplicate(k->id, 1));
	cJSON_AddNumberToObject(p, "stream", stream == 2 ? 2 : 1);
	if (utf8_valid(data, len) && memchr(data, '\0', len) == NULL) {
		char *t = xstrndup(data, len);
		cJSON_AddStringToObject(p, "data", t);
		free(t);
	} else {
		char *t = b64_encode(data, len);
		cJSON_AddStringToObject(p, "b64", t);
		free(t);
	}
	mcp_session_notify(k->a->s, "sbxtop/output", p);
	return 0;
}

/* The client hung up (an interrupted `sbxtop exec`): stop the command. */
static int
exec_cancelled(void *arg)
{
	struct call *k = arg;
	struct pollfd p = { k->a->fd, POLLRDHUP, 0 };

	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

static void
m_exec(struct call *k, const cJSON *params)
{
	const char *key = need_sandbox(k, params, "exec");
	const cJSON *env = cJSON_GetObjectItemCaseSensitive(params, "env"), *x;
	struct core_exec_opts o = { 0 };
	struct core_exec_result res = { 0 };
	struct sbx_err e;
	cJSON *args, *r;
	char *in = NULL;
	int rc;

	if (key == NULL) {
		buf_reset(&k->a->in);
		return;
	}
	o.command = mcp_arg_str(params, "command");
	o.cwd = mcp_arg_str(params, "cwd");
	o.timeout_s = (int64_t)num_param(params, "timeout_s", 1, 86400, 0);
	o.as_root = bool_param(params, "as_root");
	o.background = bool_param(params, "background");
	o.origin = k->client;
	if (o.command == NULL || o.timeout_s == -2 || (env != NULL && !cJSON_IsObject(env))) {
		buf_reset(&k->a->in);
		invalid(k, "Invalid params: sbxtop/exec needs {sandbox, command, cwd?, env?: an "
		    "object of strings, timeout_s?: 1..86400, as_root?, background?, stdin?: "
		    "true to pass what sbxtop/exec_stdin sent}");
		return;
	}
	o.env = env;
	if (bool_param(params, "stdin")) {
		o.stdin_len = k->a->in.len;
		in = k->a->in.data ? buf_steal(&k->a->in) : xstrdup("");
		o.stdin_data = in;
	}
	buf_reset(&k->a->in);
	o.cancelled = exec_cancelled;

	args = cJSON_CreateObject();
	cJSON_AddStringToObject(args, "sandbox_id", key);
	cJSON_AddStringToObject(args, "command", o.command);
	if (o.cwd)
		cJSON_AddStringToObject(args, "cwd", o.cwd);
	if (cJSON_IsObject(env)) {
		cJSON *h = cJSON_AddObjectToObject(args, "env");
		cJSON_ArrayForEach(x, env)
			cJSON_AddStringToObject(h, x->string, "***");
	}
	if (in != NULL) {
		char t[64];
		snprintf(t, sizeof t, "<%zu bytes>", o.stdin_len);
		cJSON_AddStringToObject(args, "stdin", t);
	}
	if (o.background)
		cJSON_AddTrueToObject(args, "background");
	journal_started(k, key, args);
	rc = core_exec(k->a->core, key, &o, exec_output, k, &res, &e);
	free(in);
	r = cJSON_CreateObject();
	if (rc == 0) {
		cJSON_AddNumberToObject(r, "exit_code", res.exit_code);
		cJSON_AddNumberToObject(r, "signal", res.signo);
		cJSON_AddBoolToObject(r, "timed_out", res.timed_out);
		cJSON_AddBoolToObject(r, "truncated", res.truncated);
		if (!o.background)
			cJSON_AddStringToObject(r, "reason", core_exec_reason(&res));
		cJSON_AddNumberToObject(r, "duration_ms", (double)res.duration_ms);
		cJSON_AddStringToObject(r, "exec_id", res.exec_id);
		cJSON_AddNumberToObject(r, "pid", res.pid);
		if (res.log_path)
			cJSON_AddStringToObject(r, "log_path", res.log_path);
		free(res.log_path);
	}
	finish(k, key, rc, r, &e);
}

/* copy_in (in) and copy_out between a host path and the sandbox. */
static void
copy(struct call *k, const cJSON *params, int in)
{
	const char *key = need_sandbox(k, params, k->verb);
	const char *local = mcp_arg_str(params, "local"), *remote = mcp_arg_str(params, "remote");
	struct sbx_err e;
	cJSON *args;
	int rc;

	if (key == NULL)
		return;
	if (local == NULL || local[0] != '/' || remote == NULL) {
		/* The server's working directory is not the client's. */
		invalid(k, "Invalid params: sbxtop/copy_in and copy_out need {sandbox, local: "
		    "an absolute host path, remote: a sandbox path}");
		return;
	}
	args = sandbox_args(key);
	cJSON_AddStringToObject(args, "local", local);
	cJSON_AddStringToObject(args, "remote", remote);
	journal_started(k, key, args);
	if (in)
		rc = core_copy_in(k->a->core, key, local, remote, &e);
	else
		rc = core_copy_out(k->a->core, key, remote, local, &e);
	finish(k, key, rc, cJSON_CreateObject(), &e);
}

static void
m_copy_in(struct call *k, const cJSON *params)
{
	copy(k, params, 1);
}

static void
m_copy_out(struct call *k, const cJSON *params)
{
	copy(k, params, 0);
}

static void
m_log_path(struct call *k, const cJSON *params)
{
	const char *key = need_sandbox(k, params, "log_path");
	const char *which = mcp_arg_str(params, "which");
	struct sbx_err e;
	char *p;
	cJSON *r;

	if (key == NULL)
		return;
	if ((p = core_log_path(k->a->core, key, which ? which : "agent", &e)) == NULL) {
		reply_core_err(k, &e);
		return;
	}
	r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "path", p);
	free(p);
	mcp_session_reply(k->a->s, k->id, r);
}

/* Run fn for c, a call of sbxtop/verb: the journal names it tool (NULL: not
 * journaled), and
 * what the core logs meanwhile goes to the client too, as the command printed
 * it when it ran the core itself. */
static void
run(struct srv_call *c, const char *verb, const char *tool,
    void (*fn)(struct call *k, const cJSON *params))
{
	struct call k = { c->admin, c->id, c->name && c->name[0] ? c->name : "cli", tool, verb,
	    0 };
	double level = num_param(c->params, "log_level", LOG_ERROR, LOG_DEBUG, LOG_WARN);

	log_set_thread_hook(log_hook, level < 0 ? LOG_WARN : (enum log_level)level, &k);
	fn(&k, c->params);
	log_set_thread_hook(NULL, LOG_ERROR, NULL);
}

/* The methods of server.c's table (admin.h), one line each: sbxtop/VERB runs
 * m_VERB, in the journal as TOOL (NULL: not journaled). */
#define METHOD(verb, tool)						\
	void								\
	admin_##verb(struct srv_call *c)				\
	{								\
		run(c, #verb, tool, m_##verb);				\
	}
METHOD(list, NULL)
METHOD(status, NULL)
METHOD(create, "sandbox_create")
METHOD(suspend, "sandbox_suspend")
METHOD(resume, "sandbox_resume")
METHOD(destroy, "sandbox_destroy")
METHOD(exec_stdin, NULL)
METHOD(exec, "sandbox_exec")
METHOD(copy_in, "sandbox_copy_in")
METHOD(copy_out, "sandbox_copy_out")
METHOD(log_path, NULL)
