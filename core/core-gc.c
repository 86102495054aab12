/* gc (each backend's sweep of what sandboxes left on the host,
 * then the records of terminated sandboxes with nothing left), the count of
 * orphans a listing shows, and the sweep of orphans a new core server runs. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backends/backend.h"
#include "core/core-int.h"
#include "core/net.h"
#include "core/paths.h"
#include "core/registry.h"
#include "lib/log.h"
#include "lib/util.h"

#define ORPHANS_FRESH_MS 2000	/* a listing's count is read again after this */

struct core_orphans {
	pthread_mutex_t	 mu;
	int64_t		 at;		/* when counted, 0: never */
	int		 n;
	pthread_t	 sweeper;	/* core_sweep_start's */
	int		 sweeping, stop;	/* stop: atomic */
	int64_t		 sweep_ms;	/* for how long */
	struct core	*core;
};

struct core_orphans *
core_orphans_new(void)
{
	struct core_orphans *o = xcalloc(1, sizeof *o);

	pthread_mutex_init(&o->mu, NULL);
	return o;
}

void
core_orphans_free(struct core_orphans *o)
{
	if (o == NULL)
		return;
	__atomic_store_n(&o->stop, 1, __ATOMIC_RELAXED);
	if (o->sweeping)
		pthread_join(o->sweeper, NULL);
	pthread_mutex_destroy(&o->mu);
	free(o);
}

/* The sweep a new core server runs: everything at once, then once a second
 * what the count sees (children of a dead core still starting hold their
 * directories' locks a moment).  A thread of its own: a sweep may take a
 * while, and clients are served meanwhile. */
static void *
sweeper_main(void *arg)
{
	struct core_orphans *o = arg;
	struct sbx_err e;
	int n, full = 1;

	for (int64_t end = now_ms() + o->sweep_ms; now_ms() < end &&
	    !__atomic_load_n(&o->stop, __ATOMIC_RELAXED); full = 0) {
		if ((n = core_sweep_orphans(o->core, full, &e)) < 0)
			log_warnx("cannot remove the sandboxes no record names: %s", e.msg);
		else if (n > 0)
			log_info("removed %d sandbox%s that no record named (a core died while "
			    "creating them)", n, n == 1 ? "" : "es");
		if (full)
			(void)registry_tidy(&e);
		for (int i = 0; i < 10 && !__atomic_load_n(&o->stop, __ATOMIC_RELAXED); i++)
			poll(NULL, 0, 100);
	}
	return NULL;
}

void
core_sweep_start(struct core *c, int64_t for_ms)
{
	struct core_orphans *o = core_orphans_of(c);

	if (o->sweeping)
		return;
	o->core = c;
	o->sweep_ms = for_ms;
	o->sweeping = pthread_create(&o->sweeper, NULL, sweeper_main, o) == 0;
}

/* What one gc collects from the backends. */
struct collect {
	struct registry		*reg;		/* as read at the start */
	struct core_gc_result	*res;		/* NULL: count orphans only */
	char			**ids;		/* the orphans' ids, counted once */
	size_t			 nids;
};

static void
collect_found(void *arg, const char *kind, const char *id, const char *what, int live)
{
	struct collect *k = arg;
	int orphan = registry_get(k->reg, id) == NULL, seen = 0;

	if (orphan) {
		for (size_t i = 0; i < k->nids && !seen; i++)
			seen = strcmp(k->ids[i], id) == 0;
		if (!seen) {
			k->ids = xrealloc(k->ids, (k->nids + 1) * sizeof *k->ids);
			k->ids[k->nids++] = xstrdup(id);
		}
	}
	if (k->res != NULL) {
		struct core_gc_item *it;
		k->res->items = xrealloc(k->res->items, (k->res->nitems + 1) * sizeof *k->res->items);
		it = &k->res->items[k->res->nitems++];
		memset(it, 0, sizeof *it);
		snprintf(it->kind, sizeof it->kind, "%s", kind);
		snprintf(it->id, sizeof it->id, "%s", id);
		it->what = xstrdup(what);
		it->live = live;
		it->orphan = orphan;
	}
}

/* The registry holds id as live now (read again). */
static int
collect_recorded(void *arg, const char *id)
{
	struct sbx_err e;
	struct registry *r = registry_load(&e);
	const struct sandbox *s;
	int yes;

	(void)arg;
	/* Unreadable: take it as recorded, and remove nothing on a guess. */
	if (r == NULL)
		return 1;
	s = registry_get(r, id);
	yes = s != NULL && s->state != SBX_TERMINATED;
	registry_free(r);
	return yes;
}

/* Each backend's gc with the ids the registry holds (all: every_record, else
 * the live ones) as known.  How many sandboxes' leftovers went, -1 with e. */
