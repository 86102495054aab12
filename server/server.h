/* The core server (sbxtop serve): one long-lived core shared by every front end
 * over a unix socket, $XDG_RUNTIME_DIR/sbxtop/core.sock.  Each connection is an
 * MCP session (mcp/) extended with the sbxtop/... methods of
 * docs/core-protocol.md: hello, subscribe, clients, approvals, forwards,
 * shutdown.  The client side is core/client.h. */
#ifndef SBX_SERVER_H
#define SBX_SERVER_H

#include "core/core.h"
#include "lib/err.h"

/* Serve core c until SIGTERM/SIGINT, sbxtop/shutdown, or the grace period
 * (option serve_grace) passed with no clients and no port forwards.  0 then;
 * -1 with e when it cannot start (another server holds the socket). */
int server_run(struct core *c, struct sbx_err *e);

/* The approval modes, as option "approve" names them. */
enum approve_mode { APPROVE_NONE, APPROVE_DESTRUCTIVE, APPROVE_ALL };
/* The mode named name, or -1. */
int approve_mode_parse(const char *name);
const char *approve_mode_name(enum approve_mode m);

#endif
