/* `sbxtop setup aws` (see aws-setup.h).  Each step looks before it acts, so a
 * rerun does only what is missing and a dry run can say what it would do. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "backends/lambda/aws-microvms.h"
#include "backends/lambda/aws-s3iam.h"
#include "backends/lambda/aws-setup.h"
#include "backends/lambda/sigv4.h"
#include "lib/util.h"

#define AGENT_PORT	8080
#define HOOKS_PORT	9000
#define KEY_PREFIX	"sbxtop/"	/* where artifacts go in the bucket */
#define ROLE_POLICY	"sbxtop-build"	/* the build role's inline policy */

/* Started by the image: the API for sbxtop on 8080, the lifecycle hooks on 9000,
 * no secret until the run hook brings it. */
static const char dockerfile[] =
    "# sbxtop's MicroVM image: sbxtop-agent, self-contained (its own loader and\n"
    "# libraries), serving its API on 8080 and the lifecycle hooks on 9000.\n"
    "COPY agent-bundle /opt/sbxtop/agent-bundle\n"
    "RUN mkdir -p /workspace\n"
    "EXPOSE 8080 9000\n"
    "CMD [\"/opt/sbxtop/agent-bundle/sbxtop-agent\", \"--listen\", \"tcp:0.0.0.0:8080\", "
    "\"--hooks\", \"tcp:0.0.0.0:9000\", \"--workspace\", \"/workspace\", \"--init\"]\n";

/* e_machine of the bundle's binary, or -1. */
static int
elf_machine(const char *dir)
{
	_cleanup_free_ char *p = xasprintf("%s/bin/sbxtop-agent", dir);
	_cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC);
	Elf64_Ehdr h;

	if (fd < 0 || read(fd, &h, sizeof h) != (ssize_t)sizeof h ||
	    memcmp(h.e_ident, ELFMAG, SELFMAG) != 0)
		return -1;
	return h.e_machine;
}

static int
run(char *const argv[], const char *cwd, struct sbx_err *e)
{
	pid_t pid = fork();
	int st = 0;

	if (pid < 0)
		return sbx_error_errno(e, SBX_EINTERNAL, NULL, "fork");
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0)
			dup2(null, 1);
		if (cwd && chdir(cwd) < 0)
			_exit(126);
		execvp(argv[0], argv);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return sbx_error(e, SBX_EIO, WIFEXITED(st) && WEXITSTATUS(st) == 127 ?
		    "install zip (apt-get install zip)" : NULL, "%s failed (status %d)", argv[0],
		    WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	return 0;
}

/* OUT/NAME.zip holding Dockerfile and agent-bundle/; its sha256 in hex. */
static int
build_artifact(const struct aws_setup_opts *o, char **zip, char sha[65], struct sbx_err *e)
{
	_cleanup_free_ char *stage = xasprintf("%s/stage", o->out_dir);
	_cleanup_free_ char *df = xasprintf("%s/Dockerfile", stage);
	_cleanup_free_ char *bundle = xasprintf("%s/agent-bundle", stage);
	_cleanup_free_ char *z = xasprintf("%s/%s.zip", o->out_dir, o->name);
	_cleanup_free_ char *data = NULL;
	size_t len = 0;
	FILE *f;

	if (mkdir_p(stage, 0700) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "mkdir %s", stage);
	{
		char *const rm[] = { "rm", "-rf", bundle, z, NULL };
		if (run(rm, NULL, e) < 0)
			return -1;
		char *const cp[] = { "cp", "-a", (char *)o->bundle_dir, bundle, NULL };
		if (run(cp, NULL, e) < 0) {
			snprintf(e->hint, sizeof e->hint, "build it with `make agent-bundle`");
			return -1;
		}
	}
	if ((f = fopen(df, "w")) == NULL || fputs(dockerfile, f) < 0 || fclose(f) != 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "write %s", df);
	{
		/* One fixed time on every file, so the same bundle gives the same zip,
		 * the same digest and the same object key: a rerun uploads nothing. */
		char *const touch[] = { "find", stage, "-exec", "touch", "-h", "-d",
		    "@946684800", "{}", "+", NULL };
		if (run(touch, NULL, e) < 0)
			return -1;
	}
	{
		/* -X: no extra attributes, so the same inputs give the same bytes.  -1:
		 * four times faster than the default on the bundle's 48 MB for 8% more
		 * bytes, and every run zips it to learn the digest. */
		char *const zipv[] = { "zip", "-q", "-1", "-r", "-X", z, "Dockerfile",
		    "agent-bundle", NULL };
		if (run(zipv, stage, e) < 0)
			return -1;
	}
	if ((data = read_file(z, 512u << 20, &len)) == NULL)
		return sbx_error_errno(e, SBX_EIO, NULL, "read %s", z);
	sigv4_sha256_hex(data, len, sha);
	*zip = steal_pointer(&z);
	return 0;
}

