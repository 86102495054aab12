/* The agent's HTTP layer, the side handlers see: the route tables, auth, bounded
 * bodies, and the answers (JSON, chunked streams, upgrades).  The connections that
 * carry them are http-conn.c's. */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <nettle/sha1.h>

#include "agent/agent.h"
#include "agent/http-int.h"
#include "lib/b64.h"
#include "lib/log.h"
#include "lib/util.h"

/* RFC 9110's tchar: what an echoed Upgrade token may hold. */
#define TOKEN_CHARS "!#$%&'*+-.^_`|~0123456789" \
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

static enum http_rc health(struct req *r);

static const struct route core_routes[] = {
	{ "GET", "/health", ROUTE_NOAUTH, health, NULL, 0 },
	{ NULL, NULL, 0, NULL, NULL, 0 }
};

/* Every table the API serves; the hooks listener serves only hooks_routes. */
static const struct route *const api_tables[] = {
	core_routes, exec_routes, files_routes, archive_routes, tunnel_routes,
	pty_routes, events_routes, seed_routes,
};

static enum http_rc
health(struct req *r)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "ok", 1);
	cJSON_AddBoolToObject(o, "ready", agent_ready());
	cJSON_AddStringToObject(o, "version", SBX_VERSION);
	cJSON_AddNumberToObject(o, "uptime_s", (double)((now_ms() - agent.started_ms) / 1000));
	cJSON_AddItemToObject(o, "archive_formats", archive_formats());
	return http_json(r, HTTP_STATUS_OK, o);
}

/* Match url against pattern; '*' matches one non-empty segment, copied (the path
 * is percent-decoded already) into params. */
static int
route_match(const char *pattern, const char *url, char **params)
{
	int np = 0;
	const char *p = pattern, *u = url;

	while (*p != '\0' && *u != '\0') {
		if (*p == '*') {
			const char *end = strchr(u, '/');
			size_t n = end ? (size_t)(end - u) : strlen(u);
			if (n == 0 || np >= HTTP_MAX_PARAMS)
				goto fail;
			params[np++] = xstrndup(u, n);
			u += n;
			p++;
			continue;
		}
		if (*p != *u)
			goto fail;
		p++;
		u++;
	}
	if (*p == '\0' && *u == '\0')
		return 1;
fail:
	for (int i = 0; i < np; i++) {
		free(params[i]);
		params[i] = NULL;
	}
	return 0;
}

/* The route for method+url: 1 found, 0 no such path, -1 path exists but not for
 * this method (405). */
static int
route_find(int hooks_only, const char *method, const char *url,
    const struct route **out, char **params)
{
	int path_seen = 0;
	const struct route *const *tables = api_tables;
	size_t ntables = ARRAY_SIZE(api_tables);
	static const struct route *const hooks_tables[] = { hooks_routes };

	if (hooks_only) {
		tables = hooks_tables;
		ntables = 1;
	}
	for (size_t t = 0; t < ntables; t++) {
		for (const struct route *rt = tables[t]; rt->pattern != NULL; rt++) {
			if (!route_match(rt->pattern, url, params))
				continue;
			if (strcmp(rt->method, method) == 0) {
				*out = rt;
				return 1;
			}
			path_seen = 1;
			for (int i = 0; i < HTTP_MAX_PARAMS; i++) {
				free(params[i]);
				params[i] = NULL;
			}
		}
	}
	return path_seen ? -1 : 0;
}

static void
out_free(struct http_out *o)
{
	if (o == NULL)
		return;
	buf_free(&o->fields);
	buf_free(&o->trailers);
	free(o->body);
	free(o);
}

void
http_req_free(struct req *r, int completed)
{
	if (r->ctx_free != NULL)
		r->ctx_free(r->ctx, completed);
	for (int i = 0; i < HTTP_MAX_PARAMS; i++)
		free(r->params[i]);
	buf_free(&r->body);
	cJSON_Delete(r->json);
	out_free(r->out);
	free(r);
}

