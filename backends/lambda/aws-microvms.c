/* The Lambda MicroVMs API client (see aws-microvms.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "backends/lambda/aws-creds.h"
#include "backends/lambda/aws-microvms.h"
#include "backends/lambda/aws-xml.h"
#include "lib/buf.h"
#include "lib/log.h"
#include "backends/lambda/sigv4.h"
#include "lib/util.h"

#define ANSWER_MAX	(8u << 20)
#define ATTEMPTS	5
#define TIMEOUT_MS	30000
#define MAX_QUERY	16

struct awsmv {
	struct aws_creds creds;
	char		*region;
	const char	*region_from;
	char		*endpoint;	/* "https://lambda.us-east-1.amazonaws.com" */
	char		 last_error[96];
	int		 backoff_ms;
};

struct awsmv *
awsmv_new(const char *region_flag, const char *image_arn, const char *endpoint_flag,
    struct sbx_err *e)
{
	struct awsmv *c = xcalloc(1, sizeof *c);
	const char *bo = getenv("SBXTOP_AWS_BACKOFF_MS");

	c->backoff_ms = bo && atoi(bo) > 0 ? atoi(bo) : 200;
	if (aws_region_resolve(region_flag, image_arn, &c->region, &c->region_from, e) < 0 ||
	    aws_creds_load(&c->creds, e) < 0) {
		awsmv_free(c);
		return NULL;
	}
	c->endpoint = aws_endpoint_resolve(endpoint_flag, AWSMV_ENDPOINT_ENV, AWSMV_HOST,
	    c->region);
	if (strncmp(c->endpoint, "https://", 8) != 0 && strncmp(c->endpoint, "http://", 7) != 0) {
		sbx_error(e, SBX_EINVAL, "give a URL such as https://host", "endpoint URL '%s' is "
		    "not http(s)", c->endpoint);
		awsmv_free(c);
		return NULL;
	}
	log_debug("lambda: endpoint %s, region %s (from %s), signing name %s, credentials "
	    "from %s", c->endpoint, c->region, c->region_from, AWSMV_SERVICE, c->creds.source);
	return c;
}

void
awsmv_free(struct awsmv *c)
{
	if (c == NULL)
		return;
	aws_creds_clear(&c->creds);
	free(c->region);
	free(c->endpoint);
	free(c);
}

const char *
awsmv_ca_bundle(void)
{
	const char *p = getenv("AWS_CA_BUNDLE");

	return p != NULL && *p != '\0' ? p : NULL;
}

const char *awsmv_region(const struct awsmv *c) { return c->region; }
const char *awsmv_region_source(const struct awsmv *c) { return c->region_from; }
const char *awsmv_endpoint(const struct awsmv *c) { return c->endpoint; }
const char *awsmv_creds_source(const struct awsmv *c) { return c->creds.source; }
int64_t awsmv_creds_expiry(const struct awsmv *c) { return c->creds.expires_at; }
const char *awsmv_last_error(const struct awsmv *c) { return c->last_error; }
void awsmv_set_backoff(struct awsmv *c, int ms) { c->backoff_ms = ms; }

static size_t
sink(char *p, size_t sz, size_t n, void *arg)
{
	return buf_append(arg, p, sz * n) < 0 ? 0 : sz * n;
}

struct hdrs {
	char		 etype[96];
	const char	*want;		/* a header to keep, or NULL */
	char		*value;		/* its value (128 bytes) */
};

/* The value of header line p (len bytes) when it is name, trimmed, into out. */
static int
header_is(const char *p, size_t len, const char *name, char *out, size_t outsz)
{
	size_t nl = strlen(name);
	const char *v;
	size_t vl;

	if (len <= nl || p[nl] != ':' || strncasecmp(p, name, nl) != 0)
		return 0;
	v = p + nl + 1;
	vl = len - nl - 1;
	while (vl && (*v == ' ' || *v == '\t')) {
		v++;
		vl--;
	}
	while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
		vl--;
	snprintf(out, outsz, "%.*s", (int)vl, v);
	return 1;
}

/* An error type as REST-JSON services send it, to its bare name, as the SDKs do:
 * "ValidationException:http://internal.amazon.com/..." and
 * "com.amazonaws.lambdamicrovms#ValidationException" are both
 * "ValidationException". */
