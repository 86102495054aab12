/* sbxtop/net_* (net.h): the console's calls into the network policy.  The
 * answers and changes are the operator's: a connection whose hello says it
 * relays an agent (kind mcp) may look but not decide, as no MCP tool changes
 * a policy (docs/network.md). */
#include <stdio.h>
#include <string.h>

#include "core/client.h"
#include "core/net.h"
#include "lib/util.h"
#include "mcp/jsonrpc.h"
#include "mcp/tool-util.h"
#include "server/net.h"

static void
reply_err(struct mcp_session *s, const cJSON *id, const struct sbx_err *e)
{
	mcp_session_reply_error(s, id, CLIENT_ERR_CORE, e->msg, client_err_data(e));
}

static void
invalid(struct mcp_session *s, const cJSON *id, const char *msg)
{
	mcp_session_reply_error(s, id, JSONRPC_INVALID_PARAMS, msg, NULL);
}

int
net_dispatch(struct core *c, struct mcp_session *s, const char *kind, const char *name,
    const char *m, const cJSON *id, const cJSON *params)
{
	const char *key = mcp_arg_str(params, "sandbox");
	struct sbx_err e;
	cJSON *r = NULL;
	int operator = kind == NULL || strcmp(kind, "mcp") != 0;

	if (strncmp(m, "net_", 4) != 0)
		return 0;
	m += 4;
	if (strcmp(m, "show") == 0) {
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(params, "recent");
		int recent = cJSON_IsNumber(n) ? (int)n->valuedouble : 20;
		if (key == NULL || recent < 0 || recent > 1000) {
			invalid(s, id, "Invalid params: sbxtop/net_show needs {sandbox, recent?: "
			    "0..1000}");
			return 1;
		}
		if (core_net_show(c, key, recent, &r, &e) < 0)
			reply_err(s, id, &e);
		else
			mcp_session_reply(s, id, r);
		return 1;
	}
	if (strcmp(m, "pending") == 0) {
		cJSON *a;
		if (core_net_pending(c, key, &a, &e) < 0) {
			reply_err(s, id, &e);
			return 1;
		}
		r = cJSON_CreateObject();
		cJSON_AddItemToObject(r, "pending", a);
		mcp_session_reply(s, id, r);
		return 1;
	}
	if (strcmp(m, "decide") != 0 && strcmp(m, "change") != 0) {
		mcp_session_reply_error(s, id, JSONRPC_METHOD_NOT_FOUND,
		    "Method not found: sbxtop/net_ takes show, pending, decide or change", NULL);
		return 1;
	}
	if (!operator) {
		sbx_error(&e, SBX_EDENIED, "the operator answers with `sbxtop net ID`, or in the "
		    "console", "only the operator changes a network policy");
		reply_err(s, id, &e);
		return 1;
	}
	if (strcmp(m, "decide") == 0) {
		const char *req = mcp_arg_str(params, "req"), *answer = mcp_arg_str(params, "answer");
		char by[80];
		if (key == NULL || req == NULL || answer == NULL) {
			invalid(s, id, "Invalid params: sbxtop/net_decide needs {sandbox, req, "
			    "answer: once|always|deny}");
			return 1;
		}
		snprintf(by, sizeof by, "%s", name && *name ? name : kind ? kind : "client");
		if (core_net_decide(c, key, req, answer, by, &e) < 0) {
			reply_err(s, id, &e);
			return 1;
		}
		r = cJSON_CreateObject();
		cJSON_AddStringToObject(r, "req", req);
		cJSON_AddStringToObject(r, "answer", answer);
		mcp_session_reply(s, id, r);
		return 1;
	}
	{
		const char *verb = mcp_arg_str(params, "verb"), *entry = mcp_arg_str(params, "entry");
		if (key == NULL || verb == NULL || entry == NULL) {
			invalid(s, id, "Invalid params: sbxtop/net_change needs {sandbox, verb: "
			    "allow|deny|remove, entry}");
			return 1;
		}
		if (core_net_change(c, key, verb, entry, &e) < 0) {
			reply_err(s, id, &e);
			return 1;
		}
		if (core_net_show(c, key, 0, &r, &e) < 0)
			r = cJSON_CreateObject();
		mcp_session_reply(s, id, r);
	}
	return 1;
}
