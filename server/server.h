/* The core server (sbxtop serve): one long-lived core shared by every front end
 * over a unix socket, $XDG_RUNTIME_DIR/sbxtop/core.sock.  Each connection is an
 * MCP session (mcp/) extended with the sbxtop/... methods of
 * docs/core-protocol.md: hello, subscribe, clients, approvals, forwards,
 * shutdown.  The client side is core/client/client.h. */
#ifndef SBX_SERVER_H
#define SBX_SERVER_H

#include <cjson/cJSON.h>

#include "core/core.h"
#include "lib/err.h"
#include "mcp/mcp.h"

/* Serve core c until SIGTERM/SIGINT, sbxtop/shutdown, or the grace period
 * (option serve_grace) passed with no clients and no port forwards.  0 then;
 * -1 with e when it cannot start (another server holds the socket). */
int server_run(struct core *c, struct sbx_err *e);

/* The methods table for a session that is no connection of the server's (an
 * HTTP MCP session on core c, whose kind is KIND_MCP of server/method.h, whose
 * API key holds scopes): 1 when it answered request id for method with a
 * refusal, 0 when the session answers it (an MCP method kind and scopes may
 * call, or one the table does not know). */
int server_admit(struct core *c, struct mcp_session *s, unsigned kind, unsigned scopes,
    const cJSON *id, const char *method);
/* The scope an API key needs for the MCP methods (KEY_* of core/keys/keys.h):
 * the table's MCP row says it, and the listener's /mcp routes ask it. */
unsigned server_mcp_scope(void);

/* The approval modes, as option "approve" names them. */
enum approve_mode { APPROVE_NONE, APPROVE_DESTRUCTIVE, APPROVE_ALL };
/* The mode named name, or -1. */
int approve_mode_parse(const char *name);
const char *approve_mode_name(enum approve_mode m);

#endif
