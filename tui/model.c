/* The console's model (see model.h): sandboxes, forwards, the selected
 * sandbox's execs with their output, its log, the activity journal and the
 * approvals, each change answered with what to redraw. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/jspec.h"
#include "core/core.h"
#include "lib/buf.h"
#include "lib/util.h"
#include "tui/model.h"

#define LINE_MAX_BYTES 4096

/* --- lines -------------------------------------------------------------- */

void
lines_init(struct lines *l, size_t cap)
{
	memset(l, 0, sizeof *l);
	l->cap = cap;
	l->v = xcalloc(cap, sizeof *l->v);
	l->ts = xcalloc(cap, sizeof *l->ts);
	l->err = xcalloc(cap, 1);
}

void
lines_clear(struct lines *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[(l->start + i) % l->cap]);
	l->start = l->n = 0;
	l->open = 0;
	l->dropped = 0;
}

void
lines_free(struct lines *l)
{
	if (l->v == NULL)
		return;
	lines_clear(l);
	free(l->v);
	free(l->ts);
	free(l->err);
	l->v = NULL;
}

const char *
lines_at(const struct lines *l, size_t i)
{
	return l->v[(l->start + i) % l->cap];
}

int64_t
lines_ts(const struct lines *l, size_t i)
{
	return l->ts[(l->start + i) % l->cap];
}

int
lines_err(const struct lines *l, size_t i)
{
	return l->err[(l->start + i) % l->cap];
}

static void
lines_push(struct lines *l, char *s)
{
	if (l->n == l->cap) {
		free(l->v[l->start]);
		l->v[l->start] = NULL;
		l->start = (l->start + 1) % l->cap;
		l->n--;
		l->dropped++;
	}
	l->v[(l->start + l->n) % l->cap] = s;
	l->ts[(l->start + l->n) % l->cap] = wall_ms();
	l->err[(l->start + l->n) % l->cap] = (unsigned char)l->stream_err;
	l->n++;
}

void
lines_append(struct lines *l, const char *text, size_t len)
{
	while (len > 0) {
		const char *nl = memchr(text, '\n', len);
		size_t take = nl ? (size_t)(nl - text) : len;

		/* A line stays open only for more of its own stream. */
		if (l->open && l->n > 0 && lines_err(l, l->n - 1) != l->stream_err)
			l->open = 0;
		if (l->open && l->n > 0) {
			char **last = &l->v[(l->start + l->n - 1) % l->cap];
			size_t have = strlen(*last), add = take;
			if (have + add > LINE_MAX_BYTES)
				add = have < LINE_MAX_BYTES ? LINE_MAX_BYTES - have : 0;
			*last = xrealloc(*last, have + add + 1);
			memcpy(*last + have, text, add);
			(*last)[have + add] = '\0';
			if (add < take) {
				/* Over the line cap: the rest starts a line of its own. */
				l->open = 0;
				text += add;
				len -= add;
				continue;
			}
		} else {
			size_t add = take > LINE_MAX_BYTES ? LINE_MAX_BYTES : take;
			lines_push(l, xstrndup(text, add));
			if (add < take) {
				l->open = 0;
				text += add;
				len -= add;
				continue;
			}
		}
		l->open = nl == NULL;
		text += take + (nl != NULL);
		len -= take + (nl != NULL);
	}
}

/* --- model -------------------------------------------------------------- */

void
model_init(struct model *m)
{
	memset(m, 0, sizeof *m);
	lines_init(&m->logs, MODEL_LOG_LINES);
	m->sessions = -1;
	snprintf(m->approve_mode, sizeof m->approve_mode, "off");
}

static void
exec_free(struct m_exec *x)
{
	if (x == NULL)
		return;
	free(x->command);
	lines_free(&x->out);
	free(x);
}

static void
sandboxes_free(struct model *m)
{
	for (size_t i = 0; i < m->nsb; i++)
		cJSON_Delete(m->sb[i].rec);
	free(m->sb);
	m->sb = NULL;
	m->nsb = 0;
}

