/* What the MCP session's files share (server.c, modern.c, journal.c,
 * worker.c, task.c, resource-logs.c): a session, a call, the tables of
 * methods, and the few functions one file offers the others. */
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
 * shaping answers for an older client.  The legacy ones open with initialize;
 * 2026-07-28 (modern) carries its version, client and capabilities in each
 * request's _meta. */
enum rev { REV_2024_11_05, REV_2025_03_26, REV_2025_06_18, REV_2025_11_25, REV_2026_07_28,
	REV_COUNT };
#define REV_LEGACY_LAST	REV_2025_11_25
#define REV_MODERN	REV_2026_07_28
#define HAS_ANNOTATIONS(r)	((r) >= REV_2025_03_26)	/* and progress messages */
#define HAS_STRUCTURED(r)	((r) >= REV_2025_06_18)	/* outputSchema, titles */
extern const char *const sess_rev_names[REV_COUNT];

#define META_VERSION	"io.modelcontextprotocol/protocolVersion"
#define META_CLIENT	"io.modelcontextprotocol/clientInfo"
#define META_CAPS	"io.modelcontextprotocol/clientCapabilities"
#define META_LOGLEVEL	"io.modelcontextprotocol/logLevel"
#define META_SERVER	"io.modelcontextprotocol/serverInfo"
#define META_SUBSCRIPTION "io.modelcontextprotocol/subscriptionId"
#define EXT_TASKS	"io.modelcontextprotocol/tasks"

/* Client capabilities a request declared (modern: in its _meta). */
enum { CAP_TASKS = 1 << 0, CAP_ELICITATION = 1 << 1, CAP_SAMPLING = 1 << 2 };

struct sess_method;

/* What a request says about itself: for a legacy one, what its session's
 * initialize said; for a modern one, its own _meta. */
struct mcp_reqinfo {
	enum rev	 rev;
	int		 modern;
	const struct sess_method *method;	/* modern: its row (the result's cache hints) */
	char		 client[160];	/* "name version", "" when unnamed */
	int		 log_level;	/* modern: the least level sent, -1: none */
	unsigned	 caps;		/* CAP_* */
	size_t		 budget;	/* the session's result budget (mcp/budget.h) */
};

struct mcp_task;
struct sess_listen;
struct mcp_call;
struct mcp_session;

/* An error a method answers: code 0 when there is none to send (the method
 * answered itself, handed the request on, or it was cancelled); data (may be
 * NULL) is taken. */
struct sess_fault {
	int		 code;
	char		 msg[512];
	cJSON		*data;
};

/* A method answered on the transport's thread, in order: its result, or NULL
 * with f.  ri is NULL for a legacy request (the session's). */
typedef cJSON *sess_answer_fn(struct mcp_session *s, struct jsonrpc_msg *m,
    const struct mcp_reqinfo *ri, struct sess_fault *f);
/* A method run on a worker (worker.c): its result, or NULL with f. */
typedef cJSON *sess_work_fn(struct mcp_call *call, struct sess_fault *f);

/* One row of a revision's table of methods, the one place a request of that
 * era is dispatched from: server.c's legacy_methods[] (the revisions that open
 * with initialize) and modern.c's sess_modern_methods[] (2026-07-28), each
 * ending with a row without a name. */
