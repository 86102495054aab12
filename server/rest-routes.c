/* Every path of the `serve --listen` listener, in one table, with the scope of
 * API key each needs (core/keys/keys.h: exec, admin, metrics; public ones need
 * no credential), and who may reach it: the head of every request comes here
 * first (admit), from mcp/http.c, whatever the path.  The listener serves MCP,
 * /health and /metrics itself (rows without a handler); every other row's
 * handler answers it, after its body has come, on the connection's thread,
 * acting for the caller's key (rest_act_for).
 *
 * A refusal speaks the route's language: the /v1/ error shape there, Agent
 * Sandbox's {"error": "..."} on its routes (/exec/, /admin/keys, /ready),
 * JSON-RPC on MCP's (mcp/http.c).  tests/integration/capabilities.sh walks the
 * table (sbxtop/methods lists it) with a key of each scope and none, and
 * checks it against docs/openapi.json. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "lib/util.h"
#include "server/rest-int.h"
#include "server/server.h"

#define BODY_DROP_MAX	(256ull << 20)	/* read past a body's cap before cutting it */
#define ROUTE_PUBLIC	0x100u		/* no credential */
#define ROUTE_MCP	0x200u		/* the MCP methods' scope (server.c's methods[]) */

static const struct route {
	const char	*method;
	const char	*path;		/* "{...}": any one segment */
	unsigned	 scope;		/* KEY_EXEC, KEY_ADMIN, KEY_METRICS or a ROUTE_ */
	rest_route_fn	*fn;		/* NULL: the listener's own (mcp/http.c) */
	size_t		 cap;		/* its body's most (0: REST_JSON_MAX) */
} routes[] = {
	/* the listener's own */
	{ "GET",	"/health",				ROUTE_PUBLIC,	NULL, 0 },
	{ "HEAD",	"/health",				ROUTE_PUBLIC,	NULL, 0 },
	{ "GET",	"/metrics",				KEY_METRICS,	NULL, 0 },
	{ "POST",	"/mcp",					ROUTE_MCP,	NULL, 0 },
	{ "GET",	"/mcp",					ROUTE_MCP,	NULL, 0 },
	{ "DELETE",	"/mcp",					ROUTE_MCP,	NULL, 0 },
	{ "POST",	"/mcp/messages",			ROUTE_MCP,	NULL, 0 },
	/* the REST API (docs/openapi.json) */
	{ "GET",	"/v1/openapi.json",			KEY_EXEC, rest_openapi_get, 0 },
	{ "GET",	"/v1/sandboxes",			KEY_EXEC, rest_sandboxes_list, 0 },
	{ "POST",	"/v1/sandboxes",			KEY_EXEC, rest_sandboxes_create, 0 },
	{ "GET",	"/v1/sandboxes/{id}",			KEY_EXEC, rest_sandbox_get, 0 },
	{ "DELETE",	"/v1/sandboxes/{id}",			KEY_EXEC, rest_sandbox_destroy, 0 },
	{ "POST",	"/v1/sandboxes/{id}/suspend",		KEY_EXEC, rest_sandbox_suspend, 0 },
	{ "POST",	"/v1/sandboxes/{id}/resume",		KEY_EXEC, rest_sandbox_resume, 0 },
	{ "POST",	"/v1/sandboxes/{id}/exec",		KEY_EXEC, rest_exec, 0 },
	{ "GET",	"/v1/sandboxes/{id}/execs",		KEY_EXEC, rest_execs, 0 },
	{ "DELETE",	"/v1/sandboxes/{id}/execs/{exec_id}",	KEY_EXEC, rest_exec_cancel, 0 },
	{ "GET",	"/v1/sandboxes/{id}/files",		KEY_EXEC, rest_files_list, 0 },
	{ "DELETE",	"/v1/sandboxes/{id}/files",		KEY_EXEC, rest_files_delete, 0 },
	{ "GET",	"/v1/sandboxes/{id}/files/stat",	KEY_EXEC, rest_files_stat, 0 },
	{ "GET",	"/v1/sandboxes/{id}/files/content",	KEY_EXEC, rest_file_get, 0 },
	{ "PUT",	"/v1/sandboxes/{id}/files/content",	KEY_EXEC, rest_file_put,
	  REST_FILE_MAX },
	{ "GET",	"/v1/sandboxes/{id}/archive",		KEY_EXEC, rest_archive_get, 0 },
	{ "PUT",	"/v1/sandboxes/{id}/archive",		KEY_EXEC, rest_archive_put,
	  REST_ARCHIVE_MAX },
	{ "GET",	"/v1/sandboxes/{id}/forwards",		KEY_EXEC, rest_forwards_list, 0 },
	{ "POST",	"/v1/sandboxes/{id}/forwards",		KEY_EXEC, rest_forward_start, 0 },
	{ "DELETE",	"/v1/sandboxes/{id}/forwards/{port}",	KEY_EXEC, rest_forward_stop, 0 },
	{ "GET",	"/v1/sandboxes/{id}/logs",		KEY_EXEC, rest_logs, 0 },
	/* every client's activity, as the console sees it */
	{ "GET",	"/v1/events",				KEY_ADMIN, rest_events, 0 },
	/* the image store: shared by every key, so only an admin empties it */
	{ "GET",	"/v1/images",				KEY_EXEC, rest_images_list, 0 },
	{ "POST",	"/v1/images",				KEY_EXEC, rest_images_pull, 0 },
	{ "DELETE",	"/v1/images",				KEY_ADMIN, rest_images_rm, 0 },
	{ "POST",	"/v1/images/gc",			KEY_ADMIN, rest_images_gc, 0 },
	/* Agent Sandbox's */
	{ "GET",	"/exec/",				KEY_EXEC, rest_sessions, 0 },
	{ "GET",	"/exec/templates",			KEY_EXEC, rest_templates, 0 },
	{ "DELETE",	"/exec/{session}",			KEY_EXEC, rest_session_end, 0 },
	{ "POST",	"/exec/{session}/execute",		KEY_EXEC, rest_session_execute, 0 },
	{ "POST",	"/exec/{session}/write",		KEY_EXEC, rest_session_write, 0 },
	{ "GET",	"/exec/{session}/read",			KEY_EXEC, rest_session_read, 0 },
	{ "GET",	"/exec/{session}/files",		KEY_EXEC, rest_session_files, 0 },
	{ "GET",	"/ready",				ROUTE_PUBLIC, rest_ready, 0 },
	{ "HEAD",	"/ready",				ROUTE_PUBLIC, rest_ready, 0 },
	{ "POST",	"/admin/keys",				KEY_ADMIN, rest_keys_add, 0 },
	{ "GET",	"/admin/keys",				KEY_ADMIN, rest_keys_list, 0 },
	{ "POST",	"/admin/keys/{id}/revoke",		KEY_ADMIN, rest_keys_revoke, 0 },
	{ "POST",	"/admin/keys/{id}/rotate",		KEY_ADMIN, rest_keys_rotate, 0 },
	{ "DELETE",	"/admin/keys/{id}",			KEY_ADMIN, rest_keys_rm, 0 },
};

