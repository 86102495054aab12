/* STS AssumeRole, AssumeRoleWithWebIdentity and IAM Identity Center's
 * GetRoleCredentials (see aws-sts.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include "lib/jspec.h"
#include "backends/lambda/aws-sts.h"
#include "backends/lambda/aws-xml.h"
#include "backends/lambda/sigv4.h"
#include "lib/buf.h"
#include "lib/log.h"
#include "lib/util.h"

#define ANSWER_MAX	(64u << 10)
#define TIMEOUT_MS	15000
#define TOKEN_FILE_MAX	(64u << 10)	/* a web identity token (a JWT) */
#define FIELD_MAX	4096		/* a session token is ~1 KiB, at most a few */

char *
aws_sts_endpoint(const char *region)
{
	return aws_endpoint_resolve(NULL, "STS", "sts", region ? region : "us-east-1");
}

static size_t
sink(char *p, size_t sz, size_t n, void *arg)
{
	return buf_append(arg, p, sz * n) < 0 ? 0 : sz * n;
}

/* host[:port] and the path prefix of a base URL. */
static char *
url_host(const char *url)
{
	const char *h = strstr(url, "://"), *end;

	h = h ? h + 3 : url;
	end = strchr(h, '/');
	return end ? xstrndup(h, (size_t)(end - h)) : xstrdup(h);
}

static const char *
url_path(const char *url)
{
	const char *h = strstr(url, "://"), *p = strchr(h ? h + 3 : url, '/');

	return p ? p : "";
}

/* One request; *status 0 when nothing answered (e says why). */
static int
perform(const char *method, const char *url, struct curl_slist *hl, const char *body,
    struct buf *out, long *status, const char *what, struct sbx_err *e)
{
	CURL *h = curl_easy_init();
	CURLcode rc;
	const char *ca = getenv("AWS_CA_BUNDLE");

	*status = 0;
	if (h == NULL)
		fatal("out of memory");
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	if (body) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
	}
	if (ca && *ca)
		curl_easy_setopt(h, CURLOPT_CAINFO, ca);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)TIMEOUT_MS);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
	rc = curl_easy_perform(h);
	if (rc == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
	curl_easy_cleanup(h);
	if (rc != CURLE_OK)
		return sbx_error(e, SBX_EDENIED, "check the network, or point AWS_ENDPOINT_URL_STS "
		    "(AWS_ENDPOINT_URL_SSO) at a reachable endpoint", "%s: cannot reach %s: %s",
		    what, url, curl_easy_strerror(rc));
	return 0;
}

/* The credentials in an STS answer's <Credentials>. */
static int
sts_credentials(const struct buf *b, struct aws_creds *out, const char *what,
    struct sbx_err *e)
{
	char ak[256], exp[64];
	_cleanup_free_ char *sk = xmalloc(FIELD_MAX), *tok = xmalloc(FIELD_MAX);
	int64_t when;

	if (aws_xml_text_in(b->data, b->len, "Credentials", "AccessKeyId", ak, sizeof ak) != 1 ||
	    aws_xml_text_in(b->data, b->len, "Credentials", "SecretAccessKey", sk,
	    FIELD_MAX) != 1 ||
	    aws_xml_text_in(b->data, b->len, "Credentials", "SessionToken", tok, FIELD_MAX) != 1 ||
	    aws_xml_text_in(b->data, b->len, "Credentials", "Expiration", exp, sizeof exp) != 1 ||
	    ak[0] == '\0' || sk[0] == '\0') {
		explicit_bzero(sk, FIELD_MAX);
		return sbx_error(e, SBX_EDENIED, NULL, "%s: no credentials in STS's answer", what);
	}
	if ((when = aws_parse_time(exp)) < 0) {
		explicit_bzero(sk, FIELD_MAX);
		return sbx_error(e, SBX_EDENIED, NULL, "%s: Expiration '%s' is not a time", what,
		    exp);
	}
	out->access_key = xstrdup(ak);
	out->secret_key = xstrdup(sk);
	out->session_token = xstrdup(tok);
	out->expires_at = when;
	explicit_bzero(sk, FIELD_MAX);
	explicit_bzero(tok, FIELD_MAX);
	return 0;
}

