/* The Streamable HTTP transport (http.h), with libmicrohttpd in
 * thread-per-connection mode: a POST that waits for its answer simply blocks its
 * own connection thread, and an SSE stream is a content reader that blocks until
 * its session has something to say.
 *
 * Routing what a session sends: its send callback sees one message at a time.
 * A message sent on the thread of the POST that is http_feeding the session (in-line
 * answers: initialize, ping, tools/list, protocol errors) belongs to that POST;
 * one sent by a worker belongs to the POST of the request that worker runs
 * (mcp_related_request): its response, and its progress and log notifications,
 * which turn that POST's answer into an SSE stream.  Anything else goes to the
 * session's GET stream, or nowhere when the client has not opened one.
 *
 * Order of checks on every request, so nothing is read from a caller that may
 * not talk to us: Host and Origin (DNS rebinding: 403), the bearer token (401),
 * then the MCP rules (Accept 406, Content-Type 415, session 400/404, protocol
 * version 400).  A 2026-07-28 POST has no session: it is checked against its
 * headers (http-check.c) and served by a session of its own that ends with it;
 * its errors carry their HTTP status (400, 404). */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/keys/keys.h"
#include "lib/buf.h"
#include "lib/log.h"
#include "lib/util.h"
#include "mcp/http.h"
#include "mcp/http-check.h"
#include "mcp/http-door.h"
#include "mcp/http-sess.h"
#include "mcp/jsonrpc.h"
#include "mcp/mcp.h"

#define KEEPALIVE_MS	15000		/* an SSE comment when a stream is quiet */
#define CONN_MAX	256		/* connections served at once (a thread each) */

/* The revisions a client may name in MCP-Protocol-Version (mcp/server.c speaks
 * them); without the header, 2025-03-26 is assumed, as the spec says. */
static const char *const versions[] = {
	"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05",
};

/* The stream of the POST whose thread is http_feeding its session right now. */
__thread struct stream *http_feeding;

/* --- replies ------------------------------------------------------------- */

static enum MHD_Result
reply(struct MHD_Connection *conn, unsigned status, const char *ctype, const char *body,
    const char *hname, const char *hval)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)body,
	    MHD_RESPMEM_MUST_COPY);
	enum MHD_Result rc;

	if (r == NULL)
		return MHD_NO;
	if (ctype != NULL)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	if (hname != NULL)
		MHD_add_response_header(r, hname, hval);
	rc = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return rc;
}

/* An HTTP-level refusal with a JSON-RPC error body (id null), as MCP clients
 * expect one. */
static enum MHD_Result
refuse(struct MHD_Connection *conn, unsigned status, int code, const char *hname,
    const char *hval, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static enum MHD_Result
refuse(struct MHD_Connection *conn, unsigned status, int code, const char *hname,
    const char *hval, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	_cleanup_free_ char *body = NULL;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	body = jsonrpc_error(NULL, code, msg, NULL);
	return reply(conn, status, "application/json", body, hname, hval);
}

/* --- SSE ------------------------------------------------------------------ */

/* One SSE event carrying msg; a message has no raw newline (cJSON escapes them
 * in strings), but each line gets its own data: field all the same. */
static char *
sse_event(const char *event, const char *msg, size_t len, size_t *outlen)
{
	struct buf b;

	buf_init(&b, SIZE_MAX / 2);
	buf_printf(&b, "event: %s\n", event);
	for (size_t i = 0; i <= len;) {
		const char *nl = memchr(msg + i, '\n', len - i);
		size_t k = nl ? (size_t)(nl - (msg + i)) : len - i;
		buf_append(&b, "data: ", 6);
		buf_append(&b, msg + i, k);
		buf_append(&b, "\n", 1);
		i += k + 1;
		if (nl == NULL)
			break;
	}
	buf_append(&b, "\n", 1);
	*outlen = b.len;
	return buf_steal(&b);
}

static int peer_gone(struct MHD_Connection *conn);

static ssize_t
sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct stream *st = cls;
	struct sess *hs = st->hs;
	struct mcp_http *h = hs->h;
	size_t k;

	if (st->outoff >= st->outlen) {
		struct item *it = NULL;
		int64_t quiet_since = now_ms();

		pthread_mutex_lock(&hs->mu);
		for (;;) {
			if ((it = hstream_pop(st)) != NULL)
				break;
			/* A POST's stream ends after its response (or its
			 * cancellation); every stream ends with the session. */
			if ((!st->get && (st->answered || st->cancelled)) || hs->ended ||
			    __atomic_load_n(&h->stopping, __ATOMIC_RELAXED)) {
				pthread_mutex_unlock(&hs->mu);
				return MHD_CONTENT_READER_END_OF_STREAM;
			}
			if (now_ms() - quiet_since >= KEEPALIVE_MS)
				break;
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 1;	/* to notice stopping */
			pthread_cond_timedwait(&hs->cv, &hs->mu, &ts);
			/* A stream whose client went away ends now, not at the
			 * next keepalive: an HTTP+SSE session ends with it. */
			if (st->get && st->conn != NULL && st->head == NULL &&
			    peer_gone(st->conn)) {
				pthread_mutex_unlock(&hs->mu);
				return MHD_CONTENT_READER_END_WITH_ERROR;
			}
		}
		pthread_mutex_unlock(&hs->mu);
		free(st->out);
		st->outoff = 0;
		if (it != NULL) {
			st->out = sse_event(it->endpoint ? "endpoint" : "message", it->text,
			    it->len, &st->outlen);
			free(it->text);
			free(it);
		} else {
			/* A comment: keeps proxies and idle timers from closing a
			 * quiet stream, and tells us when the client has gone. */
			st->out = xstrdup(": keepalive\n\n");
			st->outlen = strlen(st->out);
		}
	}
	k = st->outlen - st->outoff < max ? st->outlen - st->outoff : max;
	memcpy(buf, st->out + st->outoff, k);
	st->outoff += k;
	return (ssize_t)k;
}

