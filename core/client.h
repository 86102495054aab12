/* A client of the core server (sbxtop serve): the console, the MCP bridge and the
 * admin commands talk to the one core through this.  The protocol is
 * newline-delimited JSON-RPC 2.0 on $XDG_RUNTIME_DIR/sbxtop/core.sock: the MCP
 * methods (initialize, tools/list, tools/call, ...) plus "sbxtop/" extensions
 * (sbxtop/hello, sbxtop/subscribe, sbxtop/approvals, sbxtop/approve, ...),
 * documented in docs/core-protocol.md. */
#ifndef SBX_CLIENT_H
#define SBX_CLIENT_H

#include <stdint.h>
#include <cjson/cJSON.h>

#include "core/err.h"

struct client;

/* Connect to the core server, starting one (fork and detach, as tmux does) when
 * no live socket exists and autostart is set; a stale socket is replaced.  The
 * hello names the client (kind: "console", "mcp", "cli") and checks versions: a
 * mismatch is an error that says which to restart. */
struct client *client_connect(const char *kind, int autostart, struct sbx_err *e);
void client_close(struct client *c);

/* Call a method and wait for its answer (thread-safe; several calls may be in
 * flight).  *result (may be NULL) gets the result object, caller frees; a
 * JSON-RPC error becomes e.  For tools/call, a result with isError is returned
 * as a result, not as e. */
int client_call(struct client *c, const char *method, cJSON *params, cJSON **result,
    struct sbx_err *e);

/* Core events (struct core_event as JSON: seq, time_ms, type, sandbox, data),
 * replayed from seq from and then live, each passed to fn on the client's reader
 * thread.  One subscription per client. */
typedef void (*client_event_fn)(const cJSON *event, void *arg);
int client_subscribe(struct client *c, uint64_t from, client_event_fn fn, void *arg,
    struct sbx_err *e);

/* Called on the reader thread when the connection to the core is lost (the core
 * died); the client then reconnects on the next call. */
void client_on_disconnect(struct client *c, void (*fn)(void *arg), void *arg);

#endif
