/* Warm pools: the core server keeps sandboxes ready for the creates that
 * match a profile of the `pool` option (backend, image, limits, network).
 *
 * A member is a sandbox made with its final random id and a fresh secret that
 * no client has seen, in which nothing but its agent has run.  Its record is in
 * the registry with `pool` naming its profile, which hides it from every key,
 * from listings and from events; it waits with no idle policy and a long
 * deadline (POOL_LIFETIME_S, replaced well before).  A claim is one registry
 * transaction (the name checked, the record given its name, owner, deadline
 * and policies, `pool` cleared) and one agent call (POST /v1/claim: the
 * deadline counted from now, the idle policy); the refill thread
 * then makes another.  The pools' keeper holds STATE/pool.lock for its life
 * (one per state directory, even when servers of two runtime directories
 * share it); members go when the pool stops (the core server exits), those
 * of a keeper that died when the next one starts, or at `sbxtop gc` when
 * none runs. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/core-int.h"
#include "lib/fault.h"
#include "core/image/image.h"
#include "lib/log.h"
#include "core/paths.h"
#include "core/registry.h"
#include "lib/util.h"

#define POOL_PROFILES_MAX	16
#define POOL_SIZE_MAX		64
#define POOL_LIFETIME_S		86400
/* A member this close to its deadline is replaced. */
#define POOL_RENEW_S		3600
#define POOL_CHECK_MS		5000
/* After a failed fill, wait before trying that profile again. */
#define POOL_BACKOFF_MS		10000
/* Refill once claims have paused this long: a create that took a member
 * answers and its client exits without a new sandbox's start beside it on
 * the CPU, and a burst of creates takes what is there first. */
#define POOL_REFILL_AFTER_MS	150

struct pool_profile {
	char		 name[32];
	int		 size;
	char		*backend;
	char		*image;		/* NULL: the backend's default */
	char		*network;
	struct sbx_limits limits;
	int64_t		 retry_at;	/* monotonic ms: after a failed fill */
	/* A backend with snapshots (qemu): the first member booted is saved as
	 * the snapshot NAME.base, and the others restore it instead of booting.
	 * The refill thread's alone. */
	char		 base[48];	/* "" until made */
	int		 base_tried;
};

struct core_pool {
	struct core		*core;
	int			 lock_fd;	/* STATE/pool.lock, held */
	pthread_mutex_t		 mu;
	pthread_cond_t		 cv;
	pthread_t		 th;
	int			 stop;
	struct pool_profile	 prof[POOL_PROFILES_MAX];
	size_t			 nprof;
	struct member {
		char		 id[32];
		size_t		 prof;
		struct sandbox	*rec;	/* as create recorded it */
		int		 conn;	/* a kept connection to its agent, or -1 */
	}			 *ready;
	size_t			 nready;
	int64_t			 claims, fills;
	int64_t			 last_claim;	/* monotonic ms */
};

static double
mono_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void
profiles_free(struct pool_profile *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(p[i].backend);
		free(p[i].image);
		free(p[i].network);
	}
}

/* One profile: "COUNT [key=value]..."; what it leaves out is the
 * configuration's. */
static int
profile_parse(const struct config *cfg, char *text, size_t idx, struct pool_profile *p,
    struct sbx_err *e)
{
	char *save = NULL, *tok = strtok_r(text, " \t", &save), *end;
	const char *image = config_str(cfg, "image");
	const struct backend *b;
	long n;

