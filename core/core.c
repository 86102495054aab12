/* The core's top: core_new wires the parts (installing the hooks through which
 * the ground below them reaches them), and the sandbox lifecycle, logs and
 * housekeeping (see core.h).  What every part needs of a sandbox is in
 * core-base.c, copies are in core-copy.c, events in core-events.c. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/client/agentc.h"
#include "lib/b64.h"
#include "lib/fault.h"
#include "core/core-int.h"
#include "core/image/image.h"
#include "core/fwd/relay.h"
#include "core/net.h"
#include "lib/log.h"
#include "core/paths.h"
#include "core/registry.h"
#include "lib/utf8.h"
#include "lib/sig.h"
#include "lib/util.h"

#define NAME_MAX_LEN	64
#define ENV_MAX		256

/* What the relay asks of the core (core_fwd_mgr hands these to the forward
 * manager it makes): a connection wakes a suspended sandbox, as a call does. */
static int
fwd_resume(void *arg, const char *id, struct sbx_err *e)
{
	(void)core_idle_touch(arg, id);
	return core_resume(arg, id, e);
}

static int
fwd_renew(void *arg, const char *id, struct sbx_err *e)
{
	return core_endpoint_renew(arg, id, e);
}

struct core *
core_new(struct config *cfg)
{
	struct core *c = xcalloc(1, sizeof *c);

	c->cfg = cfg;
	/* The ring starts the proxies' log watch when someone listens. */
	c->events = core_events_new(core_net_watch);
	c->vanishing = core_vanishing_new();
	c->idle = core_idle_new();
	c->reg = core_regcache_new();
	c->orphans = core_orphans_new();
	c->fwd_hooks = (struct fwd_hooks){ c, fwd_resume, fwd_renew };
	c->create = core_create;
	pthread_mutex_init(&c->fwd_mu, NULL);
	for (size_t i = 0; backends[i] != NULL; i++)
		if (backends[i]->configure != NULL)
			backends[i]->configure(cfg);
	return c;
}

void
core_free(struct core *c)
{
	if (c == NULL)
		return;
	/* The threads that call back into the core go first: the sweeper of
	 * orphans, the relay. */
	core_orphans_free(c->orphans);
	fwd_mgr_free(c->fwd);
	core_runs_track(c, 0);
	core_pool_stop(c);
	core_net_watch_stop(c);
	core_idle_free(c->idle);
	core_regcache_free(c->reg);
	pthread_mutex_destroy(&c->fwd_mu);
	config_free(c->cfg);
	core_events_free(c->events);
	core_vanishing_free(c->vanishing);
	free(c);
}

/* ---- create ------------------------------------------------------------ */

