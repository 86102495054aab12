/* AWS Signature Version 4 (see sigv4.h for the rules and why it is ours). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "lib/buf.h"
#include "backends/lambda/sigv4.h"
#include "lib/util.h"

#define CANON_MAX	(1u << 20)	/* a canonical request: headers and query only */

static int
unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	    c == '-' || c == '_' || c == '.' || c == '~';
}

char *
sigv4_escape(const char *s, int keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(s);
	char *r = xmalloc(n * 3 + 1), *p = r;

	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (unreserved(*c) || (keep_slash && *c == '/')) {
			*p++ = (char)*c;
		} else {
			*p++ = '%';
			*p++ = hex[*c >> 4];
			*p++ = hex[*c & 15];
		}
	}
	*p = '\0';
	return r;
}

void
sigv4_sha256_hex(const void *p, size_t n, char out[65])
{
	unsigned char h[EVP_MAX_MD_SIZE];
	unsigned int hl = 0;

	if (EVP_Digest(p, n, h, &hl, EVP_sha256(), NULL) != 1 || hl != 32)
		fatal("SHA-256 failed");
	hex_encode(out, h, 32);
}

static void
hmac(const void *key, size_t klen, const char *msg, unsigned char out[32])
{
	unsigned int ol = 0;

	if (HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, strlen(msg), out,
	    &ol) == NULL || ol != 32)
		fatal("HMAC-SHA256 failed");
}

/* ---- canonical pieces -------------------------------------------------- */

struct hdr {
	char	*name;		/* lower case */
	char	*value;		/* trimmed, runs of blanks collapsed */
	size_t	 order;		/* repeated names keep the order they were given in */
};

static int
hdr_cmp(const void *a, const void *b)
{
	const struct hdr *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->order > y->order) - (x->order < y->order);
}

