/* S3 and IAM calls of `sbxtop setup aws` (see aws-s3iam.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "backends/lambda/aws-s3iam.h"
#include "backends/lambda/aws-xml.h"
#include "lib/b64.h"
#include "lib/buf.h"
#include "lib/util.h"

#define S3_NS		"http://s3.amazonaws.com/doc/2006-03-01/"
#define ANSWER_MAX	(1u << 20)
#define POLICY_MAX	(64u << 10)	/* a policy document, percent-encoded */
#define IAM_REGION	"us-east-1"	/* IAM is global: signed for us-east-1 */

struct aws_s3 {
	struct awsmv	*c;
	char		*bucket;
	char		*region;
	char		*owner;
	char		*endpoint;
	int		 path_style;	/* ENDPOINT/BUCKET/KEY rather than BUCKET.HOST/KEY */
};

int
aws_s3_bucket_name_ok(const char *n)
{
	size_t l = strlen(n);

	if (l < 3 || l > 63 || strspn(n, "abcdefghijklmnopqrstuvwxyz0123456789-") != l)
		return 0;
	if (n[0] == '-' || n[l - 1] == '-' || strncmp(n, "xn--", 4) == 0 ||
	    strncmp(n, "sthree-", 7) == 0)
		return 0;
	if ((l > 8 && strcmp(n + l - 8, "-s3alias") == 0) ||
	    (l > 7 && strcmp(n + l - 7, "--ol-s3") == 0))
		return 0;
	return 1;
}

static const char *
env_nonempty(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

struct aws_s3 *
aws_s3_new(struct awsmv *c, const char *bucket, const char *region, const char *owner)
{
	struct aws_s3 *s = xcalloc(1, sizeof *s);
	const char *ov = env_nonempty("AWS_ENDPOINT_URL_S3");

	if (ov == NULL)
		ov = env_nonempty("AWS_ENDPOINT_URL");
	s->c = c;
	s->bucket = xstrdup(bucket);
	s->region = xstrdup(region);
	s->owner = xstrdup(owner);
	if (ov) {
		s->endpoint = xstrdup(ov);
		while (*s->endpoint && s->endpoint[strlen(s->endpoint) - 1] == '/')
			s->endpoint[strlen(s->endpoint) - 1] = '\0';
		s->path_style = 1;
	} else {
		s->endpoint = xasprintf("https://%s.s3.%s.amazonaws.com", bucket, region);
	}
	return s;
}

void
aws_s3_free(struct aws_s3 *s)
{
	if (s == NULL)
		return;
	free(s->bucket);
	free(s->region);
	free(s->owner);
	free(s->endpoint);
	free(s);
}

const char *
aws_s3_endpoint(const struct aws_s3 *s)
{
	return s->endpoint;
}

struct s3call {
	const char			*op;
	const char			*action;
	const char			*method;
	const char			*key;		/* NULL: the bucket itself */
	const char			*sub;		/* "?publicAccessBlock" and the like */
	const struct sigv4_header	*headers;
	size_t				 nheaders;
	const void			*body;
	size_t				 body_len;
	const char			*sha;		/* hex SHA-256 of body, when known */
	const char			*want;
	int				 no_owner;	/* CreateBucket: no owner to expect yet */
	long				 status;
	char				 value[128];
};

static int
s3_call(struct aws_s3 *s, struct s3call *x, struct buf *ans, struct sbx_err *e)
{
	struct sigv4_header h[SIGV4_MAX_HEADERS];
	size_t nh = 0;
	_cleanup_free_ char *key = x->key ? sigv4_escape(x->key, 1) : NULL;
	_cleanup_free_ char *path = s->path_style ?
	    xasprintf("/%s%s%s", s->bucket, key ? "/" : "", key ? key : "") :
	    xasprintf("/%s", key ? key : "");
	const char *query[] = { x->sub, "", NULL };
	struct aws_http r = {
		.service = "s3", .region = s->region, .endpoint = s->endpoint, .op = x->op,
		.action = x->action, .method = x->method, .path = path,
		.query = x->sub ? query : NULL, .headers = h, .body = x->body,
		.body_len = x->body_len, .payload_hash = x->sha, .s3 = 1, .idempotent = 1,
		.want_header = x->want, .answer = ans,
	};
	int rc;

	for (size_t i = 0; i < x->nheaders && nh < SIGV4_MAX_HEADERS - 3; i++)
		h[nh++] = x->headers[i];
	if (!x->no_owner) {
		/* S3 refuses (403) a bucket that is not this account's. */
		h[nh].name = "x-amz-expected-bucket-owner";
		h[nh++].value = s->owner;
	}
	r.nheaders = nh;
	rc = awsmv_http(s->c, &r, e);
	x->status = r.status;
	snprintf(x->value, sizeof x->value, "%s", r.header_value);
	return rc;
}

/* Content-MD5 of a body (S3 wants it on its configuration PUTs). */
static char *
md5_b64(const void *p, size_t n)
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int dl = 0;

	if (EVP_Digest(p, n, d, &dl, EVP_md5(), NULL) != 1)
		fatal("MD5 failed");
	return b64_encode(d, dl);
}