struct req *
http_req_begin(struct http_conn *c)
{
	struct req *r = xcalloc(1, sizeof *r);
	int found;

	r->conn = c;
	r->url = c->msg.path;
	r->method = c->msg.method;
	buf_init(&r->body, HTTP_BODY_MAX_DEFAULT);

	found = route_find(c->hooks_only, r->method, r->url, &r->route, r->params);
	if (found == 0) {
		http_error(r, HTTP_STATUS_NOT_FOUND, "not_found", "no route %s %s", r->method, r->url);
		return r;
	}
	if (found < 0) {
		http_error(r, HTTP_STATUS_METHOD_NOT_ALLOWED, "method_not_allowed",
		    "%s is not allowed on %s", r->method, r->url);
		return r;
	}
	if (r->route->body_max)
		r->body.max = r->route->body_max;
	if (!(r->route->flags & ROUTE_NOAUTH)) {
		const char *secret = http_header(r, "X-Sandbox-Secret");
		int ok = agent_check_secret(secret ? secret : "");
		if (ok < 0) {
			http_error(r, HTTP_STATUS_SERVICE_UNAVAILABLE, "not_ready",
			    "the sandbox secret is not known yet; retry once /health says ready");
			return r;
		}
		if (!ok || secret == NULL) {
			http_error(r, HTTP_STATUS_UNAUTHORIZED, "unauthorized",
			    "missing or wrong X-Sandbox-Secret header");
			return r;
		}
		/* A watcher's look (the console's RUN column) is no activity: it
		 * must not keep an idle sandbox up. */
		if (http_header(r, "X-Sbx-Watch") == NULL)
			agent_touch();
	}
	return r;
}

void
http_req_body(struct req *r, const char *data, size_t len)
{
	if (r->answered || r->overflow || r->body_stopped)
		return;			/* drain what we no longer want */
	if (r->route->flags & ROUTE_STREAM_BODY) {
		if (r->route->on_body(r, data, len) < 0)
			r->body_stopped = 1;
		return;
	}
	if (buf_append(&r->body, data, len) < 0) {
		r->overflow = 1;
		buf_free(&r->body);
	}
}

enum http_rc
http_req_run(struct req *r)
{
	if (r->answered)
		return HTTP_DONE;
	if (r->overflow)
		return http_error(r, HTTP_STATUS_PAYLOAD_TOO_LARGE, "too_large",
		    "request body is over the %zu byte limit", r->body.max);
	if (r->route->flags & ROUTE_JSON) {
		if (r->body.len == 0)
			r->json = cJSON_CreateObject();
		else if ((r->json = cJSON_ParseWithLength(r->body.data, r->body.len)) == NULL)
			return http_bad_request(r, "malformed JSON body");
		else if (!cJSON_IsObject(r->json))
			return http_bad_request(r, "the body must be a JSON object");
	}
	if (r->route->run(r) == HTTP_DROP)
		return HTTP_DROP;
	if (!r->answered) {
		log_warnx("%s %s: the handler gave no answer", r->method, r->url);
		return HTTP_DROP;
	}
	return HTTP_DONE;
}

const char *
http_header(struct req *r, const char *name)
{
	return http_fields_get(&r->conn->msg.headers, name);
}

const char *
http_query(struct req *r, const char *name)
{
	return http_fields_get(&r->conn->msg.query, name);
}

const char *
http_trailer(struct req *r, const char *name)
{
	return http_fields_get(&r->conn->msg.trailers, name);
}

int
http_conn_fd(struct req *r)
{
	return r->conn->fd;
}

int
http_peer_gone(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLRDHUP };

	if (fd < 0)
		return 0;
	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* The answer r is to get; one per request. */
static struct http_out *
answer(struct req *r, unsigned status)
{
	struct http_out *o;

	if (r->answered)
		fatal("request %s %s answered twice", r->method, r->url);
	r->answered = 1;
	r->out = o = xcalloc(1, sizeof *o);
	o->status = status;
	buf_init(&o->fields, 64 * 1024);
	buf_init(&o->trailers, 64 * 1024);
	return o;
}

static void
field_add(struct buf *b, const char *name, const char *value)
{
	/* A value never carries a line break onto the wire. */
	if (strpbrk(name, "\r\n:") != NULL || strpbrk(value, "\r\n") != NULL)
		fatal("bad header field %s", name);
	if (buf_printf(b, "%s: %s\r\n", name, value) < 0)
		fatal("header fields over %zu bytes", b->max);
}

enum http_rc
http_json(struct req *r, unsigned status, cJSON *body)
{
	struct http_out *o = answer(r, status);
	char *s = cJSON_PrintUnformatted(body);

	cJSON_Delete(body);
	if (s == NULL)
		fatal("out of memory");
	size_t n = strlen(s);
	/* A trailing newline makes curl output and NDJSON tools happier. */
	s = xrealloc(s, n + 2);
	s[n] = '\n';
	s[n + 1] = '\0';
	o->body = s;
	o->body_len = n + 1;
	field_add(&o->fields, "Content-Type", "application/json");
	return HTTP_DONE;
}

