/* sbxtop setup aws: the S3 bucket, build role, code artifact and MicroVM image
 * the lambda backend runs (backends/lambda/aws-setup.c does the work). */
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/paths.h"
#include "lib/util.h"

static int cmd_setup(struct cli *cli, int argc, char **argv);

enum { O_REGION = 1, O_ENDPOINT, O_DRY, O_YES, O_NAME, O_BUCKET, O_ROLE, O_BASE,
    O_BUNDLE, O_ARCH, O_ROLE_NAME, O_IMAGE, O_MAX };

static const struct option options[] = {
	{ "region", required_argument, NULL, O_REGION },
	{ "endpoint-url", required_argument, NULL, O_ENDPOINT },
	{ "dry-run", no_argument, NULL, O_DRY },
	{ "yes", no_argument, NULL, O_YES },
	{ "name", required_argument, NULL, O_NAME },
	{ "bucket", required_argument, NULL, O_BUCKET },
	{ "build-role-arn", required_argument, NULL, O_ROLE },
	{ "base-image-arn", required_argument, NULL, O_BASE },
	{ "bundle", required_argument, NULL, O_BUNDLE },
	{ "arch", required_argument, NULL, O_ARCH },
	{ "role-name", required_argument, NULL, O_ROLE_NAME },
	{ "image", required_argument, NULL, O_IMAGE },
	{ NULL, 0, NULL, 0 },
};

const struct cmd_entry cmd_setup_entry = {
	"setup", "aws [--region R] [--dry-run] [--yes] [--arch A] [--bucket B] [--role-name N]\n"
	"          [--image REF]",
	"make the S3 bucket, build role, artifact and MicroVM image of the lambda backend",
	"  --region R            AWS region (default: lambda_region, AWS_REGION, profile)\n"
	"  --endpoint-url URL    Lambda MicroVMs API endpoint (default: the region's)\n"
	"  --dry-run             say what would be done (read-only calls); change nothing\n"
	"  --yes                 do not ask before creating AWS resources\n"
	"  --name N              image name (default sbxtop)\n"
	"  --bucket B            S3 bucket of the code artifact (default sbxtop-ACCOUNT-REGION)\n"
	"  --role-name N         IAM build role to make or check (default sbxtop-build)\n"
	"  --build-role-arn ARN  use this role of yours instead: no IAM calls\n"
	"  --base-image-arn ARN  managed base image (default: al2023-1 of the region)\n"
	"  --arch A              aarch64 (default) or x86_64: the bundle's and the image's\n"
	"  --bundle DIR          agent bundle to ship (default: the one built for --arch,\n"
	"                        `make agent-bundle ARCH=aarch64` for aarch64)\n"
	"  --image REF           an OCI image as the root: refused, saying why (the\n"
	"                        service builds on a managed base image only)\n"
	"\n"
	"  Each step checks first whether it is done: a rerun does only what is\n"
	"  missing and says \"nothing to do\" when all is in place; an interrupted run\n"
	"  picks up where it stopped.  Prints \"image: ARN\" for lambda_image at the end.\n",
	cmd_setup,
	.options = options,
	.words = "aws",
};

/* The bundle for arch: next to sbxtop in a build tree (build/agent-bundle,
 * build/aarch64/agent-bundle), or where `make install` puts it. */
static char *
default_bundle(const char *arch)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	int arm = strcmp(arch, "aarch64") == 0;
	char *cand[3] = { NULL, NULL, NULL };
	char *r = NULL;

	if (n <= 0)
		return xstrdup(arm ? "aarch64/agent-bundle" : "agent-bundle");
	exe[n] = '\0';
	const char *dir = dirname(exe);
	cand[0] = arm ? xasprintf("%s/aarch64/agent-bundle", dir) :
	    xasprintf("%s/agent-bundle", dir);
	/* build/san/sbxtop: the aarch64 bundle is built without the sanitizers. */
	cand[1] = arm ? xasprintf("%s/../aarch64/agent-bundle", dir) : NULL;
	cand[2] = xasprintf("%s/../lib/sbxtop/agent-bundle%s", dir, arm ? "-aarch64" : "");
	for (int i = 0; i < 3 && r == NULL; i++)
		if (cand[i] && access(cand[i], R_OK) == 0)
			r = xstrdup(cand[i]);
	if (r == NULL)
		r = xstrdup(cand[0]);
	for (int i = 0; i < 3; i++)
		free(cand[i]);
	return r;
}

