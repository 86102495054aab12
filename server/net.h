/* The network policy's methods of the core server (sbxtop/net_show,
 * net_pending, net_decide, net_change): the console's Network tab and its ask
 * prompt run core/net.h's functions through them, as `sbxtop net` runs them
 * in its own process. */
#ifndef SBX_SERVER_NET_H
#define SBX_SERVER_NET_H

#include <cjson/cJSON.h>

#include "core/core.h"
#include "mcp/mcp.h"

/* Answer request id for method m (the name after "sbxtop/") when it is one of
 * net_*; kind and name are the connection's hello.  0 when m is not one. */
int net_dispatch(struct core *c, struct mcp_session *s, const char *kind, const char *name,
    const char *m, const cJSON *id, const cJSON *params);

#endif
