/* The routes of the Agent Sandbox project, kept as they were so its clients
 * work unchanged: POST /exec/SESSION/execute {command, args} answered
 * {exitCode, duration, output: [{stream, data}]}, POST /exec/SESSION/write
 * {path, content}, GET /exec/SESSION/read?path=, GET
 * /exec/SESSION/files?recursive=true, DELETE /exec/SESSION, GET /exec/, and
 * GET /ready (/health and /metrics are the listener's own).
 *
 * A session is a sandbox named after it on the default backend, created by
 * the session's first request (or found by that name after a restart, when
 * the REST API made it) and destroyed once unused for session_idle seconds
 * (sbxtop.conf(5)): the reaper destroys only what REST sessions made. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/log.h"
#include "lib/util.h"
#include "core/image/image.h"
#include "core/keys/keys.h"
#include "mcp/tool-util.h"
#include "server/rest-int.h"

#define SESSION_NAME_MAX	63
#define OUTPUT_MAX		(1u << 20)	/* of an execute answer */
#define EXEC_TIMEOUT_S		120
#define READY_MEM_MIB		128		/* MemAvailable below this: not ready */

struct rest_sess {
	struct rest_sess	*next;
	char			 name[SESSION_NAME_MAX + 1];
	char			 id[32];	/* the sandbox's */
	char			 key[KEY_ID_LEN + 1];	/* its API key's id ("": none) */
	int64_t			 created_ms;	/* wall clock */
	int64_t			 used_ms;	/* monotonic */
	int			 busy;		/* requests in flight */
};

static pthread_mutex_t create_mu = PTHREAD_MUTEX_INITIALIZER;