void
model_free(struct model *m)
{
	sandboxes_free(m);
	free(m->fwd);
	for (size_t i = 0; i < m->nexecs; i++)
		exec_free(m->execs[i]);
	for (size_t i = 0; i < m->nact; i++) {
		struct m_activity *a = &m->act[(m->act_start + i) % MODEL_ACTIVITY_MAX];
		free(a->args);
		free(a->message);
		free(a->result);
	}
	lines_free(&m->logs);
	free(m->log_path);
	cJSON_Delete(m->approvals);
	cJSON_Delete(m->net);
	cJSON_Delete(m->net_asks);
}

int
model_say(struct model *m, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m->message, sizeof m->message, fmt, ap);
	va_end(ap);
	/* One line: the prompt line has no room for more. */
	for (char *p = m->message; *p; p++)
		if (*p == '\n' || *p == '\r' || *p == '\t')
			*p = ' ';
	m->message_err = err;
	m->message_ms = now_ms();
	return DIRTY_PROMPT;
}

struct m_sandbox *
model_sandbox(struct model *m, const char *id)
{
	for (size_t i = 0; i < m->nsb; i++)
		if (strcmp(m->sb[i].id, id) == 0)
			return &m->sb[i];
	return NULL;
}

const struct m_sandbox *
model_find(const struct model *m, const char *key)
{
	const struct m_sandbox *hit = NULL;
	size_t n = strlen(key);

	if (n == 0)
		return NULL;
	for (size_t i = 0; i < m->nsb; i++)
		if (strcmp(m->sb[i].id, key) == 0)
			return &m->sb[i];
	for (size_t i = 0; i < m->nsb; i++)
		if (strcmp(m->sb[i].name, key) == 0)
			return &m->sb[i];
	for (size_t i = 0; i < m->nsb; i++)
		if (strncmp(m->sb[i].id, key, n) == 0) {
			if (hit != NULL)
				return NULL;
			hit = &m->sb[i];
		}
	return hit;
}

void
model_net_ask_what(const struct model *m, const cJSON *a, char *buf, size_t len)
{
	char dest[300];
	const struct m_sandbox *s = model_find(m, jstr(a, "sandbox", ""));

	model_net_dest(a, dest, sizeof dest);
	snprintf(buf, len, "%s%s%s%s wants %s%s%s%.160s%s", jstr(a, "sandbox", ""),
	    s && s->name[0] ? " (" : "", s && s->name[0] ? s->name : "",
	    s && s->name[0] ? ")" : "", dest,
	    strcmp(jstr(a, "kind", ""), "request") == 0 ? " (asked ahead" : "",
	    *jstr(a, "reason", "") ? ": " : "", jstr(a, "reason", ""),
	    strcmp(jstr(a, "kind", ""), "request") == 0 ? ")" : "");
}

void
model_approval_what(const struct model *m, const cJSON *a, char *buf, size_t len)
{
	const cJSON *args = cJSON_GetObjectItem(a, "arguments");
	const char *tool = *jstr(a, "tool", "") ? jstr(a, "tool", "") : "a tool";
	const char *key = *jstr(a, "sandbox", "") ? jstr(a, "sandbox", "") :
	    jstr(args, "sandbox_id", "");
	const struct m_sandbox *s = model_find(m, key);

	if (s != NULL && s->name[0])
		snprintf(buf, len, "%s on %s (%s)", tool, s->id, s->name);
	else if (s != NULL)
		snprintf(buf, len, "%s on %s", tool, s->id);
	else if (*key)
		snprintf(buf, len, "%s on %s", tool, key);
	else if (*jstr(args, "name", ""))
		snprintf(buf, len, "%s named %s", tool, jstr(args, "name", ""));
	else
		snprintf(buf, len, "%s", tool);
}

/* A host path or a host resource: what the operator must see first. */
static int
is_host_arg(const char *k)
{
	return strncmp(k, "local_", 6) == 0 || strcmp(k, "host") == 0;
}

