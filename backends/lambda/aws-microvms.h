/* A client of the AWS Lambda MicroVMs API (2025-09-09, REST/JSON) over libcurl, signed with backends/lambda/sigv4.c, credentials from backends/lambda/aws-creds.c.
 * Throttling (429) is retried with backoff for every call (a throttled request was
 * not carried out); 5xx answers and network errors only for idempotent calls.
 * AWS errors become struct sbx_err with the exception name and a hint. */
#ifndef SBX_AWS_MICROVMS_H
#define SBX_AWS_MICROVMS_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "lib/buf.h"
#include "lib/err.h"
#include "backends/lambda/sigv4.h"

#define AWSMV_API		"/2025-09-09"
/* As the service's model (the official SDKs) defines them: SigV4 signing name
 * "lambda", endpoint https://lambda.REGION.amazonaws.com (the endpoint rules'
 * dnsSuffix of the region's partition), and the service id "Lambda Microvms",
 * whence AWS_ENDPOINT_URL_LAMBDA_MICROVMS. */
#define AWSMV_SERVICE		"lambda"		/* SigV4 signing name */
#define AWSMV_HOST		"lambda"		/* host prefix of the endpoint */
#define AWSMV_ENDPOINT_ENV	"LAMBDA_MICROVMS"	/* AWS_ENDPOINT_URL_<this> */
#define AWSMV_RUN_PAYLOAD_MAX	4096			/* runHookPayload bytes */
#define AWSMV_MAX_DURATION	28800			/* maximumDurationInSeconds */

struct awsmv;

/* A client: credentials from the chain, region from region_flag, the image ARN,
 * or the environment, endpoint from endpoint_flag or AWS_ENDPOINT_URL[_LAMBDA_MICROVMS]. */
struct awsmv *awsmv_new(const char *region_flag, const char *image_arn,
    const char *endpoint_flag, struct sbx_err *e);
void awsmv_free(struct awsmv *c);
const char *awsmv_region(const struct awsmv *c);
const char *awsmv_region_source(const struct awsmv *c);
const char *awsmv_endpoint(const struct awsmv *c);
const char *awsmv_creds_source(const struct awsmv *c);
/* When the credentials in use expire (wall ms), 0 for long-term keys. */
int64_t awsmv_creds_expiry(const struct awsmv *c);
/* The AWS exception name of the last failed call ("ConflictException"), or "". */
const char *awsmv_last_error(const struct awsmv *c);
/* Backoff base for retries, ms (tests shorten it). */
void awsmv_set_backoff(struct awsmv *c, int ms);

/* One signed call: op names it in errors ("RunMicrovm"); query is NULL or pairs
 * of raw key, value strings ending with NULL; body may be NULL.  *out (may be
 * NULL) gets the JSON answer (NULL for an empty one).  0, or -1 with e. */
int awsmv_call(struct awsmv *c, const char *op, const char *method, const char *path,
    const char *const *query, const cJSON *body, int idempotent, cJSON **out,
    struct sbx_err *e);

/* One signed request to any AWS service with this client's credentials (S3 and
 * IAM for `setup aws`).  Fill the inputs; status, header_value and answer are
 * filled.  AWS errors, JSON (__type/message, x-amzn-ErrorType) or XML
 * (<Code>/<Message>), become e with a hint naming action; awsmv_last_error()
 * then names the code ("NoSuchBucket", or "NotFound"/"Forbidden" for a HEAD). */
struct aws_http {
	const char			*service;	/* signing name: "s3", "iam", ... */
	const char			*region;	/* signing region; NULL: the client's */
	const char			*endpoint;	/* base URL; NULL: the client's */
	const char			*op;		/* for messages: "CreateBucket" */
	const char			*action;	/* for hints: "s3:CreateBucket" */
	const char			*method;
	const char			*path;		/* as on the wire */
	const char *const		*query;		/* raw key, value pairs, NULL-ended;
							 * a NULL value leaves the pair out */
	const struct sigv4_header	*headers;	/* sent and signed */
	size_t				 nheaders;
	const void			*body;
	size_t				 body_len;
	const char			*payload_hash;	/* hex SHA-256 of body when known */
	int				 s3;		/* S3's signing rules */
	int				 idempotent;	/* retry 5xx and network errors */
	const char			*want_header;	/* a response header to keep */
	/* out */
	long				 status;	/* 0: nothing answered */
	char				 header_value[128];
	struct buf			*answer;	/* the body; the caller inits it */
};
int awsmv_http(struct awsmv *c, struct aws_http *r, struct sbx_err *e);

int awsmv_run(struct awsmv *c, const cJSON *req, cJSON **out, struct sbx_err *e);
int awsmv_get(struct awsmv *c, const char *id, cJSON **out, struct sbx_err *e);
/* Every MicroVM, all pages, as one JSON array of MicrovmItem in *out. */
int awsmv_list(struct awsmv *c, cJSON **out, struct sbx_err *e);
/* A read-only reachability check: ListMicrovms with maxResults 1. */
int awsmv_ping(struct awsmv *c, struct sbx_err *e);
/* action: "suspend", "resume" (POST .../{id}/ACTION) or "terminate" (DELETE .../{id}). */
int awsmv_action(struct awsmv *c, const char *id, const char *action, struct sbx_err *e);
/* CreateMicrovmAuthToken with allowedPorts = the nports ports given (each a
 * {"port": N}); *token is the X-aws-proxy-auth value. */
int awsmv_auth_token(struct awsmv *c, const char *id, const int *ports, size_t nports,
    int minutes, char **token, struct sbx_err *e);
/* CreateMicrovmShellAuthToken: *token is the answer's authToken map (caller
 * frees), each key a header to send to the endpoint as is. */
int awsmv_shell_token(struct awsmv *c, const char *id, int minutes, cJSON **token,
    struct sbx_err *e);
/* An image is usable when it is CREATED or UPDATED and names a
 * latestActiveImageVersion (GetMicrovmImage's answer). */
int awsmv_image_usable(const cJSON *img);
/* AWS_CA_BUNDLE: the PEM file that AWS's TLS certificates (API and MicroVM
 * endpoints) are verified against instead of the system's store; NULL when unset. */
const char *awsmv_ca_bundle(void);
int awsmv_image_get(struct awsmv *c, const char *ident, cJSON **out, struct sbx_err *e);
/* GetMicrovmImageVersion: buildRoleArn, codeArtifact, state, status, ... */
int awsmv_image_version_get(struct awsmv *c, const char *ident, const char *version,
    cJSON **out, struct sbx_err *e);
/* ListMicrovmImageBuilds of one version, every page: a JSON array of
 * MicrovmImageBuildSummary (buildState, stateReason, architecture, ...). */
int awsmv_image_builds(struct awsmv *c, const char *ident, const char *version,
    cJSON **out, struct sbx_err *e);
int awsmv_image_create(struct awsmv *c, const cJSON *req, cJSON **out, struct sbx_err *e);
/* STS GetCallerIdentity: the caller's ARN (caller frees). */
int awsmv_whoami(struct awsmv *c, char **arn, struct sbx_err *e);
/* The 12-digit account of a caller ARN ("arn:aws:iam::123456789012:user/x") into
 * out; -1 when the ARN has none. */
int awsmv_arn_account(const char *arn, char out[13]);

#endif
