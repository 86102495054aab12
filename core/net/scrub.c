/* A secret's host's answer with the secrets' values scrubbed out (see
 * net/scrub.h).  The head is gathered whole and scrubbed; the body goes
 * through one buffer that keeps back the last (longest value - 1) bytes, so a
 * value cut by a chunk, a read or a record is found once its rest arrives.  A
 * chunked body is passed as chunks of its own (the host's chunk sizes would
 * tell nothing, and its chunk extensions are dropped). */
#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/fwd/http.h"
#include "core/net/scrub.h"
#include "lib/util.h"

#define LINE_MAX_	4096		/* a chunk-size line */
#define OUT_RUN		(16 * 1024)	/* the most of the body passed as one chunk */

enum st { S_HEAD, S_BODY, S_CHUNK_LINE, S_CHUNK_DATA, S_CHUNK_CRLF, S_TRAILER, S_CLOSE,
	S_DONE };

struct net_scrub {
	enum st		 st;
	char		**values;
	size_t		*lens;
	size_t		 nv, keep;	/* keep: the longest value's length - 1 */
	int		 head_request;
	int		 started;
	int		 chunked;	/* the body goes out as chunks */
	struct buf	 head;		/* a head or the trailers, gathered */
	size_t		 line;		/* where in it the line being gathered starts */
	struct buf	 hold;		/* body bytes not passed yet */
	char		 chunk[LINE_MAX_];	/* a chunk-size line, or a chunk's CRLF */
	size_t		 chunk_len;
	uint64_t	 left;		/* S_BODY, S_CHUNK_DATA */
};

struct net_scrub *
net_scrub_new(const char *const *values, size_t n, int head_request)
{
	struct net_scrub *s = xcalloc(1, sizeof *s);

	s->values = xcalloc(n ? n : 1, sizeof *s->values);
	s->lens = xcalloc(n ? n : 1, sizeof *s->lens);
	for (size_t i = 0; i < n; i++) {
		if (values[i] == NULL || values[i][0] == '\0')
			continue;
		s->values[s->nv] = xstrdup(values[i]);
		s->lens[s->nv] = strlen(values[i]);
		if (s->lens[s->nv] - 1 > s->keep)
			s->keep = s->lens[s->nv] - 1;
		s->nv++;
	}
	s->head_request = head_request;
	buf_init(&s->head, NET_SCRUB_HEAD_MAX);
	buf_init(&s->hold, SIZE_MAX / 2);
	return s;
}

static void
wipe(struct buf *b)
{
	if (b->data != NULL)
		explicit_bzero(b->data, b->cap);
	buf_free(b);
}

void
net_scrub_free(struct net_scrub *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->nv; i++) {
		explicit_bzero(s->values[i], s->lens[i]);
		free(s->values[i]);
	}
	free(s->values);
	free(s->lens);
	wipe(&s->head);
	wipe(&s->hold);
	explicit_bzero(s->chunk, sizeof s->chunk);
	free(s);
}

int
net_scrub_started(const struct net_scrub *s)
{
	return s->started;
}

/* Every value in p (n bytes) replaced, in place, by as many '*'. */
static void
mask(const struct net_scrub *s, char *p, size_t n)
{
	for (size_t i = 0; i < s->nv && n > 0; i++) {
		char *at = p, *hit;
		while ((hit = memmem(at, n - (size_t)(at - p), s->values[i], s->lens[i])) != NULL) {
			memset(hit, '*', s->lens[i]);
			at = hit + s->lens[i];
		}
	}
}