static void
error_name(char *t)
{
	char *colon = strchr(t, ':'), *hash;

	if (colon)
		*colon = '\0';
	if ((hash = strrchr(t, '#')) != NULL)
		memmove(t, hash + 1, strlen(hash + 1) + 1);
}

static size_t
header_cb(char *p, size_t sz, size_t n, void *arg)
{
	struct hdrs *h = arg;
	size_t len = sz * n;

	if (header_is(p, len, "x-amzn-errortype", h->etype, sizeof h->etype))
		error_name(h->etype);
	if (h->want)
		header_is(p, len, h->want, h->value, 128);
	return len;
}

/* host[:port] of the endpoint, as the Host header curl sends. */
static char *
host_of(const char *url)
{
	const char *h = strstr(url, "://");
	const char *end;

	h = h ? h + 3 : url;
	end = strchr(h, '/');
	return end ? xstrndup(h, (size_t)(end - h)) : xstrdup(h);
}

/* The path prefix of the endpoint ("" normally). */
static const char *
path_of(const char *url)
{
	const char *h = strstr(url, "://");
	const char *p = strchr(h ? h + 3 : url, '/');

	return p ? p : "";
}

static void
map_error(struct awsmv *c, const struct aws_http *r, const struct hdrs *h,
    const struct buf *b, struct sbx_err *e)
{
	long st = r->status;
	cJSON *o = NULL;
	char xcode[96] = "", xmsg[512] = "";
	const char *msg = NULL, *type = h->etype[0] ? h->etype : NULL;
	char hint[256];
	enum sbx_errcode code = SBX_EBACKEND;
	_cleanup_free_ char *action = r->action ? xstrdup(r->action) :
	    xasprintf("%s:%s", r->service, r->op);

	if (b->data && b->len > 0 && b->data[0] == '<') {
		/* S3, IAM and STS answer XML: <Error><Code>..</Code><Message>.. */
		if (aws_xml_text_in(b->data, b->len, "Error", "Code", xcode, sizeof xcode) == 1)
			type = type ? type : xcode;
		if (aws_xml_text_in(b->data, b->len, "Error", "Message", xmsg, sizeof xmsg) == 1)
			msg = xmsg;
	} else if (b->data && b->len > 0) {
		o = cJSON_ParseWithLength(b->data, b->len);
		msg = cJSON_GetStringValue(cJSON_GetObjectItem(o, "message"));
		if (msg == NULL)
			msg = cJSON_GetStringValue(cJSON_GetObjectItem(o, "Message"));
		if (type == NULL) {
			const char *bt = cJSON_GetStringValue(cJSON_GetObjectItem(o, "code"));
			if (bt == NULL)
				bt = cJSON_GetStringValue(cJSON_GetObjectItem(o, "__type"));
			if (bt != NULL) {
				snprintf(xcode, sizeof xcode, "%s", bt);
				error_name(xcode);
				type = xcode[0] ? xcode : NULL;
			}
		}
	}
	if (type == NULL)
		/* A HEAD answer has no body: the status is all there is. */
		type = st == 404 ? "NotFound" : st == 403 ? "Forbidden" :
		    st == 301 ? "PermanentRedirect" : "UnknownError";
	snprintf(c->last_error, sizeof c->last_error, "%s", type);
	snprintf(hint, sizeof hint, "see `sbxtop doctor --backend lambda`");
	if (strcmp(type, "AccessDeniedException") == 0 || strcmp(type, "AccessDenied") == 0 ||
	    (strcmp(type, "Forbidden") == 0 && !r->s3)) {
		code = SBX_EDENIED;
		snprintf(hint, sizeof hint, "the credentials (%.96s) lack %s; see "
		    "`sbxtop doctor --backend lambda`", c->creds.source, action);
	} else if (strcmp(type, "InvalidSignatureException") == 0 ||
	    strcmp(type, "SignatureDoesNotMatch") == 0 ||
	    strcmp(type, "UnrecognizedClientException") == 0 ||
	    strcmp(type, "InvalidClientTokenId") == 0 ||
	    strcmp(type, "InvalidAccessKeyId") == 0 ||
	    strcmp(type, "IncompleteSignatureException") == 0 ||
	    strcmp(type, "MissingAuthenticationTokenException") == 0 ||
	    strcmp(type, "ExpiredTokenException") == 0 || strcmp(type, "ExpiredToken") == 0 ||
	    strcmp(type, "RequestTimeTooSkewed") == 0 || (st == 403 && !r->s3)) {
		code = SBX_EDENIED;
		snprintf(hint, sizeof hint, "check the AWS credentials (from %.96s) and this host's "
		    "clock; see `sbxtop doctor --backend lambda`", c->creds.source);
	} else if (st == 403) {
		code = SBX_EDENIED;
	} else if (st == 404) {
		code = SBX_ENOTFOUND;
	} else if (st == 400) {
		code = SBX_EINVAL;
	} else if (st == 409) {
		code = SBX_ESTATE;
		if (!r->s3 && strcmp(r->service, "iam") != 0)
			snprintf(hint, sizeof hint, "run `sbxtop status ID` to see its state");
	} else if (st == 429) {
		snprintf(hint, sizeof hint, "AWS is throttling this account: retry in a moment");
	}
	sbx_error(e, code, hint, "AWS %s: %s: %s", r->op, type, msg ? msg : "no message");
	cJSON_Delete(o);
}

