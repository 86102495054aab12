/* The forwards in the registry (see fwd/fwd.h).  Each forward is an entry in
 * its sandbox record's `forwards` array, written by the process that runs it
 * (its pid and that process's start time say whether it still runs) and
 * changed only through the transactions here, so a whole-record store
 * elsewhere cannot drop one.  The loop reads the registry every tick to learn
 * which forwards another process stopped and writes its counters back. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fwd/fwd.h"
#include "core/registry.h"
#include "lib/log.h"
#include "lib/proc.h"
#include "lib/util.h"

/* ---- who owns a forward ------------------------------------------------ */

static unsigned long long
self_start(void)
{
	static unsigned long long st;

	if (st == 0)
		st = proc_running_since(getpid());
	return st;
}

int
fwd_entry_int(const cJSON *en, const char *k)
{
	return (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(en, k));
}

uint64_t
fwd_entry_u64(const cJSON *en, const char *k)
{
	double d = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(en, k));

	return d > 0 && d < 9e18 ? (uint64_t)d : 0;
}

int
fwd_entry_is_own(const cJSON *en)
{
	return fwd_entry_int(en, "pid") == getpid() &&
	    fwd_entry_u64(en, "pid_start") == self_start();
}

int
fwd_entry_live(const cJSON *en)
{
	int pid = fwd_entry_int(en, "pid");
	unsigned long long st = fwd_entry_u64(en, "pid_start");

	return pid > 0 && st != 0 && proc_running_since(pid) == st;
}

int
fwd_entry_is(const cJSON *en, const struct fwd *f)
{
	const char *b = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(en, "bind"));

	return fwd_entry_is_own(en) && fwd_entry_int(en, "local") == f->local &&
	    fwd_entry_int(en, "remote") == f->remote && b != NULL && strcmp(b, f->addr) == 0;
}

/* ---- the registry side ------------------------------------------------- */

void
fwd_counters(struct fwd *f, uint64_t v[5])
{
	v[0] = atomic_load(&f->conns_now);
	v[1] = atomic_load(&f->conns_total);
	v[2] = atomic_load(&f->bytes_in);
	v[3] = atomic_load(&f->bytes_out);
	v[4] = atomic_load(&f->failures);
}

static void
entry_set_counters(cJSON *en, const uint64_t v[5], const char *last_error)
{
	static const char *const k[5] = {
		"conns", "conns_total", "bytes_in", "bytes_out", "failures",
	};

	for (int i = 0; i < 5; i++) {
		cJSON_DeleteItemFromObjectCaseSensitive(en, k[i]);
		cJSON_AddNumberToObject(en, k[i], (double)v[i]);
	}
	cJSON_DeleteItemFromObjectCaseSensitive(en, "last_error");
	if (last_error != NULL && last_error[0] != '\0')
		cJSON_AddStringToObject(en, "last_error", last_error);
	cJSON_DeleteItemFromObjectCaseSensitive(en, "updated_at");
	cJSON_AddNumberToObject(en, "updated_at", (double)wall_ms());
}

static int
txn_flush(struct registry *r, void *arg, struct sbx_err *e)
{
	struct fwd_mgr *m = arg;

	for (struct fwd *f = m->fwds; f != NULL; f = f->next) {
		struct sandbox *s = registry_get(r, f->id);
		cJSON *en;
		uint64_t v[5];
		if (s == NULL)
			continue;
		fwd_counters(f, v);
		cJSON_ArrayForEach(en, s->forwards)
			if (fwd_entry_is(en, f)) {
				entry_set_counters(en, v, f->last_error);
				memcpy(f->flushed, v, sizeof v);
			}
	}
	return 0;
}

void
fwd_store_sync(struct fwd_mgr *m, int64_t now)
{
	struct registry *r;
	struct sbx_err e;
	int changed = 0;

	if ((r = registry_load(&e)) == NULL) {
		log_debug("forward: %s", e.msg);
		return;
	}
	for (struct fwd *f = m->fwds; f != NULL; f = f->next) {
		struct sandbox *s = registry_get(r, f->id);
		const cJSON *en;
		int found = 0;
		uint64_t v[5];
		if (f->stop)
			continue;
		if (s == NULL || s->state == SBX_TERMINATED || s->state == SBX_ERROR) {
			log_warnx("sandbox %s is %s: forward %s:%d -> %d stopped", f->id,
			    s ? sbx_state_name(s->state) : "gone", f->addr, f->local, f->remote);
			f->stop = 1;
			continue;
		}
		cJSON_ArrayForEach(en, s->forwards)
			found |= fwd_entry_is(en, f);
		if (!found) {
			log_info("forward %s:%d -> %s:%d was stopped", f->addr, f->local, f->id,
			    f->remote);
			f->stop = 1;
			continue;
		}
		f->state = s->state;
		if (f->tls) {
			/* A renewed token (by this core or another process) is used by
			 * the connections from now on. */
			char *h = s->agent_headers ? cJSON_PrintUnformatted(s->agent_headers) :
			    xstrdup("");
			if ((f->hdrs_seen == NULL || strcmp(h, f->hdrs_seen) != 0) &&
			    fwd_build_req(f, s, &e) == 0 && f->http)
				for (struct conn *k = f->conns; k != NULL; k = k->next)
					if (k->fh != NULL)
						fwd_http_set_inject(k->fh, f->inject);
			free(h);
		}
		fwd_counters(f, v);
		changed |= memcmp(v, f->flushed, sizeof v) != 0;
	}
	registry_free(r);
	if (changed && now - m->last_flush >= FWD_FLUSH_MS) {
		m->last_flush = now;
		if (registry_update(txn_flush, m, &e) < 0)
			log_debug("forward: counters: %s", e.msg);
	}
}