static void
sse_done(void *cls)
{
	struct stream *st = cls;
	struct sess *hs = st->hs;

	pthread_mutex_lock(&hs->mu);
	if (st->get) {
		if (hs->get == st)
			hs->get = NULL;
	} else {
		hsess_unlink_post(hs, st);
	}
	pthread_mutex_unlock(&hs->mu);
	hstream_free(st);
	/* An HTTP+SSE session ends with its stream (the client closed it). */
	if (hs->sse && hsess_remove(hs->h, hs))
		log_info("mcp http: session %.8s... ended with its event stream", hs->id);
	hsess_unref(hs);
}

/* Answer with st as an SSE stream; st and the caller's reference on its session
 * now belong to the response. */
static enum MHD_Result
reply_sse(struct MHD_Connection *conn, struct stream *st, const char *sid)
{
	struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384,
	    sse_read, st, sse_done);
	enum MHD_Result rc;

	if (r == NULL) {
		sse_done(st);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache, no-transform");
	if (st->get)
		st->conn = conn;
	if (sid != NULL)
		MHD_add_response_header(r, "Mcp-Session-Id", sid);
	rc = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return rc;
}

/* --- checks ------------------------------------------------------------- */

static const char *
header(struct MHD_Connection *conn, const char *name)
{
	return MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);
}

static int
origin_ok(const struct mcp_http *h, struct MHD_Connection *conn)
{
	return mcp_http_origin_ok(header(conn, "Origin"), header(conn, "Host"), h->loopback,
	    h->host, h->port);
}

/* 1 when the Accept header admits type ("*" + "/" + "*" does too). */
static int
accepts(struct MHD_Connection *conn, const char *type)
{
	const char *a = header(conn, "Accept");

	return a != NULL && (strcasestr(a, type) != NULL || strstr(a, "*/*") != NULL);
}

static int
version_ok(struct MHD_Connection *conn)
{
	const char *v = header(conn, "MCP-Protocol-Version");

	if (v == NULL)
		return 1;	/* 2025-03-26 assumed */
	for (size_t i = 0; i < ARRAY_SIZE(versions); i++)
		if (strcmp(v, versions[i]) == 0)
			return 1;
	return 0;
}

/* --- /mcp --------------------------------------------------------------- */

struct req {
	struct buf		 body;
	int			 too_big;
	int			 routed;	/* the router's: ctx is its own */
	int			 messages;	/* POST /mcp/messages */
	void			*ctx;
	struct mcp_http_caller	 who;		/* from the router's admit */
	struct mcp_http_refusal	 no;
};

/* 1 when the client of conn hung up (a 2026-07-28 client cancels so). */
static int
peer_gone(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn,
	    MHD_CONNECTION_INFO_CONNECTION_FD);
	struct pollfd p;

	if (ci == NULL)
		return 0;
	p.fd = ci->connect_fd;
	p.events = POLLRDHUP;
	return poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* Wait for the first thing st has to say, and answer: JSON when that is the
 * response, an SSE stream when a notification comes first.  Takes st and the
 * caller's reference on st->hs. */
static enum MHD_Result
answer(struct MHD_Connection *conn, struct stream *st, const char *sid)
{
	struct sess *hs = st->hs;
	struct mcp_http *h = hs->h;
	struct item *it = NULL;
	enum MHD_Result rc;
	int ended;

	pthread_mutex_lock(&hs->mu);
	while (st->head == NULL && !st->cancelled && !hs->ended &&
	    !__atomic_load_n(&h->stopping, __ATOMIC_RELAXED)) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&hs->cv, &hs->mu, &ts);
		if (hs->ephemeral && st->head == NULL && peer_gone(conn))
			st->cancelled = 1;	/* the session's end cancels the call */
	}
	if (st->head != NULL && st->head->response) {
		it = hstream_pop(st);
		hsess_unlink_post(hs, st);
	}
	ended = st->head == NULL && !st->cancelled;
	if (ended && it == NULL)
		hsess_unlink_post(hs, st);
	pthread_mutex_unlock(&hs->mu);

	if (it != NULL) {
		rc = reply(conn, hs->ephemeral ? mcp_http_modern_status(it->text, it->len) :
		    MHD_HTTP_OK, "application/json", it->text, sid ? "Mcp-Session-Id" : NULL, sid);
		free(it->text);
		free(it);
		hstream_free(st);
		hsess_unref(hs);
		return rc;
	}
	if (ended) {
		hstream_free(st);
		hsess_unref(hs);
		if (__atomic_load_n(&h->stopping, __ATOMIC_RELAXED))
			return refuse(conn, MHD_HTTP_SERVICE_UNAVAILABLE, JSONRPC_INTERNAL_ERROR,
			    NULL, NULL, "The server is shutting down");
		return refuse(conn, MHD_HTTP_NOT_FOUND, JSONRPC_INVALID_REQUEST, NULL, NULL,
		    "Session ended while the request ran; initialize a new session");
	}
	/* Notifications first (or a cancelled request: an empty stream). */
	return reply_sse(conn, st, sid);
}