static int
cmd_setup(struct cli *cli, int argc, char **argv)
{
	/* The option each flag sets in the lambda backend's "setup" arguments. */
	static const char *const key[] = {
		[O_REGION] = "region", [O_ENDPOINT] = "endpoint_url", [O_NAME] = "name",
		[O_BUCKET] = "bucket", [O_ROLE] = "build_role_arn", [O_BASE] = "base_image_arn",
		[O_BUNDLE] = "bundle_dir", [O_ARCH] = "arch", [O_ROLE_NAME] = "role_name",
		[O_IMAGE] = "image",
	};
	const char *opt[O_MAX] = { 0 };
	int dry_run = 0, role_settle_s = 10;
	_cleanup_free_ char *bundle = NULL, *outdir = NULL;
	const char *v;
	struct sbx_err e;
	int c, yes = 0, rc;
	cJSON *args, *out = NULL;

	opt[O_NAME] = "sbxtop";
	opt[O_ARCH] = "aarch64";
	/* Tests against a fake IAM, which is consistent at once, skip the wait. */
	v = getenv("SBXTOP_AWS_ROLE_SETTLE_S");
	if (v && *v)
		role_settle_s = atoi(v);
	v = config_str(cli->cfg, "lambda_region");
	opt[O_REGION] = v && *v ? v : NULL;
	v = config_str(cli->cfg, "lambda_endpoint_url");
	opt[O_ENDPOINT] = v && *v ? v : NULL;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", options, NULL)) != -1) {
		if (c == O_DRY)
			dry_run = 1;
		else if (c == O_YES)
			yes = 1;
		else if (c > 0 && c < O_MAX && key[c] != NULL)
			opt[c] = optarg;
		else
			return cli_bad_option(&cmd_setup_entry, c, argv);
	}
	if (optind >= argc || strcmp(argv[optind], "aws") != 0)
		return cli_usage(&cmd_setup_entry, "expected 'aws' (the one thing to set up)");
	if (optind + 1 < argc)
		return cli_usage(&cmd_setup_entry, "unexpected argument '%s'", argv[optind + 1]);
	if (!dry_run && !yes) {
		char line[16];
		if (!isatty(0))
			return cli_usage(&cmd_setup_entry, "this creates AWS resources: pass --yes "
			    "(or --dry-run to see the plan)");
		cli_printf(stderr, "This creates an S3 bucket, an IAM role and a MicroVM image in "
		    "your AWS account. Go on? [y/N] ");
		if (fgets(line, sizeof line, stdin) == NULL || (line[0] != 'y' && line[0] != 'Y'))
			return 1;
	}
	if (strcmp(opt[O_ARCH], "aarch64") != 0 && strcmp(opt[O_ARCH], "x86_64") != 0)
		return cli_usage(&cmd_setup_entry, "--arch: aarch64 or x86_64, not '%s'", opt[O_ARCH]);
	if (opt[O_BUNDLE] == NULL)
		opt[O_BUNDLE] = bundle = default_bundle(opt[O_ARCH]);
	if ((outdir = paths_file(PATHS_CACHE, "aws", 1, &e)) == NULL)
		return cli_error(&e);
	if (mkdir_p(outdir, 0700) < 0) {
		sbx_error_errno(&e, SBX_EIO, NULL, "mkdir %s", outdir);
		return cli_error(&e);
	}
	args = cJSON_CreateObject();
	for (int i = 0; i < O_MAX; i++)
		if (key[i] != NULL && opt[i] != NULL)
			cJSON_AddStringToObject(args, key[i], opt[i]);
	cJSON_AddStringToObject(args, "out_dir", outdir);
	cJSON_AddBoolToObject(args, "dry_run", dry_run);
	cJSON_AddNumberToObject(args, "poll_timeout_s", 1800);
	cJSON_AddNumberToObject(args, "role_settle_s", role_settle_s);
	rc = core_admin(cli->core, "lambda", BACKEND_SETUP, args, stdout, &out, &e);
	cJSON_Delete(args);
	cJSON_Delete(out);
	return rc < 0 ? cli_error(&e) : 0;
}
