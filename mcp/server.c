/* The MCP session (mcp.h): lifecycle, version negotiation, tools, resources,
 * logging, progress and cancellation.  Cheap requests (initialize, ping,
 * tools/list, ...) are answered on the transport's thread, in order; tool calls
 * and resource reads run on worker threads (worker.c), so a slow exec never holds
 * up a ping, and go into the activity journal (journal.c).  Every message goes
 * out whole through the one send callback, under a lock. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/log.h"
#include "lib/utf8.h"
#include "lib/util.h"
#include "mcp/budget.h"
#include "mcp/jsonrpc.h"
#include "mcp/mcp.h"
#include "mcp/schema.h"
#include "mcp/session-int.h"
#include "mcp/tool.h"
#include "mcp/tool-util.h"

#define PROGRESS_MS	100		/* at most 10 progress notifications a second */

const char *const sess_rev_names[REV_COUNT] = {
	"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28",
};
#define rev_names sess_rev_names

/* RFC 5424 severities as MCP names them, least severe first. */
static const char *const levels[] = {
	"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency",
};
#define LEVEL_DEFAULT 1	/* info */

const char sess_instructions[] =
	"sbxtop gives you disposable Linux sandboxes to run code in.  The flow: "
	"sandbox_create (keep the sandbox_id it returns; a name works too) -> "
	"sandbox_upload_dir or sandbox_write_file to put code in /workspace -> "
	"sandbox_exec to build and run it -> sandbox_read_file or sandbox_download to "
	"get results back -> sandbox_destroy, always, even after a failure.  Relative "
	"sandbox paths start at /workspace.  Servers and long jobs: sandbox_exec "
	"background:true, then sandbox_process_list and sandbox_process_kill; a server "
	"binds 0.0.0.0 and sandbox_port_forward reaches it from the host.  Every result "
	"fits a budget (20,000 characters unless set otherwise): its first lines say "
	"what it holds and what it left out.  Long output comes as its head and tail; "
	"the whole of it stays in the sandbox (sandbox_read_file with the path, offset "
	"and length the result names).  Lists come a page at a time with their total; "
	"pass next_cursor back as cursor for the next page.  An argument a tool's "
	"schema does not name is refused.  Sandboxes end at their deadline "
	"(sandbox_status tells the time left).  When a call fails, its message says "
	"what to do next; sandbox_list shows every sandbox.";


/* --- the tools' schemas, parsed once ------------------------------------ */

/* schemas_in: what a call's arguments are checked against, the tool's own
 * closed (additionalProperties false) for the tools of the table, whose schemas
 * leave that out (the instructions say it once); schemas_listed: as written,
 * for tools/list. */
static cJSON **schemas_in, **schemas_listed, **schemas_out;
static size_t ntools;
static pthread_once_t schemas_once = PTHREAD_ONCE_INIT;

static cJSON *
parse_schema(const struct mcp_tool *t, const char *text, const char *which)
{
	cJSON *o = text ? cJSON_Parse(text) : NULL;

	if (text != NULL && !cJSON_IsObject(o))
		fatal("tool %s: its %s schema is not a JSON object", t->name, which);
	return o;
}

/* Every tool the schemas are kept for: the table, then the test-only fixtures
 * (listed and callable only once mcp_tools_fixtures(1) was called). */
static const struct mcp_tool **all_tools;

static void
schemas_parse(void)
{
	size_t nfix = 0, nreal;

	while (mcp_tools[ntools] != NULL)
		ntools++;
	nreal = ntools;
	while (mcp_fixture_tools[nfix] != NULL)
		nfix++;
	all_tools = xcalloc(ntools + nfix + 1, sizeof *all_tools);
	for (size_t i = 0; i < ntools; i++)
		all_tools[i] = mcp_tools[i];
	for (size_t i = 0; i < nfix; i++)
		all_tools[ntools + i] = mcp_fixture_tools[i];
	ntools += nfix;
	schemas_in = xcalloc(ntools + 1, sizeof *schemas_in);
	schemas_listed = xcalloc(ntools + 1, sizeof *schemas_listed);
	schemas_out = xcalloc(ntools + 1, sizeof *schemas_out);
	for (size_t i = 0; i < ntools; i++) {
		schemas_listed[i] = parse_schema(all_tools[i], all_tools[i]->input_schema,
		    "input");
		schemas_out[i] = parse_schema(all_tools[i], all_tools[i]->output_schema,
		    "output");
		if (schemas_listed[i] == NULL)
			schemas_listed[i] = cJSON_Parse("{\"type\":\"object\"}");
		schemas_in[i] = cJSON_Duplicate(schemas_listed[i], 1);
		if (all_tools[i]->input_fill != NULL)
			all_tools[i]->input_fill(schemas_in[i]);
		if (i < nreal && !cJSON_HasObjectItem(schemas_in[i], "additionalProperties"))
			cJSON_AddFalseToObject(schemas_in[i], "additionalProperties");
	}
}

