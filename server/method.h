/* What a method of the core server gets (server.c's methods[], the one table of
 * every method with the kinds of connection that may call it), and what the
 * methods share (method.c).  The handlers live where their subject does:
 * server.c (the connection, the console's views), admin.c (the admin
 * commands), approve.c (approvals), forwards.c, listen.c (HTTP listeners) and
 * net.c (network policies). */
#ifndef SBX_SERVER_METHOD_H
#define SBX_SERVER_METHOD_H

#include <stdint.h>
#include <cjson/cJSON.h>

#include "core/core.h"
#include "lib/err.h"
#include "mcp/mcp.h"

/* The kinds of caller, as bits of a method's set.  A connection's hello names
 * its kind; a console's PTY connection (kind "shell") is the console's. */
#define KIND_CONSOLE	0x1u	/* the console */
#define KIND_CLI	0x2u	/* the admin commands, `serve --listen`, scripts */
#define KIND_MCP	0x4u	/* an agent: the --mcp bridge, an HTTP MCP session */
#define KIND_REST	0x8u	/* the REST API's clients (its routes run tools) */

struct admin;
struct approvals;
struct listen;

/* One request to a method, answered on s (mcp_session_reply or _reply_error,
 * with id). */
struct srv_call {
	struct core		*core;
	struct approvals	*ap;
	struct mcp_session	*s;
	const cJSON		*id;
	const cJSON		*params;
	const char		*name;		/* the client's, from its hello */
	int			 fd;		/* the connection's socket */
	struct admin		*admin;		/* the connection's admin state */
	struct listen		**listen;	/* its HTTP listener (NULL: none) */
	void			*conn;		/* server.c's own */
};

typedef void srv_method_fn(struct srv_call *c);

/* Answer c with the core's error e (-32010, data {code, reason, hint}). */
void srv_reply_err(struct srv_call *c, const struct sbx_err *e);
/* Answer c with invalid params (-32602) saying msg. */
void srv_invalid(struct srv_call *c, const char *msg);
/* An integer parameter in [min, max], def when absent or null; -2 when not
 * valid. */
int64_t srv_int_param(const cJSON *params, const char *name, int64_t min, int64_t max,
    int64_t def);
/* The kinds of bits as a JSON array of their names ("console", "cli", "mcp",
 * "rest"). */
cJSON *srv_kinds_json(unsigned bits);
/* Refuse method, which callers of kinds may call, to a caller of kind bit
 * (who names it in the log): what the method is for, and for an agent what it
 * may do instead; the console hears of it (client.refused). */
void srv_refuse(struct core *c, struct mcp_session *s, const cJSON *id, const char *method,
    unsigned kinds, unsigned bit, const char *who);

#endif
