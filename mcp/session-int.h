/* What the MCP session's files share (server.c, journal.c, worker.c): a
 * session, a call, and the few functions one file offers the others. */
#ifndef SBX_MCP_SESSION_INT_H
#define SBX_MCP_SESSION_INT_H

#include <pthread.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "mcp/jsonrpc.h"
#include "mcp/mcp.h"
#include "mcp/tool.h"

#define INFLIGHT_MAX	64		/* requests on workers at once (a thread each) */

/* The revisions this server speaks, oldest first; what each added matters when
 * shaping answers for an older client. */
enum rev { REV_2024_11_05, REV_2025_03_26, REV_2025_06_18, REV_2025_11_25, REV_COUNT };

struct mcp_call {
	struct mcp_session	*s;
	struct mcp_call		*next;
	struct mcp_call		*qnext;		/* waiting for a worker */
	cJSON			*req;		/* the request (owned) */
	const cJSON		*id;		/* in req */
	const cJSON		*params;	/* in req, may be NULL */
	const char		*method;	/* in req */
	const cJSON		*token;		/* _meta.progressToken in req, or NULL */
	const struct mcp_tool	*tool;		/* tools/call */
	int			 cancelled;	/* atomic */
	pthread_mutex_t		 progress_mu;
	int64_t			 progress_ms;	/* when the last one went out */
	double			 progress;	/* its value */
	int			 progress_sent;
	/* A local call (no session): mcp_call_local_new. */
	struct core		*local_core;
	char			*local_client;
	int			 local_progress;	/* notifications asked for */
	char			*local_message;		/* the last one's message */
};

struct mcp_session {
	struct core		*core;
	char			*origin;
	mcp_send_fn		 send;
	void			*arg;
	pthread_mutex_t		 send_mu;

	pthread_mutex_t		 mu;		/* everything below */
	pthread_cond_t		 idle;		/* inflight dropped */
	int			 initialized;
	enum rev		 rev;
	char			*client;	/* set once at initialize, then read-only */
	char			*kind;		/* "mcp", "console", "cli" */
	mcp_ext_fn		 ext;		/* sbxtop/... methods, or NULL */
	void			*ext_arg;
	mcp_gate_fn		 gate;		/* the approval gate, or NULL */
	void			*gate_arg;
	int			 log_level;	/* atomic: index into levels */
	struct mcp_call		*calls;
	unsigned		 inflight;
	int			 closing;
	/* Workers that are done, to join: a thread must be joined, not left to
	 * end on its own, so its thread-local state (libcurl's, OpenSSL's) is
	 * freed before the process exits. */
	pthread_t		 done[INFLIGHT_MAX];
	unsigned		 ndone;
	/* Calls waiting for a worker, and the workers (kept between calls). */
	struct mcp_call		*qhead, **qtail;
	unsigned		 qlen;
	pthread_cond_t		 work;
	unsigned		 nworkers, nidle;
};

/* ---- server.c ----------------------------------------------------------- */

/* Send text (taken) as one message. */
void sess_send_text(struct mcp_session *s, char *text);
void sess_send_error(struct mcp_session *s, const cJSON *id, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Run the tool of call; NULL when the call was cancelled (no answer then). */
cJSON *sess_run_tool(struct mcp_call *call);
/* resources/list and resources/read: the result, or NULL with code and msg
 * set (code 0: no answer). */
cJSON *sess_resources_list(struct mcp_call *call, int *code, char *msg, size_t len);
cJSON *sess_resources_read(struct mcp_call *call, int *code, char *msg, size_t len);

/* ---- journal.c: the activity journal ------------------------------------ */

/* Arguments as the journal keeps them: file contents and stdin as their size,
 * env values hidden, long strings cut, deep or long structures bounded. */
cJSON *sess_journal_args(const cJSON *args);
/* The same for the approval gate, strings kept whole up to 8 KiB. */
cJSON *sess_gate_args(const cJSON *args);
/* A tool call began (tool.started) with args. */
void sess_journal_started(struct mcp_call *call, const cJSON *args);
/* A tool call that began at t0 ended with outcome ("ok", "error", "denied",
 * "cancelled") and message (may be NULL): tool.finished, and a debug log line
 * to the client. */
void sess_journal_finished(struct mcp_call *call, const cJSON *args, int64_t t0,
    const char *outcome, const char *message);

/* ---- worker.c: the worker threads --------------------------------------- */

/* Hand the request (taken) to a worker; answers -32000 when too many run. */
void sess_dispatch(struct mcp_session *s, struct jsonrpc_msg *m, const struct mcp_tool *tool);
/* Join the workers that are done; with s->mu held. */
void sess_reap_workers(struct mcp_session *s);

#endif