static size_t
tool_index(const struct mcp_tool *t)
{
	pthread_once(&schemas_once, schemas_parse);
	for (size_t i = 0; i < ntools; i++)
		if (all_tools[i] == t)
			return i;
	fatal("tool %s is not in mcp_tools", t->name);
}

const cJSON *
mcp_tool_input_schema(const struct mcp_tool *t)
{
	size_t i = tool_index(t);	/* first: it parses the schemas */

	return schemas_in[i];
}

int
sess_level_index(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(levels); i++)
		if (strcmp(name, levels[i]) == 0)
			return (int)i;
	return -1;
}

/* --- sending ------------------------------------------------------------ */

/* Send text (taken) as one message: every line a session writes passes here,
 * and none goes out over MCP_LINE_OUT_MAX (mcp_line_cut says what it cut). */
void
sess_send_text(struct mcp_session *s, char *text)
{
	size_t n = strlen(text);

	if (n > MCP_LINE_OUT_MAX) {
		char *cut = mcp_line_cut(text, n);
		free(text);
		if ((text = cut) == NULL)
			return;
		n = strlen(text);
	}
	pthread_mutex_lock(&s->send_mu);
	s->send(s->arg, text, n);
	pthread_mutex_unlock(&s->send_mu);
	free(text);
}

void
sess_send_error(struct mcp_session *s, const cJSON *id, int code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	sess_send_text(s, jsonrpc_error(id, code, msg, NULL));
}

static void
send_notification(struct mcp_session *s, const char *method, cJSON *params)
{
	sess_send_text(s, jsonrpc_notification(method, params));
}

/* --- the call API for tools (tool.h) ------------------------------------ */

struct core *
mcp_call_core(struct mcp_call *call)
{
	return call->core ? call->core : call->local_core;
}

const char *
mcp_call_client(struct mcp_call *call)
{
	if (call->local_client != NULL || call->local_core != NULL)
		return call->local_client;
	return call->ri.client[0] ? call->ri.client : NULL;
}

const char *
mcp_call_kind(struct mcp_call *call)
{
	if (call->local_client != NULL || call->local_core != NULL)
		return NULL;
	return call->kind;
}

void
sess_reqinfo_legacy(struct mcp_session *s, struct mcp_reqinfo *ri)
{
	memset(ri, 0, sizeof *ri);
	ri->rev = s->rev;
	ri->log_level = -1;
	ri->budget = __atomic_load_n(&s->budget, __ATOMIC_RELAXED);
	pthread_mutex_lock(&s->mu);
	if (s->client != NULL)
		snprintf(ri->client, sizeof ri->client, "%s", s->client);
	pthread_mutex_unlock(&s->mu);
}

void
sess_call_bind(struct mcp_call *call, struct mcp_session *s)
{
	call->core = s->core;
	call->kind = xstrdup(s->kind);
	call->origin = xstrdup(s->origin);
	sess_key_bind(call, s);
	call->gate = s->gate;
	call->gate_arg = s->gate_arg;
}

void
sess_call_free(struct mcp_call *call)
{
	pthread_mutex_destroy(&call->progress_mu);
	free(call->text);
	cJSON_Delete(call->req);
	free(call->kind);
	free(call->origin);
	sess_key_unbind(call);
	free(call);
}

struct mcp_call *
mcp_call_local_new(struct core *c, const char *client)
{
	struct mcp_call *call = xcalloc(1, sizeof *call);

	pthread_mutex_init(&call->progress_mu, NULL);
	call->local_core = c;
	call->local_client = client ? xstrdup(client) : NULL;
	return call;
}

void
mcp_call_local_free(struct mcp_call *call)
{
	if (call == NULL)
		return;
	pthread_mutex_destroy(&call->progress_mu);
	free(call->text);
	free(call->local_client);
	free(call->local_message);
	free(call);
}

void
mcp_call_local_cancel(struct mcp_call *call)
{
	__atomic_store_n(&call->cancelled, 1, __ATOMIC_RELAXED);
}

int
mcp_call_local_progress(struct mcp_call *call, const char **last_message)
{
	int n;

	pthread_mutex_lock(&call->progress_mu);
	n = call->local_progress;
	if (last_message != NULL)
		*last_message = call->local_message;
	pthread_mutex_unlock(&call->progress_mu);
	return n;
}

void
mcp_call_set_text(struct mcp_call *call, char *text)
{
	free(call->text);
	call->text = text;
}

int
mcp_call_cancelled(struct mcp_call *call)
{
	return __atomic_load_n(&call->cancelled, __ATOMIC_RELAXED) != 0;
}

static void
cancel(struct mcp_call *call)
{
	__atomic_store_n(&call->cancelled, 1, __ATOMIC_RELAXED);
}

