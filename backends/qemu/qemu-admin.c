/* The qemu backend's admin verbs, behind `sbxtop image` and `sbxtop snapshot`
 * (struct backend's admin):
 *   image.build {name?, kernel?, from?, debootstrap?, packages?, size_mib?}
 *               -> image.json of the new image
 *   image.list  -> [image.json...]        image.rm {name}
 *   snapshot.list -> [snapshot.json...]   snapshot.rm {name} */
#include <string.h>

#include "backends/qemu/qemu-image.h"
#include "backends/qemu/qemu-snapshot.h"
#include "backends/qemu/qemu-vm.h"

static const char *
arg_str(const cJSON *args, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

int
qemu_admin(const char *verb, const cJSON *args, const struct registry *r, FILE *progress,
    cJSON **out, struct sbx_err *e)
{
	const char *name = arg_str(args, "name");

	(void)r;
	(void)progress;
	if (strcmp(verb, "image.build") == 0) {
		const cJSON *sz = cJSON_GetObjectItemCaseSensitive(args, "size_mib");
		struct image_build_opts o = {
			name, arg_str(args, "kernel"), arg_str(args, "from"),
			arg_str(args, "debootstrap"), arg_str(args, "packages"),
			cJSON_IsNumber(sz) ? (int64_t)sz->valuedouble : 0,
		};
		return image_build(&o, out, e);
	}
	if (strcmp(verb, "image.list") == 0)
		return (*out = image_list(e)) != NULL ? 0 : -1;
	if (strcmp(verb, "snapshot.list") == 0)
		return (*out = snapshot_list(e)) != NULL ? 0 : -1;
	if (name == NULL && (strcmp(verb, "image.rm") == 0 || strcmp(verb, "snapshot.rm") == 0))
		return sbx_error(e, SBX_EINVAL, NULL, "%s needs a name", verb);
	if (strcmp(verb, "image.rm") == 0)
		return image_rm(name, e);
	if (strcmp(verb, "snapshot.rm") == 0)
		return snapshot_rm(name, e);
	return sbx_error(e, SBX_EUNSUPPORTED, NULL, "the qemu backend has no '%s'", verb);
}
