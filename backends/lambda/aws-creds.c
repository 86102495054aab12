/* The AWS credential chain, region and endpoint (see aws-creds.h). */
#include <ctype.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <openssl/evp.h>

#include "backends/lambda/aws-creds.h"
#include "backends/lambda/aws-sts.h"
#include "lib/buf.h"
#include "lib/log.h"
#include "lib/util.h"

#define FILE_MAX		(1u << 20)	/* a credentials or config file */
#define PROCESS_OUT_MAX		(64u << 10)	/* credential_process output */
#define PROCESS_TIMEOUT_MS	60000
#define HTTP_MAX		(64u << 10)	/* a metadata answer */
#define IMDS_TIMEOUT_MS		1000		/* off EC2 nothing answers: fail fast */
#define CONTAINER_TIMEOUT_MS	2000
#define IMDS_DEFAULT		"http://169.254.169.254"
#define ECS_HOST		"http://169.254.170.2"

/* A secret is still valid this long before it expires: refresh before that. */
#define EXPIRY_MARGIN_MS	(5 * 60 * 1000)

const char *
aws_profile_name(void)
{
	const char *p = getenv("AWS_PROFILE");

	if (p == NULL || *p == '\0')
		p = getenv("AWS_DEFAULT_PROFILE");
	return p && *p ? p : "default";
}

static char *
home_file(const char *env, const char *rel)
{
	const char *v = getenv(env), *home = getenv("HOME");

	if (v != NULL && *v != '\0') {
		if (v[0] == '~' && v[1] == '/' && home)
			return xasprintf("%s%s", home, v + 1);
		return xstrdup(v);
	}
	if (home == NULL || *home == '\0') {
		struct passwd *pw = getpwuid(getuid());
		home = pw ? pw->pw_dir : "/";
	}
	return xasprintf("%s/%s", home, rel);
}

static char *
trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

/* key in the section named section (exactly) of the INI file at path, or NULL. */
static char *
ini_get(const char *path, const char *section, const char *key)
{
	_cleanup_free_ char *text = read_file(path, FILE_MAX, NULL);
	char *line, *save = NULL, *r = NULL;
	int in = 0;

	if (text == NULL)
		return NULL;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *l = trim(line), *eq;
		if (*l == '#' || *l == ';' || *l == '\0')
			continue;
		if (*l == '[') {
			char *end = strchr(l, ']');
			if (end) {
				*end = '\0';
				in = strcmp(trim(l + 1), section) == 0;
			}
			continue;
		}
		/* Nested values (indented "key = value" under "s3 =") are not ours. */
		if (!in || line[0] == ' ' || line[0] == '\t' || (eq = strchr(l, '=')) == NULL)
			continue;
		*eq = '\0';
		if (strcmp(trim(l), key) == 0) {
			free(r);
			r = xstrdup(trim(eq + 1));
		}
	}
	return r;
}

/* Whether the INI file at path has a section named section. */
static int
ini_has(const char *path, const char *section)
{
	_cleanup_free_ char *text = read_file(path, FILE_MAX, NULL);
	char *line, *save = NULL;

	for (line = text ? strtok_r(text, "\n", &save) : NULL; line;
	    line = strtok_r(NULL, "\n", &save)) {
		char *l = trim(line), *end;
		if (*l == '[' && (end = strchr(l, ']')) != NULL) {
			*end = '\0';
			if (strcmp(trim(l + 1), section) == 0)
				return 1;
		}
	}
	return 0;
}

/* key of profile in the shared credentials file ("[NAME]"), or NULL. */
static char *
cred_file_get(const char *profile, const char *key)
{
	_cleanup_free_ char *path = home_file("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials");

	return ini_get(path, profile, key);
}

/* key of profile in the config file ("[profile NAME]", "[default]"), or NULL;
 * profile NULL: the section named section (as "sso-session NAME"). */
static char *
config_get(const char *profile, const char *section, const char *key)
{
	_cleanup_free_ char *path = home_file("AWS_CONFIG_FILE", ".aws/config");
	_cleanup_free_ char *want = profile == NULL ? xstrdup(section) :
	    strcmp(profile, "default") == 0 ? xstrdup("default") : xasprintf("profile %s", profile);

	return ini_get(path, want, key);
}

/* A value of profile as the SDKs merge the files: the credentials file's over
 * the config file's.  NULL when unset or empty; caller frees. */
static char *
prof_get(const char *profile, const char *key)
{
	char *v = cred_file_get(profile, key);

	if (v == NULL || *v == '\0') {
		free(v);
		v = config_get(profile, NULL, key);
	}
	if (v != NULL && *v == '\0') {
		free(v);
		v = NULL;
	}
	return v;
}