static int
name_ok(const char *n)
{
	size_t len = strlen(n);

	return len > 0 && len <= SESSION_NAME_MAX && n[0] != '-' && n[0] != '.' &&
	    strncmp(n, "sbx-", 4) != 0 &&
	    strspn(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == len;
}

/* With r->mu held. */
static struct rest_sess *
sess_find(struct rest *r, const char *name)
{
	for (struct rest_sess *s = r->sessions; s != NULL; s = s->next)
		if (strcmp(s->name, name) == 0)
			return s;
	return NULL;
}

static void
sess_drop(struct rest *r, struct rest_sess *gone)
{
	for (struct rest_sess **pp = &r->sessions; *pp != NULL; pp = &(*pp)->next)
		if (*pp == gone) {
			*pp = gone->next;
			free(gone);
			return;
		}
}

/* Whether sb is the sandbox a REST session called name made: the REST API's
 * (its tools' calls are client "rest", the owner they give), by that name (not
 * an id prefix that happens to match). */
static int
made_by_rest(const struct sandbox *sb, const char *name)
{
	return sb->owner != NULL && strcmp(sb->owner, "rest") == 0 && sb->name != NULL &&
	    strcmp(sb->name, name) == 0;
}

/* Whether the caller of rq may see what API key key (its id, "" for none)
 * made: the listener's token and an admin key see everything, a key its own. */
static int
sees(const struct rest_req *rq, const char *key)
{
	return rq->who.key_id[0] == '\0' || (rq->who.scopes & KEY_ADMIN) ||
	    strcmp(rq->who.key_id, key) == 0;
}

static int
another_key(struct sbx_err *e, const char *name)
{
	return sbx_error(e, SBX_EDENIED, "name your session otherwise: a key sees and ends "
	    "only the sessions it made", "session '%s' belongs to another API key", name);
}

/* The session's sandbox id in id, the session marked busy (sess_put after);
 * made when create and there is none, from image when not NULL (a template's).
 * -1 with e. */
static int
sess_get(struct rest_req *rq, const char *name, int create, const char *image, char id[32],
    struct sbx_err *e)
{
	struct rest *r = rq->r;
	struct rest_sess *s;
	struct sandbox *sb;
	char key[KEY_ID_LEN + 1] = "";
	int rc = -1;

	if (!name_ok(name))
		return sbx_error(e, SBX_EINVAL, "name sessions with 1 to 63 letters, digits, "
		    "'.', '_' or '-'", "invalid session name '%.80s'", name);
	pthread_mutex_lock(&create_mu);
	pthread_mutex_lock(&r->mu);
	if ((s = sess_find(r, name)) != NULL && !sees(rq, s->key)) {
		pthread_mutex_unlock(&r->mu);
		pthread_mutex_unlock(&create_mu);
		return another_key(e, name);
	}
	if (s != NULL) {
		s->busy++;
		s->used_ms = now_ms();
		snprintf(id, 32, "%s", s->id);
		pthread_mutex_unlock(&r->mu);
		/* Its sandbox may have been destroyed by other means: then the
		 * session starts again with a new one. */
		if ((sb = core_get(r->core, id, e)) != NULL && sb->state != SBX_TERMINATED &&
		    sb->state != SBX_ERROR) {
			sandbox_free(sb);
			pthread_mutex_unlock(&create_mu);
			return 0;
		}
		sandbox_free(sb);
		pthread_mutex_lock(&r->mu);
		sess_drop(r, s);
		pthread_mutex_unlock(&r->mu);
	} else {
		pthread_mutex_unlock(&r->mu);
	}
	/* Not ours yet: a sandbox of that name that the REST API made (a session
	 * from before a restart), or a new one.  Any other sandbox of that name
	 * is someone else's: the session would run in it and its reaper destroy
	 * it, so it is refused, not adopted.  Looked for among every key's, so
	 * that another key's is refused as such, not taken for none. */
	core_act_for(NULL, 1);
	sb = core_get(r->core, name, e);
	rest_act_for(&rq->who);
	if (sb != NULL && (sb->state == SBX_TERMINATED || sb->state == SBX_ERROR)) {
		sandbox_free(sb);
		sb = NULL;
	}
	if (sb != NULL && !made_by_rest(sb, name)) {
		sbx_error(e, SBX_EDENIED, "name the session otherwise: a session adopts only "
		    "a sandbox the REST API made", "sandbox %s ('%s') was not made by a REST "
		    "session (its owner is %s)", sb->id, sb->name ? sb->name : name,
		    sb->owner ? sb->owner : "unknown");
		sandbox_free(sb);
	} else if (sb != NULL && !sees(rq, sb->api_key ? sb->api_key : "")) {
		another_key(e, name);
		sandbox_free(sb);
	} else if (sb != NULL) {
		snprintf(id, 32, "%s", sb->id);
		snprintf(key, sizeof key, "%s", sb->api_key ? sb->api_key : "");
		sandbox_free(sb);
		rc = 0;
	} else if (!create) {
		sbx_error(e, SBX_ENOTFOUND, "GET /exec/ lists the sessions there are",
		    "no session '%s'", name);
	} else {
		cJSON *args = cJSON_CreateObject(), *out = NULL;
		cJSON_AddStringToObject(args, "name", name);
		if (image != NULL)
			cJSON_AddStringToObject(args, "image", image);
		rc = rest_tool(r, rq->conn, "sandbox_create", NULL, args, &out, e);
		cJSON_Delete(args);
		snprintf(key, sizeof key, "%s", rq->who.key_id);
		if (rc == 0)
			snprintf(id, 32, "%s", cJSON_GetStringValue(cJSON_GetObjectItem(out,
			    "sandbox_id")) ? cJSON_GetStringValue(cJSON_GetObjectItem(out,
			    "sandbox_id")) : name);
		cJSON_Delete(out);
	}
	if (rc == 0) {
		s = xcalloc(1, sizeof *s);
		snprintf(s->name, sizeof s->name, "%s", name);
		snprintf(s->id, sizeof s->id, "%s", id);
		snprintf(s->key, sizeof s->key, "%s", key);
		s->created_ms = wall_ms();
		s->used_ms = now_ms();
		s->busy = 1;
		pthread_mutex_lock(&r->mu);
		s->next = r->sessions;
		r->sessions = s;
		pthread_mutex_unlock(&r->mu);
	}
	pthread_mutex_unlock(&create_mu);
	return rc;
}

static void
sess_put(struct rest *r, const char *name)
{
	struct rest_sess *s;

	pthread_mutex_lock(&r->mu);
	if ((s = sess_find(r, name)) != NULL) {
		s->busy--;
		s->used_ms = now_ms();
	}
	pthread_mutex_unlock(&r->mu);
}

/* --- templates ------------------------------------------------------------ */

/* The `templates` option: "NAME=REF, ..." into an array of {name, image}; the
 * backend's own root is "base" unless the option names a base of its own. */
static cJSON *
templates_of(struct rest *r)
{
	_cleanup_free_ char *copy = xstrdup(config_str(core_config(r->core), "templates"));
	cJSON *a = cJSON_CreateArray(), *base = NULL, *o;
	char *save = NULL;

	for (char *t = strtok_r(copy, ", \t", &save); t; t = strtok_r(NULL, ", \t", &save)) {
		char *eq = strchr(t, '=');
		if (eq == NULL || eq == t || eq[1] == '\0')
			continue;
		*eq = '\0';
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", t);
		cJSON_AddStringToObject(o, "image", eq + 1);
		if (strcmp(t, "base") == 0)
			base = o;
		cJSON_AddItemToArray(a, o);
	}
	if (base == NULL) {
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", "base");
		cJSON_AddNullToObject(o, "image");
		cJSON_InsertItemInArray(a, 0, o);
	}
	return a;
}

/* The image of template name into *image (caller frees; NULL for base). */
static int
template_image(struct rest *r, const char *name, char **image, struct sbx_err *e)
{
	cJSON *a = templates_of(r), *o;
	char names[512] = "";
	size_t n = 0;

	*image = NULL;
	cJSON_ArrayForEach(o, a) {
		const char *nm = cJSON_GetStringValue(cJSON_GetObjectItem(o, "name"));
		const char *im = cJSON_GetStringValue(cJSON_GetObjectItem(o, "image"));
		if (strcmp(nm, name) == 0) {
			*image = im ? xstrdup(im) : NULL;
			cJSON_Delete(a);
			return 0;
		}
		if (n < sizeof names)
			n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", n ? ", " : "", nm);
	}
	cJSON_Delete(a);
	return sbx_error(e, SBX_EINVAL, "GET /exec/templates lists them (the templates option "
	    "of sbxtop.conf)", "unknown template '%.80s': there are %s", name, names);
}

/* GET /exec/templates: {templates: [{name, description, image, pulled}]}. */
static enum MHD_Result
templates(struct rest_req *rq)
{
	cJSON *a = templates_of(rq->r), *o, *imgs = NULL, *body = cJSON_CreateObject();
	struct sbx_err e;

	if (core_image_list(rq->r->core, &imgs, &e) < 0)
		imgs = NULL;
	cJSON_ArrayForEach(o, a) {
		const char *im = cJSON_GetStringValue(cJSON_GetObjectItem(o, "image"));
		_cleanup_free_ char *canon = im ? image_canonical(im) : NULL;
		const cJSON *i;
		int pulled = im == NULL;
		cJSON_ArrayForEach(i, cJSON_GetObjectItem(imgs, "images"))
			if (canon != NULL && strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(i,
			    "ref")) ?: "", canon) == 0)
				pulled = 1;
		cJSON_AddStringToObject(o, "description", im ? "a sandbox from this OCI image" :
		    "a sandbox of the backend's own root (ns: the host's system)");
		cJSON_AddBoolToObject(o, "pulled", pulled);
	}
	cJSON_Delete(imgs);
	cJSON_AddItemToObject(body, "templates", a);
	return rest_json(rq->conn, MHD_HTTP_OK, body);
}

