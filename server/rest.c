/* The REST API (rest.h): requests, replies, the journal and the gate, and the
 * top of the routing.  Handlers run on libmicrohttpd's thread of the
 * connection, so one that waits (an exec, a held approval) holds up only its
 * own client.
 *
 * Every call goes through the functions the console and agents use: the MCP
 * tools' run functions (rest_tool) or the core function a tool would call,
 * between rest_op_begin and rest_op_end, which put it in the activity journal
 * as client "rest" and pass it through the approval gate first. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/keys/keys.h"
#include "lib/log.h"
#include "lib/util.h"
#include "mcp/mcp.h"
#include "mcp/schema.h"
#include "mcp/tool.h"
#include "server/rest-int.h"

/* The document, kept in the tree and built in. */
__asm__(".section .rodata\n"
    ".global rest_openapi\n"
    ".type rest_openapi, @object\n"
    "rest_openapi:\n"
    ".incbin \"docs/openapi.json\"\n"
    ".byte 0\n"
    ".global rest_openapi_end\n"
    "rest_openapi_end:\n"
    ".balign 4\n"
    ".global rest_openapi_len\n"
    "rest_openapi_len:\n"
    ".long rest_openapi_end - rest_openapi - 1\n"
    ".previous\n");

#define BODY_DROP_MAX	(256ull << 20)	/* read past a body's cap before cutting it */

/* --- replies ------------------------------------------------------------- */

enum MHD_Result
rest_reply(struct MHD_Connection *conn, unsigned status, const char *ctype,
    const char *body, size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body,
	    MHD_RESPMEM_MUST_COPY);
	enum MHD_Result rc;

	if (r == NULL)
		return MHD_NO;
	if (ctype != NULL)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	rc = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return rc;
}

enum MHD_Result
rest_json(struct MHD_Connection *conn, unsigned status, cJSON *o)
{
	_cleanup_free_ char *t = cJSON_PrintUnformatted(o);
	enum MHD_Result rc;

	cJSON_Delete(o);
	if (t == NULL)
		fatal("out of memory");
	size_t n = strlen(t);
	t = xrealloc(t, n + 2);
	t[n] = '\n';
	t[n + 1] = '\0';
	rc = rest_reply(conn, status, "application/json", t, n + 1);
	return rc;
}

unsigned
rest_status(const struct sbx_err *e)
{
	switch (e->code) {
	case SBX_EINVAL:	return MHD_HTTP_BAD_REQUEST;
	case SBX_ENOTFOUND:	return MHD_HTTP_NOT_FOUND;
	case SBX_ESTATE:	return MHD_HTTP_CONFLICT;
	case SBX_EUNSUPPORTED:	return MHD_HTTP_NOT_IMPLEMENTED;
	case SBX_EDENIED:	return MHD_HTTP_FORBIDDEN;
	case SBX_ETIMEOUT:	return MHD_HTTP_GATEWAY_TIMEOUT;
	case SBX_EBACKEND:
	case SBX_EAGENT:	return MHD_HTTP_BAD_GATEWAY;
	default:		return MHD_HTTP_INTERNAL_SERVER_ERROR;
	}
}

/* The body of an error: one shape for every route. */
static cJSON *
error_body(const struct sbx_err *e)
{
	cJSON *o = cJSON_CreateObject(), *x = cJSON_AddObjectToObject(o, "error");

	cJSON_AddStringToObject(x, "code", sbx_errcode_name(e->code));
	cJSON_AddStringToObject(x, "message", e->msg[0] ? e->msg : "failed");
	if (e->reason == SBX_R_UNKNOWN_SANDBOX)
		cJSON_AddStringToObject(x, "hint", "GET /v1/sandboxes lists the sandboxes "
		    "there are");
	else if (e->hint[0])
		cJSON_AddStringToObject(x, "hint", e->hint);
	else
		cJSON_AddNullToObject(x, "hint");
	return o;
}

enum MHD_Result
rest_error(struct MHD_Connection *conn, const struct sbx_err *e)
{
	return rest_json(conn, rest_status(e), error_body(e));
}

enum MHD_Result
rest_fail(struct MHD_Connection *conn, enum sbx_errcode code, const char *hint,
    const char *fmt, ...)
{
	struct sbx_err e;
	va_list ap;

	sbx_err_clear(&e);
	e.code = code;
	va_start(ap, fmt);
	vsnprintf(e.msg, sizeof e.msg, fmt, ap);
	va_end(ap);
	if (hint != NULL)
		snprintf(e.hint, sizeof e.hint, "%s", hint);
	return rest_error(conn, &e);
}