	memset(p, 0, sizeof *p);
	snprintf(p->name, sizeof p->name, "pool-%zu", idx + 1);
	if (tok == NULL || (n = strtol(tok, &end, 10), *end != '\0') || n < 0 || n > POOL_SIZE_MAX)
		return sbx_error(e, SBX_EINVAL, "see sbxtop.conf(5), pool",
		    "pool profile %zu: expected a count of 0 to %d first", idx + 1, POOL_SIZE_MAX);
	p->size = (int)n;
	p->backend = xstrdup(config_str(cfg, "backend"));
	p->network = xstrdup(config_str(cfg, "network"));
	p->limits.memory_mib = config_int(cfg, "memory");
	p->limits.cpus = config_num(cfg, "cpus");
	p->limits.pids = config_int(cfg, "pids");
	p->limits.disk_mib = config_int(cfg, "disk");
	while ((tok = strtok_r(NULL, " \t", &save)) != NULL) {
		char *v = strchr(tok, '=');
		static const char *const keys[] = { "backend", "image", "network", "memory",
			"cpus", "pids", "name", "disk" };
		size_t k;

		if (v != NULL)
			*v++ = '\0';
		for (k = 0; k < ARRAY_SIZE(keys) && strcmp(keys[k], tok) != 0; k++)
			;
		if (v == NULL || k == ARRAY_SIZE(keys))
			return sbx_error(e, SBX_EINVAL, "keys: backend, image, network, memory, "
			    "disk, cpus, pids, name", "pool profile %zu: '%s' is not key=value of a "
			    "known key", idx + 1, tok);
		if (k == 6) {
			if (*v == '\0' || strlen(v) >= sizeof p->name)
				return sbx_error(e, SBX_EINVAL, NULL, "pool profile %zu: name: 1 to "
				    "31 characters", idx + 1);
			snprintf(p->name, sizeof p->name, "%s", v);
			continue;
		}
		if (config_check(keys[k], v, CONFIG_FILE, e) < 0)
			return -1;
		if (k == 0)
			free(p->backend), p->backend = xstrdup(v);
		else if (k == 1)
			image = v;
		else if (k == 2)
			free(p->network), p->network = xstrdup(v);
		else if (k == 3)
			p->limits.memory_mib = strtoll(v, NULL, 10);
		else if (k == 4)
			p->limits.cpus = strtod(v, NULL);
		else if (k == 5)
			p->limits.pids = strtoll(v, NULL, 10);
		else
			p->limits.disk_mib = strtoll(v, NULL, 10);
	}
	/* An OCI image's canonical reference, as a create's is when it is matched. */
	p->image = image != NULL && *image ? core_image_key(p->backend, image) : NULL;
	if ((b = backend_find(p->backend)) == NULL || !b->warm_pool)
		return sbx_error(e, SBX_EUNSUPPORTED, "pools hold ns and qemu sandboxes",
		    "pool profile %zu: the %s backend has no warm pools", idx + 1, p->backend);
	if (strcmp(p->network, "rules") == 0)
		return sbx_error(e, SBX_EUNSUPPORTED, "network rules are each sandbox's own: "
		    "those creates stay cold", "pool profile %zu: a pool holds network none or "
		    "egress", idx + 1);
	return 0;
}

/* The `pool` option: profiles separated by ';'. */
static int
profiles_parse(const struct config *cfg, struct pool_profile *out, size_t *n,
    struct sbx_err *e)
{
	_cleanup_free_ char *text = xstrdup(config_str(cfg, "pool"));
	char *save = NULL;

	*n = 0;
	for (char *one = strtok_r(text, ";", &save); one != NULL; one = strtok_r(NULL, ";", &save)) {
		if (strspn(one, " \t") == strlen(one))
			continue;
		if (*n == POOL_PROFILES_MAX) {
			profiles_free(out, *n);
			return sbx_error(e, SBX_EINVAL, NULL, "at most %d pool profiles",
			    POOL_PROFILES_MAX);
		}
		if (profile_parse(cfg, one, *n, &out[*n], e) < 0) {
			profiles_free(out, *n + 1);
			*n = 0;
			return -1;
		}
		for (size_t i = 0; i < *n; i++)
			if (strcmp(out[i].name, out[*n].name) == 0) {
				profiles_free(out, *n + 1);
				*n = 0;
				return sbx_error(e, SBX_EINVAL, NULL, "two pool profiles are named %s",
				    out[i].name);
			}
		(*n)++;
	}
	return 0;
}

int
core_name_check(const struct sandbox *o, const char *name, struct sbx_err *e)
{
	char hint[128];

	if (name == NULL || o->pool != NULL || o->name == NULL || strcmp(o->name, name) != 0 ||
	    o->state == SBX_TERMINATED)
		return 0;
	snprintf(hint, sizeof hint, "choose another --name, or run `sbxtop destroy %s` first",
	    o->id);
	return sbx_error_reason(e, SBX_EINVAL, SBX_R_NAME_TAKEN, hint,
	    "the name '%s' is taken by %s", name, o->id);
}

/* ---- members ------------------------------------------------------------ */

static int
drop_ids(struct registry *r, void *arg, struct sbx_err *e)
{
	(void)e;
	for (char **id = arg; *id != NULL; id++)
		registry_remove(r, *id);
	return 0;
}

/* Destroy every member in the registry (only the one with id only_id, when
 * given) and drop their records in one transaction.  Returns how many went. */
