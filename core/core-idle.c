/* Idle suspend: a sandbox created with idle_suspend_s > 0 that has had no call,
 * exec or forwarded connection for that long is suspended (the backend's
 * freezer or QMP stop) with the reason "idle", and the next call that needs its
 * agent resumes it first (core_agent_for), as does a connection to one of its
 * forwards (the relay's resume hook).  A process that runs the core for long
 * (the core server) starts the watcher thread; what counts as activity is what
 * this core serves: calls that reach an agent, execs while they run, forwarded
 * connections while they are open or move bytes.  The deadline keeps counting:
 * a sandbox suspended for idleness whose deadline has passed is resumed so its
 * agent ends it, as it ends a running one.  Status and list do not resume: the
 * console polls them all the time. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core-int.h"
#include "lib/log.h"
#include "lib/util.h"

#define IDLE_TICK_MS		250
#define IDLE_MAX_WATCHED	4096

struct idle_entry {
	char		 id[32];
	int64_t		 last_ms;	/* monotonic: the last activity seen */
	int		 busy;		/* execs running now */
	int		 suspended;	/* suspended by this watcher, not resumed since */
	uint64_t	 fwd_bytes;	/* the forwards' bytes at the last look */
	int		 seen;		/* in the registry at the last tick */
};

struct core_idle {
	pthread_mutex_t		 mu;	/* held across a suspend: a call waits for it */
	struct idle_entry	*v;
	size_t			 n;
	pthread_t		 thread;
	int			 running;
	int			 stop;
	int			 watching;	/* sandboxes with a policy at the last tick */
};

struct core_idle *
core_idle_new(void)
{
	struct core_idle *d = xcalloc(1, sizeof *d);

	pthread_mutex_init(&d->mu, NULL);
	return d;
}

void
core_idle_free(struct core_idle *d)
{
	if (d == NULL)
		return;
	if (d->running) {
		__atomic_store_n(&d->stop, 1, __ATOMIC_RELAXED);
		pthread_join(d->thread, NULL);
	}
	pthread_mutex_destroy(&d->mu);
	free(d->v);
	free(d);
}

/* The entry of id, made when missing (mu held); NULL when the table is full. */
static struct idle_entry *
entry(struct core_idle *d, const char *id, int make)
{
	for (size_t i = 0; i < d->n; i++)
		if (strcmp(d->v[i].id, id) == 0)
			return &d->v[i];
	if (!make || d->n >= IDLE_MAX_WATCHED)
		return NULL;
	d->v = xrealloc(d->v, (d->n + 1) * sizeof *d->v);
	memset(&d->v[d->n], 0, sizeof d->v[d->n]);
	snprintf(d->v[d->n].id, sizeof d->v[d->n].id, "%s", id);
	d->v[d->n].last_ms = now_ms();
	return &d->v[d->n++];
}

int
core_idle_touch(struct core *c, const char *id)
{
	struct core_idle *d = core_idle_of(c);
	struct idle_entry *x;
	int was;

	/* Waits for a suspend of this sandbox under way to be recorded. */
	pthread_mutex_lock(&d->mu);
	x = entry(d, id, 1);
	was = x != NULL && x->suspended;
	if (x != NULL)
		x->last_ms = now_ms();
	pthread_mutex_unlock(&d->mu);
	return was;
}

void
core_idle_busy(struct core *c, const char *id, int delta)
{
	struct core_idle *d = core_idle_of(c);
	struct idle_entry *x;

	pthread_mutex_lock(&d->mu);
	if ((x = entry(d, id, 1)) != NULL) {
		x->busy += delta;
		if (x->busy < 0)
			x->busy = 0;
		x->last_ms = now_ms();
	}
	pthread_mutex_unlock(&d->mu);
}

int
core_idle_suspended(const struct sandbox *s)
{
	return s->state == SBX_SUSPENDED && s->state_reason != NULL &&
	    strcmp(s->state_reason, CORE_IDLE_REASON) == 0;
}

int
core_idle_wake(struct core *c, struct sandbox *s, struct sbx_err *e)
{
	struct core_idle *d = core_idle_of(c);
	struct idle_entry *x;
	int64_t t0 = now_ms();

	if (core_resume(c, s->id, e) < 0)
		return -1;
	pthread_mutex_lock(&d->mu);
	if ((x = entry(d, s->id, 1)) != NULL) {
		x->suspended = 0;
		x->last_ms = now_ms();
	}
	pthread_mutex_unlock(&d->mu);
	s->state = SBX_RUNNING;
	free(s->state_reason);
	s->state_reason = NULL;
	log_info("resumed %s, suspended for idleness, for a call (%lld ms)", s->id,
	    (long long)(now_ms() - t0));
	return 0;
}