const char *
rest_query(struct rest_req *rq, const char *name)
{
	return MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, name);
}

int
rest_query_bool(struct rest_req *rq, const char *name, int def)
{
	const char *v = rest_query(rq, name);

	if (v == NULL)
		return def;
	if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0 || v[0] == '\0')
		return 1;
	if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0)
		return 0;
	return -1;
}

cJSON *
rest_body_object(struct rest_req *rq, struct sbx_err *e)
{
	cJSON *o;

	if (rq->body.len == 0)
		return cJSON_CreateObject();
	o = cJSON_ParseWithLength(rq->body.data, rq->body.len);
	if (o == NULL) {
		sbx_error(e, SBX_EINVAL, "send a JSON object with Content-Type: "
		    "application/json", "the body is not JSON");
		return NULL;
	}
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		sbx_error(e, SBX_EINVAL, "send a JSON object ({...})", "the body is JSON but "
		    "not an object");
		return NULL;
	}
	return o;
}

int
rest_conn_gone(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = conn ? MHD_get_connection_info(conn,
	    MHD_CONNECTION_INFO_CONNECTION_FD) : NULL;
	struct pollfd p;

	if (conn == NULL || ci == NULL)
		return 0;
	p.fd = ci->connect_fd;
	p.events = POLLRDHUP;
	p.revents = 0;
	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

/* --- who calls -------------------------------------------------------------- */

/* The caller of the request this thread answers (or writes the stream of). */
static __thread const struct mcp_http_caller *calling;
/* The connection of the request this thread answers, for a held call to
 * notice that its client hung up. */
static __thread struct MHD_Connection *answering;


void
rest_act_for(const struct mcp_http_caller *who)
{
	calling = who;
	if (who != NULL && who->key_id[0] != '\0')
		core_act_for(who->key_id, (who->scopes & KEY_ADMIN) != 0);
	else
		core_act_for(NULL, 1);
}

enum MHD_Result
rest_answer(struct rest_req *rq, rest_route_fn *fn)
{
	enum MHD_Result rc;

	answering = rq->conn;
	rest_act_for(&rq->who);
	rc = fn(rq);
	rest_act_for(NULL);
	answering = NULL;
	return rc;
}

/* --- streamed bodies ------------------------------------------------------ */

struct pstream {
	struct MHD_Connection *conn;
	struct mcp_http_caller who;	/* the request's: the writer acts for it */
	int		 rfd;
	volatile int	 stop;
	int		 refs;		/* atomic: the reader and the writer */
	void		(*fn)(void *arg, int fd, volatile int *stop);
	void		(*freefn)(void *arg);
	void		*arg;
	int		 wfd;
};

static void
pstream_unref(struct pstream *p)
{
	if (__atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	if (p->freefn != NULL)
		p->freefn(p->arg);
	free(p);
}

static void *
pstream_writer(void *arg)
{
	struct pstream *p = arg;

	rest_act_for(&p->who);
	p->fn(p->arg, p->wfd, &p->stop);
	rest_act_for(NULL);
	close(p->wfd);
	pstream_unref(p);
	return NULL;
}

static ssize_t
pstream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct pstream *p = cls;
	ssize_t n;

	for (;;) {
		/* Wait for data, or for the client to hang up: libmicrohttpd does
		 * not look at the socket while this blocks. */
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(p->conn,
		    MHD_CONNECTION_INFO_CONNECTION_FD);
		struct pollfd pf[2] = { { p->rfd, POLLIN, 0 },
		    { ci ? ci->connect_fd : -1, POLLRDHUP, 0 } };
		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		if ((pf[1].revents & (POLLRDHUP | POLLHUP | POLLERR)) &&
		    !(pf[0].revents & POLLIN))
			return MHD_CONTENT_READER_END_WITH_ERROR;
		if (!(pf[0].revents & (POLLIN | POLLHUP)))
			continue;
		n = read(p->rfd, buf, max);
		if (n > 0)
			return n;
		if (n == 0)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (errno != EINTR)
			return MHD_CONTENT_READER_END_WITH_ERROR;
	}
}

static void
pstream_done(void *cls)
{
	struct pstream *p = cls;

	/* The client went away or read it all: the writer stops (its next write
	 * fails, and *stop says so to one that waits). */
	__atomic_store_n(&p->stop, 1, __ATOMIC_RELAXED);
	close(p->rfd);
	pstream_unref(p);
}

struct MHD_Response *
rest_stream(struct MHD_Connection *conn, void (*fn)(void *arg, int fd, volatile int *stop),
    void *arg, void (*freefn)(void *arg))
{
	struct pstream *p = xcalloc(1, sizeof *p);
	struct MHD_Response *r;
	pthread_t t;
	int fds[2];

	if (pipe2(fds, O_CLOEXEC) < 0) {
		if (freefn)
			freefn(arg);
		free(p);
		return NULL;
	}
	p->conn = conn;
	if (calling != NULL)
		p->who = *calling;
	p->rfd = fds[0];
	p->wfd = fds[1];
	p->fn = fn;
	p->freefn = freefn;
	p->arg = arg;
	p->refs = 2;
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, pstream_read, p,
	    pstream_done);
	if (r == NULL) {
		close(fds[0]);
		close(fds[1]);
		if (freefn)
			freefn(arg);
		free(p);
		return NULL;
	}
	if (pthread_create(&t, NULL, pstream_writer, p) != 0) {
		close(p->wfd);
		pstream_unref(p);	/* the writer's */
		return r;		/* an empty body */
	}
	pthread_detach(t);
	return r;
}

