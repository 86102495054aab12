/* Exec over REST: buffered (the sandbox_exec tool, one JSON answer) or
 * streamed as NDJSON while it runs (core_exec, one line per chunk of output),
 * cancelled by closing the connection or by DELETE .../execs/ID. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/sig.h"
#include "lib/util.h"
#include "mcp/schema.h"
#include "mcp/tool-util.h"
#include "server/rest-int.h"

#define STREAM_TIMEOUT_DEF	120
#define STREAM_TIMEOUT_MAX	3600

/* A streamed exec, in r->execs while it runs. */
struct rest_exec {
	struct rest_exec	*next;
	struct rest		*r;
	char			 id[32];	/* "r1", ... for DELETE */
	char			 sandbox[80];
	int			 cancel;	/* atomic */
	volatile int		*stop;		/* the client went away */
	cJSON			*args;		/* the request (owned) */
	struct rest_op		 op;
	int			 fd;
};

static void
exec_unlink(struct rest_exec *x)
{
	struct rest *r = x->r;

	pthread_mutex_lock(&r->mu);
	for (struct rest_exec **pp = &r->execs; *pp != NULL; pp = &(*pp)->next)
		if (*pp == x) {
			*pp = x->next;
			break;
		}
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

static int
line(int fd, cJSON *o)
{
	_cleanup_free_ char *t = cJSON_PrintUnformatted(o);
	int rc;

	cJSON_Delete(o);
	if (t == NULL)
		fatal("out of memory");
	size_t n = strlen(t);
	t = xrealloc(t, n + 2);
	t[n] = '\n';
	rc = write_all(fd, t, n + 1);
	return rc;
}

static int
on_output(int stream, const char *data, size_t len, void *arg)
{
	struct rest_exec *x = arg;
	cJSON *o = cJSON_CreateObject();
	_cleanup_free_ char *t = mcp_utf8_lossy(data, len);

	cJSON_AddStringToObject(o, "type", "output");
	cJSON_AddStringToObject(o, "stream", stream == 2 ? "stderr" : "stdout");
	cJSON_AddStringToObject(o, "data", t);
	return line(x->fd, o) < 0 ? -1 : 0;
}

static int
is_cancelled(void *arg)
{
	struct rest_exec *x = arg;

	return __atomic_load_n(&x->cancel, __ATOMIC_RELAXED) || *x->stop;
}

static void
exec_stream(void *arg, int fd, volatile int *stop)
{
	struct rest_exec *x = arg;
	const cJSON *env = cJSON_GetObjectItemCaseSensitive(x->args, "env");
	struct core_exec_opts o = { 0 };
	struct core_exec_result res;
	struct sbx_err e;
	const char *in;
	cJSON *l;
	int rc;

	x->fd = fd;
	x->stop = stop;
	o.command = mcp_arg_str(x->args, "command");
	o.cwd = mcp_arg_str(x->args, "cwd");
	o.env = cJSON_IsObject(env) ? env : NULL;
	if ((in = mcp_arg_str(x->args, "stdin")) != NULL) {
		o.stdin_data = in;
		o.stdin_len = strlen(in);
	}
	o.as_root = mcp_arg_bool(x->args, "as_root", 0);
	o.timeout_s = mcp_arg_int(x->args, "timeout_s", STREAM_TIMEOUT_DEF);
	o.origin = "rest";
	o.cancelled = is_cancelled;
	l = cJSON_CreateObject();
	cJSON_AddStringToObject(l, "type", "started");
	cJSON_AddStringToObject(l, "id", x->id);
	line(fd, l);
	sbx_err_clear(&e);
	rc = core_exec(x->r->core, x->sandbox, &o, on_output, x, &res, &e);
	if (rc < 0 && is_cancelled(x)) {
		sbx_error(&e, SBX_EIO, NULL, "the command was cancelled (and killed)");
		mcp_call_local_cancel(x->op.call);
	}
	l = cJSON_CreateObject();
	if (rc < 0) {
		cJSON *err = cJSON_AddObjectToObject(l, "error");
		cJSON_AddStringToObject(l, "type", "error");
		cJSON_AddStringToObject(err, "code", __atomic_load_n(&x->cancel,
		    __ATOMIC_RELAXED) ? "cancelled" : sbx_errcode_name(e.code));
		cJSON_AddStringToObject(err, "message", e.msg);
		if (e.hint[0])
			cJSON_AddStringToObject(err, "hint", e.hint);
		else
			cJSON_AddNullToObject(err, "hint");
	} else {
		cJSON_AddStringToObject(l, "type", "exit");
		if (res.signo > 0) {
			const char *name = sig_name(res.signo);
			cJSON_AddNullToObject(l, "exit_code");
			cJSON_AddStringToObject(l, "signal", name ? name : "?");
		} else {
			cJSON_AddNumberToObject(l, "exit_code", res.exit_code);
			cJSON_AddNullToObject(l, "signal");
		}
		cJSON_AddNumberToObject(l, "duration_ms", (double)res.duration_ms);
		cJSON_AddBoolToObject(l, "timed_out", res.timed_out);
		cJSON_AddStringToObject(l, "reason", core_exec_reason(&res));
		cJSON_AddStringToObject(l, "exec_id", res.exec_id);
	}
	line(fd, l);
	rest_op_end(&x->op, rc, &e);
	exec_unlink(x);
}

static void
exec_free(void *arg)
{
	struct rest_exec *x = arg;

	exec_unlink(x);
	rest_op_end(&x->op, -1, NULL);	/* when it never ran */
	cJSON_Delete(x->args);
	free(x);
}

static int
wants_stream(struct rest_req *rq)
{
	const char *s = rest_query(rq, "stream");
	const char *a = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, "Accept");

	if (s != NULL)
		return strcmp(s, "ndjson") == 0 || strcmp(s, "true") == 0 || strcmp(s, "1") == 0;
	return a != NULL && strcasestr(a, "application/x-ndjson") != NULL;
}