static cJSON *
image_request(const struct aws_setup_opts *o, const char *region, const char *bucket,
    const char *role_arn, const char *key)
{
	cJSON *r = cJSON_CreateObject(), *h, *mh, *ih, *cpu;
	_cleanup_free_ char *uri = xasprintf("s3://%s/%s", bucket, key);
	_cleanup_free_ char *base = o->base_image_arn ? xstrdup(o->base_image_arn) :
	    xasprintf("arn:aws:lambda:%s:aws:microvm-image:al2023-1", region);
	_cleanup_free_ char *ct = xasprintf("sbxtop-setup-%s-%.32s", o->name, key);

	cJSON_AddStringToObject(r, "name", o->name);
	cJSON_AddStringToObject(r, "description", "sbxtop sandboxes: sbxtop-agent " SBX_VERSION);
	cJSON_AddStringToObject(r, "baseImageArn", base);
	cJSON_AddStringToObject(r, "buildRoleArn", role_arn);
	cJSON_AddObjectToObject(r, "codeArtifact");
	cJSON_AddStringToObject(cJSON_GetObjectItem(r, "codeArtifact"), "uri", uri);
	cpu = cJSON_AddArrayToObject(r, "cpuConfigurations");
	cJSON_AddItemToArray(cpu, cJSON_CreateObject());
	cJSON_AddStringToObject(cJSON_GetArrayItem(cpu, 0), "architecture",
	    strcmp(o->arch, "x86_64") == 0 ? "X86_64" : "ARM_64");
	h = cJSON_AddObjectToObject(r, "hooks");
	cJSON_AddNumberToObject(h, "port", HOOKS_PORT);
	ih = cJSON_AddObjectToObject(h, "microvmImageHooks");
	cJSON_AddStringToObject(ih, "ready", "ENABLED");
	cJSON_AddNumberToObject(ih, "readyTimeoutInSeconds", 30);
	cJSON_AddStringToObject(ih, "validate", "ENABLED");
	cJSON_AddNumberToObject(ih, "validateTimeoutInSeconds", 30);
	mh = cJSON_AddObjectToObject(h, "microvmHooks");
	cJSON_AddStringToObject(mh, "run", "ENABLED");
	cJSON_AddNumberToObject(mh, "runTimeoutInSeconds", 10);
	cJSON_AddStringToObject(mh, "resume", "ENABLED");
	cJSON_AddNumberToObject(mh, "resumeTimeoutInSeconds", 5);
	cJSON_AddStringToObject(mh, "suspend", "ENABLED");
	cJSON_AddNumberToObject(mh, "suspendTimeoutInSeconds", 10);
	cJSON_AddStringToObject(mh, "terminate", "ENABLED");
	cJSON_AddNumberToObject(mh, "terminateTimeoutInSeconds", 5);
	cJSON_AddStringToObject(r, "clientToken", ct);
	return r;
}

/* The image's build failed: say why, from the failed version's builds. */
static void
build_failure(struct awsmv *c, const char *arn, const cJSON *img, const char *st,
    struct sbx_err *e)
{
	const char *v = cJSON_GetStringValue(cJSON_GetObjectItem(img, "latestFailedImageVersion"));
	char why[320] = "";
	cJSON *builds = NULL, *b;
	struct sbx_err sub;

	if (v != NULL && awsmv_image_builds(c, arn, v, &builds, &sub) == 0) {
		cJSON_ArrayForEach(b, builds) {
			const char *bs = cJSON_GetStringValue(cJSON_GetObjectItem(b, "buildState"));
			const char *r = cJSON_GetStringValue(cJSON_GetObjectItem(b, "stateReason"));
			if (bs && strcmp(bs, "FAILED") == 0 && r && why[0] == '\0')
				snprintf(why, sizeof why, "; build %.40s (%.16s): %.200s",
				    cJSON_GetStringValue(cJSON_GetObjectItem(b, "buildId")) ?
				    cJSON_GetStringValue(cJSON_GetObjectItem(b, "buildId")) : "?",
				    cJSON_GetStringValue(cJSON_GetObjectItem(b, "architecture")) ?
				    cJSON_GetStringValue(cJSON_GetObjectItem(b, "architecture")) : "?", r);
		}
	}
	cJSON_Delete(builds);
	sbx_error(e, SBX_EBACKEND, "see the build role's logs in CloudWatch; delete the image "
	    "(or pass --name) and rerun", "the image build failed: %s, version %s%s", st,
	    v ? v : "?", why);
}