/* --- the journal and the gate --------------------------------------------- */


/* Cancels the call when its client hangs up. */
struct watch {
	struct MHD_Connection	*conn;
	struct mcp_call		*call;
	pthread_mutex_t		 mu;
	pthread_cond_t		 cv;
	int			 done;
};

static void *
watcher(void *arg)
{
	struct watch *w = arg;
	struct timespec ts;

	pthread_mutex_lock(&w->mu);
	while (!w->done) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 200 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&w->cv, &w->mu, &ts);
		if (!w->done && rest_conn_gone(w->conn)) {
			mcp_call_local_cancel(w->call);
			break;
		}
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

static int
watch_start(struct watch *w, struct MHD_Connection *conn, struct mcp_call *call,
    pthread_t *th)
{
	memset(w, 0, sizeof *w);
	w->conn = conn;
	w->call = call;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	return conn != NULL && pthread_create(th, NULL, watcher, w) == 0;
}

static void
watch_stop(struct watch *w, pthread_t th, int started)
{
	if (started) {
		pthread_mutex_lock(&w->mu);
		w->done = 1;
		pthread_cond_signal(&w->cv);
		pthread_mutex_unlock(&w->mu);
		pthread_join(th, NULL);
	}
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
}


/* The API key a call came with, as the journal names it: never the key. */
static void
add_key(cJSON *d, const struct rest_op *op)
{
	if (op->key_id[0] == '\0')
		return;
	cJSON_AddStringToObject(d, "key", op->key_name);
	cJSON_AddStringToObject(d, "key_id", op->key_id);
}

int
rest_op_begin(struct rest_op *op, struct rest *r, const char *tool, const char *sandbox,
    const cJSON *args, struct sbx_err *e)
{
	const struct mcp_tool *t = mcp_tool_find(tool);
	cJSON *d;
	char why[400];

	memset(op, 0, sizeof *op);
	op->core = r->core;
	op->tool = tool;
	snprintf(op->sandbox, sizeof op->sandbox, "%s", sandbox ? sandbox : "");
	op->args = args ? cJSON_Duplicate(args, 1) : cJSON_CreateObject();
	/* File contents never go into the journal; their size does. */
	cJSON *content = cJSON_GetObjectItemCaseSensitive(op->args, "content");
	if (cJSON_IsString(content)) {
		char sz[48];
		snprintf(sz, sizeof sz, "<%zu bytes>", strlen(content->valuestring));
		cJSON_ReplaceItemInObjectCaseSensitive(op->args, "content",
		    cJSON_CreateString(sz));
	}
	if (cJSON_GetObjectItemCaseSensitive(op->args, "env") != NULL)
		cJSON_ReplaceItemInObjectCaseSensitive(op->args, "env", cJSON_CreateString("***"));
	op->t0 = now_ms();
	if (calling != NULL && calling->key_id[0] != '\0') {
		snprintf(op->key_id, sizeof op->key_id, "%s", calling->key_id);
		snprintf(op->key_name, sizeof op->key_name, "%s", calling->key_name);
	}
	pthread_mutex_lock(&r->mu);
	op->id = ++r->next_id;
	pthread_mutex_unlock(&r->mu);
	op->call = mcp_call_local_new(r->core, "rest");

	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "tool", tool);
	cJSON_AddStringToObject(d, "client", "rest");
	cJSON_AddStringToObject(d, "kind", "rest");
	cJSON_AddStringToObject(d, "origin", "rest");
	add_key(d, op);
	cJSON_AddNumberToObject(d, "request_id", (double)op->id);
	cJSON_AddItemToObject(d, "arguments", cJSON_Duplicate(op->args, 1));
	core_events_emit(r->core, "tool.started", sandbox, d);

	if (r->ap == NULL)
		return 0;
	char who[KEY_NAME_MAX + 16];
	snprintf(who, sizeof who, "rest%s%s%s", op->key_id[0] ? " (key " : "", op->key_name,
	    op->key_id[0] ? ")" : "");
	struct mcp_gate g = {
		tool, t ? t->hints : MCP_READONLY, op->args, who, "rest", "rest", op->call,
	};
	why[0] = '\0';
	{
		/* A held call is cancelled when its client hangs up. */
		struct watch w;
		pthread_t th = 0;
		int started = approvals_mode(r->ap) != APPROVE_NONE &&
		    watch_start(&w, answering, op->call, &th);
		int allowed = approvals_gate(r->ap, &g, why, sizeof why) != 0;
		if (started)
			watch_stop(&w, th, 1);
		if (allowed)
			return 0;
	}
	sbx_error(e, SBX_EDENIED, "ask the operator (sbxtop console) to allow it, or set "
	    "approve=none", "%s", why[0] ? why : "denied by the operator");
	rest_op_end(op, -2, e);
	return -1;
}

