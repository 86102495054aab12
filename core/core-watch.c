/* Watching one sandbox's execs (core-watch.h): a watcher thread runs rounds,
 * one per selection.  A round lists the journal (core_execs), follows the
 * recent execs' output, then follows the agent's event stream and starts a
 * follower for each new exec; a new selection ends the round and its
 * followers (they look at the stop flag about once a second). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core-watch.h"
#include "lib/log.h"
#include "lib/util.h"
#include "core/core-int.h"

#define FOLLOW_MAX	48	/* execs followed at once in the watched sandbox */
#define RECENT_EXECS	16	/* exited execs whose output is loaded on select */

struct follower {
	pthread_t		 t;
	struct core_watch	*w;
	char			 sandbox[32];
	char			 exec[32];
};

struct core_watch {
	struct core	*core;
	core_watch_fn	 fn;
	void		*arg;
	pthread_t	 watcher;

	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;
	char		 sel[32];
	unsigned	 gen;
	int		 quit;
	volatile int	 wstop;		/* the current round ends */

	/* The current round's followers (the watcher thread only). */
	struct follower	*fol[FOLLOW_MAX];
	size_t		 nfol;
	char		 known[FOLLOW_MAX * 4][32];
	size_t		 nknown;
};

static int
follow_line(const cJSON *line, void *arg)
{
	struct follower *f = arg;
	const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(line, "type"));
	cJSON *m;

	if (type == NULL)
		return 0;
	if (strcmp(type, "stdout") == 0 || strcmp(type, "stderr") == 0) {
		const char *d = cJSON_GetStringValue(cJSON_GetObjectItem(line, "data"));
		m = cJSON_CreateObject();
		cJSON_AddStringToObject(m, "sandbox", f->sandbox);
		cJSON_AddStringToObject(m, "exec", f->exec);
		/* Bytes that are not UTF-8 are shown as a mark, not as garbage. */
		cJSON_AddStringToObject(m, "data", d ? d : "\xe2\x80\xa6(binary output)\n");
		cJSON_AddStringToObject(m, "stream", type);
		f->w->fn("output", m, f->w->arg);
	} else if (strcmp(type, "exit") == 0) {
		m = cJSON_Duplicate(line, 1);
		cJSON_DeleteItemFromObject(m, "type");
		cJSON_AddStringToObject(m, "sandbox", f->sandbox);
		cJSON_AddStringToObject(m, "exec", f->exec);
		f->w->fn("exit", m, f->w->arg);
	} else if (strcmp(type, "gap") == 0) {
		m = cJSON_CreateObject();
		cJSON_AddStringToObject(m, "sandbox", f->sandbox);
		cJSON_AddStringToObject(m, "exec", f->exec);
		cJSON_AddStringToObject(m, "data", "\xe2\x80\xa6(earlier output dropped)\n");
		f->w->fn("output", m, f->w->arg);
	}
	return 0;
}

static void *
follower(void *arg)
{
	struct follower *f = arg;
	struct sbx_err e;

	if (core_exec_follow(f->w->core, f->sandbox, f->exec, 1, follow_line, f,
	    &f->w->wstop, &e) < 0)
		log_debug("watch: follow %s %s: %s", f->sandbox, f->exec, e.msg);
	return NULL;
}

static int
known(struct core_watch *w, const char *id)
{
	for (size_t i = 0; i < w->nknown; i++)
		if (strcmp(w->known[i], id) == 0)
			return 1;
	if (w->nknown < ARRAY_SIZE(w->known))
		snprintf(w->known[w->nknown++], sizeof w->known[0], "%s", id);
	return 0;
}

static void
follow_exec(struct core_watch *w, const char *sandbox, const char *id)
{
	struct follower *f;

	if (w->nfol >= FOLLOW_MAX)
		return;
	f = xcalloc(1, sizeof *f);
	f->w = w;
	snprintf(f->sandbox, sizeof f->sandbox, "%s", sandbox);
	snprintf(f->exec, sizeof f->exec, "%s", id);
	if (pthread_create(&f->t, NULL, follower, f) != 0) {
		free(f);
		return;
	}
	w->fol[w->nfol++] = f;
}

static void
post_exec(struct core_watch *w, const char *sandbox, const cJSON *x)
{
	cJSON *m = cJSON_Duplicate(x, 1);

	cJSON_DeleteItemFromObject(m, "sandbox");
	cJSON_AddStringToObject(m, "sandbox", sandbox);
	w->fn("exec", m, w->arg);
}

struct round {
	struct core_watch	*w;
	const char		*sandbox;
};

static int
agent_event(const cJSON *line, void *arg)
{
	struct round *r = arg;
	const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(line, "type"));
	const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(line, "id"));

	if (type == NULL || id == NULL || strcmp(type, "exec.started") != 0 ||
	    known(r->w, id))
		return 0;
	cJSON *x = cJSON_Duplicate(line, 1);
	cJSON_DeleteItemFromObject(x, "type");
	cJSON_AddStringToObject(x, "state", "running");
	cJSON_AddNumberToObject(x, "started_ms",
	    cJSON_GetNumberValue(cJSON_GetObjectItem(line, "ts_ms")));
	post_exec(r->w, r->sandbox, x);
	cJSON_Delete(x);
	follow_exec(r->w, r->sandbox, id);
	return 0;
}