/* Feed msg to hs with st as the stream for in-line answers.  Several POSTs of
 * one session arrive on several connection threads; a session takes its input
 * one message at a time (as stdio gives it), and never for long. */
static void
feed(struct sess *hs, struct stream *st, const char *msg, size_t len)
{
	pthread_mutex_lock(&hs->feed_mu);
	http_feeding = st;
	/* What the session answers in line acts for its key too. */
	if (hs->who.key_id[0] != '\0')
		core_act_for(hs->who.key_id, (hs->who.scopes & KEY_ADMIN) != 0);
	mcp_session_input(hs->ms, msg, len);
	core_act_for(NULL, 1);
	http_feeding = NULL;
	pthread_mutex_unlock(&hs->feed_mu);
}

static enum MHD_Result
mcp_initialize(struct mcp_http *h, struct MHD_Connection *conn, const cJSON *id,
    const struct buf *body, const struct mcp_http_caller *who)
{
	struct sess *hs;
	struct stream *st;
	struct item *it;
	cJSON *ans;
	int ok;
	enum MHD_Result rc;

	if (hsess_make_room(h) < 0)
		return refuse(conn, MHD_HTTP_SERVICE_UNAVAILABLE, JSONRPC_SERVER_BUSY, NULL, NULL,
		    "Too many MCP sessions (%d) are open; end one with DELETE", SESSIONS_MAX);
	hs = hsess_new(h, who);
	st = hstream_new(hs, id);
	pthread_mutex_lock(&hs->mu);
	st->next = hs->posts;
	hs->posts = st;
	pthread_mutex_unlock(&hs->mu);
	feed(hs, st, body->data, body->len);

	/* initialize is answered in line: the response is there now. */
	pthread_mutex_lock(&hs->mu);
	it = hstream_pop(st);
	hsess_unlink_post(hs, st);
	pthread_mutex_unlock(&hs->mu);
	hstream_free(st);
	if (it == NULL) {
		hsess_unref(hs);
		return refuse(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, JSONRPC_INTERNAL_ERROR, NULL,
		    NULL, "initialize got no answer");
	}
	ans = cJSON_ParseWithLength(it->text, it->len);
	ok = cJSON_GetObjectItemCaseSensitive(ans, "result") != NULL;
	cJSON_Delete(ans);
	if (!ok) {
		/* No session for a failed initialize: the client starts again. */
		rc = reply(conn, MHD_HTTP_BAD_REQUEST, "application/json", it->text, NULL, NULL);
		hsess_unref(hs);
	} else {
		pthread_mutex_lock(&h->mu);
		hs->next = h->sessions;
		h->sessions = hs;
		h->nsessions++;
		pthread_mutex_unlock(&h->mu);
		log_info("mcp http: session %.8s... started", hs->id);
		rc = reply(conn, MHD_HTTP_OK, "application/json", it->text, "Mcp-Session-Id",
		    hs->id);
	}
	free(it->text);
	free(it);
	return rc;
}

static void
json_freep(cJSON **p)
{
	cJSON_Delete(*p);
}

static const char *
conn_header(void *arg, const char *name)
{
	return header(arg, name);
}

/* A 2026-07-28 POST: checked against its headers, then served by a session of
 * its own, which ends with it (closing the response cancels the request). */
static enum MHD_Result
mcp_post_modern(struct mcp_http *h, struct MHD_Connection *conn, const cJSON *m,
    const struct req *rq)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "id");
	cJSON *data = NULL;
	char msg[400];
	int code, status;
	struct sess *hs;
	struct stream *st;

	if ((status = mcp_http_check_modern(m, conn_header, conn, &code, msg, sizeof msg,
	    &data)) != 0) {
		_cleanup_free_ char *body = jsonrpc_error(cJSON_IsNull(id) ? NULL : id, code, msg,
		    data);
		return reply(conn, (unsigned)status, "application/json", body, NULL, NULL);
	}
	if (id == NULL || cJSON_IsNull(id))
		/* Cancelling is closing the stream; nothing else is sent so. */
		return reply(conn, MHD_HTTP_ACCEPTED, NULL, "", NULL, NULL);
	hs = hsess_new(h, &rq->who);
	hs->ephemeral = 1;
	st = hstream_new(hs, id);
	pthread_mutex_lock(&hs->mu);
	hs->posts = st;
	pthread_mutex_unlock(&hs->mu);
	feed(hs, st, rq->body.data, rq->body.len);
	return answer(conn, st, NULL);
}