int
mcp_call_progress(struct mcp_call *call, double progress, double total,
    const char *message)
{
	int64_t now = now_ms();
	cJSON *p;

	if (call->task != NULL) {
		sess_task_progress(call->task, message);
		return 1;
	}
	if (call->s == NULL) {
		pthread_mutex_lock(&call->progress_mu);
		call->local_progress++;
		if (message != NULL) {
			free(call->local_message);
			call->local_message = xstrdup(message);
		}
		pthread_mutex_unlock(&call->progress_mu);
		return 1;
	}
	if (call->token == NULL || mcp_call_cancelled(call))
		return 0;
	pthread_mutex_lock(&call->progress_mu);
	/* Progress must grow with each notification; and a flood helps no one. */
	if (call->progress_sent && (progress <= call->progress ||
	    now - call->progress_ms < PROGRESS_MS)) {
		pthread_mutex_unlock(&call->progress_mu);
		return 0;
	}
	call->progress_sent = 1;
	call->progress = progress;
	call->progress_ms = now;
	p = cJSON_CreateObject();
	cJSON_AddItemToObject(p, "progressToken", cJSON_Duplicate(call->token, 1));
	cJSON_AddNumberToObject(p, "progress", progress);
	if (total > 0)
		cJSON_AddNumberToObject(p, "total", total);
	if (message != NULL && HAS_ANNOTATIONS(call->ri.rev)) {
		size_t n = utf8_complete_prefix(message, strnlen(message, 4096));
		_cleanup_free_ char *m = xstrndup(message, n);
		if (utf8_valid(m, strlen(m)))
			cJSON_AddStringToObject(p, "message", m);
	}
	/* Under progress_mu, so two threads of one call cannot reorder them. */
	send_notification(call->s, "notifications/progress", p);
	pthread_mutex_unlock(&call->progress_mu);
	return 1;
}

#define level_index sess_level_index

/* A log line for call: a legacy session's level (logging/setLevel) decides;
 * a modern request gets none unless its _meta asked for a level; a task
 * none (the extension carries no log lines). */
static void
call_log(struct mcp_call *call, const char *level, const char *text)
{
	struct mcp_session *s = call->s;
	int l = level_index(level), min;
	cJSON *p;

	if (s == NULL || call->task != NULL)
		return;
	if (l < 0)
		l = LEVEL_DEFAULT;
	min = call->ri.modern ? call->ri.log_level : __atomic_load_n(&s->log_level,
	    __ATOMIC_RELAXED);
	if (min < 0 || l < min)
		return;
	p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "level", levels[l]);
	cJSON_AddStringToObject(p, "logger", "sbxtop");
	cJSON_AddStringToObject(p, "data", text);
	send_notification(s, "notifications/message", p);
}