char *
model_approval_args(const cJSON *a)
{
	const cJSON *args = cJSON_GetObjectItem(a, "arguments"), *it;
	struct buf b;

	buf_init(&b, 1 << 20);
	for (int pass = 0; pass < 2; pass++)
		cJSON_ArrayForEach(it, args) {
			if (it->string == NULL || is_host_arg(it->string) != (pass == 0))
				continue;
			char *v = cJSON_IsString(it) ? xstrdup(it->valuestring) :
			    cJSON_PrintUnformatted(it);
			buf_printf(&b, "%s%s: %s", b.len ? "\n" : "", it->string, v ? v : "");
			free(v);
		}
	buf_append(&b, "", 1);
	return buf_steal(&b);
}

struct m_exec *
model_exec(struct model *m, const char *id)
{
	for (size_t i = 0; i < m->nexecs; i++)
		if (strcmp(m->execs[i]->id, id) == 0)
			return m->execs[i];
	return NULL;
}

const struct m_activity *
model_activity(const struct model *m, size_t i)
{
	return &m->act[(m->act_start + i) % MODEL_ACTIVITY_MAX];
}

/* "x12" sorts after "x9". */
static long
exec_num(const char *id)
{
	return strtol(id + (id[0] == 'x'), NULL, 10);
}

static struct m_exec *
exec_get(struct model *m, const char *id)
{
	struct m_exec *x = model_exec(m, id);
	size_t at;

	if (x != NULL || *id == '\0')
		return x;
	if (m->nexecs == MODEL_EXECS_MAX) {
		/* Drop the oldest that has exited (the first, if all run). */
		size_t k = 0;
		for (size_t i = 0; i < m->nexecs; i++)
			if (!m->execs[i]->running) {
				k = i;
				break;
			}
		exec_free(m->execs[k]);
		memmove(&m->execs[k], &m->execs[k + 1], (m->nexecs - k - 1) * sizeof x);
		m->nexecs--;
	}
	x = xcalloc(1, sizeof *x);
	snprintf(x->id, sizeof x->id, "%s", id);
	x->exit_code = -1;
	x->running = 1;
	x->oom_base = -1;
	if (model_sandbox(m, m->sel) != NULL)
		x->oom_base = model_sandbox(m, m->sel)->oom_kills;
	lines_init(&x->out, MODEL_EXEC_LINES);
	for (at = m->nexecs; at > 0 && exec_num(m->execs[at - 1]->id) > exec_num(id); at--)
		;
	memmove(&m->execs[at + 1], &m->execs[at], (m->nexecs - at) * sizeof x);
	m->execs[at] = x;
	m->nexecs++;
	return x;
}

/* "command exited 0" for an exec that ended, on the prompt line. */
static int
say_end(struct model *m, const struct m_exec *x)
{
	if (x->oom)
		return model_say(m, 0, "command ended by the OOM killer (memory limit)");
	if (x->signal[0])
		return model_say(m, 0, "command killed by %s", x->signal);
	return model_say(m, 0, "command exited %d", x->exit_code);
}

int
model_watch_exec(struct model *m, const char *sandbox, const char *exec_id)
{
	struct m_exec *x = strcmp(sandbox, m->sel) == 0 ? model_exec(m, exec_id) : NULL;

	if (x != NULL && !x->running) {
		m->watch_exec[0] = '\0';
		return say_end(m, x);
	}
	snprintf(m->watch_exec, sizeof m->watch_exec, "%s", exec_id);
	snprintf(m->watch_sandbox, sizeof m->watch_sandbox, "%s", sandbox);
	return 0;
}

static void
exec_set_end(struct model *m, struct m_exec *x, const cJSON *o)
{
	const cJSON *sig = cJSON_GetObjectItem(o, "signal");

	x->running = 0;
	x->exit_code = (int)jnum(o, "exit_code", -1);
	snprintf(x->signal, sizeof x->signal, "%s", cJSON_IsString(sig) ? sig->valuestring : "");
	x->oom = strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(o, "reason")) ?: "", "oom") == 0;
	x->duration_ms = (int64_t)jnum(o, "duration_ms", (double)x->duration_ms);
	if (m->watch_exec[0] && strcmp(x->id, m->watch_exec) == 0 &&
	    strcmp(m->sel, m->watch_sandbox) == 0) {
		m->watch_exec[0] = '\0';
		say_end(m, x);
	}
}