/* The request's headers: the signature's, the session token, the caller's
 * (*has_ctype when one is Content-Type), Host; curl's Expect off. */
static struct curl_slist *
signed_headers(const struct awsmv *c, const struct aws_http *r, const char *host,
    const struct sigv4_out *so, int *has_ctype)
{
	struct curl_slist *hl = NULL;
	char line[SIGV4_AUTH_MAX + 32];

	snprintf(line, sizeof line, "Authorization: %s", so->authorization);
	hl = curl_slist_append(hl, line);
	snprintf(line, sizeof line, "X-Amz-Date: %s", so->amz_date);
	hl = curl_slist_append(hl, line);
	if (r->s3) {
		snprintf(line, sizeof line, "X-Amz-Content-SHA256: %s", so->payload_hash);
		hl = curl_slist_append(hl, line);
	}
	if (c->creds.session_token) {
		_cleanup_free_ char *t = xasprintf("X-Amz-Security-Token: %s",
		    c->creds.session_token);
		hl = curl_slist_append(hl, t);
	}
	*has_ctype = 0;
	for (size_t i = 0; i < r->nheaders; i++) {
		_cleanup_free_ char *t = xasprintf("%s: %s", r->headers[i].name,
		    r->headers[i].value);
		hl = curl_slist_append(hl, t);
		*has_ctype |= strcasecmp(r->headers[i].name, "Content-Type") == 0;
	}
	snprintf(line, sizeof line, "Host: %s", host);
	hl = curl_slist_append(hl, line);
	hl = curl_slist_append(hl, "Expect:");
	if (!r->s3)
		hl = curl_slist_append(hl, "Accept: application/json");
	return hl;
}

/* One try of r at url with the headers *hl (a Content-Type: that removes
 * curl's own is added to them where there is no body): the answer into
 * r->answer, the wanted header into hd, the status into *st. */
static CURLcode
perform(const struct aws_http *r, const char *url, struct curl_slist **hl, int has_ctype,
    struct hdrs *hd, long *st)
{
	CURL *h;
	CURLcode rc;

	buf_reset(r->answer);
	if ((h = curl_easy_init()) == NULL)
		fatal("out of memory");
	curl_easy_setopt(h, CURLOPT_URL, url);
	if (strcmp(r->method, "HEAD") == 0)
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	else
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, r->method);
	if (awsmv_ca_bundle() != NULL)
		curl_easy_setopt(h, CURLOPT_CAINFO, awsmv_ca_bundle());
	if (r->body) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, r->body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
	} else if (strcmp(r->method, "POST") == 0 || strcmp(r->method, "PUT") == 0) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, 0L);
		/* No body, no Content-Type: curl would add an unsigned form type. */
		if (!has_ctype)
			*hl = curl_slist_append(*hl, "Content-Type:");
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, *hl);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(r->body_len > (1u << 20) ?
	    10 * TIMEOUT_MS : TIMEOUT_MS));
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, r->answer);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, header_cb);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, hd);
	rc = curl_easy_perform(h);
	if (rc == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, st);
	curl_easy_cleanup(h);
	return rc;
}