void
mcp_call_log(struct mcp_call *call, const char *level, const char *fmt, ...)
{
	char text[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	text[utf8_complete_prefix(text, strlen(text))] = '\0';
	if (utf8_valid(text, strlen(text)))
		call_log(call, level, text);
}

/* The approval gate holds call: tell the client a human is deciding (a
 * progress message when it asked for progress, the task's status for a
 * task), so it does not take the silence for a hang. */
void
mcp_gate_held(const struct mcp_gate *g, const char *what)
{
	struct mcp_call *call = g->call;

	if (call->task != NULL) {
		sess_task_held(call->task, what);
		return;
	}
	mcp_call_log(call, "notice", "%s", what);
	if (call->token != NULL && call->s != NULL && HAS_ANNOTATIONS(call->ri.rev))
		mcp_call_progress(call, call->progress_sent ? call->progress + 1e-3 : 0, 0,
		    what);
}

/* --- the activity journal ----------------------------------------------- */
/* --- tools -------------------------------------------------------------- */

/* What tools/list shows of an output schema: that the result is an object and
 * the fields it always has.  The whole schema checks each result here (and
 * tools/list gives it with _meta "sbxtop/schemas": "full"); a client validates
 * against this, and every byte of tools/list is in a model's context on each
 * turn. */
static cJSON *
lean_schema(const cJSON *full)
{
	cJSON *o = cJSON_CreateObject();
	const cJSON *req = cJSON_GetObjectItemCaseSensitive(full, "required");

	cJSON_AddStringToObject(o, "type", "object");
	if (cJSON_IsArray(req))
		cJSON_AddItemToObject(o, "required", cJSON_Duplicate(req, 1));
	return o;
}

cJSON *
sess_tool_json(const struct mcp_tool *t, enum rev rev, int full)
{
	size_t i = tool_index(t);
	cJSON *o = cJSON_CreateObject(), *a;

	cJSON_AddStringToObject(o, "name", t->name);
	if (HAS_STRUCTURED(rev) && t->title)
		cJSON_AddStringToObject(o, "title", t->title);
	cJSON_AddStringToObject(o, "description", t->description ? t->description : "");
	cJSON_AddItemToObject(o, "inputSchema", cJSON_Duplicate(full ? schemas_in[i] :
	    schemas_listed[i], 1));
	if (HAS_STRUCTURED(rev) && schemas_out[i] != NULL)
		cJSON_AddItemToObject(o, "outputSchema", full ? cJSON_Duplicate(schemas_out[i], 1) :
		    lean_schema(schemas_out[i]));
	/* The hints that differ from the defaults the revision gives them
	 * (readOnly false, destructive true, idempotent false, openWorld true),
	 * destructive and idempotent only where they mean something (not read
	 * only): every byte of tools/list is in a model's context on each turn.
	 * The title is said once, where the revision has it. */
	if (HAS_ANNOTATIONS(rev)) {
		int ro = (t->hints & MCP_READONLY) != 0;
		a = cJSON_AddObjectToObject(o, "annotations");
		if (!HAS_STRUCTURED(rev) && t->title)
			cJSON_AddStringToObject(a, "title", t->title);
		if (ro)
			cJSON_AddBoolToObject(a, "readOnlyHint", 1);
		if (!ro && !(t->hints & MCP_DESTRUCTIVE))
			cJSON_AddBoolToObject(a, "destructiveHint", 0);
		if (!ro && (t->hints & MCP_IDEMPOTENT))
			cJSON_AddBoolToObject(a, "idempotentHint", 1);
		if (!(t->hints & MCP_OPENWORLD))
			cJSON_AddBoolToObject(a, "openWorldHint", 0);
	}
	return o;
}

/* sbxtop's own front ends, whose readers are people. */
static int
human_kind(const char *kind)
{
	return kind != NULL && (strcmp(kind, "console") == 0 || strcmp(kind, "cli") == 0);
}

static cJSON *
tool_error(const char *msg, const char *hint)
{
	cJSON *r = cJSON_CreateObject(), *c = cJSON_AddArrayToObject(r, "content");
	cJSON *b = cJSON_CreateObject();
	size_t n = strlen(msg);
	_cleanup_free_ char *text = hint && hint[0] ? xasprintf("%s%s %s", msg,
	    n > 0 && msg[n - 1] == '.' ? "" : ".", hint) : xstrdup(msg);

	cJSON_AddStringToObject(b, "type", "text");
	cJSON_AddStringToObject(b, "text", text);
	cJSON_AddItemToArray(c, b);
	cJSON_AddBoolToObject(r, "isError", 1);
	return r;
}

/* A result: the text a model reads (the tool's own, given with
 * mcp_call_set_text, or drawn by its render function, or generically) within
 * the call's budget, and the object for programs.  given is taken. */
static cJSON *
tool_result(const struct mcp_tool *t, cJSON *structured, char *given, size_t budget,
    enum rev rev)
{
	cJSON *r = cJSON_CreateObject(), *c = cJSON_AddArrayToObject(r, "content");
	cJSON *b = cJSON_CreateObject();
	struct mcp_text tx;
	char *text;

	mcp_text_init(&tx, budget);
	if (given != NULL && strlen(given) <= budget)
		buf_append(&tx.b, given, strlen(given));	/* the tool kept to it */
	else if (given != NULL)
		mcp_text_add(&tx, given, strlen(given));
	else if (t->render != NULL)
		t->render(structured, &tx);
	else
		mcp_render_generic(structured, &tx);
	free(given);
	if (tx.cut > 0)
		log_warnx("tool %s: its text was %llu bytes over the budget of %zu", t->name,
		    (unsigned long long)tx.cut, budget);
	text = mcp_text_finish(&tx);
	cJSON_AddStringToObject(b, "type", "text");
	cJSON_AddStringToObject(b, "text", text);
	free(text);
	cJSON_AddItemToArray(c, b);
	if (HAS_STRUCTURED(rev))
		cJSON_AddItemToObject(r, "structuredContent", structured);
	else
		cJSON_Delete(structured);
	cJSON_AddBoolToObject(r, "isError", 0);
	return r;
}

/* Run the tool of call; NULL when the call was cancelled (no answer then). */
cJSON *
sess_run_tool(struct mcp_call *call, struct sess_fault *f)
{
	const struct mcp_tool *t = call->tool;
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(call->params, "arguments");
	cJSON *empty = NULL, *result = NULL, *answer;
	struct sbx_err e;
	char msg[512], why[400];
	int64_t t0 = now_ms();
	size_t i = tool_index(t);
	int rc;

	(void)f;	/* a tool's failure is a result (isError) */
	if (args == NULL)
		args = empty = cJSON_CreateObject();
	sess_journal_started(call, args);
	if (schema_check(schemas_in[i], args, why, sizeof why) < 0) {
		snprintf(msg, sizeof msg, "Invalid arguments for %s: %s", t->name, why);
		sess_journal_finished(call, args, t0, "error", msg);
		cJSON_Delete(empty);
		return tool_error(msg, "Fix the arguments to match the tool's inputSchema "
		    "(tools/list).");
	}
	if (call->gate != NULL) {
		char who[256];
		struct mcp_gate g = {
			t->name, t->hints, NULL, who, call->kind, call->origin, call,
		};
		sess_gate_client(call, who, sizeof who);
		cJSON *el = sess_gate_args(args);
		g.arguments = el;
		why[0] = '\0';
		rc = call->gate(call->gate_arg, &g, why, sizeof why);
		cJSON_Delete(el);
		if (mcp_call_cancelled(call)) {
			sess_journal_finished(call, args, t0, "cancelled", NULL);
			cJSON_Delete(empty);
			return NULL;
		}
		if (rc == 0) {
			sess_journal_finished(call, args, t0, "denied", why);
			cJSON_Delete(empty);
			return tool_error(why[0] ? why : "denied by the operator", NULL);
		}
	}
	sbx_err_clear(&e);
	rc = t->run(call, args, &result, &e);
	if (mcp_call_cancelled(call)) {
		sess_journal_finished(call, args, t0, "cancelled", NULL);
		cJSON_Delete(result);
		cJSON_Delete(empty);
		return NULL;
	}
	if (rc < 0 || result == NULL) {
		const char *hint = e.hint;
		if (rc >= 0)
			snprintf(e.msg, sizeof e.msg, "%s gave no result", t->name);
		/* The core's hints speak to a person (`sbxtop ...`), and so does the
		 * answer to the console; an agent gets tool names. */
		if (call->s == NULL || !human_kind(call->s->kind)) {
			mcp_err_fix(&e);
			hint = mcp_err_hint(&e);
		}
		answer = tool_error(e.msg[0] ? e.msg : "the tool failed", hint);
		sess_journal_finished(call, args, t0, "error", e.msg);
		cJSON_Delete(result);
	} else {
		if (schemas_out[i] != NULL && schema_check(schemas_out[i], result, why,
		    sizeof why) < 0)
			log_warnx("tool %s: its result does not match its outputSchema: %s",
			    t->name, why);
		sess_journal_finished(call, args, t0, "ok", NULL);
		answer = tool_result(t, result, call->text, mcp_call_budget(call), call->ri.rev);
		call->text = NULL;
	}
	cJSON_Delete(empty);
	return answer;
}

/* --- requests answered in line ------------------------------------------ */

static void *
fault(struct sess_fault *f, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* NULL, with f saying code and the message. */
static void *
fault(struct sess_fault *f, int code, const char *fmt, ...)
{
	va_list ap;

	f->code = code;
	va_start(ap, fmt);
	vsnprintf(f->msg, sizeof f->msg, fmt, ap);
	va_end(ap);
	return NULL;
}

static cJSON *
initialize(struct mcp_session *s, struct jsonrpc_msg *m, const struct mcp_reqinfo *ri,
    struct sess_fault *f)
{
	const char *want = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m->params,
	    "protocolVersion"));
	const cJSON *info = cJSON_GetObjectItemCaseSensitive(m->params, "clientInfo");
	const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "name"));
	const char *ver = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info,
	    "version"));
	enum rev rev = REV_LEGACY_LAST;
	cJSON *r, *si;
	size_t budget;

	(void)ri;
	if (want == NULL)
		return fault(f, JSONRPC_INVALID_PARAMS, "Invalid params: initialize needs "
		    "\"protocolVersion\", a string (this server speaks %s to %s, and %s "
		    "without initialize)", rev_names[0], rev_names[REV_LEGACY_LAST],
		    rev_names[REV_MODERN]);
	if (s->initialized)
		return fault(f, JSONRPC_INVALID_REQUEST, "Invalid Request: this session is "
		    "already initialized");
	budget = __atomic_load_n(&s->budget, __ATOMIC_RELAXED);
	if (sess_meta_budget(m->params, &budget, f->msg, sizeof f->msg) < 0) {
		f->code = JSONRPC_INVALID_PARAMS;
		return NULL;
	}
	__atomic_store_n(&s->budget, budget, __ATOMIC_RELAXED);
	for (int i = 0; i <= REV_LEGACY_LAST; i++)
		if (strcmp(want, rev_names[i]) == 0)
			rev = (enum rev)i;
	s->rev = rev;
	if (name != NULL) {
		char client[160];
		snprintf(client, sizeof client, "%.100s%s%.40s", name, ver ? " " : "",
		    ver ? ver : "");
		client[utf8_complete_prefix(client, strlen(client))] = '\0';
		sess_name_client(s, client);
	}
	r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "protocolVersion", rev_names[rev]);
	cJSON_AddItemToObject(r, "capabilities", sess_capabilities(rev));
	si = cJSON_AddObjectToObject(r, "serverInfo");
	cJSON_AddStringToObject(si, "name", "sbxtop");
	if (HAS_STRUCTURED(rev))
		cJSON_AddStringToObject(si, "title", "sbxtop: disposable Linux sandboxes");
	cJSON_AddStringToObject(si, "version", SBX_VERSION);
	cJSON_AddStringToObject(r, "instructions", sess_instructions);
	/* The budget this session's results keep to. */
	cJSON_AddNumberToObject(cJSON_AddObjectToObject(r, "_meta"), MCP_BUDGET_META,
	    (double)budget);
	pthread_mutex_lock(&s->mu);
	s->initialized = 1;
	pthread_mutex_unlock(&s->mu);
	log_info("mcp: %s session initialized by %s, protocol %s", s->origin,
	    s->client ? s->client : "an unnamed client", rev_names[rev]);
	return r;
}

