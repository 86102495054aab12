/* `sbxtop setup aws`: everything the lambda backend needs in the user's account,
 * made idempotently and resumably (each step checks first whether it is done):
 *   1. a private (all public access blocked), encrypted (SSE-S3) S3 bucket,
 *      sbxtop-ACCOUNT-REGION unless named;
 *   2. a least-privilege build role Lambda assumes (sbxtop-build: read the
 *      artifacts of that bucket, write build logs), unless one is given;
 *   3. the code artifact (a zip of a Dockerfile and the agent bundle, aarch64 by
 *      default) uploaded with its SHA-256 checked by S3;
 *   4. the MicroVM image with the hooks configuration the agent serves, polled
 *      until a version is ACTIVE.
 * A dry run makes only read-only calls and says what it would do. */
#ifndef SBX_AWS_SETUP_H
#define SBX_AWS_SETUP_H

#include <stdio.h>
#include <cjson/cJSON.h>

#include "backends/backend.h"
#include "lib/err.h"

struct aws_setup_opts {
	const char	*region;	/* NULL: the usual chain */
	const char	*endpoint_url;	/* Lambda MicroVMs; NULL: the usual chain */
	const char	*name;		/* image name, "sbxtop" */
	const char	*bucket;	/* NULL: sbxtop-ACCOUNT-REGION */
	const char	*role_name;	/* NULL: sbxtop-build */
	const char	*build_role_arn;	/* a role of the user's: no IAM calls */
	const char	*base_image_arn;	/* NULL: arn:aws:lambda:REGION:aws:microvm-image:al2023-1 */
	const char	*bundle_dir;	/* the agent bundle to ship */
	const char	*arch;		/* "aarch64" or "x86_64": the bundle's and the image's */
	const char	*out_dir;	/* where the artifact is written */
	int		 dry_run;	/* read-only calls; build the artifact only */
	int		 poll_timeout_s;
	int		 role_settle_s;	/* wait after creating the role (IAM is eventually
					 * consistent) */
};

/* Do it, printing the plan and each step to out.  The image ARN is printed last
 * as "image: ARN"; a run that found everything in place says "nothing to do".
 * 0, or -1 with e. */
int aws_setup(const struct aws_setup_opts *o, FILE *out, struct sbx_err *e);

/* `sbxtop setup aws` as struct backend's verb BACKEND_SETUP (lambda-admin.c). */
extern backend_verb_fn *const lambda_verbs[BACKEND_VERBS];

#endif
