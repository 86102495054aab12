/* What the REST files share (rest.c: requests, replies, the journal and the
 * gate; rest-exec.c; rest-data.c: files, archives, logs, events; rest-images.c:
 * the image store; rest-compat.c: the /exec/SESSION routes). */
#ifndef SBX_SERVER_REST_INT_H
#define SBX_SERVER_REST_INT_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/keys/keys.h"
#include "lib/buf.h"
#include "server/keyring.h"
#include "server/rest.h"

#define REST_JSON_MAX	(16u << 20)	/* a JSON body */
#define REST_FILE_MAX	(64u << 20)	/* a file's content, either way */
#define REST_ARCHIVE_MAX (512u << 20)	/* an uploaded archive */

struct rest_exec;
struct rest_sess;

struct rest {
	struct core		*core;
	struct approvals	*ap;
	struct keyring		*keys;		/* who may: the token and the API keys */
	pthread_mutex_t		 mu;		/* everything below */
	pthread_cond_t		 cv;
	struct rest_exec	*execs;		/* streamed execs running */
	uint64_t		 next_id;	/* request and exec numbers */
	struct rest_sess	*sessions;	/* /exec/SESSION */
	int			 stopping;
	pthread_t		 reaper;
	int			 reaper_started;
};

struct rest_req {
	struct rest		*r;
	struct MHD_Connection	*conn;
	struct buf		 body;
	int			 too_big;
	size_t			 cap;
	uint64_t		 received;	/* body bytes, kept or not */
	char			 path[1024];	/* the URL path, decoded */
	const char		*seg[8];	/* its segments (in segbuf) */
	int			 nseg;
	char			 segbuf[1024];
	const char		*method;
	struct mcp_http_caller	 who;		/* its credential's */
};

/* --- replies (rest.c) ---------------------------------------------------- */

enum MHD_Result rest_reply(struct MHD_Connection *conn, unsigned status,
    const char *ctype, const char *body, size_t len);
/* Answer o (taken) as JSON. */
enum MHD_Result rest_json(struct MHD_Connection *conn, unsigned status, cJSON *o);
/* {error: {code, message, hint}} with the HTTP status of code. */
enum MHD_Result rest_error(struct MHD_Connection *conn, const struct sbx_err *e);
enum MHD_Result rest_fail(struct MHD_Connection *conn, enum sbx_errcode code,
    const char *hint, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
unsigned rest_status(const struct sbx_err *e);
/* A query argument, or NULL. */
const char *rest_query(struct rest_req *rq, const char *name);
/* "true"/"1" 1, "false"/"0" 0, absent def, anything else -1. */
int rest_query_bool(struct rest_req *rq, const char *name, int def);
/* The body as a JSON object (an empty body: {}); NULL with e filled. */
cJSON *rest_body_object(struct rest_req *rq, struct sbx_err *e);
/* 1 when the client hung up (it closed its connection). */
int rest_conn_gone(struct MHD_Connection *conn);

/* --- the journal and the gate (rest.c) ----------------------------------- */

struct rest_op {
	struct core	*core;		/* not r: a stream may outlive the listener */
	const char	*tool;
	char		 sandbox[80];
	cJSON		*args;		/* as the journal shows them */
	int64_t		 t0;
	uint64_t	 id;
	struct mcp_call	*call;
	char		 key_id[KEY_ID_LEN + 1];	/* the caller's API key, or "" */
	char		 key_name[KEY_NAME_MAX + 1];
};

/* A call begins: tool.started in the journal (client "rest"), then the
 * approval gate.  -1 with e when the gate refused it (journalled). */
int rest_op_begin(struct rest_op *op, struct rest *r, const char *tool,
    const char *sandbox, const cJSON *args, struct sbx_err *e);
/* It ended (rc < 0: with e): tool.finished. */
void rest_op_end(struct rest_op *op, int rc, const struct sbx_err *e);
/* Run MCP tool name with args (sandbox_id added when sandbox is not NULL),
 * checked against its input schema, journalled and gated; a client that hangs
 * up cancels it.  0 with *out its structured result, or -1 with e. */
int rest_tool(struct rest *r, struct MHD_Connection *conn, const char *tool,
    const char *sandbox, cJSON *args, cJSON **out, struct sbx_err *e);

/* The caller of the request this thread answers (NULL: done): the journal
 * names its key, and the core calls of the thread act for it (core_act_for). */
void rest_act_for(const struct mcp_http_caller *who);

/* --- the routes (server/rest-routes.c's table) ------------------------------ */

/* A route's handler: rq's segments are its path's, rq->body what was sent. */
typedef enum MHD_Result rest_route_fn(struct rest_req *rq);
/* Answer rq with fn, acting for its caller; a held call is cancelled when the
 * client hangs up. */
enum MHD_Result rest_answer(struct rest_req *rq, rest_route_fn *fn);

/* rest.c: the document, the sandboxes, their forwards */
rest_route_fn rest_openapi_get, rest_sandboxes_list, rest_sandboxes_create,
    rest_sandbox_get, rest_sandbox_destroy, rest_sandbox_suspend, rest_sandbox_resume,
    rest_forwards_list, rest_forward_start, rest_forward_stop;
/* rest-exec.c: commands */
rest_route_fn rest_exec, rest_execs, rest_exec_cancel;
void rest_exec_cancel_all(struct rest *r);
/* rest-data.c: files, archives, logs, events */
rest_route_fn rest_files_list, rest_files_delete, rest_files_stat, rest_file_get,
    rest_file_put, rest_archive_get, rest_archive_put, rest_logs, rest_events;
/* rest-images.c: the image store */
rest_route_fn rest_images_list, rest_images_pull, rest_images_rm, rest_images_gc;
/* rest-compat.c: Agent Sandbox's /exec/SESSION routes and /ready */
rest_route_fn rest_sessions, rest_templates, rest_session_end, rest_session_execute,
    rest_session_write, rest_session_read, rest_session_files, rest_ready;
void rest_compat_start(struct rest *r);
void rest_compat_stop(struct rest *r);
/* rest-keys.c: Agent Sandbox's /admin/keys */
rest_route_fn rest_keys_add, rest_keys_list, rest_keys_revoke, rest_keys_rotate,
    rest_keys_rm;

/* The OpenAPI document (rest.c, embedded at build time). */
extern const char rest_openapi[];
extern const unsigned rest_openapi_len;

/* A response to conn whose body a thread of its own writes: fn(arg, fd,
 * stop) writes to fd until done or until *stop turns non-zero (the client
 * went away), then returns; fd is closed after it; freefn(arg) once both
 * ends are done.  NULL on failure (freefn has run). */
struct MHD_Response *rest_stream(struct MHD_Connection *conn,
    void (*fn)(void *arg, int fd, volatile int *stop), void *arg, void (*freefn)(void *arg));

#endif
