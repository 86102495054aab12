/* The core's ground: what every part of the core needs of a sandbox (its state
 * asked of the backend, a suspend or resume, a snapshot, its agent endpoint
 * made usable) and of the core (its configuration, its forward manager).  It
 * calls only the event ring and the registry beside it, never the parts
 * above; what they must hear of reaches them through hooks core.c installs in
 * core_new (a forward's resume, the ring's new listener). */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core-int.h"
#include "core/registry.h"
#include "lib/log.h"
#include "lib/util.h"

/* A record still "creating" after this long belongs to a create that died. */
#define CREATING_STALE_MS (120 * 1000)

const struct config *core_config(const struct core *c) { return c->cfg; }

struct fwd_mgr *
core_fwd_mgr(struct core *c, int create)
{
	struct fwd_mgr *m;

	pthread_mutex_lock(&c->fwd_mu);
	if (c->fwd == NULL && create)
		c->fwd = fwd_mgr_new(&c->fwd_hooks);
	m = c->fwd;
	pthread_mutex_unlock(&c->fwd_mu);
	return m;
}

static cJSON *
state_event(const struct sandbox *s)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "state", sbx_state_name(s->state));
	if (s->state_reason)
		cJSON_AddStringToObject(o, "reason", s->state_reason);
	return o;
}

struct reconcile {
	const struct sandbox	*now;	/* what the backend says */
	enum sbx_state		 was;
	int			 changed;
};

/* Write the backend's view only over the state it was computed from, so a
 * concurrent destroy or resume is never undone. */
static int
txn_reconcile(struct registry *r, void *arg, struct sbx_err *e)
{
	struct reconcile *rc = arg;
	struct sandbox *s;

	for (size_t i = 0; i < registry_count(r); i++) {
		s = registry_at(r, i);
		if (strcmp(s->id, rc->now->id) != 0)
			continue;
		if (s->state != rc->was)
			return 0;
		s->state = rc->now->state;
		free(s->state_reason);
		s->state_reason = rc->now->state_reason ? xstrdup(rc->now->state_reason) : NULL;
		rc->changed = 1;
		return 0;
	}
	return 0;
}

/* Refresh s from its backend; a sandbox found dead is reported once, since the
 * registry then says terminated and is not asked again. */
static void
reconcile(struct core *c, struct sandbox *s)
{
	const struct backend *b = backend_find(s->backend);
	struct reconcile rc = { NULL, s->state, 0 };
	struct sandbox *now;
	struct sbx_err e;

	if (b == NULL || s->state == SBX_TERMINATED)
		return;
	if (s->state == SBX_CREATING && wall_ms() - s->created_at < CREATING_STALE_MS)
		return;		/* another process is still bringing it up */
	now = sandbox_dup(s);
	if (b->status(now, &e) < 0) {
		log_debug("status of %s: %s", s->id, e.msg);
		sandbox_free(now);
		return;
	}
	if (now->state == s->state && (now->state_reason == NULL) == (s->state_reason == NULL) &&
	    (now->state_reason == NULL || strcmp(now->state_reason, s->state_reason) == 0)) {
		sandbox_free(now);
		return;
	}
	rc.now = now;
	if (registry_update(txn_reconcile, &rc, &e) < 0)
		log_warnx("cannot record the state of %s: %s", s->id, e.msg);
	if (rc.changed) {
		if (now->state == SBX_TERMINATED || now->state == SBX_ERROR)
			core_vanishing_note(c, s->id, s->api_key, now->state_reason);
		if (now->state == SBX_TERMINATED || now->state == SBX_ERROR)
			log_warnx("sandbox %s%s%s%s is %s: %s", s->id, s->name ? " (" : "",
			    s->name ? s->name : "", s->name ? ")" : "", sbx_state_name(now->state),
			    now->state_reason ? now->state_reason : "no reason given");
		core_events_emit(c, "sandbox.state", s->id, state_event(now));
	}
	s->state = now->state;
	free(s->state_reason);
	s->state_reason = steal_pointer(&now->state_reason);
	sandbox_free(now);
}

