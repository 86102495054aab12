/* Forks: new sandboxes that start as copies of a live one (core_fork, core.h).
 * A backend with a fork op copies the files itself (ns); one with snapshots
 * (qemu) is snapshotted once under a scratch name and restored n times, and
 * the scratch snapshot is removed afterwards. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core-int.h"
#include "lib/log.h"
#include "lib/util.h"

static void
opts_from(struct core_create_opts *o, const struct sandbox *src)
{
	core_create_opts_init(o);
	o->backend = src->backend;
	o->image = src->image ? src->image : "";
	o->image_id = src->image_id;
	o->memory_mib = src->limits.memory_mib;
	o->cpus = src->limits.cpus;
	o->pids = src->limits.pids;
	o->disk_mib = src->limits.disk_mib;
	o->max_duration_s = src->max_duration_s;
	o->idle_s = src->idle_s;
	o->idle_suspend_s = src->idle_suspend_s;
	o->network = src->network;
	o->env = src->env;
	o->owner = src->owner;
	o->host = src->host;
}

/* What create asks for to give a copy src's network policy (NULL when it has
 * none): its entries, ask mode and secrets (by name: each copy gets its own
 * placeholder), not its grants, which were the source's for a while. */
static cJSON *
net_of(const struct sandbox *src)
{
	static const char *const keys[] = { "allow", "deny", "ask" };
	cJSON *o, *names;
	const cJSON *it;

	if (src->net == NULL)
		return NULL;
	o = cJSON_CreateObject();
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(src->net, keys[i]);
		if (v != NULL)
			cJSON_AddItemToObject(o, keys[i], cJSON_Duplicate(v, 1));
	}
	names = cJSON_AddArrayToObject(o, "secrets");
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(src->net, "secrets")) {
		const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "name"));
		if (name != NULL)
			cJSON_AddItemToArray(names, cJSON_CreateString(name));
	}
	return o;
}

int
core_fork(struct core *c, const char *key, int n, const struct core_fork_by *by,
    struct sandbox ***out, size_t *nout, struct sbx_err *e)
{
	struct sandbox *src, **v;
	const struct backend *b;
	char snap[64] = "";
	cJSON *net = NULL;
	int rc = 0;

	*out = NULL;
	*nout = 0;
	if (n < 1 || n > CORE_FORK_MAX)
		return sbx_error(e, SBX_EINVAL, "ask for fewer at a time", "a fork makes 1 to %d "
		    "copies, not %d", CORE_FORK_MAX, n);
	if (core_status(c, key, &src, NULL, e) < 0)
		return -1;
	if ((b = backend_find(src->backend)) == NULL) {
		sbx_error(e, SBX_EUNSUPPORTED, "use an sbxtop built with that backend",
		    "sandbox %s uses backend '%s', which this sbxtop does not have", src->id,
		    src->backend ? src->backend : "(none)");
		sandbox_free(src);
		return -1;
	}
	if (src->state != SBX_RUNNING && src->state != SBX_SUSPENDED) {
		sbx_error_reason(e, SBX_ESTATE, sbx_state_reason(src->state, SBX_R_NOT_RUNNING),
		    "`sbxtop status ID` says why", "sandbox %s is %s: only a running or suspended "
		    "sandbox can be forked", src->id, sbx_state_name(src->state));
		sandbox_free(src);
		return -1;
	}
	if (b->fork == NULL && (b->snapshot == NULL || b->restore == NULL)) {
		sbx_error(e, SBX_EUNSUPPORTED, NULL, "the %s backend cannot fork sandboxes yet "
		    "(ns and qemu can)", b->name);
		sandbox_free(src);
		return -1;
	}
	if (b->fork == NULL) {
		/* One instant of memory and disk, restored n times. */
		char rnd[32];
		sandbox_new_id(rnd, sizeof rnd);
		snprintf(snap, sizeof snap, "fork-%s-%s", src->id + 4, rnd + 4);
		if (src->state == SBX_SUSPENDED) {
			sbx_error_reason(e, SBX_ESTATE, SBX_R_SUSPENDED, "resume it first "
			    "(`sbxtop resume`)", "sandbox %s is suspended: a %s sandbox forks "
			    "from a snapshot, taken while it runs", src->id, b->name);
			sandbox_free(src);
			return -1;
		}
		if (core_snapshot(c, src->id, snap, e) < 0) {
			sandbox_free(src);
			return -1;
		}
	}
	net = net_of(src);
	v = xcalloc((size_t)n + 1, sizeof *v);
	for (int i = 0; i < n; i++) {
		struct core_create_opts o;
		struct sandbox *s = NULL;
		int64_t t0 = now_ms();

		opts_from(&o, src);
		if (by != NULL) {
			o.owner = by->owner;
			o.agent = by->agent;
		}
		/* The source's name with the new id's suffix ("web" and sbx-7f3a9c:
		 * "web-7f3a9c"), so forks of one sandbox never clash. */
		o.name_prefix = src->name;
		o.net = net;
		if (b->fork != NULL)
			o.fork_of = src;
		else
			o.from_snapshot = snap;
		if (core_create(c, &o, &s, e) < 0) {
			rc = -1;
			break;
		}
		log_info("forked %s as %s in %lld ms", src->id, s->id, (long long)(now_ms() - t0));
		v[(*nout)++] = s;
		core_events_emit(c, "sandbox.forked", s->id, cJSON_CreateString(src->id));
	}
	if (snap[0] != '\0' && b->snapshot_rm != NULL) {
		struct sbx_err sub;
		if (b->snapshot_rm(snap, &sub) < 0)
			log_warnx("cannot remove the fork's snapshot %s: %s", snap, sub.msg);
	}
	cJSON_Delete(net);
	sandbox_free(src);
	*out = v;
	return rc;
}
