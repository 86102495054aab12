/* The options of a create, as data (create-opts.h): the one place a request's
 * fields are named, typed and bounded.  The bounds are the configuration's
 * (core/config.c): a create overrides its option, so the two cannot differ. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/create-opts.h"
#include "lib/util.h"

#define AT(f)	offsetof(struct core_create_opts, f)

/* Adding an option: a field of struct core_create_opts, a row here (a
 * configuration option first when it has a default), the property in
 * mcp/tool-create.c's schema (tests/unit/create-opts.c checks they agree) and
 * docs/openapi.json (tests/rest/sync-schemas.mjs), a paragraph in sbxtop(1). */
static const struct create_option table[] = {
	{ "name", NULL, "name", CREATE_STRING, AT(name), "N",
	  "a name to use instead of the id (unique among live sandboxes)" },
	{ "backend", "backend", NULL, CREATE_STRING, AT(backend), "B",
	  "ns or qemu (default: the backend option)" },
	{ "host", NULL, "host", CREATE_STRING, AT(host), "NAME",
	  "on remote host NAME (`sbxtop host ls`), an ns sandbox reached over SSH; auto: the "
	  "host with the most headroom" },
	{ "image", "image", NULL, CREATE_STRING, AT(image), "REF|DIR",
	  "an OCI image (debian:12, HOST:PORT/name:tag; pulled when the store lacks it, "
	  "`sbxtop image`); ns: or a root filesystem directory; qemu: or a VM image's name "
	  "(default: the backend's own: the host's system on ns)" },
	{ "memory_mib", "memory", NULL, CREATE_INT, AT(memory_mib), "MiB",
	  "memory limit, %r (0: none); on ns /tmp and /dev/shm count against it (at most a "
	  "half and a quarter)" },
	{ "disk_mib", "disk", NULL, CREATE_INT, AT(disk_mib), "MiB",
	  "disk limit of what the sandbox writes (its root's writable layers and /workspace), "
	  "%r (default %d; 0: none). ns as root: its own filesystem, writes past it get ENOSPC; "
	  "ns as an ordinary user: no file above it, and the core server suspends a sandbox "
	  "over it (sbxtop(1), LIMITS); qemu: the image's size bounds it" },
	{ "cpus", "cpus", NULL, CREATE_NUMBER, AT(cpus), "N",
	  "CPU limit, %r, may be fractional (0: none)" },
	{ "pids", "pids", NULL, CREATE_INT, AT(pids), "N",
	  "process limit, %r (default %d; 0: none)" },
	{ "max_duration_s", "max_duration", NULL, CREATE_INT, AT(max_duration_s), "S",
	  "lifetime in seconds, %r (default %d)" },
	{ "idle_s", "idle", NULL, CREATE_INT, AT(idle_s), "S",
	  "stop after S seconds without requests, %r (0: never)" },
	{ "idle_suspend_s", "idle_suspend", NULL, CREATE_INT, AT(idle_suspend_s), "S",
	  "suspend after S seconds without calls, execs or forwarded connections, %r (0: "
	  "never); the next one resumes it. The core server watches; the deadline keeps "
	  "counting" },
	{ "network", "network", NULL, CREATE_STRING, AT(network), "MODE",
	  "none (loopback only, default), egress (everything, directly) or rules (only what "
	  "--allow names, through the core's proxy; ns and qemu on this host)" },
	{ "allow", NULL, "allow", CREATE_NET_LIST, 0, "ENTRY",
	  "with network rules (implied): allow a domain (api.github.com), *.domain (its "
	  "subdomains), *, an address or CIDR, each with :PORT or not (repeatable; `sbxtop "
	  "help net`)" },
	{ "deny", NULL, "deny", CREATE_NET_LIST, 0, "ENTRY",
	  "deny one (repeatable; wins over every allow entry)" },
	{ "ask", NULL, "ask", CREATE_NET_BOOL, 0, NULL,
	  "hold a connection no entry covers until the operator answers (`sbxtop net ID "
	  "pending`, the console)" },
	{ "secrets", NULL, "secret", CREATE_NET_LIST, 0, "NAME",
	  "give the sandbox $NAME holding a placeholder; its proxy puts the secret (`sbxtop "
	  "secret`) in the secret's header of requests to the secret's host only (repeatable; "
	  "implies network rules)" },
	{ "env", NULL, "env", CREATE_ENV, AT(env), "K=V",
	  "environment of every command in the sandbox (repeatable)" },
	{ "from_snapshot", NULL, "from-snapshot", CREATE_STRING, AT(from_snapshot), "NAME",
	  "qemu: resume snapshot NAME (`sbxtop snapshot ls`) instead of booting: its memory, "
	  "disk, memory size and vCPUs, with a new id, secret, deadline and host port" },
};

const struct create_option *
create_options(size_t *n)
{
	*n = ARRAY_SIZE(table);
	return table;
}

const char *
create_option_flag(const struct create_option *r)
{
	return r->config != NULL ? config_option_find(r->config)->flag : r->flag;
}

