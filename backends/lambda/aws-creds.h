/* AWS credentials, region and endpoint, found the way the AWS CLI and SDKs find
 * them, so a user's existing setup just works:
 *   1. AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (/ AWS_SESSION_TOKEN);
 *   2. the profile (AWS_PROFILE, else "default") in the shared credentials file
 *      (AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials) and config file
 *      (AWS_CONFIG_FILE, else ~/.aws/config), in botocore's order: an assume-role
 *      profile (role_arn with source_profile or credential_source; external_id,
 *      role_session_name, duration_seconds; mfa_serial is refused) through STS
 *      AssumeRole; web identity (AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN, or
 *      the profile's web_identity_token_file) through AssumeRoleWithWebIdentity;
 *      IAM Identity Center (sso_session, or the older sso_start_url) with the
 *      token `aws sso login` cached in ~/.aws/sso/cache; the credentials file's
 *      keys; credential_process (JSON Version 1 on stdout); the config file's keys;
 *   3. container credentials (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or
 *      _FULL_URI, with AWS_CONTAINER_AUTHORIZATION_TOKEN[_FILE]);
 *   4. EC2 instance metadata, IMDSv2 only (token PUT, then GETs), at
 *      AWS_EC2_METADATA_SERVICE_ENDPOINT or 169.254.169.254; skipped when
 *      AWS_EC2_METADATA_DISABLED=true.
 * Secrets are never logged and are wiped when freed. */
#ifndef SBX_AWS_CREDS_H
#define SBX_AWS_CREDS_H

#include "backends/lambda/aws.h"
#include "lib/err.h"

/* The profile in use: AWS_PROFILE, AWS_DEFAULT_PROFILE, else "default". */
const char *aws_profile_name(void);

/* Find credentials along the chain.  -1 with SBX_EDENIED and a hint naming the
 * places looked at when there are none; a source that is configured but broken
 * (a failing credential_process, malformed JSON, expired keys) is an error, not
 * skipped, as the AWS CLI does. */
int aws_creds_load(struct aws_creds *c, struct sbx_err *e);

/* A value of the current profile from the config file (the credentials file for
 * the aws_* keys), or NULL; caller frees. */
char *aws_profile_get(const char *key);

/* The region: flag_region when given, else the region of image_arn
 * ("arn:aws:lambda:REGION:..."), else AWS_REGION, AWS_DEFAULT_REGION, else the
 * profile's region.  *from says which ("flag", "image ARN", "AWS_REGION", ...).
 * -1 with SBX_EINVAL and a hint when none is set; caller frees *out. */
int aws_region_resolve(const char *flag_region, const char *image_arn, char **out,
    const char **from, struct sbx_err *e);

#endif