void
core_reconcile(struct core *c, struct sandbox *s)
{
	reconcile(c, s);
}

void
core_agent_broke(struct core *c, const struct sandbox *s, const char *during,
    struct sbx_err *e)
{
	struct sandbox *now;
	char was[sizeof e->msg];

	if (e->code != SBX_EAGENT && e->code != SBX_EIO && e->code != SBX_ETIMEOUT)
		return;
	now = sandbox_dup(s);
	/* Its init may take a moment to go after the connection did. */
	for (int i = 0; i < 6 && now->state != SBX_TERMINATED && now->state != SBX_ERROR; i++) {
		if (i > 0)
			poll(NULL, 0, 50);
		reconcile(c, now);
	}
	if (now->state == SBX_TERMINATED || now->state == SBX_ERROR) {
		char hint[sizeof e->hint];
		snprintf(was, sizeof was, "%s", e->msg);
		snprintf(hint, sizeof hint, "%s", e->hint[0] ? e->hint :
		    "create a new one; `sbxtop status ID` says why");
		sbx_error_reason(e, SBX_ESTATE, SBX_R_GONE, hint,
		    "sandbox %s ended during %s: %s", s->id, during,
		    now->state_reason ? now->state_reason : "its agent is gone");
		log_debug("%s: %s", s->id, was);
	}
	sandbox_free(now);
}

const struct backend *
core_backend_of(const struct sandbox *s, struct sbx_err *e)
{
	const struct backend *b = backend_find(s->backend);

	if (b == NULL)
		sbx_error(e, SBX_EUNSUPPORTED, "use an sbxtop built with that backend",
		    "sandbox %s uses backend '%s', which this sbxtop does not have", s->id,
		    s->backend ? s->backend : "(none)");
	return b;
}

static int
change_state(struct core *c, const char *key, int suspend, const char *reason,
    struct sbx_err *e)
{
	struct sandbox *s = core_get(c, key, e);
	const struct backend *b;
	enum sbx_state want = suspend ? SBX_SUSPENDED : SBX_RUNNING;
	int rc = -1;

	if (s == NULL)
		return -1;
	if ((b = core_backend_of(s, e)) == NULL)
		goto out;
	if (s->state == want) {		/* already there: nothing to do, not an error */
		rc = 0;
		goto out;
	}
	if (s->state != (suspend ? SBX_RUNNING : SBX_SUSPENDED)) {
		sbx_error_reason(e, SBX_ESTATE, sbx_state_reason(s->state, suspend ?
		    SBX_R_NOT_RUNNING : SBX_R_NOT_SUSPENDED), "`sbxtop status ID` says why",
		    "sandbox %s is %s: only a %s sandbox can be %s", s->id,
		    sbx_state_name(s->state), suspend ? "running" : "suspended",
		    suspend ? "suspended" : "resumed");
		goto out;
	}
	if ((suspend ? b->suspend(s, e) : b->resume(s, e)) < 0)
		goto out;
	s->state = want;
	free(s->state_reason);
	s->state_reason = reason ? xstrdup(reason) : NULL;
	if (registry_store(s, e) < 0) {
		/* Unrecorded (a full disk, say): put it back as the record says. */
		struct sbx_err sub;
		if ((suspend ? b->resume(s, &sub) : b->suspend(s, &sub)) < 0)
			log_warnx("%s is %s, yet recorded as %s: %s", s->id, sbx_state_name(want),
			    suspend ? "running" : "suspended", sub.msg);
		goto out;
	}
	core_events_emit(c, "sandbox.state", s->id, state_event(s));
	rc = 0;
out:
	sandbox_free(s);
	return rc;
}