static int
apply_exec(struct model *m, const cJSON *o)
{
	struct m_exec *x;

	if (strcmp(jstr(o, "sandbox", ""), m->sel) != 0)
		return 0;
	if ((x = exec_get(m, jstr(o, "id", ""))) == NULL)
		return 0;
	if (x->command == NULL || *jstr(o, "command", "")) {
		free(x->command);
		x->command = xstrdup(jstr(o, "command", ""));
	}
	if (*jstr(o, "origin", ""))
		snprintf(x->origin, sizeof x->origin, "%s", jstr(o, "origin", ""));
	x->started_ms = (int64_t)jnum(o, "started_ms", (double)x->started_ms);
	x->duration_ms = (int64_t)jnum(o, "duration_ms", 0);
	if (strcmp(jstr(o, "state", ""), "exited") == 0)
		exec_set_end(m, x, o);
	return DIRTY_RIGHT | DIRTY_LIST;
}

static int
apply_list(struct model *m, const cJSON *arr)
{
	const cJSON *r;
	size_t n = (size_t)cJSON_GetArraySize(arr), i = 0;
	struct m_sandbox *v = xcalloc(n ? n : 1, sizeof *v);

	cJSON_ArrayForEach(r, arr) {
		struct m_sandbox *s = &v[i++], *old = model_sandbox(m, jstr(r, "id", ""));
		snprintf(s->id, sizeof s->id, "%s", jstr(r, "id", ""));
		snprintf(s->name, sizeof s->name, "%s", jstr(r, "name", ""));
		/* A remote sandbox shows its host: "ssh:big". */
		if (cJSON_IsString(cJSON_GetObjectItem(r, "host")))
			snprintf(s->backend, sizeof s->backend, "%s:%s", jstr(r, "backend", ""),
			    jstr(r, "host", ""));
		else
			snprintf(s->backend, sizeof s->backend, "%s", jstr(r, "backend", ""));
		snprintf(s->state, sizeof s->state, "%s", jstr(r, "state", ""));
		s->created_ms = (int64_t)jnum(r, "created_at", 0);
		s->expires_ms = (int64_t)jnum(r, "expires_at", 0);
		s->memory_mib = (int64_t)jnum(cJSON_GetObjectItem(r, "limits"), "memory_mib", 0);
		s->cpus = jnum(cJSON_GetObjectItem(r, "limits"), "cpus", 0);
		s->disk_mib = (int64_t)jnum(cJSON_GetObjectItem(r, "limits"), "disk_mib", 0);
		s->nfwd = cJSON_GetArraySize(cJSON_GetObjectItem(r, "forwards"));
		const cJSON *u = cJSON_GetObjectItem(r, "usage");
		s->cpu_pct = jnum(u, "cpu_pct", -1);
		s->mem_bytes = (int64_t)jnum(u, "mem_bytes", -1);
		s->pids = (int64_t)jnum(u, "pids", -1);
		s->disk_bytes = (int64_t)jnum(u, "disk_bytes", -1);
		s->oom_kills = (int64_t)jnum(u, "oom_kills", -1);
		/* What runs: the agent's journal where the core asks it (true
		 * after a core restart too), else what the events said. */
		const cJSON *er = cJSON_GetObjectItem(u, "execs_running");
		if (cJSON_IsNumber(er)) {
			s->journal = 1;
			s->running = er->valueint;
			snprintf(s->now, sizeof s->now, "%s", jstr(u, "exec_now", ""));
		} else {
			s->running = old ? old->running : -1;
			if (old)
				memcpy(s->now, old->now, sizeof s->now);
		}
		s->rec = cJSON_Duplicate(r, 1);
	}
	/* Unchanged lists are the common case (a refresh every second). */
	int same = n == m->nsb;
	for (i = 0; same && i < n; i++)
		same = cJSON_Compare(v[i].rec, m->sb[i].rec, 1);
	if (same) {
		for (i = 0; i < n; i++)
			cJSON_Delete(v[i].rec);
		free(v);
		return 0;
	}
	sandboxes_free(m);
	m->sb = v;
	m->nsb = n;
	return DIRTY_LIST | DIRTY_TITLE | DIRTY_RIGHT;
}