struct sess_method {
	const char	*name;
	sess_answer_fn	*answer;	/* in line, or */
	sess_work_fn	*work;		/* on a worker; neither: removed (gone says why) */
	unsigned	 flags;		/* SM_* */
	int		 ttl_ms;	/* modern: a complete result's ttlMs, -1 none */
	const char	*gone;		/* modern: what replaced a method it removed */
};
#define SM_ANY_TIME	0x1u	/* legacy: before initialize too */
#define SM_MODERN_ONLY	0x2u	/* modern: no legacy session has it */
#define SM_TASKS	0x4u	/* modern: needs the tasks extension */
#define SM_PRIVATE	0x8u	/* modern: cacheScope private (the caller's own) */

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
	sess_work_fn		*work;		/* what the worker runs */
	struct mcp_reqinfo	 ri;
	/* What the call needs of its session, copied so that a task can outlive
	 * the session that started it (s is NULL then). */
	struct core		*core;
	char			*kind, *origin;
	char			*key_id, *key_name;	/* the session's API key, or NULL */
	int			 key_all;		/* it sees every sandbox */
	mcp_gate_fn		 gate;
	void			*gate_arg;
	struct mcp_task		*task;		/* the task running this call, or NULL */
	int			 cancelled;	/* atomic */
	pthread_mutex_t		 progress_mu;
	int64_t			 progress_ms;	/* when the last one went out */
	double			 progress;	/* its value */
	int			 progress_sent;
	char			*text;		/* mcp_call_set_text's, or NULL */
	/* A local call (no session): mcp_call_local_new. */
	struct core		*local_core;
	char			*local_client;
	size_t			 local_budget;		/* 0: MCP_BUDGET_LOCAL */
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
	char			*client;	/* set once (sess_name_client), then read-only */
	char			*kind;		/* "mcp", "console", "cli" */
	char			*key_id, *key_name;	/* mcp_session_set_key's, or NULL */
	unsigned		 key_scopes;
	mcp_ext_fn		 ext;		/* sbxtop/... methods, or NULL */
	void			*ext_arg;
	mcp_gate_fn		 gate;		/* the approval gate, or NULL */
	void			*gate_arg;
	int			 log_level;	/* atomic: index into levels */
	size_t			 budget;	/* atomic: the result budget (mcp/budget.h) */
	struct mcp_call		*calls;
	struct sess_listen	*listens;	/* subscriptions/listen streams open */
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
/* The row of table (ending with a nameless row) for method, or NULL. */
const struct sess_method *sess_method_find(const struct sess_method *table,
    const char *method);
/* Answer m (taken when handed to a worker) by its row mt: in line, or queued to
 * a worker.  ri NULL: a legacy request. */
void sess_method_run(struct mcp_session *s, struct jsonrpc_msg *m,
    const struct sess_method *mt, const struct mcp_reqinfo *ri);
/* tools/call on a worker: the tool of call run; NULL when the call was
 * cancelled (no answer then). */
cJSON *sess_run_tool(struct mcp_call *call, struct sess_fault *f);
/* resources/list and resources/read on a worker (resource-logs.c). */
cJSON *sess_resources_list(struct mcp_call *call, struct sess_fault *f);
cJSON *sess_resources_read(struct mcp_call *call, struct sess_fault *f);

/* The budget params._meta sets (MCP_BUDGET_META) into *budget, left as it is
 * when absent; -1 with msg when it is not an integer within the limits. */
int sess_meta_budget(const cJSON *params, size_t *budget, char *msg, size_t len);
/* The resource sbx://images (resource-images.c): its entry appended to a
 * resources/list array; its read, or NULL (code 0: not that uri). */
void mcp_images_resource(struct mcp_call *call, cJSON *resources);
cJSON *mcp_images_read(struct mcp_call *call, const char *uri, int *code, char *msg,
    size_t len);

/* Name the session's client, unless it has a name already. */
void sess_name_client(struct mcp_session *s, const char *client);
/* A legacy request's info: the session's. */
void sess_reqinfo_legacy(struct mcp_session *s, struct mcp_reqinfo *ri);
/* A tool's entry for tools/list as rev shows it; full: its whole output schema
 * and its input schema as checked (mcp_tool_input_schema), not as written and
 * lean (see lean_schema). */
cJSON *sess_tool_json(const struct mcp_tool *t, enum rev rev, int full);
/* tools/list's result for a request with params (its _meta may ask for the
 * full schemas: MCP_SCHEMAS_META "full"). */