char *
aws_profile_get(const char *key)
{
	return prof_get(aws_profile_name(), key);
}

/* Fill c from a JSON object with the given field names; the secret parts must
 * be strings; an Expiration in the past is an error. */
static int
from_json(struct aws_creds *c, const cJSON *o, const char *token_field, const char *what,
    struct sbx_err *e)
{
	const char *ak = cJSON_GetStringValue(cJSON_GetObjectItem(o, "AccessKeyId"));
	const char *sk = cJSON_GetStringValue(cJSON_GetObjectItem(o, "SecretAccessKey"));
	const char *tok = cJSON_GetStringValue(cJSON_GetObjectItem(o, token_field));
	const cJSON *exp = cJSON_GetObjectItem(o, "Expiration");
	int64_t when = 0;

	if (ak == NULL || *ak == '\0' || sk == NULL || *sk == '\0')
		return sbx_error(e, SBX_EDENIED, "check what it prints: {\"Version\": 1, "
		    "\"AccessKeyId\": ..., \"SecretAccessKey\": ..., ...}",
		    "%s: no AccessKeyId or SecretAccessKey in its answer", what);
	if (exp != NULL && !cJSON_IsNull(exp)) {
		if ((when = aws_parse_time(cJSON_GetStringValue(exp))) < 0)
			return sbx_error(e, SBX_EDENIED, NULL, "%s: Expiration is not an ISO 8601 "
			    "time", what);
		if (when <= wall_ms())
			return sbx_error(e, SBX_EDENIED, "refresh them (for SSO: `aws sso login`)",
			    "%s: the credentials it gave expired at %s", what,
			    cJSON_GetStringValue(exp));
	}
	c->access_key = xstrdup(ak);
	c->secret_key = xstrdup(sk);
	c->session_token = tok && *tok ? xstrdup(tok) : NULL;
	c->expires_at = when;
	return 0;
}

/* ---- credential_process ------------------------------------------------ */

static int
run_process(const char *cmd, struct buf *out, struct sbx_err *e)
{
	int p[2], status = 0;
	pid_t pid;
	int64_t deadline = now_ms() + PROCESS_TIMEOUT_MS;
	char chunk[4096];

	if (pipe2(p, O_CLOEXEC) < 0)
		return sbx_error_errno(e, SBX_EINTERNAL, NULL, "credential_process: pipe");
	if ((pid = fork()) < 0) {
		close(p[0]);
		close(p[1]);
		return sbx_error_errno(e, SBX_EINTERNAL, NULL, "credential_process: fork");
	}
	if (pid == 0) {
		/* stdout is the answer; stdin is nothing; stderr stays the user's. */
		int null = open("/dev/null", O_RDONLY);
		if (null >= 0)
			dup2(null, 0);
		dup2(p[1], 1);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	for (;;) {
		struct pollfd pf = { p[0], POLLIN, 0 };
		int64_t left = deadline - now_ms();
		ssize_t n;
		if (left <= 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			close(p[0]);
			return sbx_error(e, SBX_ETIMEOUT, NULL, "credential_process did not finish "
			    "in %d s: %s", PROCESS_TIMEOUT_MS / 1000, cmd);
		}
		if (poll(&pf, 1, (int)left) < 0 && errno != EINTR)
			break;
		n = read(p[0], chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (buf_append(out, chunk, (size_t)n) < 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			close(p[0]);
			return sbx_error(e, SBX_EDENIED, NULL, "credential_process printed more than "
			    "%u KiB", PROCESS_OUT_MAX >> 10);
		}
	}
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return sbx_error(e, SBX_EDENIED, "run it by hand to see why (for SSO: `aws sso "
		    "login`)", "credential_process failed (status %d): %s",
		    WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), cmd);
	return 0;
}

static int
from_process(struct aws_creds *c, const char *cmd, struct sbx_err *e)
{
	struct buf out;
	cJSON *o;
	const cJSON *v;
	int rc;

	buf_init(&out, PROCESS_OUT_MAX);
	if (run_process(cmd, &out, e) < 0) {
		buf_free(&out);
		return -1;
	}
	o = out.data ? cJSON_ParseWithLength(out.data, out.len) : NULL;
	explicit_bzero(out.data ? out.data : (char *)"", out.len);
	buf_free(&out);
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		return sbx_error(e, SBX_EDENIED, NULL, "credential_process did not print a JSON "
		    "object: %s", cmd);
	}
	v = cJSON_GetObjectItem(o, "Version");
	if (!cJSON_IsNumber(v) || v->valuedouble != 1) {
		cJSON_Delete(o);
		return sbx_error(e, SBX_EDENIED, NULL, "credential_process: \"Version\" must be 1");
	}
	rc = from_json(c, o, "SessionToken", "credential_process", e);
	cJSON_Delete(o);
	return rc;
}

