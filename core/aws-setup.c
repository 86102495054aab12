/* `sbxtop setup aws` (see aws-setup.h). */
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

#include "core/aws-microvms.h"
#include "core/aws-setup.h"
#include "core/sigv4.h"
#include "core/util.h"

#define AGENT_PORT	8080
#define HOOKS_PORT	9000

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
		/* -X: no extra attributes, so the same inputs give the same bytes. */
		char *const zipv[] = { "zip", "-q", "-r", "-X", z, "Dockerfile", "agent-bundle",
		    NULL };
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
image_request(const struct aws_setup_opts *o, const char *region, const char *key)
{
	cJSON *r = cJSON_CreateObject(), *h, *mh, *ih, *cpu;
	_cleanup_free_ char *uri = xasprintf("s3://%s/%s", o->bucket ? o->bucket : "BUCKET", key);
	_cleanup_free_ char *base = o->base_image_arn ? xstrdup(o->base_image_arn) :
	    xasprintf("arn:aws:lambda:%s:aws:microvm-image:al2023-1", region);
	_cleanup_free_ char *ct = xasprintf("sbxtop-setup-%s-%.32s", o->name, key);

	cJSON_AddStringToObject(r, "name", o->name);
	cJSON_AddStringToObject(r, "description", "sbxtop sandboxes: sbxtop-agent " SBX_VERSION);
	cJSON_AddStringToObject(r, "baseImageArn", base);
	cJSON_AddStringToObject(r, "buildRoleArn", o->build_role_arn ? o->build_role_arn :
	    "arn:aws:iam::000000000000:role/ROLE");
	cJSON_AddObjectToObject(r, "codeArtifact");
	cJSON_AddStringToObject(cJSON_GetObjectItem(r, "codeArtifact"), "uri", uri);
	cpu = cJSON_AddArrayToObject(r, "cpuConfigurations");
	cJSON_AddItemToArray(cpu, cJSON_CreateObject());
	cJSON_AddStringToObject(cJSON_GetArrayItem(cpu, 0), "architecture", "ARM_64");
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

static int
image_ready(const cJSON *img)
{
	const char *st = cJSON_GetStringValue(cJSON_GetObjectItem(img, "state"));
	const cJSON *v;

	if (st == NULL || strcmp(st, "CREATED") != 0)
		return 0;
	cJSON_ArrayForEach(v, cJSON_GetObjectItem(img, "versions")) {
		const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(v, "status"));
		if (s && strcmp(s, "ACTIVE") == 0)
			return 1;
	}
	return 0;
}

