/* The HTTP listener's credentials (server/rest-routes.c asks for every
 * request): its token, the operator's key with every scope, and the API keys
 * of core/keys/, each counted against its rate limit in fixed windows
 * (key_rate_window, 60 s).  A key is never logged: its id and name are. */
#ifndef SBX_SERVER_KEYRING_H
#define SBX_SERVER_KEYRING_H

#include <stdint.h>
#include <microhttpd.h>

#include "mcp/http.h"

struct keyring;

/* token: the listener's (NULL: none, every request is the operator's, as
 * the conformance fixtures run); window_s: key_rate_window. */
struct keyring *keyring_new(const char *token, int64_t window_s);
void keyring_free(struct keyring *kr);
/* Who sent conn's request (its Authorization: Bearer, X-API-Key or ?api_key
 * credential) into *who, and whether it may: a missing or wrong credential
 * (401), a key over its rate limit (429), or one without scope need (403),
 * said in *no (status 0: it may).  need 0: any credential that holds. */
void keyring_admit(struct keyring *kr, struct MHD_Connection *conn, unsigned need,
    struct mcp_http_caller *who, struct mcp_http_refusal *no);

#endif