/* ---- HTTP sources: container and instance metadata --------------------- */

static size_t
http_sink(char *p, size_t sz, size_t n, void *arg)
{
	return buf_append(arg, p, sz * n) < 0 ? 0 : sz * n;
}

/* One request; the status in *status (0: no answer).  Body in out. */
static int
http_do(const char *method, const char *url, const char *h1, const char *h2,
    long timeout_ms, struct buf *out, long *status)
{
	CURL *h = curl_easy_init();
	struct curl_slist *hl = NULL;
	CURLcode rc;

	*status = 0;
	if (h == NULL)
		fatal("out of memory");
	if (h1)
		hl = curl_slist_append(hl, h1);
	if (h2)
		hl = curl_slist_append(hl, h2);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	if (strcmp(method, "PUT") == 0) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, 0L);
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_NOPROXY, "*");	/* metadata is never proxied */
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, http_sink);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
	rc = curl_easy_perform(h);
	if (rc == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
	curl_slist_free_all(hl);
	curl_easy_cleanup(h);
	return rc == CURLE_OK ? 0 : -1;
}

/* Plain-HTTP container endpoints must be local, as the SDKs require: anything
 * else could hand the token to a stranger. */
static int
container_url_ok(const char *url)
{
	static const char *const ok[] = {
		"http://127.", "http://localhost:", "http://localhost/", "http://[::1]",
		"http://169.254.170.2", "http://169.254.170.23", "http://[fd00:ec2::23]",
		"https://",
	};
	for (size_t i = 0; i < ARRAY_SIZE(ok); i++)
		if (strncasecmp(url, ok[i], strlen(ok[i])) == 0)
			return 1;
	return 0;
}

