/* Requests of MCP 2026-07-28, served beside the legacy session (the spec's
 * "dual-era" server): each request names its protocol version, client and
 * capabilities in its _meta and stands on its own, on an initialized session or
 * not.  server/discover says what this server speaks; results carry resultType
 * and the server's identity, lists their caching hints; subscriptions/listen
 * streams resource changes and task status; the methods the revision removed
 * are "method not found" with a word on what replaced them. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/utf8.h"
#include "lib/util.h"
#include "mcp/session-int.h"

#define TTL_STATIC_MS	3600000		/* tools, templates, discover: fixed per binary */
#define TTL_LIST_MS	5000		/* resources/list: sandboxes come and go */
#define LISTEN_URIS_MAX	32
#define LISTEN_TASKS_MAX 32
#define LISTEN_GAP_MS	200		/* at most five notifications a second per kind */

/* --- what a request says about itself ----------------------------------- */

static cJSON *
supported_versions(void)
{
	cJSON *a = cJSON_CreateArray();

	for (int i = REV_COUNT - 1; i >= 0; i--)
		cJSON_AddItemToArray(a, cJSON_CreateString(sess_rev_names[i]));
	return a;
}

static const char *
supported_text(void)
{
	return "2026-07-28; 2025-11-25, 2025-06-18, 2025-03-26 and 2024-11-05 with "
	    "initialize";
}

/* Read ri from m's _meta; 0, or -1 with the error sent. */
static int
read_meta(struct mcp_session *s, const struct jsonrpc_msg *m, struct mcp_reqinfo *ri)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(m->params, "_meta");
	const cJSON *pv = cJSON_GetObjectItemCaseSensitive(meta, META_VERSION);
	const cJSON *caps = cJSON_GetObjectItemCaseSensitive(meta, META_CAPS);
	const cJSON *info = cJSON_GetObjectItemCaseSensitive(meta, META_CLIENT);
	const cJSON *ll = cJSON_GetObjectItemCaseSensitive(meta, META_LOGLEVEL);
	const cJSON *ext = cJSON_GetObjectItemCaseSensitive(caps, "extensions");
	const char *name, *ver;

	memset(ri, 0, sizeof *ri);
	ri->rev = REV_MODERN;
	ri->modern = 1;
	ri->log_level = -1;
	ri->budget = __atomic_load_n(&s->budget, __ATOMIC_RELAXED);
	if (!cJSON_IsString(pv)) {
		sess_send_error(s, m->id, JSONRPC_INVALID_PARAMS, "Invalid params: %.60s needs "
		    "params._meta[\"" META_VERSION "\"], a string (this server speaks %s)",
		    m->method, supported_text());
		return -1;
	}
	if (strcmp(pv->valuestring, sess_rev_names[REV_MODERN]) != 0) {
		cJSON *d = cJSON_CreateObject();
		char msg[300];

		cJSON_AddItemToObject(d, "supported", supported_versions());
		cJSON_AddStringToObject(d, "requested", pv->valuestring);
		snprintf(msg, sizeof msg, "Unsupported protocol version %.40s: this server "
		    "speaks %s", pv->valuestring, supported_text());
		sess_send_text(s, jsonrpc_error(m->id, MCP_UNSUPPORTED_VERSION, msg, d));
		return -1;
	}
	if (!cJSON_IsObject(caps)) {
		sess_send_error(s, m->id, JSONRPC_INVALID_PARAMS, "Invalid params: %.60s needs "
		    "params._meta[\"" META_CAPS "\"], an object (send {} for none)", m->method);
		return -1;
	}
	if (ll != NULL && (!cJSON_IsString(ll) ||
	    (ri->log_level = sess_level_index(ll->valuestring)) < 0)) {
		sess_send_error(s, m->id, JSONRPC_INVALID_PARAMS, "Invalid params: _meta[\""
		    META_LOGLEVEL "\"] must be one of debug, info, notice, warning, error, "
		    "critical, alert, emergency");
		return -1;
	}
	if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(ext, EXT_TASKS)))
		ri->caps |= CAP_TASKS;
	if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(caps, "elicitation")))
		ri->caps |= CAP_ELICITATION;
	if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(caps, "sampling")))
		ri->caps |= CAP_SAMPLING;
	name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "name"));
	ver = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "version"));
	if (name != NULL) {
		snprintf(ri->client, sizeof ri->client, "%.100s%s%.40s", name, ver ? " " : "",
		    ver ? ver : "");
		/* Only printable text reaches the journal and the console. */
		for (char *p = ri->client; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				*p = '?';
		ri->client[utf8_complete_prefix(ri->client, strlen(ri->client))] = '\0';
	}
	return 0;
}

