/* The MCP server: JSON-RPC 2.0 sessions over any transport.  Only mcp/ knows MCP
 * wire shapes; tools call core/ (core.h) and nothing else.
 *
 * A transport feeds a session one message at a time (a stdio line, an HTTP POST
 * body) and gives it a send callback for everything the session says (responses,
 * notifications, server requests).  Requests run on worker threads so several are
 * in flight at once: a slow sandbox_exec never holds up ping or sandbox_list. */
#ifndef SBX_MCP_H
#define SBX_MCP_H

#include <stddef.h>

#include "core/core.h"

#define MCP_LINE_MAX (16u << 20)	/* largest message accepted */

struct mcp_session;

/* Called with one complete JSON-RPC message (no trailing newline), serialized:
 * never from two threads at once for the same session. */
typedef void (*mcp_send_fn)(void *arg, const char *msg, size_t len);

/* A session answering on core c; origin names the transport ("stdio", "http")
 * for the activity journal. */
struct mcp_session *mcp_session_new(struct core *c, const char *origin, mcp_send_fn send,
    void *arg);
/* One incoming message.  Malformed input gets its JSON-RPC error through send;
 * nothing here blocks for long (requests go to workers). */
void mcp_session_input(struct mcp_session *s, const char *msg, size_t len);
/* The transport is gone: cancel every request in flight (an exec is killed),
 * wait for the workers, free the session. */
void mcp_session_close(struct mcp_session *s);
/* The id of the request the calling thread is working on (inside a tool call or
 * a resource read, on its worker), or NULL: what a transport needs to send a
 * request's notifications on that request's own stream. */
const cJSON *mcp_related_request(void);
/* The client's name and version from initialize ("claude-code 1.2"), or NULL. */
const char *mcp_session_client(const struct mcp_session *s);

/* A tool call made outside any session (tests, in-process callers): progress is
 * counted and its last message kept instead of being sent. */
struct mcp_call;
struct mcp_call *mcp_call_local_new(struct core *c, const char *client);
void mcp_call_local_free(struct mcp_call *call);
/* As if notifications/cancelled arrived (any thread). */
void mcp_call_local_cancel(struct mcp_call *call);
/* How many progress notifications were asked for; the last message (valid until
 * the next call on it) in *last_message when not NULL. */
int mcp_call_local_progress(struct mcp_call *call, const char **last_message);

/* Serve one session on newline-delimited stdio until in_fd closes; 0 on a clean
 * end.  stdout carries only protocol. */
int mcp_serve_stdio(struct core *c, int in_fd, int out_fd);

#endif
