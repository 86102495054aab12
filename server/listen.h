/* HTTP MCP listeners in the core server (sbxtop/http_listen): `sbxtop serve
 * --listen` asks the server to open one, so HTTP clients' sessions run on the
 * server's core like every other session: their tool calls are in the
 * activity journal, pass the approval gate, and are listed by sbxtop/clients.
 * A listener belongs to the connection that opened it and closes with it. */
#ifndef SBX_SERVER_LISTEN_H
#define SBX_SERVER_LISTEN_H

#include <cjson/cJSON.h>

#include "core/core.h"
#include "mcp/mcp.h"
#include "server/approve.h"
#include "server/method.h"

struct listen;

/* sbxtop/http_listen and sbxtop/http_stop, for server.c's table: *c->listen is
 * the connection's listener (NULL: none).  Sessions get the approval gate of
 * c->ap, and the methods table as connections of kind mcp. */
srv_method_fn listen_start, listen_stop;
/* Add the listener's HTTP sessions to arr, as sbxtop/clients shows clients. */
void listen_clients(struct listen *l, cJSON *arr);
/* Close the listener (its sessions end, their calls are cancelled). */
void listen_free(struct listen *l);

#endif