/* --- results ------------------------------------------------------------ */

void
sess_modern_result(cJSON *r, const struct sess_method *mt)
{
	cJSON *meta, *si;

	if (!cJSON_HasObjectItem(r, "resultType"))
		cJSON_AddStringToObject(r, "resultType", "complete");
	if ((meta = cJSON_GetObjectItemCaseSensitive(r, "_meta")) == NULL)
		meta = cJSON_AddObjectToObject(r, "_meta");
	if (!cJSON_HasObjectItem(meta, META_SERVER)) {
		si = cJSON_AddObjectToObject(meta, META_SERVER);
		cJSON_AddStringToObject(si, "name", "sbxtop");
		cJSON_AddStringToObject(si, "title", "sbxtop: disposable Linux sandboxes");
		cJSON_AddStringToObject(si, "version", SBX_VERSION);
	}
	if (mt != NULL && mt->ttl_ms >= 0 && strcmp(cJSON_GetStringValue(
	    cJSON_GetObjectItemCaseSensitive(r, "resultType")), "complete") == 0) {
		cJSON_AddNumberToObject(r, "ttlMs", mt->ttl_ms);
		cJSON_AddStringToObject(r, "cacheScope", (mt->flags & SM_PRIVATE) ? "private" :
		    "public");
	}
}

/* -32021 for a request that needs what the client did not declare: the tasks
 * extension (ext set) or a capability by name; NULL with f. */
static cJSON *
missing_capability(struct sess_fault *f, const struct jsonrpc_msg *m, const char *cap,
    int ext)
{
	cJSON *rc;

	f->data = cJSON_CreateObject();
	rc = cJSON_AddObjectToObject(f->data, "requiredCapabilities");
	if (ext)
		rc = cJSON_AddObjectToObject(rc, "extensions");
	cJSON_AddObjectToObject(rc, cap);
	f->code = MCP_MISSING_CAPABILITY;
	snprintf(f->msg, sizeof f->msg, "Missing required client capability: %.60s needs "
	    "%s%s in _meta[\"" META_CAPS "\"]", m->method, ext ? "extensions." : "", cap);
	return NULL;
}

/* --- the methods answered in line ---------------------------------------- */

static cJSON *
discover(struct mcp_session *s, struct jsonrpc_msg *m, const struct mcp_reqinfo *ri,
    struct sess_fault *f)
{
	cJSON *r = cJSON_CreateObject();

	(void)s, (void)m, (void)ri, (void)f;
	cJSON_AddItemToObject(r, "supportedVersions", supported_versions());
	cJSON_AddItemToObject(r, "capabilities", sess_capabilities(REV_MODERN));
	cJSON_AddStringToObject(r, "instructions", sess_instructions);
	return r;
}

static cJSON *
tools_list(struct mcp_session *s, struct jsonrpc_msg *m, const struct mcp_reqinfo *ri,
    struct sess_fault *f)
{
	(void)s, (void)ri, (void)f;
	/* In table order, the same every time: clients cache this list. */
	return sess_tools_list(m->params, REV_MODERN);
}

static cJSON *
templates_list(struct mcp_session *s, struct jsonrpc_msg *m, const struct mcp_reqinfo *ri,
    struct sess_fault *f)
{
	(void)s, (void)m, (void)ri, (void)f;
	return sess_resource_templates(REV_MODERN);
}

/* A task is worth it for work that takes a while: a command in the
 * foreground, an upload, a download; not for background:true, which answers
 * at once. */