/* --- execute ------------------------------------------------------------- */

struct chunks {
	cJSON		*output;	/* [{stream, data}] */
	struct buf	 cur;		/* the last chunk's data, growing */
	int		 stream;	/* of cur; 0: none yet */
	size_t		 total;
	struct MHD_Connection *conn;
};

static void
chunk_flush(struct chunks *k)
{
	if (k->stream == 0)
		return;
	cJSON *o = cJSON_CreateObject();
	_cleanup_free_ char *t = mcp_utf8_lossy(k->cur.data ? k->cur.data : "", k->cur.len);
	cJSON_AddStringToObject(o, "stream", k->stream == 2 ? "stderr" : "stdout");
	cJSON_AddStringToObject(o, "data", t);
	cJSON_AddItemToArray(k->output, o);
	buf_free(&k->cur);
	buf_init(&k->cur, OUTPUT_MAX);
	k->stream = 0;
}

static int
on_chunk(int stream, const char *data, size_t len, void *arg)
{
	struct chunks *k = arg;

	if (k->total + len > OUTPUT_MAX)
		len = OUTPUT_MAX - k->total;
	if (len == 0)
		return 0;
	if (k->stream != stream)
		chunk_flush(k);
	k->stream = stream;
	buf_append(&k->cur, data, len);
	k->total += len;
	return 0;
}

