/* The sandbox record: allocation, ids, and the JSON form the registry stores and
 * the front ends show. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sandbox.h"
#include "lib/util.h"

static const char *const state_names[] = {
	[SBX_CREATING] = "creating", [SBX_RUNNING] = "running",
	[SBX_SUSPENDED] = "suspended", [SBX_STOPPING] = "stopping",
	[SBX_TERMINATED] = "terminated", [SBX_ERROR] = "error",
	[SBX_UNREACHABLE] = "unreachable",
};

struct sandbox *
sandbox_new(void)
{
	return xcalloc(1, sizeof(struct sandbox));
}

void
sandbox_free(struct sandbox *s)
{
	if (s == NULL)
		return;
	free(s->name);
	free(s->backend);
	free(s->host);
	free(s->image);
	free(s->image_id);
	cJSON_Delete(s->image_spec);
	free(s->state_reason);
	free(s->limits_note);
	free(s->network);
	cJSON_Delete(s->net);
	free(s->owner);
	free(s->api_key);
	free(s->pool);
	free(s->from_pool);
	free(s->agent_endpoint);
	if (s->agent_secret != NULL) {
		/* The secret is the sandbox's only credential: do not leave it in freed
		 * memory. */
		explicit_bzero(s->agent_secret, strlen(s->agent_secret));
		free(s->agent_secret);
	}
	cJSON_Delete(s->agent_headers);
	cJSON_Delete(s->env);
	cJSON_Delete(s->backend_data);
	cJSON_Delete(s->forwards);
	cJSON_Delete(s->usage);
	free(s);
}

void
sandbox_new_id(char *out, size_t len)
{
	char hex[7];

	random_hex(hex, 3);
	snprintf(out, len, "sbx-%s", hex);
}

int
sandbox_log_open(const char *path, const char *which, struct sbx_err *e)
{
	int fd = open_regular_nofollow(path);

	if (fd >= 0)
		return fd;
	if (errno == ENOENT)
		return sbx_error(e, SBX_ENOTFOUND, "it appears once the sandbox has written to it",
		    "no %s log yet at %s", which, path);
	if (errno == ELOOP || errno == EINVAL)
		return sbx_error(e, SBX_ESTATE, "the sandbox replaced its log; destroy it",
		    "the %s log at %s is not a regular file: not read", which, path);
	return sbx_error_errno(e, SBX_EIO, NULL, "cannot open %s", path);
}

int
sandbox_agent_header_lines(const struct sandbox *s, char *out, size_t len,
    struct sbx_err *e)
{
	const cJSON *h;
	size_t n = 0;

	out[0] = '\0';
	cJSON_ArrayForEach(h, s->agent_headers) {
		if (!cJSON_IsString(h) || strpbrk(h->string, ":\r\n") != NULL ||
		    strpbrk(h->valuestring, "\r\n") != NULL)
			continue;
		n += (size_t)snprintf(out + n, len - n, "%s: %s\r\n", h->string,
		    h->valuestring);
		if (n >= len)
			return sbx_error(e, SBX_EINVAL, NULL, "the agent headers of %s are too long",
			    s->id);
	}
	return 0;
}

char *
sandbox_new_secret(void)
{
	char *hex = xmalloc(2 * 32 + 1);

	random_hex(hex, 32);
	return hex;
}

const char *
sbx_state_name(enum sbx_state st)
{
	return (unsigned)st < ARRAY_SIZE(state_names) ? state_names[st] : "error";
}

enum sbx_reason
sbx_state_reason(enum sbx_state st, enum sbx_reason otherwise)
{
	if (st == SBX_SUSPENDED)
		return SBX_R_SUSPENDED;
	if (st == SBX_TERMINATED || st == SBX_ERROR)
		return SBX_R_GONE;
	return otherwise;
}

int
sbx_state_parse(const char *name, enum sbx_state *out)
{
	for (size_t i = 0; i < ARRAY_SIZE(state_names); i++)
		if (name != NULL && strcmp(name, state_names[i]) == 0) {
			*out = (enum sbx_state)i;
			return 0;
		}
	return -1;
}

static void
add_str(cJSON *o, const char *k, const char *v)
{
	if (v != NULL)
		cJSON_AddStringToObject(o, k, v);
	else
		cJSON_AddNullToObject(o, k);
}