/* The build role's trust policy: Lambda may assume it (and tag the session, as
 * the MicroVMs guide asks), on behalf of this account only. */
static char *
trust_policy(const char *account)
{
	return xasprintf("{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\","
	    "\"Principal\":{\"Service\":\"lambda.amazonaws.com\"},"
	    "\"Action\":[\"sts:AssumeRole\",\"sts:TagSession\"],"
	    "\"Condition\":{\"StringEquals\":{\"aws:SourceAccount\":\"%s\"}}}]}", account);
}

/* What the build needs and nothing more: read the artifacts under KEY_PREFIX of
 * this bucket, and write its logs in this account and region. */
static char *
role_policy(const char *partition, const char *bucket, const char *region,
    const char *account)
{
	return xasprintf("{\"Version\":\"2012-10-17\",\"Statement\":["
	    "{\"Sid\":\"ReadCodeArtifact\",\"Effect\":\"Allow\",\"Action\":\"s3:GetObject\","
	    "\"Resource\":\"arn:%s:s3:::%s/" KEY_PREFIX "*\"},"
	    "{\"Sid\":\"WriteBuildLogs\",\"Effect\":\"Allow\",\"Action\":[\"logs:CreateLogGroup\","
	    "\"logs:CreateLogStream\",\"logs:PutLogEvents\"],"
	    "\"Resource\":\"arn:%s:logs:%s:%s:log-group:*\"}]}",
	    partition, bucket, partition, region, account);
}

/* 1 when two JSON texts hold the same document. */
static int
same_json(const char *a, const char *b)
{
	cJSON *x = a ? cJSON_Parse(a) : NULL, *y = b ? cJSON_Parse(b) : NULL;
	int r = x && y && cJSON_Compare(x, y, 1);

	cJSON_Delete(x);
	cJSON_Delete(y);
	return r;
}

struct run {
	const struct aws_setup_opts	*o;
	FILE				*out;
	int				 changes;	/* what this run made or changed */
};

/* "  bucket: created" or, in a dry run, "  bucket: would be created". */
static void
step(struct run *r, const char *what, const char *done, const char *would)
{
	if (r->o->dry_run) {
		fprintf(r->out, "  %s: %s\n", what, would);
	} else {
		fprintf(r->out, "  %s: %s\n", what, done);
		r->changes++;
	}
}

static int
do_bucket(struct run *r, struct aws_s3 *s, const char *bucket, struct sbx_err *e)
{
	char alg[32];
	int x;

	if ((x = aws_s3_bucket_exists(s, e)) < 0)
		return -1;
	if (x == 0) {
		if (!r->o->dry_run && aws_s3_bucket_create(s, e) < 0)
			return -1;
		step(r, bucket, "created", "would be created");
		if (r->o->dry_run) {
			step(r, bucket, "", "would be made private (all public access blocked)");
			step(r, bucket, "", "would be encrypted (SSE-S3, AES256)");
			return 0;
		}
	} else {
		fprintf(r->out, "  %s: exists\n", bucket);
	}
	if ((x = aws_s3_public_blocked(s, e)) < 0)
		return -1;
	if (x == 0) {
		if (!r->o->dry_run && aws_s3_block_public(s, e) < 0)
			return -1;
		step(r, bucket, "all public access blocked", "would be made private (all public "
		    "access blocked)");
	} else {
		fprintf(r->out, "  %s: private (all public access blocked)\n", bucket);
	}
	if ((x = aws_s3_encrypted(s, alg, e)) < 0)
		return -1;
	if (x == 0) {
		if (!r->o->dry_run && aws_s3_encrypt(s, e) < 0)
			return -1;
		step(r, bucket, "encrypted by default (SSE-S3, AES256)", "would be encrypted "
		    "(SSE-S3, AES256)");
	} else {
		fprintf(r->out, "  %s: encrypted by default (%s)\n", bucket, alg);
	}
	return 0;
}

