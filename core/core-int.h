/* Internals shared by the core's own files (core.c, core-base.c, core-*.c). */
#ifndef SBX_CORE_INT_H
#define SBX_CORE_INT_H

#include <pthread.h>

#include "core/client/agentc.h"
#include "core/core.h"
#include "core/fwd/relay.h"

/* The core: core.c fills it in core_new, installing the hooks through which
 * the ground (core-base.c, core-events.c) reaches the parts above it; the
 * other files reach its parts through the accessors below (core_events_of,
 * core_idle_of, ...). */
struct core {
	struct config		*cfg;
	struct core_events	*events;
	struct core_vanishing	*vanishing;
	struct fwd_mgr		*fwd;		/* NULL until a forward starts */
	struct core_idle	*idle;
	struct core_regcache	*reg;
	struct core_pool	*pool;		/* the core server's warm pools */
	struct core_orphans	*orphans;
	struct fwd_hooks	 fwd_hooks;	/* for the forward manager, made on first use */
	/* core_create, for the pools' refill (core-pool.c), which core_create
	 * claims from in turn. */
	int			(*create)(struct core *c, const struct core_create_opts *o,
				    struct sandbox **out, struct sbx_err *e);
	pthread_mutex_t		 fwd_mu;
};

struct core_events;
/* on_listen is called with each new subscriber (core.c: core_net_watch). */
struct core_events *core_events_new(void (*on_listen)(struct core *c));
void core_events_free(struct core_events *ev);
static inline struct core_events *core_events_of(struct core *c) { return c->events; }

/* Vanished sandboxes not yet handed out (core-events.c). */
struct core_vanishing;
struct core_vanishing *core_vanishing_new(void);
void core_vanishing_free(struct core_vanishing *v);
static inline struct core_vanishing *core_vanishing_of(struct core *c) { return c->vanishing; }
/* Note that sandbox id was found dead, for core_vanished_take. */
void core_vanishing_note(struct core *c, const char *id, const char *api_key,
    const char *reason);

/* Make s's agent endpoint usable in this process (a token renewed, a relay to a
 * remote host started); a renewed record is stored. */
int core_refresh_endpoint(struct sandbox *s, struct sbx_err *e);
/* What runs where (core-runs.c): an exec this core started in sandbox id
 * (its journal is asked again), and s's count of running commands and the
 * newest one ("execs_running", "exec_now") added to usage, where this core
 * keeps track (core_runs_track). */
void core_runs_note(struct core *c, const char *id);
void core_runs_attach(struct core *c, struct sandbox *s, cJSON *usage);
/* The sandbox key names, running, with an agent client for it (both caller
 * frees); a sandbox suspended for idleness resumes (core-files.c). */
int core_agent_for(struct core *c, const char *key, struct sandbox **s,
    struct agentc **a, struct sbx_err *e);
/* 0 when env is an object of strings with names a command may have, else -1
 * with e saying which. */
int core_env_valid(const cJSON *env, struct sbx_err *e);

/* The names of the compiled-in backends for which has (NULL: every one) says
 * yes, comma-separated in buf, for errors. */
const char *core_backends_having(int (*has)(const struct backend *), char *buf, size_t len);
/* The backend of s, or NULL with e saying this sbxtop lacks it. */
const struct backend *core_backend_of(const struct sandbox *s, struct sbx_err *e);
/* Refresh s from its backend, recording (and reporting once) what changed. */
void core_reconcile(struct core *c, struct sandbox *s);
/* A call to the agent of s that broke off with e: when the sandbox ended
 * meanwhile (its init killed), e says so and why, for what was under way
 * (during: "the command", "the copy"), instead of the connection's error. */
void core_agent_broke(struct core *c, const struct sandbox *s, const char *during,
    struct sbx_err *e);

/* The core's forward manager, created on first use when create is set (NULL
 * otherwise). */