static char *
lower(const char *s)
{
	char *r = xstrdup(s);

	for (char *p = r; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	return r;
}

static char *
trim_value(const char *v)
{
	char *r = xmalloc(strlen(v) + 1), *p = r;
	int space = 0;

	while (*v == ' ' || *v == '\t')
		v++;
	for (; *v; v++) {
		if (*v == ' ' || *v == '\t') {
			space = 1;
			continue;
		}
		if (space && p != r)
			*p++ = ' ';
		space = 0;
		*p++ = *v;
	}
	*p = '\0';
	return r;
}

struct qp {
	char	*key;
	char	*value;
};

static int
qp_cmp(const void *a, const void *b)
{
	const struct qp *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	return c ? c : strcmp(x->value, y->value);
}

/* The encoded, sorted query: the canonical form and what goes on the wire. */
static char *
canonical_query(const struct sigv4_request *r)
{
	struct qp *v = xcalloc(r->nquery + 1, sizeof *v);
	struct buf b;

	buf_init(&b, CANON_MAX);
	for (size_t i = 0; i < r->nquery; i++) {
		v[i].key = sigv4_escape(r->query[i].key, 0);
		v[i].value = sigv4_escape(r->query[i].value ? r->query[i].value : "", 0);
	}
	qsort(v, r->nquery, sizeof *v, qp_cmp);
	buf_append(&b, "", 0);
	for (size_t i = 0; i < r->nquery; i++) {
		if (buf_printf(&b, "%s%s=%s", i ? "&" : "", v[i].key, v[i].value) < 0)
			fatal("query string over %u bytes", CANON_MAX);
		free(v[i].key);
		free(v[i].value);
	}
	free(v);
	return buf_steal(&b);
}

struct canon {
	char	 amz_date[17];
	char	 scope_date[9];
	char	 payload_hash[65];		/* or "UNSIGNED-PAYLOAD" */
	char	*query;
	char	*signed_headers;
	char	*request;
	char	*scope;
	char	*to_sign;
};

static void
canon_free(struct canon *c)
{
	free(c->query);
	free(c->signed_headers);
	free(c->request);
	free(c->scope);
	free(c->to_sign);
}

static int
build(const struct sigv4_request *r, const struct sigv4_key *k, time_t when,
    struct canon *c, struct sbx_err *e)
{
	struct hdr h[SIGV4_MAX_HEADERS + 4];
	size_t nh = 0;
	struct tm tm;
	struct buf b, sh;
	char reqhash[65];
	int rc = -1;
	_cleanup_free_ char *uri = NULL;

	memset(c, 0, sizeof *c);
	if (r->nheaders > SIGV4_MAX_HEADERS)
		return sbx_error(e, SBX_EINVAL, NULL, "sigv4: more than %d headers to sign",
		    SIGV4_MAX_HEADERS);
	if (gmtime_r(&when, &tm) == NULL)
		return sbx_error(e, SBX_EINVAL, NULL, "sigv4: time out of range");
	strftime(c->amz_date, sizeof c->amz_date, "%Y%m%dT%H%M%SZ", &tm);
	memcpy(c->scope_date, c->amz_date, 8);
	c->scope_date[8] = '\0';
	if (r->s3 && r->unsigned_payload)
		snprintf(c->payload_hash, sizeof c->payload_hash, "UNSIGNED-PAYLOAD");
	else if (r->payload_hash && strlen(r->payload_hash) == 64)
		memcpy(c->payload_hash, r->payload_hash, 65);
	else
		sigv4_sha256_hex(r->body ? r->body : "", r->body ? r->body_len : 0,
		    c->payload_hash);

	h[nh].name = xstrdup("host");
	h[nh++].value = trim_value(r->host);
	h[nh].name = xstrdup("x-amz-date");
	h[nh++].value = xstrdup(c->amz_date);
	if (k->session_token && *k->session_token) {
		h[nh].name = xstrdup("x-amz-security-token");
		h[nh++].value = trim_value(k->session_token);
	}
	if (r->s3) {
		/* S3 wants the payload hash as a signed header too. */
		h[nh].name = xstrdup("x-amz-content-sha256");
		h[nh++].value = xstrdup(c->payload_hash);
	}
	for (size_t i = 0; i < r->nheaders; i++) {
		const struct sigv4_header *x = &r->headers[i];
		if (strpbrk(x->name, ":\r\n ") || strpbrk(x->value, "\r\n")) {
			sbx_error(e, SBX_EINVAL, NULL, "sigv4: header '%s' cannot be signed",
			    x->name);
			goto out;
		}
		/* Ours win: a caller's Host or X-Amz-Date would be sent twice. */
		if (strcasecmp(x->name, "host") == 0 || strcasecmp(x->name, "x-amz-date") == 0 ||
		    strcasecmp(x->name, "x-amz-security-token") == 0 ||
		    (r->s3 && strcasecmp(x->name, "x-amz-content-sha256") == 0) ||
		    strcasecmp(x->name, "authorization") == 0)
			continue;
		h[nh].name = lower(x->name);
		h[nh++].value = trim_value(x->value);
	}
	for (size_t i = 0; i < nh; i++)
		h[i].order = i;
	qsort(h, nh, sizeof *h, hdr_cmp);

	/* S3 signs the path as sent; the other services encode it once more. */
	uri = r->s3 ? xstrdup(r->path && *r->path ? r->path : "/") :
	    sigv4_escape(r->path && *r->path ? r->path : "/", 1);
	c->query = canonical_query(r);
	buf_init(&b, CANON_MAX);
	buf_init(&sh, CANON_MAX);
	buf_printf(&b, "%s\n%s\n%s\n", r->method, uri, c->query);
	for (size_t i = 0; i < nh; i++) {
		if (i > 0 && strcmp(h[i].name, h[i - 1].name) == 0) {
			/* A repeated header: one line, values joined by ','. */
			b.len--;	/* drop the '\n' */
			buf_printf(&b, ",%s\n", h[i].value);
			continue;
		}
		buf_printf(&b, "%s:%s\n", h[i].name, h[i].value);
		buf_printf(&sh, "%s%s", sh.len ? ";" : "", h[i].name);
	}
	if (buf_printf(&b, "\n%s\n%s", sh.data, c->payload_hash) < 0) {
		buf_free(&b);
		buf_free(&sh);
		sbx_error(e, SBX_EINVAL, NULL, "sigv4: request headers too large");
		goto out;
	}
	c->request = buf_steal(&b);
	c->signed_headers = buf_steal(&sh);
	c->scope = xasprintf("%s/%s/%s/aws4_request", c->scope_date, k->region, k->service);
	sigv4_sha256_hex(c->request, strlen(c->request), reqhash);
	c->to_sign = xasprintf("AWS4-HMAC-SHA256\n%s\n%s\n%s", c->amz_date, c->scope, reqhash);
	rc = 0;
out:
	for (size_t i = 0; i < nh; i++) {
		free(h[i].name);
		free(h[i].value);
	}
	if (rc < 0)
		canon_free(c);
	return rc;
}

int
sigv4_canonical(const struct sigv4_request *r, const struct sigv4_key *k, time_t when,
    char **canonical_request, char **string_to_sign, struct sbx_err *e)
{
	struct canon c;

	if (build(r, k, when, &c, e) < 0)
		return -1;
	*canonical_request = steal_pointer(&c.request);
	*string_to_sign = steal_pointer(&c.to_sign);
	canon_free(&c);
	return 0;
}

int
sigv4_sign(const struct sigv4_request *r, const struct sigv4_key *k, time_t when,
    struct sigv4_out *out, struct sbx_err *e)
{
	struct canon c;
	unsigned char kd[32], kr[32], ks[32], kk[32], sig[32];
	char sighex[65];
	_cleanup_free_ char *secret = NULL;
	int n;

	memset(out, 0, sizeof *out);
	if (k->access_key == NULL || k->secret_key == NULL || k->region == NULL ||
	    k->service == NULL)
		return sbx_error(e, SBX_EINVAL, NULL, "sigv4: incomplete credentials");
	if (build(r, k, when, &c, e) < 0)
		return -1;
	/* The signing key: HMAC chain over date, region, service, "aws4_request". */
	secret = xasprintf("AWS4%s", k->secret_key);
	hmac(secret, strlen(secret), c.scope_date, kd);
	explicit_bzero(secret, strlen(secret));
	hmac(kd, 32, k->region, kr);
	hmac(kr, 32, k->service, ks);
	hmac(ks, 32, "aws4_request", kk);
	hmac(kk, 32, c.to_sign, sig);
	hex_encode(sighex, sig, 32);
	explicit_bzero(kd, sizeof kd);
	explicit_bzero(kk, sizeof kk);

	n = snprintf(out->authorization, sizeof out->authorization,
	    "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s",
	    k->access_key, c.scope, c.signed_headers, sighex);
	if (n < 0 || (size_t)n >= sizeof out->authorization) {
		canon_free(&c);
		return sbx_error(e, SBX_EINVAL, NULL, "sigv4: Authorization header too long");
	}
	memcpy(out->amz_date, c.amz_date, sizeof out->amz_date);
	memcpy(out->payload_hash, c.payload_hash, sizeof out->payload_hash);
	out->query = steal_pointer(&c.query);
	canon_free(&c);
	return 0;
}

void
sigv4_out_free(struct sigv4_out *out)
{
	free(out->query);
	out->query = NULL;
}
