/* sbxtop setup aws: build the MicroVM image the lambda backend runs. */
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/aws-setup.h"
#include "core/paths.h"
#include "core/util.h"

static int cmd_setup(struct cli *cli, int argc, char **argv);

const struct cmd_entry cmd_setup_entry = {
	"setup", "aws [--region R] [--dry-run] [--yes] [--bucket B] [--build-role-arn ARN]",
	"build the AWS Lambda MicroVM image of the lambda backend",
	"  --region R            AWS region (default: lambda_region, AWS_REGION, profile)\n"
	"  --endpoint-url URL    Lambda MicroVMs API endpoint (default: the region's)\n"
	"  --dry-run             print the plan and build the artifact; send nothing\n"
	"  --yes                 do not ask before creating AWS resources\n"
	"  --name N              image name (default sbxtop)\n"
	"  --bucket B            S3 bucket holding the code artifact\n"
	"  --build-role-arn ARN  IAM role Lambda assumes to build the image\n"
	"  --base-image-arn ARN  managed base image (default: al2023-1 of the region)\n"
	"  --bundle DIR          agent bundle to ship (default: next to sbxtop); must be\n"
	"                        aarch64: Lambda MicroVMs run ARM_64\n"
	"\n"
	"  Idempotent: an image of that name is reused, and a rerun picks up a build\n"
	"  that is still going.  Prints \"image: ARN\" for lambda_image at the end.\n",
	cmd_setup,
};

static char *
default_bundle(void)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	char *p;

	if (n > 0) {
		exe[n] = '\0';
		p = xasprintf("%s/agent-bundle", dirname(exe));
		if (access(p, R_OK) == 0)
			return p;
		free(p);
		/* An installed sbxtop: PREFIX/bin/sbxtop, PREFIX/lib/sbxtop/agent-bundle. */
		return xasprintf("%s/../lib/sbxtop/agent-bundle", exe);
	}
	return xstrdup("agent-bundle");
}

static int
cmd_setup(struct cli *cli, int argc, char **argv)
{
	enum { O_REGION = 1, O_ENDPOINT, O_DRY, O_YES, O_NAME, O_BUCKET, O_ROLE, O_BASE,
	    O_BUNDLE };
	static const struct option lo[] = {
		{ "region", required_argument, NULL, O_REGION },
		{ "endpoint-url", required_argument, NULL, O_ENDPOINT },
		{ "dry-run", no_argument, NULL, O_DRY },
		{ "yes", no_argument, NULL, O_YES },
		{ "name", required_argument, NULL, O_NAME },
		{ "bucket", required_argument, NULL, O_BUCKET },
		{ "build-role-arn", required_argument, NULL, O_ROLE },
		{ "base-image-arn", required_argument, NULL, O_BASE },
		{ "bundle", required_argument, NULL, O_BUNDLE },
		{ NULL, 0, NULL, 0 },
	};
	struct aws_setup_opts o = { 0 };
	_cleanup_free_ char *bundle = NULL, *outdir = NULL;
	const char *v;
	struct sbx_err e;
	int c, yes = 0;

	o.name = "sbxtop";
	o.poll_timeout_s = 1800;
	v = config_str(cli->cfg, "lambda_region");
	o.region = v && *v ? v : NULL;
	v = config_str(cli->cfg, "lambda_endpoint_url");
	o.endpoint_url = v && *v ? v : NULL;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", lo, NULL)) != -1) {
		switch (c) {
		case O_REGION:		o.region = optarg; break;
		case O_ENDPOINT:	o.endpoint_url = optarg; break;
		case O_DRY:		o.dry_run = 1; break;
		case O_YES:		yes = 1; break;
		case O_NAME:		o.name = optarg; break;
		case O_BUCKET:		o.bucket = optarg; break;
		case O_ROLE:		o.build_role_arn = optarg; break;
		case O_BASE:		o.base_image_arn = optarg; break;
		case O_BUNDLE:		o.bundle_dir = optarg; break;
		default:		return cli_bad_option(&cmd_setup_entry, c, argv);
		}
	}
	if (optind >= argc || strcmp(argv[optind], "aws") != 0)
		return cli_usage(&cmd_setup_entry, "expected 'aws' (the one thing to set up)");
	if (optind + 1 < argc)
		return cli_usage(&cmd_setup_entry, "unexpected argument '%s'", argv[optind + 1]);
	if (!o.dry_run && !yes) {
		char line[16];
		if (!isatty(0))
			return cli_usage(&cmd_setup_entry, "this creates AWS resources: pass --yes "
			    "(or --dry-run to see the plan)");
		fprintf(stderr, "This creates a MicroVM image in your AWS account. Go on? [y/N] ");
		if (fgets(line, sizeof line, stdin) == NULL || (line[0] != 'y' && line[0] != 'Y'))
			return 1;
	}
	if (o.bundle_dir == NULL)
		o.bundle_dir = bundle = default_bundle();
	if ((outdir = paths_file(PATHS_CACHE, "aws", 1, &e)) == NULL)
		return cli_error(&e);
	if (mkdir_p(outdir, 0700) < 0) {
		sbx_error_errno(&e, SBX_EIO, NULL, "mkdir %s", outdir);
		return cli_error(&e);
	}
	o.out_dir = outdir;
	/* Tests run the flow with the host's (x86-64) bundle against a fake AWS. */
	v = getenv("SBXTOP_SETUP_ALLOW_ANY_ARCH");
	o.allow_arch = v && strcmp(v, "1") == 0;
	if (aws_setup(&o, stdout, &e) < 0)
		return cli_error(&e);
	return 0;
}
