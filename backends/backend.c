/* The table of compiled-in backends. */
#include <string.h>

#include "backends/backend.h"

const struct backend *const backends[] = {
	&backend_ns,
	&backend_qemu,
	&backend_lambda,
	&backend_ssh,
	NULL,
};

const struct backend *
backend_find(const char *name)
{
	for (size_t i = 0; name != NULL && backends[i] != NULL; i++)
		if (strcmp(backends[i]->name, name) == 0)
			return backends[i];
	return NULL;
}

const char *
backend_verb_name(enum backend_verb v)
{
	static const char *const names[BACKEND_VERBS] = {
		[BACKEND_IMAGE_BUILD] = "image.build",
		[BACKEND_IMAGE_LIST] = "image.list",
		[BACKEND_IMAGE_RM] = "image.rm",
		[BACKEND_SNAPSHOT_LIST] = "snapshot.list",
		[BACKEND_SNAPSHOT_RM] = "snapshot.rm",
		[BACKEND_HOST_ADD] = "host.add",
		[BACKEND_HOST_LIST] = "host.list",
		[BACKEND_HOST_CHECK] = "host.check",
		[BACKEND_HOST_RM] = "host.rm",
		[BACKEND_SETUP] = "setup",
	};

	return (unsigned)v < BACKEND_VERBS ? names[v] : "?";
}

const char *
backend_arg_name(const cJSON *args, enum backend_verb v, const char *what, struct sbx_err *e)
{
	const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(args, "name"));

	if (name == NULL)
		sbx_error(e, SBX_EINVAL, NULL, "%s needs %s", backend_verb_name(v), what);
	return name;
}
