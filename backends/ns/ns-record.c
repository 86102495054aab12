/* Where the ns backend keeps its sandboxes, and what a sandbox's record holds
 * of it (backend_data: its directory, its init's pid and start time, its egress
 * helper, its cgroup): what the backend's verbs and parts all read first. */
#include <stdlib.h>
#include <string.h>

#include "backends/ns/ns.h"
#include "lib/util.h"

char *
ns_sandboxes_dir(struct sbx_err *e)
{
	const char *x = getenv("XDG_STATE_HOME"), *home = getenv("HOME");

	if (x != NULL && x[0] == '/')
		return xasprintf("%s/sbxtop/sandboxes", x);
	if (home != NULL && home[0] == '/')
		return xasprintf("%s/.local/state/sbxtop/sandboxes", home);
	sbx_error(e, SBX_EIO, "set XDG_STATE_HOME or HOME to an absolute path",
	    "no state directory: neither XDG_STATE_HOME nor HOME is an absolute path");
	return NULL;
}

int
ns_data_get(const struct sandbox *s, struct ns_data *d, struct sbx_err *e)
{
	const cJSON *bd = s->backend_data, *v;

	memset(d, 0, sizeof *d);
	if ((v = cJSON_GetObjectItemCaseSensitive(bd, "dir")) != NULL && cJSON_IsString(v)) {
		d->dir = xstrdup(v->valuestring);
	} else {
		_cleanup_free_ char *root = NULL;
		if (!sandbox_id_valid(s->id))
			return sbx_error(e, SBX_EINVAL, NULL, "invalid sandbox id '%s'", s->id);
		if ((root = ns_sandboxes_dir(e)) == NULL)
			return -1;
		d->dir = xasprintf("%s/%s", root, s->id);
	}
	if ((v = cJSON_GetObjectItemCaseSensitive(bd, "pid")) != NULL && cJSON_IsNumber(v))
		d->pid = (pid_t)v->valuedouble;
	if ((v = cJSON_GetObjectItemCaseSensitive(bd, "starttime")) != NULL && cJSON_IsNumber(v))
		d->starttime = (unsigned long long)v->valuedouble;
	if ((v = cJSON_GetObjectItemCaseSensitive(bd, "egress_pid")) != NULL && cJSON_IsNumber(v))
		d->egress_pid = (pid_t)v->valuedouble;
	v = cJSON_GetObjectItemCaseSensitive(bd, "cgroup");
	d->cgroup = v != NULL && cJSON_IsObject(v) ? v : NULL;
	return 0;
}