static char *
sha256_b64(const void *p, size_t n)
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int dl = 0;

	if (EVP_Digest(p, n, d, &dl, EVP_sha256(), NULL) != 1)
		fatal("SHA-256 failed");
	return b64_encode(d, dl);
}

int
aws_s3_bucket_exists(struct aws_s3 *s, struct sbx_err *e)
{
	struct s3call x = { .op = "HeadBucket", .action = "s3:ListBucket", .method = "HEAD",
	    .want = "x-amz-bucket-region" };
	struct buf b;
	int rc;

	buf_init(&b, ANSWER_MAX);
	rc = s3_call(s, &x, &b, e);
	buf_free(&b);
	if (rc == 0)
		return 1;
	if (x.status == 404)
		return 0;
	if (x.status == 403)
		return sbx_error(e, SBX_EDENIED, "choose another name with --bucket, or check "
		    "that these credentials may s3:ListBucket it", "S3 bucket %s exists but is "
		    "not account %s's (or these credentials may not see it)", s->bucket, s->owner);
	if (x.status == 301) {
		sbx_error(e, SBX_EINVAL, NULL, "S3 bucket %s is in region %s, not %s", s->bucket,
		    x.value[0] ? x.value : "another", s->region);
		snprintf(e->hint, sizeof e->hint, "run setup with --region %s, or choose another "
		    "bucket with --bucket", x.value[0] ? x.value : "(its region)");
		return -1;
	}
	return -1;
}

int
aws_s3_bucket_create(struct aws_s3 *s, struct sbx_err *e)
{
	struct sigv4_header h[] = { { "x-amz-object-ownership", "BucketOwnerEnforced" },
	    { "Content-Type", "application/xml" } };
	_cleanup_free_ char *body = NULL;
	struct s3call x = { .op = "CreateBucket", .action = "s3:CreateBucket", .method = "PUT",
	    .headers = h, .nheaders = 1, .no_owner = 1 };
	struct buf b;
	int rc;

	/* us-east-1 takes no LocationConstraint; every other region needs its own. */
	if (strcmp(s->region, "us-east-1") != 0) {
		body = xasprintf("<CreateBucketConfiguration xmlns=\"" S3_NS "\">"
		    "<LocationConstraint>%s</LocationConstraint></CreateBucketConfiguration>",
		    s->region);
		x.body = body;
		x.body_len = strlen(body);
		x.nheaders = 2;
	}
	buf_init(&b, ANSWER_MAX);
	rc = s3_call(s, &x, &b, e);
	buf_free(&b);
	if (rc < 0 && strcmp(awsmv_last_error(s->c), "BucketAlreadyOwnedByYou") == 0)
		return 0;
	if (rc < 0 && strcmp(awsmv_last_error(s->c), "BucketAlreadyExists") == 0)
		snprintf(e->hint, sizeof e->hint, "bucket names are global: choose another with "
		    "--bucket");
	return rc;
}

int
aws_s3_public_blocked(struct aws_s3 *s, struct sbx_err *e)
{
	static const char *const f[] = { "BlockPublicAcls", "IgnorePublicAcls",
	    "BlockPublicPolicy", "RestrictPublicBuckets" };
	struct s3call x = { .op = "GetPublicAccessBlock",
	    .action = "s3:GetBucketPublicAccessBlock", .method = "GET",
	    .sub = "publicAccessBlock" };
	struct buf b;
	int rc;

	buf_init(&b, ANSWER_MAX);
	if (s3_call(s, &x, &b, e) < 0) {
		buf_free(&b);
		return strcmp(awsmv_last_error(s->c), "NoSuchPublicAccessBlockConfiguration") == 0 ?
		    0 : -1;
	}
	rc = 1;
	for (size_t i = 0; i < ARRAY_SIZE(f); i++) {
		char v[16];
		if (aws_xml_text(b.data, b.len, f[i], v, sizeof v) != 1 || strcmp(v, "true") != 0)
			rc = 0;
	}
	buf_free(&b);
	return rc;
}