/* The scope a route needs: 0 for none. */
static unsigned
needs(const struct route *rt)
{
	if (rt->scope == ROUTE_PUBLIC)
		return 0;
	return rt->scope == ROUTE_MCP ? server_mcp_scope() : rt->scope;
}

/* Split url into rq's segments; -1 when it has too many. */
static int
split(struct rest_req *rq, const char *url)
{
	char *p, *save = NULL, *tok;

	snprintf(rq->path, sizeof rq->path, "%s", url);
	snprintf(rq->segbuf, sizeof rq->segbuf, "%s", url);
	rq->nseg = 0;
	for (p = rq->segbuf; (tok = strtok_r(p, "/", &save)) != NULL; p = NULL) {
		if (rq->nseg == (int)ARRAY_SIZE(rq->seg))
			return -1;
		rq->seg[rq->nseg++] = tok;
	}
	return 0;
}

/* The row for method on rq's path, or NULL. */
static const struct route *
match(const struct rest_req *rq, const char *method)
{
	for (size_t i = 0; i < ARRAY_SIZE(routes); i++) {
		const char *p = routes[i].path, *seg;
		int k = 0;
		if (strcmp(routes[i].method, method) != 0)
			continue;
		while (*p == '/')
			p++;
		for (; *p != '\0' && k < rq->nseg; k++) {
			size_t n = strcspn(p, "/");
			seg = rq->seg[k];
			if (!(p[0] == '{' || (strlen(seg) == n && strncmp(seg, p, n) == 0)))
				break;
			p += n;
			while (*p == '/')
				p++;
		}
		if (*p == '\0' && k == rq->nseg)
			return &routes[i];
	}
	return NULL;
}

