/* The client's side of MCP, for programs of ours that use an MCP session of
 * the core server (the console): the initialize a session needs before
 * tools/call, and tool calls answered with their structured result or, for
 * isError, an error with the tool's text.  It rides on core/client/client.h's
 * JSON-RPC connection; what the messages look like stays here, in mcp/. */
#ifndef SBX_MCP_RPC_CLIENT_H
#define SBX_MCP_RPC_CLIENT_H

#include <cjson/cJSON.h>

#include "core/client/client.h"
#include "lib/err.h"

/* The revision the client asks for: the first with structuredContent, which
 * mcp_client_call_tool reads. */
#define MCP_CLIENT_PROTOCOL "2025-06-18"

/* initialize the session on c as client name/version (no capabilities), with
 * the largest result budget (mcp/budget.h): its reader is a person. */
int mcp_client_initialize(struct client *c, const char *name, const char *version,
    struct sbx_err *e);
/* tools/call tool with args (taken; NULL: {}).  *result (may be NULL) gets the
 * structured result, caller frees; a result with isError is -1 with its text
 * in e. */
int mcp_client_call_tool(struct client *c, const char *tool, cJSON *args, cJSON **result,
    struct sbx_err *e);
/* The same unwrapping for a tools/call result res (taken) got another way. */
int mcp_client_tool_result(cJSON *res, cJSON **result, struct sbx_err *e);

#endif
