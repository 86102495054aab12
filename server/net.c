/* sbxtop/net_* (net.h): the console's calls into the network policy.  The
 * answers and changes are the operator's (server.c's table says who may call
 * each): no MCP tool changes a policy (docs/network.md). */
#include "lib/jspec.h"
#include "core/net.h"
#include "mcp/tool-util.h"
#include "server/net.h"

void
server_net_show(struct srv_call *c)
{
	const char *key = mcp_arg_str(c->params, "sandbox");
	int recent = (int)jint_of(cJSON_GetObjectItemCaseSensitive(c->params, "recent"), 20, 0, 100000);
	struct sbx_err e;
	cJSON *r;

	if (key == NULL || recent < 0 || recent > 1000) {
		srv_invalid(c, "Invalid params: sbxtop/net_show needs {sandbox, recent?: "
		    "0..1000}");
		return;
	}
	if (core_net_show(c->core, key, recent, &r, &e) < 0)
		srv_reply_err(c, &e);
	else
		mcp_session_reply(c->s, c->id, r);
}

void
server_net_pending(struct srv_call *c)
{
	struct sbx_err e;
	cJSON *a, *r;

	if (core_net_pending(c->core, mcp_arg_str(c->params, "sandbox"), &a, &e) < 0) {
		srv_reply_err(c, &e);
		return;
	}
	r = cJSON_CreateObject();
	cJSON_AddItemToObject(r, "pending", a);
	mcp_session_reply(c->s, c->id, r);
}

void
server_net_decide(struct srv_call *c)
{
	const char *key = mcp_arg_str(c->params, "sandbox");
	const char *req = mcp_arg_str(c->params, "req"), *answer = mcp_arg_str(c->params,
	    "answer");
	struct sbx_err e;
	cJSON *r;

	if (key == NULL || req == NULL || answer == NULL) {
		srv_invalid(c, "Invalid params: sbxtop/net_decide needs {sandbox, req, "
		    "answer: once|always|deny}");
		return;
	}
	if (core_net_decide(c->core, key, req, answer, c->name && *c->name ? c->name :
	    "client", &e) < 0) {
		srv_reply_err(c, &e);
		return;
	}
	r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "req", req);
	cJSON_AddStringToObject(r, "answer", answer);
	mcp_session_reply(c->s, c->id, r);
}

void
server_net_change(struct srv_call *c)
{
	const char *key = mcp_arg_str(c->params, "sandbox");
	const char *verb = mcp_arg_str(c->params, "verb"), *entry = mcp_arg_str(c->params,
	    "entry");
	struct sbx_err e;
	cJSON *r;

	if (key == NULL || verb == NULL || entry == NULL) {
		srv_invalid(c, "Invalid params: sbxtop/net_change needs {sandbox, verb: "
		    "allow|deny|remove, entry}");
		return;
	}
	if (core_net_change(c->core, key, verb, entry, &e) < 0) {
		srv_reply_err(c, &e);
		return;
	}
	if (core_net_show(c->core, key, 0, &r, &e) < 0)
		r = cJSON_CreateObject();
	mcp_session_reply(c->s, c->id, r);
}