static int
from_container(struct aws_creds *c, struct sbx_err *e)
{
	const char *rel = getenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
	const char *full = getenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
	const char *tok = getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN");
	const char *tokfile = getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
	_cleanup_free_ char *url = NULL, *auth = NULL, *filetok = NULL;
	struct buf out;
	long st;
	cJSON *o;
	int rc;

	if (rel && *rel)
		url = xasprintf("%s%s", ECS_HOST, rel);
	else if (full && *full)
		url = xstrdup(full);
	else
		return 1;
	if (!(rel && *rel) && !container_url_ok(url))
		return sbx_error(e, SBX_EDENIED, "use https, or a loopback or ECS/EKS address",
		    "AWS_CONTAINER_CREDENTIALS_FULL_URI %s is plain HTTP to a host that is not "
		    "local", url);
	if (tokfile && *tokfile) {
		if ((filetok = read_file(tokfile, 16384, NULL)) == NULL)
			return sbx_error_errno(e, SBX_EDENIED, NULL, "cannot read "
			    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE %s", tokfile);
		tok = trim(filetok);
	}
	if (tok && *tok) {
		if (strpbrk(tok, "\r\n"))
			return sbx_error(e, SBX_EDENIED, NULL, "the container authorization token "
			    "has a line break");
		auth = xasprintf("Authorization: %s", tok);
	}
	buf_init(&out, HTTP_MAX);
	if (http_do("GET", url, auth, "Accept: application/json", CONTAINER_TIMEOUT_MS, &out,
	    &st) < 0 || st != 200) {
		buf_free(&out);
		return sbx_error(e, SBX_EDENIED, "is this running in the container the variable "
		    "was set for?", "container credentials: %s answered %ld", url, st);
	}
	o = cJSON_ParseWithLength(out.data ? out.data : "", out.len);
	buf_free(&out);
	rc = from_json(c, o, "Token", "container credentials", e);
	cJSON_Delete(o);
	return rc;
}

static int
from_imds(struct aws_creds *c, struct sbx_err *e)
{
	const char *dis = getenv("AWS_EC2_METADATA_DISABLED");
	const char *ep = getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT");
	_cleanup_free_ char *base = NULL, *token = NULL, *th = NULL, *url = NULL;
	char role[256];
	struct buf out;
	long st;
	cJSON *o;
	int rc;

	if (dis && strcasecmp(dis, "true") == 0)
		return 1;
	base = xstrdup(ep && *ep ? ep : IMDS_DEFAULT);
	if (base[0] && base[strlen(base) - 1] == '/')
		base[strlen(base) - 1] = '\0';
	/* IMDSv2: a session token first (PUT), then every GET carries it. */
	url = xasprintf("%s/latest/api/token", base);
	buf_init(&out, HTTP_MAX);
	if (http_do("PUT", url, "X-aws-ec2-metadata-token-ttl-seconds: 21600", NULL,
	    IMDS_TIMEOUT_MS, &out, &st) < 0 || st != 200 || out.len == 0) {
		buf_free(&out);
		return 1;	/* not on EC2, or IMDSv2 refused: not a source here */
	}
	token = buf_steal(&out);
	th = xasprintf("X-aws-ec2-metadata-token: %s", trim(token));
	free(url);
	url = xasprintf("%s/latest/meta-data/iam/security-credentials/", base);
	buf_init(&out, HTTP_MAX);
	if (http_do("GET", url, th, NULL, IMDS_TIMEOUT_MS, &out, &st) < 0 || st != 200 ||
	    out.len == 0) {
		buf_free(&out);
		return sbx_error(e, SBX_EDENIED, "attach an instance profile (IAM role) to the "
		    "instance", "instance metadata: no IAM role on this instance");
	}
	snprintf(role, sizeof role, "%s", strtok(out.data, "\r\n") ? out.data : "");
	buf_free(&out);
	if (role[0] == '\0' || strpbrk(role, "/?#% "))
		return sbx_error(e, SBX_EDENIED, NULL, "instance metadata: bad role name");
	free(url);
	url = xasprintf("%s/latest/meta-data/iam/security-credentials/%s", base, role);
	buf_init(&out, HTTP_MAX);
	if (http_do("GET", url, th, NULL, IMDS_TIMEOUT_MS, &out, &st) < 0 || st != 200) {
		buf_free(&out);
		return sbx_error(e, SBX_EDENIED, NULL, "instance metadata: credentials of role "
		    "%s: status %ld", role, st);
	}
	o = cJSON_ParseWithLength(out.data ? out.data : "", out.len);
	buf_free(&out);
	{
		const char *code = cJSON_GetStringValue(cJSON_GetObjectItem(o, "Code"));
		if (code && strcmp(code, "Success") != 0) {
			cJSON_Delete(o);
			return sbx_error(e, SBX_EDENIED, NULL, "instance metadata: role %s: %s",
			    role, code);
		}
	}
	rc = from_json(c, o, "Token", "instance metadata", e);
	cJSON_Delete(o);
	if (rc == 0)
		snprintf(c->source, sizeof c->source, "instance metadata (IMDSv2, role %.64s)", role);
	return rc;
}

/* ---- profiles: keys, process, assume role, web identity, SSO ------------ */

#define PROFILE_DEPTH	8	/* source_profile hops */

static void
set_source(struct aws_creds *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
set_source(struct aws_creds *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->source, sizeof c->source, fmt, ap);
	va_end(ap);
}

/* Static keys of profile from one file (cred_file: the credentials file, else
 * the config file).  1 found, 0 none. */
static int
static_keys(const char *profile, int cred_file, struct aws_creds *c)
{
	_cleanup_free_ char *ak = NULL, *sk = NULL, *tok = NULL;

	if (cred_file) {
		ak = cred_file_get(profile, "aws_access_key_id");
		sk = cred_file_get(profile, "aws_secret_access_key");
		tok = cred_file_get(profile, "aws_session_token");
	} else {
		ak = config_get(profile, NULL, "aws_access_key_id");
		sk = config_get(profile, NULL, "aws_secret_access_key");
		tok = config_get(profile, NULL, "aws_session_token");
	}
	if (ak == NULL || *ak == '\0' || sk == NULL || *sk == '\0') {
		if (sk)
			explicit_bzero(sk, strlen(sk));
		return 0;
	}
	c->access_key = steal_pointer(&ak);
	c->secret_key = steal_pointer(&sk);
	c->session_token = tok && *tok ? steal_pointer(&tok) : NULL;
	set_source(c, "%s (profile %s)", cred_file ? "shared credentials" : "config file",
	    profile);
	return 1;
}

/* The region STS is asked in: the one sbxtop would use, else us-east-1. */
static char *
sts_region(void)
{
	struct sbx_err ignored;
	char *r = NULL;

	if (aws_region_resolve(NULL, NULL, &r, NULL, &ignored) < 0)
		return NULL;
	return r;
}

static int
web_identity(const char *profile, int use_env, struct aws_creds *c, struct sbx_err *e)
{
	const char *etok = use_env ? getenv("AWS_WEB_IDENTITY_TOKEN_FILE") : NULL;
	const char *erole = use_env ? getenv("AWS_ROLE_ARN") : NULL;
	const char *ename = use_env ? getenv("AWS_ROLE_SESSION_NAME") : NULL;
	_cleanup_free_ char *ptok = prof_get(profile, "web_identity_token_file");
	_cleanup_free_ char *prole = prof_get(profile, "role_arn");
	_cleanup_free_ char *pname = prof_get(profile, "role_session_name");
	_cleanup_free_ char *region = sts_region(), *file = NULL;
	const char *tok = etok && *etok ? etok : ptok;
	const char *role = erole && *erole ? erole : prole;
	struct aws_assume a = { 0 };

	if (tok == NULL || *tok == '\0')
		return 1;
	if (role == NULL || *role == '\0')
		return sbx_error(e, SBX_EDENIED, "set AWS_ROLE_ARN (or role_arn in the profile)",
		    "a web identity token file is set (%s) but no role ARN", tok);
	file = tok[0] == '~' && tok[1] == '/' && getenv("HOME") ?
	    xasprintf("%s%s", getenv("HOME"), tok + 1) : xstrdup(tok);
	a.role_arn = role;
	a.session_name = ename && *ename ? ename : pname;
	a.region = region;
	if (aws_sts_assume_role_web_identity(&a, file, c, e) < 0)
		return -1;
	set_source(c, "web identity (role %.96s%s%s)", role, etok && *etok ? ", "
	    "AWS_WEB_IDENTITY_TOKEN_FILE" : ", profile ", etok && *etok ? "" : profile);
	return 0;
}

/* The SSO token cache's file for key: ~/.aws/sso/cache/<SHA-1 of key>.json. */
static char *
sso_cache_file(const char *key)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	char hex[2 * EVP_MAX_MD_SIZE + 1];
	_cleanup_free_ char *dir = home_file("HOME", "");

	if (EVP_Digest(key, strlen(key), md, &n, EVP_sha1(), NULL) != 1)
		fatal("SHA-1 failed");
	for (unsigned int i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	return xasprintf("%s/.aws/sso/cache/%s.json", dir, hex);
}

#define SSO_REFRESH_WINDOW_MS	(15 * 60 * 1000)

/* Refresh the cached token o (of file) with its registration, and write it
 * back as the AWS CLI would, so the next reader finds it fresh.  0 when o now
 * holds a new token; -1 (logged) when it could not be refreshed. */
static int
sso_refresh(cJSON *o, const char *file, const char *region, const char *start_url)
{
	const char *cid = cJSON_GetStringValue(cJSON_GetObjectItem(o, "clientId"));
	const char *csec = cJSON_GetStringValue(cJSON_GetObjectItem(o, "clientSecret"));
	const char *rtok = cJSON_GetStringValue(cJSON_GetObjectItem(o, "refreshToken"));
	int64_t reg = aws_parse_time(cJSON_GetStringValue(cJSON_GetObjectItem(o,
	    "registrationExpiresAt")));
	_cleanup_free_ char *tmp = NULL;
	char *access = NULL, *refresh = NULL, *text, when[32];
	struct sbx_err e;
	int64_t secs;
	time_t t;
	struct tm tm;
	int fd, rc = -1;

	if (cid == NULL || csec == NULL || rtok == NULL || reg < 0)
		return -1;
	if (reg <= wall_ms()) {
		log_debug("SSO: the registration in %s expired: no refresh", file);
		return -1;
	}
	if (aws_sso_oidc_refresh(region, cid, csec, rtok, &access, &secs, &refresh, &e) < 0) {
		log_debug("SSO: token refresh failed: %s", e.msg);
		return -1;
	}
	t = (time_t)(wall_ms() / 1000 + secs);
	gmtime_r(&t, &tm);
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
	cJSON_DeleteItemFromObject(o, "accessToken");
	cJSON_AddStringToObject(o, "accessToken", access);
	cJSON_DeleteItemFromObject(o, "expiresAt");
	cJSON_AddStringToObject(o, "expiresAt", when);
	if (cJSON_GetObjectItem(o, "startUrl") == NULL)
		cJSON_AddStringToObject(o, "startUrl", start_url);
	if (refresh) {
		cJSON_DeleteItemFromObject(o, "refreshToken");
		cJSON_AddStringToObject(o, "refreshToken", refresh);
	}
	explicit_bzero(access, strlen(access));
	free(access);
	if (refresh)
		explicit_bzero(refresh, strlen(refresh));
	free(refresh);
	text = cJSON_Print(o);
	tmp = xasprintf("%s.sbxtop-%d", file, (int)getpid());
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) >= 0) {
		rc = write_all(fd, text, strlen(text));
		rc = close(fd) < 0 || rc < 0 ? -1 : rename(tmp, file);
		if (rc < 0)
			unlink(tmp);
	}
	if (rc < 0)
		log_warn("SSO: cannot write the refreshed token back to %s", file);
	explicit_bzero(text, strlen(text));
	free(text);
	return 0;	/* refreshed, written back or not */
}