static enum MHD_Result
streamed(struct rest_req *rq, const char *id, cJSON *args)
{
	const struct mcp_tool *t = mcp_tool_find("sandbox_exec");
	struct rest_exec *x;
	struct MHD_Response *resp;
	struct sbx_err e;
	char why[400];
	int64_t to;
	enum MHD_Result rc;

	cJSON_AddStringToObject(args, "sandbox_id", id);
	{
		int bad = schema_check(mcp_tool_input_schema(t), args, why, sizeof why) < 0;
		if (bad) {
			cJSON_Delete(args);
			return rest_fail(rq->conn, SBX_EINVAL, "see the request schema in "
			    "/v1/openapi.json", "invalid request: %s", why);
		}
	}
	if (mcp_arg_bool(args, "background", 0)) {
		cJSON_Delete(args);
		return rest_fail(rq->conn, SBX_EINVAL, "leave out stream for a background "
		    "command: it answers at once with its log_path", "invalid request: a "
		    "background command is not streamed");
	}
	to = mcp_arg_int(args, "timeout_s", STREAM_TIMEOUT_DEF);
	if (to < 1 || to > STREAM_TIMEOUT_MAX) {
		cJSON_Delete(args);
		return rest_fail(rq->conn, SBX_EINVAL, NULL, "invalid request: timeout_s must be "
		    "1 to %d", STREAM_TIMEOUT_MAX);
	}
	x = xcalloc(1, sizeof *x);
	x->r = rq->r;
	x->args = args;
	snprintf(x->sandbox, sizeof x->sandbox, "%s", id);
	if (rest_op_begin(&x->op, rq->r, "sandbox_exec", id, args, &e) < 0) {
		cJSON_Delete(args);
		free(x);
		return rest_error(rq->conn, &e);
	}
	pthread_mutex_lock(&rq->r->mu);
	snprintf(x->id, sizeof x->id, "r%llu", (unsigned long long)++rq->r->next_id);
	x->next = rq->r->execs;
	rq->r->execs = x;
	pthread_mutex_unlock(&rq->r->mu);
	if ((resp = rest_stream(rq->conn, exec_stream, x, exec_free)) == NULL) {
		/* exec_free ran: x is out of the list and freed. */
		return rest_fail(rq->conn, SBX_EINTERNAL, NULL, "cannot start the stream");
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/x-ndjson");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(resp, "X-Exec-Id", x->id);
	rc = MHD_queue_response(rq->conn, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return rc;
}

static enum MHD_Result
cancel(struct rest_req *rq, const char *id, const char *eid)
{
	struct rest *r = rq->r;
	struct rest_op op;
	struct sbx_err e;
	cJSON *a, *o;
	int found = 0, rc;

	pthread_mutex_lock(&r->mu);
	for (struct rest_exec *x = r->execs; x != NULL; x = x->next)
		if (strcmp(x->id, eid) == 0) {
			__atomic_store_n(&x->cancel, 1, __ATOMIC_RELAXED);
			found = 1;
		}
	pthread_mutex_unlock(&r->mu);
	a = cJSON_CreateObject();
	cJSON_AddStringToObject(a, "exec_id", eid);
	cJSON_AddStringToObject(a, "signal", "KILL");
	if (found) {
		/* Stopped through its exec's cancel callback: the agent kills it. */
		if (rest_op_begin(&op, r, "sandbox_process_kill", id, a, &e) < 0) {
			cJSON_Delete(a);
			return rest_error(rq->conn, &e);
		}
		rest_op_end(&op, 0, NULL);
		cJSON_Delete(a);
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "id", eid);
		cJSON_AddBoolToObject(o, "cancelled", 1);
		return rest_json(rq->conn, MHD_HTTP_OK, o);
	}
	/* An exec id of the agent's (sandbox_process_list, a buffered result). */
	if (rest_op_begin(&op, r, "sandbox_process_kill", id, a, &e) < 0) {
		cJSON_Delete(a);
		return rest_error(rq->conn, &e);
	}
	cJSON_Delete(a);
	rc = core_exec_signal(r->core, id, eid, "KILL", "rest", &e);
	rest_op_end(&op, rc, &e);
	if (rc < 0)
		return rest_error(rq->conn, &e);
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", eid);
	cJSON_AddBoolToObject(o, "cancelled", 1);
	return rest_json(rq->conn, MHD_HTTP_OK, o);
}

enum MHD_Result
rest_exec(struct rest_req *rq)
{
	const char *id = rq->seg[2];
	struct sbx_err e;
	cJSON *args, *out;

	if ((args = rest_body_object(rq, &e)) == NULL)
		return rest_error(rq->conn, &e);
	if (cJSON_GetObjectItemCaseSensitive(args, "sandbox_id") != NULL) {
		cJSON_Delete(args);
		return rest_fail(rq->conn, SBX_EINVAL, "the sandbox is in the path",
		    "invalid request: sandbox_id is not a field here");
	}
	if (wants_stream(rq))
		return streamed(rq, id, args);
	if (rest_tool(rq->r, rq->conn, "sandbox_exec", id, args, &out, &e) < 0) {
		cJSON_Delete(args);
		return rest_error(rq->conn, &e);
	}
	cJSON_Delete(args);
	return rest_json(rq->conn, MHD_HTTP_OK, out);
}

enum MHD_Result
rest_execs(struct rest_req *rq)
{
	struct sbx_err e;
	cJSON *args = cJSON_CreateObject(), *out;

	if (rest_tool(rq->r, rq->conn, "sandbox_process_list", rq->seg[2], args, &out, &e) < 0) {
		cJSON_Delete(args);
		return rest_error(rq->conn, &e);
	}
	cJSON_Delete(args);
	return rest_json(rq->conn, MHD_HTTP_OK, out);
}

enum MHD_Result
rest_exec_cancel(struct rest_req *rq)
{
	return cancel(rq, rq->seg[2], rq->seg[4]);
}

void
rest_exec_cancel_all(struct rest *r)
{
	pthread_mutex_lock(&r->mu);
	for (struct rest_exec *x = r->execs; x != NULL; x = x->next)
		__atomic_store_n(&x->cancel, 1, __ATOMIC_RELAXED);
	while (r->execs != NULL)
		pthread_cond_wait(&r->cv, &r->mu);
	pthread_mutex_unlock(&r->mu);
}