static enum MHD_Result
mcp_post(struct mcp_http *h, struct MHD_Connection *conn, struct req *rq)
{
	const char *ct = header(conn, "Content-Type"), *sid = header(conn, "Mcp-Session-Id");
	__attribute__((cleanup(json_freep))) cJSON *m = NULL;
	const cJSON *id, *method;
	struct sess *hs;
	struct stream *st;

	if (!accepts(conn, "application/json") || !accepts(conn, "text/event-stream"))
		return refuse(conn, MHD_HTTP_NOT_ACCEPTABLE, JSONRPC_INVALID_REQUEST, NULL, NULL,
		    "Not Acceptable: the client must accept both application/json and "
		    "text/event-stream");
	if (ct == NULL || strncasecmp(ct, "application/json", 16) != 0)
		return refuse(conn, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, JSONRPC_INVALID_REQUEST,
		    NULL, NULL, "Unsupported Media Type: the body must be application/json");
	if (rq->too_big)
		return refuse(conn, MHD_HTTP_CONTENT_TOO_LARGE, JSONRPC_INVALID_REQUEST, NULL,
		    NULL, "The message is over the %u MiB limit", MCP_LINE_MAX >> 20);
	m = cJSON_ParseWithLength(rq->body.data ? rq->body.data : "", rq->body.len);
	if (m == NULL)
		return refuse(conn, MHD_HTTP_BAD_REQUEST, JSONRPC_PARSE_ERROR, NULL, NULL,
		    "Parse error: the body is not JSON");
	if (!cJSON_IsObject(m))
		return refuse(conn, MHD_HTTP_BAD_REQUEST, JSONRPC_INVALID_REQUEST, NULL, NULL,
		    "Invalid Request: one JSON-RPC message (an object) per POST; batches "
		    "are not supported");
	method = cJSON_GetObjectItemCaseSensitive(m, "method");
	id = cJSON_GetObjectItemCaseSensitive(m, "id");
	if (id != NULL && cJSON_IsNull(id))
		id = NULL;

	if (mcp_http_is_modern(m, header(conn, "MCP-Protocol-Version")))
		return mcp_post_modern(h, conn, m, rq);	/* Mcp-Session-Id ignored */
	if (sid == NULL) {
		if (cJSON_IsString(method) && strcmp(method->valuestring, "initialize") == 0 &&
		    id != NULL)
			return mcp_initialize(h, conn, id, &rq->body, &rq->who);
		return refuse(conn, MHD_HTTP_BAD_REQUEST, JSONRPC_INVALID_REQUEST, NULL, NULL,
		    "Bad Request: the Mcp-Session-Id header is required (send initialize "
		    "first)");
	}
	if (!version_ok(conn))
		return refuse(conn, MHD_HTTP_BAD_REQUEST, JSONRPC_INVALID_REQUEST, NULL, NULL,
		    "Bad Request: unsupported MCP-Protocol-Version (supported: %s, %s, %s, "
		    "%s)", versions[0], versions[1], versions[2], versions[3]);
	if ((hs = hsess_find(h, sid, &rq->who)) == NULL)
		return refuse(conn, MHD_HTTP_NOT_FOUND, JSONRPC_INVALID_REQUEST, NULL, NULL,
		    "Session not found: it ended or never existed; initialize a new one");
	if (hs->sse) {
		hsess_unref(hs);
		return refuse(conn, MHD_HTTP_BAD_REQUEST, JSONRPC_INVALID_REQUEST, NULL, NULL,
		    "Bad Request: this is an HTTP+SSE session: POST its messages to the "
		    "endpoint its event stream named");
	}

	if (method != NULL && id != NULL) {
		/* A request: its answer comes back on this POST. */
		st = hstream_new(hs, id);
		pthread_mutex_lock(&hs->mu);
		if (hsess_find_post(hs, id) != NULL) {
			pthread_mutex_unlock(&hs->mu);
			hstream_free(st);
			hsess_unref(hs);
			return refuse(conn, MHD_HTTP_BAD_REQUEST, JSONRPC_INVALID_REQUEST, NULL,
			    NULL, "Invalid Request: a request with this id is already in "
			    "flight");
		}
		st->next = hs->posts;
		hs->posts = st;
		pthread_mutex_unlock(&hs->mu);
		feed(hs, st, rq->body.data, rq->body.len);
		return answer(conn, st, NULL);
	}

	/* A notification or a response: 202, unless it provokes an error. */
	{
		struct stream *sink = hstream_new(hs, NULL);
		struct item *it;
		enum MHD_Result rc;

		feed(hs, sink, rq->body.data, rq->body.len);
		if (cJSON_IsString(method) && strcmp(method->valuestring,
		    "notifications/cancelled") == 0) {
			const cJSON *p = cJSON_GetObjectItemCaseSensitive(m, "params");
			pthread_mutex_lock(&hs->mu);
			st = hsess_find_post(hs, cJSON_GetObjectItemCaseSensitive(p, "requestId"));
			if (st != NULL) {
				st->cancelled = 1;
				pthread_cond_broadcast(&hs->cv);
			}
			pthread_mutex_unlock(&hs->mu);
		}
		it = sink->head;
		if (it != NULL && it->response)
			rc = reply(conn, MHD_HTTP_BAD_REQUEST, "application/json", it->text, NULL,
			    NULL);
		else
			rc = reply(conn, MHD_HTTP_ACCEPTED, NULL, "", NULL, NULL);
		hstream_free(sink);
		hsess_unref(hs);
		return rc;
	}
}

/* s percent-encoded for a query string, into b. */
static void
query_escape(struct buf *b, const char *s)
{
	for (; *s; s++)
		if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		    (*s >= '0' && *s <= '9') || strchr("-._~", *s) != NULL)
			buf_append(b, s, 1);
		else
			buf_printf(b, "%%%02X", (unsigned char)*s);
}

/* GET /mcp without a session: an HTTP+SSE (2024-11-05) session, opened with
 * its event stream, whose first event names where its messages go.  A client
 * that gave its key as ?api_key= gets it in that address too: it gives its
 * key no other way. */
