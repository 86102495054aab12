/* What a Streamable HTTP request must carry (mcp/http.c): the Host and Origin
 * of a local listener, and the 2026-07-28 rules for a POST, whose headers
 * (MCP-Protocol-Version, Mcp-Method, Mcp-Name) must say what its body says.
 * Pure functions, for unit tests. */
#ifndef SBX_MCP_HTTP_CHECK_H
#define SBX_MCP_HTTP_CHECK_H

#include <stddef.h>
#include <netinet/in.h>
#include <cjson/cJSON.h>

#include "lib/err.h"

/* HOST:PORT into sin and host (the address as bound); HOST is an IPv4 address
 * or "localhost"; port 0: any free port. */
int mcp_http_parse_listen(const char *spec, struct sockaddr_in *sin, char *host,
    size_t hostlen, struct sbx_err *e);

/* 1 when the host part of hostport (no scheme) names a listener bound to
 * bound (an address, as printed) on port: loopback names always do. */
int mcp_http_host_ok(const char *hostport, const char *bound, int port);

/* DNS rebinding: a page of another site reaching us through a name that
 * resolves to 127.0.0.1 carries its own Origin, and its own name in Host.  1
 * when origin (may be NULL) and host (may be NULL) are this listener's, bound
 * to bound:port (loopback: Host is checked too). */
int mcp_http_origin_ok(const char *origin, const char *host, int loopback, const char *bound,
    int port);

/* A request header by name (case-insensitive), or NULL. */
typedef const char *(*mcp_http_header_fn)(void *arg, const char *name);

/* 1 when the POSTed message m (a JSON-RPC object) is for the 2026-07-28
 * path: its _meta names a protocol version, its method exists only there
 * (server/discover, subscriptions/listen, tasks/...), or the
 * MCP-Protocol-Version header (version, may be NULL) names no legacy
 * revision. */
int mcp_http_is_modern(const cJSON *m, const char *version);

/* The 2026-07-28 checks of a POST: 0 when its headers agree with its body m;
 * otherwise the HTTP status to answer with, with the JSON-RPC error in *code
 * and msg (missing _meta fields: -32602; a header missing, malformed or not
 * what the body says: -32020; a version not spoken here: -32022, with *data
 * (taken by the caller) listing the ones that are). */
int mcp_http_check_modern(const cJSON *m, mcp_http_header_fn hdr, void *arg, int *code,
    char *msg, size_t len, cJSON **data);

/* The HTTP status of a 2026-07-28 response text: 404 for method not found,
 * 400 for the errors the revision answers so, 200 otherwise. */
unsigned mcp_http_modern_status(const char *text, size_t len);

#endif
