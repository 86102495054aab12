/* What the methods of the core server share (method.h): their answers and
 * their parameters. */
#include <stdio.h>
#include <string.h>

#include "lib/jspec.h"
#include "core/client/client.h"
#include "lib/log.h"
#include "lib/util.h"
#include "mcp/jsonrpc.h"
#include "server/method.h"

void
srv_reply_err(struct srv_call *c, const struct sbx_err *e)
{
	mcp_session_reply_error(c->s, c->id, CLIENT_ERR_CORE, e->msg, client_err_data(e));
}

void
srv_invalid(struct srv_call *c, const char *msg)
{
	mcp_session_reply_error(c->s, c->id, JSONRPC_INVALID_PARAMS, msg, NULL);
}

int64_t
srv_int_param(const cJSON *params, const char *name, int64_t min, int64_t max, int64_t def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, name);
	int64_t n;

	if (v == NULL || cJSON_IsNull(v))
		return def;
	return jint_in(v, min, max, &n) < 0 ? -2 : n;
}

/* The table's columns, in its order. */
static const char *const kind_names[] = { "console", "cli", "mcp", "rest" };

cJSON *
srv_kinds_json(unsigned bits)
{
	cJSON *a = cJSON_CreateArray();

	for (size_t i = 0; i < ARRAY_SIZE(kind_names); i++)
		if (bits & (1u << i))
			cJSON_AddItemToArray(a, cJSON_CreateString(kind_names[i]));
	return a;
}

/* The refusal of a method of kinds to a caller of kind bit: what it is for, and for
 * an agent what it may do instead. */
void
srv_refuse(struct core *c, struct mcp_session *s, const cJSON *id, const char *method,
    unsigned kinds, unsigned bit, const char *who)
{
	char allowed[64] = "", msg[400];
	cJSON *data = cJSON_CreateObject();
	const char *kind = "?";

	for (size_t i = 0; i < ARRAY_SIZE(kind_names); i++) {
		if (kinds & (1u << i))
			snprintf(allowed + strlen(allowed), sizeof allowed - strlen(allowed),
			    "%s%s", allowed[0] ? ", " : "", kind_names[i]);
		if (bit == (1u << i))
			kind = kind_names[i];
	}
	if (bit == KIND_MCP)
		snprintf(msg, sizeof msg, "%s is the operator's (%s), not an agent's: this "
		    "connection is an MCP client's (kind mcp), which acts through tools/call; "
		    "every tool call passes the operator's approvals", method, allowed);
	else
		snprintf(msg, sizeof msg, "%s is for %s connections, not %s ones", method,
		    allowed, kind);
	log_warnx("refused %s to %s (kind %s)", method, who, kind);
	cJSON_AddStringToObject(data, "kind", kind);
	cJSON_AddItemToObject(data, "allowed", srv_kinds_json(kinds));
	mcp_session_reply_error(s, id, CLIENT_ERR_KIND, msg, data);
	/* The console sees what an agent tried, as it sees its tool calls. */
	data = cJSON_CreateObject();
	cJSON_AddStringToObject(data, "method", method);
	cJSON_AddStringToObject(data, "kind", kind);
	cJSON_AddStringToObject(data, "client", who);
	core_events_emit(c, "client.refused", NULL, data);
}