cJSON *sess_tools_list(const cJSON *params, enum rev rev);
#define MCP_SCHEMAS_META "sbxtop/schemas"
/* tools/call's checks (name, arguments) for request m: the tool, or NULL with
 * f. */
const struct mcp_tool *sess_tools_call_check(const struct jsonrpc_msg *m,
    struct sess_fault *f);
/* resources/templates/list's result as rev shows it (resource-logs.c). */
cJSON *sess_resource_templates(enum rev rev);
/* The server's capabilities object for rev. */
cJSON *sess_capabilities(enum rev rev);
extern const char sess_instructions[];
/* The least log level a notifications/message goes out at, for a name
 * ("debug" ... "emergency"); -1 for another name. */
int sess_level_index(const char *name);
/* Free a call. */
void sess_call_free(struct mcp_call *call);
/* Fill call's copies of what it needs of s (core, kind, origin, key, gate). */
void sess_call_bind(struct mcp_call *call, struct mcp_session *s);

/* ---- session-key.c: the API key a session acts for ---------------------- */

/* Copy s's key into call; free the call's copy. */
void sess_key_bind(struct mcp_call *call, const struct mcp_session *s);
void sess_key_unbind(struct mcp_call *call);
/* The calls of this thread act for call's key from now (core_act_for), or
 * (call NULL) for nobody in particular again. */
void sess_act_for(const struct mcp_call *call);
/* Who asks, as the approval gate shows it: the MCP client, and the key's name. */
void sess_gate_client(const struct mcp_call *call, char *buf, size_t len);

/* ---- modern.c: requests of revision 2026-07-28 -------------------------- */

/* Serve m if it is a modern request (its _meta names a protocol version, or it
 * is server/discover): 1 when handled (answered, or handed to a worker or a
 * task), 0 when it is for the legacy path. */
int sess_modern_request(struct mcp_session *s, struct jsonrpc_msg *m);
/* The methods of 2026-07-28, and the ones it removed. */
extern const struct sess_method sess_modern_methods[];
/* A modern result of method mt (may be NULL): resultType, the server's
 * identity, and for the cacheable methods ttlMs and cacheScope. */
void sess_modern_result(cJSON *r, const struct sess_method *mt);
/* notifications/cancelled for request id: end its subscription, if it is one;
 * 1 when it was. */
int sess_listen_cancel(struct mcp_session *s, const cJSON *id);
/* End every subscription of s (the session is closing). */
void sess_listen_close_all(struct mcp_session *s);

/* ---- task.c: the io.modelcontextprotocol/tasks extension ----------------- */

/* Run the call of tool for request m (taken) as a task, answering m with its
 * CreateTaskResult. */
void sess_task_start(struct mcp_session *s, struct jsonrpc_msg *m, const struct mcp_tool *t,
    const struct mcp_reqinfo *ri);
/* tasks/get, tasks/update, tasks/cancel (modern.c's rows). */
sess_answer_fn sess_task_get, sess_task_update, sess_task_cancel;
/* The DetailedTask of task id as tasks/get gives it, or NULL when unknown. */
cJSON *sess_task_json(const char *id);
/* A task's call reported progress: message (may be NULL) is what is new. */
void sess_task_progress(struct mcp_task *t, const char *message);
/* The task's id. */
const char *sess_task_id(const struct mcp_task *t);
/* The approval gate holds the task's call: say so in its status. */
void sess_task_held(struct mcp_task *t, const char *why);

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

/* Hand the request (taken) to a worker, which runs work (with tool, for
 * tools/call); answers -32000 when too many run.  ri NULL: a legacy request
 * (the session's info). */
void sess_dispatch(struct mcp_session *s, struct jsonrpc_msg *m, const struct mcp_tool *tool,
    const struct mcp_reqinfo *ri, sess_work_fn *work);
/* Set what mcp_related_request() answers on this thread (id, or NULL). */
void sess_set_related(const cJSON *id);
/* Join the workers that are done; with s->mu held. */
void sess_reap_workers(struct mcp_session *s);

#endif