static int
gone(void *arg)
{
	struct chunks *k = arg;

	return rest_conn_gone(k->conn);
}

/* 'x' with every ' written '\'' */
static void
quote(struct buf *b, const char *s)
{
	buf_append(b, "'", 1);
	for (; *s; s++)
		if (*s == '\'')
			buf_append(b, "'\\''", 4);
		else
			buf_append(b, s, 1);
	buf_append(b, "'", 1);
}

static enum MHD_Result
execute(struct rest_req *rq, const char *name)
{
	struct core_exec_opts o = { 0 };
	struct core_exec_result res;
	struct chunks k = { 0 };
	struct rest_op op;
	struct sbx_err e;
	struct buf line;
	const cJSON *cmd, *args, *a, *tpl;
	cJSON *body, *j, *out;
	char id[32], *image = NULL;
	int rc;

	if ((body = rest_body_object(rq, &e)) == NULL)
		return rest_error(rq->conn, &e);
	cmd = cJSON_GetObjectItemCaseSensitive(body, "command");
	args = cJSON_GetObjectItemCaseSensitive(body, "args");
	tpl = cJSON_GetObjectItemCaseSensitive(body, "template");
	if (tpl != NULL && (!cJSON_IsString(tpl) ||
	    template_image(rq->r, tpl->valuestring, &image, &e) < 0)) {
		cJSON_Delete(body);
		if (!cJSON_IsString(tpl))
			return rest_fail(rq->conn, SBX_EINVAL, "GET /exec/templates lists them",
			    "invalid request: template must be a template's name");
		return rest_error(rq->conn, &e);
	}
	if (!cJSON_IsString(cmd) || cmd->valuestring[0] == '\0') {
		cJSON_Delete(body);
		free(image);
		return rest_fail(rq->conn, SBX_EINVAL, "send {\"command\": \"node\", \"args\": "
		    "[\"-e\", \"...\"]}", "invalid request: command must be a non-empty "
		    "string");
	}
	if (args != NULL && !cJSON_IsArray(args)) {
		cJSON_Delete(body);
		free(image);
		return rest_fail(rq->conn, SBX_EINVAL, "send args as an array of strings",
		    "invalid request: args must be an array");
	}
	buf_init(&line, 1u << 20);
	if (args == NULL) {
		/* A command line alone runs as a shell line. */
		buf_append(&line, cmd->valuestring, strlen(cmd->valuestring));
	} else {
		quote(&line, cmd->valuestring);
		cJSON_ArrayForEach(a, args) {
			if (!cJSON_IsString(a)) {
				buf_free(&line);
				cJSON_Delete(body);
				free(image);
				return rest_fail(rq->conn, SBX_EINVAL, "send args as an array of "
				    "strings", "invalid request: every args item must be a string");
			}
			buf_append(&line, " ", 1);
			quote(&line, a->valuestring);
		}
	}
	if (buf_append(&line, "", 1) < 0) {
		buf_free(&line);
		cJSON_Delete(body);
		free(image);
		return rest_fail(rq->conn, SBX_EINVAL, NULL, "invalid request: the command "
		    "line is over 1 MiB");
	}
	cJSON_Delete(body);
	if (sess_get(rq, name, 1, image, id, &e) < 0) {
		free(image);
		buf_free(&line);
		return rest_error(rq->conn, &e);
	}
	free(image);
	j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "command", line.data);
	cJSON_AddStringToObject(j, "session", name);
	rc = rest_op_begin(&op, rq->r, "sandbox_exec", id, j, &e);
	cJSON_Delete(j);
	if (rc < 0) {
		buf_free(&line);
		sess_put(rq->r, name);
		return rest_error(rq->conn, &e);
	}
	k.output = cJSON_CreateArray();
	k.conn = rq->conn;
	buf_init(&k.cur, OUTPUT_MAX);
	o.command = line.data;
	o.timeout_s = EXEC_TIMEOUT_S;
	o.origin = "rest";
	o.cancelled = gone;
	rc = core_exec(rq->r->core, id, &o, on_chunk, &k, &res, &e);
	chunk_flush(&k);
	buf_free(&k.cur);
	buf_free(&line);
	if (rc < 0 && gone(&k))
		mcp_call_local_cancel(op.call);
	rest_op_end(&op, rc, &e);
	sess_put(rq->r, name);
	if (rc < 0) {
		cJSON_Delete(k.output);
		return rest_error(rq->conn, &e);
	}
	out = cJSON_CreateObject();
	cJSON_AddNumberToObject(out, "exitCode", res.signo > 0 ? 128 + res.signo :
	    res.exit_code);
	cJSON_AddNumberToObject(out, "duration", (double)res.duration_ms);
	cJSON_AddItemToObject(out, "output", k.output);
	return rest_json(rq->conn, MHD_HTTP_OK, out);
}

