/* The API key a session was opened with (mcp.h's mcp_session_set_key): the
 * calls of its requests act for it (core_act_for), so they see and make only
 * that key's sandboxes unless it holds admin, and the journal and the approval
 * gate name it, by its name. */
#include <stdio.h>
#include <stdlib.h>

#include "core/keys/keys.h"
#include "lib/util.h"
#include "mcp/session-int.h"

void
mcp_session_set_key(struct mcp_session *s, const char *id, const char *name,
    unsigned scopes)
{
	free(s->key_id);
	free(s->key_name);
	s->key_id = id ? xstrdup(id) : NULL;
	s->key_name = id && name ? xstrdup(name) : NULL;
	s->key_scopes = id ? scopes : KEY_SCOPES_ALL;
}

unsigned
mcp_session_scopes(const struct mcp_session *s)
{
	return s->key_id ? s->key_scopes : KEY_SCOPES_ALL;
}

const char *
mcp_session_key_name(const struct mcp_session *s)
{
	return s->key_name;
}

void
sess_key_bind(struct mcp_call *call, const struct mcp_session *s)
{
	call->key_id = s->key_id ? xstrdup(s->key_id) : NULL;
	call->key_name = s->key_name ? xstrdup(s->key_name) : NULL;
	call->key_all = (s->key_scopes & KEY_ADMIN) != 0;
}

void
sess_key_unbind(struct mcp_call *call)
{
	free(call->key_id);
	free(call->key_name);
	call->key_id = call->key_name = NULL;
}

void
sess_act_for(const struct mcp_call *call)
{
	if (call != NULL && call->key_id != NULL)
		core_act_for(call->key_id, call->key_all);
	else
		core_act_for(NULL, 1);
}

void
sess_gate_client(const struct mcp_call *call, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s%s", call->ri.client[0] ? call->ri.client : "unknown",
	    call->key_name ? " (key " : "", call->key_name ? call->key_name : "",
	    call->key_name ? ")" : "");
}
