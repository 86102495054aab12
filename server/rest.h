/* The REST API on the `serve --listen` listener (docs/rest-api.md, described by
 * docs/openapi.json): /v1/... routes on the core server's core, and the
 * /exec/SESSION/... routes of the Agent Sandbox project.  Every call is in the
 * activity journal as client "rest" and passes the approval gate, as an MCP
 * tool call does. */
#ifndef SBX_SERVER_REST_H
#define SBX_SERVER_REST_H

#include "core/core.h"
#include "mcp/http.h"
#include "server/approve.h"

struct rest;

/* Routes on core c, calls gated by ap (NULL: no gate). */
struct rest *rest_new(struct core *c, struct approvals *ap);
/* The router to give mcp_http_start_routed. */
struct mcp_http_router rest_router(struct rest *r);
/* After the listener has stopped: stops the session reaper, frees r. */
void rest_free(struct rest *r);

#endif
