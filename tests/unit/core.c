/* Unit tests for the core: the event ring (numbering, bound, replay, fan-out),
 * create's validation with ranges, a create that fails half-way leaving nothing
 * behind, lookups of unknown sandboxes, and what a thread acting for an API
 * key sees.  TAP lines. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "core/core.h"
#include "core/registry.h"
#include "lib/util.h"

struct seen {
	uint64_t	last;
	size_t		n;
	int		in_order;
	int		saw_data;
};

static void
on_event(const struct core_event *ev, void *arg)
{
	struct seen *s = arg;

	if (s->n > 0 && ev->seq != s->last + 1)
		s->in_order = 0;
	if (ev->data && cJSON_GetObjectItem(ev->data, "k"))
		s->saw_data = 1;
	s->last = ev->seq;
	s->n++;
}

static void
test_events(struct core *c)
{
	struct seen a = { 0, 0, 1, 0 }, b = { 0, 0, 1, 0 }, r = { 0, 0, 1, 0 };
	int ha = core_events_subscribe(c, on_event, &a);
	int hb = core_events_subscribe(c, on_event, &b);
	uint64_t s1, first;
	cJSON *d = cJSON_CreateObject();

	cJSON_AddStringToObject(d, "k", "v");
	s1 = core_events_emit(c, "test.one", "sbx-000001", d);
	check(s1 >= 1, "an event gets a sequence number");
	check(core_events_emit(c, "test.two", NULL, NULL) == s1 + 1, "numbers increase by one");
	check(a.n == 2 && b.n == 2 && a.saw_data, "every subscriber gets each event with its data");
	core_events_unsubscribe(c, hb);
	for (int i = 0; i < CORE_EVENTS_RING + 10; i++)
		core_events_emit(c, "test.many", NULL, NULL);
	check(b.n == 2, "an unsubscribed callback gets nothing more");
	check(a.n == (size_t)CORE_EVENTS_RING + 12 && a.in_order, "a subscriber sees every "
	    "event in order");
	size_t n = core_events_replay(c, 1, on_event, &r, &first);
	check(n == CORE_EVENTS_RING, "the ring keeps the newest %d (replayed %zu)",
	    CORE_EVENTS_RING, n);
	check(first == a.last - CORE_EVENTS_RING + 1 && r.in_order && r.last == a.last,
	    "replay starts at the oldest kept and ends at the newest");
	memset(&r, 0, sizeof r);
	r.in_order = 1;
	n = core_events_replay(c, a.last - 4, on_event, &r, NULL);
	check(n == 5, "replay from a recent seq gives just what follows");
	core_events_unsubscribe(c, ha);
}

static void
test_create(struct core *c)
{
	struct core_create_opts o;
	struct sandbox *s = NULL;
	struct sbx_err e;
	struct registry *r;

	core_create_opts_init(&o);
	o.max_duration_s = 0;
	check(core_create(c, &o, &s, &e) < 0 && e.code == SBX_EINVAL &&
	    strstr(e.msg, "max_duration") && strstr(e.msg, "1 to 86400"),
	    "a direct value out of range names its range: %s", e.msg);
	core_create_opts_init(&o);
	o.cpus = 0.25;
	o.memory_mib = 3;
	o.name = "../x";
	check(core_create(c, &o, &s, &e) < 0 && e.code == SBX_EINVAL && strstr(e.msg, "name"),
	    "a bad name is refused: %s", e.msg);
	o.name = "ok-name";
	o.backend = "vmware";
	check(core_create(c, &o, &s, &e) < 0 && e.code == SBX_EINVAL &&
	    strstr(e.msg, "unknown backend 'vmware'"), "unknown backend: %s", e.msg);
	o.backend = NULL;
	cJSON *env = cJSON_CreateObject();
	cJSON_AddStringToObject(env, "1BAD", "x");
	o.env = env;
	check(core_create(c, &o, &s, &e) < 0 && strstr(e.msg, "1BAD"), "a bad env name: %s",
	    e.msg);
	cJSON_Delete(env);
	o.env = NULL;

	/* The ns backend of this tree may fail (the stub always does): whatever
	 * failed, no record may stay behind. */
	if (core_create(c, &o, &s, &e) < 0) {
		r = registry_load(&e);
		check(r != NULL && registry_count(r) == 0, "a failed create leaves no record");
		registry_free(r);
	} else {
		check(s != NULL && strncmp(s->id, "sbx-", 4) == 0 && s->state == SBX_RUNNING &&
		    s->agent_secret && strlen(s->agent_secret) == 64,
		    "a create gives a running record with a 64-hex secret");
		check(core_destroy(c, s->id, NULL, &e) == 0, "and it can be destroyed");
		sandbox_free(s);
	}
	check(core_get(c, "nope", &e) == NULL && e.code == SBX_ENOTFOUND &&
	    strcmp(e.msg, "unknown sandbox 'nope'") == 0, "core_get of an unknown sandbox");
	check(core_destroy(c, "nope", NULL, &e) < 0 && e.code == SBX_ENOTFOUND,
	    "destroy of an unknown sandbox");
}

