/* What every AWS client of the lambda backend shares: the credentials' shape
 * (found by aws-creds.c, asked of STS and IAM Identity Center by aws-sts.c,
 * signed with by sigv4.c's callers), the partitions' DNS suffixes and
 * endpoints, and the ISO 8601 times AWS answers with. */
#ifndef SBX_AWS_H
#define SBX_AWS_H

#include <stdint.h>

struct aws_creds {
	char	*access_key;
	char	*secret_key;
	char	*session_token;		/* NULL for long-term keys */
	int64_t	 expires_at;		/* wall clock ms; 0: does not expire */
	char	 source[256];		/* "environment (AWS_ACCESS_KEY_ID)", "assume
					 * role ARN (profile dev, from ...)", ... */
};

/* Wipe and free. */
void aws_creds_clear(struct aws_creds *c);

/* The DNS suffix of region's partition: "amazonaws.com", "amazonaws.com.cn", ... */
const char *aws_dns_suffix(const char *region);

/* The service endpoint: flag_url, else AWS_ENDPOINT_URL_<SERVICE> (service_env,
 * e.g. "LAMBDA_MICROVMS"), else AWS_ENDPOINT_URL, else
 * https://<host_prefix>.<region>.<the partition's DNS suffix>.  No trailing '/'.
 * Caller frees. */
char *aws_endpoint_resolve(const char *flag_url, const char *service_env,
    const char *host_prefix, const char *region);

/* Parse an ISO 8601 UTC time ("2025-09-09T12:00:00Z", fraction and "+00:00"
 * accepted) to wall-clock ms; -1 when malformed. */
int64_t aws_parse_time(const char *s);

#endif