struct fwd_mgr;
struct fwd_mgr *core_fwd_mgr(struct core *c, int create);
/* Ask the backend of sandbox id to make its agent endpoint usable now (a token
 * re-minted when it lapses, is refused, or lacks a port a forward needs) and
 * store the record when it changed. */
int core_endpoint_renew(struct core *c, const char *id, struct sbx_err *e);

/* The registry as last parsed (core-registry.c): call fn on the record key
 * names (e filled when none does), or on every record when key is NULL, until
 * fn returns non-zero.  The records are borrowed for the call: dup what is
 * kept.  Returns fn's last value, or -1 with e.  core_get is one such call. */
struct core_regcache;
struct core_regcache *core_regcache_new(void);
void core_regcache_free(struct core_regcache *k);
static inline struct core_regcache *core_regcache_of(struct core *c) { return c->reg; }
typedef int (*core_record_fn)(const struct sandbox *s, void *arg);
int core_registry_each(struct core *c, const char *key, core_record_fn fn, void *arg,
    struct sbx_err *e);
/* Copies of the records want says yes to, for the caller to core_list_free. */
int core_registry_pick(struct core *c, int (*want)(const struct sandbox *s), struct sandbox ***v,
    size_t *n, struct sbx_err *e);

/* Idle suspend (core-idle.c). */
#define CORE_IDLE_REASON "idle"
struct core_idle;
struct core_idle *core_idle_new(void);
void core_idle_free(struct core_idle *d);
static inline struct core_idle *core_idle_of(struct core *c) { return c->idle; }
/* Note a call to sandbox id; 1 when the watcher suspended it and no resume has
 * been seen since (the caller reads the record again), else 0.  Waits for a
 * suspend of it under way. */
int core_idle_touch(struct core *c, const char *id);
/* An exec starts (+1) or ends (-1): a sandbox with one running is not idle. */
void core_idle_busy(struct core *c, const char *id, int delta);
/* s is suspended for idleness (state and reason). */
int core_idle_suspended(const struct sandbox *s);
/* Resume s, suspended for idleness, for a call; s becomes running. */
int core_idle_wake(struct core *c, struct sandbox *s, struct sbx_err *e);
/* The disk watcher (core-usage.c), run by the idle watcher's thread: suspend
 * the running sandboxes whose backend does not hold them to their disk
 * limit once they write past it.  Returns how many it suspended. */
int core_disk_tick(struct core *c);
/* core_suspend, recording why in the state reason. */
int core_suspend_reason(struct core *c, const char *key, const char *reason,
    struct sbx_err *e);

/* The count of orphans listings show (core/core-gc.c). */
struct core_orphans;
struct core_orphans *core_orphans_new(void);
void core_orphans_free(struct core_orphans *o);
static inline struct core_orphans *core_orphans_of(struct core *c) { return c->orphans; }

/* Warm pools (core-pool.c).  The pool's slot in the core (NULL: none). */
struct core_pool;
static inline struct core_pool **core_pool_slot(struct core *c) { return &c->pool; }
/* core_snapshot of the record s (a pool's member, which core_get does not find). */
int core_snapshot_of(struct core *c, struct sandbox *s, const char *name, struct sbx_err *e);
/* -1 with SBX_R_NAME_TAKEN when o, live and not a pool member, is named name. */
int core_name_check(const struct sandbox *o, const char *name, struct sbx_err *e);
/* A create o, resolved into want (backend, image, network, limits, lifetime,
 * name, owner), from a pool member: 1 with *out the claimed record, 0 when no
 * pool holds one (a cold create), -1 with e (the name is taken). */
int core_pool_claim(struct core *c, const struct core_create_opts *o,
    const struct sandbox *want, struct sandbox **out, struct sbx_err *e);
/* With no core server running, destroy the pool members a dead one left;
 * how many, or -1 with e. */
int core_pool_reclaim(struct sbx_err *e);

#endif