cJSON *
sandbox_to_json(const struct sandbox *s, int with_secrets)
{
	cJSON *o = cJSON_CreateObject(), *l;

	cJSON_AddStringToObject(o, "id", s->id);
	add_str(o, "name", s->name);
	add_str(o, "backend", s->backend);
	add_str(o, "host", s->host);
	add_str(o, "image", s->image);
	add_str(o, "image_id", s->image_id);
	cJSON_AddStringToObject(o, "state", sbx_state_name(s->state));
	add_str(o, "state_reason", s->state_reason);
	cJSON_AddNumberToObject(o, "created_at", (double)s->created_at);
	cJSON_AddNumberToObject(o, "expires_at", (double)s->expires_at);
	cJSON_AddNumberToObject(o, "max_duration_s", (double)s->max_duration_s);
	cJSON_AddNumberToObject(o, "idle_s", (double)s->idle_s);
	cJSON_AddNumberToObject(o, "idle_suspend_s", (double)s->idle_suspend_s);
	l = cJSON_AddObjectToObject(o, "limits");
	cJSON_AddNumberToObject(l, "memory_mib", (double)s->limits.memory_mib);
	cJSON_AddNumberToObject(l, "cpus", s->limits.cpus);
	cJSON_AddNumberToObject(l, "pids", (double)s->limits.pids);
	cJSON_AddNumberToObject(l, "disk_mib", (double)s->limits.disk_mib);
	add_str(o, "limits_note", s->limits_note);
	add_str(o, "network", s->network);
	if (s->net != NULL)
		cJSON_AddItemToObject(o, "net", cJSON_Duplicate(s->net, 1));
	add_str(o, "owner", s->owner);
	if (s->api_key != NULL)
		cJSON_AddStringToObject(o, "api_key", s->api_key);
	if (s->pool != NULL)
		cJSON_AddStringToObject(o, "pool", s->pool);
	if (s->from_pool != NULL)
		cJSON_AddStringToObject(o, "from_pool", s->from_pool);
	add_str(o, "agent_endpoint", s->agent_endpoint);
	cJSON_AddItemToObject(o, "env", s->env ? cJSON_Duplicate(s->env, 1) : cJSON_CreateNull());
	cJSON_AddItemToObject(o, "forwards", s->forwards ? cJSON_Duplicate(s->forwards, 1) :
	    cJSON_CreateArray());
	if (s->usage != NULL)
		cJSON_AddItemToObject(o, "usage", cJSON_Duplicate(s->usage, 1));
	if (with_secrets) {
		add_str(o, "agent_secret", s->agent_secret);
		cJSON_AddItemToObject(o, "agent_headers", s->agent_headers ?
		    cJSON_Duplicate(s->agent_headers, 1) : cJSON_CreateNull());
		cJSON_AddItemToObject(o, "backend_data", s->backend_data ?
		    cJSON_Duplicate(s->backend_data, 1) : cJSON_CreateNull());
	}
	return o;
}

int
sandbox_id_valid(const char *id)
{
	size_t n = strlen(id);

	return n > 0 && n < sizeof(((struct sandbox *)0)->id) && id[0] != '-' &&
	    strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789-") == n;
}

/* Optional string field: absent or null gives NULL; another type is an error. */
static int
get_str(const cJSON *o, const char *k, char **out, struct sbx_err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	*out = NULL;
	if (v == NULL || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsString(v))
		return sbx_error(e, SBX_EINVAL, NULL, "field '%s' must be a string", k);
	*out = xstrdup(v->valuestring);
	return 0;
}

static int
get_num(const cJSON *o, const char *k, double *out, struct sbx_err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	*out = 0;
	if (v == NULL || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0 ||
	    v->valuedouble > 9e15)
		return sbx_error(e, SBX_EINVAL, NULL, "field '%s' must be a number >= 0", k);
	*out = v->valuedouble;
	return 0;
}

static int
get_int(const cJSON *o, const char *k, int64_t *out, struct sbx_err *e)
{
	double d;

	if (get_num(o, k, &d, e) < 0)
		return -1;
	*out = (int64_t)d;
	return 0;
}

static int
get_obj(const cJSON *o, const char *k, cJSON **out, struct sbx_err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	*out = NULL;
	if (v == NULL || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsObject(v))
		return sbx_error(e, SBX_EINVAL, NULL, "field '%s' must be an object", k);
	*out = cJSON_Duplicate(v, 1);
	return 0;
}

