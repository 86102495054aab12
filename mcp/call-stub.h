/* STUB, deleted at merge: a stand-in for the protocol layer's struct mcp_call so
 * this branch links and the tool tests can call tools directly.  The protocol
 * layer must give tests the same three entry points (or the tests adapt). */
#ifndef SBX_MCP_CALL_STUB_H
#define SBX_MCP_CALL_STUB_H

#include "mcp/tool.h"

/* A call on core c from client (may be NULL). */
struct mcp_call *mcp_call_stub_new(struct core *c, const char *client);
void mcp_call_stub_free(struct mcp_call *call);
/* As if notifications/cancelled arrived (any thread). */
void mcp_call_stub_cancel(struct mcp_call *call);
/* How many progress notifications were asked for, and the last message. */
int mcp_call_stub_progress_count(struct mcp_call *call);
const char *mcp_call_stub_last_message(struct mcp_call *call);

#endif