static int
sweep(struct collect *k, int every_record, int dry_run, int quick, struct sbx_err *e)
{
	/* What no sandbox uses goes with an operator's gc, not with a sweep of
	 * orphans (a create may be making a template this moment). */
	struct backend_gc g = { .dry_run = dry_run, .quick = quick, .caches = !every_record,
	    .found = collect_found, .recorded = collect_recorded, .arg = k };
	char **known;
	size_t nknown = 0;
	int removed = 0;

	if ((k->reg = registry_load(e)) == NULL)
		return -1;
	known = xcalloc(registry_count(k->reg) + 1, sizeof *known);
	for (size_t i = 0; i < registry_count(k->reg); i++)
		if (every_record || registry_at(k->reg, i)->state != SBX_TERMINATED)
			known[nknown++] = registry_at(k->reg, i)->id;
	g.known = known;
	g.nknown = nknown;
	for (size_t i = 0; backends[i] != NULL; i++) {
		struct sbx_err sub;
		int n = backends[i]->gc(&g, &sub);
		if (n < 0)
			log_warnx("gc of backend %s: %s", backends[i]->name, sub.msg);
		else
			removed += n;
	}
	free(known);
	return removed;
}

static void
collect_free(struct collect *k)
{
	registry_free(k->reg);
	for (size_t i = 0; i < k->nids; i++)
		free(k->ids[i]);
	free(k->ids);
}

static int is_creating(const struct sandbox *s) { return s->state == SBX_CREATING; }

int
core_gc(struct core *c, int dry_run, struct core_gc_result *res, struct sbx_err *e)
{
	struct collect k = { .res = res };
	struct sandbox **v;
	size_t n;
	int rc, n0;

	memset(res, 0, sizeof *res);
	/* A create that died long ago (still `creating`) is terminated now, and
	 * its leftovers are this gc's; other records are asked as before. */
	if (core_registry_pick(c, is_creating, &v, &n, e) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		core_reconcile(c, v[i]);
	core_list_free(v, n);
	/* Everything but terminated sandboxes is live: their leftovers are what
	 * gc is for. */
	rc = sweep(&k, 0, dry_run, 0, e);
	res->orphans = (int)k.nids;
	collect_free(&k);
	if (rc < 0)
		return -1;
	res->removed_backend = rc;
	if (!dry_run && (n0 = core_pool_reclaim(e)) > 0)
		res->removed_backend += n0;
	if (!dry_run)
		(void)registry_tidy(e);

	/* Terminated records whose directories are gone: nothing left to show.
	 * A dry run counts every terminated record: its leftovers would go. */
	if (core_list(c, &v, &n, e) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *dir = NULL;
		struct stat st;
		if (v[i]->state != SBX_TERMINATED)
			continue;
		dir = paths_sandbox_dir(v[i]->id, e);
		if (dir == NULL || (!dry_run && (stat(dir, &st) == 0 || errno != ENOENT)))
			continue;
		if (!dry_run && registry_delete(v[i]->id, e) < 0) {
			core_list_free(v, n);
			return -1;
		}
		res->dropped_records++;
		if (dry_run)
			continue;
		core_net_forget(v[i]->id);
		core_events_emit(c, "sandbox.removed", v[i]->id, NULL);
	}
	core_list_free(v, n);
	pthread_mutex_lock(&core_orphans_of(c)->mu);
	core_orphans_of(c)->at = 0;
	pthread_mutex_unlock(&core_orphans_of(c)->mu);
	return 0;
}

void
core_gc_result_free(struct core_gc_result *res)
{
	for (size_t i = 0; i < res->nitems; i++)
		free(res->items[i].what);
	free(res->items);
	res->items = NULL;
	res->nitems = 0;
}

int
core_orphans(struct core *c)
{
	struct core_orphans *o = core_orphans_of(c);
	struct collect k = { 0 };
	struct sbx_err e;
	int n;

	pthread_mutex_lock(&o->mu);
	if (o->at != 0 && now_ms() - o->at < ORPHANS_FRESH_MS) {
		n = o->n;
		pthread_mutex_unlock(&o->mu);
		return n;
	}
	n = sweep(&k, 1, 1, 1, &e) < 0 ? 0 : (int)k.nids;
	collect_free(&k);
	o->n = n;
	o->at = now_ms();
	pthread_mutex_unlock(&o->mu);
	return n;
}

int
core_sweep_orphans(struct core *c, int full, struct sbx_err *e)
{
	struct collect k = { 0 };
	int rc;

	if (!full && core_orphans(c) == 0)
		return 0;
	/* Every record is known: only what no record names goes. */
	rc = sweep(&k, 1, 0, 0, e);
	collect_free(&k);
	pthread_mutex_lock(&core_orphans_of(c)->mu);
	core_orphans_of(c)->at = 0;
	pthread_mutex_unlock(&core_orphans_of(c)->mu);
	return rc;
}