static int
from_sso(const char *profile, struct aws_creds *c, struct sbx_err *e)
{
	_cleanup_free_ char *sess = prof_get(profile, "sso_session");
	_cleanup_free_ char *url = NULL, *region = NULL, *acct = NULL, *role = NULL;
	_cleanup_free_ char *file = NULL, *text = NULL, *login = NULL, *sect = NULL;
	const char *tok, *exp;
	char hint[192];
	cJSON *o;
	int64_t until;
	int rc;

	if (sess != NULL) {
		sect = xasprintf("sso-session %s", sess);
		url = config_get(NULL, sect, "sso_start_url");
		region = config_get(NULL, sect, "sso_region");
		if (url == NULL || region == NULL)
			return sbx_error(e, SBX_EDENIED, "add sso_start_url and sso_region to "
			    "[sso-session NAME] in the config file (`aws configure sso`)",
			    "profile %s names sso_session %s, which has no sso_start_url or "
			    "sso_region", profile, sess);
		login = xasprintf("aws sso login --sso-session %s", sess);
	} else if ((url = prof_get(profile, "sso_start_url")) != NULL) {
		region = prof_get(profile, "sso_region");
		login = xasprintf("aws sso login --profile %s", profile);
	} else {
		return 1;
	}
	acct = prof_get(profile, "sso_account_id");
	role = prof_get(profile, "sso_role_name");
	if (region == NULL || acct == NULL || role == NULL)
		return sbx_error(e, SBX_EDENIED, "`aws configure sso` writes a complete profile",
		    "SSO profile %s lacks sso_region, sso_account_id or sso_role_name", profile);
	/* The cache `aws sso login` keeps: by session name, or by start URL. */
	file = sso_cache_file(sess ? sess : url);
	snprintf(hint, sizeof hint, "run `%s`", login);
	if ((text = read_file(file, FILE_MAX, NULL)) == NULL)
		return sbx_error(e, SBX_EDENIED, hint,
		    "no cached SSO token for profile %s (%s)", profile, file);
	o = cJSON_Parse(text);
	explicit_bzero(text, strlen(text));
	tok = cJSON_GetStringValue(cJSON_GetObjectItem(o, "accessToken"));
	exp = cJSON_GetStringValue(cJSON_GetObjectItem(o, "expiresAt"));
	until = aws_parse_time(exp);
	if (tok == NULL || *tok == '\0' || until < 0) {
		cJSON_Delete(o);
		return sbx_error(e, SBX_EDENIED, hint,
		    "the cached SSO token %s has no accessToken or expiresAt", file);
	}
	/* As the SDKs do for an sso_session token: refreshed when it has less than
	 * 15 minutes left, if the cache holds a registration to do it with. */
	if (sess != NULL && until - wall_ms() < SSO_REFRESH_WINDOW_MS &&
	    sso_refresh(o, file, region, url) == 0) {
		tok = cJSON_GetStringValue(cJSON_GetObjectItem(o, "accessToken"));
		exp = cJSON_GetStringValue(cJSON_GetObjectItem(o, "expiresAt"));
		until = aws_parse_time(exp);
	}
	if (until <= wall_ms()) {
		sbx_error(e, SBX_EDENIED, hint, "the SSO token of profile %s expired at %s",
		    profile, exp);
		cJSON_Delete(o);
		return -1;
	}
	rc = aws_sso_role_credentials(region, acct, role, tok, c, e);
	cJSON_Delete(o);
	if (rc == 0)
		set_source(c, "SSO (profile %.40s, role %.40s in %s)", profile, role, acct);
	return rc;
}