int
awsmv_http(struct awsmv *c, struct aws_http *r, struct sbx_err *e)
{
	struct sigv4_param qp[MAX_QUERY];
	size_t nq = 0;
	const char *endpoint = r->endpoint ? r->endpoint : c->endpoint;
	_cleanup_free_ char *host = host_of(endpoint);
	_cleanup_free_ char *fullpath = xasprintf("%s%s", path_of(endpoint), r->path);

	c->last_error[0] = '\0';
	r->status = 0;
	r->header_value[0] = '\0';
	if (r->nheaders > SIGV4_MAX_HEADERS - 2)
		return sbx_error(e, SBX_EINTERNAL, NULL, "AWS %s: too many headers", r->op);
	for (const char *const *q = r->query; q && q[0] && nq < MAX_QUERY; q += 2)
		if (q[1] != NULL) {
			qp[nq].key = q[0];
			qp[nq++].value = q[1];
		}
	for (int attempt = 1;; attempt++) {
		struct sigv4_request sr = { r->method, host, fullpath, qp, nq, r->headers,
		    r->nheaders, r->body, r->body_len, r->s3, 0, r->payload_hash };
		struct sigv4_key k = { c->creds.access_key, c->creds.secret_key,
		    c->creds.session_token, r->region ? r->region : c->region, r->service };
		struct sigv4_out so;
		struct curl_slist *hl = NULL;
		struct hdrs hd = { "", r->want_header, r->header_value };
		CURLcode rc;
		long st = 0;
		int has_ctype = 0;
		_cleanup_free_ char *url = NULL;

		if (c->creds.expires_at && c->creds.expires_at - wall_ms() < 60000) {
			/* Temporary credentials about to lapse: fetch them again. */
			aws_creds_clear(&c->creds);
			if (aws_creds_load(&c->creds, e) < 0)
				return -1;
			k.access_key = c->creds.access_key;
			k.secret_key = c->creds.secret_key;
			k.session_token = c->creds.session_token;
		}
		if (sigv4_sign(&sr, &k, time(NULL), &so, e) < 0)
			return -1;
		url = xasprintf("%s%s%s%s", endpoint, r->path, so.query[0] ? "?" : "", so.query);
		if (attempt == 1)
			log_debug("AWS %s: %s %s, signed for service %s in %s", r->op, r->method,
			    url, k.service, k.region);
		hl = signed_headers(c, r, host, &so, &has_ctype);
		sigv4_out_free(&so);
		rc = perform(r, url, &hl, has_ctype, &hd, &st);
		curl_slist_free_all(hl);
		r->status = st;

		if (rc == CURLE_OK && st >= 200 && st < 300)
			return 0;
		/* Throttled requests were not carried out: retrying is always safe.
		 * Server errors and lost connections only for idempotent calls. */
		int retry = st == 429 || (st == 503 && r->s3) ||
		    (r->idempotent && (rc != CURLE_OK || st >= 500));
		if (retry && attempt < ATTEMPTS) {
			int ms = c->backoff_ms << (attempt - 1);
			ms += (int)(now_ms() % (ms / 2 + 1));		/* jitter */
			log_debug("AWS %s: %s; retry %d in %d ms", r->op,
			    rc != CURLE_OK ? curl_easy_strerror(rc) : "throttled or failed",
			    attempt, ms);
			usleep((useconds_t)ms * 1000);
			continue;
		}
		if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE) {
			snprintf(c->last_error, sizeof c->last_error, "NetworkError");
			return sbx_error(e, SBX_EDENIED, "if the endpoint uses a private CA, point "
			    "AWS_CA_BUNDLE at its PEM file; otherwise check the clock and CA store",
			    "AWS %s: the TLS certificate of %s is not trusted", r->op, endpoint);
		}
		if (rc != CURLE_OK) {
			snprintf(c->last_error, sizeof c->last_error, "NetworkError");
			return sbx_error(e, SBX_EBACKEND, "check the network and the endpoint (see "
			    "`sbxtop doctor --backend lambda`)", "AWS %s: cannot reach %s: %s", r->op,
			    endpoint, curl_easy_strerror(rc));
		}
		map_error(c, r, &hd, r->answer, e);
		return -1;
	}
}