int
aws_setup(const struct aws_setup_opts *o, FILE *out, struct sbx_err *e)
{
	struct awsmv *c = NULL;
	_cleanup_free_ char *zip = NULL, *key = NULL, *arn = NULL;
	char sha[65];
	cJSON *img = NULL, *req = NULL;
	int m, rc = -1;
	const char *region;

	if (o->name == NULL || strspn(o->name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW"
	    "XYZ0123456789-_") != strlen(o->name) || strlen(o->name) > 64 || !*o->name)
		return sbx_error(e, SBX_EINVAL, NULL, "image name '%s': 1 to 64 letters, digits, "
		    "'-' or '_'", o->name ? o->name : "");
	if ((m = elf_machine(o->bundle_dir)) < 0)
		return sbx_error(e, SBX_ENOTFOUND, "build it with `make agent-bundle`",
		    "no agent bundle at %s", o->bundle_dir);
	if (m != EM_AARCH64 && !o->allow_arch && !o->dry_run)
		return sbx_error(e, SBX_EUNSUPPORTED, "build the agent bundle on an aarch64 host "
		    "(or with Debian's gcc-aarch64-linux-gnu) and pass it with --bundle",
		    "the agent bundle at %s is not aarch64: Lambda MicroVMs run ARM_64 only",
		    o->bundle_dir);
	if (!o->dry_run && (o->bucket == NULL || o->build_role_arn == NULL))
		return sbx_error(e, SBX_EINVAL, "pass --bucket and --build-role-arn (the plan "
		    "printed by --dry-run shows the commands that make them)",
		    "setup aws needs an S3 bucket and a build role");
	if ((c = awsmv_new(o->region, NULL, o->endpoint_url, e)) == NULL)
		return -1;
	region = awsmv_region(c);

	fprintf(out, "plan (region %s, endpoint %s, credentials from %s):\n", region,
	    awsmv_endpoint(c), awsmv_creds_source(c));
	fprintf(out, "  1. build the code artifact: Dockerfile + agent bundle (%s) -> %s/%s.zip\n",
	    m == EM_AARCH64 ? "aarch64" : "NOT aarch64", o->out_dir, o->name);
	fprintf(out, "  2. a private, encrypted S3 bucket (run once):\n"
	    "       aws s3api create-bucket --bucket %s --region %s "
	    "--create-bucket-configuration LocationConstraint=%s\n"
	    "       aws s3api put-public-access-block --bucket %s --public-access-block-"
	    "configuration BlockPublicAcls=true,IgnorePublicAcls=true,BlockPublicPolicy=true,"
	    "RestrictPublicBuckets=true\n"
	    "       aws s3api put-bucket-encryption --bucket %s --server-side-encryption-"
	    "configuration '{\"Rules\":[{\"ApplyServerSideEncryptionByDefault\":"
	    "{\"SSEAlgorithm\":\"AES256\"}}]}'\n",
	    o->bucket ? o->bucket : "BUCKET", region, region, o->bucket ? o->bucket : "BUCKET",
	    o->bucket ? o->bucket : "BUCKET");
	fprintf(out, "  3. a build role Lambda assumes, allowed s3:GetObject on that bucket only: "
	    "%s\n", o->build_role_arn ? o->build_role_arn : "(--build-role-arn)");
	fprintf(out, "  4. upload: aws s3 cp %s/%s.zip s3://%s/sbxtop/%s-SHA.zip\n", o->out_dir,
	    o->name, o->bucket ? o->bucket : "BUCKET", o->name);
	fprintf(out, "  5. CreateMicrovmImage %s (hooks on port %d: ready, validate, run, "
	    "suspend, resume, terminate; agent on %d; ARM_64), then GetMicrovmImage until a "
	    "version is ACTIVE\n", o->name, HOOKS_PORT, AGENT_PORT);

	if (build_artifact(o, &zip, sha, e) < 0)
		goto out;
	key = xasprintf("sbxtop/%s-%.16s.zip", o->name, sha);
	fprintf(out, "artifact: %s (sha256 %s)\n", zip, sha);
	if (o->dry_run) {
		req = image_request(o, region, key);
		char *text = cJSON_Print(req);
		fprintf(out, "CreateMicrovmImage request (dry run, nothing sent):\n%s\n", text);
		free(text);
		rc = 0;
		goto out;
	}

	/* Resumable: an image of this name that exists is kept. */
	if (awsmv_image_get(c, o->name, &img, e) == 0) {
		fprintf(out, "image %s exists: %s\n", o->name,
		    cJSON_GetStringValue(cJSON_GetObjectItem(img, "imageArn")));
	} else if (strcmp(awsmv_last_error(c), "ResourceNotFoundException") != 0) {
		goto out;
	} else {
		fprintf(out, "upload the artifact first: aws s3 cp %s s3://%s/%s\n", zip, o->bucket,
		    key);
		req = image_request(o, region, key);
		if (awsmv_image_create(c, req, &img, e) < 0)
			goto out;
		fprintf(out, "CreateMicrovmImage: %s\n",
		    cJSON_GetStringValue(cJSON_GetObjectItem(img, "imageArn")));
	}
	arn = xstrdup(cJSON_GetStringValue(cJSON_GetObjectItem(img, "imageArn")) ?
	    cJSON_GetStringValue(cJSON_GetObjectItem(img, "imageArn")) : "");
	for (int64_t deadline = now_ms() + (int64_t)o->poll_timeout_s * 1000;;) {
		cJSON_Delete(img);
		img = NULL;
		if (awsmv_image_get(c, arn, &img, e) < 0)
			goto out;
		if (image_ready(img))
			break;
		const char *st = cJSON_GetStringValue(cJSON_GetObjectItem(img, "state"));
		if (st && strstr(st, "FAILED")) {
			sbx_error(e, SBX_EBACKEND, "see the build's logs in CloudWatch; fix and rerun",
			    "the image build failed: %s", st);
			goto out;
		}
		if (now_ms() > deadline) {
			sbx_error(e, SBX_ETIMEOUT, "rerun `sbxtop setup aws`: it picks up where it "
			    "stopped", "the image is still %s", st ? st : "building");
			goto out;
		}
		usleep(500 * 1000);
	}
	fprintf(out, "image: %s\n", arn);
	fprintf(out, "next: add \"lambda_image = %s\" to sbxtop.conf, or export "
	    "SBXTOP_LAMBDA_IMAGE=%s\n", arn, arn);
	rc = 0;
out:
	cJSON_Delete(img);
	cJSON_Delete(req);
	awsmv_free(c);
	return rc;
}
