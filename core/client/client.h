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

#include "lib/err.h"

struct client;

/* JSON-RPC error codes of the sbxtop/... methods. */
#define CLIENT_ERR_VERSION	(-32001)	/* the hello's version is not the server's */
#define CLIENT_ERR_CORE		(-32010)	/* a core error: data {code, reason, hint} */
#define CLIENT_ERR_HELLO	(-32011)	/* a method that needs sbxtop/hello first */
#define CLIENT_ERR_KIND		(-32012)	/* a method this kind of client may not call:
						 * data {kind, allowed: [kinds]} */

/* A core error on the wire: the JSON-RPC error's message is e->msg, its data
 * this object {code, reason (when there is one), hint}; caller frees.  The core
 * server answers with it, client_err_from_rpc reads it back. */
cJSON *client_err_data(const struct sbx_err *e);
/* A JSON-RPC error object from the core server as e; returns -1. */
int client_err_from_rpc(const cJSON *err, struct sbx_err *e);

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

/* Every other notification from the server (method, params), such as the
 * sbxtop/exec lines of sbxtop/follow, passed to fn on the thread that reads the
 * connection: the one whose call it came during, until a subscription, a
 * disconnect callback or a second call in flight starts the reader thread
 * (fn must not call client_* functions). */
typedef void (*client_notify_fn)(const char *method, const cJSON *params, void *arg);
void client_on_notify(struct client *c, client_notify_fn fn, void *arg);

/* Called on the reader thread when the connection to the core is lost (the core
 * died); the client then reconnects on the next call.  The new connection has
 * no subscription: call client_subscribe again (from another thread: fn and the
 * event callback must not call client_* functions themselves).  A subscriber
 * that fell behind gets an event of type "events.lost" ({from} in data): fetch
 * the state again. */
void client_on_disconnect(struct client *c, void (*fn)(void *arg), void *arg);

/* The core server's pid on the current connection (from its hello), 0 while
 * disconnected. */
int client_server_pid(struct client *c);

/* A PTY in sandbox key relayed by the core server (sbxtop/pty): a connection of
 * its own, after the hello (kind "shell") and the server's answer, carrying the
 * agent's PTY frames ([type][u32 length][payload], docs/agent-api.md) both
 * ways; it closes when the shell ends.  command NULL: a login shell.  A
 * blocking socket (caller closes), or -1 with e. */
int client_pty_open(const char *key, int cols, int rows, const char *command,
    struct sbx_err *e);

/* The lower layer, for the MCP bridge and `sbxtop serve --stop`: a connected
 * socket (close-on-exec) after the hello (kind NULL: no hello), starting the
 * server first when autostart is set and none answers.  -1 with e. */
int client_connect_fd(const char *kind, int autostart, struct sbx_err *e);
/* Extra arguments for an autostarted server, put before "serve" (the global
 * flags the user gave: --approve all, --log-level debug); argv NULL-terminated,
 * kept as given (not copied). */
void client_set_server_args(const char *const *argv);
/* The result budget (the mcp_budget option) the hello of this process's MCP
 * connections asks the core server for; 0 (unset): the server's own. */
void client_set_mcp_budget(int64_t budget);
/* This process's config_env_digest (core/config.h), for client_env_matches. */
void client_set_env_digest(uint64_t digest);
/* 1 when the server c talks to runs with the configuration and environment
 * this process has (its hello's env_digest equals the one set), or when none
 * was set: then a command would run there as it would here. */
int client_env_matches(struct client *c);
/* The socket's path (caller frees); NULL with e. */
char *client_socket_path(struct sbx_err *e);

#endif
