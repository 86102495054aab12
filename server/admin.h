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
#include "server/method.h"

struct admin;

/* The admin state of one connection: session s on socket fd (watched for the
 * client going away, which cancels a running exec). */
struct admin *admin_new(struct core *c, struct mcp_session *s, int fd);
void admin_free(struct admin *a);

/* The methods, for server.c's table: each answers c on the calling thread
 * (the connection's reader: a command's calls come one at a time); c->name
 * names the caller in the activity journal. */
srv_method_fn admin_list, admin_status, admin_create, admin_suspend, admin_resume,
    admin_destroy, admin_exec_stdin, admin_exec, admin_copy_in, admin_copy_out,
    admin_log_path;

#endif