static int
apply_forwards(struct model *m, const cJSON *arr)
{
	const cJSON *r;
	size_t n = (size_t)cJSON_GetArraySize(arr), i = 0;
	struct m_forward *v = xcalloc(n ? n : 1, sizeof *v);

	cJSON_ArrayForEach(r, arr) {
		struct m_forward *f = &v[i++];
		snprintf(f->sandbox, sizeof f->sandbox, "%s", jstr(r, "sandbox", ""));
		snprintf(f->bind, sizeof f->bind, "%s", jstr(r, "bind", ""));
		f->local = (int)jnum(r, "local", 0);
		f->remote = (int)jnum(r, "remote", 0);
		f->live = cJSON_IsTrue(cJSON_GetObjectItem(r, "live"));
		f->conns = (uint64_t)jnum(r, "conns", 0);
		f->bytes_in = (uint64_t)jnum(r, "bytes_in", 0);
		f->bytes_out = (uint64_t)jnum(r, "bytes_out", 0);
		f->failures = (uint64_t)jnum(r, "failures", 0);
		snprintf(f->last_error, sizeof f->last_error, "%s", jstr(r, "last_error", ""));
	}
	if (n == m->nfwd && n > 0 && memcmp(v, m->fwd, n * sizeof *v) == 0) {
		free(v);
		return 0;
	}
	if (n == 0 && m->nfwd == 0) {
		free(v);
		return 0;
	}
	free(m->fwd);
	m->fwd = v;
	m->nfwd = n;
	return DIRTY_FWD | DIRTY_RIGHT;
}

/* A fresh activity entry at the end, the oldest dropped when full. */
static struct m_activity *
act_push(struct model *m)
{
	struct m_activity *a;

	if (m->nact == MODEL_ACTIVITY_MAX) {
		a = &m->act[m->act_start];
		free(a->args);
		free(a->message);
		free(a->result);
		m->act_start = (m->act_start + 1) % MODEL_ACTIVITY_MAX;
		m->nact--;
	}
	a = &m->act[(m->act_start + m->nact++) % MODEL_ACTIVITY_MAX];
	memset(a, 0, sizeof *a);
	return a;
}

/* Who made a tool call, as Activity names it: "human" for the operator's
 * console (its session's kind; the console's own core sends none), else the
 * client's name. */
static const char *
call_client(const cJSON *d)
{
	const char *kind = jstr(d, "kind", ""), *client = jstr(d, "client", "");

	if (strcmp(kind, "console") == 0 || (*kind == '\0' && strcmp(client, "console") == 0))
		return "human";
	return client;
}

/* forward.opened: a forward the CLI started through the core server comes
 * with no tool call of its own, so the event stands for it, as client cli.
 * One an MCP client asked for has its sandbox_port_forward row. */
static int
ev_forward_opened(struct model *m, const cJSON *ev, const char *sb, const cJSON *d)
{
	struct m_activity *a;

	for (size_t i = m->nact; i-- > 0;) {
		a = &m->act[(m->act_start + i) % MODEL_ACTIVITY_MAX];
		double dt = jnum(ev, "time_ms", (double)wall_ms()) - (double)a->time_ms;
		if (strcmp(a->tool, "sandbox_port_forward") == 0 &&
		    strcmp(a->sandbox, sb) == 0 && dt > -1000 && dt < 10000)
			return 0;
	}
	a = act_push(m);
	a->time_ms = (int64_t)jnum(ev, "time_ms", (double)wall_ms());
	snprintf(a->sandbox, sizeof a->sandbox, "%s", sb);
	snprintf(a->client, sizeof a->client, "cli");
	snprintf(a->tool, sizeof a->tool, "forward");
	a->args = d ? cJSON_PrintUnformatted(d) : NULL;
	if (a->args == NULL)
		a->args = xstrdup("");
	a->duration_ms = 0;
	snprintf(a->outcome, sizeof a->outcome, "ok");
	return DIRTY_RIGHT;
}

