/* `sbxtop setup aws`: the MicroVM image sandboxes of the lambda backend run.
 * Builds the code artifact (a zip of a Dockerfile and the agent bundle), then
 * creates the MicroVM image from it with the hooks configuration the agent
 * serves, and polls until a version is ACTIVE.  Idempotent: an image of that
 * name that exists is reused.  The S3 bucket, the build role and the upload are
 * printed as commands to run (this build signs only lambda-microvms and STS). */
#ifndef SBX_AWS_SETUP_H
#define SBX_AWS_SETUP_H

#include <stdio.h>

#include "core/err.h"

struct aws_setup_opts {
	const char	*region;	/* NULL: the usual chain */
	const char	*endpoint_url;	/* NULL: the usual chain */
	const char	*name;		/* image name, "sbxtop" */
	const char	*bucket;	/* S3 bucket of the artifact (required unless dry_run) */
	const char	*build_role_arn;	/* required unless dry_run */
	const char	*base_image_arn;	/* NULL: arn:aws:lambda:REGION:aws:microvm-image:al2023-1 */
	const char	*bundle_dir;	/* the agent bundle to ship */
	const char	*out_dir;	/* where the artifact is written */
	int		 dry_run;	/* print the plan and build the artifact only */
	int		 allow_arch;	/* ship a bundle that is not aarch64 (tests only) */
	int		 poll_timeout_s;
};

/* Do it, printing the plan and each step to out.  The image ARN is printed last
 * as "image: ARN".  0, or -1 with e. */
int aws_setup(const struct aws_setup_opts *o, FILE *out, struct sbx_err *e);

#endif
