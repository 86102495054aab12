/* Unit tests of the AWS credential chain, region and endpoint resolution, with a
 * private HOME and files: the environment, the shared credentials and config
 * files with profiles, credential_process (Version 1, Expiration), precedence,
 * and errors.  The HTTP sources (container, IMDSv2) are tested against loopback
 * fakes in tests/integration/lambda.sh.  TAP lines. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "backends/lambda/aws-creds.h"
#include "lib/util.h"

static char dir[64];

static void
put(const char *name, const char *text, mode_t mode)
{
	char *p = xasprintf("%s/%s", dir, name);
	FILE *f = fopen(p, "w");

	fputs(text, f);
	fclose(f);
	chmod(p, mode);
	free(p);
}

static void
clean_env(void)
{
	static const char *const v[] = {
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
		"AWS_DEFAULT_PROFILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE",
		"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL",
		"AWS_ENDPOINT_URL_LAMBDA_MICROVMS", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN",
		"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "AWS_EC2_METADATA_SERVICE_ENDPOINT",
	};
	for (size_t i = 0; i < ARRAY_SIZE(v); i++)
		unsetenv(v[i]);
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
	setenv("HOME", dir, 1);
}

int
main(void)
{
	struct aws_creds c;
	struct sbx_err e;
	char *s = NULL, *p;
	const char *from = NULL;

	snprintf(dir, sizeof dir, "/tmp/sbx-awscreds.XXXXXX");
	if (mkdtemp(dir) == NULL)
		return 1;
	clean_env();
	p = xasprintf("%s/.aws", dir);
	mkdir(p, 0700);
	free(p);

	/* Nothing anywhere. */
	check(aws_creds_load(&c, &e) < 0 && e.code == SBX_EDENIED, "no source: denied");
	check(strstr(e.msg, "profile 'default'") != NULL && strstr(e.hint, "aws configure"),
	    "the error names where it looked and how to fix it");

	/* Environment. */
	setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "skenv", 1);
	setenv("AWS_SESSION_TOKEN", "tokenv", 1);
	put(".aws/credentials", "[default]\naws_access_key_id = AKFILE\n"
	    "aws_secret_access_key = skfile\n", 0600);
	check(aws_creds_load(&c, &e) == 0 && strcmp(c.access_key, "AKENV") == 0 &&
	    strcmp(c.session_token, "tokenv") == 0 && strstr(c.source, "environment"),
	    "the environment comes first");
	aws_creds_clear(&c);
	unsetenv("AWS_SESSION_TOKEN");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	check(aws_creds_load(&c, &e) == 0 && strcmp(c.access_key, "AKFILE") == 0,
	    "a key id without a secret in the environment: the file instead");
	aws_creds_clear(&c);
	unsetenv("AWS_ACCESS_KEY_ID");

	/* Shared credentials file with profiles, comments, spacing, token. */
	put(".aws/credentials", "# comment\n[default]\naws_access_key_id = AKFILE\n"
	    "aws_secret_access_key = skfile\n\n[dev]\naws_access_key_id=AKDEV  \n"
	    "aws_secret_access_key=skdev\naws_session_token = tokdev\n; other\n", 0600);
	check(aws_creds_load(&c, &e) == 0 && strcmp(c.access_key, "AKFILE") == 0 &&
	    c.session_token == NULL && strstr(c.source, "profile default"),
	    "~/.aws/credentials, default profile");
	aws_creds_clear(&c);
	setenv("AWS_PROFILE", "dev", 1);
	check(aws_creds_load(&c, &e) == 0 && strcmp(c.access_key, "AKDEV") == 0 &&
	    strcmp(c.secret_key, "skdev") == 0 && strcmp(c.session_token, "tokdev") == 0,
	    "AWS_PROFILE picks [dev], values trimmed, session token kept");
	aws_creds_clear(&c);

	/* AWS_SHARED_CREDENTIALS_FILE and config-file keys ("[profile dev]"). */
	put("elsewhere", "[dev]\naws_access_key_id = AKELSE\naws_secret_access_key = skelse\n",
	    0600);
	setenv("AWS_SHARED_CREDENTIALS_FILE", "elsewhere-missing", 1);
	put("config", "[profile dev]\naws_access_key_id = AKCONF\naws_secret_access_key = skconf\n"
	    "region = eu-central-1\n[dev]\nregion = wrong-section-1\n", 0600);
	p = xasprintf("%s/config", dir);
	setenv("AWS_CONFIG_FILE", p, 1);
	free(p);
	check(aws_creds_load(&c, &e) == 0 && strcmp(c.access_key, "AKCONF") == 0,
	    "keys in the config file's [profile dev] (credentials file missing)");
	aws_creds_clear(&c);
	p = xasprintf("%s/elsewhere", dir);
	setenv("AWS_SHARED_CREDENTIALS_FILE", p, 1);
	free(p);
	check(aws_creds_load(&c, &e) == 0 && strcmp(c.access_key, "AKELSE") == 0,
	    "AWS_SHARED_CREDENTIALS_FILE is honoured and wins over the config file");
	aws_creds_clear(&c);
	s = aws_profile_get("region");
	check(s && strcmp(s, "eu-central-1") == 0, "the config file's region comes from "
	    "[profile dev], not [dev]");
	free(s);

	/* credential_process. */
	unsetenv("AWS_SHARED_CREDENTIALS_FILE");
	put(".aws/credentials", "", 0600);
	put("proc-ok", "#!/bin/sh\necho '{\"Version\": 1, \"AccessKeyId\": \"AKPROC\", "
	    "\"SecretAccessKey\": \"skproc\", \"SessionToken\": \"tproc\", "
	    "\"Expiration\": \"2099-05-01T10:00:00Z\"}'\n", 0700);
	put("proc-v2", "#!/bin/sh\necho '{\"Version\": 2, \"AccessKeyId\": \"a\", "
	    "\"SecretAccessKey\": \"b\"}'\n", 0700);
	put("proc-fail", "#!/bin/sh\necho 'token expired' >&2\nexit 3\n", 0700);
	put("proc-junk", "#!/bin/sh\necho 'not json'\n", 0700);
	put("proc-old", "#!/bin/sh\necho '{\"Version\": 1, \"AccessKeyId\": \"a\", "
	    "\"SecretAccessKey\": \"b\", \"Expiration\": \"2000-01-01T00:00:00Z\"}'\n", 0700);
	struct { const char *script; int ok; const char *what, *want; } pc[] = {
		{ "proc-ok", 1, "credential_process: Version 1 with Expiration", NULL },
		{ "proc-v2", 0, "credential_process: Version 2 is refused", "Version" },
		{ "proc-fail", 0, "credential_process: a failing command is an error, with status",
		  "status 3" },
		{ "proc-junk", 0, "credential_process: output that is not JSON", "JSON" },
		{ "proc-old", 0, "credential_process: expired credentials", "expired" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(pc); i++) {
		char *conf = xasprintf("[profile dev]\ncredential_process = %s/%s\n", dir,
		    pc[i].script);
		put("config", conf, 0600);
		free(conf);
		int rc = aws_creds_load(&c, &e);
		if (pc[i].ok)
			check(rc == 0 && strcmp(c.access_key, "AKPROC") == 0 &&
			    strcmp(c.session_token, "tproc") == 0 &&
			    c.expires_at == aws_parse_time("2099-05-01T10:00:00Z") &&
			    strstr(c.source, "credential_process"), "%s", pc[i].what);
		else
			check(rc < 0 && strstr(e.msg, pc[i].want) != NULL, "%s", pc[i].what);
		aws_creds_clear(&c);
	}

	/* botocore's order within a profile: credential_process before the config
	 * file's keys. */
	p = xasprintf("[profile dev]\naws_access_key_id = AKCONF\naws_secret_access_key = x\n"
	    "credential_process = %s/proc-ok\n", dir);
	put("config", p, 0600);
	free(p);
	check(aws_creds_load(&c, &e) == 0 && strcmp(c.access_key, "AKPROC") == 0,
	    "credential_process wins over the config file's keys");
	aws_creds_clear(&c);

	/* Profiles that cannot give credentials: refused before any request. */
	setenv("AWS_PROFILE", "missing", 1);
	setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "skenv", 1);
	check(aws_creds_load(&c, &e) < 0 && strstr(e.msg, "'missing' is in neither") &&
	    strstr(e.hint, "AWS_PROFILE"), "AWS_PROFILE naming no profile: an error, even "
	    "with keys in the environment");
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	put("config", "[profile mfa]\nrole_arn = arn:aws:iam::123456789012:role/r\n"
	    "source_profile = dev\nmfa_serial = arn:aws:iam::123456789012:mfa/me\n"
	    "[profile nosrc]\nrole_arn = arn:aws:iam::123456789012:role/r\n"
	    "[profile a]\nrole_arn = arn:aws:iam::123456789012:role/a\nsource_profile = b\n"
	    "[profile b]\nrole_arn = arn:aws:iam::123456789012:role/b\nsource_profile = a\n"
	    "[profile self]\nrole_arn = arn:aws:iam::123456789012:role/s\n"
	    "source_profile = self\n"
	    "[profile both]\nrole_arn = arn:aws:iam::123456789012:role/s\n"
	    "source_profile = dev\ncredential_source = Environment\n"
	    "[profile web]\nweb_identity_token_file = /nonexistent\n"
	    "[profile sso]\nsso_session = corp\nsso_account_id = 123456789012\n"
	    "sso_role_name = Dev\n[sso-session corp]\nsso_start_url = https://x/start\n"
	    "sso_region = eu-west-1\n"
	    "[profile sso-nosess]\nsso_session = gone\nsso_account_id = 123456789012\n"
	    "sso_role_name = Dev\n", 0600);
	struct { const char *profile; enum sbx_errcode code; const char *msg, *hint, *what; } bad[] = {
		{ "mfa", SBX_EUNSUPPORTED, "mfa_serial", "get-session-token",
		  "mfa_serial: not supported, with what to do instead" },
		{ "nosrc", SBX_EDENIED, "sets role_arn but not where", "source_profile",
		  "role_arn without source_profile or credential_source" },
		{ "a", SBX_EDENIED, "source_profile hops", "source_profile",
		  "source_profile loops end" },
		{ "self", SBX_EDENIED, "its own source_profile and has no keys", NULL,
		  "a profile its own source, without keys" },
		{ "both", SBX_EDENIED, "both source_profile and credential_source", NULL,
		  "source_profile and credential_source together" },
		{ "web", SBX_EDENIED, "no role ARN", "AWS_ROLE_ARN",
		  "a web identity token file without a role" },
		{ "sso", SBX_EDENIED, "no cached SSO token", "aws sso login --sso-session corp",
		  "sso_session without a cached token: the login command in the hint" },
		{ "sso-nosess", SBX_EDENIED, "names sso_session gone", "aws configure sso",
		  "sso_session naming no [sso-session] section" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		setenv("AWS_PROFILE", bad[i].profile, 1);
		int rc = aws_creds_load(&c, &e);
		check(rc < 0 && e.code == bad[i].code && strstr(e.msg, bad[i].msg) &&
		    (bad[i].hint == NULL || strstr(e.hint, bad[i].hint)), "%s", bad[i].what);
		if (rc == 0)
			aws_creds_clear(&c);
	}
	/* The SSO cache: an expired token is refused, naming when it expired. */
	p = xasprintf("%s/.aws/sso", dir);
	mkdir(p, 0700);
	free(p);
	p = xasprintf("%s/.aws/sso/cache", dir);
	mkdir(p, 0700);
	free(p);
	/* SHA-1 of "corp". */
	put(".aws/sso/cache/ee0bfd2552fbd840c02cc48b6e823320543c450f.json", "{\"accessToken\": "
	    "\"t\", \"expiresAt\": \"2001-02-03T04:05:06Z\"}", 0600);
	setenv("AWS_PROFILE", "sso", 1);
	check(aws_creds_load(&c, &e) < 0 && strstr(e.msg, "expired at 2001-02-03T04:05:06Z") &&
	    strstr(e.hint, "aws sso login --sso-session corp"),
	    "an expired SSO token: refused, with the time and the login command");
	unsetenv("AWS_PROFILE");

	/* Container credentials: a plain-HTTP URL to a stranger is refused before any
	 * request is made. */
	put("config", "", 0600);
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://example.com/creds", 1);
	check(aws_creds_load(&c, &e) < 0 && strstr(e.msg, "not local"),
	    "container FULL_URI over plain HTTP to a non-local host: refused");
	unsetenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
	setenv("AWS_PROFILE", "dev", 1);

	/* Region, in order: flag, image ARN, AWS_REGION, AWS_DEFAULT_REGION, profile. */
	put("config", "[profile dev]\nregion = ap-south-1\n", 0600);
	setenv("AWS_DEFAULT_REGION", "eu-west-3", 1);
	setenv("AWS_REGION", "us-east-2", 1);
	const char *arn = "arn:aws:lambda:sa-east-1:123456789012:microvm-image:x";
	check(aws_region_resolve("ca-central-1", arn, &s, &from, &e) == 0 &&
	    strcmp(s, "ca-central-1") == 0 && strcmp(from, "flag") == 0, "region: flag first");
	free(s);
	check(aws_region_resolve(NULL, arn, &s, &from, &e) == 0 && strcmp(s, "sa-east-1") == 0 &&
	    strcmp(from, "image ARN") == 0, "region: then the image ARN's");
	free(s);
	check(aws_region_resolve(NULL, NULL, &s, &from, &e) == 0 && strcmp(s, "us-east-2") == 0,
	    "region: then AWS_REGION");
	free(s);
	setenv("AWS_REGION", "", 1);
	check(aws_region_resolve(NULL, NULL, &s, &from, &e) == 0 && strcmp(s, "eu-west-3") == 0,
	    "region: then AWS_DEFAULT_REGION (an empty AWS_REGION is unset)");
	free(s);
	unsetenv("AWS_REGION");
	unsetenv("AWS_DEFAULT_REGION");
	check(aws_region_resolve(NULL, NULL, &s, &from, &e) == 0 && strcmp(s, "ap-south-1") == 0 &&
	    strcmp(from, "profile") == 0, "region: then the profile's");
	free(s);
	put("config", "", 0600);
	check(aws_region_resolve(NULL, NULL, &s, &from, &e) < 0 && e.code == SBX_EINVAL &&
	    strstr(e.hint, "AWS_REGION"), "region: none is an error with a hint");
	check(aws_region_resolve("us-east-1; rm -rf", NULL, &s, &from, &e) < 0,
	    "region: a malformed one is refused");

	/* Endpoint. */
	s = aws_endpoint_resolve(NULL, "LAMBDA_MICROVMS", "lambda", "us-east-1");
	check(strcmp(s, "https://lambda.us-east-1.amazonaws.com") == 0,
	    "endpoint: the region's by default");
	free(s);
	s = aws_endpoint_resolve(NULL, "LAMBDA_MICROVMS", "lambda", "cn-north-1");
	check(strcmp(s, "https://lambda.cn-north-1.amazonaws.com.cn") == 0,
	    "endpoint: the China partition's suffix");
	free(s);
	s = aws_endpoint_resolve(NULL, "LAMBDA_MICROVMS", "lambda", "us-isob-east-1");
	check(strcmp(s, "https://lambda.us-isob-east-1.sc2s.sgov.gov") == 0,
	    "endpoint: the ISO-B partition's suffix, not ISO's");
	free(s);
	setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:4566/", 1);
	s = aws_endpoint_resolve(NULL, "LAMBDA_MICROVMS", "lambda", "us-east-1");
	check(strcmp(s, "http://127.0.0.1:4566") == 0, "endpoint: AWS_ENDPOINT_URL, no trailing /");
	free(s);
	setenv("AWS_ENDPOINT_URL_LAMBDA_MICROVMS", "http://svc", 1);
	s = aws_endpoint_resolve(NULL, "LAMBDA_MICROVMS", "lambda", "us-east-1");
	check(strcmp(s, "http://svc") == 0, "endpoint: the service's own variable wins");
	free(s);
	s = aws_endpoint_resolve("https://flag", "LAMBDA_MICROVMS", "lambda", "x");
	check(strcmp(s, "https://flag") == 0, "endpoint: --endpoint-url wins over all");
	free(s);

	/* Times. */
	check(aws_parse_time("2025-09-09T12:00:00Z") == 1757419200000LL, "ISO 8601 time");
	check(aws_parse_time("2025-09-09T12:00:00.123Z") == 1757419200000LL &&
	    aws_parse_time("2025-09-09T12:00:00+00:00") == 1757419200000LL,
	    "ISO 8601 with a fraction, with +00:00");
	check(aws_parse_time("2025-09-09T12:00:00+02:00") < 0 && aws_parse_time("soon") < 0,
	    "other offsets and junk: refused");

	{
		char *cmd = xasprintf("rm -rf %s", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", dir);
		free(cmd);
	}
	return tap_end();
}