/* What the SDKs look at in one profile, in their order: web identity, SSO, the
 * credentials file's keys, credential_process, the config file's keys.  1 when
 * the profile holds none of them. */
static int
profile_sources(const char *profile, int use_env, struct aws_creds *c, struct sbx_err *e)
{
	_cleanup_free_ char *proc = NULL;
	int rc;

	if ((rc = web_identity(profile, use_env, c, e)) <= 0)
		return rc;
	if ((rc = from_sso(profile, c, e)) <= 0)
		return rc;
	if (static_keys(profile, 1, c))
		return 0;
	if ((proc = prof_get(profile, "credential_process")) != NULL) {
		if (from_process(c, proc, e) < 0)
			return -1;
		set_source(c, "credential_process (profile %s)", profile);
		return 0;
	}
	if (static_keys(profile, 0, c))
		return 0;
	return 1;
}

/* Whether profile is an assume-role profile (role_arn without a web identity
 * token file, which makes it a web identity profile instead). */
static int
is_assume_role(const char *profile)
{
	_cleanup_free_ char *role = prof_get(profile, "role_arn");
	_cleanup_free_ char *wit = prof_get(profile, "web_identity_token_file");

	return role != NULL && wit == NULL;
}

static int
assume_role(const char *profile, int depth, struct aws_creds *c, struct sbx_err *e)
{
	_cleanup_free_ char *role = prof_get(profile, "role_arn");
	_cleanup_free_ char *src = prof_get(profile, "source_profile");
	_cleanup_free_ char *csrc = prof_get(profile, "credential_source");
	_cleanup_free_ char *mfa = prof_get(profile, "mfa_serial");
	_cleanup_free_ char *ext = prof_get(profile, "external_id");
	_cleanup_free_ char *name = prof_get(profile, "role_session_name");
	_cleanup_free_ char *dur = prof_get(profile, "duration_seconds");
	_cleanup_free_ char *region = sts_region();
	struct aws_creds from = { 0 };
	struct aws_assume a = { 0 };
	int rc;

	if (depth >= PROFILE_DEPTH)
		return sbx_error(e, SBX_EDENIED, "check the profiles' source_profile settings",
		    "profile %s: more than %d source_profile hops (a loop?)", profile,
		    PROFILE_DEPTH);
	if (mfa != NULL)
		return sbx_error(e, SBX_EUNSUPPORTED, "get MFA credentials another way (`aws sts "
		    "get-session-token` into a profile, or credential_process)", "profile %s "
		    "sets mfa_serial: assuming a role with an MFA code is not supported here, "
		    "since sbxtop runs without a terminal to ask for it", profile);
	if (src != NULL && csrc != NULL)
		return sbx_error(e, SBX_EDENIED, "keep one of them", "profile %s sets both "
		    "source_profile and credential_source", profile);
	if (csrc != NULL) {
		if (strcmp(csrc, "Environment") == 0) {
			const char *ak = getenv("AWS_ACCESS_KEY_ID");
			const char *sk = getenv("AWS_SECRET_ACCESS_KEY");
			const char *tok = getenv("AWS_SESSION_TOKEN");
			if (ak == NULL || *ak == '\0' || sk == NULL || *sk == '\0')
				return sbx_error(e, SBX_EDENIED, "set AWS_ACCESS_KEY_ID and "
				    "AWS_SECRET_ACCESS_KEY", "profile %s: credential_source "
				    "Environment, and no keys in the environment", profile);
			from.access_key = xstrdup(ak);
			from.secret_key = xstrdup(sk);
			from.session_token = tok && *tok ? xstrdup(tok) : NULL;
			set_source(&from, "the environment");
			rc = 0;
		} else if (strcmp(csrc, "EcsContainer") == 0) {
			rc = from_container(&from, e);
			set_source(&from, "container credentials");
		} else if (strcmp(csrc, "Ec2InstanceMetadata") == 0) {
			rc = from_imds(&from, e);
		} else {
			return sbx_error(e, SBX_EDENIED, "use Environment, EcsContainer or "
			    "Ec2InstanceMetadata", "profile %s: unknown credential_source '%s'",
			    profile, csrc);
		}
		if (rc > 0)
			rc = sbx_error(e, SBX_EDENIED, NULL, "profile %s: credential_source %s "
			    "gave no credentials", profile, csrc);
	} else if (src == NULL) {
		return sbx_error(e, SBX_EDENIED, "add source_profile (or credential_source) to "
		    "the profile", "profile %s sets role_arn but not where the credentials to "
		    "assume it come from", profile);
	} else if (static_keys(src, 1, &from) || static_keys(src, 0, &from)) {
		/* The source's own keys win over its role_arn, as in the SDKs; this
		 * is also how a profile names itself as its source. */
		rc = 0;
	} else if (strcmp(src, profile) != 0 && is_assume_role(src)) {
		rc = assume_role(src, depth + 1, &from, e);
	} else if (strcmp(src, profile) == 0) {
		return sbx_error(e, SBX_EDENIED, "give the profile keys, or name another "
		    "source_profile", "profile %s is its own source_profile and has no keys",
		    profile);
	} else if ((rc = profile_sources(src, 0, &from, e)) > 0) {
		return sbx_error(e, SBX_EDENIED, "give that profile credentials",
		    "the source_profile %s of profile %s has no credentials", src, profile);
	}
	if (rc < 0) {
		aws_creds_clear(&from);
		return -1;
	}
	a.role_arn = role;
	a.session_name = name;
	a.external_id = ext;
	a.duration_s = dur ? atoi(dur) : 0;
	a.region = region;
	rc = aws_sts_assume_role(&from, &a, c, e);
	if (rc == 0)
		set_source(c, "assume role %.80s (profile %s, from %.64s)", role, profile,
		    from.source);
	aws_creds_clear(&from);
	return rc;
}