static int
members_destroy(const char *only_id, struct sbx_err *e)
{
	struct registry *r = registry_load(e);
	char **ids;
	size_t n = 0;

	if (r == NULL)
		return -1;
	ids = xcalloc(registry_count(r) + 1, sizeof *ids);
	for (size_t i = 0; i < registry_count(r); i++) {
		struct sandbox *s = registry_at(r, i);
		const struct backend *b = backend_find(s->backend);
		struct sbx_err sub;
		if (s->pool == NULL || (only_id != NULL && strcmp(s->id, only_id) != 0))
			continue;
		if (b != NULL && b->destroy(s, &sub) < 0) {
			log_warnx("cannot destroy pool member %s: %s", s->id, sub.msg);
			continue;
		}
		ids[n++] = xstrdup(s->id);
	}
	registry_free(r);
	if (n > 0 && registry_update(drop_ids, ids, e) < 0)
		n = 0;
	for (size_t i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
	return (int)n;
}

static int
has_bases(const struct backend *b)
{
	return b != NULL && b->snapshot != NULL && b->restore != NULL && b->snapshot_rm != NULL;
}

/* Remove profile pr's base snapshot (or one an earlier server left). */
static void
base_drop(struct pool_profile *pr)
{
	const struct backend *b = backend_find(pr->backend);
	char name[sizeof pr->base];
	struct sbx_err e;

	if (!has_bases(b))
		return;
	snprintf(name, sizeof name, "%s.base", pr->name);
	if (b->snapshot_rm(name, &e) == 0)
		log_info("pool %s: snapshot %s removed", pr->name, name);
	pr->base[0] = '\0';
}

/* After the first member of pr booted (s, its record): save it as pr's
 * base.  A failure leaves the members booting. */
static void
base_make(struct core_pool *p, struct pool_profile *pr, struct sandbox *s)
{
	char name[sizeof pr->base];
	struct sbx_err e;
	int64_t t0 = now_ms();

	pr->base_tried = 1;
	base_drop(pr);
	snprintf(name, sizeof name, "%s.base", pr->name);
	if (core_snapshot_of(p->core, s, name, &e) < 0) {
		log_warnx("pool %s: cannot snapshot %s (%s): its members boot", pr->name, s->id,
		    e.msg);
		return;
	}
	memcpy(pr->base, name, sizeof pr->base);
	log_info("pool %s: %s saved as snapshot %s in %lld ms: the next members restore it",
	    pr->name, s->id, name, (long long)(now_ms() - t0));
}

/* Make one member of profile i (called without the lock), with core_create as
 * core.c installs it in the core (core_create claims from these pools). */
static int
member_make(struct core_pool *p, size_t i, struct sandbox **out, struct sbx_err *e)
{
	struct pool_profile *pr = &p->prof[i];
	const struct backend *b = backend_find(pr->backend);
	struct core_create_opts o;
	int rc;

	core_create_opts_init(&o);
	o.backend = pr->backend;
	o.image = pr->image ? pr->image : "";
	o.network = pr->network;
	o.memory_mib = pr->limits.memory_mib;
	o.cpus = pr->limits.cpus;
	o.pids = pr->limits.pids;
	o.disk_mib = pr->limits.disk_mib;
	o.max_duration_s = POOL_LIFETIME_S;
	o.idle_s = 0;
	o.idle_suspend_s = 0;
	o.owner = "pool";
	o.pool = pr->name;
	if (has_bases(b) && pr->base[0]) {
		o.from_snapshot = pr->base;
		if ((rc = p->core->create(p->core, &o, out, e)) == 0)
			return 0;
		/* Removed by hand, or from an older image: boot, and save anew. */
		log_warnx("pool %s: cannot restore snapshot %s (%s): booting instead", pr->name,
		    pr->base, e->msg);
		base_drop(pr);
		pr->base_tried = 0;
		o.from_snapshot = NULL;
	}
	if ((rc = p->core->create(p->core, &o, out, e)) == 0 && has_bases(b) && !pr->base_tried)
		base_make(p, pr, *out);
	return rc;
}

/* A member ready for claims (p->mu held); s and conn are the pool's now. */
static void
member_add(struct core_pool *p, size_t prof, struct sandbox *s, int conn)
{
	p->ready = xrealloc(p->ready, (p->nready + 1) * sizeof *p->ready);
	snprintf(p->ready[p->nready].id, sizeof p->ready[0].id, "%s", s->id);
	p->ready[p->nready].prof = prof;
	p->ready[p->nready].conn = conn;
	p->ready[p->nready++].rec = s;
}

/* The member at i leaves the list (p->mu held); its record and connection go. */
static void
member_forget(struct core_pool *p, size_t i)
{
	sandbox_free(p->ready[i].rec);
	if (p->ready[i].conn >= 0)
		close(p->ready[i].conn);
	p->ready[i] = p->ready[--p->nready];
}

static size_t
count_of(const struct core_pool *p, size_t prof)
{
	size_t n = 0;

	for (size_t i = 0; i < p->nready; i++)
		n += p->ready[i].prof == prof;
	return n;
}

/* Members found dead or near their end leave the list (and the registry).
 * Their backends are asked without the lock, which claims take. */
static void
members_check(struct core_pool *p)
{
	struct sbx_err e;
	struct registry *r = registry_load(&e);
	char (*ids)[32] = NULL;
	size_t n, ngone = 0;

	if (r == NULL)
		return;
	pthread_mutex_lock(&p->mu);
	n = p->nready;
	ids = xcalloc(n + 1, sizeof *ids);
	for (size_t i = 0; i < n; i++)
		memcpy(ids[i], p->ready[i].id, sizeof ids[i]);
	pthread_mutex_unlock(&p->mu);
	for (size_t i = 0; i < n; i++) {
		struct sandbox *s = NULL, *now;
		const struct backend *b;
		int drop = 1;

		s = registry_get(r, ids[i]);
		if (s != NULL && s->pool != NULL && (b = backend_find(s->backend)) != NULL) {
			now = sandbox_dup(s);
			drop = b->status(now, &e) == 0 && now->state != SBX_RUNNING;
			sandbox_free(now);
			if (wall_ms() >= s->expires_at - POOL_RENEW_S * 1000)
				drop = 1;
		}
		if (drop)
			memcpy(ids[ngone++], ids[i], sizeof ids[i]);
	}
	registry_free(r);
	/* Those not claimed meanwhile go. */
	for (size_t g = 0; g < ngone; g++) {
		int found = 0;
		pthread_mutex_lock(&p->mu);
		for (size_t i = 0; i < p->nready && !found; i++)
			if (strcmp(p->ready[i].id, ids[g]) == 0) {
				log_info("pool %s: member %s is replaced",
				    p->prof[p->ready[i].prof].name, ids[g]);
				member_forget(p, i);
				found = 1;
			}
		pthread_mutex_unlock(&p->mu);
		if (found)
			(void)members_destroy(ids[g], &e);
	}
	free(ids);
}

static int agent_post_unix(const struct sandbox *s, const char *path, const char *body,
    int *keep, struct sbx_err *e);

/* The agent answers on its unix socket, with a secret and nothing else. */
static int
by_unix(const struct sandbox *s)
{
	return s->agent_endpoint != NULL && strncmp(s->agent_endpoint, "unix:", 5) == 0 &&
	    s->agent_secret != NULL && s->agent_headers == NULL;
}

/* One answered call before a member is offered: a new agent's first answer
 * pays for its connection thread's stack and the first touch of the code an
 * answer runs, which the claim, on a create's path, then need not.  A stat of
 * its workspace, which changes nothing, on a connection kept for the claim
 * (the agent's thread for it then waits on it): the connection, or -1. */
static int
member_warm(const struct sandbox *s)
{
	const struct backend *b = backend_find(s->backend);
	struct sbx_err e;
	int conn = -1;

	if ((b != NULL && b->claim != NULL) || !by_unix(s))
		return -1;
	if (agent_post_unix(s, "/v1/files/stat", "{\"path\":\".\"}", &conn, &e) < 0)
		log_debug("pool: the first call to %s: %s", s->id, e.msg);
	return conn;
}

static void *
refill_main(void *arg)
{
	struct core_pool *p = arg;
	int64_t last_check = now_ms();

	pthread_mutex_lock(&p->mu);
	while (!p->stop) {
		size_t want = p->nprof;
		int64_t now = now_ms(), wait_ms = 1000;

		if (now - p->last_claim < POOL_REFILL_AFTER_MS) {
			wait_ms = POOL_REFILL_AFTER_MS - (now - p->last_claim);
			goto wait;
		}
		for (size_t i = 0; i < p->nprof && want == p->nprof; i++)
			if ((int)count_of(p, i) < p->prof[i].size && now >= p->prof[i].retry_at)
				want = i;
		if (want < p->nprof) {
			struct sandbox *s = NULL;
			struct sbx_err e;
			int64_t t0 = now_ms();
			int rc, conn = -1;

			pthread_mutex_unlock(&p->mu);
			if ((rc = member_make(p, want, &s, &e)) == 0)
				conn = member_warm(s);
			pthread_mutex_lock(&p->mu);
			if (rc < 0) {
				log_warnx("pool %s: cannot make a sandbox (trying again in %d s): %s",
				    p->prof[want].name, POOL_BACKOFF_MS / 1000, e.msg);
				p->prof[want].retry_at = now_ms() + POOL_BACKOFF_MS;
				continue;
			}
			member_add(p, want, s, conn);
			p->fills++;
			log_debug("pool %s: %s ready in %lld ms (%zu of %d)", p->prof[want].name,
			    s->id, (long long)(now_ms() - t0), count_of(p, want), p->prof[want].size);
			continue;
		}
		if (now - last_check >= POOL_CHECK_MS) {
			pthread_mutex_unlock(&p->mu);
			members_check(p);
			pthread_mutex_lock(&p->mu);
			last_check = now_ms();
			continue;
		}
wait:
		{
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_sec += wait_ms / 1000;
			ts.tv_nsec += (wait_ms % 1000) * 1000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			(void)pthread_cond_timedwait(&p->cv, &p->mu, &ts);
		}
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* ---- start, stop -------------------------------------------------------- */

/* Take STATE/pool.lock (LOCK_EX | LOCK_NB) into *out: 1, or 0 when another
 * process holds it, -1 with e. */
static int
keeper_lock(int *out, struct sbx_err *e)
{
	_cleanup_free_ char *dir = paths_ensure(PATHS_STATE, e), *path = NULL;
	int fd;

	*out = -1;
	if (dir == NULL)
		return -1;
	path = xasprintf("%s/pool.lock", dir);
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot open %s", path);
	while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EINTR)
			continue;
		close(fd);
		if (errno == EWOULDBLOCK)
			return 0;
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot lock %s", path);
	}
	*out = fd;
	return 1;
}

/* What a backend keeps ready besides pools (backend.h: keep_ready). */
static void
keep_ready(int on)
{
	for (size_t i = 0; backends[i] != NULL; i++)
		if (backends[i]->keep_ready != NULL)
			backends[i]->keep_ready(on);
}

int
core_pool_start(struct core *c, struct sbx_err *e)
{
	struct core_pool **slot = core_pool_slot(c), *p;
	struct pool_profile prof[POOL_PROFILES_MAX];
	size_t nprof;
	struct sbx_err sub;
	int n, fd;

	if (*slot != NULL)
		return 0;
	keep_ready(1);
	if (profiles_parse(core_config(c), prof, &nprof, e) < 0)
		return -1;
	if (nprof == 0) {
		/* No pools here: what an earlier server's left goes all the same. */
		if ((n = core_pool_reclaim(&sub)) > 0)
			log_info("destroyed %d pool member%s left by an earlier server", n,
			    n == 1 ? "" : "s");
		return 0;
	}
	if ((n = keeper_lock(&fd, e)) <= 0) {
		profiles_free(prof, nprof);
		if (n == 0)
			return sbx_error(e, SBX_ESTATE, NULL, "another core server keeps the pools "
			    "of this state directory");
		return -1;
	}
	/* With the lock, the members recorded are those of a keeper that died. */
	if ((n = members_destroy(NULL, &sub)) > 0)
		log_info("destroyed %d pool member%s left by an earlier server", n,
		    n == 1 ? "" : "s");
	p = xcalloc(1, sizeof *p);
	p->core = c;
	p->lock_fd = fd;
	memcpy(p->prof, prof, sizeof prof);
	p->nprof = nprof;
	for (size_t i = 0; i < nprof; i++)
		base_drop(&p->prof[i]);	/* a killed server's */
	pthread_mutex_init(&p->mu, NULL);
	{
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&p->cv, &ca);
		pthread_condattr_destroy(&ca);
	}
	if (pthread_create(&p->th, NULL, refill_main, p) != 0) {
		profiles_free(p->prof, p->nprof);
		pthread_cond_destroy(&p->cv);
		pthread_mutex_destroy(&p->mu);
		close(p->lock_fd);
		free(p);
		return sbx_error(e, SBX_EINTERNAL, NULL, "cannot start the pool's thread");
	}
	for (size_t i = 0; i < p->nprof; i++)
		log_info("pool %s: %d %s sandbox%s (image %s, memory %lld, disk %lld, cpus %g, "
		    "pids %lld, network %s)", p->prof[i].name, p->prof[i].size, p->prof[i].backend,
		    p->prof[i].size == 1 ? "" : "es", p->prof[i].image ? p->prof[i].image :
		    "default", (long long)p->prof[i].limits.memory_mib,
		    (long long)p->prof[i].limits.disk_mib, p->prof[i].limits.cpus,
		    (long long)p->prof[i].limits.pids, p->prof[i].network);
	*slot = p;
	return 0;
}

