/* The registry as this core last parsed it, kept while the file's bytes stay
 * the same (every change renames a whole new file in, so a reader sees one
 * version or the next, never half of one).  With hundreds of records, parsing
 * the registry for each call cost about as much as the call itself. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core-int.h"
#include "core/registry.h"
#include "lib/util.h"

#define REGISTRY_CACHE_MAX (64u << 20)

struct core_regcache {
	pthread_mutex_t	 mu;
	struct registry	*reg;
	char		*bytes;		/* the file as it was when reg was parsed */
	size_t		 len;
};

struct core_regcache *
core_regcache_new(void)
{
	struct core_regcache *k = xcalloc(1, sizeof *k);

	pthread_mutex_init(&k->mu, NULL);
	return k;
}

void
core_regcache_free(struct core_regcache *k)
{
	if (k == NULL)
		return;
	registry_free(k->reg);
	free(k->bytes);
	pthread_mutex_destroy(&k->mu);
	free(k);
}

int
core_registry_each(struct core *c, const char *key, core_record_fn fn, void *arg,
    struct sbx_err *e)
{
	struct core_regcache *k = core_regcache_of(c);
	_cleanup_free_ char *path = registry_path(e), *bytes = NULL;
	size_t n = 0;
	int rc = 0;

	if (path == NULL)
		return -1;
	/* Read before parsing: a cache keyed on older bytes than the version it
	 * holds is only parsed again, never stale. */
	bytes = read_file(path, REGISTRY_CACHE_MAX, &n);
	pthread_mutex_lock(&k->mu);
	if (k->reg == NULL || bytes == NULL || k->bytes == NULL || n != k->len ||
	    memcmp(bytes, k->bytes, n) != 0) {
		struct registry *r = registry_load(e);
		if (r == NULL) {
			pthread_mutex_unlock(&k->mu);
			return -1;
		}
		registry_free(k->reg);
		free(k->bytes);
		k->reg = r;
		k->bytes = steal_pointer(&bytes);
		k->len = n;
	}
	if (key != NULL) {
		struct sandbox *s = registry_find(k->reg, key, e);
		if (s != NULL && !core_sees(s)) {
			/* Another key's: as unknown as one that never was. */
			sbx_error_reason(e, SBX_ENOTFOUND, SBX_R_UNKNOWN_SANDBOX,
			    "run `sbxtop ls`", "unknown sandbox '%s'", key);
			s = NULL;
		}
		rc = s != NULL ? fn(s, arg) : -1;
	} else {
		for (size_t i = 0; i < registry_count(k->reg) && rc == 0; i++)
			rc = fn(registry_at(k->reg, i), arg);
	}
	pthread_mutex_unlock(&k->mu);
	return rc;
}

/* --- who a thread's calls act for ---------------------------------------- */

static __thread char acting[40];	/* "": nobody in particular */
static __thread int acting_all = 1;

void
core_act_for(const char *key_id, int all)
{
	snprintf(acting, sizeof acting, "%s", key_id ? key_id : "");
	acting_all = key_id == NULL || all;
}

const char *
core_acting_key(void)
{
	return acting[0] ? acting : NULL;
}

int
core_sees_key(const char *api_key)
{
	return acting_all || (api_key != NULL && strcmp(api_key, acting) == 0);
}

int
core_sees(const struct sandbox *s)
{
	return core_sees_key(s->api_key);
}

struct picked {
	int		(*want)(const struct sandbox *s);
	struct sandbox	**v;
	size_t		  n, cap;
};

static int
pick_one(const struct sandbox *s, void *arg)
{
	struct picked *p = arg;

	if (!p->want(s))
		return 0;
	if (p->n >= p->cap) {
		p->cap = p->cap ? p->cap * 2 : 16;
		p->v = xrealloc(p->v, p->cap * sizeof *p->v);
	}
	p->v[p->n++] = sandbox_dup(s);
	return 0;
}

int
core_registry_pick(struct core *c, int (*want)(const struct sandbox *s), struct sandbox ***v,
    size_t *n, struct sbx_err *e)
{
	struct picked p = { want, NULL, 0, 0 };

	*v = NULL;
	*n = 0;
	if (core_registry_each(c, NULL, pick_one, &p, e) < 0) {
		core_list_free(p.v, p.n);
		return -1;
	}
	*v = p.v;
	*n = p.n;
	return 0;
}

static int
dup_one(const struct sandbox *s, void *arg)
{
	*(struct sandbox **)arg = sandbox_dup(s);
	return 0;
}

struct sandbox *
core_get(struct core *c, const char *key, struct sbx_err *e)
{
	struct sandbox *s = NULL;

	return core_registry_each(c, key, dup_one, &s, e) < 0 ? NULL : s;
}

void
core_list_free(struct sandbox **v, size_t n)
{
	for (size_t i = 0; v != NULL && i < n; i++)
		sandbox_free(v[i]);
	free(v);
}
