/* Port forwards through the core server (sbxtop/forward_*,
 * docs/core-protocol.md): forwards run in the server's core, which keeps them
 * and their ports, and records them for the next server. */
#ifndef SBX_SERVER_FORWARDS_H
#define SBX_SERVER_FORWARDS_H

#include "server/method.h"

/* The methods, for server.c's table. */
srv_method_fn forwards_start, forwards_stop, forwards_list, forwards_restore;

#endif
