/* What the methods of the core server share (method.h): their answers and
 * their parameters. */
#include "core/client.h"
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

	if (v == NULL || cJSON_IsNull(v))
		return def;
	if (!cJSON_IsNumber(v) || v->valuedouble != (double)(int64_t)v->valuedouble ||
	    v->valuedouble < (double)min || v->valuedouble > (double)max)
		return -2;
	return (int64_t)v->valuedouble;
}