static int
sts_error(const struct buf *b, long status, const char *what, const char *role,
    struct sbx_err *e)
{
	char code[96] = "", msg[512] = "";

	if (b->data && b->len) {
		aws_xml_text_in(b->data, b->len, "Error", "Code", code, sizeof code);
		aws_xml_text_in(b->data, b->len, "Error", "Message", msg, sizeof msg);
	}
	if (strcmp(code, "AccessDenied") == 0)
		return sbx_error(e, SBX_EDENIED, "the role's trust policy must let the source "
		    "identity assume it (and match external_id, if it sets one)",
		    "%s %s: AccessDenied: %s", what, role, msg[0] ? msg : "no message");
	if (strcmp(code, "ExpiredTokenException") == 0 || strcmp(code, "InvalidIdentityToken") == 0)
		return sbx_error(e, SBX_EDENIED, "get a fresh token (the file is usually "
		    "rewritten by the platform)", "%s %s: %s: %s", what, role, code, msg);
	return sbx_error(e, SBX_EDENIED, "see `sbxtop doctor --backend lambda`",
	    "%s %s: %s (HTTP %ld)%s%s", what, role, code[0] ? code : "an error", status,
	    msg[0] ? ": " : "", msg);
}

static char *
form_add(char *form, const char *k, const char *v)
{
	_cleanup_free_ char *ev = sigv4_escape(v, 0);
	char *r = xasprintf("%s&%s=%s", form, k, ev);

	free(form);
	return r;
}

static char *
session_name(const struct aws_assume *a)
{
	return a->session_name && *a->session_name ? xstrdup(a->session_name) :
	    xasprintf("sbxtop-%lld", (long long)time(NULL));
}

static int
sts_call(const struct aws_creds *src, const struct aws_assume *a, char *form,
    struct aws_creds *out, const char *what, struct sbx_err *e)
{
	const char *region = a->region && *a->region ? a->region : "us-east-1";
	_cleanup_free_ char *ep = aws_sts_endpoint(region), *host = url_host(ep);
	_cleanup_free_ char *path = xasprintf("%s/", url_path(ep)), *url = xasprintf("%s/", ep);
	struct sigv4_header ct[1] = { { "Content-Type",
	    "application/x-www-form-urlencoded; charset=utf-8" } };
	struct curl_slist *hl = NULL;
	struct buf b;
	long st;
	char line[SIGV4_AUTH_MAX + 32];
	int rc;

	hl = curl_slist_append(hl, "Content-Type: application/x-www-form-urlencoded; "
	    "charset=utf-8");
	hl = curl_slist_append(hl, "Accept:");
	hl = curl_slist_append(hl, "Expect:");
	if (src != NULL) {
		struct sigv4_request r = { "POST", host, path, NULL, 0, ct, 1, form, strlen(form),
		    0, 0, NULL };
		struct sigv4_key k = { src->access_key, src->secret_key, src->session_token,
		    region, "sts" };
		struct sigv4_out so;
		if (sigv4_sign(&r, &k, time(NULL), &so, e) < 0) {
			curl_slist_free_all(hl);
			return -1;
		}
		snprintf(line, sizeof line, "Authorization: %s", so.authorization);
		hl = curl_slist_append(hl, line);
		snprintf(line, sizeof line, "X-Amz-Date: %s", so.amz_date);
		hl = curl_slist_append(hl, line);
		if (src->session_token) {
			_cleanup_free_ char *t = xasprintf("X-Amz-Security-Token: %s",
			    src->session_token);
			hl = curl_slist_append(hl, t);
		}
		sigv4_out_free(&so);
	}
	log_debug("%s %s: POST %s, %s", what, a->role_arn, url, src ? "signed for service sts" :
	    "unsigned");
	buf_init(&b, ANSWER_MAX);
	rc = perform("POST", url, hl, form, &b, &st, what, e);
	curl_slist_free_all(hl);
	if (rc == 0 && st != 200)
		rc = sts_error(&b, st, what, a->role_arn, e);
	else if (rc == 0)
		rc = sts_credentials(&b, out, what, e);
	buf_free(&b);
	return rc;
}