static enum MHD_Result
sse_open(struct mcp_http *h, struct MHD_Connection *conn, struct req *rq)
{
	const char *qk = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "api_key");
	struct sess *hs;
	struct stream *st;
	struct item *it;
	struct buf b;

	if (hsess_make_room(h) < 0)
		return refuse(conn, MHD_HTTP_SERVICE_UNAVAILABLE, JSONRPC_SERVER_BUSY, NULL, NULL,
		    "Too many MCP sessions (%d) are open; close one's stream", SESSIONS_MAX);
	hs = hsess_new(h, &rq->who);
	hs->sse = 1;
	st = hstream_new(hs, NULL);
	st->get = 1;
	buf_init(&b, 4096);
	buf_printf(&b, "/mcp/messages?mcpSessionId=%s", hs->id);
	if (qk != NULL && header(conn, "Authorization") == NULL &&
	    header(conn, "X-API-Key") == NULL) {
		buf_append(&b, "&api_key=", 9);
		query_escape(&b, qk);
	}
	it = xcalloc(1, sizeof *it);
	it->len = b.len;
	it->text = buf_steal(&b);
	it->endpoint = 1;
	it->response = 1;	/* never dropped */
	*st->tail = it;
	st->tail = &it->next;
	hs->get = st;
	pthread_mutex_lock(&h->mu);
	hs->refs++;		/* the table's, and the stream's */
	hs->next = h->sessions;
	h->sessions = hs;
	h->nsessions++;
	pthread_mutex_unlock(&h->mu);
	log_info("mcp http: session %.8s... started (HTTP+SSE)", hs->id);
	return reply_sse(conn, st, NULL);
}

static enum MHD_Result
mcp_get(struct mcp_http *h, struct MHD_Connection *conn, struct req *rq)
{
	const char *sid = header(conn, "Mcp-Session-Id");
	struct sess *hs;
	struct stream *st;

	if (!accepts(conn, "text/event-stream"))
		return refuse(conn, MHD_HTTP_NOT_ACCEPTABLE, JSONRPC_INVALID_REQUEST, NULL, NULL,
		    "Not Acceptable: GET opens an SSE stream; accept text/event-stream");
	if (sid == NULL)
		return sse_open(h, conn, rq);
	if (!version_ok(conn))
		return refuse(conn, MHD_HTTP_BAD_REQUEST, JSONRPC_INVALID_REQUEST, NULL, NULL,
		    "Bad Request: unsupported MCP-Protocol-Version");
	if ((hs = hsess_find(h, sid, &rq->who)) == NULL)
		return refuse(conn, MHD_HTTP_NOT_FOUND, JSONRPC_INVALID_REQUEST, NULL, NULL,
		    "Session not found: it ended or never existed; initialize a new one");
	st = hstream_new(hs, NULL);
	st->get = 1;
	pthread_mutex_lock(&hs->mu);
	if (hs->get != NULL) {
		pthread_mutex_unlock(&hs->mu);
		hstream_free(st);
		hsess_unref(hs);
		return refuse(conn, MHD_HTTP_CONFLICT, JSONRPC_INVALID_REQUEST, NULL, NULL,
		    "Conflict: this session already has its GET stream open");
	}
	hs->get = st;
	pthread_mutex_unlock(&hs->mu);
	return reply_sse(conn, st, NULL);
}

/* POST /mcp/messages?mcpSessionId=ID: one message of an HTTP+SSE session,
 * answered on its stream; 202 once the session has it. */
static enum MHD_Result
mcp_messages(struct mcp_http *h, struct MHD_Connection *conn, struct req *rq)
{
	const char *sid = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND,
	    "mcpSessionId");
	const char *ct = header(conn, "Content-Type");
	struct sess *hs;
	cJSON *m;
	int object, parsed;

	if (sid == NULL)
		return refuse(conn, MHD_HTTP_BAD_REQUEST, JSONRPC_INVALID_REQUEST, NULL, NULL,
		    "Bad Request: mcpSessionId is required (the endpoint event of GET /mcp "
		    "names it)");
	if ((hs = hsess_find(h, sid, &rq->who)) == NULL || !hs->sse) {
		if (hs != NULL)
			hsess_unref(hs);
		return refuse(conn, MHD_HTTP_NOT_FOUND, JSONRPC_INVALID_REQUEST, NULL, NULL,
		    "Session not found: it ended or never existed; open a new one with GET "
		    "/mcp");
	}
	if (ct == NULL || strncasecmp(ct, "application/json", 16) != 0) {
		hsess_unref(hs);
		return refuse(conn, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, JSONRPC_INVALID_REQUEST,
		    NULL, NULL, "Unsupported Media Type: the body must be application/json");
	}
	if (rq->too_big || !version_ok(conn)) {
		hsess_unref(hs);
		if (rq->too_big)
			return refuse(conn, MHD_HTTP_CONTENT_TOO_LARGE, JSONRPC_INVALID_REQUEST,
			    NULL, NULL, "The message is over the %u MiB limit", MCP_LINE_MAX >> 20);
		return refuse(conn, MHD_HTTP_BAD_REQUEST, JSONRPC_INVALID_REQUEST, NULL, NULL,
		    "Bad Request: unsupported MCP-Protocol-Version");
	}
	m = cJSON_ParseWithLength(rq->body.data ? rq->body.data : "", rq->body.len);
	parsed = m != NULL;
	object = cJSON_IsObject(m);
	cJSON_Delete(m);
	if (!object) {
		hsess_unref(hs);
		return refuse(conn, MHD_HTTP_BAD_REQUEST, !parsed ? JSONRPC_PARSE_ERROR :
		    JSONRPC_INVALID_REQUEST, NULL, NULL, !parsed ? "Parse error: the body is "
		    "not JSON" : "Invalid Request: one JSON-RPC message (an object) per POST");
	}
	feed(hs, NULL, rq->body.data, rq->body.len);
	hsess_unref(hs);
	return reply(conn, MHD_HTTP_ACCEPTED, "text/plain", "Accepted", NULL, NULL);
}