static int
call(struct awsmv *c, const char *service, const char *op, const char *method,
    const char *path, const char *const *query, const char *ctype, const char *body,
    int idempotent, struct buf *answer, struct sbx_err *e)
{
	struct sigv4_header ct[1] = { { "Content-Type", ctype ? ctype : "" } };
	_cleanup_free_ char *action = xasprintf("%s:%s", service, op);
	struct aws_http r = {
		.service = service, .op = op, .action = action, .method = method,
		.path = path, .query = query, .headers = ct, .nheaders = ctype ? 1 : 0,
		.body = body, .body_len = body ? strlen(body) : 0, .idempotent = idempotent,
		.answer = answer,
	};

	return awsmv_http(c, &r, e);
}

int
awsmv_call(struct awsmv *c, const char *op, const char *method, const char *path,
    const char *const *query, const cJSON *body, int idempotent, cJSON **out,
    struct sbx_err *e)
{
	_cleanup_free_ char *text = body ? cJSON_PrintUnformatted(body) : NULL;
	struct buf b;
	int rc;

	if (out)
		*out = NULL;
	buf_init(&b, ANSWER_MAX);
	rc = call(c, AWSMV_SERVICE, op, method, path, query, body ? "application/json" : NULL,
	    text, idempotent, &b, e);
	if (rc == 0 && out && b.len > 0 && (*out = cJSON_ParseWithLength(b.data, b.len)) == NULL)
		rc = sbx_error(e, SBX_EBACKEND, NULL, "AWS %s: the answer is not JSON", op);
	buf_free(&b);
	return rc;
}

static char *
id_path(const char *fmt_prefix, const char *id, const char *suffix)
{
	_cleanup_free_ char *seg = sigv4_escape(id, 0);

	return xasprintf("%s/%s/%s%s", AWSMV_API, fmt_prefix, seg, suffix);
}

int
awsmv_run(struct awsmv *c, const cJSON *req, cJSON **out, struct sbx_err *e)
{
	/* With a clientToken, RunMicrovm is idempotent: a retry returns the same VM. */
	int idem = cJSON_GetObjectItem(req, "clientToken") != NULL;

	return awsmv_call(c, "RunMicrovm", "POST", AWSMV_API "/microvms", NULL, req, idem, out, e);
}

int
awsmv_get(struct awsmv *c, const char *id, cJSON **out, struct sbx_err *e)
{
	_cleanup_free_ char *p = id_path("microvms", id, "");

	return awsmv_call(c, "GetMicrovm", "GET", p, NULL, NULL, 1, out, e);
}

int
awsmv_list(struct awsmv *c, cJSON **out, struct sbx_err *e)
{
	cJSON *all = cJSON_CreateArray();
	_cleanup_free_ char *next = NULL;

	*out = NULL;
	for (int page = 0; page < 1000; page++) {
		const char *q[] = { "maxResults", "50", "nextToken", next, NULL };
		cJSON *o = NULL, *it;
		if (awsmv_call(c, "ListMicrovms", "GET", AWSMV_API "/microvms", q, NULL, 1, &o,
		    e) < 0) {
			cJSON_Delete(all);
			return -1;
		}
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(o, "items"))
			cJSON_AddItemToArray(all, cJSON_Duplicate(it, 1));
		free(next);
		next = NULL;
		const char *n = cJSON_GetStringValue(cJSON_GetObjectItem(o, "nextToken"));
		if (n && *n)
			next = xstrdup(n);
		cJSON_Delete(o);
		if (next == NULL) {
			*out = all;
			return 0;
		}
	}
	cJSON_Delete(all);
	return sbx_error(e, SBX_EBACKEND, NULL, "AWS ListMicrovms: more than 1000 pages");
}

int
awsmv_ping(struct awsmv *c, struct sbx_err *e)
{
	const char *q[] = { "maxResults", "1", NULL };

	return awsmv_call(c, "ListMicrovms", "GET", AWSMV_API "/microvms", q, NULL, 1, NULL, e);
}