/* --- files and sessions ------------------------------------------------- */

static enum MHD_Result
files(struct rest_req *rq, const char *name, const char *tool, const char *op, cJSON *req,
    const char *rename_from, const char *rename_to)
{
	struct rest_op o;
	struct sbx_err e;
	cJSON *out = NULL;
	char id[32];
	int rc;

	if (sess_get(rq, name, 1, NULL, id, &e) < 0) {
		cJSON_Delete(req);
		return rest_error(rq->conn, &e);
	}
	if (rest_op_begin(&o, rq->r, tool, id, req, &e) < 0) {
		cJSON_Delete(req);
		sess_put(rq->r, name);
		return rest_error(rq->conn, &e);
	}
	rc = core_files(rq->r->core, id, op, req, "rest", &out, &e);
	rest_op_end(&o, rc, &e);
	sess_put(rq->r, name);
	cJSON_Delete(req);
	if (rc < 0) {
		cJSON_Delete(out);
		return rest_error(rq->conn, &e);
	}
	if (out == NULL)
		out = cJSON_CreateObject();
	if (rename_from != NULL) {
		cJSON *v = cJSON_DetachItemFromObjectCaseSensitive(out, rename_from);
		if (v != NULL)
			cJSON_AddItemToObject(out, rename_to, v);
	}
	if (strcmp(op, "write") == 0)
		cJSON_AddBoolToObject(out, "success", 1);
	return rest_json(rq->conn, MHD_HTTP_OK, out);
}