void
core_pool_stop(struct core *c)
{
	struct core_pool **slot = core_pool_slot(c), *p = *slot;
	struct sbx_err e;
	int n;

	keep_ready(0);
	if (p == NULL)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->th, NULL);
	if ((n = members_destroy(NULL, &e)) < 0)
		log_warnx("cannot destroy the pool's sandboxes: %s", e.msg);
	else
		log_info("pools stopped: %d member%s destroyed, %lld claimed, %lld made", n,
		    n == 1 ? "" : "s", (long long)p->claims, (long long)p->fills);
	for (size_t i = 0; i < p->nprof; i++)
		if (p->prof[i].base[0])
			base_drop(&p->prof[i]);
	profiles_free(p->prof, p->nprof);
	while (p->nready > 0)
		member_forget(p, 0);
	free(p->ready);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	close(p->lock_fd);	/* after the members went */
	free(p);
	*slot = NULL;
}

int
core_pool_reclaim(struct sbx_err *e)
{
	_cleanup_close_ int fd = -1;
	int rc;

	/* While a keeper holds the lock its members are its own; held here, no
	 * keeper starts until they are gone. */
	if ((rc = keeper_lock(&fd, e)) <= 0)
		return rc;
	return members_destroy(NULL, e);
}

/* ---- reaping (the core server): an ns init is a child of its maker ---- */