static int
do_role(struct run *r, struct awsmv *c, const char *role, const char *trust,
    const char *policy, char **arn, struct sbx_err *e)
{
	_cleanup_free_ char *have_trust = NULL, *have_policy = NULL;
	int x, created = 0;

	if ((x = aws_iam_role_get(c, role, arn, &have_trust, e)) < 0)
		return -1;
	if (x == 1 && !same_json(have_trust, trust)) {
		if (have_trust == NULL || strstr(have_trust, "lambda.amazonaws.com") == NULL)
			return sbx_error(e, SBX_ESTATE, "pass --role-name for another role, or "
			    "--build-role-arn to use a role you manage", "IAM role %s exists and "
			    "Lambda may not assume it: not a role setup made", role);
		fprintf(r->out, "  role %s: exists; its trust policy differs from setup's and is "
		    "left as it is\n", role);
	} else if (x == 1) {
		fprintf(r->out, "  role %s: exists, trusted by lambda.amazonaws.com\n", role);
	} else {
		if (!r->o->dry_run) {
			if (aws_iam_role_create(c, role, trust, "sbxtop setup aws: builds sbxtop's "
			    "Lambda MicroVM image", arn, e) < 0) {
				/* Made since GetRole (another setup running): use it. */
				if (strcmp(awsmv_last_error(c), "EntityAlreadyExists") != 0 ||
				    aws_iam_role_get(c, role, arn, NULL, e) != 1)
					return -1;
			}
			created = 1;
		} else {
			*arn = xstrdup("(the new role's ARN)");
		}
		step(r, "role", "created", "would be created");
	}
	if (x == 1 && (x = aws_iam_role_policy_get(c, role, ROLE_POLICY, &have_policy, e)) < 0)
		return -1;
	if (x == 1 && same_json(have_policy, policy)) {
		fprintf(r->out, "  role %s: policy %s in place\n", role, ROLE_POLICY);
	} else {
		if (!r->o->dry_run && aws_iam_role_policy_put(c, role, ROLE_POLICY, policy, e) < 0)
			return -1;
		step(r, "role policy " ROLE_POLICY, "written", "would be written");
	}
	if (created && r->o->role_settle_s > 0) {
		/* IAM is eventually consistent: a role just made may not be assumable yet. */
		fprintf(r->out, "  role %s: waiting %d s for IAM to make it usable\n", role,
		    r->o->role_settle_s);
		sleep((unsigned)r->o->role_settle_s);
	}
	return 0;
}

static int
do_upload(struct run *r, struct aws_s3 *s, const char *zip, const char *key,
    const char *sha, struct sbx_err *e)
{
	_cleanup_free_ char *data = NULL;
	size_t len = 0;
	int x;

	if ((x = aws_s3_object_is(s, key, sha, e)) < 0)
		return -1;
	if (x == 1) {
		fprintf(r->out, "  artifact %s: uploaded already\n", key);
		return 0;
	}
	if (!r->o->dry_run) {
		if ((data = read_file(zip, 512u << 20, &len)) == NULL)
			return sbx_error_errno(e, SBX_EIO, NULL, "read %s", zip);
		if (aws_s3_object_put(s, key, data, len, sha, e) < 0)
			return -1;
	}
	step(r, "artifact", "uploaded", "would be uploaded");
	return 0;
}

/* What setup refuses before asking AWS: the image's and the role's names, an
 * architecture Lambda does not run, a bundle missing or of another one. */