/* ---- the chain --------------------------------------------------------- */

/* Whether a section of profile is in either file. */
static int
profile_exists(const char *profile)
{
	_cleanup_free_ char *cp = home_file("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials");
	_cleanup_free_ char *fp = home_file("AWS_CONFIG_FILE", ".aws/config");
	_cleanup_free_ char *want = xasprintf("profile %s", profile);

	return ini_has(cp, profile) || ini_has(fp, want);
}

int
aws_creds_load(struct aws_creds *c, struct sbx_err *e)
{
	const char *ak = getenv("AWS_ACCESS_KEY_ID"), *sk = getenv("AWS_SECRET_ACCESS_KEY");
	const char *tok = getenv("AWS_SESSION_TOKEN");
	const char *profile = aws_profile_name();
	int rc;

	memset(c, 0, sizeof *c);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	/* A profile asked for by name must exist, even with keys in the
	 * environment: the AWS CLI refuses so too. */
	if (strcmp(profile, "default") != 0 && !profile_exists(profile))
		return sbx_error(e, SBX_EDENIED, "fix AWS_PROFILE (`aws configure list-profiles` "
		    "lists them)", "the AWS profile '%s' is in neither the config nor the shared "
		    "credentials file", profile);
	/* The order of botocore's resolver (and the AWS CLI's). */
	if (ak && *ak && sk && *sk) {
		c->access_key = xstrdup(ak);
		c->secret_key = xstrdup(sk);
		c->session_token = tok && *tok ? xstrdup(tok) : NULL;
		snprintf(c->source, sizeof c->source, "environment (AWS_ACCESS_KEY_ID)");
		return 0;
	}
	if (is_assume_role(profile))
		return assume_role(profile, 0, c, e);
	if ((rc = profile_sources(profile, 1, c, e)) <= 0)
		return rc;
	if ((rc = from_container(c, e)) <= 0) {
		if (rc == 0)
			snprintf(c->source, sizeof c->source, "container credentials");
		return rc;
	}
	if ((rc = from_imds(c, e)) <= 0)
		return rc;
	return sbx_error(e, SBX_EDENIED, "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
	    "run `aws configure` (or `aws configure sso`), or set AWS_PROFILE",
	    "no AWS credentials found (looked at: the environment, profile '%s' in the "
	    "shared credentials and config files, web identity, container credentials, "
	    "instance metadata)", profile);
}