static int
put_config(struct aws_s3 *s, const char *op, const char *action, const char *sub,
    const char *body, struct sbx_err *e)
{
	_cleanup_free_ char *md5 = md5_b64(body, strlen(body));
	struct sigv4_header h[] = { { "Content-MD5", md5 }, { "Content-Type", "application/xml" } };
	struct s3call x = { .op = op, .action = action, .method = "PUT", .sub = sub,
	    .headers = h, .nheaders = 2, .body = body, .body_len = strlen(body) };
	struct buf b;
	int rc;

	buf_init(&b, ANSWER_MAX);
	rc = s3_call(s, &x, &b, e);
	buf_free(&b);
	return rc;
}

int
aws_s3_block_public(struct aws_s3 *s, struct sbx_err *e)
{
	return put_config(s, "PutPublicAccessBlock", "s3:PutBucketPublicAccessBlock",
	    "publicAccessBlock", "<PublicAccessBlockConfiguration xmlns=\"" S3_NS "\">"
	    "<BlockPublicAcls>true</BlockPublicAcls><IgnorePublicAcls>true</IgnorePublicAcls>"
	    "<BlockPublicPolicy>true</BlockPublicPolicy>"
	    "<RestrictPublicBuckets>true</RestrictPublicBuckets>"
	    "</PublicAccessBlockConfiguration>", e);
}

int
aws_s3_encrypted(struct aws_s3 *s, char alg[32], struct sbx_err *e)
{
	struct s3call x = { .op = "GetBucketEncryption",
	    .action = "s3:GetEncryptionConfiguration", .method = "GET", .sub = "encryption" };
	struct buf b;
	int rc;

	alg[0] = '\0';
	buf_init(&b, ANSWER_MAX);
	if (s3_call(s, &x, &b, e) < 0) {
		buf_free(&b);
		return strcmp(awsmv_last_error(s->c),
		    "ServerSideEncryptionConfigurationNotFoundError") == 0 ? 0 : -1;
	}
	rc = aws_xml_text(b.data, b.len, "SSEAlgorithm", alg, 32) == 1 && alg[0] ? 1 : 0;
	buf_free(&b);
	return rc;
}

int
aws_s3_encrypt(struct aws_s3 *s, struct sbx_err *e)
{
	return put_config(s, "PutBucketEncryption", "s3:PutEncryptionConfiguration",
	    "encryption", "<ServerSideEncryptionConfiguration xmlns=\"" S3_NS "\"><Rule>"
	    "<ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm>"
	    "</ApplyServerSideEncryptionByDefault></Rule></ServerSideEncryptionConfiguration>", e);
}

int
aws_s3_object_is(struct aws_s3 *s, const char *key, const char *sha_hex, struct sbx_err *e)
{
	struct s3call x = { .op = "HeadObject", .action = "s3:GetObject", .method = "HEAD",
	    .key = key, .want = "x-amz-meta-sha256" };
	struct buf b;
	int rc;

	buf_init(&b, ANSWER_MAX);
	rc = s3_call(s, &x, &b, e);
	buf_free(&b);
	if (rc < 0)
		return x.status == 404 ? 0 : -1;
	return strcmp(x.value, sha_hex) == 0;
}

int
aws_s3_object_put(struct aws_s3 *s, const char *key, const void *data, size_t len,
    const char *sha_hex, struct sbx_err *e)
{
	_cleanup_free_ char *sum = sha256_b64(data, len);
	struct sigv4_header h[] = { { "Content-Type", "application/zip" },
	    { "x-amz-checksum-sha256", sum }, { "x-amz-meta-sha256", sha_hex } };
	struct s3call x = { .op = "PutObject", .action = "s3:PutObject", .method = "PUT",
	    .key = key, .headers = h, .nheaders = 3, .body = data, .body_len = len,
	    .sha = sha_hex };
	struct buf b;
	int rc;

	buf_init(&b, ANSWER_MAX);
	rc = s3_call(s, &x, &b, e);
	buf_free(&b);
	return rc;
}

/* ---- IAM ------------------------------------------------------------------ */

char *
aws_iam_endpoint(void)
{
	const char *v = env_nonempty("AWS_ENDPOINT_URL_IAM");
	char *r;

	if (v == NULL)
		v = env_nonempty("AWS_ENDPOINT_URL");
	r = xstrdup(v ? v : "https://iam.amazonaws.com");
	while (*r && r[strlen(r) - 1] == '/')
		r[strlen(r) - 1] = '\0';
	return r;
}

/* One Query-protocol call: kv are raw name, value pairs ending with NULL. */
static int
iam_call(struct awsmv *c, const char *action, const char *const *kv, struct buf *ans,
    struct sbx_err *e)
{
	_cleanup_free_ char *ep = aws_iam_endpoint();
	_cleanup_free_ char *perm = xasprintf("iam:%s", action);
	struct sigv4_header h[] = { { "Content-Type",
	    "application/x-www-form-urlencoded; charset=utf-8" } };
	struct buf body;
	int rc;