static int
setup_check(const struct aws_setup_opts *o, const char *role, struct sbx_err *e)
{
	int m, want_m;

	if (o->name == NULL || strspn(o->name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW"
	    "XYZ0123456789-_") != strlen(o->name) || strlen(o->name) > 64 || !*o->name)
		return sbx_error(e, SBX_EINVAL, NULL, "image name '%s': 1 to 64 letters, digits, "
		    "'-' or '_'", o->name ? o->name : "");
	if (strcmp(o->arch, "aarch64") != 0 && strcmp(o->arch, "x86_64") != 0)
		return sbx_error(e, SBX_EINVAL, "pass --arch aarch64 (the default) or x86_64",
		    "architecture '%s' is not one Lambda MicroVMs runs", o->arch);
	if (strspn(role, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+=,.@_-")
	    != strlen(role) || !*role || strlen(role) > 64)
		return sbx_error(e, SBX_EINVAL, NULL, "role name '%s': 1 to 64 of letters, digits "
		    "and +=,.@_-", role);
	want_m = strcmp(o->arch, "aarch64") == 0 ? EM_AARCH64 : EM_X86_64;
	if ((m = elf_machine(o->bundle_dir)) < 0)
		return sbx_error(e, SBX_ENOTFOUND, want_m == EM_AARCH64 ? "build it with `make "
		    "agent-bundle ARCH=aarch64` (Debian's gcc-aarch64-linux-gnu; scripts/deps.sh "
		    "installs it), or pass --bundle DIR" : "build it with `make agent-bundle`",
		    "no agent bundle at %s", o->bundle_dir);
	if (m != want_m)
		return sbx_error(e, SBX_EUNSUPPORTED, want_m == EM_AARCH64 ? "build it with `make "
		    "agent-bundle ARCH=aarch64` and pass it with --bundle, or pass --arch x86_64" :
		    "pass an x86_64 bundle with --bundle", "the agent bundle at %s is not %s",
		    o->bundle_dir, o->arch);
	return 0;
}

/* The plan, said before anything is looked at or done. */
static void
print_plan(const struct aws_setup_opts *o, FILE *out, struct awsmv *c, struct aws_s3 *s3,
    const char *account, const char *bucket, const char *role, const char *iam_ep)
{
	fprintf(out, "plan (account %s, region %s, credentials from %s):\n", account,
	    awsmv_region(c), awsmv_creds_source(c));
	fprintf(out, "  1. S3 bucket %s: private (all public access blocked), encrypted "
	    "(SSE-S3), owned by %s only\n", bucket, account);
	if (o->build_role_arn)
		fprintf(out, "  2. build role: %s (yours; setup leaves it alone)\n",
		    o->build_role_arn);
	else
		fprintf(out, "  2. IAM role %s: Lambda may assume it; it may read s3://%s/"
		    KEY_PREFIX "* and write build logs, nothing else\n", role, bucket);
	fprintf(out, "  3. code artifact: Dockerfile + %s agent bundle (%s), uploaded to "
	    "s3://%s/" KEY_PREFIX "\n", o->arch, o->bundle_dir, bucket);
	fprintf(out, "  4. MicroVM image %s (%s; hooks on port %d: ready, validate, run, suspend, "
	    "resume, terminate; agent on %d), then wait until a version is ACTIVE\n", o->name,
	    strcmp(o->arch, "x86_64") == 0 ? "X86_64" : "ARM_64", HOOKS_PORT, AGENT_PORT);
	fprintf(out, "endpoints: S3 %s, IAM %s, Lambda MicroVMs %s\n", aws_s3_endpoint(s3),
	    iam_ep, awsmv_endpoint(c));
	fprintf(out, o->dry_run ? "dry run: checking what exists, changing nothing\n" :
	    "doing it:\n");
}

/* The image, resumable: one of this name that exists is kept (*img), else
 * CreateMicrovmImage (in a dry run, the request shown). */
static int
do_image(struct run *r, struct awsmv *c, const char *bucket, const char *role_arn,
    const char *key, cJSON **img, struct sbx_err *e)
{
	const struct aws_setup_opts *o = r->o;
	cJSON *req;

	if (awsmv_image_get(c, o->name, img, e) == 0) {
		fprintf(r->out, "  image %s exists: %s\n", o->name,
		    cJSON_GetStringValue(cJSON_GetObjectItem(*img, "imageArn")));
		return 0;
	}
	if (strcmp(awsmv_last_error(c), "ResourceNotFoundException") != 0)
		return -1;
	req = image_request(o, awsmv_region(c), bucket, role_arn, key);
	if (o->dry_run) {
		char *text = cJSON_Print(req);
		step(r, "image", "", "would be created; the CreateMicrovmImage request:");
		fprintf(r->out, "%s\n", text);
		free(text);
	} else if (awsmv_image_create(c, req, img, e) < 0) {
		cJSON_Delete(req);
		return -1;
	} else {
		step(r, "image", "CreateMicrovmImage sent", "");
	}
	cJSON_Delete(req);
	return 0;
}

/* Wait for image arn (*img, as it was last read) to have an ACTIVE version;
 * a failed build says why (build_failure). */
static int
wait_active(const struct aws_setup_opts *o, FILE *out, struct awsmv *c, const char *arn,
    cJSON **img, struct sbx_err *e)
{
	int x = 0;

	for (int64_t deadline = now_ms() + (int64_t)o->poll_timeout_s * 1000;;) {
		cJSON_Delete(*img);
		*img = NULL;
		if (awsmv_image_get(c, arn, img, e) < 0)
			return -1;
		if (awsmv_image_usable(*img))
			break;
		const char *st = cJSON_GetStringValue(cJSON_GetObjectItem(*img, "state"));
		if (st && strstr(st, "FAILED")) {
			build_failure(c, arn, *img, st, e);
			return -1;
		}
		if (now_ms() > deadline)
			return sbx_error(e, SBX_ETIMEOUT, "rerun `sbxtop setup aws`: it picks up where it "
			    "stopped", "the image is still %s", st ? st : "building");
		if (!x++)
			fprintf(out, "  image %s: %s; waiting for an ACTIVE version\n", o->name,
			    st ? st : "building");
		usleep(500 * 1000);
	}
	fprintf(out, "  image %s: an ACTIVE version\n", o->name);
	return 0;
}

int
aws_setup(const struct aws_setup_opts *o, FILE *out, struct sbx_err *e)
{
	struct awsmv *c = NULL;
	struct aws_s3 *s3 = NULL;
	struct run run = { o, out, 0 };
	_cleanup_free_ char *zip = NULL, *key = NULL, *arn = NULL, *caller = NULL;
	_cleanup_free_ char *bucket = NULL, *role_arn = NULL, *trust = NULL, *policy = NULL;
	_cleanup_free_ char *partition = NULL, *iam_ep = NULL;
	char sha[65], account[13];
	cJSON *img = NULL;
	int rc = -1;
	const char *region, *role = o->role_name ? o->role_name : "sbxtop-build";

	if (setup_check(o, role, e) < 0)
		return -1;
	if ((c = awsmv_new(o->region, NULL, o->endpoint_url, e)) == NULL)
		return -1;
	region = awsmv_region(c);
	if (awsmv_whoami(c, &caller, e) < 0)
		goto out;
	if (awsmv_arn_account(caller, account) < 0) {
		sbx_error(e, SBX_EBACKEND, NULL, "STS GetCallerIdentity: no account in '%s'", caller);
		goto out;
	}
	partition = xstrndup(caller + 4, strcspn(caller + 4, ":"));
	bucket = o->bucket ? xstrdup(o->bucket) : xasprintf("sbxtop-%s-%s", account, region);
	if (!aws_s3_bucket_name_ok(bucket)) {
		sbx_error(e, SBX_EINVAL, "3 to 63 of a-z, 0-9 and '-', starting and ending with a "
		    "letter or digit", "'%s' is not a bucket name setup can use", bucket);
		goto out;
	}
	s3 = aws_s3_new(c, bucket, region, account);
	iam_ep = aws_iam_endpoint();
	print_plan(o, out, c, s3, account, bucket, role, iam_ep);

	if (build_artifact(o, &zip, sha, e) < 0)
		goto out;
	key = xasprintf(KEY_PREFIX "%s-%.16s.zip", o->name, sha);
	fprintf(out, "  artifact built: %s (sha256 %s)\n", zip, sha);

	if (do_bucket(&run, s3, bucket, e) < 0)
		goto out;
	if (o->build_role_arn) {
		role_arn = xstrdup(o->build_role_arn);
	} else {
		trust = trust_policy(account);
		policy = role_policy(partition, bucket, region, account);
		if (do_role(&run, c, role, trust, policy, &role_arn, e) < 0)
			goto out;
	}
	if (do_upload(&run, s3, zip, key, sha, e) < 0 ||
	    do_image(&run, c, bucket, role_arn, key, &img, e) < 0)
		goto out;
	if (o->dry_run) {
		fprintf(out, "dry run: nothing was changed\n");
		rc = 0;
		goto out;
	}
	arn = xstrdup(cJSON_GetStringValue(cJSON_GetObjectItem(img, "imageArn")) ?
	    cJSON_GetStringValue(cJSON_GetObjectItem(img, "imageArn")) : "");
	if (wait_active(o, out, c, arn, &img, e) < 0)
		goto out;
	if (run.changes == 0)
		fprintf(out, "nothing to do: the bucket, the role, the artifact and the image "
		    "were all in place\n");
	fprintf(out, "image: %s\n", arn);
	fprintf(out, "next: add \"lambda_image = %s\" to sbxtop.conf, or export "
	    "SBXTOP_LAMBDA_IMAGE=%s\n", arn, arn);
	rc = 0;
out:
	cJSON_Delete(img);
	aws_s3_free(s3);
	awsmv_free(c);
	return rc;
}
