/* The REST API on the `serve --listen` listener (docs/rest-api.md, described by
 * docs/openapi.json): /v1/... routes on the core server's core, and the
 * /exec/SESSION/... and /admin/keys routes of the Agent Sandbox project.  Every
 * call is in the activity journal as client "rest" (with its API key's name)
 * and passes the approval gate, as an MCP tool call does. */
#ifndef SBX_SERVER_REST_H
#define SBX_SERVER_REST_H

#include "core/core.h"
#include "mcp/http.h"
#include "server/approve.h"

struct rest;

/* Routes on core c, calls gated by ap (NULL: no gate), for callers with the
 * listener's token (every scope) or an API key of core/keys/. */
struct rest *rest_new(struct core *c, struct approvals *ap, const char *token);
/* The router to give mcp_http_start_routed: server/rest-routes.c's table of
 * every path of the listener, with the scope each needs. */
struct mcp_http_router rest_router(struct rest *r);
/* That table: [{method, path, scope, listener}], scope null for the public
 * ones; listener true for what mcp/http.c serves (MCP, /health, /metrics). */
cJSON *rest_routes_json(void);
/* After the listener has stopped: stops the session reaper, frees r. */
void rest_free(struct rest *r);

#endif