static int
get_arr(const cJSON *o, const char *k, cJSON **out, struct sbx_err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	*out = NULL;
	if (v == NULL || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsArray(v))
		return sbx_error(e, SBX_EINVAL, NULL, "field '%s' must be an array", k);
	if (cJSON_GetArraySize(v) > 0)
		*out = cJSON_Duplicate(v, 1);
	return 0;
}

struct sandbox *
sandbox_from_json(const cJSON *o, struct sbx_err *e)
{
	struct sandbox *s;
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
	const cJSON *lim;
	_cleanup_free_ char *state = NULL;

	if (!cJSON_IsObject(o)) {
		sbx_error(e, SBX_EINVAL, NULL, "a sandbox record must be an object");
		return NULL;
	}
	if (!cJSON_IsString(id) || !sandbox_id_valid(id->valuestring)) {
		sbx_error(e, SBX_EINVAL, NULL, "field 'id' must be a short name of letters, "
		    "digits, '.', '_' or '-'");
		return NULL;
	}
	s = sandbox_new();
	snprintf(s->id, sizeof s->id, "%s", id->valuestring);
	lim = cJSON_GetObjectItemCaseSensitive(o, "limits");
	if (get_str(o, "name", &s->name, e) < 0 || get_str(o, "backend", &s->backend, e) < 0 ||
	    get_str(o, "host", &s->host, e) < 0 ||
	    get_str(o, "image", &s->image, e) < 0 || get_str(o, "image_id", &s->image_id, e) < 0 ||
	    get_str(o, "state", &state, e) < 0 ||
	    get_str(o, "state_reason", &s->state_reason, e) < 0 ||
	    get_int(o, "created_at", &s->created_at, e) < 0 ||
	    get_int(o, "expires_at", &s->expires_at, e) < 0 ||
	    get_int(o, "max_duration_s", &s->max_duration_s, e) < 0 ||
	    get_int(o, "idle_s", &s->idle_s, e) < 0 ||
	    get_int(o, "idle_suspend_s", &s->idle_suspend_s, e) < 0 ||
	    get_str(o, "limits_note", &s->limits_note, e) < 0 ||
	    get_str(o, "network", &s->network, e) < 0 ||
	    get_str(o, "owner", &s->owner, e) < 0 ||
	    get_str(o, "api_key", &s->api_key, e) < 0 ||
	    get_str(o, "pool", &s->pool, e) < 0 || get_str(o, "from_pool", &s->from_pool, e) < 0 ||
	    get_str(o, "agent_endpoint", &s->agent_endpoint, e) < 0 ||
	    get_str(o, "agent_secret", &s->agent_secret, e) < 0 ||
	    get_obj(o, "agent_headers", &s->agent_headers, e) < 0 ||
	    get_obj(o, "env", &s->env, e) < 0 ||
	    get_obj(o, "net", &s->net, e) < 0 ||
	    get_obj(o, "backend_data", &s->backend_data, e) < 0 ||
	    get_arr(o, "forwards", &s->forwards, e) < 0 ||
	    get_obj(o, "usage", &s->usage, e) < 0)
		goto fail;
	if (lim != NULL && !cJSON_IsNull(lim)) {
		if (!cJSON_IsObject(lim)) {
			sbx_error(e, SBX_EINVAL, NULL, "field 'limits' must be an object");
			goto fail;
		}
		if (get_int(lim, "memory_mib", &s->limits.memory_mib, e) < 0 ||
		    get_num(lim, "cpus", &s->limits.cpus, e) < 0 ||
		    get_int(lim, "pids", &s->limits.pids, e) < 0 ||
		    get_int(lim, "disk_mib", &s->limits.disk_mib, e) < 0)
			goto fail;
	}
	if (state == NULL || sbx_state_parse(state, &s->state) < 0) {
		sbx_error(e, SBX_EINVAL, NULL, "field 'state' of %s is not a known state", s->id);
		goto fail;
	}
	return s;
fail:
	sandbox_free(s);
	return NULL;
}

struct sandbox *
sandbox_dup(const struct sandbox *s)
{
	cJSON *o = sandbox_to_json(s, 1);
	struct sbx_err e;
	struct sandbox *d = sandbox_from_json(o, &e);

	cJSON_Delete(o);
	if (d == NULL)
		fatal("sandbox_dup: %s", e.msg);
	return d;
}
