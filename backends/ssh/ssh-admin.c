/* The ssh backend's verbs, behind `sbxtop host`: its entries of the verbs
 * table (backends/backend.h, enum backend_verb).  host.list gives each host's
 * {name, user, addr, port, identity?, max_sandboxes, sandboxes, reachable,
 * error?, kernel, backends, mem_free_mib, ...}; host.check the ns doctor's
 * checks, run there. */
#include <stdlib.h>
#include <string.h>

#include "backends/ssh/hosts.h"
#include "lib/jspec.h"
#include "lib/util.h"

static int
host_add(const cJSON *args, cJSON **out, struct sbx_err *e)
{
	const char *name = jstr(args, "name", NULL), *url = jstr(args, "url", NULL);
	const char *id = jstr(args, "identity", NULL);
	const cJSON *max = cJSON_GetObjectItemCaseSensitive(args, "max_sandboxes");
	struct host h;
	int rc;

	if (name == NULL || url == NULL)
		return sbx_error(e, SBX_EINVAL, NULL, "host.add needs a name and a url");
	memset(&h, 0, sizeof h);
	h.name = xstrdup(name);
	h.identity = id ? xstrdup(id) : NULL;
	h.max_sandboxes = cJSON_IsNumber(max) ? max->valueint : 0;
	rc = hosts_parse_url(url, &h, e);
	if (rc == 0)
		rc = hosts_add(&h, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(args, "accept_new")), e);
	if (rc == 0) {
		*out = cJSON_CreateObject();
		cJSON_AddStringToObject(*out, "name", h.name);
	}
	free(h.name);
	free(h.user);
	free(h.addr);
	free(h.identity);
	return rc;
}

/* Every host, each probed over SSH unless args say {"probe": false} (the
 * names for a shell's completion, which must not wait on a network). */
static int
host_list(const cJSON *args, const struct registry *r, cJSON **out, struct sbx_err *e)
{
	int probe = !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(args, "probe"));
	struct host *v;
	size_t n;

	if (hosts_list(&v, &n, e) < 0)
		return -1;
	*out = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		cJSON *p = probe ? hosts_probe(&v[i]) : cJSON_CreateObject();
		cJSON_AddStringToObject(p, "name", v[i].name);
		cJSON_AddStringToObject(p, "user", v[i].user);
		cJSON_AddStringToObject(p, "addr", v[i].addr);
		cJSON_AddNumberToObject(p, "port", v[i].port);
		if (v[i].identity)
			cJSON_AddStringToObject(p, "identity", v[i].identity);
		cJSON_AddNumberToObject(p, "max_sandboxes", v[i].max_sandboxes);
		/* The registry's count: the sandboxes sbxtop made there. */
		cJSON_DeleteItemFromObjectCaseSensitive(p, "sandboxes");
		cJSON_AddNumberToObject(p, "sandboxes", hosts_sandbox_count(r, v[i].name));
		cJSON_AddItemToArray(*out, p);
	}
	hosts_free(v, n);
	return 0;
}

static void
check_to_json(void *arg, enum check_level level, const char *what, const char *detail,
    const char *fix)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "level", level == CHECK_OK ? "ok" :
	    level == CHECK_WARN ? "warn" : "fail");
	cJSON_AddStringToObject(o, "what", what);
	if (detail != NULL)
		cJSON_AddStringToObject(o, "detail", detail);
	if (fix != NULL)
		cJSON_AddStringToObject(o, "fix", fix);
	cJSON_AddItemToArray(arg, o);
}

/* A host that cannot be reached is a failed check, not an error: the report
 * says how far it got. */
static int
host_check(const char *name, cJSON **out, struct sbx_err *e)
{
	struct host *h = hosts_get(name, e);
	struct sbx_err sub;

	if (h == NULL)
		return -1;
	*out = cJSON_CreateArray();
	if (hosts_doctor(h, check_to_json, *out, &sub) < 0)
		check_to_json(*out, CHECK_FAIL, "ssh", sub.msg, sub.hint[0] ? sub.hint : NULL);
	host_free(h);
	return 0;
}

static int
v_host_add(const cJSON *args, const struct registry *r, FILE *progress, cJSON **out,
    struct sbx_err *e)
{
	return host_add(args, out, e);
}

static int
v_host_list(const cJSON *args, const struct registry *r, FILE *progress, cJSON **out,
    struct sbx_err *e)
{
	return host_list(args, r, out, e);
}

static int
v_host_check(const cJSON *args, const struct registry *r, FILE *progress, cJSON **out,
    struct sbx_err *e)
{
	const char *name = backend_arg_name(args, BACKEND_HOST_CHECK, "a host name", e);

	return name != NULL ? host_check(name, out, e) : -1;
}

static int
v_host_rm(const cJSON *args, const struct registry *r, FILE *progress, cJSON **out,
    struct sbx_err *e)
{
	const char *name = backend_arg_name(args, BACKEND_HOST_RM, "a host name", e);

	return name != NULL ? hosts_rm(r, name, e) : -1;
}

backend_verb_fn *const ssh_verbs[BACKEND_VERBS] = {
	[BACKEND_HOST_ADD] = v_host_add,
	[BACKEND_HOST_LIST] = v_host_list,
	[BACKEND_HOST_CHECK] = v_host_check,
	[BACKEND_HOST_RM] = v_host_rm,
};