/* tool.started: a new Activity row, running. */
static int
ev_tool_started(struct model *m, const cJSON *ev, const char *sb, const cJSON *d)
{
	struct m_activity *a = act_push(m);

	a->time_ms = (int64_t)jnum(ev, "time_ms", (double)wall_ms());
	/* The CLI names a sandbox as its user typed it: keep the id. */
	const struct m_sandbox *ks = model_find(m, sb);
	snprintf(a->sandbox, sizeof a->sandbox, "%s", ks ? ks->id : sb);
	snprintf(a->client, sizeof a->client, "%s", call_client(d));
	/* An HTTP caller's API key, by its name (never the key itself). */
	snprintf(a->key, sizeof a->key, "%s", jstr(d, "key", ""));
	snprintf(a->tool, sizeof a->tool, "%s", jstr(d, "tool", ""));
	char *args = cJSON_PrintUnformatted(cJSON_GetObjectItem(d, "arguments"));
	a->args = args ? args : xstrdup("");
	if (strlen(a->args) > 65536)
		a->args[65536] = '\0';
	char *rq = cJSON_PrintUnformatted(cJSON_GetObjectItem(d, "request_id"));
	snprintf(a->request, sizeof a->request, "%s", rq ? rq : "");
	free(rq);
	a->duration_ms = -1;
	snprintf(a->outcome, sizeof a->outcome, "running");
	return DIRTY_RIGHT;
}

/* tool.finished: its running row (same tool, client and request) ends; an
 * exec that failed, or ran in the background, ends the sandbox's count too. */
static int
ev_tool_finished(struct model *m, const char *sb, const cJSON *d)
{
	char *rq = cJSON_PrintUnformatted(cJSON_GetObjectItem(d, "request_id"));
	struct m_activity *a, *hit = NULL;

	for (size_t i = m->nact; i-- > 0;) {
		a = &m->act[(m->act_start + i) % MODEL_ACTIVITY_MAX];
		if (a->duration_ms >= 0 || strcmp(a->tool, jstr(d, "tool", "")) != 0 ||
		    strcmp(a->client, call_client(d)) != 0 ||
		    strcmp(a->request, rq ? rq : "") != 0)
			continue;
		hit = a;
		a->duration_ms = (int64_t)jnum(d, "duration_ms", 0);
		snprintf(a->outcome, sizeof a->outcome, "%s", jstr(d, "outcome", ""));
		if (*jstr(d, "message", ""))
			a->message = xstrdup(jstr(d, "message", ""));
		const cJSON *res = cJSON_GetObjectItem(d, "result");
		if (res != NULL && (a->result = cJSON_Print(res)) != NULL &&
		    strlen(a->result) > 65536)
			a->result[65536] = '\0';
		break;
	}
	free(rq);
	/* An exec that failed emits no exec.exited: its call's end says it. */
	struct m_sandbox *xs = model_sandbox(m, hit ? hit->sandbox : "");
	if (strcmp(jstr(d, "tool", ""), "sandbox_exec") == 0 && xs == NULL)
		xs = (struct m_sandbox *)model_find(m, sb);
	/* A background exec emits none either: the core does not see it end
	 * (where the journal is read, it still runs: it says when it ends). */
	int bg = hit && hit->args && strstr(hit->args, "\"background\":true") != NULL &&
	    !(xs != NULL && xs->journal);
	if (strcmp(jstr(d, "tool", ""), "sandbox_exec") == 0 && xs != NULL &&
	    (strcmp(jstr(d, "outcome", ""), "ok") != 0 || bg) && xs->running > 0 &&
	    --xs->running == 0)
		xs->now[0] = '\0';
	return DIRTY_RIGHT | DIRTY_LIST;
}