int
awsmv_action(struct awsmv *c, const char *id, const char *action, struct sbx_err *e)
{
	int terminate = strcmp(action, "terminate") == 0;
	_cleanup_free_ char *suffix = terminate ? xstrdup("") : xasprintf("/%s", action);
	_cleanup_free_ char *p = id_path("microvms", id, suffix);
	const char *op = strcmp(action, "suspend") == 0 ? "SuspendMicrovm" :
	    strcmp(action, "resume") == 0 ? "ResumeMicrovm" : "TerminateMicrovm";

	/* TerminateMicrovm is DELETE on the MicroVM itself; DELETE is idempotent in
	 * HTTP's sense, and a repeat answers ResourceNotFound or Conflict, which
	 * destroy takes as done. */
	return awsmv_call(c, op, terminate ? "DELETE" : "POST", p, NULL, NULL, terminate,
	    NULL, e);
}

int
awsmv_auth_token(struct awsmv *c, const char *id, const int *ports, size_t nports,
    int minutes, char **token, struct sbx_err *e)
{
	_cleanup_free_ char *p = id_path("microvms", id, "/auth-token");
	cJSON *req = cJSON_CreateObject(), *jports = cJSON_AddArrayToObject(req, "allowedPorts");
	cJSON *out = NULL;
	const char *t;
	int rc;

	*token = NULL;
	for (size_t i = 0; i < nports; i++) {
		cJSON *one = cJSON_CreateObject();
		cJSON_AddNumberToObject(one, "port", ports[i]);
		cJSON_AddItemToArray(jports, one);
	}
	cJSON_AddNumberToObject(req, "expirationInMinutes", minutes);
	rc = awsmv_call(c, "CreateMicrovmAuthToken", "POST", p, NULL, req, 0, &out, e);
	cJSON_Delete(req);
	if (rc < 0)
		return -1;
	t = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(out, "authToken"),
	    "X-aws-proxy-auth"));
	if (t == NULL || *t == '\0' || strpbrk(t, "\r\n")) {
		cJSON_Delete(out);
		return sbx_error(e, SBX_EBACKEND, NULL, "AWS CreateMicrovmAuthToken: no "
		    "X-aws-proxy-auth in the answer");
	}
	*token = xstrdup(t);
	cJSON_Delete(out);
	return 0;
}

int
awsmv_shell_token(struct awsmv *c, const char *id, int minutes, cJSON **token,
    struct sbx_err *e)
{
	_cleanup_free_ char *p = id_path("microvms", id, "/shell-auth-token");
	cJSON *req = cJSON_CreateObject(), *out = NULL, *t, *kv;
	int rc;

	*token = NULL;
	cJSON_AddNumberToObject(req, "expirationInMinutes", minutes);
	rc = awsmv_call(c, "CreateMicrovmShellAuthToken", "POST", p, NULL, req, 0, &out, e);
	cJSON_Delete(req);
	if (rc < 0)
		return -1;
	t = cJSON_GetObjectItem(out, "authToken");
	/* TokenParts: at most 10 header names (no blanks) to values (0 to 8000). */
	rc = cJSON_IsObject(t) && cJSON_GetArraySize(t) > 0 && cJSON_GetArraySize(t) <= 10;
	cJSON_ArrayForEach(kv, t)
		rc &= cJSON_IsString(kv) && kv->string[0] != '\0' &&
		    strpbrk(kv->string, " \t\r\n:") == NULL && strlen(kv->valuestring) <= 8000 &&
		    strpbrk(kv->valuestring, "\r\n") == NULL;
	if (!rc) {
		cJSON_Delete(out);
		return sbx_error(e, SBX_EBACKEND, NULL, "AWS CreateMicrovmShellAuthToken: no "
		    "usable authToken in the answer");
	}
	*token = cJSON_DetachItemFromObject(out, "authToken");
	cJSON_Delete(out);
	return 0;
}

int
awsmv_image_usable(const cJSON *img)
{
	const char *st = cJSON_GetStringValue(cJSON_GetObjectItem(img, "state"));
	const char *v = cJSON_GetStringValue(cJSON_GetObjectItem(img, "latestActiveImageVersion"));

	return st && (strcmp(st, "CREATED") == 0 || strcmp(st, "UPDATED") == 0) && v && *v;
}

int
awsmv_image_get(struct awsmv *c, const char *ident, cJSON **out, struct sbx_err *e)
{
	_cleanup_free_ char *p = id_path("microvm-images", ident, "");

	return awsmv_call(c, "GetMicrovmImage", "GET", p, NULL, NULL, 1, out, e);
}