/* The server's capabilities: tools, resources (the sandbox logs) and
 * logging; in 2026-07-28, resource updates through subscriptions/listen and
 * the tasks extension too. */
cJSON *
sess_capabilities(enum rev rev)
{
	cJSON *caps = cJSON_CreateObject(), *res;

	cJSON_AddBoolToObject(cJSON_AddObjectToObject(caps, "tools"), "listChanged", 0);
	cJSON_AddObjectToObject(caps, "logging");
	res = cJSON_AddObjectToObject(caps, "resources");
	cJSON_AddBoolToObject(res, "subscribe", rev >= REV_MODERN);
	cJSON_AddBoolToObject(res, "listChanged", rev >= REV_MODERN);
	if (rev >= REV_MODERN)
		cJSON_AddObjectToObject(cJSON_AddObjectToObject(caps, "extensions"),
		    EXT_TASKS);
	return caps;
}

cJSON *
sess_tools_list(const cJSON *params, enum rev rev)
{
	cJSON *r = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(r, "tools");
	const char *which = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(params, "_meta"), MCP_SCHEMAS_META));
	int full = which != NULL && strcmp(which, "full") == 0;

	for (size_t i = 0; mcp_tools[i] != NULL; i++)
		cJSON_AddItemToArray(a, sess_tool_json(mcp_tools[i], rev, full));
	for (size_t i = 0; mcp_tools_fixtures(-1) && mcp_fixture_tools[i] != NULL; i++)
		cJSON_AddItemToArray(a, sess_tool_json(mcp_fixture_tools[i], rev, full));
	return r;
}

