/* The door of the HTTP listener (mcp/http.c): what stands between its
 * listening socket and libmicrohttpd's thread per connection, so that
 * clients who send nothing cannot take the threads the others need.
 *
 * A new connection waits in a lobby (one thread for all, no thread of its
 * own) until the head of its first request has come, and only then goes to
 * libmicrohttpd.  There, a connection that never showed the token is closed
 * once its request is answered, and one that did is closed after the idle
 * timeout between requests; nothing is timed while a request runs (a tool
 * call, an SSE stream). */
#ifndef SBX_MCP_HTTP_DOOR_H
#define SBX_MCP_HTTP_DOOR_H

#include <stdint.h>
#include <microhttpd.h>

#include "lib/err.h"

struct http_door;

/* A door for lfd (listening; taken: closed by http_door_stop): a request head
 * must come within header_ms of the accept (and of the end of a request, on
 * a connection that never showed the token), a connection that did show it
 * may idle idle_ms between requests.  NULL with e. */
struct http_door *http_door_new(int lfd, int64_t header_ms, int64_t idle_ms,
    struct sbx_err *e);
/* libmicrohttpd's MHD_OPTION_NOTIFY_CONNECTION, with the door as its cls. */
void http_door_notify(void *cls, struct MHD_Connection *conn, void **socket_ctx,
    enum MHD_ConnectionNotificationCode code);
/* Open the door: connections go to d (started with MHD_USE_NO_LISTEN_SOCKET,
 * MHD_USE_ITC and http_door_notify).  -1 with e. */
int http_door_open(struct http_door *dr, struct MHD_Daemon *d, struct sbx_err *e);
/* The head of a request on conn has come (the access handler's first call);
 * trusted: it showed the token.  No deadline runs until http_door_done. */
void http_door_request(struct http_door *dr, struct MHD_Connection *conn, int trusted);
/* The request on conn ended (libmicrohttpd's request-completed callback). */
void http_door_done(struct http_door *dr, struct MHD_Connection *conn);
/* Close the door: no more accepts, the lobby's connections closed.  Then stop
 * the daemon, then free the door. */
void http_door_stop(struct http_door *dr);
void http_door_free(struct http_door *dr);

#endif