static int
name_valid(const char *n)
{
	size_t len = strlen(n);

	return len > 0 && len <= NAME_MAX_LEN && n[0] != '-' && n[0] != '.' &&
	    strspn(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == len;
}

int
core_env_valid(const cJSON *env, struct sbx_err *e)
{
	const cJSON *it;
	int n = 0;

	if (env == NULL)
		return 0;
	if (!cJSON_IsObject(env))
		return sbx_error(e, SBX_EINVAL, NULL, "env must be an object of strings");
	cJSON_ArrayForEach(it, env) {
		const char *k = it->string;
		if (++n > ENV_MAX)
			return sbx_error(e, SBX_EINVAL, NULL, "env: at most %d variables", ENV_MAX);
		if (k == NULL || k[0] == '\0' || strlen(k) > 128 || (k[0] >= '0' && k[0] <= '9') ||
		    strspn(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") !=
		    strlen(k))
			return sbx_error(e, SBX_EINVAL, "names are letters, digits and '_', not "
			    "starting with a digit", "env: '%s' is not a valid variable name",
			    k ? k : "");
		if (!cJSON_IsString(it))
			return sbx_error(e, SBX_EINVAL, NULL, "env: the value of %s must be a string",
			    k);
	}
	return 0;
}

/* The id and the name go in in one transaction, so two creates at once can
 * never take the same ones. */
struct reserve {
	struct sandbox		*s;
	const struct backend	*b;
	const char		*host;	/* NULL: this machine */
	int			 made;	/* the sandbox is up: its id is for good */
	struct sbx_err		*e;
	const char		*name_prefix;	/* core_create_opts' */
};

/* A new id for s, and the name that goes with it when the name is made
 * from the id (name_prefix). */
static void
new_id(struct sandbox *s, const char *name_prefix)
{
	sandbox_new_id(s->id, sizeof s->id);
	if (name_prefix != NULL) {
		free(s->name);
		s->name = xasprintf("%.48s-%s", name_prefix, s->id + 4);
	}
}

/* The record goes in with the registry locked: its name free, its id unique,
 * its host (when it asks for one) placed against the others there. */
static int
txn_reserve(struct registry *r, void *arg, struct sbx_err *e)
{
	struct reserve *rv = arg;
	struct sandbox *s = rv->s;

	for (size_t i = 0; i < registry_count(r); i++)
		if (core_name_check(registry_at(r, i), s->name, e) < 0)
			return -1;
	if (rv->host != NULL && rv->b->place(s, rv->host, r, e) < 0)
		return -1;
	for (int tries = 0; tries < 100; tries++) {
		if (registry_get(r, s->id) == NULL) {
			registry_put(r, sandbox_dup(s));
			return 0;
		}
		if (rv->made)
			break;
		new_id(s, rv->name_prefix);
	}
	return sbx_error(e, SBX_EINTERNAL, "run `sbxtop gc`, and create it again",
	    "no free sandbox id found");
}

/* The name free and the id unused in the registry as last read (checked again). */
static int
check_name_id(const struct sandbox *o, void *arg)
{
	struct reserve *rv = arg;

	if (strcmp(o->id, rv->s->id) == 0)
		new_id(rv->s, rv->name_prefix);
	return core_name_check(o, rv->s->name, rv->e);
}

const char *const *
core_backend_names(void)
{
	static const char *names[16];

	for (size_t i = 0; backends[i] != NULL && i + 1 < ARRAY_SIZE(names); i++)
		names[i] = backends[i]->name;
	return names;
}

static int has_restore(const struct backend *b) { return b->restore != NULL; }

/* The backend that places sandboxes on other hosts (struct backend's place). */
static const struct backend *
host_backend(void)
{
	for (size_t i = 0; backends[i] != NULL; i++)
		if (backends[i]->place != NULL)
			return backends[i];
	return NULL;
}

int
core_create(struct core *c, const struct core_create_opts *o, struct sandbox **out,
    struct sbx_err *e)
{
	const struct backend *hb = o->host && *o->host ? host_backend() : NULL;
	const char *bname = hb != NULL ? hb->name :
	    o->backend ? o->backend : config_str(c->cfg, "backend");
	const char *image = o->image ? o->image : config_str(c->cfg, "image");
	const char *net = o->network ? o->network : config_str(c->cfg, "network");
	const struct backend *b = backend_find(bname);
	char known[256];
	struct reserve rv;
	char *picked = NULL;
	struct sandbox *s;
	struct sbx_err sub;
	int64_t t_start = now_ms(), t_reserve, t_backend, t_store;
	int rc = 0, early;

	*out = NULL;
	if (b == NULL)
		return sbx_error(e, SBX_EINVAL, NULL, "unknown backend '%s': expected one of %s",
		    bname, core_backends_having(NULL, known, sizeof known));
	if (o->name != NULL && (!name_valid(o->name) || strncmp(o->name, "sbx-", 4) == 0))
		return sbx_error(e, SBX_EINVAL, NULL, "name '%s' is not valid: expected 1 to %d "
		    "letters, digits, '.', '_' or '-', not starting with '-', '.' or \"sbx-\"",
		    o->name, NAME_MAX_LEN);
	if (o->name_prefix != NULL && (o->name != NULL || !name_valid(o->name_prefix)))
		return sbx_error(e, SBX_EINVAL, NULL, "name prefix '%s' is not valid",
		    o->name_prefix);
	if (config_check("network", net, CONFIG_DEFAULT, e) < 0 ||
	    core_env_valid(o->env, e) < 0)
		return -1;
	if (hb != NULL && o->backend && strcmp(o->backend, hb->name) != 0 &&
	    strcmp(o->backend, hb->hosts_run) != 0)
		return sbx_error(e, SBX_EUNSUPPORTED, "leave out --backend with --host",
		    "backend '%s' does not run on remote hosts yet: only %s does", o->backend,
		    hb->hosts_run);
	if (b->place != NULL && (o->host == NULL || !*o->host))
		return sbx_error(e, SBX_EINVAL, "give --host NAME, or --host auto",
		    "the %s backend needs a host", b->name);

	s = sandbox_new();
	s->max_duration_s = o->max_duration_s >= 0 ? o->max_duration_s :
	    config_int(c->cfg, "max_duration");
	s->idle_s = o->idle_s >= 0 ? o->idle_s : config_int(c->cfg, "idle");
	s->idle_suspend_s = o->idle_suspend_s >= 0 ? o->idle_suspend_s :
	    config_int(c->cfg, "idle_suspend");
	s->limits.memory_mib = o->memory_mib >= 0 ? o->memory_mib : config_int(c->cfg, "memory");
	s->limits.cpus = o->cpus >= 0 ? o->cpus : config_num(c->cfg, "cpus");
	s->limits.pids = o->pids >= 0 ? o->pids : config_int(c->cfg, "pids");
	s->limits.disk_mib = o->disk_mib >= 0 ? o->disk_mib : config_int(c->cfg, "disk");
	if (config_check_num("max_duration", (double)s->max_duration_s, e) < 0 ||
	    config_check_num("idle", (double)s->idle_s, e) < 0 ||
	    config_check_num("idle_suspend", (double)s->idle_suspend_s, e) < 0 ||
	    config_check_num("memory", (double)s->limits.memory_mib, e) < 0 ||
	    config_check_num("cpus", s->limits.cpus, e) < 0 ||
	    config_check_num("pids", (double)s->limits.pids, e) < 0 ||
	    config_check_num("disk", (double)s->limits.disk_mib, e) < 0) {
		sandbox_free(s);
		return -1;
	}
	s->name = o->name ? xstrdup(o->name) : NULL;
	new_id(s, o->name_prefix);
	s->backend = xstrdup(b->name);
	s->image = image && *image ? xstrdup(image) : NULL;
	s->network = xstrdup(net);
	s->owner = xstrdup(o->owner ? o->owner : "cli");
	s->api_key = core_acting_key() ? xstrdup(core_acting_key()) : NULL;
	s->env = o->env ? cJSON_Duplicate(o->env, 1) : NULL;
	if (core_image_prepare(c, o, s, e) < 0 || core_net_prepare(c, o, s, e) < 0 ||
	    (rc = s->net == NULL ? core_pool_claim(c, o, s, out, e) : 0) != 0) {
		sandbox_free(s);
		if (rc <= 0)
			return -1;
		core_events_emit(c, "sandbox.created", (*out)->id, sandbox_to_json(*out, 0));
		return 0;
	}
	s->pool = o->pool ? xstrdup(o->pool) : NULL;
	s->agent_secret = sandbox_new_secret();
	s->state = SBX_CREATING;
	s->created_at = wall_ms();
	s->expires_at = s->created_at + s->max_duration_s * 1000;

	rv = (struct reserve){ s, b, o->host && *o->host ? o->host : NULL, 0, e,
	    o->name_prefix };
	if ((rv.host != NULL && b->place == NULL) || (o->fork_of != NULL && b->fork == NULL) ||
	    (o->from_snapshot != NULL && b->restore == NULL)) {
		sandbox_free(s);
		if (rv.host != NULL && b->place == NULL)
			return sbx_error(e, SBX_EUNSUPPORTED, "leave out --host",
			    "the %s backend does not place sandboxes on hosts", b->name);
		if (o->fork_of != NULL && b->fork == NULL)
			return sbx_error(e, SBX_EUNSUPPORTED, NULL, "the %s backend cannot fork",
			    b->name);
		return sbx_error(e, SBX_EUNSUPPORTED, NULL, "the %s backend has no snapshots "
		    "(these have: %s)", b->name,
		    core_backends_having(has_restore, known, sizeof known));
	}
	/* "auto" asks the hosts how they are (slow: not with the registry
	 * locked); the host it names is then checked in the reservation. */
	if (rv.host != NULL && strcmp(rv.host, "auto") == 0) {
		struct registry *r0 = registry_load(e);
		rc = r0 != NULL ? b->place(s, rv.host, r0, e) : -1;
		registry_free(r0);
		if (rc < 0) {
			sandbox_free(s);
			return -1;
		}
		rv.host = picked = xstrdup(s->host);
	}
	/* A quick create (record_once) is recorded once, when up, its name and id
	 * checked now and again then; a slow one is reserved first, so a core that
	 * dies meanwhile leaves a record, and one placed on a host too. */
	early = rv.host != NULL || !b->record_once;
	t_reserve = now_ms();
	rc = fault_point("create.start", e) < 0 ? -1 : early ?
	    registry_update(txn_reserve, &rv, e) :
	    core_registry_each(c, NULL, check_name_id, &rv, e);
	t_backend = now_ms();
	free(picked);
	if (rc < 0) {
		sandbox_free(s);
		return -1;
	}
	/* A crash from here leaves either a record (early), or a sandbox no
	 * record names, whose every resource carries its id: gc, and the next
	 * core server, find it and remove it (docs/ARCHITECTURE.md, "Crash
	 * points"). */
	if ((early && fault_point("create.reserved", e) < 0) ||
	    (o->fork_of != NULL ? b->fork(o->fork_of, s, e) : o->from_snapshot != NULL ?
	    b->restore(s, o->from_snapshot, e) : b->create(s, e)) < 0) {
		if (early && registry_delete(s->id, &sub) < 0)
			log_warnx("cannot drop the record of %s after a failed create: %s", s->id,
			    sub.msg);
		sandbox_free(s);
		return -1;
	}
	s->state = SBX_RUNNING;
	t_store = now_ms();
	rv.made = 1;
	if (fault_point("create.made", e) < 0 || core_net_start(c, s, e) < 0 ||
	    (early ? registry_store(s, e) : registry_update(txn_reserve, &rv, e)) < 0) {
		/* Nothing half-made stays behind: a sandbox nobody can find is a leak. */
		if (b->destroy(s, &sub) < 0)
			log_warnx("cannot destroy %s after failing to record it: %s", s->id,
			    sub.msg);
		if (b->settled != NULL)
			b->settled(s);
		core_net_forget(s->id);
		if (early)
			(void)registry_delete(s->id, &sub);
		sandbox_free(s);
		return -1;
	}
	/* Recorded: gc may take it for a leftover once it ends. */
	if (b->settled != NULL)
		b->settled(s);
	if (fault_point("create.recorded", &sub) < 0)
		log_debug("%s", sub.msg);	/* only kill means anything here */
	core_net_ready(c, s);
	log_debug("create %s (ms): checks %lld, reserve %lld, backend %lld, store %lld", s->id,
	    (long long)(t_reserve - t_start), (long long)(t_backend - t_reserve),
	    (long long)(t_store - t_backend), (long long)(now_ms() - t_store));
	if (o->pool == NULL)
		core_events_emit(c, "sandbox.created", s->id, sandbox_to_json(s, 0));
	*out = s;
	return 0;
}

/* ---- status, snapshot, destroy ----------------------------------------- */

int
core_status(struct core *c, const char *key, struct sandbox **out, cJSON **health,
    struct sbx_err *e)
{
	struct sandbox *s = core_get(c, key, e);
	struct agentc *a;
	struct sbx_err sub;

	*out = NULL;
	if (health)
		*health = NULL;
	if (s == NULL)
		return -1;
	core_reconcile(c, s);
	core_usage_attach(c, s);
	if (health && s->state == SBX_RUNNING && core_refresh_endpoint(s, &sub) == 0 &&
	    (a = agentc_new(s, &sub)) != NULL) {
		if (agentc_health(a, health, &sub) < 0)
			log_debug("%s", sub.msg);
		agentc_free(a);
	}
	*out = s;
	return 0;
}

int
core_snapshot(struct core *c, const char *key, const char *name, struct sbx_err *e)
{
	struct sandbox *s = core_get(c, key, e);
	int rc;

	if (s == NULL)
		return -1;
	rc = core_snapshot_of(c, s, name, e);
	sandbox_free(s);
	return rc;
}

int
core_destroy(struct core *c, const char *key, char id_out[32], struct sbx_err *e)
{
	struct sandbox *s = core_get(c, key, e);
	const struct backend *b;
	int rc = -1;

	if (s == NULL)
		return -1;
	if (id_out)
		snprintf(id_out, 32, "%s", s->id);
	/* Forwards this core runs close first; one another process runs sees the
	 * record go and closes within a second (the tunnels break before that). */
	fwd_mgr_drop_sandbox(core_fwd_mgr(c, 0), s->id);
	/* A crash before the record goes leaves it, its sandbox stopped or
	 * half-removed: status then says terminated, and destroy or gc ends it. */
	if ((b = core_backend_of(s, e)) != NULL && fault_point("destroy.start", e) == 0 &&
	    b->destroy(s, e) == 0 && fault_point("destroy.removed", e) == 0 &&
	    registry_delete(s->id, e) == 0) {
		core_net_forget(s->id);
		core_events_emit(c, "sandbox.destroyed", s->id, NULL);
		rc = 0;
	}
	sandbox_free(s);
	return rc;
}

/* ---- logs -------------------------------------------------------------- */

char *
core_log_path(struct core *c, const char *key, const char *which, struct sbx_err *e)
{
	struct sandbox *s = core_get(c, key, e);
	const struct backend *b;
	char *p = NULL;

	if (s == NULL)
		return NULL;
	if (strcmp(which, "agent") != 0 && strcmp(which, "console") != 0)
		sbx_error(e, SBX_EINVAL, NULL, "log '%s': expected agent or console", which);
	else if ((b = core_backend_of(s, e)) != NULL)
		p = b->log_path(s, which, e);
	sandbox_free(s);
	return p;
}

struct log_follow {
	struct core	*c;
	const char	*key, *which;
};

static void
log_refresh(void *arg)
{
	struct log_follow *f = arg;
	struct sbx_err e;

	/* A backend that keeps a copy of a log elsewhere (ssh) brings it up to
	 * date when asked for its path. */
	free(core_log_path(f->c, f->key, f->which, &e));
}

static int
log_writer_gone(void *arg)
{
	struct log_follow *f = arg;
	struct sbx_err e;
	struct sandbox *s = core_get(f->c, f->key, &e);
	int gone;

	if (s != NULL)
		core_reconcile(f->c, s);
	gone = s == NULL || s->state == SBX_TERMINATED || s->state == SBX_ERROR;
	sandbox_free(s);
	return gone;
}

int
core_logs(struct core *c, const char *key, const char *which, int follow, int fd,
    volatile int *stop, struct sbx_err *e)
{
	_cleanup_free_ char *path = core_log_path(c, key, which, e);
	_cleanup_close_ int lfd = -1;
	struct log_follow f = { c, key, which };
	struct tail_ops ops = { log_refresh, log_writer_gone, &f };
	char failed = 0;

	if (path == NULL)
		return -1;
	if ((lfd = sandbox_log_open(path, which, e)) < 0)
		return -1;
	if (tail_fd(lfd, fd, follow, stop, &ops, &failed) < 0)
		return failed == 'r' ? sbx_error_errno(e, SBX_EIO, NULL, "cannot read %s", path) :
		    sbx_error_errno(e, SBX_EIO, NULL, "cannot write the log");
	return 0;
}

/* ---- gc and doctor ----------------------------------------------------- */

const char *
core_backend_name(size_t i)
{
	for (size_t k = 0; backends[k] != NULL; k++)
		if (k == i)
			return backends[k]->name;
	return NULL;
}

int
core_admin(struct core *c, const char *backend, enum backend_verb verb, const cJSON *args,
    FILE *progress, cJSON **out, struct sbx_err *e)
{
	const struct backend *b = backend_find(backend);
	backend_verb_fn *fn = b != NULL && b->verbs != NULL && (unsigned)verb < BACKEND_VERBS ?
	    b->verbs[verb] : NULL;
	struct registry *r;
	int rc;

	(void)c;
	*out = NULL;
	if (fn == NULL)
		return sbx_error(e, SBX_EUNSUPPORTED, "`sbxtop doctor` lists the backends built in",
		    "the %s backend is not built in, or has no '%s'", backend,
		    backend_verb_name(verb));
	if ((r = registry_load(e)) == NULL)
		return -1;
	rc = fn(args, r, progress, out, e);
	registry_free(r);
	return rc;
}

struct doctor_ctx {
	check_fn	 report;
	void		*arg;
	int		 worst;
	const char	*soften;	/* a backend other than the default: FAIL is WARN */
	const char	*dflt;		/* the default backend */
};

static void
doctor_report(void *arg, enum check_level level, const char *what, const char *detail,
    const char *fix)
{
	struct doctor_ctx *d = arg;
	_cleanup_free_ char *more = NULL;

	/* Sandboxes work without it, only with less: the default backend decides. */
	if (d->soften != NULL && level == CHECK_FAIL) {
		level = CHECK_WARN;
		detail = more = xasprintf("%s (only the %s backend needs this; the default "
		    "is %s)", detail ? detail : "", d->soften, d->dflt);
	}
	if ((int)level > d->worst)
		d->worst = (int)level;
	d->report(d->arg, level, what, detail, fix);
}

int
core_doctor(struct core *c, const char *backend, check_fn report, void *arg,
    struct sbx_err *e)
{
	const char *dflt = config_str(c->cfg, "backend");
	struct doctor_ctx d = { report, arg, CHECK_OK, NULL, dflt };
	const struct backend *only = NULL;
	static const enum paths_kind kinds[] = {
		PATHS_STATE, PATHS_CONFIG, PATHS_DATA, PATHS_CACHE, PATHS_RUNTIME,
	};

	if (backend != NULL && (only = backend_find(backend)) == NULL)
		return sbx_error(e, SBX_EINVAL, NULL, "unknown backend '%s'", backend);
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		struct sbx_err sub;
		char what[64];
		_cleanup_free_ char *dir = paths_ensure(kinds[i], &sub);
		snprintf(what, sizeof what, "%s directory", paths_kind_name(kinds[i]));
		if (dir == NULL) {
			doctor_report(&d, CHECK_FAIL, what, sub.msg, sub.hint[0] ? sub.hint : NULL);
			continue;
		}
		if (access(dir, W_OK | X_OK) < 0) {
			_cleanup_free_ char *m = xasprintf("%s is not writable", dir);
			doctor_report(&d, CHECK_FAIL, what, m, "fix its owner and permissions");
		} else if (kinds[i] == PATHS_RUNTIME && paths_runtime_fallback() != NULL) {
			_cleanup_free_ char *m = xasprintf("%s: XDG_RUNTIME_DIR is unset and there is "
			    "no private /run/user/%u, so an sbxtop started with XDG_RUNTIME_DIR uses "
			    "another core server", dir, (unsigned)getuid());
			doctor_report(&d, CHECK_WARN, what, m, "pass XDG_RUNTIME_DIR in the "
			    "environment (an MCP client's \"env\"), or log in through "
			    "systemd-logind, which makes /run/user/UID");
		} else {
			doctor_report(&d, CHECK_OK, what, dir, NULL);
		}
	}
	{
		struct sbx_err sub;
		struct registry *r = registry_load(&sub);
		_cleanup_free_ char *p = registry_path(&sub);
		if (r == NULL) {
			doctor_report(&d, CHECK_FAIL, "registry", sub.msg, sub.hint[0] ? sub.hint : NULL);
		} else {
			_cleanup_free_ char *m = xasprintf("%s (%zu sandboxes)", p ? p : "?",
			    registry_count(r));
			doctor_report(&d, CHECK_OK, "registry", m, NULL);
			registry_free(r);
		}
	}
	for (size_t i = 0; backends[i] != NULL; i++) {
		if (only != NULL && only != backends[i])
			continue;
		d.soften = only == NULL && strcmp(backends[i]->name, dflt) != 0 ?
		    backends[i]->name : NULL;
		backends[i]->doctor(doctor_report, &d);
	}
	return d.worst;
}