static enum MHD_Result
destroy(struct rest_req *rq, const char *name)
{
	struct rest *r = rq->r;
	struct rest_sess *s;
	struct sbx_err e;
	cJSON *args, *out = NULL, *o;
	char id[32];
	int rc;

	if (sess_get(rq, name, 0, NULL, id, &e) < 0)
		return rest_error(rq->conn, &e);
	args = cJSON_CreateObject();
	rc = rest_tool(r, rq->conn, "sandbox_destroy", id, args, &out, &e);
	cJSON_Delete(args);
	cJSON_Delete(out);
	pthread_mutex_lock(&r->mu);
	if ((s = sess_find(r, name)) != NULL && rc == 0)
		sess_drop(r, s);
	else if (s != NULL)
		s->busy--;
	pthread_mutex_unlock(&r->mu);
	if (rc < 0)
		return rest_error(rq->conn, &e);
	o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "success", 1);
	cJSON_AddStringToObject(o, "session", name);
	cJSON_AddStringToObject(o, "sandbox_id", id);
	return rest_json(rq->conn, MHD_HTTP_OK, o);
}

static enum MHD_Result
list(struct rest_req *rq)
{
	struct rest *r = rq->r;
	cJSON *o = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(o, "sessions");
	int64_t now = now_ms(), idle = config_int(core_config(r->core), "session_idle");
	char when[40];

	pthread_mutex_lock(&r->mu);
	for (struct rest_sess *s = r->sessions; s != NULL; s = s->next) {
		cJSON *x;
		if (!sees(rq, s->key))
			continue;	/* another key's */
		x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "id", s->name);
		cJSON_AddStringToObject(x, "sandbox_id", s->id);
		mcp_iso8601(s->created_ms, when, sizeof when);
		cJSON_AddStringToObject(x, "createdAt", when);
		mcp_iso8601(wall_ms() - (now - s->used_ms), when, sizeof when);
		cJSON_AddStringToObject(x, "lastActivity", when);
		cJSON_AddNumberToObject(x, "idleMs", (double)(now - s->used_ms));
		cJSON_AddItemToArray(a, x);
	}
	pthread_mutex_unlock(&r->mu);
	cJSON_AddNumberToObject(o, "idleTimeoutMs", (double)idle * 1000);
	return rest_json(rq->conn, MHD_HTTP_OK, o);
}

/* MemAvailable and MemTotal in MiB; -1 when /proc/meminfo says nothing. */
static void
meminfo(long *avail, long *total)
{
	FILE *f = fopen("/proc/meminfo", "re");
	char l[256];
	long kb;

	*avail = *total = -1;
	while (f != NULL && fgets(l, sizeof l, f) != NULL) {
		if (sscanf(l, "MemAvailable: %ld kB", &kb) == 1)
			*avail = kb / 1024;
		else if (sscanf(l, "MemTotal: %ld kB", &kb) == 1)
			*total = kb / 1024;
	}
	if (f)
		fclose(f);
}

static enum MHD_Result
ready(struct rest_req *rq)
{
	cJSON *o = cJSON_CreateObject(), *m;
	long avail, total;
	int ok;

	meminfo(&avail, &total);
	ok = avail < 0 || avail >= READY_MEM_MIB;
	cJSON_AddStringToObject(o, "status", ok ? "ready" : "not_ready");
	m = cJSON_AddObjectToObject(o, "memory");
	cJSON_AddNumberToObject(m, "availableMiB", (double)avail);
	cJSON_AddNumberToObject(m, "totalMiB", (double)total);
	cJSON_AddNumberToObject(m, "thresholdMiB", READY_MEM_MIB);
	if (!ok)
		cJSON_AddStringToObject(o, "reason", "less memory available than the "
		    "threshold: new sandboxes may not start");
	return rest_json(rq->conn, ok ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE, o);
}

/* --- the routes (server/rest-routes.c's table) ------------------------------ */

enum MHD_Result
rest_ready(struct rest_req *rq)
{
	return ready(rq);
}

enum MHD_Result
rest_sessions(struct rest_req *rq)
{
	return list(rq);
}

enum MHD_Result
rest_templates(struct rest_req *rq)
{
	return templates(rq);
}

enum MHD_Result
rest_session_end(struct rest_req *rq)
{
	return destroy(rq, rq->seg[1]);
}

enum MHD_Result
rest_session_execute(struct rest_req *rq)
{
	return execute(rq, rq->seg[1]);
}