static cJSON *
new_entry(const struct fwd *f)
{
	cJSON *en = cJSON_CreateObject();
	uint64_t zero[5] = { 0 };

	cJSON_AddNumberToObject(en, "remote", f->remote);
	cJSON_AddNumberToObject(en, "local", f->local);
	cJSON_AddStringToObject(en, "bind", f->addr);
	cJSON_AddNumberToObject(en, "pid", getpid());
	cJSON_AddNumberToObject(en, "pid_start", (double)self_start());
	cJSON_AddNumberToObject(en, "since", (double)f->since);
	if (f->http)
		cJSON_AddStringToObject(en, "mode", "http");
	entry_set_counters(en, zero, NULL);
	return en;
}

struct txn_add {
	const char	*id;
	cJSON		*entry;
};

static int
txn_add(struct registry *r, void *arg, struct sbx_err *e)
{
	struct txn_add *t = arg;
	struct sandbox *s = registry_get(r, t->id);

	if (s == NULL)
		return sbx_error(e, SBX_ENOTFOUND, "run `sbxtop ls`", "sandbox %s is gone", t->id);
	if (s->state == SBX_TERMINATED || s->state == SBX_ERROR)
		return sbx_error_reason(e, SBX_ESTATE, SBX_R_GONE, "create a new one",
		    "sandbox %s is %s", s->id,
		    sbx_state_name(s->state));
	if (s->forwards == NULL)
		s->forwards = cJSON_CreateArray();
	cJSON_AddItemToArray(s->forwards, cJSON_Duplicate(t->entry, 1));
	return 0;
}

int
fwd_store_add(const struct fwd *f, struct sbx_err *e)
{
	struct txn_add t = { f->id, new_entry(f) };
	int rc = registry_update(txn_add, &t, e);

	cJSON_Delete(t.entry);
	return rc;
}

struct txn_remove {
	const char	*id;		/* NULL: every record */
	int		 remote;	/* 0: any */
	int		 own_only;
	cJSON		*removed;	/* array of the entries taken out */
};

static int
txn_remove(struct registry *r, void *arg, struct sbx_err *e)
{
	struct txn_remove *t = arg;

	for (size_t i = 0; i < registry_count(r); i++) {
		struct sandbox *s = registry_at(r, i);
		if (t->id != NULL && strcmp(s->id, t->id) != 0)
			continue;
		for (int j = cJSON_GetArraySize(s->forwards) - 1; j >= 0; j--) {
			cJSON *en = cJSON_GetArrayItem(s->forwards, j);
			if ((t->remote > 0 && fwd_entry_int(en, "remote") != t->remote) ||
			    (t->own_only && !fwd_entry_is_own(en)))
				continue;
			en = cJSON_DetachItemFromArray(s->forwards, j);
			cJSON_AddStringToObject(en, "sandbox", s->id);
			cJSON_AddItemToArray(t->removed, en);
		}
		if (s->forwards != NULL && cJSON_GetArraySize(s->forwards) == 0) {
			cJSON_Delete(s->forwards);
			s->forwards = NULL;
		}
	}
	return 0;
}

int
fwd_store_remove(const char *id, int remote, int own_only, cJSON *removed, struct sbx_err *e)
{
	struct txn_remove t = { id, remote, own_only, removed };

	return registry_update(txn_remove, &t, e);
}

struct txn_forget {
	const char	*id;
	int		 local, pid;
	const char	*addr;
};

static int
txn_forget(struct registry *r, void *arg, struct sbx_err *e)
{
	struct txn_forget *t = arg;
	struct sandbox *s = registry_get(r, t->id);

	for (int j = s ? cJSON_GetArraySize(s->forwards) - 1 : -1; j >= 0; j--) {
		cJSON *en = cJSON_GetArrayItem(s->forwards, j);
		const char *b = cJSON_GetStringValue(cJSON_GetObjectItem(en, "bind"));
		if (fwd_entry_int(en, "local") == t->local && fwd_entry_int(en, "pid") == t->pid &&
		    b != NULL && strcmp(b, t->addr) == 0)
			cJSON_DeleteItemFromArray(s->forwards, j);
	}
	return 0;
}

int
fwd_store_drop(const char *id, int local, int pid, const char *addr, struct sbx_err *e)
{
	struct txn_forget t = { id, local, pid, addr };

	return registry_update(txn_forget, &t, e);
}

/* Drop the record of f (started by this process) after a failed start. */
void
fwd_store_forget(const struct fwd *f)
{
	struct txn_forget t = { f->id, f->local, getpid(), f->addr };
	struct sbx_err sub;

	if (registry_update(txn_forget, &t, &sub) < 0)
		log_warnx("cannot drop the record of %s:%d: %s", f->addr, f->local, sub.msg);
}

