/* What runs in each sandbox, as its agent's journal says, for listings (the
 * console's RUN column): commands started by anyone, in the background too,
 * and still true after the core that started them went away.  Only a core
 * that keeps track (the core server, the console's own core) asks: once for a
 * sandbox it has not asked yet, again when an exec this core runs there is
 * about to start, has started (a listing may have asked in between, before the
 * journal had it) and has ended, and every RUNS_EVERY_MS while something
 * runs; a sandbox where nothing runs
 * costs nothing.  The asks are a watcher's (X-Sbx-Watch): an idle policy goes
 * on counting.  Sandboxes of this machine only (a backend that is host_bound):
 * a listing does not wait on a network. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "backends/backend.h"
#include "core/client/agentc.h"
#include "core/core-int.h"
#include "lib/util.h"

#define RUNS_MAX	4096
#define RUNS_EVERY_MS	2000
#define TRACKERS_MAX	8
#define RUNS_ASK_MS	3000	/* a journal that takes longer is asked later */

struct run {
	const struct core *core;
	char	 id[32];
	int64_t	 asked_ms;	/* 0: never */
	int64_t	 used_ms;
	int	 stale;		/* an exec started here since */
	int	 known;		/* the journal answered once */
	int	 running;
	char	 now[96];	/* the newest running command */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct run runs[RUNS_MAX];
static const struct core *trackers[TRACKERS_MAX];

void
core_runs_track(struct core *c, int on)
{
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < TRACKERS_MAX; i++)
		if (trackers[i] == (on ? NULL : c)) {
			trackers[i] = on ? c : NULL;
			break;
		}
	/* A core that goes leaves nothing a later one at its address could take
	 * for its own. */
	for (size_t i = 0; !on && i < RUNS_MAX; i++)
		if (runs[i].core == c)
			memset(&runs[i], 0, sizeof runs[i]);
	pthread_mutex_unlock(&mu);
}

static int
tracked(const struct core *c)
{
	for (size_t i = 0; i < TRACKERS_MAX; i++)
		if (trackers[i] == c)
			return 1;
	return 0;
}

/* With mu held. */
static struct run *
run_of(const struct core *c, const char *id, int64_t now)
{
	struct run *old = &runs[0];

	for (size_t i = 0; i < RUNS_MAX; i++) {
		if (runs[i].core == c && strcmp(runs[i].id, id) == 0)
			return &runs[i];
		if (runs[i].used_ms < old->used_ms)
			old = &runs[i];
	}
	memset(old, 0, sizeof *old);
	old->core = c;
	snprintf(old->id, sizeof old->id, "%s", id);
	old->used_ms = now;
	return old;
}

void
core_runs_note(struct core *c, const char *id)
{
	pthread_mutex_lock(&mu);
	if (tracked(c))
		run_of(c, id, now_ms())->stale = 1;
	pthread_mutex_unlock(&mu);
}

/* Ask s's agent: *running and the newest running command; -1 when it could
 * not be asked. */
static int
ask(const struct sandbox *s, int *running, char *now, size_t len)
{
	struct sbx_err e;
	struct agentc *a = agentc_new(s, &e);
	cJSON *ans = NULL;
	const cJSON *x;
	double newest = -1;
	int rc = -1;

	if (a == NULL)
		return -1;
	agentc_set_watch(a);
	if (agentc_call(a, "GET", "/v1/execs", NULL, RUNS_ASK_MS, &ans, &e) >= 0) {
		*running = 0;
		now[0] = '\0';
		cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(ans, "execs")) {
			const char *st = cJSON_GetStringValue(cJSON_GetObjectItem(x, "state"));
			const char *cmd = cJSON_GetStringValue(cJSON_GetObjectItem(x, "command"));
			double at = cJSON_GetNumberValue(cJSON_GetObjectItem(x, "started_ms"));
			if (st == NULL || strcmp(st, "running") != 0)
				continue;
			(*running)++;
			if (at >= newest && cmd != NULL) {
				newest = at;
				snprintf(now, len, "%s", cmd);
			}
		}
		rc = 0;
	}
	cJSON_Delete(ans);
	agentc_free(a);
	return rc;
}

void
core_runs_attach(struct core *c, struct sandbox *s, cJSON *usage)
{
	const struct backend *b = backend_find(s->backend);
	int64_t now = now_ms();
	int need, running = 0;
	char cmd[96];
	struct sbx_err e;
	struct run *r;

	if (s->state != SBX_RUNNING || b == NULL || !b->host_bound || s->host != NULL)
		return;
	pthread_mutex_lock(&mu);
	if (!tracked(c)) {
		pthread_mutex_unlock(&mu);
		return;
	}
	r = run_of(c, s->id, now);
	r->used_ms = now;
	need = r->asked_ms == 0 || r->stale || (r->running > 0 && now - r->asked_ms >=
	    RUNS_EVERY_MS);
	if (need) {
		/* Taken now: a second listing meanwhile does not ask again. */
		r->asked_ms = now;
		r->stale = 0;
	}
	pthread_mutex_unlock(&mu);
	if (need && core_refresh_endpoint(s, &e) == 0 && ask(s, &running, cmd, sizeof cmd) == 0) {
		pthread_mutex_lock(&mu);
		r = run_of(c, s->id, now);
		r->known = 1;
		r->running = running;
		snprintf(r->now, sizeof r->now, "%s", cmd);
		pthread_mutex_unlock(&mu);
	}
	pthread_mutex_lock(&mu);
	r = run_of(c, s->id, now);
	if (r->known) {
		cJSON_AddNumberToObject(usage, "execs_running", r->running);
		if (r->running > 0)
			cJSON_AddStringToObject(usage, "exec_now", r->now);
	}
	pthread_mutex_unlock(&mu);
}
