/* The lambda backend's doctor (see aws-doctor.h).  Every call is a read: Get,
 * List, Head. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "backends/lambda/aws-doctor.h"
#include "backends/lambda/aws-microvms.h"
#include "backends/lambda/aws-s3iam.h"
#include "lib/jspec.h"
#include "lib/util.h"

#define DEFAULT_ROLE	"sbxtop-build"

static void
check_microvms(struct awsmv *c, check_fn report, void *arg)
{
	struct sbx_err e;
	cJSON *all = NULL, *it;
	char detail[256];
	int running = 0, suspended = 0;

	snprintf(detail, sizeof detail, "%s (signed for %s in %s)", awsmv_endpoint(c),
	    AWSMV_SERVICE, awsmv_region(c));
	if (awsmv_ping(c, &e) < 0) {
		report(arg, CHECK_FAIL, "lambda: endpoint (ListMicrovms)", e.msg, e.hint);
		return;
	}
	report(arg, CHECK_OK, "lambda: endpoint (ListMicrovms)", detail, NULL);
	if (awsmv_list(c, &all, &e) < 0) {
		report(arg, CHECK_WARN, "lambda: MicroVMs", e.msg, e.hint);
		return;
	}
	cJSON_ArrayForEach(it, all) {
		const char *st = jstr(it, "state", NULL);
		running += st && strcmp(st, "RUNNING") == 0;
		suspended += st && strcmp(st, "SUSPENDED") == 0;
	}
	snprintf(detail, sizeof detail, "%d in %s (%d running, %d suspended; Lambda bills "
	    "running and suspended MicroVMs)", cJSON_GetArraySize(all), awsmv_region(c), running,
	    suspended);
	report(arg, CHECK_OK, "lambda: MicroVMs", detail, NULL);
	cJSON_Delete(all);
}

/* The image and the version a create would run; *ver gets that version's
 * description (GetMicrovmImageVersion) when there is one. */
static void
check_image(struct awsmv *c, const char *image, const char *want_version, cJSON **ver,
    check_fn report, void *arg)
{
	struct sbx_err e;
	cJSON *img = NULL;
	const char *active, *failed, *st, *v, *vst, *status;
	char detail[512];

	*ver = NULL;
	if (image == NULL) {
		report(arg, CHECK_FAIL, "lambda: image", "lambda_image is not set",
		    "run `sbxtop setup aws`, then set lambda_image to the ARN it prints");
		return;
	}
	if (awsmv_image_get(c, image, &img, &e) < 0) {
		report(arg, CHECK_FAIL, "lambda: image", e.msg,
		    strcmp(awsmv_last_error(c), "ResourceNotFoundException") == 0 ?
		    "run `sbxtop setup aws`" : e.hint);
		return;
	}
	st = jstr(img, "state", NULL);
	active = jstr(img, "latestActiveImageVersion", NULL);
	failed = jstr(img, "latestFailedImageVersion", NULL);
	snprintf(detail, sizeof detail, "%s: %s, %s%s%s%s", image, st ? st : "?",
	    active ? "active version " : "no active version", active ? active : "",
	    failed ? ", failed version " : "", failed ? failed : "");
	report(arg, awsmv_image_usable(img) ? CHECK_OK : CHECK_FAIL, "lambda: image", detail,
	    "wait for the build (`sbxtop setup aws` polls it), or rerun it");
	v = want_version ? want_version : active;
	if (v != NULL && awsmv_image_version_get(c, image, v, ver, &e) < 0) {
		report(arg, CHECK_FAIL, "lambda: image version", e.msg, want_version ?
		    "check lambda_image_version, or leave it empty for the latest active one" :
		    e.hint);
		*ver = NULL;
	} else if (v != NULL) {
		vst = jstr(*ver, "state", NULL);
		status = jstr(*ver, "status", NULL);
		snprintf(detail, sizeof detail, "%s%s: %s, %s", v, want_version ?
		    " (lambda_image_version)" : "", vst ? vst : "?", status ? status : "?");
		report(arg, status && strcmp(status, "ACTIVE") == 0 ? CHECK_OK : CHECK_FAIL,
		    "lambda: image version", detail, "RunMicrovm needs an ACTIVE version: leave "
		    "lambda_image_version empty, or rerun `sbxtop setup aws`");
	}
	cJSON_Delete(img);
}