enum MHD_Result
rest_session_write(struct rest_req *rq)
{
	const cJSON *p, *c;
	struct sbx_err e;
	cJSON *body, *req;

	if ((body = rest_body_object(rq, &e)) == NULL)
		return rest_error(rq->conn, &e);
	p = cJSON_GetObjectItemCaseSensitive(body, "path");
	c = cJSON_GetObjectItemCaseSensitive(body, "content");
	if (!cJSON_IsString(p) || p->valuestring[0] == '\0' || !cJSON_IsString(c)) {
		cJSON_Delete(body);
		return rest_fail(rq->conn, SBX_EINVAL, "send {\"path\": \"...\", \"content\": "
		    "\"...\"}", "invalid request: path and content must be strings");
	}
	req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "path", p->valuestring);
	cJSON_AddStringToObject(req, "content", c->valuestring);
	cJSON_Delete(body);
	return files(rq, rq->seg[1], "sandbox_write_file", "write", req, NULL, NULL);
}

enum MHD_Result
rest_session_read(struct rest_req *rq)
{
	const char *p = rest_query(rq, "path");
	cJSON *req;

	if (p == NULL || p[0] == '\0')
		return rest_fail(rq->conn, SBX_EINVAL, "add ?path=FILE", "invalid request: path "
		    "is required");
	req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "path", p);
	return files(rq, rq->seg[1], "sandbox_read_file", "read", req, NULL, NULL);
}

enum MHD_Result
rest_session_files(struct rest_req *rq)
{
	const char *p = rest_query(rq, "path");
	int rec = rest_query_bool(rq, "recursive", 0);
	cJSON *req;

	if (rec < 0)
		return rest_fail(rq->conn, SBX_EINVAL, "give recursive=true or false",
		    "invalid request: recursive is not a boolean");
	req = cJSON_CreateObject();
	if (p != NULL && p[0] != '\0')
		cJSON_AddStringToObject(req, "path", p);
	cJSON_AddBoolToObject(req, "recursive", rec);
	return files(rq, rq->seg[1], "sandbox_list_files", "list", req, "entries", "files");
}

/* --- reaping --------------------------------------------------------------- */

static void *
reaper(void *arg)
{
	struct rest *r = arg;

	pthread_mutex_lock(&r->mu);
	while (!r->stopping) {
		struct timespec ts;
		int64_t idle = config_int(core_config(r->core), "session_idle") * 1000;
		struct rest_sess *victim = NULL;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&r->cv, &r->mu, &ts);
		if (r->stopping || idle <= 0)
			continue;
		for (struct rest_sess *s = r->sessions; s != NULL; s = s->next)
			if (s->busy == 0 && now_ms() - s->used_ms >= idle)
				victim = s;
		if (victim == NULL)
			continue;
		char name[SESSION_NAME_MAX + 1], id[32];
		struct sbx_err e;
		snprintf(name, sizeof name, "%s", victim->name);
		snprintf(id, sizeof id, "%s", victim->id);
		sess_drop(r, victim);
		pthread_mutex_unlock(&r->mu);
		/* The operator's own policy (session_idle): not held for approval. */
		log_info("rest: session %s idle for %lld s: destroying sandbox %s", name,
		    (long long)(idle / 1000), id);
		if (core_destroy(r->core, id, NULL, &e) < 0 && e.code != SBX_ENOTFOUND)
			log_warnx("rest: session %s: %s", name, e.msg);
		pthread_mutex_lock(&r->mu);
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

void
rest_compat_start(struct rest *r)
{
	r->reaper_started = pthread_create(&r->reaper, NULL, reaper, r) == 0;
}

void
rest_compat_stop(struct rest *r)
{
	pthread_mutex_lock(&r->mu);
	r->stopping = 1;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	if (r->reaper_started)
		pthread_join(r->reaper, NULL);
	while (r->sessions != NULL)
		sess_drop(r, r->sessions);
}