static int
wants_task(const struct mcp_tool *t, const struct mcp_reqinfo *ri, const cJSON *params)
{
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(params, "arguments");

	return (ri->caps & CAP_TASKS) && (t->hints & MCP_TASK) &&
	    !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(args, "background"));
}

/* tools/call: on a worker, or as a task. */
static cJSON *
tools_call(struct mcp_session *s, struct jsonrpc_msg *m, const struct mcp_reqinfo *ri,
    struct sess_fault *f)
{
	const struct mcp_tool *t = sess_tools_call_check(m, f);

	if (t == NULL)
		return NULL;
	if ((t->hints & MCP_NEEDS_TASKS) && !(ri->caps & CAP_TASKS))
		return missing_capability(f, m, EXT_TASKS, 1);
	if ((t->hints & MCP_NEEDS_SAMPLING) && !(ri->caps & CAP_SAMPLING))
		return missing_capability(f, m, "sampling", 0);
	if (wants_task(t, ri, m->params))
		sess_task_start(s, m, t, ri);
	else
		sess_dispatch(s, m, t, ri, sess_run_tool);
	return NULL;
}

static sess_answer_fn listen_open;

/* The methods of 2026-07-28, with the caching hints of their results, and the
 * ones it removed, with what replaced each for their "method not found". */
const struct sess_method sess_modern_methods[] = {
	{ "server/discover",	discover,	NULL,	SM_MODERN_ONLY, TTL_STATIC_MS, NULL },
	{ "tools/list",		tools_list,	NULL,	0, TTL_STATIC_MS, NULL },
	{ "tools/call",		tools_call,	NULL,	0, -1, NULL },
	{ "resources/list",	NULL, sess_resources_list, SM_PRIVATE, TTL_LIST_MS, NULL },
	/* a log grows all the time */
	{ "resources/read",	NULL, sess_resources_read, SM_PRIVATE, 0, NULL },
	{ "resources/templates/list", templates_list, NULL, 0, TTL_STATIC_MS, NULL },
	{ "subscriptions/listen", listen_open,	NULL,	SM_MODERN_ONLY, -1, NULL },
	{ "tasks/get",		sess_task_get,	NULL,	SM_MODERN_ONLY | SM_TASKS, -1, NULL },
	{ "tasks/update",	sess_task_update, NULL,	SM_MODERN_ONLY | SM_TASKS, -1, NULL },
	{ "tasks/cancel",	sess_task_cancel, NULL,	SM_MODERN_ONLY | SM_TASKS, -1, NULL },
	/* removed */
	{ "initialize", NULL, NULL, 0, -1, "2026-07-28 has no handshake; to open a "
	    "2025-11-25 session, send initialize without the _meta protocol version" },
	{ "ping", NULL, NULL, 0, -1, "2026-07-28 removed ping; any request "
	    "(server/discover) will do" },
	{ "logging/setLevel", NULL, NULL, 0, -1, "2026-07-28 sets the level per request, "
	    "in _meta[\"" META_LOGLEVEL "\"]" },
	{ "resources/subscribe", NULL, NULL, 0, -1, "2026-07-28 subscribes through "
	    "subscriptions/listen (notifications.resourceSubscriptions)" },
	{ "resources/unsubscribe", NULL, NULL, 0, -1, "2026-07-28 ends a subscription by "
	    "cancelling its subscriptions/listen" },
	{ NULL, NULL, NULL, 0, -1, NULL },
};

