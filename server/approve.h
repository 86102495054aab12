/* Approvals: tool calls held until an operator allows or denies them in a
 * console (sbxtop/approve), or until a default applies when no console is
 * attached.  The gate runs on the call's MCP worker thread, so a held call
 * holds up nothing else. */
#ifndef SBX_SERVER_APPROVE_H
#define SBX_SERVER_APPROVE_H

#include <stdint.h>
#include <cjson/cJSON.h>

#include "core/core.h"
#include "mcp/mcp.h"
#include "server/method.h"
#include "server/server.h"

struct approvals;

/* Held calls of core c (events go there) in mode m; after timeout_s with no
 * console attached a call gets the default (allow when default_allow). */
struct approvals *approvals_new(struct core *c, enum approve_mode m, int64_t timeout_s,
    int default_allow);
/* Every call still held must be gone (their sessions closed) before this. */
void approvals_free(struct approvals *a);

void approvals_set_mode(struct approvals *a, enum approve_mode m);
enum approve_mode approvals_mode(struct approvals *a);
/* How many consoles are attached now (0: held calls time out). */
void approvals_set_consoles(struct approvals *a, int n);

/* The mcp_gate_fn a session is given (arg: the struct approvals). */
int approvals_gate(void *arg, const struct mcp_gate *g, char *why, size_t len);
/* Decide held call id; SBX_ENOTFOUND when no call with that id is held. */
int approvals_answer(struct approvals *a, uint64_t id, int allow, const char *reason,
    const char *by, struct sbx_err *e);
/* The held calls: [{id, tool, client, kind, arguments, since_ms}], oldest first. */
cJSON *approvals_list(struct approvals *a);
size_t approvals_pending(struct approvals *a);

/* The methods (c->ap), for server.c's table: sbxtop/approvals, sbxtop/approve
 * (c->name answers) and sbxtop/approve_mode. */
srv_method_fn approvals_method_list, approvals_method_answer, approvals_method_mode;

#endif