static const struct route *
route_of(const char *url, const char *method)
{
	struct rest_req probe;

	if (split(&probe, url) < 0)
		return NULL;
	return match(&probe, method);
}

/* --- who may ------------------------------------------------------------ */

static void
admit(void *arg, struct MHD_Connection *conn, const char *url, const char *method,
    int forbidden, struct mcp_http_caller *who, struct mcp_http_refusal *no)
{
	struct rest *r = arg;
	const struct route *rt = route_of(url, method);

	memset(who, 0, sizeof *who);
	memset(no, 0, sizeof *no);
	if (forbidden) {
		no->status = MHD_HTTP_FORBIDDEN;
		snprintf(no->message, sizeof no->message, "Forbidden: Origin or Host is not "
		    "this local server");
		return;
	}
	if (rt != NULL && rt->scope == ROUTE_PUBLIC)
		return;
	/* A path of no route is answered "no route" to a caller that may know. */
	keyring_admit(r->keys, conn, rt != NULL ? needs(rt) : 0, who, no);
}

/* A refused head on a route of ours: Agent Sandbox's shape on its routes,
 * the /v1/ error shape elsewhere. */
static enum MHD_Result
refuse(struct MHD_Connection *conn, const char *url, const struct mcp_http_refusal *no)
{
	int origin = no->status == MHD_HTTP_FORBIDDEN && strncmp(no->message,
	    "Forbidden: Origin", 17) == 0;
	int seed = strncmp(url, "/v1/", 4) != 0 && !origin;
	struct MHD_Response *resp;
	_cleanup_free_ char *t = NULL;
	enum MHD_Result rc;
	char ra[24];
	cJSON *o = cJSON_CreateObject(), *x;

	if (seed) {
		cJSON_AddStringToObject(o, "error", no->message);
		if (no->status == MHD_HTTP_TOO_MANY_REQUESTS)
			cJSON_AddNumberToObject(o, "retryAfter", no->retry_after);
	} else {
		x = cJSON_AddObjectToObject(o, "error");
		cJSON_AddStringToObject(x, "code", no->status == MHD_HTTP_UNAUTHORIZED ?
		    "unauthorized" : no->status == MHD_HTTP_TOO_MANY_REQUESTS ? "rate_limited" :
		    "denied");
		cJSON_AddStringToObject(x, "message", no->message);
		if (no->status == MHD_HTTP_UNAUTHORIZED)
			cJSON_AddStringToObject(x, "hint", "send Authorization: Bearer KEY (the "
			    "token sbxtop serve printed or read from --token-file, or a key of "
			    "`sbxtop key add`), X-API-Key: KEY or ?api_key=KEY");
		else if (no->status == MHD_HTTP_TOO_MANY_REQUESTS)
			cJSON_AddStringToObject(x, "hint", "wait the Retry-After header's seconds: "
			    "the key's rateLimit counts requests per window");
		else if (origin)
			cJSON_AddStringToObject(x, "hint", "call from this machine, without a "
			    "foreign Origin header");
		else
			cJSON_AddStringToObject(x, "hint", "use a key with that scope (`sbxtop key "
			    "add NAME --scope ...`)");
	}
	t = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if ((resp = MHD_create_response_from_buffer(strlen(t), t, MHD_RESPMEM_MUST_COPY)) == NULL)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (no->status == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, no->key_given ?
		    "Bearer realm=\"sbxtop\", error=\"invalid_token\"" : "Bearer realm=\"sbxtop\"");
	if (no->status == MHD_HTTP_TOO_MANY_REQUESTS) {
		snprintf(ra, sizeof ra, "%d", no->retry_after);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, ra);
	}
	if (origin)
		log_warnx("rest: refused a request from Origin %.100s",
		    MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin") ?
		    MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin") : "(none)");
	rc = MHD_queue_response(conn, no->status, resp);
	MHD_destroy_response(resp);
	return rc;
}

/* --- the requests -------------------------------------------------------- */