int core_suspend(struct core *c, const char *key, struct sbx_err *e)
{ return change_state(c, key, 1, NULL, e); }
int core_suspend_reason(struct core *c, const char *key, const char *reason,
    struct sbx_err *e)
{ return change_state(c, key, 1, reason, e); }
int core_resume(struct core *c, const char *key, struct sbx_err *e)
{ return change_state(c, key, 0, NULL, e); }

/* A backend whose endpoint carries a token with a lifetime renews it here; the
 * renewed record is stored so the next client finds it. */
int
core_refresh_endpoint(struct sandbox *s, struct sbx_err *e)
{
	const struct backend *b = backend_find(s->backend);
	int rc;

	if (b == NULL || b->agent_endpoint == NULL)
		return 0;
	if ((rc = b->agent_endpoint(s, e)) < 0)
		return -1;
	if (rc > 0 && registry_store(s, e) < 0)
		return -1;
	return 0;
}

int
core_endpoint_renew(struct core *c, const char *id, struct sbx_err *e)
{
	struct sandbox *s = core_get(c, id, e);
	int rc;

	if (s == NULL)
		return -1;
	rc = core_refresh_endpoint(s, e);
	sandbox_free(s);
	return rc;
}

/* The names of the compiled-in backends for which has (NULL: every one) says
 * yes, comma-separated, for errors. */
const char *
core_backends_having(int (*has)(const struct backend *), char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; backends[i] != NULL && n < len; i++)
		if (has == NULL || has(backends[i]))
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "",
			    backends[i]->name);
	return buf;
}

static int has_snapshot(const struct backend *b) { return b->snapshot != NULL; }

/* Only the secret changes: forwards and their counters, written by other
 * processes meanwhile, stay as they are. */
static int
txn_secret(struct registry *r, void *arg, struct sbx_err *e)
{
	const struct sandbox *now = arg;

	for (size_t i = 0; i < registry_count(r); i++) {
		struct sandbox *s = registry_at(r, i);
		if (strcmp(s->id, now->id) == 0) {
			free(s->agent_secret);
			s->agent_secret = xstrdup(now->agent_secret);
			return 0;
		}
	}
	return sbx_error(e, SBX_ENOTFOUND, NULL, "sandbox %s was destroyed meanwhile", now->id);
}

int
core_snapshot_of(struct core *c, struct sandbox *s, const char *name, struct sbx_err *e)
{
	const struct backend *b;
	_cleanup_free_ char *old = NULL;
	int rc = -1;

	if ((b = core_backend_of(s, e)) == NULL)
		goto out;
	if (b->snapshot == NULL) {
		char known[256];
		sbx_error(e, SBX_EUNSUPPORTED, NULL, "the %s backend has no snapshots (these "
		    "have: %s)", b->name,
		    core_backends_having(has_snapshot, known, sizeof known));
		goto out;
	}
	core_reconcile(c, s);
	if (s->state != SBX_RUNNING) {
		sbx_error_reason(e, SBX_ESTATE, sbx_state_reason(s->state, SBX_R_NOT_RUNNING),
		    s->state == SBX_SUSPENDED ? "resume it first (`sbxtop resume`)" :
		    "`sbxtop status ID` says why", "sandbox %s is %s: only a running sandbox can be "
		    "snapshotted", s->id, sbx_state_name(s->state));
		goto out;
	}
	old = xstrdup(s->agent_secret ? s->agent_secret : "");
	rc = b->snapshot(s, name, e);
	/* The backend may have given the sandbox a new secret, even on failure. */
	if (s->agent_secret != NULL && strcmp(old, s->agent_secret) != 0) {
		struct sbx_err sub;
		if (registry_update(txn_secret, s, &sub) < 0) {
			log_warnx("cannot record the new secret of %s: %s", s->id, sub.msg);
			if (rc == 0) {
				*e = sub;
				rc = -1;
			}
		}
	}
	if (rc == 0) {
		cJSON *d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "snapshot", name);
		core_events_emit(c, "sandbox.snapshot", s->id, d);
	}
out:
	if (old != NULL)
		explicit_bzero(old, strlen(old));
	return rc;
}
