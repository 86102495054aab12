/* The lambda backend's verb, behind `sbxtop setup aws` (its entry of the verbs
 * table, backends/backend.h):
 *   setup {region?, endpoint_url?, name, bucket?, role_name?, build_role_arn?,
 *          base_image_arn?, bundle_dir, arch, out_dir, dry_run?, poll_timeout_s,
 *          role_settle_s}
 * prints the plan and each step to progress; the image ARN comes last. */
#include <string.h>

#include "backends/backend.h"
#include "backends/lambda/aws-setup.h"
#include "lib/jspec.h"

static int
arg_int(const cJSON *args, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, k);

	return cJSON_IsNumber(v) ? v->valueint : 0;
}

static int
v_setup(const cJSON *args, const struct registry *r, FILE *progress, cJSON **out,
    struct sbx_err *e)
{
	struct aws_setup_opts o;

	/* CreateMicrovmImage builds on baseImageArn, an AWS-managed image, by the
	 * code artifact's Dockerfile: no field takes a container image as the
	 * root, so an OCI image of the store cannot be one. */
	if (jstr(args, "image", NULL) != NULL)
		return sbx_error(e, SBX_EUNSUPPORTED, "create lambda sandboxes from the image "
		    "setup builds and install what you need in them, or run the OCI image on ns or "
		    "qemu (create --image REF)", "setup aws --image: Lambda MicroVMs builds its "
		    "images on a managed base image (baseImageArn, such as al2023-1) with the "
		    "Dockerfile of a code artifact, and takes no container image as the root; "
		    "%.200s cannot be the MicroVM image's root", jstr(args, "image", NULL));
	memset(&o, 0, sizeof o);
	o.region = jstr(args, "region", NULL);
	o.endpoint_url = jstr(args, "endpoint_url", NULL);
	o.name = jstr(args, "name", NULL);
	o.bucket = jstr(args, "bucket", NULL);
	o.role_name = jstr(args, "role_name", NULL);
	o.build_role_arn = jstr(args, "build_role_arn", NULL);
	o.base_image_arn = jstr(args, "base_image_arn", NULL);
	o.bundle_dir = jstr(args, "bundle_dir", NULL);
	o.arch = jstr(args, "arch", NULL);
	o.out_dir = jstr(args, "out_dir", NULL);
	o.dry_run = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(args, "dry_run"));
	o.poll_timeout_s = arg_int(args, "poll_timeout_s");
	o.role_settle_s = arg_int(args, "role_settle_s");
	if (o.name == NULL || o.arch == NULL || o.bundle_dir == NULL || o.out_dir == NULL)
		return sbx_error(e, SBX_EINVAL, NULL, "setup needs a name, an arch, a bundle and "
		    "an output directory");
	return aws_setup(&o, progress, e);
}

backend_verb_fn *const lambda_verbs[BACKEND_VERBS] = {
	[BACKEND_SETUP] = v_setup,
};