/* approval.*: the pending list loses the approval, and gains it when it is
 * requested. */
static int
ev_approval(struct model *m, const char *type, const cJSON *d)
{
	const char *id = jstr(d, "id", "");

	if (m->approvals == NULL)
		m->approvals = cJSON_CreateArray();
	for (int i = cJSON_GetArraySize(m->approvals); i-- > 0;)
		if (strcmp(jstr(cJSON_GetArrayItem(m->approvals, i), "id", ""), id) == 0)
			cJSON_DeleteItemFromArray(m->approvals, i);
	if (strcmp(type, "approval.requested") == 0 && d != NULL)
		cJSON_AddItemToArray(m->approvals, cJSON_Duplicate(d, 1));
	return DIRTY_PROMPT | DIRTY_TITLE;
}

static int
apply_event(struct model *m, const cJSON *ev)
{
	const char *type = jstr(ev, "type", ""), *sb = jstr(ev, "sandbox", "");
	const cJSON *d = cJSON_GetObjectItem(ev, "data");
	struct m_sandbox *s;

	if (strcmp(type, "forward.opened") == 0)
		return ev_forward_opened(m, ev, sb, d);
	if (strcmp(type, "tool.started") == 0)
		return ev_tool_started(m, ev, sb, d);
	if (strcmp(type, "tool.finished") == 0)
		return ev_tool_finished(m, sb, d);
	if (strncmp(type, "net.", 4) == 0)
		return model_net(m, "event", ev);
	if (strncmp(type, "approval.", 9) == 0)
		return ev_approval(m, type, d);
	if ((s = model_sandbox(m, sb)) == NULL)
		return 0;
	if (strcmp(type, "sandbox.state") == 0 && *jstr(d, "state", "")) {
		snprintf(s->state, sizeof s->state, "%s", jstr(d, "state", ""));
		return DIRTY_LIST | DIRTY_RIGHT;
	}
	/* What runs where, for the sandboxes this core runs commands in. */
	if (strcmp(type, "exec.started") == 0) {
		s->running = s->running < 0 ? 1 : s->running + 1;
		snprintf(s->now, sizeof s->now, "%s", jstr(d, "command", ""));
		return DIRTY_LIST;
	}
	if (strcmp(type, "exec.exited") == 0 || (strcmp(type, "exec.finished") == 0)) {
		if (s->running > 0 && --s->running == 0)
			s->now[0] = '\0';
		return DIRTY_LIST;
	}
	return 0;
}

