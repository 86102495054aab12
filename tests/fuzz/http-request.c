/* Fuzz target: the agent's request reader (agent/http-parse.c over Node's
 * http-parser).  A client's bytes go through it whole and then cut where the
 * first input byte says, as a connection reads them; both runs must see the same
 * requests (heads, bodies, trailers, errors), one after the other as on a
 * keep-alive connection, and what a head holds keeps the reader's promises: a
 * path without NUL, at most HTTP_FIELDS_MAX fields, a body no longer than the
 * input. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/http-parse.h"
#include "lib/buf.h"

static void
body(void *cls, const char *data, size_t len)
{
	struct buf *b = cls;

	if (buf_append(b, data, len) < 0)
		abort();		/* more body than there was input */
}

/* The body so far, whatever pieces it came in. */
static void
body_out(struct buf *t, struct buf *b)
{
	buf_printf(t, "BODY %zu:", b->len);
	buf_append(t, b->data ? b->data : "", b->len);
	buf_append(t, "\n", 1);
	buf_reset(b);
}

static void
fields(struct buf *t, char kind, const struct http_fields *f)
{
	if (f->n > HTTP_FIELDS_MAX)
		abort();
	for (size_t i = 0; i < f->n; i++)
		buf_printf(t, "%c%s=%s\n", kind, f->v[i].name,
		    f->v[i].value ? f->v[i].value : "(none)");
}

/* What the reader made of in, fed step bytes at a time, as text. */
static void
transcript(const char *in, size_t n, size_t step, struct buf *t)
{
	struct http_msg m;
	struct buf b;
	size_t off = 0, have = 0, used;

	buf_init(&b, n);
	http_msg_init(&m, body, &b);
	while (have < n || off < have) {
		enum http_ev ev;

		if (off == have) {
			have = have + step < n ? have + step : n;
			continue;
		}
		ev = http_msg_feed(&m, in + off, have - off, &used);
		if (used > have - off)
			abort();
		off += used;
		if (ev == HTTP_EV_ERROR) {
			if (m.err_status < 400 || m.err_status > 599 || m.err[0] == '\0')
				abort();
			body_out(t, &b);
			buf_printf(t, "ERR %u\n", m.err_status);
			break;
		}
		if (ev == HTTP_EV_HEAD) {
			if (m.path == NULL || m.method == NULL || m.path[0] == '\0')
				abort();
			buf_printf(t, "HEAD %s %s 1.%d k%d u%d b%d e%d\n", m.method, m.path,
			    m.http_minor, m.keep_alive, m.upgrade, m.has_body, m.expect_continue);
			fields(t, 'Q', &m.query);
			fields(t, 'H', &m.headers);
			/* The lookups the handlers make. */
			const char *c = http_fields_get(&m.headers, "connection");
			buf_printf(t, "close=%d\n", c != NULL && http_list_has(c, "close"));
			continue;
		}
		if (ev == HTTP_EV_DONE) {
			body_out(t, &b);
			fields(t, 'T', &m.trailers);
			buf_printf(t, "DONE\n");
			if (m.upgrade)
				break;		/* what follows is not HTTP */
			http_msg_reset(&m);
		}
	}
	http_msg_free(&m);
	buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf a, b;
	size_t step;

	if (size < 1)
		return 0;
	step = (size_t)(data[0] % 32) + 1;
	data++, size--;
	buf_init(&a, 1 << 24);
	buf_init(&b, 1 << 24);
	transcript((const char *)data, size, size ? size : 1, &a);
	transcript((const char *)data, size, step, &b);
	if (a.len != b.len || (a.len > 0 && memcmp(a.data, b.data, a.len) != 0)) {
		fprintf(stderr, "whole:\n%s\ncut every %zu:\n%s\n", a.data ? a.data : "", step,
		    b.data ? b.data : "");
		abort();	/* how the bytes came in changed what was read */
	}
	buf_free(&a);
	buf_free(&b);
	return 0;
}
