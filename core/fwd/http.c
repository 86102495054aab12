/* The request side of a direct HTTP forward (see fwd/http.h).  Only requests are
 * parsed, and only as far as their framing: the answers pass untouched, so a
 * request is never held back waiting for one. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/fwd/http.h"
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

/* A field name is a token (RFC 9110 5.1, 5.6.2): nothing else, and no space
 * before the colon (RFC 9112 5.1: such a request is refused, since a server and
 * a proxy may read the name differently: "Host :" would be a second Host). */
static int
is_token(const char *p, size_t n)
{
	static const char extra[] = "!#$%&'*+-.^_`|~";

	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];
		if (!isalnum(c) && (c == '\0' || strchr(extra, c) == NULL))
			return 0;
	}
	return 1;
}

int
fwd_last_is_chunked(const char *v, size_t vl)
{
	size_t e = vl, b;

	while (e > 0 && (v[e - 1] == ' ' || v[e - 1] == '\t' || v[e - 1] == ','))
		e--;
	b = e;
	while (b > 0 && v[b - 1] != ',')
		b--;
	while (b < e && (v[b] == ' ' || v[b] == '\t'))
		b++;
	return e - b == 7 && strncasecmp(v + b, "chunked", 7) == 0;
}

/* The complete head in h->head (len bytes, the blank line included): write it
 * out rewritten and set the state for what follows.  What RFC 9112 says a
 * recipient must refuse is refused, so the endpoint never frames a request
 * otherwise than this relay did (request smuggling): a field name with
 * whitespace before its colon, folded lines, lines not ended by CRLF, NULs,
 * Content-Length together with Transfer-Encoding, two different
 * Content-Lengths, and a Transfer-Encoding whose last coding is not chunked. */