static enum MHD_Result
mcp_delete(struct mcp_http *h, struct MHD_Connection *conn, struct req *rq)
{
	const char *sid = header(conn, "Mcp-Session-Id");
	struct sess *hs;

	if (sid == NULL)
		return refuse(conn, MHD_HTTP_BAD_REQUEST, JSONRPC_INVALID_REQUEST, NULL, NULL,
		    "Bad Request: the Mcp-Session-Id header is required");
	if ((hs = hsess_find(h, sid, &rq->who)) == NULL)
		return refuse(conn, MHD_HTTP_NOT_FOUND, JSONRPC_INVALID_REQUEST, NULL, NULL,
		    "Session not found: it ended or never existed");
	hsess_remove(h, hs);
	log_info("mcp http: session %.8s... ended by the client", hs->id);
	hsess_unref(hs);
	return reply(conn, MHD_HTTP_OK, NULL, "", NULL, NULL);
}

/* --- dispatch ----------------------------------------------------------- */

/* The paths this listener serves itself; the router has the others. */
static int
own_path(const char *url)
{
	return strcmp(url, "/mcp") == 0 || strcmp(url, "/mcp/messages") == 0 ||
	    strcmp(url, "/health") == 0 || strcmp(url, "/metrics") == 0;
}

/* Who may do what without a router: the token, for everything but /health. */
static void
admit_token(struct mcp_http *h, struct MHD_Connection *conn, const char *url, int forbidden,
    struct mcp_http_caller *who, struct mcp_http_refusal *no)
{
	enum key_from from;
	const char *cred = key_credential(header(conn, "Authorization"),
	    header(conn, "X-API-Key"), MHD_lookup_connection_value(conn,
	    MHD_GET_ARGUMENT_KIND, "api_key"), &from);

	if (forbidden) {
		no->status = MHD_HTTP_FORBIDDEN;
		snprintf(no->message, sizeof no->message, "Forbidden: Origin or Host is not "
		    "this local server");
	} else if (strcmp(url, "/health") == 0) {
		return;
	} else if (h->token != NULL && cred == NULL) {
		no->status = MHD_HTTP_UNAUTHORIZED;
		snprintf(no->message, sizeof no->message, "API key required");
	} else if (h->token != NULL && !ct_streq(cred, h->token)) {
		no->status = MHD_HTTP_UNAUTHORIZED;
		no->key_given = 1;
		snprintf(no->message, sizeof no->message, "Invalid API key");
	} else {
		who->scopes = KEY_SCOPES_ALL;
	}
}

/* A refused head on one of the listener's own paths: MCP's as a JSON-RPC
 * error, /metrics as Agent Sandbox says it ({"error": "..."}). */
static enum MHD_Result
refuse_head(struct MHD_Connection *conn, const char *url, const struct mcp_http_refusal *no)
{
	struct MHD_Response *r;
	enum MHD_Result rc;
	_cleanup_free_ char *body = NULL;
	char ra[24];
	cJSON *o;

	if (strcmp(url, "/metrics") == 0) {
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "error", no->message);
		if (no->status == MHD_HTTP_TOO_MANY_REQUESTS)
			cJSON_AddNumberToObject(o, "retryAfter", no->retry_after);
		body = cJSON_PrintUnformatted(o);
		cJSON_Delete(o);
	} else {
		o = NULL;
		if (no->status == MHD_HTTP_UNAUTHORIZED) {
			o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "hint", "send Authorization: Bearer KEY, "
			    "X-API-Key: KEY or ?api_key=KEY: the token sbxtop serve printed, or "
			    "a key of `sbxtop key add`");
		} else if (no->status == MHD_HTTP_TOO_MANY_REQUESTS) {
			o = cJSON_CreateObject();
			cJSON_AddNumberToObject(o, "retryAfter", no->retry_after);
		}
		body = jsonrpc_error(NULL, no->status == MHD_HTTP_TOO_MANY_REQUESTS ?
		    JSONRPC_SERVER_BUSY : JSONRPC_INVALID_REQUEST, no->message, o);
	}
	if ((r = MHD_create_response_from_buffer(strlen(body), body,
	    MHD_RESPMEM_MUST_COPY)) == NULL)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	if (no->status == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, no->key_given ?
		    "Bearer realm=\"sbxtop\", error=\"invalid_token\"" : "Bearer realm=\"sbxtop\"");
	if (no->status == MHD_HTTP_TOO_MANY_REQUESTS) {
		snprintf(ra, sizeof ra, "%d", no->retry_after);
		MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, ra);
	}
	if (no->status == MHD_HTTP_FORBIDDEN && strncmp(no->message, "Forbidden: Origin", 17) == 0)
		log_warnx("mcp http: refused a request from Origin %.100s, Host %.100s",
		    header(conn, "Origin") ? header(conn, "Origin") : "(none)",
		    header(conn, "Host") ? header(conn, "Host") : "(none)");
	rc = MHD_queue_response(conn, no->status, r);
	MHD_destroy_response(r);
	return rc;
}