int
aws_sts_assume_role(const struct aws_creds *src, const struct aws_assume *a,
    struct aws_creds *out, struct sbx_err *e)
{
	_cleanup_free_ char *name = session_name(a);
	char *form = xstrdup("Action=AssumeRole&Version=2011-06-15");
	int rc;

	form = form_add(form, "RoleArn", a->role_arn);
	form = form_add(form, "RoleSessionName", name);
	if (a->external_id && *a->external_id)
		form = form_add(form, "ExternalId", a->external_id);
	if (a->duration_s > 0) {
		char d[16];
		snprintf(d, sizeof d, "%d", a->duration_s);
		form = form_add(form, "DurationSeconds", d);
	}
	rc = sts_call(src, a, form, out, "STS AssumeRole", e);
	free(form);
	return rc;
}

int
aws_sts_assume_role_web_identity(const struct aws_assume *a, const char *token_file,
    struct aws_creds *out, struct sbx_err *e)
{
	_cleanup_free_ char *name = session_name(a);
	char *tok = read_file(token_file, TOKEN_FILE_MAX, NULL), *form;
	int rc;

	/* The token goes as the file holds it, as botocore sends it. */
	if (tok == NULL)
		return sbx_error_errno(e, SBX_EDENIED, "check AWS_WEB_IDENTITY_TOKEN_FILE "
		    "(web_identity_token_file)", "cannot read the web identity token file %s",
		    token_file);
	if (*tok == '\0') {
		free(tok);
		return sbx_error(e, SBX_EDENIED, NULL, "the web identity token file %s is empty",
		    token_file);
	}
	form = xstrdup("Action=AssumeRoleWithWebIdentity&Version=2011-06-15");
	form = form_add(form, "RoleArn", a->role_arn);
	form = form_add(form, "RoleSessionName", name);
	form = form_add(form, "WebIdentityToken", tok);
	explicit_bzero(tok, strlen(tok));
	free(tok);
	rc = sts_call(NULL, a, form, out, "STS AssumeRoleWithWebIdentity", e);
	explicit_bzero(form, strlen(form));
	free(form);
	return rc;
}

int
aws_sso_role_credentials(const char *sso_region, const char *account_id,
    const char *role_name, const char *access_token, struct aws_creds *out,
    struct sbx_err *e)
{
	_cleanup_free_ char *ep = aws_endpoint_resolve(NULL, "SSO", "portal.sso",
	    sso_region);
	_cleanup_free_ char *acct = sigv4_escape(account_id, 0), *role = sigv4_escape(role_name, 0);
	_cleanup_free_ char *url = xasprintf("%s/federation/credentials?account_id=%s&role_name=%s",
	    ep, acct, role);
	_cleanup_free_ char *auth = NULL;
	struct curl_slist *hl = NULL;
	struct buf b;
	cJSON *o = NULL, *rc_;
	long st;
	int rc;

	if (strpbrk(access_token, "\r\n"))
		return sbx_error(e, SBX_EDENIED, "run `aws sso login`", "the cached SSO token "
		    "has a line break");
	auth = xasprintf("x-amz-sso_bearer_token: %s", access_token);
	hl = curl_slist_append(hl, auth);
	hl = curl_slist_append(hl, "Accept: application/json");
	explicit_bzero(auth, strlen(auth));
	log_debug("SSO GetRoleCredentials: GET %s (account %s, role %s)", url, account_id,
	    role_name);
	buf_init(&b, ANSWER_MAX);
	rc = perform("GET", url, hl, NULL, &b, &st, "SSO GetRoleCredentials", e);
	curl_slist_free_all(hl);
	if (rc == 0 && b.len)
		o = cJSON_ParseWithLength(b.data, b.len);
	buf_free(&b);
	if (rc < 0)
		return -1;
	if (st == 401 || st == 403) {
		cJSON_Delete(o);
		return sbx_error(e, SBX_EDENIED, "run `aws sso login` again", "SSO "
		    "GetRoleCredentials: the cached token was refused (HTTP %ld): %s", st,
		    cJSON_GetStringValue(cJSON_GetObjectItem(o, "message")) ?
		    cJSON_GetStringValue(cJSON_GetObjectItem(o, "message")) : "no message");
	}
	rc_ = cJSON_GetObjectItem(o, "roleCredentials");
	{
		const char *ak = cJSON_GetStringValue(cJSON_GetObjectItem(rc_, "accessKeyId"));
		const char *sk = cJSON_GetStringValue(cJSON_GetObjectItem(rc_, "secretAccessKey"));
		const char *tok = cJSON_GetStringValue(cJSON_GetObjectItem(rc_, "sessionToken"));
		const cJSON *exp = cJSON_GetObjectItem(rc_, "expiration");
		if (st != 200 || ak == NULL || sk == NULL || *ak == '\0' || *sk == '\0' ||
		    !cJSON_IsNumber(exp)) {
			cJSON_Delete(o);
			return sbx_error(e, SBX_EDENIED, "check sso_account_id and sso_role_name",
			    "SSO GetRoleCredentials for role %s in %s: HTTP %ld, no credentials",
			    role_name, account_id, st);
		}
		out->access_key = xstrdup(ak);
		out->secret_key = xstrdup(sk);
		out->session_token = tok && *tok ? xstrdup(tok) : NULL;
		out->expires_at = jint_of(exp, 0, INT64_MIN, INT64_MAX);
	}
	cJSON_Delete(o);
	return 0;
}

