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
/* The client's name and version ("claude-code 1.2"), from initialize or the first
 * 2026-07-28 request that names it, or NULL. */
const char *mcp_session_client(const struct mcp_session *s);

/* A tool call made outside any session (tests, in-process callers): progress is
 * counted and its last message kept instead of being sent. */
struct mcp_call;
struct mcp_call *mcp_call_local_new(struct core *c, const char *client);
void mcp_call_local_free(struct mcp_call *call);
/* The call's result budget (mcp_call_budget), within MCP_BUDGET_MIN and
 * MCP_BUDGET_LOCAL. */
void mcp_call_local_set_budget(struct mcp_call *call, size_t budget);
/* As if notifications/cancelled arrived (any thread). */
void mcp_call_local_cancel(struct mcp_call *call);
/* How many progress notifications were asked for; the last message (valid until
 * the next call on it) in *last_message when not NULL. */
int mcp_call_local_progress(struct mcp_call *call, const char **last_message);

/* Cancel every task (io.modelcontextprotocol/tasks) still running and wait
 * for them: before the core they run on goes away. */
void mcp_tasks_shutdown(void);

/* Serve one session on newline-delimited stdio until in_fd closes; 0 on a clean
 * end.  stdout carries only protocol. */
int mcp_serve_stdio(struct core *c, int in_fd, int out_fd);
/* `sbxtop --mcp` without --standalone: relay stdio to the core server (started
 * when none runs) after a hello of kind "mcp", so the session lives in the core.
 * A core that dies fails the requests in flight; the next message goes to a new
 * core, whose session is initialized as the client did.  Returns the exit
 * status once in_fd closes and the core has ended the session. */
int mcp_bridge_stdio(int in_fd, int out_fd);
/* Feed s the newline-delimited messages read from fd until end of file (0) or a
 * read error (-1).  A line over MCP_LINE_MAX is answered with an error and
 * skipped to its end; a last line without its newline still counts. */
int mcp_session_read_fd(struct mcp_session *s, int fd);

/* --- hooks for a host of sessions (the core server, server/) -------------- */

/* The i-th of the requests a session answers (both protocol eras' tables),
 * NULL past the last: the core server's methods table gives them the kinds of
 * client that may call them. */
const char *mcp_method_name(size_t i);

/* Every request, and every notification whose method starts with "sbxtop/",
 * goes to fn first (on the transport's thread, in order): fn returns 1 when it
 * takes the message (a method of its own, or a refusal), 0 to leave a request
 * to the session.  fn answers a request (id not NULL) with mcp_session_reply or
 * mcp_session_reply_error, at once or later from any thread.  Without fn, an
 * "sbxtop/" method is "method not found".  Set before the first input. */
typedef int (*mcp_ext_fn)(void *arg, struct mcp_session *s, const cJSON *id,
    const char *method, const cJSON *params);
void mcp_session_set_extension(struct mcp_session *s, mcp_ext_fn fn, void *arg);
/* Answer request id with result (taken; NULL: {}), or with an error (id NULL:
 * an error with a null id, for a request whose id could not be read; data,
 * taken, may be NULL). */
void mcp_session_reply(struct mcp_session *s, const cJSON *id, cJSON *result);
void mcp_session_reply_error(struct mcp_session *s, const cJSON *id, int code,
    const char *message, cJSON *data);
/* A notification (params taken, may be NULL) through the session's sender. */
void mcp_session_notify(struct mcp_session *s, const char *method, cJSON *params);

/* The budget of the session's tool results (mcp/budget.h) unless its
 * initialize or a request says otherwise: what the connection asked for (the
 * core server's hello); 0 leaves it as it is. */
void mcp_session_set_budget(struct mcp_session *s, size_t budget);

/* What kind of client holds the session ("mcp", "console", "cli"), for the
 * activity journal; "mcp" unless set.  Set before the first input. */
void mcp_session_set_kind(struct mcp_session *s, const char *kind);
/* The API key an HTTP session was opened with (core/keys/: its id, name and
 * scopes; id NULL: the listener's token, the operator's).  Its calls act for
 * the key on their workers (core_act_for: they see and make the key's
 * sandboxes only, unless its scopes hold admin; the transport does the same
 * around what it feeds in line), the journal names it, and so does the
 * approval gate.  Set before the first input (mcp/session-key.c). */
void mcp_session_set_key(struct mcp_session *s, const char *id, const char *name,
    unsigned scopes);
/* The scopes of the session's key (every one for a session without). */
unsigned mcp_session_scopes(const struct mcp_session *s);
/* The name of the session's key, or NULL. */
const char *mcp_session_key_name(const struct mcp_session *s);

/* The approval gate: called on a tool call's worker once its arguments are
 * valid, before the tool runs.  It may block (a human deciding); it should
 * return soon after mcp_gate_cancelled(g) becomes true.  1 runs the tool; 0
 * refuses it: the result is isError with the text left in why. */
struct mcp_gate {
	const char	*tool;
	unsigned	 hints;		/* MCP_* of mcp/tool.h */
	const cJSON	*arguments;	/* as the journal shows them (contents elided) */
	const char	*client;	/* the MCP client's name, or "unknown" */
	const char	*kind;
	const char	*origin;
	struct mcp_call	*call;
};
typedef int (*mcp_gate_fn)(void *arg, const struct mcp_gate *g, char *why, size_t len);
void mcp_session_set_gate(struct mcp_session *s, mcp_gate_fn fn, void *arg);
/* The call was cancelled (by the client, or its session is closing). */
int mcp_gate_cancelled(const struct mcp_gate *g);
/* The gate holds the call for a human: what (one line) tells the client so,
 * as a progress message, a log line, or a task's status. */
void mcp_gate_held(const struct mcp_gate *g, const char *what);

#endif