void
rest_op_end(struct rest_op *op, int rc, const struct sbx_err *e)
{
	cJSON *d;

	if (op->call == NULL)
		return;
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "tool", op->tool);
	cJSON_AddStringToObject(d, "client", "rest");
	cJSON_AddStringToObject(d, "kind", "rest");
	add_key(d, op);
	cJSON_AddNumberToObject(d, "request_id", (double)op->id);
	cJSON_AddNumberToObject(d, "duration_ms", (double)(now_ms() - op->t0));
	cJSON_AddStringToObject(d, "outcome", rc == -2 ? "denied" : rc < 0 ?
	    (mcp_call_cancelled(op->call) ? "cancelled" : "error") : "ok");
	if (rc < 0 && e != NULL)
		cJSON_AddStringToObject(d, "message", e->msg);
	core_events_emit(op->core, "tool.finished", op->sandbox[0] ? op->sandbox : NULL, d);
	mcp_call_local_free(op->call);
	op->call = NULL;
	cJSON_Delete(op->args);
	op->args = NULL;
}

int
rest_tool(struct rest *r, struct MHD_Connection *conn, const char *tool,
    const char *sandbox, cJSON *args, cJSON **out, struct sbx_err *e)
{
	const struct mcp_tool *t = mcp_tool_find(tool);
	struct rest_op op;
	struct watch w;
	pthread_t th = 0;
	char why[400];
	int rc, watching;

	*out = NULL;
	if (t == NULL)
		return sbx_error(e, SBX_EINTERNAL, NULL, "no tool %s", tool);
	if (sandbox != NULL)
		cJSON_AddStringToObject(args, "sandbox_id", sandbox);
	{
		rc = schema_check(mcp_tool_input_schema(t), args, why, sizeof why);
		if (rc < 0)
			return sbx_error(e, SBX_EINVAL, "see the request schema in "
			    "/v1/openapi.json", "invalid request: %s", why);
	}
	if (rest_op_begin(&op, r, tool, sandbox, args, e) < 0)
		return -1;
	watching = watch_start(&w, conn, op.call, &th);
	sbx_err_clear(e);
	rc = t->run(op.call, args, out, e);
	watch_stop(&w, th, watching);
	if (rc == 0 && *out == NULL)
		rc = sbx_error(e, SBX_EINTERNAL, NULL, "%s gave no result", tool);
	if (rc < 0) {
		cJSON_Delete(*out);
		*out = NULL;
	}
	rest_op_end(&op, rc, e);
	return rc < 0 ? -1 : 0;
}

/* --- sandboxes and forwards ---------------------------------------------- */

static enum MHD_Result
tool_reply(struct rest_req *rq, const char *tool, const char *sandbox, cJSON *args,
    unsigned status)
{
	struct sbx_err e;
	cJSON *out;

	if (args == NULL)
		args = cJSON_CreateObject();
	if (rest_tool(rq->r, rq->conn, tool, sandbox, args, &out, &e) < 0) {
		cJSON_Delete(args);
		return rest_error(rq->conn, &e);
	}
	cJSON_Delete(args);
	return rest_json(rq->conn, status, out);
}

/* The routes of server/rest-routes.c's table that are the sandboxes' and
 * their forwards'. */
enum MHD_Result
rest_openapi_get(struct rest_req *rq)
{
	return rest_reply(rq->conn, MHD_HTTP_OK, "application/json", rest_openapi,
	    rest_openapi_len);
}