int
sess_modern_request(struct mcp_session *s, struct jsonrpc_msg *m)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(m->params, "_meta");
	const struct sess_method *mt = sess_method_find(sess_modern_methods, m->method);
	struct sess_fault f = { 0, "", NULL };
	struct mcp_reqinfo ri;
	int init, alone;

	pthread_mutex_lock(&s->mu);
	init = s->initialized;
	pthread_mutex_unlock(&s->mu);
	/* Without a version, only what exists in 2026-07-28 alone (the tasks
	 * extension's namespace too) is modern; and on an initialized 2025
	 * session, tasks/... and subscriptions/listen are that session's (unknown
	 * methods there), not a malformed modern request. */
	alone = (mt != NULL && (mt->flags & SM_MODERN_ONLY)) ||
	    strncmp(m->method, "tasks/", 6) == 0;
	if (!cJSON_HasObjectItem(meta, META_VERSION) && (!alone ||
	    (init && strcmp(m->method, "server/discover") != 0)))
		return 0;
	if (read_meta(s, m, &ri) < 0)
		return 1;
	if (ri.client[0] != '\0')
		sess_name_client(s, ri.client);
	ri.method = mt;
	if (mt == NULL || (mt->answer == NULL && mt->work == NULL))
		sess_send_error(s, m->id, JSONRPC_METHOD_NOT_FOUND, "Method not found: "
		    "'%.100s' (%s)", m->method, mt != NULL ? mt->gone :
		    "server/discover says what this server offers");
	else if ((mt->flags & SM_TASKS) && !(ri.caps & CAP_TASKS)) {
		missing_capability(&f, m, EXT_TASKS, 1);
		sess_send_text(s, jsonrpc_error(m->id, f.code, f.msg, f.data));
	} else
		sess_method_run(s, m, mt, &ri);
	return 1;
}

/* --- subscriptions/listen ----------------------------------------------- */

/* One open subscriptions/listen: core events mark what changed, its thread
 * sends the notifications (a core event callback must not block on a slow
 * client), each tagged with the subscription's id. */
struct sess_listen {
	struct sess_listen	*next;		/* in s->listens */
	struct mcp_session	*s;
	cJSON			*id;
	int			 handle;	/* core events */
	int			 list;		/* resourcesListChanged */
	char			*uris[LISTEN_URIS_MAX];
	size_t			 nuris;
	char			*tasks[LISTEN_TASKS_MAX];
	size_t			 ntasks;
	pthread_t		 th;
	int			 started;	/* th runs */
	pthread_mutex_t		 mu;		/* below */
	pthread_cond_t		 cv;
	int			 stop;
	int			 dirty_list;
	uint64_t		 dirty_uris, dirty_tasks;
};

/* The sandbox of a log URI (sbx://ID/logs), into id; -1 for another URI. */
static int
log_uri_sandbox(const char *uri, char *id, size_t len)
{
	size_t n = strlen(uri);

	if (strncmp(uri, "sbx://", 6) != 0 || n < 6 + 1 + 5 || strcmp(uri + n - 5, "/logs") != 0 ||
	    n - 11 >= len)
		return -1;
	snprintf(id, len, "%.*s", (int)(n - 11), uri + 6);
	return strchr(id, '/') == NULL ? 0 : -1;
}

static void
on_event(const struct core_event *ev, void *arg)
{
	struct sess_listen *l = arg;
	const char *task = NULL;
	char id[72];
	int wake = 0;

	pthread_mutex_lock(&l->mu);
	if (l->list && (strcmp(ev->type, "sandbox.created") == 0 ||
	    strcmp(ev->type, "sandbox.destroyed") == 0 ||
	    strcmp(ev->type, "sandbox.removed") == 0 || strcmp(ev->type, "sandbox.state") == 0))
		l->dirty_list = wake = 1;
	if (ev->sandbox != NULL && strncmp(ev->type, "tool.", 5) != 0 &&
	    strncmp(ev->type, "task.", 5) != 0)
		for (size_t i = 0; i < l->nuris; i++)
			if (log_uri_sandbox(l->uris[i], id, sizeof id) == 0 &&
			    strcmp(id, ev->sandbox) == 0) {
				l->dirty_uris |= 1ull << i;
				wake = 1;
			}
	if (strncmp(ev->type, "task.", 5) == 0)
		task = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev->data, "task_id"));
	for (size_t i = 0; task != NULL && i < l->ntasks; i++)
		if (strcmp(l->tasks[i], task) == 0) {
			l->dirty_tasks |= 1ull << i;
			wake = 1;
		}
	if (wake)
		pthread_cond_signal(&l->cv);
	pthread_mutex_unlock(&l->mu);
}

