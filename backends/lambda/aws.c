/* What every AWS client of the lambda backend shares (backends/lambda/aws.h). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/lambda/aws.h"
#include "lib/util.h"

void
aws_creds_clear(struct aws_creds *c)
{
	if (c->secret_key)
		explicit_bzero(c->secret_key, strlen(c->secret_key));
	if (c->session_token)
		explicit_bzero(c->session_token, strlen(c->session_token));
	free(c->access_key);
	free(c->secret_key);
	free(c->session_token);
	memset(c, 0, sizeof *c);
}

const char *
aws_dns_suffix(const char *region)
{
	/* The partitions of the SDKs' endpoint rules, by region name. */
	static const struct { const char *prefix, *suffix; } t[] = {
		{ "cn-", "amazonaws.com.cn" }, { "eusc-", "amazonaws.eu" },
		{ "us-iso-", "c2s.ic.gov" }, { "us-isob-", "sc2s.sgov.gov" },
		{ "us-isof-", "csp.hci.ic.gov" }, { "eu-isoe-", "cloud.adc-e.uk" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(t); i++)
		if (strncmp(region, t[i].prefix, strlen(t[i].prefix)) == 0)
			return t[i].suffix;
	return "amazonaws.com";
}

char *
aws_endpoint_resolve(const char *flag_url, const char *service_env, const char *host_prefix,
    const char *region)
{
	_cleanup_free_ char *svc = xasprintf("AWS_ENDPOINT_URL_%s", service_env);
	const char *v = flag_url && *flag_url ? flag_url : NULL;
	char *r;

	if (v == NULL && (v = getenv(svc)) != NULL && *v == '\0')
		v = NULL;
	if (v == NULL && (v = getenv("AWS_ENDPOINT_URL")) != NULL && *v == '\0')
		v = NULL;
	r = v ? xstrdup(v) : xasprintf("https://%s.%s.%s", host_prefix, region,
	    aws_dns_suffix(region));
	while (*r && r[strlen(r) - 1] == '/')
		r[strlen(r) - 1] = '\0';
	return r;
}

int64_t
aws_parse_time(const char *s)
{
	struct tm tm;
	const char *p;
	time_t t;

	if (s == NULL)
		return -1;
	memset(&tm, 0, sizeof tm);
	if ((p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm)) == NULL)
		return -1;
	if (*p == '.')
		for (p++; isdigit((unsigned char)*p); p++)
			;
	if (strcmp(p, "Z") != 0 && strcmp(p, "+00:00") != 0 && strcmp(p, "UTC") != 0)
		return -1;
	if ((t = timegm(&tm)) == (time_t)-1)
		return -1;
	return (int64_t)t * 1000;
}