static cJSON *
ping(struct mcp_session *s, struct jsonrpc_msg *m, const struct mcp_reqinfo *ri,
    struct sess_fault *f)
{
	(void)s, (void)m, (void)ri, (void)f;
	return cJSON_CreateObject();
}

static cJSON *
tools_list(struct mcp_session *s, struct jsonrpc_msg *m, const struct mcp_reqinfo *ri,
    struct sess_fault *f)
{
	(void)ri, (void)f;
	return sess_tools_list(m->params, s->rev);
}

static cJSON *
templates_list(struct mcp_session *s, struct jsonrpc_msg *m, const struct mcp_reqinfo *ri,
    struct sess_fault *f)
{
	(void)m, (void)ri, (void)f;
	return sess_resource_templates(s->rev);
}

static cJSON *
set_level(struct mcp_session *s, struct jsonrpc_msg *m, const struct mcp_reqinfo *ri,
    struct sess_fault *f)
{
	const char *l = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m->params,
	    "level"));
	int i = l ? level_index(l) : -1;

	(void)ri;
	if (i < 0)
		return fault(f, JSONRPC_INVALID_PARAMS, "Invalid params: \"level\" must be "
		    "one of debug, info, notice, warning, error, critical, alert, emergency");
	__atomic_store_n(&s->log_level, i, __ATOMIC_RELAXED);
	return cJSON_CreateObject();
}

/* tools/call: the protocol errors here; the rest on a worker. */
const struct mcp_tool *
sess_tools_call_check(const struct jsonrpc_msg *m, struct sess_fault *f)
{
	const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m->params,
	    "name"));
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(m->params, "arguments");
	const struct mcp_tool *t;
	size_t b = 0;

	if (name == NULL)
		return fault(f, JSONRPC_INVALID_PARAMS, "Invalid params: tools/call needs "
		    "\"name\", a string");
	if ((t = mcp_tool_find(name)) == NULL)
		return fault(f, JSONRPC_INVALID_PARAMS, "Unknown tool '%.100s': call "
		    "tools/list for the tools this server has", name);
	if (args != NULL && !cJSON_IsObject(args))
		return fault(f, JSONRPC_INVALID_PARAMS, "Invalid params: \"arguments\" must "
		    "be an object");
	if (sess_meta_budget(m->params, &b, f->msg, sizeof f->msg) < 0) {
		f->code = JSONRPC_INVALID_PARAMS;
		return NULL;
	}
	return t;
}