/* The bucket of the artifact the image was built from (or setup's default). */
static void
check_bucket(struct awsmv *c, const char *uri, const char *account, check_fn report,
    void *arg)
{
	struct sbx_err e;
	struct aws_s3 *s;
	_cleanup_free_ char *bucket = NULL;
	char detail[512], alg[32] = "";
	int rc, priv = 0, enc = 0;
	const char *from = uri ? "the image's code artifact" : "setup's default";

	if (uri && strncmp(uri, "s3://", 5) == 0) {
		const char *slash = strchr(uri + 5, '/');
		bucket = slash ? xstrndup(uri + 5, (size_t)(slash - uri - 5)) : xstrdup(uri + 5);
	} else {
		bucket = xasprintf("sbxtop-%s-%s", account, awsmv_region(c));
	}
	s = aws_s3_new(c, bucket, awsmv_region(c), account);
	rc = aws_s3_bucket_exists(s, &e);
	if (rc == 1) {
		struct sbx_err e2;
		priv = aws_s3_public_blocked(s, &e2) == 1;
		enc = aws_s3_encrypted(s, alg, &e2) == 1;
		snprintf(detail, sizeof detail, "%s (%s): this account's, %s, %s%s%s", bucket, from,
		    priv ? "public access blocked" : "public access NOT blocked",
		    enc ? "encrypted " : "not encrypted", enc ? "with " : "", enc ? alg : "");
		report(arg, priv && enc ? CHECK_OK : CHECK_WARN, "lambda: bucket", detail,
		    "`sbxtop setup aws` blocks public access and turns encryption on");
	} else if (rc == 0) {
		snprintf(detail, sizeof detail, "%s (%s) does not exist", bucket, from);
		report(arg, CHECK_WARN, "lambda: bucket", detail, "only a rebuild of the image "
		    "needs it: `sbxtop setup aws` makes it");
	} else {
		report(arg, CHECK_WARN, "lambda: bucket", e.msg, e.hint);
	}
	aws_s3_free(s);
}

static void
check_role(struct awsmv *c, const char *role_arn, check_fn report, void *arg)
{
	struct sbx_err e;
	const char *name = role_arn && strrchr(role_arn, '/') ? strrchr(role_arn, '/') + 1 :
	    DEFAULT_ROLE;
	_cleanup_free_ char *arn = NULL, *trust = NULL;
	char detail[512];
	int rc = aws_iam_role_get(c, name, &arn, &trust, &e);

	if (rc == 1 && trust && strstr(trust, "lambda.amazonaws.com")) {
		snprintf(detail, sizeof detail, "%s (%s): Lambda may assume it", arn ? arn : name,
		    role_arn ? "the image's build role" : "setup's default");
		report(arg, CHECK_OK, "lambda: build role", detail, NULL);
	} else if (rc == 1) {
		snprintf(detail, sizeof detail, "%s: its trust policy does not name "
		    "lambda.amazonaws.com", arn ? arn : name);
		report(arg, CHECK_WARN, "lambda: build role", detail, "image builds cannot assume "
		    "it: let lambda.amazonaws.com call sts:AssumeRole and sts:TagSession");
	} else if (rc == 0) {
		snprintf(detail, sizeof detail, "%s does not exist", name);
		report(arg, CHECK_WARN, "lambda: build role", detail, "only a rebuild of the "
		    "image needs it: `sbxtop setup aws` makes it");
	} else {
		report(arg, CHECK_WARN, "lambda: build role", e.msg, e.hint);
	}
}

void
aws_doctor(const char *image, const char *image_version, const char *region,
    const char *endpoint, check_fn report, void *arg)
{
	struct sbx_err e;
	struct awsmv *c = awsmv_new(region, image, endpoint, &e);
	char detail[512], account[13] = "";
	char *arn = NULL;
	cJSON *ver = NULL;
	int64_t exp;

	if (c == NULL) {
		report(arg, CHECK_FAIL, "lambda: credentials and region", e.msg, e.hint);
		return;
	}
	if ((exp = awsmv_creds_expiry(c)) > 0) {
		time_t t = (time_t)(exp / 1000);
		struct tm tm;
		char when[32];
		gmtime_r(&t, &tm);
		strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
		snprintf(detail, sizeof detail, "%s; temporary, until %s (fetched again before)",
		    awsmv_creds_source(c), when);
	} else {
		snprintf(detail, sizeof detail, "%s", awsmv_creds_source(c));
	}
	report(arg, CHECK_OK, "lambda: credentials", detail, NULL);
	snprintf(detail, sizeof detail, "%s (from %s)", awsmv_region(c), awsmv_region_source(c));
	report(arg, CHECK_OK, "lambda: region", detail, NULL);
	if (awsmv_whoami(c, &arn, &e) < 0) {
		report(arg, CHECK_FAIL, "lambda: STS GetCallerIdentity", e.msg, e.hint);
	} else {
		report(arg, CHECK_OK, "lambda: identity", arn, NULL);
		if (awsmv_arn_account(arn, account) < 0)
			account[0] = '\0';
	}
	free(arn);
	check_microvms(c, report, arg);
	check_image(c, image, image_version, &ver, report, arg);
	if (account[0]) {
		check_bucket(c, cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(ver,
		    "codeArtifact"), "uri")), account, report, arg);
		check_role(c, jstr(ver, "buildRoleArn", NULL), report, arg);
	}
	cJSON_Delete(ver);
	awsmv_free(c);
}