void
core_reap(struct core *c)
{
	struct sbx_err e;
	struct registry *r = registry_load(&e);

	if (r == NULL)
		return;
	for (size_t i = 0; i < registry_count(r); i++) {
		const struct sandbox *s = registry_at(r, i);
		const struct backend *b = backend_find(s->backend);
		if (b != NULL && b->reap != NULL)
			b->reap(s);
	}
	registry_free(r);
}

/* ---- claim -------------------------------------------------------------- */

struct claim {
	const char		*id;
	const struct sandbox	*want;
	const char		*profile;
	struct sandbox		*got;	/* the member as claimed: its agent has taken it */
};

/* The create's name, owner, deadline and idle policy on the member s. */
static void
claim_apply(struct sandbox *s, const struct sandbox *want, const char *profile)
{
	free(s->name);
	s->name = want->name ? xstrdup(want->name) : NULL;
	free(s->owner);
	s->owner = xstrdup(want->owner);
	free(s->api_key);
	s->api_key = want->api_key ? xstrdup(want->api_key) : NULL;
	s->created_at = wall_ms();
	s->max_duration_s = want->max_duration_s;
	s->expires_at = s->created_at + s->max_duration_s * 1000;
	s->idle_s = want->idle_s;
	s->idle_suspend_s = want->idle_suspend_s;
	free(s->pool);
	s->pool = NULL;
	free(s->from_pool);
	s->from_pool = xstrdup(profile);
}