static cJSON *
tools_call(struct mcp_session *s, struct jsonrpc_msg *m, const struct mcp_reqinfo *ri,
    struct sess_fault *f)
{
	const struct mcp_tool *t = sess_tools_call_check(m, f);

	if (t != NULL)
		sess_dispatch(s, m, t, ri, sess_run_tool);
	return NULL;
}

/* The methods of the revisions that open with initialize. */
static const struct sess_method legacy_methods[] = {
	{ "initialize",			initialize,	NULL,			SM_ANY_TIME, -1, NULL },
	{ "ping",			ping,		NULL,			SM_ANY_TIME, -1, NULL },
	{ "tools/list",			tools_list,	NULL,			0, -1, NULL },
	{ "tools/call",			tools_call,	NULL,			0, -1, NULL },
	{ "resources/list",		NULL,		sess_resources_list,	0, -1, NULL },
	{ "resources/read",		NULL,		sess_resources_read,	0, -1, NULL },
	{ "resources/templates/list",	templates_list,	NULL,			0, -1, NULL },
	{ "logging/setLevel",		set_level,	NULL,			0, -1, NULL },
	{ NULL, NULL, NULL, 0, -1, NULL },
};

const struct sess_method *
sess_method_find(const struct sess_method *table, const char *method)
{
	for (; table->name != NULL; table++)
		if (strcmp(table->name, method) == 0)
			return table;
	return NULL;
}

void
sess_method_run(struct mcp_session *s, struct jsonrpc_msg *m, const struct sess_method *mt,
    const struct mcp_reqinfo *ri)
{
	struct sess_fault f = { 0, "", NULL };
	cJSON *r;

	if (mt->work != NULL) {
		sess_dispatch(s, m, NULL, ri, mt->work);
		return;
	}
	if ((r = mt->answer(s, m, ri, &f)) != NULL) {
		if (ri != NULL && ri->modern)
			sess_modern_result(r, mt);
		sess_send_text(s, jsonrpc_result(m->id, r));
	} else if (f.code != 0)
		sess_send_text(s, jsonrpc_error(m->id, f.code, f.msg, f.data));
	else
		cJSON_Delete(f.data);
}

static void
request(struct mcp_session *s, struct jsonrpc_msg *m)
{
	const struct sess_method *mt;
	int init;

	if (s->ext != NULL && s->ext(s->ext_arg, s, m->id, m->method, m->params))
		return;
	/* A request that names 2026-07-28 in its _meta stands on its own, on an
	 * initialized session or not. */
	if (sess_modern_request(s, m))
		return;
	mt = sess_method_find(legacy_methods, m->method);
	pthread_mutex_lock(&s->mu);
	init = s->initialized;
	pthread_mutex_unlock(&s->mu);
	if (!init && (mt == NULL || !(mt->flags & SM_ANY_TIME)))
		sess_send_error(s, m->id, JSONRPC_INVALID_REQUEST,
		    "Invalid Request: the session is "
		    "not initialized; send initialize first (or, for protocol %s, name "
		    "it in each request's _meta as \"" META_VERSION "\")",
		    rev_names[REV_MODERN]);
	else if (mt == NULL)
		sess_send_error(s, m->id, JSONRPC_METHOD_NOT_FOUND,
		    "Method not found: '%.100s'", m->method);
	else
		sess_method_run(s, m, mt, NULL);
}

/* The methods a session answers, from both tables once (the core server lets
 * a client call only what it names). */
static const char *method_names[64];
static pthread_once_t method_names_once = PTHREAD_ONCE_INIT;

static void
method_names_list(void)
{
	const struct sess_method *tables[] = { legacy_methods, sess_modern_methods };
	size_t n = 0;

	for (size_t k = 0; k < ARRAY_SIZE(tables); k++)
		for (const struct sess_method *mt = tables[k]; mt->name != NULL; mt++) {
			if (k > 0 && sess_method_find(legacy_methods, mt->name) != NULL)
				continue;
			if (n == ARRAY_SIZE(method_names) - 1)
				fatal("more MCP methods than method_names holds");
			method_names[n++] = mt->name;
		}
}

const char *
mcp_method_name(size_t i)
{
	pthread_once(&method_names_once, method_names_list);
	return i < ARRAY_SIZE(method_names) ? method_names[i] : NULL;
}

static void
notification(struct mcp_session *s, const struct jsonrpc_msg *m)
{
	const cJSON *id;

	if (s->ext != NULL && strncmp(m->method, "sbxtop/", 7) == 0) {
		(void)s->ext(s->ext_arg, s, NULL, m->method, m->params);
		return;
	}
	if (strcmp(m->method, "notifications/cancelled") != 0)
		return;		/* initialized, roots/list_changed, ...: nothing to do */
	id = cJSON_GetObjectItemCaseSensitive(m->params, "requestId");
	if (sess_listen_cancel(s, id))
		return;
	pthread_mutex_lock(&s->mu);
	for (struct mcp_call *c = s->calls; c != NULL; c = c->next)
		if (jsonrpc_id_equal(c->id, id))
			cancel(c);
	pthread_mutex_unlock(&s->mu);
}

