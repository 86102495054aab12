/* The request side of a direct HTTP forward (see fwd-http.h).  Only requests are
 * parsed, and only as far as their framing: the answers pass untouched, so a
 * request is never held back waiting for one. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/fwd-http.h"
#include "lib/util.h"

#define LINE_MAX_	4096		/* a chunk-size or trailer line */

enum st { S_HEAD, S_BODY, S_CHUNK_LINE, S_CHUNK_DATA, S_TRAILER, S_RAW };

struct fwd_http {
	enum st		 st;
	char		*inject;
	char		*host;
	struct buf	 head;		/* the head being gathered */
	char		 line[LINE_MAX_];
	size_t		 line_len;
	uint64_t	 left;		/* S_BODY, S_CHUNK_DATA */
};

struct fwd_http *
fwd_http_new(const char *inject, const char *host)
{
	struct fwd_http *h = xcalloc(1, sizeof *h);

	h->inject = xstrdup(inject);
	h->host = xstrdup(host);
	buf_init(&h->head, FWD_HTTP_HEAD_MAX);
	return h;
}

void
fwd_http_free(struct fwd_http *h)
{
	if (h == NULL)
		return;
	explicit_bzero(h->inject, strlen(h->inject));
	free(h->inject);
	free(h->host);
	buf_free(&h->head);
	free(h);
}

void
fwd_http_set_inject(struct fwd_http *h, const char *inject)
{
	explicit_bzero(h->inject, strlen(h->inject));
	free(h->inject);
	h->inject = xstrdup(inject);
}