static enum MHD_Result
dispatch(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
    const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	struct mcp_http *h = cls;
	struct req *rq = *con_cls;

	if (rq == NULL) {
		/* Headers only: who it is, and whether it may, before a body is
		 * read.  The door times nothing while this request runs; one that
		 * showed a credential that holds may idle between requests. */
		int forbidden = !origin_ok(h, conn);
		rq = xcalloc(1, sizeof *rq);
		*con_cls = rq;
		if (h->router.admit != NULL)
			h->router.admit(h->router.arg, conn, url, method, forbidden, &rq->who,
			    &rq->no);
		else
			admit_token(h, conn, url, forbidden, &rq->who, &rq->no);
		http_door_request(h->door, conn, rq->who.scopes != 0);
		if (!own_path(url)) {
			if (h->router.fn == NULL)
				return reply(conn, MHD_HTTP_NOT_FOUND, "text/plain", "Not found: MCP "
				    "is at /mcp; also /health and /metrics\n", NULL, NULL);
			rq->routed = 1;
			return (enum MHD_Result)h->router.fn(h->router.arg, conn, url, method,
			    upload, upload_size, &rq->ctx, &rq->who, &rq->no);
		}
		if (rq->no.status != 0)
			return refuse_head(conn, url, &rq->no);
		if (strcmp(url, "/health") == 0) {
			if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
				return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain",
				    "GET only\n", MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
			char body[160];
			unsigned n;
			pthread_mutex_lock(&h->mu);
			n = h->nsessions;
			pthread_mutex_unlock(&h->mu);
			snprintf(body, sizeof body, "{\"status\":\"ok\",\"version\":\"%s\","
			    "\"sessions\":%u}\n", SBX_VERSION, n);
			return reply(conn, MHD_HTTP_OK, "application/json", body, NULL, NULL);
		}
		if (strcmp(url, "/metrics") == 0) {
			if (strcmp(method, "GET") != 0)
				return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain",
				    "GET only\n", MHD_HTTP_HEADER_ALLOW, "GET");
			unsigned n;
			pthread_mutex_lock(&h->mu);
			n = h->nsessions;
			pthread_mutex_unlock(&h->mu);
			_cleanup_free_ char *text = mcp_metrics_text(h->metrics, n);
			return reply(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8",
			    text, NULL, NULL);
		}
		if (strcmp(url, "/mcp/messages") == 0) {
			if (strcmp(method, "POST") != 0)
				return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain",
				    "POST only\n", MHD_HTTP_HEADER_ALLOW, "POST");
			rq->messages = 1;
		} else if (strcmp(method, "GET") == 0) {
			return mcp_get(h, conn, rq);
		} else if (strcmp(method, "DELETE") == 0) {
			return mcp_delete(h, conn, rq);
		} else if (strcmp(method, "POST") != 0) {
			return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain",
			    "Method not allowed\n", MHD_HTTP_HEADER_ALLOW, "GET, POST, DELETE");
		}
		buf_init(&rq->body, MCP_LINE_MAX);
		return MHD_YES;
	}
	if (rq->routed)
		return (enum MHD_Result)h->router.fn(h->router.arg, conn, url, method, upload,
		    upload_size, &rq->ctx, &rq->who, &rq->no);
	if (*upload_size > 0) {
		if (!rq->too_big && buf_append(&rq->body, upload, *upload_size) < 0)
			rq->too_big = 1;
		*upload_size = 0;
		return MHD_YES;
	}
	return rq->messages ? mcp_messages(h, conn, rq) : mcp_post(h, conn, rq);
}

static void
completed(void *cls, struct MHD_Connection *conn, void **con_cls,
    enum MHD_RequestTerminationCode toe)
{
	struct mcp_http *h = cls;
	struct req *rq = *con_cls;

	http_door_done(h->door, conn);
	if (rq != NULL) {
		if (rq->routed)
			h->router.done(h->router.arg, rq->ctx);
		else
			buf_free(&rq->body);	/* zeroed, when never begun */
		free(rq);
		*con_cls = NULL;
	}
}

static void __attribute__((format(printf, 2, 0)))
mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];
	size_t n;

	vsnprintf(msg, sizeof msg, fmt, ap);
	n = strlen(msg);
	while (n > 0 && msg[n - 1] == '\n')
		msg[--n] = '\0';
	log_debug("mcp http: libmicrohttpd: %s", msg);
}

/* --- start and stop ------------------------------------------------------ */

/* Option name of c's configuration in milliseconds (def seconds without a
 * core). */
static int64_t
timeout_ms(struct core *c, const char *name, int64_t def)
{
	return (c != NULL ? config_int(core_config(c), name) : def) * 1000;
}

struct mcp_http *
mcp_http_start(struct core *c, const char *listen_addr, const char *token,
    struct sbx_err *e)
{
	return mcp_http_start_with(c, listen_addr, token, NULL, NULL, e);
}