/* --- the session -------------------------------------------------------- */

struct mcp_session *
mcp_session_new(struct core *c, const char *origin, mcp_send_fn send, void *arg)
{
	struct mcp_session *s = xcalloc(1, sizeof *s);

	pthread_once(&schemas_once, schemas_parse);
	s->core = c;
	s->origin = xstrdup(origin);
	s->kind = xstrdup("mcp");
	s->send = send;
	s->arg = arg;
	s->log_level = LEVEL_DEFAULT;
	s->budget = c != NULL ? (size_t)config_int(core_config(c), "mcp_budget") :
	    MCP_BUDGET_DEFAULT;
	s->rev = REV_LEGACY_LAST;
	pthread_mutex_init(&s->send_mu, NULL);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->idle, NULL);
	pthread_cond_init(&s->work, NULL);
	s->qtail = &s->qhead;
	return s;
}

void
mcp_session_input(struct mcp_session *s, const char *msg, size_t len)
{
	struct jsonrpc_msg m;
	struct jsonrpc_fault f;

	if (jsonrpc_parse(msg, len, &m, &f) < 0) {
		sess_send_text(s, jsonrpc_error(f.id, f.code, f.message, NULL));
		cJSON_Delete(f.id);
		return;
	}
	switch (m.kind) {
	case JSONRPC_REQUEST:
		request(s, &m);
		break;
	case JSONRPC_NOTIFICATION:
		notification(s, &m);
		break;
	case JSONRPC_RESPONSE:
		break;		/* this server sends no requests yet */
	}
	jsonrpc_msg_free(&m);
}

void
mcp_session_close(struct mcp_session *s)
{
	if (s == NULL)
		return;
	sess_listen_close_all(s);
	pthread_mutex_lock(&s->mu);
	s->closing = 1;
	for (struct mcp_call *c = s->calls; c != NULL; c = c->next)
		cancel(c);
	pthread_cond_broadcast(&s->work);
	while (s->inflight > 0 || s->nworkers > 0)
		pthread_cond_wait(&s->idle, &s->mu);
	sess_reap_workers(s);
	pthread_mutex_unlock(&s->mu);
	pthread_cond_destroy(&s->work);
	pthread_cond_destroy(&s->idle);
	pthread_mutex_destroy(&s->mu);
	pthread_mutex_destroy(&s->send_mu);
	free(s->client);
	free(s->kind);
	mcp_session_set_key(s, NULL, NULL, 0);
	free(s->origin);
	free(s);
}

const char *
mcp_session_client(const struct mcp_session *s)
{
	return __atomic_load_n(&s->client, __ATOMIC_ACQUIRE);
}

/* Name the session's client once (initialize, or the first 2026-07-28 request
 * that says who it is): for sbxtop/clients and the legacy calls' journal. */
void
sess_name_client(struct mcp_session *s, const char *client)
{
	pthread_mutex_lock(&s->mu);
	if (s->client == NULL)
		__atomic_store_n(&s->client, xstrdup(client), __ATOMIC_RELEASE);
	pthread_mutex_unlock(&s->mu);
}

/* --- hooks for a host of sessions --------------------------------------- */

void
mcp_session_set_extension(struct mcp_session *s, mcp_ext_fn fn, void *arg)
{
	s->ext = fn;
	s->ext_arg = arg;
}

void
mcp_session_set_gate(struct mcp_session *s, mcp_gate_fn fn, void *arg)
{
	s->gate = fn;
	s->gate_arg = arg;
}

void
mcp_session_set_budget(struct mcp_session *s, size_t budget)
{
	if (budget >= MCP_BUDGET_MIN && budget <= MCP_BUDGET_MAX)
		__atomic_store_n(&s->budget, budget, __ATOMIC_RELAXED);
}

void
mcp_session_set_kind(struct mcp_session *s, const char *kind)
{
	free(s->kind);
	s->kind = xstrdup(kind);
}

int
mcp_gate_cancelled(const struct mcp_gate *g)
{
	return mcp_call_cancelled(g->call);
}

void
mcp_session_reply(struct mcp_session *s, const cJSON *id, cJSON *result)
{
	if (id == NULL) {
		cJSON_Delete(result);
		return;
	}
	sess_send_text(s, jsonrpc_result(id, result));
}

void
mcp_session_reply_error(struct mcp_session *s, const cJSON *id, int code,
    const char *message, cJSON *data)
{
	sess_send_text(s, jsonrpc_error(id, code, message, data));
}

void
mcp_session_notify(struct mcp_session *s, const char *method, cJSON *params)
{
	send_notification(s, method, params);
}