/* The claimed member goes in whole (a backend's claim may have changed its
 * data), if it is still a member and the name still free: 1 when it is gone. */
static int
txn_claim(struct registry *r, void *arg, struct sbx_err *e)
{
	struct claim *k = arg;
	struct sandbox *s = NULL;

	for (size_t i = 0; i < registry_count(r); i++)
		if (core_name_check(registry_at(r, i), k->want->name, e) < 0)
			return -1;
	s = registry_get(r, k->id);
	if (s == NULL || s->pool == NULL || s->state != SBX_RUNNING)
		return 1;	/* gone meanwhile: another member, or a cold create */
	registry_put(r, sandbox_dup(k->got));
	return 0;
}

struct name_check {
	const char	*name;
	struct sbx_err	*e;
};

static int
name_taken(const struct sandbox *o, void *arg)
{
	struct name_check *k = arg;

	return core_name_check(o, k->name, k->e) < 0;
}

static int
same_str(const char *a, const char *b)
{
	return (a == NULL || *a == '\0') ? (b == NULL || *b == '\0') :
	    b != NULL && strcmp(a, b) == 0;
}

/* POST body to path on fd, a connection to s's agent (with keep, one that
 * stays open for another request).  0; -1 with e; -2 when the connection had
 * ended (a kept one the agent let go). */
static int
post_send(int fd, const struct sandbox *s, const char *path, const char *body, int keep,
    struct sbx_err *e)
{
	_cleanup_free_ char *req = NULL;
	int rc;

	req = xasprintf("POST %s HTTP/1.1\r\nHost: sandbox\r\nX-Sandbox-Secret: %s\r\n"
	    "X-Sbx-Origin: pool\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
	    "%s\r\n%s", path, s->agent_secret, strlen(body), keep ? "" : "Connection: close\r\n",
	    body);
	rc = write_all(fd, req, strlen(req));
	explicit_bzero(req, strlen(req));
	if (rc < 0)
		return errno == EPIPE || errno == ECONNRESET ? -2 :
		    sbx_error_errno(e, SBX_EAGENT, NULL, "the agent of %s", s->id);
	return 0;
}

/* The answer to path on fd: its status line, or with keep all of it (its
 * length given), so the connection can carry the next request.  0; -1 with
 * e; -2 when the connection ended before any answer came. */
static int
post_answer(int fd, const struct sandbox *s, const char *path, int keep, struct sbx_err *e)
{
	char head[1024], *end_head = NULL;
	size_t got = 0;
	int64_t end = now_ms() + 5000;
	long long body_len = 0;
	int status;

	while (got < sizeof head - 1 && (keep ? (end_head = memmem(head, got, "\r\n\r\n", 4)) :
	    memchr(head, '\n', got)) == NULL) {
		struct pollfd pf = { fd, POLLIN, 0 };
		int64_t left = end - now_ms();
		ssize_t n;

		if (left <= 0 || poll(&pf, 1, (int)left) <= 0)
			return sbx_error(e, SBX_EAGENT, NULL, "the agent of %s did not answer %s",
			    s->id, path);
		if ((n = read(fd, head + got, sizeof head - 1 - got)) <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			if (got == 0 && (n == 0 || errno == ECONNRESET))
				return -2;
			return sbx_error(e, SBX_EAGENT, NULL, "the agent of %s closed the "
			    "connection to %s", s->id, path);
		}
		got += (size_t)n;
	}
	head[got] = '\0';
	if (sscanf(head, "HTTP/1.%*d %d", &status) != 1 || status < 200 || status > 299) {
		head[strcspn(head, "\r\n")] = '\0';
		return sbx_error(e, SBX_EAGENT, NULL, "the agent of %s answered %s with '%s'",
		    s->id, path, head);
	}
	if (!keep)
		return 0;
	if (end_head == NULL || strcasestr(head, "\r\nTransfer-Encoding:") != NULL)
		return sbx_error(e, SBX_EAGENT, NULL, "the agent of %s answered %s with no length",
		    s->id, path);
	{
		const char *cl = strcasestr(head, "\r\nContent-Length:");
		body_len = cl != NULL ? strtoll(cl + 17, NULL, 10) : 0;
	}
	/* The rest of the body, to nowhere. */
	for (body_len -= (long long)(got - (size_t)(end_head + 4 - head)); body_len > 0;) {
		struct pollfd pf = { fd, POLLIN, 0 };
		int64_t left = end - now_ms();
		ssize_t n;

		if (left <= 0 || poll(&pf, 1, (int)left) <= 0 ||
		    (n = read(fd, head, body_len < (long long)sizeof head ? (size_t)body_len :
		    sizeof head)) == 0)
			return sbx_error(e, SBX_EAGENT, NULL, "the agent of %s did not finish its "
			    "answer to %s", s->id, path);
		if (n > 0)
			body_len -= n;
	}
	return 0;
}