static int
fail(char *why, size_t whylen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int
fail(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return -1;
}

static void
put(struct net_scrub *s, struct buf *out, const char *p, size_t n)
{
	if (n == 0)
		return;
	buf_append(out, p, n);
	s->started = 1;
}

/* n bytes of the body, scrubbed, out as they are or as chunks. */
static void
put_body(struct net_scrub *s, struct buf *out, const char *p, size_t n)
{
	while (n > 0) {
		size_t k = n < OUT_RUN ? n : OUT_RUN;
		if (s->chunked) {
			char size[24];
			int sl = snprintf(size, sizeof size, "%zx\r\n", k);
			put(s, out, size, (size_t)sl);
		}
		put(s, out, p, k);
		if (s->chunked)
			put(s, out, "\r\n", 2);
		p += k;
		n -= k;
	}
}

/* Body bytes: into the hold, scrubbed there, and out but for what a value
 * that goes on in the next bytes could still need. */
static void
body(struct net_scrub *s, struct buf *out, const char *p, size_t n)
{
	buf_append(&s->hold, p, n);
	mask(s, s->hold.data, s->hold.len);
	if (s->hold.len > s->keep) {
		size_t k = s->hold.len - s->keep;
		put_body(s, out, s->hold.data, k);
		explicit_bzero(s->hold.data, k);
		buf_consume(&s->hold, k);
	}
}

/* The body ended: the rest of the hold, then (chunked) the last chunk and the
 * trailers gathered in s->head. */
static void
body_end(struct net_scrub *s, struct buf *out)
{
	put_body(s, out, s->hold.data, s->hold.len);
	if (s->hold.data != NULL)
		explicit_bzero(s->hold.data, s->hold.cap);
	buf_reset(&s->hold);
	if (s->chunked) {
		put(s, out, "0\r\n", 3);
		mask(s, s->head.data, s->head.len);
		put(s, out, s->head.data, s->head.len);
		put(s, out, "\r\n", 2);
		buf_reset(&s->head);
	}
	s->st = S_DONE;
}

static int
field_is(const char *p, size_t nlen, const char *name)
{
	return strlen(name) == nlen && strncasecmp(p, name, nlen) == 0;
}

/* The whole head (len bytes, the blank line included), scrubbed: out, and the
 * state for what follows it. */
static int
head_done(struct net_scrub *s, struct buf *out, size_t len, char *why, size_t whylen)
{
	char *p = s->head.data, *end = p + len, *nl;
	int status, te = 0, have_cl = 0;
	uint64_t cl = 0;
	char ce[40] = "";

	mask(s, p, len);
	if ((status = fwd_head_status(p, len)) < 0)
		return fail(why, whylen, "the answer is not HTTP/1.x");
	for (p = memchr(p, '\n', len) + 1; p < end; p = nl + 1) {
		const char *colon, *v;
		size_t ll, vl;
		nl = memchr(p, '\n', (size_t)(end - p));
		ll = (size_t)(nl - p);
		if (ll > 0 && p[ll - 1] == '\r')
			ll--;
		if (ll == 0)
			break;
		if (p[0] == ' ' || p[0] == '\t')
			return fail(why, whylen, "the answer has a folded header line");
		if ((colon = memchr(p, ':', ll)) == NULL)
			return fail(why, whylen, "the answer has a header line without ':'");
		v = colon + 1;
		vl = (size_t)(p + ll - v);
		while (vl > 0 && (*v == ' ' || *v == '\t'))
			v++, vl--;
		while (vl > 0 && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
			vl--;
		if (field_is(p, (size_t)(colon - p), "content-length")) {
			uint64_t n = 0;
			if (vl == 0 || vl > 19 || strspn(v, "0123456789") < vl)
				return fail(why, whylen, "the answer has a bad Content-Length");
			for (size_t i = 0; i < vl; i++)
				n = n * 10 + (uint64_t)(v[i] - '0');
			if (have_cl && n != cl)
				return fail(why, whylen, "the answer has two Content-Lengths");
			cl = n;
			have_cl = 1;
		} else if (field_is(p, (size_t)(colon - p), "transfer-encoding")) {
			/* chunked, and nothing else: another coding could hide a value. */
			if (!(vl == 7 && strncasecmp(v, "chunked", 7) == 0))
				return fail(why, whylen, "the answer has a transfer coding other than "
				    "chunked, which cannot be checked for a secret's value");
			if (te++)
				return fail(why, whylen, "the answer is chunked twice");
		} else if (field_is(p, (size_t)(colon - p), "content-encoding") && vl > 0 &&
		    !(vl == 8 && strncasecmp(v, "identity", 8) == 0)) {
			size_t k = vl < sizeof ce - 1 ? vl : sizeof ce - 1;
			for (size_t i = 0; i < k; i++)
				ce[i] = isprint((unsigned char)v[i]) ? v[i] : '?';
			ce[k] = '\0';
		}
	}
	if (te && have_cl)
		return fail(why, whylen, "the answer has both Content-Length and Transfer-Encoding");
	/* What the answer holds after its head. */
	if (status >= 100 && status < 200 && status != 101) {
		put(s, out, s->head.data, len);		/* an interim answer: another follows */
		s->st = S_HEAD;
		return 0;
	}
	if (s->head_request || status == 204 || status == 304) {
		put(s, out, s->head.data, len);
		s->st = S_DONE;
		return 0;
	}
	if (ce[0])
		return fail(why, whylen, "the answer is compressed (Content-Encoding: %s) although "
		    "identity was asked for, and a compressed answer cannot be checked for a "
		    "secret's value", ce);
	put(s, out, s->head.data, len);
	if (status == 101)
		s->st = S_CLOSE;
	else if (te)
		s->st = S_CHUNK_LINE, s->chunked = 1;
	else if (have_cl && cl == 0)
		s->st = S_DONE;
	else if (have_cl)
		s->st = S_BODY, s->left = cl;
	else
		s->st = S_CLOSE;
	return 0;
}

int
net_scrub_feed(struct net_scrub *s, const char *in, size_t n, struct buf *out, char *why,
    size_t whylen)
{
	while (n > 0 && s->st != S_DONE) {
		switch (s->st) {
		case S_HEAD:
		case S_TRAILER: {
			/* Gathered a line at a time, to the blank line. */
			const char *nl = memchr(in, '\n', n);
			size_t k = nl ? (size_t)(nl - in) + 1 : n, start = s->line, ll;
			if (buf_append(&s->head, in, k) < 0)
				return fail(why, whylen, "the answer's %s is over %d bytes",
				    s->st == S_HEAD ? "head" : "trailer section", NET_SCRUB_HEAD_MAX);
			in += k, n -= k;
			if (nl == NULL)
				break;
			s->line = s->head.len;
			/* A line of its own that is empty ends the head (or trailers). */
			ll = s->head.len - start;
			if (!(ll == 1 || (ll == 2 && s->head.data[start] == '\r')))
				break;
			s->line = 0;
			if (s->st == S_TRAILER) {
				s->head.len = start;	/* body_end adds the blank line */
				body_end(s, out);
				break;
			}
			if (start == 0) {	/* an empty line before a head */
				buf_reset(&s->head);
				break;
			}
			if (head_done(s, out, s->head.len, why, whylen) < 0)
				return -1;
			buf_reset(&s->head);
			break;
		}
		case S_BODY:
		case S_CHUNK_DATA: {
			size_t k = n < s->left ? n : (size_t)s->left;
			body(s, out, in, k);
			in += k, n -= k, s->left -= k;
			if (s->left == 0 && s->st == S_BODY)
				body_end(s, out);
			else if (s->left == 0)
				s->st = S_CHUNK_CRLF, s->chunk_len = 0;
			break;
		}
		case S_CHUNK_CRLF:
			s->chunk[s->chunk_len++] = *in++, n--;
			if (s->chunk_len == 2) {
				if (memcmp(s->chunk, "\r\n", 2) != 0)
					return fail(why, whylen, "a chunk of the answer does not end "
					    "with CRLF");
				s->st = S_CHUNK_LINE, s->chunk_len = 0;
			}
			break;
		case S_CHUNK_LINE: {
			const char *nl = memchr(in, '\n', n);
			size_t k = nl ? (size_t)(nl - in) + 1 : n;
			uint64_t sz;
			if (s->chunk_len + k >= sizeof s->chunk)
				return fail(why, whylen, "a chunk-size line of the answer is too long");
			memcpy(s->chunk + s->chunk_len, in, k);
			s->chunk_len += k;
			in += k, n -= k;
			if (nl == NULL)
				break;
			s->chunk[s->chunk_len] = '\0';
			if (fwd_chunk_size(s->chunk, &sz) < 0)
				return fail(why, whylen, "a bad chunk size in the answer");
			s->chunk_len = 0;
			if (sz == 0)
				s->st = S_TRAILER;
			else
				s->st = S_CHUNK_DATA, s->left = sz;
			break;
		}
		case S_CLOSE:
			body(s, out, in, n);
			n = 0;
			break;
		case S_DONE:
			break;
		}
	}
	return s->st == S_DONE ? 1 : 0;
}

int
net_scrub_end(struct net_scrub *s, struct buf *out, char *why, size_t whylen)
{
	switch (s->st) {
	case S_CLOSE:
		body_end(s, out);
		return 0;
	case S_DONE:
		return 0;
	case S_HEAD:
		if (s->head.len == 0)
			return fail(why, whylen, "no answer");
		return fail(why, whylen, "the answer ended in its head");
	default:
		/* What was held goes out, so the sandbox sees as much as came. */
		put_body(s, out, s->hold.data, s->hold.len);
		buf_reset(&s->hold);
		s->st = S_DONE;
		return fail(why, whylen, "the answer ended before its body did");
	}
}