	buf_init(&body, 4 * POLICY_MAX);
	buf_printf(&body, "Action=%s&Version=2010-05-08", action);
	for (; kv[0]; kv += 2) {
		_cleanup_free_ char *v = sigv4_escape(kv[1], 0);
		if (buf_printf(&body, "&%s=%s", kv[0], v) < 0) {
			buf_free(&body);
			return sbx_error(e, SBX_EINVAL, NULL, "IAM %s: request too large", action);
		}
	}
	struct aws_http r = {
		.service = "iam", .region = IAM_REGION, .endpoint = ep, .op = action,
		.action = perm, .method = "POST", .path = "/", .headers = h, .nheaders = 1,
		.body = body.data, .body_len = body.len,
		/* Reads, and writes that fail harmlessly when repeated. */
		.idempotent = strncmp(action, "Get", 3) == 0 || strncmp(action, "Put", 3) == 0,
		.answer = ans,
	};
	rc = awsmv_http(c, &r, e);
	buf_free(&body);
	return rc;
}

/* The decoded text of <tag> inside <parent>, or NULL. */
static char *
xml_doc(const struct buf *b, const char *parent, const char *tag)
{
	char *v = xmalloc(POLICY_MAX);

	if (aws_xml_text_in(b->data, b->len, parent, tag, v, POLICY_MAX) != 1 ||
	    aws_pct_decode(v, 0) < 0) {
		free(v);
		return NULL;
	}
	return v;
}

int
aws_iam_role_get(struct awsmv *c, const char *role, char **arn, char **trust,
    struct sbx_err *e)
{
	const char *kv[] = { "RoleName", role, NULL };
	struct buf b;
	char a[2048];

	if (arn)
		*arn = NULL;
	if (trust)
		*trust = NULL;
	buf_init(&b, ANSWER_MAX);
	if (iam_call(c, "GetRole", kv, &b, e) < 0) {
		buf_free(&b);
		return strcmp(awsmv_last_error(c), "NoSuchEntity") == 0 ? 0 : -1;
	}
	if (aws_xml_text_in(b.data, b.len, "Role", "Arn", a, sizeof a) != 1 || !a[0]) {
		buf_free(&b);
		return sbx_error(e, SBX_EBACKEND, NULL, "IAM GetRole: no Arn in the answer");
	}
	if (arn)
		*arn = xstrdup(a);
	if (trust)
		*trust = xml_doc(&b, "Role", "AssumeRolePolicyDocument");
	buf_free(&b);
	return 1;
}

int
aws_iam_role_create(struct awsmv *c, const char *role, const char *trust,
    const char *description, char **arn, struct sbx_err *e)
{
	const char *kv[] = { "RoleName", role, "AssumeRolePolicyDocument", trust,
	    "Description", description, "Path", "/", NULL };
	struct buf b;
	char a[2048];
	int rc;

	*arn = NULL;
	buf_init(&b, ANSWER_MAX);
	rc = iam_call(c, "CreateRole", kv, &b, e);
	if (rc == 0) {
		if (aws_xml_text_in(b.data, b.len, "Role", "Arn", a, sizeof a) == 1 && a[0])
			*arn = xstrdup(a);
		else
			rc = sbx_error(e, SBX_EBACKEND, NULL, "IAM CreateRole: no Arn in the answer");
	}
	buf_free(&b);
	return rc;
}

int
aws_iam_role_policy_get(struct awsmv *c, const char *role, const char *policy, char **doc,
    struct sbx_err *e)
{
	const char *kv[] = { "RoleName", role, "PolicyName", policy, NULL };
	struct buf b;

	*doc = NULL;
	buf_init(&b, ANSWER_MAX);
	if (iam_call(c, "GetRolePolicy", kv, &b, e) < 0) {
		buf_free(&b);
		return strcmp(awsmv_last_error(c), "NoSuchEntity") == 0 ? 0 : -1;
	}
	*doc = xml_doc(&b, "GetRolePolicyResult", "PolicyDocument");
	buf_free(&b);
	if (*doc == NULL)
		return sbx_error(e, SBX_EBACKEND, NULL, "IAM GetRolePolicy: no PolicyDocument "
		    "in the answer");
	return 1;
}

int
aws_iam_role_policy_put(struct awsmv *c, const char *role, const char *policy,
    const char *doc, struct sbx_err *e)
{
	const char *kv[] = { "RoleName", role, "PolicyName", policy, "PolicyDocument", doc,
	    NULL };
	struct buf b;
	int rc;

	buf_init(&b, ANSWER_MAX);
	rc = iam_call(c, "PutRolePolicy", kv, &b, e);
	buf_free(&b);
	return rc;
}