static struct sandbox *
keyed(const char *id, const char *name, const char *key)
{
	struct sandbox *s = sandbox_new();

	snprintf(s->id, sizeof s->id, "%s", id);
	s->name = xstrdup(name);
	s->backend = xstrdup("ns");
	s->state = SBX_TERMINATED;
	s->owner = xstrdup("rest");
	s->api_key = key ? xstrdup(key) : NULL;
	return s;
}

static int
txn_keyed(struct registry *r, void *arg, struct sbx_err *e)
{
	registry_put(r, keyed("sbx-a00001", "mine", "key-0000000a"));
	registry_put(r, keyed("sbx-b00002", "theirs", "key-0000000b"));
	registry_put(r, keyed("sbx-c00003", "operators", NULL));
	return 0;
}

/* A thread acting for an API key sees what the key made, and nothing else:
 * another's is as unknown as one that never was. */
static void
test_acting(struct core *c)
{
	struct sandbox **v, *s;
	struct sbx_err e;
	size_t n;

	check(registry_update(txn_keyed, NULL, &e) == 0, "three records: two keys', the "
	    "operator's");
	core_act_for("key-0000000a", 0);
	if (core_list(c, &v, &n, &e) < 0)
		n = 0;
	check(n == 1 && strcmp(v[0]->id, "sbx-a00001") == 0, "a key lists its own sandbox "
	    "only (%zu)", n);
	core_list_free(v, n);
	s = core_get(c, "mine", &e);
	check(s != NULL && strcmp(s->api_key, "key-0000000a") == 0, "and finds it by name");
	sandbox_free(s);
	check(core_get(c, "sbx-b00002", &e) == NULL && e.code == SBX_ENOTFOUND &&
	    strcmp(e.msg, "unknown sandbox 'sbx-b00002'") == 0, "another key's is unknown, by "
	    "id: %s", e.msg);
	check(core_get(c, "theirs", &e) == NULL && core_get(c, "c00003", &e) == NULL,
	    "by name and by id prefix too, the operator's as well");
	check(core_destroy(c, "sbx-b00002", NULL, &e) < 0 && e.code == SBX_ENOTFOUND,
	    "nor can it be destroyed");
	check(strcmp(core_acting_key(), "key-0000000a") == 0, "the thread acts for the key");
	core_act_for("key-0000000a", 1);
	if (core_list(c, &v, &n, &e) < 0)
		n = 0;
	check(n == 3, "with the admin scope it sees all (%zu)", n);
	core_list_free(v, n);
	core_act_for(NULL, 1);
	check(core_acting_key() == NULL && (s = core_get(c, "theirs", &e)) != NULL,
	    "acting for nobody: everything");
	sandbox_free(s);
	for (const char *id = "sbx-a00001"; id; id = strcmp(id, "sbx-a00001") == 0 ?
	    "sbx-b00002" : strcmp(id, "sbx-b00002") == 0 ? "sbx-c00003" : NULL)
		registry_delete(id, &e);
}

int
main(void)
{
	char tmpdir[] = "/tmp/sbxcore.XXXXXX";
	struct core *c;

	if (mkdtemp(tmpdir) == NULL)
		return 1;
	setenv("XDG_STATE_HOME", tmpdir, 1);
	setenv("XDG_CONFIG_HOME", tmpdir, 1);
	setenv("XDG_CACHE_HOME", tmpdir, 1);
	setenv("XDG_DATA_HOME", tmpdir, 1);
	setenv("XDG_RUNTIME_DIR", tmpdir, 1);
	c = core_new(config_new());
	test_events(c);
	test_create(c);
	test_acting(c);
	core_free(c);
	{
		_cleanup_free_ char *cmd = xasprintf("rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			printf("# could not remove %s\n", tmpdir);
	}
	return tap_end();
}
