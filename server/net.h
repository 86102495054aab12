/* The network policy's methods of the core server (sbxtop/net_show,
 * net_pending, net_decide, net_change): the console's Network tab and its ask
 * prompt run core/net.h's functions through them, as `sbxtop net` runs them
 * in its own process. */
#ifndef SBX_SERVER_NET_H
#define SBX_SERVER_NET_H

#include <cjson/cJSON.h>

#include "core/core.h"
#include "mcp/mcp.h"
#include "server/method.h"

/* The methods, for server.c's table; c->name names who decided. */
srv_method_fn server_net_show, server_net_pending, server_net_decide, server_net_change;

#endif
