/* The qemu backend's verbs, behind `sbxtop image` and `sbxtop snapshot`: its
 * entries of the verbs table (backends/backend.h, enum backend_verb). */

#include "backends/qemu/qemu-image.h"
#include "backends/qemu/qemu-snapshot.h"
#include "backends/qemu/qemu-vm.h"
#include "lib/jspec.h"

static int
v_image_build(const cJSON *args, const struct registry *r, FILE *progress, cJSON **out,
    struct sbx_err *e)
{
	const cJSON *sz = cJSON_GetObjectItemCaseSensitive(args, "size_mib");
	struct image_build_opts o = {
		jstr(args, "name", NULL), jstr(args, "kernel", NULL), jstr(args, "from", NULL),
		jstr(args, "debootstrap", NULL), jstr(args, "packages", NULL),
		jint_of(sz, 0, INT64_MIN, INT64_MAX),
	};

	return image_build(&o, out, e);
}

static int
v_image_list(const cJSON *args, const struct registry *r, FILE *progress, cJSON **out,
    struct sbx_err *e)
{
	return (*out = image_list(e)) != NULL ? 0 : -1;
}

static int
v_snapshot_list(const cJSON *args, const struct registry *r, FILE *progress, cJSON **out,
    struct sbx_err *e)
{
	return (*out = snapshot_list(e)) != NULL ? 0 : -1;
}

static int
v_image_rm(const cJSON *args, const struct registry *r, FILE *progress, cJSON **out,
    struct sbx_err *e)
{
	const char *name = backend_arg_name(args, BACKEND_IMAGE_RM, "a name", e);

	return name != NULL ? image_rm(name, e) : -1;
}

static int
v_snapshot_rm(const cJSON *args, const struct registry *r, FILE *progress, cJSON **out,
    struct sbx_err *e)
{
	const char *name = backend_arg_name(args, BACKEND_SNAPSHOT_RM, "a name", e);

	return name != NULL ? snapshot_rm(name, e) : -1;
}

backend_verb_fn *const qemu_verbs[BACKEND_VERBS] = {
	[BACKEND_IMAGE_BUILD] = v_image_build,
	[BACKEND_IMAGE_LIST] = v_image_list,
	[BACKEND_IMAGE_RM] = v_image_rm,
	[BACKEND_SNAPSHOT_LIST] = v_snapshot_list,
	[BACKEND_SNAPSHOT_RM] = v_snapshot_rm,
};
