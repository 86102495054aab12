/* MCP over HTTP (sbxtop serve --listen).  Streamable HTTP at /mcp: POST
 * carries one JSON-RPC message and is answered with JSON or an SSE stream, GET
 * with Mcp-Session-Id opens the session's stream of server-initiated messages
 * and DELETE ends the session.  The HTTP+SSE transport of 2024-11-05 beside it:
 * GET /mcp without a session opens a session and its event stream, whose first
 * event (endpoint) names /mcp/messages?mcpSessionId=ID, where each message is
 * POSTed (202) and answered on the stream; the session ends with the stream.
 * Plus /health and /metrics on the same listener.  Every MCP session is an
 * mcp_session (mcp.h) on the given core. */
#ifndef SBX_MCP_HTTP_H
#define SBX_MCP_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"
#include "core/keys/keys.h"
#include "lib/err.h"

struct mcp_http;

/* Listen on listen_addr ("127.0.0.1:8080", "localhost:0", "0.0.0.0:8080"; port 0
 * picks a free one) and serve on threads of its own.  Every request but /health
 * needs the token ("Authorization: Bearer TOKEN", "X-API-Key: TOKEN" or
 * ?api_key=TOKEN); token NULL turns that off (test-only: the conformance suite
 * cannot send one).  NULL with e on failure. */
struct mcp_http *mcp_http_start(struct core *c, const char *listen_addr, const char *token,
    struct sbx_err *e);
/* Who sent a request, as the listener's host decided from its credential
 * (struct mcp_http_router's admit). */
struct mcp_http_caller {
	char		 key_id[KEY_ID_LEN + 1];	/* an API key's id; "": the token */
	char		 key_name[KEY_NAME_MAX + 1];	/* its name */
	unsigned	 scopes;	/* KEY_* of core/keys/keys.h */
};
/* Why a request's head is refused: an HTTP status (403, 401, 429; 0: it is
 * not) with what to say (seed 2's words: "API key required", "Invalid API
 * key", "Missing required scope: exec", "Rate limit exceeded"). */
struct mcp_http_refusal {
	unsigned	 status;
	char		 message[160];
	int		 retry_after;	/* 429: seconds (the Retry-After header) */
	int		 key_given;	/* 401: a credential came, and was wrong */
};
/* The same, with on_session(arg, s, who) called for each new session before
 * its first message (the core server sets its approval gate and its key
 * there): given at the start, so no session can come before it.  A session
 * belongs to the credential that opened it: a request with another is told
 * the session does not exist. */
struct mcp_session;
typedef void (*mcp_http_session_fn)(void *arg, struct mcp_session *s,
    const struct mcp_http_caller *who);
struct mcp_http *mcp_http_start_with(struct core *c, const char *listen_addr,
    const char *token, mcp_http_session_fn on_session, void *arg, struct sbx_err *e);
/* The listener's host: who may do what (admit), and every path the listener
 * does not serve itself (fn: all but /mcp, /mcp/messages, /health and
 * /metrics; the core server's REST routes). */
struct MHD_Connection;
struct mcp_http_router {
	/* Every request's head, after this listener's Host and Origin check
	 * (forbidden: it failed; *no is filled then): who sent it (*who) and
	 * whether the route table lets it (no->status 0), from its credential
	 * (the token or an API key) and its rate limit.  Without admit: the
	 * token, every scope. */
	void	(*admit)(void *arg, struct MHD_Connection *conn, const char *url,
		    const char *method, int forbidden, struct mcp_http_caller *who,
		    struct mcp_http_refusal *no);
	/* libmicrohttpd's access handler (it returns an enum MHD_Result) with
	 * a per-request pointer of its own (*ctx starts NULL), with admit's
	 * outcome: fn answers a refusal in its own shape.  done(arg, ctx) when
	 * the request ends. */
	int	(*fn)(void *arg, struct MHD_Connection *conn, const char *url,
		    const char *method, const char *upload, size_t *upload_size, void **ctx,
		    const struct mcp_http_caller *who, const struct mcp_http_refusal *no);
	void	(*done)(void *arg, void *ctx);
	void	*arg;
};
/* mcp_http_start_with, with router rt (copied; NULL: none). */
struct mcp_http *mcp_http_start_routed(struct core *c, const char *listen_addr,
    const char *token, mcp_http_session_fn on_session, void *arg,
    const struct mcp_http_router *rt, struct sbx_err *e);
/* fn for each live session, with when it began (wall clock ms); called with
 * the listener's lock held, so fn must be quick and call nothing of h. */
void mcp_http_sessions(struct mcp_http *h, void (*fn)(void *arg, const struct mcp_session *s,
    int64_t since_ms), void *arg);
/* The port bound (the one chosen when asked for port 0). */
int mcp_http_port(const struct mcp_http *h);
/* "http://127.0.0.1:PORT/mcp" (valid until mcp_http_stop). */
const char *mcp_http_url(const struct mcp_http *h);
/* Close the listener, end every session (their requests in flight are
 * cancelled) and free h. */
void mcp_http_stop(struct mcp_http *h);

/* Prometheus metrics of core c (mcp/metrics.c): tool calls and exec durations
 * are counted from the core's events from mcp_metrics_new on. */
struct mcp_metrics;
struct mcp_metrics *mcp_metrics_new(struct core *c);
void mcp_metrics_free(struct mcp_metrics *m);
/* The exposition text (caller frees); sessions is the MCP session gauge. */
char *mcp_metrics_text(struct mcp_metrics *m, unsigned sessions);

#endif