/* ---- region and endpoint ----------------------------------------------- */

static int
region_valid(const char *r)
{
	size_t n = strlen(r);

	if (n < 4 || n > 32)
		return 0;
	for (const char *p = r; *p; p++)
		if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '-'))
			return 0;
	return 1;
}

int
aws_region_resolve(const char *flag_region, const char *image_arn, char **out,
    const char **from, struct sbx_err *e)
{
	const char *v = NULL, *src = NULL;
	_cleanup_free_ char *arn_region = NULL, *prof = NULL;

	*out = NULL;
	if (flag_region && *flag_region) {
		v = flag_region;
		src = "flag";
	} else if (image_arn && strncmp(image_arn, "arn:", 4) == 0) {
		/* arn:PARTITION:SERVICE:REGION:ACCOUNT:... */
		const char *p = image_arn;
		for (int i = 0; i < 3 && p; i++)
			if ((p = strchr(p, ':')) != NULL)
				p++;
		const char *end = p ? strchr(p, ':') : NULL;
		if (p && end && end > p) {
			arn_region = xstrndup(p, (size_t)(end - p));
			v = arn_region;
			src = "image ARN";
		}
	}
	static const char *const envs[] = { "AWS_REGION", "AWS_DEFAULT_REGION" };
	for (size_t i = 0; src == NULL && i < ARRAY_SIZE(envs); i++) {
		const char *x = getenv(envs[i]);
		if (x && *x) {
			v = x;
			src = envs[i];
		}
	}
	if (src == NULL && (prof = aws_profile_get("region")) && *prof) {
		v = prof;
		src = "profile";
	}
	if (src == NULL)
		return sbx_error(e, SBX_EINVAL, "set lambda_region (--region) or AWS_REGION, "
		    "or `aws configure set region REGION`", "no AWS region configured");
	if (!region_valid(v))
		return sbx_error(e, SBX_EINVAL, "a region looks like us-east-1",
		    "AWS region '%s' (from %s) is not valid", v, src);
	*out = xstrdup(v);
	if (from)
		*from = src;
	return 0;
}