/* post_send on a new connection to the agent's unix socket: the connection,
 * or -1 with e. */
static int
post_new(const struct sandbox *s, const char *path, const char *body, int keep,
    struct sbx_err *e)
{
	char why[256];
	int fd, rc;

	if ((fd = agent_sock_connect(s->agent_endpoint + 5, 0, why, sizeof why)) < 0)
		return sbx_error(e, SBX_EAGENT, NULL, "the agent of %s: %s", s->id, why);
	if ((rc = post_send(fd, s, path, body, keep, e)) == 0)
		return fd;
	close(fd);
	return rc == -2 ? sbx_error(e, SBX_EAGENT, NULL, "the agent of %s closed the "
	    "connection to %s", s->id, path) : -1;
}

/* POST body to path on the agent's unix socket, on a connection of its own: a
 * claim is on the path of a create, and a libcurl handle made for one request
 * cost as much as the rest of the claim.  With keep, the connection is kept in
 * *keep (which is -1) for one more request, the claim's. */
static int
agent_post_unix(const struct sandbox *s, const char *path, const char *body, int *keep,
    struct sbx_err *e)
{
	int fd, rc;

	if ((fd = post_new(s, path, body, keep != NULL, e)) < 0)
		return -1;
	if ((rc = post_answer(fd, s, path, keep != NULL, e)) == -2)
		rc = sbx_error(e, SBX_EAGENT, NULL, "the agent of %s closed the connection to %s",
		    s->id, path);
	if (rc == 0 && keep != NULL)
		*keep = fd;
	else
		close(fd);
	return rc;
}

/* The claim's body: the sandbox's deadline and idle policy. */
static char *
claim_body(const struct sandbox *s)
{
	return xasprintf("{\"deadline_s\":%lld,\"idle_s\":%lld}", (long long)s->max_duration_s,
	    (long long)s->idle_s);
}

/* Give the claimed sandbox its deadline and idle policy.  Its hostname stays
 * its id: the agent may not change it (no CAP_SYS_ADMIN), and joining its
 * namespaces from here would cost a fork of this process.  On an agent's unix
 * socket the claim is only sent here, on conn (the connection kept since the
 * member's warming, closed here) unless the agent has let it go, and *sent is
 * where its answer comes, for claim_answer; elsewhere *sent stays -1 and the
 * claim is answered on return. */
static int
claim_send(const struct sandbox *s, int conn, int *sent, struct sbx_err *e)
{
	_cleanup_free_ char *text = claim_body(s);
	struct pollfd pf = { conn, POLLIN, 0 };
	struct sbx_err scratch;
	struct agentc *a;
	int rc;

	*sent = -1;
	if (!by_unix(s)) {
		cJSON *body = cJSON_Parse(text);
		if (conn >= 0)
			close(conn);
		if ((a = agentc_new(s, e)) == NULL) {
			cJSON_Delete(body);
			return -1;
		}
		agentc_set_origin(a, "pool");
		rc = agentc_call(a, "POST", "/v1/claim", body, 5000, NULL, e);
		cJSON_Delete(body);
		agentc_free(a);
		return rc < 0 ? -1 : 0;
	}
	if (conn >= 0) {
		/* "fail": as if the agent had let it go. */
		if (fault_point("claim.kept", &scratch) < 0)
			shutdown(conn, SHUT_RDWR);
		if (poll(&pf, 1, 0) == 0 && (rc = post_send(conn, s, "/v1/claim", text, 0, e)) != -2) {
			if (rc == 0)
				*sent = conn;
			else
				close(conn);
			return rc;
		}
		close(conn);
		log_debug("pool: the connection kept to %s was let go: a new one", s->id);
	}
	return (*sent = post_new(s, "/v1/claim", text, 0, e)) < 0 ? -1 : 0;
}

/* The agent's answer to the claim sent on fd (closed here); sent again on a
 * new connection when fd ended unanswered (a kept connection the agent let go
 * as the claim came: it may be made twice). */
static int
claim_answer(const struct sandbox *s, int fd, struct sbx_err *e)
{
	_cleanup_free_ char *text = NULL;
	int rc = post_answer(fd, s, "/v1/claim", 0, e);

	close(fd);
	if (rc != -2)
		return rc;
	log_debug("pool: the connection kept to %s was let go: a new one", s->id);
	text = claim_body(s);
	return agent_post_unix(s, "/v1/claim", text, NULL, e);
}