/* Whether the comma-separated list v holds token tok. */
static int
has_token(const char *v, size_t vl, const char *tok)
{
	size_t tl = strlen(tok);

	for (size_t i = 0; i < vl;) {
		while (i < vl && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		size_t j = i;
		while (j < vl && v[j] != ',')
			j++;
		size_t e = j;
		while (e > i && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		if (e - i == tl && strncasecmp(v + i, tok, tl) == 0)
			return 1;
		i = j;
	}
	return 0;
}

/* The complete head in h->head (len bytes, the blank line included): write it
 * out rewritten and set the state for what follows. */
static int
emit_head(struct fwd_http *h, size_t len, struct buf *out, char *why, size_t whylen)
{
	const char *p = h->head.data, *end = p + len, *nl;
	int chunked = 0, upgrade_conn = 0, upgrade = 0, skip = 0;
	uint64_t clen = 0;
	int have_clen = 0;

	nl = memchr(p, '\n', (size_t)(end - p));
	buf_append(out, p, (size_t)(nl - p) + 1);	/* the request line as it came */
	buf_printf(out, "Host: %s\r\n%s", h->host, h->inject);
	for (p = nl + 1; p < end; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		size_t ll = (size_t)(nl - p);
		const char *colon, *v;
		size_t nlen, vl;
		if (ll == 0 || (ll == 1 && p[0] == '\r'))
			break;				/* the blank line */
		if (p[0] == ' ' || p[0] == '\t') {	/* a folded line goes with its header */
			if (!skip)
				buf_append(out, p, ll + 1);
			continue;
		}
		if ((colon = memchr(p, ':', ll)) == NULL) {
			snprintf(why, whylen, "a request header line has no ':'");
			return -1;
		}
		nlen = (size_t)(colon - p);
		v = colon + 1;
		vl = (size_t)(nl - v);
		while (vl > 0 && (v[vl - 1] == '\r' || v[vl - 1] == ' ' || v[vl - 1] == '\t'))
			vl--;
		while (vl > 0 && (*v == ' ' || *v == '\t'))
			v++, vl--;
		/* The endpoint's own headers are ours to set: a local client cannot pick
		 * another port, nor another token. */
		skip = (nlen >= 12 && strncasecmp(p, "x-aws-proxy-", 12) == 0) ||
		    (nlen == 4 && strncasecmp(p, "host", 4) == 0);
		if (nlen == 14 && strncasecmp(p, "content-length", 14) == 0) {
			char num[24];
			char *e;
			if (vl == 0 || vl >= sizeof num || strspn(v, "0123456789") < vl) {
				snprintf(why, whylen, "a request has a bad Content-Length");
				return -1;
			}
			memcpy(num, v, vl);
			num[vl] = '\0';
			clen = strtoull(num, &e, 10);
			have_clen = 1;
		} else if (nlen == 17 && strncasecmp(p, "transfer-encoding", 17) == 0) {
			chunked = has_token(v, vl, "chunked");
		} else if (nlen == 10 && strncasecmp(p, "connection", 10) == 0) {
			upgrade_conn |= has_token(v, vl, "upgrade");
		} else if (nlen == 7 && strncasecmp(p, "upgrade", 7) == 0) {
			upgrade = vl > 0;
		}
		if (!skip)
			buf_append(out, p, ll + 1);
	}
	buf_append(out, "\r\n", 2);
	if (upgrade_conn && upgrade)
		h->st = S_RAW;
	else if (chunked)
		h->st = S_CHUNK_LINE;
	else if (have_clen && clen > 0)
		h->st = S_BODY, h->left = clen;
	else
		h->st = S_HEAD;
	return 0;
}

int
fwd_http_feed(struct fwd_http *h, const char *in, size_t n, struct buf *out, char *why,
    size_t whylen)
{
	while (n > 0) {
		switch (h->st) {
		case S_RAW:
			buf_append(out, in, n);
			return 0;
		case S_BODY:
		case S_CHUNK_DATA: {
			size_t k = n < h->left ? n : (size_t)h->left;
			buf_append(out, in, k);
			in += k, n -= k, h->left -= k;
			if (h->left == 0)
				h->st = h->st == S_BODY ? S_HEAD : S_CHUNK_LINE;
			break;
		}
		case S_HEAD: {
			/* Bytes go into the head one run at a time, up to its end. */
			size_t old = h->head.len, k;
			const char *e;
			if (buf_append(&h->head, in, n) < 0) {
				snprintf(why, whylen, "a request head is over %d bytes",
				    FWD_HTTP_HEAD_MAX);
				return -1;
			}
			/* Empty lines between requests are allowed (RFC 9112 2.2). */
			while (h->head.len > 0 && (h->head.data[0] == '\r' || h->head.data[0] == '\n')) {
				buf_consume(&h->head, 1);
				old = old > 0 ? old - 1 : 0;
			}
			e = h->head.len >= 4 ? memmem(h->head.data + (old > 3 ? old - 3 : 0),
			    h->head.len - (old > 3 ? old - 3 : 0), "\r\n\r\n", 4) : NULL;
			if (e == NULL)
				return 0;
			k = (size_t)(e - h->head.data) + 4;
			if (emit_head(h, k, out, why, whylen) < 0)
				return -1;
			/* What came after the head is fed again, in the new state. */
			size_t rest = h->head.len - k;
			in = in + n - rest;
			n = rest;
			buf_reset(&h->head);
			break;
		}
		case S_CHUNK_LINE:
		case S_TRAILER: {
			const char *nl = memchr(in, '\n', n);
			size_t k = nl ? (size_t)(nl - in) + 1 : n;
			if (h->line_len + k >= sizeof h->line) {
				snprintf(why, whylen, "a chunk-size or trailer line is too long");
				return -1;
			}
			memcpy(h->line + h->line_len, in, k);
			h->line_len += k;
			buf_append(out, in, k);
			in += k, n -= k;
			if (nl == NULL)
				break;
			if (h->st == S_TRAILER) {
				if (h->line_len <= 2)		/* the blank line: the request ends */
					h->st = S_HEAD;
			} else {
				char *e;
				h->line[h->line_len] = '\0';
				unsigned long long sz = strtoull(h->line, &e, 16);
				if (e == h->line || !isxdigit((unsigned char)h->line[0])) {
					snprintf(why, whylen, "a bad chunk size");
					return -1;
				}
				if (sz == 0)
					h->st = S_TRAILER;
				else
					h->st = S_CHUNK_DATA, h->left = sz + 2;	/* data, CRLF */
			}
			h->line_len = 0;
			break;
		}
		}
	}
	return 0;
}