static int
emit_head(struct fwd_http *h, size_t len, struct buf *out, char *why, size_t whylen)
{
	const char *p = h->head.data, *end = p + len, *nl;
	int chunked = 0, have_te = 0, upgrade_conn = 0, upgrade = 0, skip = 0;
	uint64_t clen = 0;
	int have_clen = 0;

	if (memchr(p, '\0', len) != NULL) {
		snprintf(why, whylen, "a request head holds a NUL byte");
		return -1;
	}
	nl = memchr(p, '\n', (size_t)(end - p));
	if (nl == p || nl[-1] != '\r') {
		snprintf(why, whylen, "a request line does not end with CRLF");
		return -1;
	}
	buf_append(out, p, (size_t)(nl - p) + 1);	/* the request line as it came */
	buf_printf(out, "Host: %s\r\n%s", h->host, h->inject);
	for (p = nl + 1; p < end; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		size_t ll = (size_t)(nl - p);
		const char *colon, *v;
		size_t nlen, vl;
		if (ll == 1 && p[0] == '\r')
			break;				/* the blank line */
		if (ll == 0 || p[ll - 1] != '\r' || memchr(p, '\r', ll - 1) != NULL) {
			snprintf(why, whylen, "a request header line does not end with CRLF");
			return -1;
		}
		if (p[0] == ' ' || p[0] == '\t') {
			snprintf(why, whylen, "a request header is folded (obs-fold): refused");
			return -1;
		}
		if ((colon = memchr(p, ':', ll)) == NULL) {
			snprintf(why, whylen, "a request header line has no ':'");
			return -1;
		}
		nlen = (size_t)(colon - p);
		if (nlen > 0 && (p[nlen - 1] == ' ' || p[nlen - 1] == '\t')) {
			snprintf(why, whylen, "a request header has whitespace before its ':'");
			return -1;
		}
		if (!is_token(p, nlen)) {
			snprintf(why, whylen, "a request header name is not a token");
			return -1;
		}
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
			uint64_t n = 0;
			if (vl == 0 || vl > 19 || strspn(v, "0123456789") < vl) {
				snprintf(why, whylen, "a request has a bad Content-Length");
				return -1;
			}
			for (size_t i = 0; i < vl; i++)
				n = n * 10 + (uint64_t)(v[i] - '0');
			if (have_clen && n != clen) {
				snprintf(why, whylen, "a request has two different Content-Lengths");
				return -1;
			}
			clen = n;
			have_clen = 1;
		} else if (nlen == 17 && strncasecmp(p, "transfer-encoding", 17) == 0) {
			/* Several fields make one list: only the last coding counts. */
			if (vl > 0)
				chunked = fwd_last_is_chunked(v, vl);
			have_te = 1;
		} else if (nlen == 10 && strncasecmp(p, "connection", 10) == 0) {
			upgrade_conn |= has_token(v, vl, "upgrade");
		} else if (nlen == 7 && strncasecmp(p, "upgrade", 7) == 0) {
			upgrade = vl > 0;
		}
		if (!skip)
			buf_append(out, p, ll + 1);
	}
	if (have_te && have_clen) {
		snprintf(why, whylen, "a request has both Content-Length and Transfer-Encoding");
		return -1;
	}
	if (have_te && !chunked) {
		snprintf(why, whylen, "a request's Transfer-Encoding does not end with chunked");
		return -1;
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
fwd_chunk_size(const char *line, uint64_t *out)
{
	uint64_t sz = 0;
	size_t i = 0;

	for (; isxdigit((unsigned char)line[i]); i++) {
		unsigned d = (unsigned)(isdigit((unsigned char)line[i]) ? line[i] - '0' :
		    (tolower((unsigned char)line[i]) - 'a' + 10));
		if (sz > (UINT64_MAX - 2 - d) / 16)
			return -1;
		sz = sz * 16 + d;
	}
	if (i == 0 || (line[i] != ';' && line[i] != ' ' && line[i] != '\t' && line[i] != '\r'))
		return -1;
	*out = sz;
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
				uint64_t sz;
				h->line[h->line_len] = '\0';
				if (fwd_chunk_size(h->line, &sz) < 0) {
					snprintf(why, whylen, "a bad chunk size (not hex, or over 64 bits)");
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

/* --- the agent's (or the endpoint's) answer head ------------------------------- */

int
fwd_head_status(const char *head, size_t len)
{
	int status = 0;

	if (len < 12 || memcmp(head, "HTTP/1.", 7) != 0 || !isdigit((unsigned char)head[7]) ||
	    head[8] != ' ')
		return -1;
	for (int i = 9; i < 12; i++) {
		if (!isdigit((unsigned char)head[i]))
			return -1;
		status = status * 10 + (head[i] - '0');
	}
	if (len > 12 && head[12] != ' ' && head[12] != '\r')
		return -1;
	return status < 100 ? -1 : status;
}

int
fwd_head_field(const char *head, size_t len, const char *name, char *out, size_t outlen)
{
	size_t nl = strlen(name);
	const char *p = memchr(head, '\n', len), *end = head + len;
	int found = 0;

	if (outlen == 0)
		return -1;
	out[0] = '\0';
	for (p = p ? p + 1 : end; p < end;) {
		const char *e = memchr(p, '\n', (size_t)(end - p));
		size_t ll = e ? (size_t)(e - p) : (size_t)(end - p);
		if (ll > 0 && p[ll - 1] == '\r')
			ll--;
		if (ll == 0)
			break;
		if (ll > nl && p[nl] == ':' && strncasecmp(p, name, nl) == 0) {
			const char *v = p + nl + 1;
			size_t vl = ll - nl - 1;
			while (vl > 0 && (*v == ' ' || *v == '\t'))
				v++, vl--;
			while (vl > 0 && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
				vl--;
			if (found++ || vl >= outlen)
				return -1;	/* twice, or too long: not to be trusted */
			memcpy(out, v, vl);
			out[vl] = '\0';
		}
		if (e == NULL)
			break;
		p = e + 1;
	}
	return found ? 0 : -1;
}