int
aws_sso_oidc_refresh(const char *sso_region, const char *client_id,
    const char *client_secret, const char *refresh_token, char **access,
    int64_t *expires_in, char **refresh, struct sbx_err *e)
{
	_cleanup_free_ char *ep = aws_endpoint_resolve(NULL, "SSO_OIDC", "oidc",
	    sso_region);
	_cleanup_free_ char *url = xasprintf("%s/token", ep);
	cJSON *req = cJSON_CreateObject(), *o = NULL;
	struct curl_slist *hl = NULL;
	char *body;
	struct buf b;
	long st;
	int rc;
	const char *at, *rt;
	const cJSON *ei;

	*access = *refresh = NULL;
	cJSON_AddStringToObject(req, "clientId", client_id);
	cJSON_AddStringToObject(req, "clientSecret", client_secret);
	cJSON_AddStringToObject(req, "grantType", "refresh_token");
	cJSON_AddStringToObject(req, "refreshToken", refresh_token);
	body = cJSON_PrintUnformatted(req);
	cJSON_Delete(req);
	hl = curl_slist_append(hl, "Content-Type: application/json");
	hl = curl_slist_append(hl, "Accept: application/json");
	hl = curl_slist_append(hl, "Expect:");
	log_debug("SSO OIDC CreateToken (refresh_token): POST %s", url);
	buf_init(&b, ANSWER_MAX);
	rc = perform("POST", url, hl, body, &b, &st, "SSO OIDC CreateToken", e);
	curl_slist_free_all(hl);
	explicit_bzero(body, strlen(body));
	free(body);
	if (rc == 0 && b.len)
		o = cJSON_ParseWithLength(b.data, b.len);
	if (b.data)
		explicit_bzero(b.data, b.len);
	buf_free(&b);
	if (rc < 0)
		return -1;
	at = cJSON_GetStringValue(cJSON_GetObjectItem(o, "accessToken"));
	rt = cJSON_GetStringValue(cJSON_GetObjectItem(o, "refreshToken"));
	ei = cJSON_GetObjectItem(o, "expiresIn");
	if (st != 200 || at == NULL || *at == '\0' || !cJSON_IsNumber(ei) || ei->valuedouble <= 0) {
		sbx_error(e, SBX_EDENIED, NULL, "SSO OIDC CreateToken: HTTP %ld, no new token%s%s",
		    st, cJSON_GetStringValue(cJSON_GetObjectItem(o, "error")) ? ": " : "",
		    cJSON_GetStringValue(cJSON_GetObjectItem(o, "error")) ?
		    cJSON_GetStringValue(cJSON_GetObjectItem(o, "error")) : "");
		cJSON_Delete(o);
		return -1;
	}
	*access = xstrdup(at);
	*refresh = rt && *rt ? xstrdup(rt) : NULL;
	*expires_in = jint_of(ei, 0, INT64_MIN, INT64_MAX);
	cJSON_Delete(o);
	return 0;
}
