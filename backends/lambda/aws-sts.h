/* The credential sources that ask AWS for temporary credentials: STS AssumeRole
 * (assume-role profiles: role_arn with source_profile or credential_source),
 * STS AssumeRoleWithWebIdentity (AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN, or a
 * profile's web_identity_token_file: EKS IRSA, CI OIDC tokens), and IAM Identity
 * Center's GetRoleCredentials with the token `aws sso login` cached (and OIDC
 * CreateToken to refresh it).  Endpoints: AWS_ENDPOINT_URL_STS /
 * AWS_ENDPOINT_URL_SSO / AWS_ENDPOINT_URL_SSO_OIDC, else AWS_ENDPOINT_URL, else
 * the region's (sts.REGION.SUFFIX, portal.sso.REGION.SUFFIX, oidc.REGION.SUFFIX),
 * as the SDKs name them. */
#ifndef SBX_AWS_STS_H
#define SBX_AWS_STS_H

#include <stdint.h>

#include "backends/lambda/aws.h"
#include "lib/err.h"

struct aws_assume {
	const char	*role_arn;
	const char	*session_name;	/* NULL: "sbxtop-<unix time>" */
	const char	*external_id;	/* NULL: none */
	int		 duration_s;	/* 0: STS's default (1 hour) */
	const char	*region;	/* of the STS endpoint; NULL: us-east-1 */
};

/* STS AssumeRole signed with src; out gets the role's credentials and their
 * expiry.  AWS's error code and message become e. */
int aws_sts_assume_role(const struct aws_creds *src, const struct aws_assume *a,
    struct aws_creds *out, struct sbx_err *e);
/* STS AssumeRoleWithWebIdentity (unsigned) with the token read from token_file. */
int aws_sts_assume_role_web_identity(const struct aws_assume *a, const char *token_file,
    struct aws_creds *out, struct sbx_err *e);
/* GetRoleCredentials on the IAM Identity Center portal of sso_region with the
 * cached access token. */
int aws_sso_role_credentials(const char *sso_region, const char *account_id,
    const char *role_name, const char *access_token, struct aws_creds *out,
    struct sbx_err *e);
/* IAM Identity Center OIDC CreateToken with the refresh_token grant (what the
 * AWS CLI does with an SSO token about to expire): *access and *refresh (the
 * new refresh token, or NULL) for the caller to free, *expires_in seconds. */
int aws_sso_oidc_refresh(const char *sso_region, const char *client_id,
    const char *client_secret, const char *refresh_token, char **access,
    int64_t *expires_in, char **refresh, struct sbx_err *e);
/* The STS endpoint for region (NULL: us-east-1), no trailing '/'; caller frees. */
char *aws_sts_endpoint(const char *region);

#endif
