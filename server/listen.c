/* HTTP MCP listeners in the core server (listen.h): mcp/http.c serving on the
 * server's core, each session given the approval gate as a socket session is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/client/client.h"
#include "lib/log.h"
#include "lib/util.h"
#include "mcp/http.h"
#include "mcp/jsonrpc.h"
#include "server/listen.h"
#include "server/rest.h"

#define TOKEN_MIN	16	/* as `sbxtop serve --token-file` accepts */
#define TOKEN_MAX	512

struct listen {
	struct mcp_http		*h;
	struct core		*core;
	struct approvals	*ap;
	struct rest		*rest;		/* its /v1/ and /exec/ routes */
};

/* An HTTP session's requests pass the methods table as an agent's, with the
 * scopes of the key it was opened with. */
static int
admit(void *arg, struct mcp_session *s, const cJSON *id, const char *method,
    const cJSON *params)
{
	struct listen *l = arg;

	(void)params;
	return server_admit(l->core, s, KIND_MCP, mcp_session_scopes(s), id, method);
}

static void
on_session(void *arg, struct mcp_session *s, const struct mcp_http_caller *who)
{
	struct listen *l = arg;

	mcp_session_set_kind(s, "mcp");
	mcp_session_set_extension(s, admit, l);
	mcp_session_set_gate(s, approvals_gate, l->ap);
	if (who->key_id[0] != '\0')
		mcp_session_set_key(s, who->key_id, who->key_name, who->scopes);
}

void
listen_start(struct srv_call *c)
{
	struct listen **lp = c->listen;
	struct mcp_session *s = c->s;
	const cJSON *id = c->id;
	const char *addr = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c->params,
	    "listen"));
	const char *token = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c->params,
	    "token"));
	struct sbx_err e;
	struct listen *l;
	cJSON *r;
	size_t tl = token ? strlen(token) : 0;

	if (addr == NULL || token == NULL || tl < TOKEN_MIN || tl > TOKEN_MAX) {
		mcp_session_reply_error(s, id, JSONRPC_INVALID_PARAMS, "Invalid params: "
		    "sbxtop/http_listen needs {listen: \"HOST:PORT\", token: 16 to 512 "
		    "characters}", NULL);
		return;
	}
	if (*lp != NULL) {
		mcp_session_reply_error(s, id, JSONRPC_INVALID_REQUEST, "Invalid Request: this "
		    "connection has a listener already (sbxtop/http_stop first)", NULL);
		return;
	}
	l = xcalloc(1, sizeof *l);
	l->core = c->core;
	l->ap = c->ap;
	l->rest = rest_new(c->core, c->ap, token);
	struct mcp_http_router rt = rest_router(l->rest);
	if ((l->h = mcp_http_start_routed(c->core, addr, token, on_session, l, &rt,
	    &e)) == NULL) {
		rest_free(l->rest);
		free(l);
		mcp_session_reply_error(s, id, CLIENT_ERR_CORE, e.msg, client_err_data(&e));
		return;
	}
	*lp = l;
	log_info("MCP (Streamable HTTP, and HTTP+SSE) at %s", mcp_http_url(l->h));
	r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "url", mcp_http_url(l->h));
	cJSON_AddNumberToObject(r, "port", mcp_http_port(l->h));
	mcp_session_reply(s, id, r);
}

void
listen_stop(struct srv_call *c)
{
	cJSON *r = cJSON_CreateObject();

	cJSON_AddBoolToObject(r, "stopped", *c->listen != NULL);
	listen_free(*c->listen);
	*c->listen = NULL;
	mcp_session_reply(c->s, c->id, r);
}

static void
one_session(void *arg, const struct mcp_session *s, int64_t since_ms)
{
	cJSON *arr = arg;
	const char *mc = mcp_session_client(s), *key = mcp_session_key_name(s);
	cJSON *o = cJSON_CreateObject();
	char name[KEY_NAME_MAX + 16];

	/* No connection of its own, so no connection id. */
	snprintf(name, sizeof name, "http%s%s", key ? " key:" : "", key ? key : "");
	cJSON_AddNumberToObject(o, "id", 0);
	cJSON_AddStringToObject(o, "kind", "mcp");
	cJSON_AddStringToObject(o, "name", name);
	cJSON_AddNumberToObject(o, "pid", 0);
	cJSON_AddNumberToObject(o, "since_ms", (double)since_ms);
	if (mc)
		cJSON_AddStringToObject(o, "mcp_client", mc);
	else
		cJSON_AddNullToObject(o, "mcp_client");
	cJSON_AddStringToObject(o, "origin", "http");
	cJSON_AddBoolToObject(o, "self", 0);
	cJSON_AddItemToArray(arr, o);
}

void
listen_clients(struct listen *l, cJSON *arr)
{
	if (l != NULL)
		mcp_http_sessions(l->h, one_session, arr);
}

void
listen_free(struct listen *l)
{
	if (l == NULL)
		return;
	mcp_http_stop(l->h);
	rest_free(l->rest);
	free(l);
}