enum MHD_Result
rest_sandboxes_list(struct rest_req *rq)
{
	return tool_reply(rq, "sandbox_list", NULL, NULL, MHD_HTTP_OK);
}

enum MHD_Result
rest_sandboxes_create(struct rest_req *rq)
{
	struct sbx_err e;
	cJSON *args;

	if ((args = rest_body_object(rq, &e)) == NULL)
		return rest_error(rq->conn, &e);
	if (cJSON_GetObjectItemCaseSensitive(args, "sandbox_id") != NULL) {
		cJSON_Delete(args);
		return rest_fail(rq->conn, SBX_EINVAL, "name it with \"name\"",
		    "invalid request: sandbox_id is not a field of a new sandbox");
	}
	return tool_reply(rq, "sandbox_create", NULL, args, MHD_HTTP_CREATED);
}

enum MHD_Result
rest_sandbox_get(struct rest_req *rq)
{
	return tool_reply(rq, "sandbox_status", rq->seg[2], NULL, MHD_HTTP_OK);
}

enum MHD_Result
rest_sandbox_destroy(struct rest_req *rq)
{
	return tool_reply(rq, "sandbox_destroy", rq->seg[2], NULL, MHD_HTTP_OK);
}

enum MHD_Result
rest_sandbox_suspend(struct rest_req *rq)
{
	return tool_reply(rq, "sandbox_suspend", rq->seg[2], NULL, MHD_HTTP_OK);
}

enum MHD_Result
rest_sandbox_resume(struct rest_req *rq)
{
	return tool_reply(rq, "sandbox_resume", rq->seg[2], NULL, MHD_HTTP_OK);
}

enum MHD_Result
rest_forwards_list(struct rest_req *rq)
{
	const char *id = rq->seg[2];
	struct core_forward *v = NULL;
	struct rest_op op;
	struct sbx_err e;
	size_t n = 0;
	int rc;

	if (rest_op_begin(&op, rq->r, "sandbox_port_forward_list", id, NULL, &e) < 0)
		return rest_error(rq->conn, &e);
	rc = core_forward_list(rq->r->core, id, &v, &n, &e);
	rest_op_end(&op, rc, &e);
	if (rc < 0)
		return rest_error(rq->conn, &e);
	cJSON *o = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(o, "forwards");
	for (size_t i = 0; i < n; i++) {
		cJSON *f = cJSON_CreateObject();
		cJSON_AddStringToObject(f, "sandbox_id", v[i].sandbox);
		cJSON_AddStringToObject(f, "bind", v[i].bind);
		cJSON_AddNumberToObject(f, "local_port", v[i].local_port);
		cJSON_AddNumberToObject(f, "remote_port", v[i].remote_port);
		cJSON_AddBoolToObject(f, "live", v[i].live);
		cJSON_AddNumberToObject(f, "connections", (double)v[i].conns_total);
		cJSON_AddNumberToObject(f, "bytes_in", (double)v[i].bytes_in);
		cJSON_AddNumberToObject(f, "bytes_out", (double)v[i].bytes_out);
		cJSON_AddItemToArray(a, f);
	}
	free(v);
	return rest_json(rq->conn, MHD_HTTP_OK, o);
}

enum MHD_Result
rest_forward_start(struct rest_req *rq)
{
	struct sbx_err e;
	cJSON *args;

	if ((args = rest_body_object(rq, &e)) == NULL)
		return rest_error(rq->conn, &e);
	return tool_reply(rq, "sandbox_port_forward", rq->seg[2], args, MHD_HTTP_CREATED);
}

enum MHD_Result
rest_forward_stop(struct rest_req *rq)
{
	char *end;
	long port = strtol(rq->seg[4], &end, 10);
	cJSON *args;

	if (*end != '\0' || port < 1 || port > 65535)
		return rest_fail(rq->conn, SBX_EINVAL, "give the sandbox's port, 1 to 65535",
		    "bad port '%.20s'", rq->seg[4]);
	args = cJSON_CreateObject();
	cJSON_AddNumberToObject(args, "remote_port", (double)port);
	return tool_reply(rq, "sandbox_port_forward_stop", rq->seg[2], args, MHD_HTTP_OK);
}

struct rest *
rest_new(struct core *c, struct approvals *ap, const char *token)
{
	struct rest *r = xcalloc(1, sizeof *r);

	r->core = c;
	r->ap = ap;
	r->keys = keyring_new(token, config_int(core_config(c), "key_rate_window"));
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	rest_compat_start(r);
	return r;
}

void
rest_free(struct rest *r)
{
	if (r == NULL)
		return;
	rest_compat_stop(r);
	rest_exec_cancel_all(r);
	keyring_free(r->keys);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
	free(r);
}