int
model_apply(struct model *m, const cJSON *msg)
{
	const char *k = jstr(msg, "k", "");
	struct m_exec *x;

	if (strcmp(k, "list") == 0) {
		const cJSON *o = cJSON_GetObjectItem(msg, "orphans");
		int was = m->orphans;
		m->orphans = cJSON_IsNumber(o) && o->valueint > 0 ? o->valueint : 0;
		return apply_list(m, cJSON_GetObjectItem(msg, "sandboxes")) |
		    (m->orphans != was ? DIRTY_TITLE : 0);
	}
	if (strcmp(k, "forwards") == 0)
		return apply_forwards(m, cJSON_GetObjectItem(msg, "forwards"));
	if (strcmp(k, "event") == 0)
		return apply_event(m, msg);
	if (strcmp(k, "exec") == 0)
		return apply_exec(m, msg);
	if (strcmp(k, "output") == 0 || strcmp(k, "exit") == 0) {
		if (strcmp(jstr(msg, "sandbox", ""), m->sel) != 0 ||
		    (x = exec_get(m, jstr(msg, "exec", ""))) == NULL)
			return 0;
		if (*k == 'o') {
			const char *d = jstr(msg, "data", "");
			x->out.stream_err = strcmp(jstr(msg, "stream", ""), "stderr") == 0;
			lines_append(&x->out, d, strlen(d));
			return DIRTY_RIGHT;
		}
		exec_set_end(m, x, msg);
		return DIRTY_RIGHT | DIRTY_LIST;
	}
	if (strcmp(k, "log") == 0) {
		const char *d = jstr(msg, "data", "");
		if (strcmp(jstr(msg, "sandbox", ""), m->sel) != 0)
			return 0;
		if (cJSON_IsTrue(cJSON_GetObjectItem(msg, "reset"))) {
			lines_clear(&m->logs);
			m->log_state = cJSON_IsFalse(cJSON_GetObjectItem(msg, "exists")) ? -1 : 1;
		}
		lines_append(&m->logs, d, strlen(d));
		return DIRTY_RIGHT;
	}
	if (strcmp(k, "core") == 0) {
		if (strcmp(jstr(msg, "state", ""), "lost") == 0) {
			m->core_lost = 1;
			model_say(m, 1, "the core server went away: reconnecting");
			return DIRTY_TITLE | DIRTY_PROMPT;
		}
		m->core_lost = 0;
		m->core_pid = (int)jnum(msg, "pid", 0);
		if (cJSON_IsTrue(cJSON_GetObjectItem(msg, "reconnected"))) {
			m->core_reconnects++;
			model_say(m, 0, "reconnected to a new core server (pid %d)", m->core_pid);
		}
		return DIRTY_TITLE | DIRTY_PROMPT;
	}
	if (strcmp(k, "sessions") == 0) {
		m->sessions = (int)jnum(msg, "mcp", -1);
		return DIRTY_TITLE;
	}
	if (strcmp(k, "net") == 0 || strcmp(k, "net_pending") == 0)
		return model_net(m, k, msg);
	if (strcmp(k, "approvals") == 0) {
		cJSON_Delete(m->approvals);
		m->approvals = cJSON_Duplicate(cJSON_GetObjectItem(msg, "approvals"), 1);
		if (*jstr(msg, "mode", ""))
			snprintf(m->approve_mode, sizeof m->approve_mode, "%s", jstr(msg, "mode", ""));
		return DIRTY_TITLE | DIRTY_PROMPT;
	}
	return 0;
}

int
model_select(struct model *m, const char *id)
{
	if (strcmp(m->sel, id ? id : "") == 0)
		return 0;
	snprintf(m->sel, sizeof m->sel, "%s", id ? id : "");
	for (size_t i = 0; i < m->nexecs; i++)
		exec_free(m->execs[i]);
	m->nexecs = 0;
	lines_clear(&m->logs);
	free(m->log_path);
	m->log_path = NULL;
	m->log_off = 0;
	m->log_state = 0;
	cJSON_Delete(m->net);
	m->net = NULL;
	return DIRTY_RIGHT | DIRTY_LIST;
}

int
model_poll_logs(struct model *m)
{
	char buf[65536];
	int fd, dirty = 0;
	ssize_t n;

	if (m->log_path == NULL)
		return 0;
	/* Never through a symlink the sandbox put there (open_regular_nofollow). */
	if ((fd = open_regular_nofollow(m->log_path)) < 0)
		return 0;
	/* A long log: only its last 1 MiB the first time. */
	off_t size = lseek(fd, 0, SEEK_END);
	if (m->log_off == 0 && size > (1 << 20))
		m->log_off = (uint64_t)size - (1 << 20);
	if (size >= 0 && (uint64_t)size < m->log_off) {
		/* Truncated or replaced: start again. */
		lines_clear(&m->logs);
		m->log_off = 0;
	}
	for (int k = 0; k < 16 && (n = pread(fd, buf, sizeof buf, (off_t)m->log_off)) > 0;
	    k++) {
		lines_append(&m->logs, buf, (size_t)n);
		m->log_off += (uint64_t)n;
		dirty = DIRTY_RIGHT;
	}
	close(fd);
	return dirty;
}