const struct create_option *
create_option_by_flag(const char *flag)
{
	for (size_t i = 0; i < ARRAY_SIZE(table); i++)
		if (strcmp(create_option_flag(&table[i]), flag) == 0)
			return &table[i];
	return NULL;
}

void
create_options_ranges(cJSON *schema)
{
	cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties"), *p;

	for (size_t i = 0; i < ARRAY_SIZE(table); i++) {
		const struct config_option *c;
		if ((table[i].kind != CREATE_INT && table[i].kind != CREATE_NUMBER) ||
		    (p = cJSON_GetObjectItemCaseSensitive(props, table[i].key)) == NULL)
			continue;
		c = config_option_find(table[i].config);
		cJSON_DeleteItemFromObjectCaseSensitive(p, "minimum");
		cJSON_DeleteItemFromObjectCaseSensitive(p, "maximum");
		cJSON_AddNumberToObject(p, "minimum", c->min);
		cJSON_AddNumberToObject(p, "maximum", c->max);
	}
}

void
core_create_opts_init(struct core_create_opts *o)
{
	memset(o, 0, sizeof *o);
	o->memory_mib = o->disk_mib = o->pids = o->max_duration_s = o->idle_s =
	    o->idle_suspend_s = -1;
	o->cpus = -1;
}

/* v's value for row r into o (or net): 0, or -1 with e. */
static int
take(const struct create_option *r, const cJSON *v, struct core_create_opts *o, cJSON **net,
    struct sbx_err *e)
{
	const struct config_option *c = r->config ? config_option_find(r->config) : NULL;
	char *at = (char *)o + r->off, range[160];
	const cJSON *it;

	switch (r->kind) {
	case CREATE_STRING:
		if (!cJSON_IsString(v))
			return sbx_error(e, SBX_EINVAL, NULL, "%s: expected a string", r->key);
		if (c != NULL && c->type == CONFIG_CHOICE) {
			const char *const *ch = c->choices;
			while (*ch != NULL && strcmp(*ch, v->valuestring) != 0)
				ch++;
			if (*ch == NULL) {
				config_describe_range(c, range, sizeof range);
				return sbx_error(e, SBX_EINVAL, NULL, "%s: '%.100s' is not valid: "
				    "expected %s", r->key, v->valuestring, range);
			}
		}
		*(const char **)(void *)at = v->valuestring;
		return 0;
	case CREATE_INT:
	case CREATE_NUMBER:
		if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < c->min ||
		    v->valuedouble > c->max || (r->kind == CREATE_INT &&
		    v->valuedouble != floor(v->valuedouble))) {
			config_describe_range(c, range, sizeof range);
			if (cJSON_IsNumber(v))
				return sbx_error(e, SBX_EINVAL, NULL, "%s: %.15g is not valid: "
				    "expected %s", r->key, v->valuedouble, range);
			return sbx_error(e, SBX_EINVAL, NULL, "%s: expected %s", r->key, range);
		}
		if (r->kind == CREATE_INT)
			*(int64_t *)(void *)at = (int64_t)v->valuedouble;
		else
			*(double *)(void *)at = v->valuedouble;
		return 0;
	case CREATE_ENV:
		if (!cJSON_IsObject(v))
			return sbx_error(e, SBX_EINVAL, NULL, "env must be an object of strings");
		cJSON_ArrayForEach(it, v)
			if (!cJSON_IsString(it))
				return sbx_error(e, SBX_EINVAL, NULL, "env: the value of %s must be "
				    "a string", it->string);
		*(const cJSON **)(void *)at = v;
		return 0;
	case CREATE_NET_LIST:
		if (!cJSON_IsArray(v))
			return sbx_error(e, SBX_EINVAL, NULL, "%s: expected an array of strings",
			    r->key);
		cJSON_ArrayForEach(it, v)
			if (!cJSON_IsString(it))
				return sbx_error(e, SBX_EINVAL, NULL, "%s: expected an array of "
				    "strings", r->key);
		break;
	case CREATE_NET_BOOL:
		if (!cJSON_IsBool(v))
			return sbx_error(e, SBX_EINVAL, NULL, "%s: expected true or false", r->key);
		break;
	}
	if (*net == NULL)
		*net = cJSON_CreateObject();
	cJSON_AddItemToObject(*net, r->key, cJSON_Duplicate(v, 1));
	return 0;
}

int
core_create_opts_from_json(struct core_create_opts *o, const cJSON *args, cJSON **net,
    struct sbx_err *e)
{
	core_create_opts_init(o);
	*net = NULL;
	if (args != NULL && !cJSON_IsObject(args))
		return sbx_error(e, SBX_EINVAL, NULL, "the options of a create are an object");
	for (size_t i = 0; i < ARRAY_SIZE(table); i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, table[i].key);
		if (v == NULL || cJSON_IsNull(v))
			continue;
		if (take(&table[i], v, o, net, e) < 0) {
			cJSON_Delete(*net);
			*net = NULL;
			o->net = NULL;
			return -1;
		}
	}
	o->net = *net;
	return 0;
}