int
core_pool_claim(struct core *c, const struct core_create_opts *o, const struct sandbox *want,
    struct sandbox **out, struct sbx_err *e)
{
	struct core_pool *p = *core_pool_slot(c);
	double t0 = mono_ms(), t1, ta = 0, tr = 0, t3;

	*out = NULL;
	if (p == NULL || o->pool != NULL || o->env != NULL || o->net != NULL ||
	    (o->host != NULL && *o->host) || o->from_snapshot != NULL || o->fork_of != NULL ||
	    o->name_prefix != NULL)
		return 0;
	/* A name taken (as the registry was last read) is the create's error,
	 * with the pool as it was; checked again when the claim is recorded. */
	if (want->name != NULL) {
		struct name_check k = { want->name, e };
		if (core_registry_each(c, NULL, name_taken, &k, e) != 0)
			return -1;
	}
	for (int tries = 0; tries < POOL_SIZE_MAX; tries++) {
		struct claim k = { NULL, want, NULL, NULL };
		const struct backend *b;
		struct sandbox *rec = NULL;
		char id[32] = "";
		size_t prof = p->nprof;
		_cleanup_close_ int conn = -1;	/* to the member's agent, kept since its warming */
		_cleanup_close_ int sent = -1;	/* where the agent's answer to the claim comes */
		int rc = 0;

		pthread_mutex_lock(&p->mu);
		for (size_t i = 0; i < p->nprof && prof == p->nprof; i++) {
			const struct pool_profile *pr = &p->prof[i];
			if (strcmp(pr->backend, want->backend) == 0 && same_str(pr->image, want->image) &&
			    strcmp(pr->network, want->network) == 0 &&
			    pr->limits.memory_mib == want->limits.memory_mib &&
			    pr->limits.disk_mib == want->limits.disk_mib &&
			    pr->limits.cpus == want->limits.cpus && pr->limits.pids == want->limits.pids)
				prof = i;
		}
		for (size_t i = 0; prof < p->nprof && i < p->nready && id[0] == '\0'; i++)
			if (p->ready[i].prof == prof) {
				snprintf(id, sizeof id, "%s", p->ready[i].id);
				rec = p->ready[i].rec;
				conn = p->ready[i].conn;
				p->ready[i] = p->ready[--p->nready];
			}
		p->last_claim = now_ms();
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
		if (id[0] == '\0') {
			if (prof < p->nprof)
				log_debug("pool %s is empty: a cold create", p->prof[prof].name);
			return 0;
		}
		k.id = id;
		k.profile = p->prof[prof].name;
		k.got = rec;
		claim_apply(k.got, want, k.profile);
		t1 = mono_ms();
		/* The claim is sent to the agent (or made by the backend) first,
		 * the record written then: a core that dies between leaves a member,
		 * which the next server destroys, never a record whose sandbox ends
		 * at the pool's deadline.  The agent's answer is read after the
		 * record, so the agent works on the claim meanwhile. */
		b = backend_find(k.got->backend);
		if (fault_point("claim.picked", e) < 0 || (b != NULL && b->claim != NULL ?
		    b->claim(k.got, e) : claim_send(k.got, steal_fd(&conn), &sent, e)) < 0 ||
		    (ta = mono_ms(), fault_point("claim.taken", e)) < 0 ||
		    (rc = registry_update(txn_claim, &k, e)) < 0 || rc > 0 ||
		    (tr = mono_ms(), sent >= 0 && claim_answer(k.got, steal_fd(&sent), e) < 0)) {
			struct sbx_err sub;
			log_warnx("pool %s: member %s was not claimed (%s): destroyed", k.profile,
			    id, rc > 0 ? "gone meanwhile" : e->msg);
			if (b != NULL && b->destroy(k.got, &sub) < 0)
				log_warnx("cannot destroy %s: %s", id, sub.msg);
			(void)registry_delete(id, &sub);
			sandbox_free(k.got);
			/* A name taken since: the create's error. */
			if (rc < 0 && e->reason == SBX_R_NAME_TAKEN)
				return -1;
			continue;
		}
		if (fault_point("claim.recorded", e) < 0)
			log_debug("%s", e->msg);	/* only kill means anything here */
		t3 = mono_ms();
		if (b != NULL && b->claimed != NULL) {
			struct sbx_err sub;
			if (b->claimed(k.got, &sub) < 0)
				log_warnx("pool %s: %s keeps its hostname: %s", k.profile, id, sub.msg);
		}
		pthread_mutex_lock(&p->mu);
		p->claims++;
		pthread_mutex_unlock(&p->mu);
		log_debug("create %s (ms): from pool %s, pick %.2f, agent %.2f, registry %.2f, "
		    "inside %.2f", id, k.profile, t1 - t0, (ta - t1) + (t3 - tr), tr - ta,
		    mono_ms() - t3);
		*out = k.got;
		return 1;
	}
	return 0;
}