struct mcp_http *
mcp_http_start_with(struct core *c, const char *listen_addr, const char *token,
    mcp_http_session_fn on_session, void *arg, struct sbx_err *e)
{
	return mcp_http_start_routed(c, listen_addr, token, on_session, arg, NULL, e);
}

struct mcp_http *
mcp_http_start_routed(struct core *c, const char *listen_addr, const char *token,
    mcp_http_session_fn on_session, void *arg, const struct mcp_http_router *rt,
    struct sbx_err *e)
{
	struct mcp_http *h;
	struct sockaddr_in sin;
	socklen_t sl = sizeof sin;
	char host[64];
	int fd, one = 1;

	if (mcp_http_parse_listen(listen_addr, &sin, host, sizeof host, e) < 0)
		return NULL;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "socket");
		return NULL;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, (struct sockaddr *)&sin, sizeof sin) < 0 || listen(fd, 512) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sin, &sl) < 0 || set_nonblock(fd, 1) < 0) {
		sbx_error_errno(e, SBX_EIO, errno == EADDRINUSE ? "choose another port, or 0 "
		    "for any free one" : NULL, "cannot listen on %s", listen_addr);
		close(fd);
		return NULL;
	}
	h = xcalloc(1, sizeof *h);
	h->core = c;
	h->token = token ? xstrdup(token) : NULL;
	h->on_session = on_session;
	h->on_session_arg = arg;
	if (rt != NULL)
		h->router = *rt;
	snprintf(h->host, sizeof h->host, "%s", host);
	h->loopback = (ntohl(sin.sin_addr.s_addr) >> 24) == 127;
	h->port = ntohs(sin.sin_port);
	snprintf(h->url, sizeof h->url, "http://%s:%d/mcp", host, h->port);
	pthread_mutex_init(&h->mu, NULL);
	/* Connections come in through the door, which hands one over once its
	 * request head has come (http-door.h). */
	if ((h->door = http_door_new(fd, timeout_ms(c, "http_header_timeout", 5),
	    timeout_ms(c, "http_idle_timeout", 120), e)) == NULL) {
		close(fd);
		pthread_mutex_destroy(&h->mu);
		free(h->token);
		free(h);
		return NULL;
	}
	h->metrics = mcp_metrics_new(c);
	h->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION |
	    MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG |
	    MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC,
	    0, NULL, NULL, dispatch, h,
	    MHD_OPTION_NOTIFY_COMPLETED, completed, h,
	    MHD_OPTION_NOTIFY_CONNECTION, http_door_notify, h->door,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned)CONN_MAX,
	    /* libmicrohttpd times nothing: a POST may wait an hour for its exec,
	     * an SSE stream lasts as long as its client; the door times the
	     * heads and the idle connections. */
	    MHD_OPTION_CONNECTION_TIMEOUT, 0u,
	    MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
	    MHD_OPTION_THREAD_STACK_SIZE, (size_t)(256 * 1024),
	    MHD_OPTION_END);
	if (h->d == NULL || http_door_open(h->door, h->d, e) < 0) {
		if (h->d == NULL)
			sbx_error(e, SBX_EIO, NULL, "cannot start the HTTP server on %s",
			    listen_addr);
		http_door_stop(h->door);
		if (h->d != NULL)
			MHD_stop_daemon(h->d);
		http_door_free(h->door);
		mcp_metrics_free(h->metrics);
		pthread_mutex_destroy(&h->mu);
		free(h->token);
		free(h);
		return NULL;
	}
	if (!h->loopback)
		log_warnx("mcp http: listening on %s:%d, which other hosts can reach; the "
		    "bearer token (sent in clear text over plain HTTP) is all that guards "
		    "it", host, h->port);
	return h;
}

void
mcp_http_sessions(struct mcp_http *h, void (*fn)(void *arg, const struct mcp_session *s,
    int64_t since_ms), void *arg)
{
	pthread_mutex_lock(&h->mu);
	for (struct sess *hs = h->sessions; hs != NULL; hs = hs->next)
		fn(arg, hs->ms, hs->since_ms);
	pthread_mutex_unlock(&h->mu);
}

int
mcp_http_port(const struct mcp_http *h)
{
	return h->port;
}

const char *
mcp_http_url(const struct mcp_http *h)
{
	return h->url;
}

void
mcp_http_stop(struct mcp_http *h)
{
	struct sess *hs;

	if (h == NULL)
		return;
	/* Wake every waiting POST and stream so the connection threads end, then
	 * stop the daemon (which joins them), then end the sessions. */
	__atomic_store_n(&h->stopping, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&h->mu);
	for (hs = h->sessions; hs != NULL; hs = hs->next) {
		pthread_mutex_lock(&hs->mu);
		pthread_cond_broadcast(&hs->cv);
		pthread_mutex_unlock(&hs->mu);
	}
	pthread_mutex_unlock(&h->mu);
	http_door_stop(h->door);
	MHD_stop_daemon(h->d);
	http_door_free(h->door);
	for (;;) {
		pthread_mutex_lock(&h->mu);
		hs = h->sessions;
		if (hs != NULL)
			hs->refs++;
		pthread_mutex_unlock(&h->mu);
		if (hs == NULL)
			break;
		hsess_remove(h, hs);
		hsess_unref(hs);
	}
	mcp_metrics_free(h->metrics);
	pthread_mutex_destroy(&h->mu);
	free(h->token);
	free(h);
}
