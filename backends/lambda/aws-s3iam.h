/* The S3 and IAM calls `sbxtop setup aws` makes, signed by backends/lambda/aws-microvms.c's
 * client: a private, encrypted bucket for the code artifact, the upload, and the
 * build role Lambda assumes.  Each "is it done" check is read-only, so setup can
 * say what it would do (--dry-run) and pick up where an interrupted run stopped.
 *
 * S3: signed as S3 ("s3", the bucket's region, the payload hash signed); the
 * endpoint is AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL (path-style requests:
 * ENDPOINT/BUCKET/KEY), else https://BUCKET.s3.REGION.amazonaws.com.  Every
 * request names the expected bucket owner, so a bucket of the same name in
 * another account is never written to.
 * IAM: the Query protocol (form POST, Version 2010-05-08, XML answers), global:
 * signed for us-east-1 at AWS_ENDPOINT_URL_IAM, else AWS_ENDPOINT_URL, else
 * https://iam.amazonaws.com. */
#ifndef SBX_AWS_S3IAM_H
#define SBX_AWS_S3IAM_H

#include <stddef.h>

#include "backends/lambda/aws-microvms.h"
#include "lib/err.h"

/* 1 when name is a bucket name S3 accepts and virtual-hosted HTTPS can reach:
 * 3-63 of a-z 0-9 '-', starting and ending with a letter or digit, no "xn--"
 * prefix or "-s3alias"/"--ol-s3" suffix (dots are refused: they break TLS). */
int aws_s3_bucket_name_ok(const char *name);

struct aws_s3;

/* A handle on one bucket of owner's (12 digits) in region, over c. */
struct aws_s3 *aws_s3_new(struct awsmv *c, const char *bucket, const char *region,
    const char *owner);
void aws_s3_free(struct aws_s3 *s);
const char *aws_s3_endpoint(const struct aws_s3 *s);

/* HeadBucket: 1 it exists and is ours, 0 there is no such bucket; -1 with e when
 * it belongs to another account (or these credentials may not see it), is in
 * another region, or the call failed. */
int aws_s3_bucket_exists(struct aws_s3 *s, struct sbx_err *e);
/* CreateBucket (LocationConstraint outside us-east-1, object ownership enforced:
 * no ACLs).  A bucket of ours that already exists is success. */
int aws_s3_bucket_create(struct aws_s3 *s, struct sbx_err *e);
/* GetPublicAccessBlock: 1 all four settings true, 0 not (or none set), -1. */
int aws_s3_public_blocked(struct aws_s3 *s, struct sbx_err *e);
/* PutPublicAccessBlock with all four settings true. */
int aws_s3_block_public(struct aws_s3 *s, struct sbx_err *e);
/* GetBucketEncryption: 1 default encryption is on (alg gets "AES256",
 * "aws:kms", ...), 0 none, -1. */
int aws_s3_encrypted(struct aws_s3 *s, char alg[32], struct sbx_err *e);
/* PutBucketEncryption: SSE-S3 (AES256) by default, with the bucket key. */
int aws_s3_encrypt(struct aws_s3 *s, struct sbx_err *e);
/* HeadObject: 1 key exists and its x-amz-meta-sha256 is sha_hex, 0 not, -1. */
int aws_s3_object_is(struct aws_s3 *s, const char *key, const char *sha_hex,
    struct sbx_err *e);
/* PutObject of len bytes, with x-amz-checksum-sha256 (S3 checks it) and the hex
 * digest as x-amz-meta-sha256 (for aws_s3_object_is). */
int aws_s3_object_put(struct aws_s3 *s, const char *key, const void *data, size_t len,
    const char *sha_hex, struct sbx_err *e);

/* The IAM endpoint in use. */
char *aws_iam_endpoint(void);
/* GetRole: 1 with *arn and *trust (the trust policy, decoded JSON text; either
 * may be NULL to skip), 0 no such role, -1. */
int aws_iam_role_get(struct awsmv *c, const char *role, char **arn, char **trust,
    struct sbx_err *e);
/* CreateRole with the trust policy; *arn gets the new role's ARN. */
int aws_iam_role_create(struct awsmv *c, const char *role, const char *trust,
    const char *description, char **arn, struct sbx_err *e);
/* GetRolePolicy: 1 with *doc (decoded JSON text), 0 no such policy, -1. */
int aws_iam_role_policy_get(struct awsmv *c, const char *role, const char *policy,
    char **doc, struct sbx_err *e);
/* PutRolePolicy (creates or replaces the inline policy). */
int aws_iam_role_policy_put(struct awsmv *c, const char *role, const char *policy,
    const char *doc, struct sbx_err *e);

#endif