static cJSON *
tagged(const struct sess_listen *l, cJSON *params)
{
	cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");

	if (meta == NULL)
		meta = cJSON_AddObjectToObject(params, "_meta");
	cJSON_AddItemToObject(meta, META_SUBSCRIPTION, cJSON_Duplicate(l->id, 1));
	return params;
}

static void
notify(struct sess_listen *l, const char *method, cJSON *params)
{
	sess_send_text(l->s, jsonrpc_notification(method, tagged(l, params)));
}

static void *
listen_thread(void *arg)
{
	struct sess_listen *l = arg;

	sess_set_related(l->id);
	pthread_mutex_lock(&l->mu);
	while (!l->stop) {
		int list = l->dirty_list;
		uint64_t uris = l->dirty_uris, tasks = l->dirty_tasks;
		struct timespec ts;

		if (!list && !uris && !tasks) {
			pthread_cond_wait(&l->cv, &l->mu);
			continue;
		}
		l->dirty_list = 0;
		l->dirty_uris = l->dirty_tasks = 0;
		pthread_mutex_unlock(&l->mu);
		if (list)
			notify(l, "notifications/resources/list_changed", cJSON_CreateObject());
		for (size_t i = 0; i < l->nuris; i++)
			if (uris & (1ull << i)) {
				cJSON *p = cJSON_CreateObject();
				cJSON_AddStringToObject(p, "uri", l->uris[i]);
				notify(l, "notifications/resources/updated", p);
			}
		for (size_t i = 0; i < l->ntasks; i++) {
			cJSON *p;
			if ((tasks & (1ull << i)) && (p = sess_task_json(l->tasks[i])) != NULL)
				notify(l, "notifications/tasks", p);
		}
		/* Changes come in bursts (an exec's output): let them gather. */
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += LISTEN_GAP_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&l->mu);
		while (!l->stop && pthread_cond_timedwait(&l->cv, &l->mu, &ts) == 0)
			;
	}
	pthread_mutex_unlock(&l->mu);
	sess_set_related(NULL);
	return NULL;
}

static void
listen_free(struct sess_listen *l)
{
	if (l->handle > 0)
		core_events_unsubscribe(l->s->core, l->handle);
	if (l->started) {
		pthread_mutex_lock(&l->mu);
		l->stop = 1;
		pthread_cond_signal(&l->cv);
		pthread_mutex_unlock(&l->mu);
		pthread_join(l->th, NULL);
	}
	for (size_t i = 0; i < l->nuris; i++)
		free(l->uris[i]);
	for (size_t i = 0; i < l->ntasks; i++)
		free(l->tasks[i]);
	pthread_cond_destroy(&l->cv);
	pthread_mutex_destroy(&l->mu);
	cJSON_Delete(l->id);
	free(l);
}

/* The subscription stays open (no result) until it is cancelled. */
static cJSON *
listen_open(struct mcp_session *s, struct jsonrpc_msg *m, const struct mcp_reqinfo *ri,
    struct sess_fault *f)
{
	const cJSON *nf = cJSON_GetObjectItemCaseSensitive(m->params, "notifications");
	const cJSON *uris = cJSON_GetObjectItemCaseSensitive(nf, "resourceSubscriptions");
	const cJSON *tasks = cJSON_GetObjectItemCaseSensitive(nf, "taskIds"), *x;
	struct sess_listen *l;
	cJSON *ack, *af;
	char id[72];

