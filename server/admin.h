/* The admin commands' methods of the core server (sbxtop/list, sbxtop/create,
 * sbxtop/exec, ...; docs/core-protocol.md): what `sbxtop create`, `ls`, `exec`,
 * `cp`, `logs`, `status`, `suspend`, `resume` and `destroy` ask the server for.
 * Unlike the MCP tools they answer with the core's own records and errors (the
 * hints a shell user needs), stream exec output as it comes, and hand the log
 * lines of the call back to the client, so a command prints what it printed
 * when it ran the core itself. */
#ifndef SBX_SERVER_ADMIN_H
#define SBX_SERVER_ADMIN_H

#include <cjson/cJSON.h>

#include "core/core.h"
#include "mcp/mcp.h"

struct admin;

/* The admin state of one connection: session s on socket fd (watched for the
 * client going away, which cancels a running exec). */
struct admin *admin_new(struct core *c, struct mcp_session *s, int fd);
void admin_free(struct admin *a);

/* Answer request id for method m (the name after "sbxtop/") when it is one of
 * these, on the calling thread (the connection's reader: a command's calls come
 * one at a time); client names the caller in the activity journal.  0 when m is
 * not an admin method. */
int admin_dispatch(struct admin *a, const char *client, const char *m, const cJSON *id,
    const cJSON *params);

#endif