static enum MHD_Result
dispatch(struct rest_req *rq)
{
	const struct route *rt = match(rq, rq->method);

	if (rq->too_big)
		return rest_fail(rq->conn, SBX_EINVAL, "send at most the limit; large trees go "
		    "as a tar.gz to /v1/sandboxes/{id}/archive", "the body is over the "
		    "%zu MiB limit of this route", rq->cap >> 20);
	if (rt == NULL || rt->fn == NULL) {
		if (rq->nseg >= 1 && strcmp(rq->seg[0], "v1") == 0)
			return rest_fail(rq->conn, SBX_ENOTFOUND, "GET /v1/openapi.json lists every "
			    "route", "no route %s %.200s", rq->method, rq->path);
		if (rq->nseg >= 1 && strcmp(rq->seg[0], "exec") == 0)
			return rest_fail(rq->conn, SBX_ENOTFOUND, "the session routes are POST "
			    "/exec/SESSION/execute, POST .../write, GET .../read?path=, GET "
			    ".../files, DELETE /exec/SESSION and GET /exec/", "no route %s %.200s",
			    rq->method, rq->path);
		return rest_fail(rq->conn, SBX_ENOTFOUND, "MCP is at /mcp, the REST API at /v1/ "
		    "(GET /v1/openapi.json describes it); also /health, /ready and /metrics",
		    "no route %s %.200s", rq->method, rq->path);
	}
	return rest_answer(rq, rt->fn);
}

static int
handler(void *arg, struct MHD_Connection *conn, const char *url, const char *method,
    const char *upload, size_t *upload_size, void **ctx, const struct mcp_http_caller *who,
    const struct mcp_http_refusal *no)
{
	struct rest *r = arg;
	struct rest_req *rq = *ctx;
	const struct route *rt;

	if (rq == NULL) {
		/* Headers only: the refusals before any body is read. */
		if (no->status != 0)
			return refuse(conn, url, no);
		rq = xcalloc(1, sizeof *rq);
		rq->r = r;
		rq->conn = conn;
		rq->method = method;
		rq->who = *who;
		*ctx = rq;
		if (split(rq, url) < 0)
			return rest_fail(conn, SBX_ENOTFOUND, NULL, "no route: the path has too "
			    "many parts");
		rt = match(rq, method);
		rq->cap = rt != NULL && rt->cap != 0 ? rt->cap : REST_JSON_MAX;
		buf_init(&rq->body, rq->cap);
		return MHD_YES;
	}
	if (*upload_size > 0) {
		/* Over the cap, the rest is read and dropped, and the answer comes
		 * at the end: refused in mid-upload, most clients see only a reset
		 * connection.  Past BODY_DROP_MAX more, the connection is cut. */
		rq->received += *upload_size;
		if (!rq->too_big && buf_append(&rq->body, upload, *upload_size) < 0) {
			rq->too_big = 1;
			buf_free(&rq->body);
			buf_init(&rq->body, rq->cap);
		}
		*upload_size = 0;
		if (rq->too_big && rq->received > rq->cap + BODY_DROP_MAX)
			return MHD_NO;
		return MHD_YES;
	}
	return dispatch(rq);
}

static void
handler_done(void *arg, void *ctx)
{
	struct rest_req *rq = ctx;

	if (rq == NULL)
		return;
	buf_free(&rq->body);
	free(rq);
}

struct mcp_http_router
rest_router(struct rest *r)
{
	struct mcp_http_router rt = { admit, handler, handler_done, r };

	/* A route that names no scope would be open to any key: not served. */
	for (size_t i = 0; i < ARRAY_SIZE(routes); i++)
		if (routes[i].scope != ROUTE_PUBLIC && key_scope_name(needs(&routes[i])) == NULL)
			fatal("route %s %s names no scope", routes[i].method, routes[i].path);
	return rt;
}

cJSON *
rest_routes_json(void)
{
	cJSON *a = cJSON_CreateArray();

	for (size_t i = 0; i < ARRAY_SIZE(routes); i++) {
		cJSON *o = cJSON_CreateObject();
		unsigned need = needs(&routes[i]);
		const char *name = key_scope_name(need);
		cJSON_AddStringToObject(o, "method", routes[i].method);
		cJSON_AddStringToObject(o, "path", routes[i].path);
		if (name != NULL)
			cJSON_AddStringToObject(o, "scope", name);
		else
			cJSON_AddNullToObject(o, "scope");
		cJSON_AddBoolToObject(o, "listener", routes[i].fn == NULL);
		cJSON_AddItemToArray(a, o);
	}
	return a;
}