int
awsmv_image_version_get(struct awsmv *c, const char *ident, const char *version,
    cJSON **out, struct sbx_err *e)
{
	_cleanup_free_ char *v = sigv4_escape(version, 0);
	_cleanup_free_ char *suffix = xasprintf("/versions/%s", v);
	_cleanup_free_ char *p = id_path("microvm-images", ident, suffix);

	return awsmv_call(c, "GetMicrovmImageVersion", "GET", p, NULL, NULL, 1, out, e);
}

int
awsmv_image_builds(struct awsmv *c, const char *ident, const char *version, cJSON **out,
    struct sbx_err *e)
{
	_cleanup_free_ char *v = sigv4_escape(version, 0);
	_cleanup_free_ char *suffix = xasprintf("/versions/%s/builds", v);
	_cleanup_free_ char *p = id_path("microvm-images", ident, suffix);
	_cleanup_free_ char *next = NULL;
	cJSON *all = cJSON_CreateArray();

	*out = NULL;
	for (int page = 0; page < 100; page++) {
		const char *q[] = { "nextToken", next, NULL };
		cJSON *o = NULL, *it;
		const char *n;
		if (awsmv_call(c, "ListMicrovmImageBuilds", "GET", p, q, NULL, 1, &o, e) < 0) {
			cJSON_Delete(all);
			return -1;
		}
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(o, "items"))
			cJSON_AddItemToArray(all, cJSON_Duplicate(it, 1));
		free(next);
		n = cJSON_GetStringValue(cJSON_GetObjectItem(o, "nextToken"));
		next = n && *n ? xstrdup(n) : NULL;
		cJSON_Delete(o);
		if (next == NULL) {
			*out = all;
			return 0;
		}
	}
	cJSON_Delete(all);
	return sbx_error(e, SBX_EBACKEND, NULL, "AWS ListMicrovmImageBuilds: more than 100 pages");
}

int
awsmv_image_create(struct awsmv *c, const cJSON *req, cJSON **out, struct sbx_err *e)
{
	return awsmv_call(c, "CreateMicrovmImage", "POST", AWSMV_API "/microvm-images", NULL, req,
	    cJSON_GetObjectItem(req, "clientToken") != NULL, out, e);
}

int
awsmv_whoami(struct awsmv *c, char **arn, struct sbx_err *e)
{
	struct buf b;
	int rc;
	_cleanup_free_ char *saved = c->endpoint;
	const char *ov = getenv("AWS_ENDPOINT_URL_STS");

	*arn = NULL;
	/* STS has its own endpoint unless an override points everything elsewhere. */
	if (ov && *ov)
		c->endpoint = xstrdup(ov);
	else if (getenv("AWS_ENDPOINT_URL") && *getenv("AWS_ENDPOINT_URL"))
		c->endpoint = xstrdup(getenv("AWS_ENDPOINT_URL"));
	else if (strstr(saved, aws_dns_suffix(c->region)) == NULL)
		c->endpoint = xstrdup(saved);	/* a custom endpoint: ask it */
	else
		c->endpoint = xasprintf("https://sts.%s.%s", c->region, aws_dns_suffix(c->region));
	buf_init(&b, ANSWER_MAX);
	rc = call(c, "sts", "GetCallerIdentity", "POST", "/", NULL,
	    "application/x-www-form-urlencoded; charset=utf-8",
	    "Action=GetCallerIdentity&Version=2011-06-15", 1, &b, e);
	free(c->endpoint);
	c->endpoint = steal_pointer(&saved);
	if (rc == 0) {
		char a[2048];
		if (aws_xml_text(b.data, b.len, "Arn", a, sizeof a) == 1 && a[0])
			*arn = xstrdup(a);
		else
			rc = sbx_error(e, SBX_EBACKEND, NULL, "STS GetCallerIdentity: no Arn in the "
			    "answer");
	}
	buf_free(&b);
	return rc;
}

int
awsmv_arn_account(const char *arn, char out[13])
{
	/* arn:PARTITION:SERVICE:REGION:ACCOUNT:RESOURCE */
	const char *p = arn;

	for (int i = 0; i < 4 && p; i++)
		if ((p = strchr(p, ':')) != NULL)
			p++;
	if (p == NULL || strspn(p, "0123456789") != 12 || p[12] != ':')
		return -1;
	memcpy(out, p, 12);
	out[12] = '\0';
	return 0;
}