/* Bytes moved by the forwards of id, and whether one has a connection open. */
static uint64_t
forward_bytes(struct core *c, const char *id, int *open)
{
	struct core_forward *f = NULL;
	size_t n = 0;
	uint64_t sum = 0;
	struct sbx_err e;

	*open = 0;
	if (core_forward_running(c) == 0 || core_forward_list(c, id, &f, &n, &e) < 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		sum += f[i].bytes_in + f[i].bytes_out;
		*open |= f[i].conns_now > 0;
	}
	free(f);
	return sum;
}

/* The records whose policy is in force: running, or suspended for it. */
static int
watched(const struct sandbox *s)
{
	return s->idle_suspend_s > 0 && (s->state == SBX_RUNNING || core_idle_suspended(s));
}

int
core_idle_tick(struct core *c)
{
	struct core_idle *d = core_idle_of(c);
	struct sandbox **v;
	size_t n = 0;
	int watching = 0;
	struct sbx_err e;

	if (core_registry_pick(c, watched, &v, &n, &e) < 0) {
		log_debug("idle watch: %s", e.msg);
		return -1;
	}

	pthread_mutex_lock(&d->mu);
	for (size_t i = 0; i < d->n; i++)
		d->v[i].seen = 0;
	pthread_mutex_unlock(&d->mu);
	for (size_t i = 0; i < n; i++) {
		struct sandbox *s = v[i];
		struct idle_entry *x;
		int open = 0;
		uint64_t bytes = s->forwards ? forward_bytes(c, s->id, &open) : 0;
		int64_t now = now_ms();

		watching++;
		pthread_mutex_lock(&d->mu);
		if ((x = entry(d, s->id, 1)) == NULL) {
			pthread_mutex_unlock(&d->mu);
			continue;
		}
		x->seen = 1;
		if (open || bytes != x->fwd_bytes) {
			x->last_ms = now;
			x->fwd_bytes = bytes;
		}
		if (core_idle_suspended(s)) {
			x->suspended = 1;
			pthread_mutex_unlock(&d->mu);
			/* Past its deadline: thawed, so its agent ends it. */
			if (s->expires_at > 0 && wall_ms() >= s->expires_at) {
				log_info("%s reached its deadline while suspended for idleness: "
				    "resuming it so it stops", s->id);
				if (core_resume(c, s->id, &e) < 0)
					log_warnx("cannot resume %s at its deadline: %s", s->id, e.msg);
			}
			continue;
		}
		if (x->busy == 0 && now - x->last_ms >= s->idle_suspend_s * 1000) {
			/* With the lock held: a call that comes meanwhile waits, then finds
			 * the sandbox suspended and resumes it. */
			if (core_suspend_reason(c, s->id, CORE_IDLE_REASON, &e) == 0) {
				x->suspended = 1;
				log_info("suspended %s after %llds without calls", s->id,
				    (long long)s->idle_suspend_s);
			} else {
				log_warnx("cannot suspend idle sandbox %s: %s", s->id, e.msg);
				x->last_ms = now;	/* not again at once */
			}
		}
		pthread_mutex_unlock(&d->mu);
	}
	/* Forget sandboxes that are gone or have no policy any more. */
	pthread_mutex_lock(&d->mu);
	for (size_t i = 0; i < d->n;)
		if (!d->v[i].seen && d->v[i].busy == 0)
			d->v[i] = d->v[--d->n];
		else
			i++;
	d->watching = watching;
	pthread_mutex_unlock(&d->mu);
	core_list_free(v, n);
	return watching;
}

static void *
idle_thread(void *arg)
{
	struct core *c = arg;
	struct core_idle *d = core_idle_of(c);

	while (!__atomic_load_n(&d->stop, __ATOMIC_RELAXED)) {
		(void)core_idle_tick(c);
		(void)core_disk_tick(c);
		for (int t = 0; t < IDLE_TICK_MS && !__atomic_load_n(&d->stop, __ATOMIC_RELAXED);
		    t += 50)
			usleep(50 * 1000);
	}
	return NULL;
}

int
core_idle_start(struct core *c, struct sbx_err *e)
{
	struct core_idle *d = core_idle_of(c);
	int rc;

	if (d->running)
		return 0;
	if ((rc = pthread_create(&d->thread, NULL, idle_thread, c)) != 0) {
		errno = rc;
		return sbx_error_errno(e, SBX_EINTERNAL, NULL, "cannot start the idle watcher");
	}
	d->running = 1;
	return 0;
}

int
core_idle_watching(struct core *c)
{
	struct core_idle *d = core_idle_of(c);
	int n;

	pthread_mutex_lock(&d->mu);
	n = d->watching;
	pthread_mutex_unlock(&d->mu);
	return n;
}