	if (nf != NULL && !cJSON_IsObject(nf)) {
		f->code = JSONRPC_INVALID_PARAMS;
		snprintf(f->msg, sizeof f->msg, "Invalid params: \"notifications\" must be "
		    "an object (the filter)");
		return NULL;
	}
	if (tasks != NULL && !(ri->caps & CAP_TASKS))
		return missing_capability(f, m, EXT_TASKS, 1);
	pthread_mutex_lock(&s->mu);
	for (l = s->listens; l != NULL; l = l->next)
		if (jsonrpc_id_equal(l->id, m->id))
			break;
	pthread_mutex_unlock(&s->mu);
	if (l != NULL) {
		f->code = JSONRPC_INVALID_REQUEST;
		snprintf(f->msg, sizeof f->msg, "Invalid Request: a subscription with this id "
		    "is open already");
		return NULL;
	}
	l = xcalloc(1, sizeof *l);
	l->s = s;
	l->id = cJSON_Duplicate(m->id, 1);
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cv, NULL);
	ack = cJSON_CreateObject();
	af = cJSON_AddObjectToObject(ack, "notifications");
	/* Tools and prompts never change here: those filters are not honoured,
	 * so the acknowledgement leaves them out. */
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(nf, "resourcesListChanged"))) {
		l->list = 1;
		cJSON_AddBoolToObject(af, "resourcesListChanged", 1);
	}
	if (cJSON_IsArray(uris)) {
		cJSON *a = cJSON_AddArrayToObject(af, "resourceSubscriptions");
		cJSON_ArrayForEach(x, uris)
			if (cJSON_IsString(x) && l->nuris < LISTEN_URIS_MAX &&
			    log_uri_sandbox(x->valuestring, id, sizeof id) == 0) {
				l->uris[l->nuris++] = xstrdup(x->valuestring);
				cJSON_AddItemToArray(a, cJSON_CreateString(x->valuestring));
			}
	}
	if (cJSON_IsArray(tasks)) {
		cJSON *a = cJSON_AddArrayToObject(af, "taskIds");
		cJSON_ArrayForEach(x, tasks) {
			cJSON *tj;
			if (!cJSON_IsString(x) || l->ntasks >= LISTEN_TASKS_MAX ||
			    (tj = sess_task_json(x->valuestring)) == NULL)
				continue;
			cJSON_Delete(tj);
			l->tasks[l->ntasks++] = xstrdup(x->valuestring);
			cJSON_AddItemToArray(a, cJSON_CreateString(x->valuestring));
		}
	}
	/* Subscribed before the acknowledgement, so nothing that happens after it
	 * is missed; the thread that sends starts after it, so nothing on this
	 * subscription goes before it. */
	l->handle = core_events_subscribe(s->core, on_event, l);
	notify(l, "notifications/subscriptions/acknowledged", ack);
	if (pthread_create(&l->th, NULL, listen_thread, l) != 0) {
		listen_free(l);
		f->code = JSONRPC_INTERNAL_ERROR;
		snprintf(f->msg, sizeof f->msg, "Internal error: cannot start a thread for the "
		    "subscription; retry");
		return NULL;
	}
	l->started = 1;
	pthread_mutex_lock(&s->mu);
	l->next = s->listens;
	s->listens = l;
	pthread_mutex_unlock(&s->mu);
	/* Task ids given may have finished already: say where they stand now. */
	if (l->ntasks > 0) {
		pthread_mutex_lock(&l->mu);
		l->dirty_tasks = (l->ntasks >= 64 ? ~0ull : (1ull << l->ntasks) - 1);
		pthread_cond_signal(&l->cv);
		pthread_mutex_unlock(&l->mu);
	}
	return NULL;
}

int
sess_listen_cancel(struct mcp_session *s, const cJSON *id)
{
	struct sess_listen *l = NULL, **pp;

	if (id == NULL)
		return 0;
	pthread_mutex_lock(&s->mu);
	for (pp = &s->listens; *pp != NULL; pp = &(*pp)->next)
		if (jsonrpc_id_equal((*pp)->id, id)) {
			l = *pp;
			*pp = l->next;
			break;
		}
	pthread_mutex_unlock(&s->mu);
	if (l == NULL)
		return 0;
	listen_free(l);
	return 1;
}

void
sess_listen_close_all(struct mcp_session *s)
{
	struct sess_listen *l;

	pthread_mutex_lock(&s->mu);
	l = s->listens;
	s->listens = NULL;
	pthread_mutex_unlock(&s->mu);
	while (l != NULL) {
		struct sess_listen *nx = l->next;
		listen_free(l);
		l = nx;
	}
}