/* One round of watching sandbox id, until the selection changes. */
static int
watch_round(struct core_watch *w, const char *id)
{
	cJSON *execs = NULL, *x;
	struct round r = { w, id };
	struct sbx_err e;
	int n, skip;

	w->nknown = 0;
	if (core_execs(w->core, id, &execs, &e) < 0)
		return -1;
	/* Every exec already in the journal is known (so the event replay below
	 * does not start it again); the recent ones are shown and followed. */
	n = cJSON_GetArraySize(execs);
	skip = n > RECENT_EXECS ? n - RECENT_EXECS : 0;
	cJSON_ArrayForEach(x, execs) {
		const char *xid = cJSON_GetStringValue(cJSON_GetObjectItem(x, "id"));
		if (xid == NULL)
			continue;
		known(w, xid);
		if (skip-- > 0)
			continue;
		post_exec(w, id, x);
		follow_exec(w, id, xid);
	}
	cJSON_Delete(execs);
	return core_agent_events(w->core, id, 1, agent_event, &r, &w->wstop, &e);
}

static void *
watcher(void *arg)
{
	struct core_watch *w = arg;
	unsigned seen = 0;
	char id[32];

	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->quit && seen == w->gen)
			pthread_cond_wait(&w->cv, &w->mu);
		if (w->quit)
			break;
		seen = w->gen;
		snprintf(id, sizeof id, "%s", w->sel);
		w->wstop = 0;
		pthread_mutex_unlock(&w->mu);
		int rc = id[0] ? watch_round(w, id) : 0;
		/* The round is over (new selection, or the stream broke):
		 * its followers stop within a second. */
		w->wstop = 1;
		for (size_t i = 0; i < w->nfol; i++) {
			pthread_join(w->fol[i]->t, NULL);
			free(w->fol[i]);
		}
		w->nfol = 0;
		pthread_mutex_lock(&w->mu);
		if (rc < 0 && seen == w->gen && !w->quit) {
			/* Not running yet, or its agent went away: look again. */
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 2;
			pthread_cond_timedwait(&w->cv, &w->mu, &ts);
			if (seen == w->gen)
				seen--;
		}
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

struct core_watch *
core_watch_new(struct core *c, core_watch_fn fn, void *arg)
{
	struct core_watch *w = xcalloc(1, sizeof *w);

	w->core = c;
	w->fn = fn;
	w->arg = arg;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	if (pthread_create(&w->watcher, NULL, watcher, w) != 0)
		fatal("cannot start a watcher thread");
	return w;
}

void
core_watch_select(struct core_watch *w, const char *id)
{
	pthread_mutex_lock(&w->mu);
	if (strcmp(w->sel, id ? id : "") != 0) {
		snprintf(w->sel, sizeof w->sel, "%s", id ? id : "");
		w->gen++;
		w->wstop = 1;
		pthread_cond_broadcast(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
}

void
core_watch_free(struct core_watch *w)
{
	if (w == NULL)
		return;
	pthread_mutex_lock(&w->mu);
	w->quit = 1;
	w->wstop = 1;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->watcher, NULL);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	free(w);
}

/* --- following a sandbox live: its event stream and an exec's output --------- */

struct follow {
	core_line_fn	 fn;
	void		*arg;
	volatile int	*stop;
};

static int
stream_line(const cJSON *line, void *arg, struct sbx_err *e)
{
	struct follow *f = arg;

	if (f->stop != NULL && *f->stop)
		return sbx_error(e, SBX_EIO, NULL, "stopped");
	if (f->fn(line, f->arg) < 0)
		return sbx_error(e, SBX_EIO, NULL, "stopped");
	return 0;
}

/* The agent client asks about once a second even when no line comes, so a
 * quiet stream is left within a second of *stop. */
static int
follow_poll(void *arg, uint64_t down, uint64_t up)
{
	struct follow *f = arg;

	return f->stop != NULL && *f->stop;
}

static int
follow(struct core *c, const char *key, const char *path, core_line_fn fn, void *arg,
    volatile int *stop, struct sbx_err *e)
{
	struct sandbox *s = NULL;
	struct agentc *a = NULL;
	struct follow f = { fn, arg, stop };
	int rc;

	if (core_agent_for(c, key, &s, &a, e) < 0)
		return -1;
	agentc_set_origin(a, "console");
	agentc_set_progress(a, follow_poll, &f);
	rc = agentc_stream(a, "GET", path, NULL, stream_line, &f, e);
	agentc_free(a);
	sandbox_free(s);
	if (rc < 0 && stop != NULL && *stop)
		return 0;
	return rc < 0 ? -1 : 0;
}

int
core_agent_events(struct core *c, const char *key, uint64_t from, core_line_fn fn,
    void *arg, volatile int *stop, struct sbx_err *e)
{
	char path[64];

	snprintf(path, sizeof path, "/v1/events?from=%llu&follow=1",
	    (unsigned long long)(from ? from : 1));
	return follow(c, key, path, fn, arg, stop, e);
}

int
core_exec_follow(struct core *c, const char *key, const char *exec_id, uint64_t from,
    core_line_fn fn, void *arg, volatile int *stop, struct sbx_err *e)
{
	char path[96];
	size_t n = strlen(exec_id);

	if (n == 0 || n >= 32 || strspn(exec_id, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != n)
		return sbx_error(e, SBX_EINVAL, NULL, "'%s' is not an exec id (like x12)",
		    exec_id);
	snprintf(path, sizeof path, "/v1/execs/%s/stream?from=%llu", exec_id,
	    (unsigned long long)(from ? from : 1));
	return follow(c, key, path, fn, arg, stop, e);
}