static enum http_rc __attribute__((format(printf, 4, 0)))
http_verror(struct req *r, unsigned status, const char *code, const char *fmt, va_list ap)
{
	char msg[1024];
	cJSON *o = cJSON_CreateObject();

	vsnprintf(msg, sizeof msg, fmt, ap);
	cJSON_AddStringToObject(o, "error", code);
	cJSON_AddStringToObject(o, "message", msg);
	return http_json(r, status, o);
}

enum http_rc
http_error(struct req *r, unsigned status, const char *code, const char *fmt, ...)
{
	va_list ap;
	enum http_rc rc;

	va_start(ap, fmt);
	rc = http_verror(r, status, code, fmt, ap);
	va_end(ap);
	return rc;
}

enum http_rc
http_bad_request(struct req *r, const char *fmt, ...)
{
	va_list ap;
	enum http_rc rc;

	va_start(ap, fmt);
	rc = http_verror(r, HTTP_STATUS_BAD_REQUEST, "bad_request", fmt, ap);
	va_end(ap);
	return rc;
}

enum http_rc
http_stream(struct req *r, unsigned status, const char *content_type,
    http_reader_fn read, void *cls, void (*free_cls)(void *cls))
{
	struct http_out *o = answer(r, status);

	o->read = read;
	o->cls = cls;
	o->free_cls = free_cls;
	field_add(&o->fields, "Content-Type", content_type);
	field_add(&o->fields, "Cache-Control", "no-store");
	return HTTP_DONE;
}

void
http_stream_header(struct req *r, const char *name, const char *value)
{
	if (r->out != NULL)
		field_add(&r->out->fields, name, value);
}

void
http_stream_trailer(struct req *r, const char *name, const char *value)
{
	if (r->out != NULL)
		field_add(&r->out->trailers, name, value);
}

int
http_upgrade_check(struct req *r)
{
	const char *conn = http_header(r, "Connection");
	const char *up = http_header(r, "Upgrade");

	if (conn == NULL || !http_list_has(conn, "upgrade")) {
		http_error(r, HTTP_STATUS_BAD_REQUEST, "upgrade_required",
		    "this route needs the headers 'Connection: Upgrade' and 'Upgrade: <protocol>' "
		    "(e.g. websocket); 'Connection: Upgrade' is missing");
		return -1;
	}
	if (up == NULL || up[strspn(up, " \t,")] == '\0') {
		http_error(r, HTTP_STATUS_BAD_REQUEST, "upgrade_required",
		    "this route needs the headers 'Connection: Upgrade' and 'Upgrade: <protocol>' "
		    "(e.g. websocket); 'Upgrade' is missing");
		return -1;
	}
	return 0;
}

/* Sec-WebSocket-Accept for a Sec-WebSocket-Key (RFC 6455 section 4.2.2): base64 of
 * the SHA-1 of the key and the protocol's GUID.  Caller frees; NULL on failure. */
static char *
websocket_accept(const char *key)
{
	static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
	_cleanup_free_ char *s = xasprintf("%s%s", key, guid);
	struct sha1_ctx ctx;
	uint8_t md[SHA1_DIGEST_SIZE];

	sha1_init(&ctx);
	sha1_update(&ctx, strlen(s), (const uint8_t *)s);
	sha1_digest(&ctx, sizeof md, md);
	return b64_encode(md, sizeof md);
}

enum http_rc
http_upgrade(struct req *r, const char *proto, http_upgrade_fn fn, void *extra)
{
	struct http_out *o;
	const char *key = http_header(r, "Sec-WebSocket-Key");
	char token[128];

	if (proto == NULL) {
		/* Echo the first protocol the client offered, as proxies expect. */
		const char *up = http_header(r, "Upgrade");
		up = up ? up + strspn(up, " \t,") : "";
		size_t n = strcspn(up, " \t,");
		if (n >= sizeof token || strspn(up, TOKEN_CHARS) < n)
			n = 0;
		memcpy(token, up, n);
		token[n] = '\0';
		proto = n ? token : "websocket";
	}
	o = answer(r, HTTP_STATUS_SWITCHING_PROTOCOLS);
	o->upgrade = fn;
	o->upgrade_extra = extra;
	field_add(&o->fields, "Connection", "Upgrade");
	field_add(&o->fields, "Upgrade", proto);
	if (key != NULL && *key != '\0') {
		_cleanup_free_ char *accept = websocket_accept(key);
		if (accept != NULL)
			field_add(&o->fields, "Sec-WebSocket-Accept", accept);
	}
	return HTTP_DONE;
}
