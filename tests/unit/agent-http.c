/* Unit tests of agent/http-parse.h, the agent's request reader: the target and
 * query decoded as the handlers expect, headers and trailers, bodies whole and
 * chunked, pipelined requests, the upgrade boundary, and each refusal (no Host,
 * HTTP/2, an encoded NUL, a head or too many fields over the limit, request
 * smuggling by Content-Length and Transfer-Encoding together).  TAP output. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "agent/http-parse.h"
#include "lib/buf.h"

static void
on_body(void *cls, const char *data, size_t len)
{
	buf_append(cls, data, len);
}

/* Feed all of in; the last event, with *used the bytes taken up to it. */
static enum http_ev
feed_all(struct http_msg *m, const char *in, size_t n, size_t *taken)
{
	enum http_ev ev = HTTP_EV_MORE;
	size_t off = 0, used;

	while (off < n) {
		ev = http_msg_feed(m, in + off, n - off, &used);
		off += used;
		if (ev == HTTP_EV_DONE || ev == HTTP_EV_ERROR)
			break;
	}
	*taken = off;
	return ev;
}

/* in, read step bytes at a time (0: whole), is refused with status. */
static void
refused_read(const char *what, const char *in, size_t step, unsigned status)
{
	struct http_msg m;
	struct buf b;
	size_t used, n = strlen(in), have = step ? 0 : n, off = 0;
	enum http_ev ev = HTTP_EV_MORE;

	buf_init(&b, 1 << 20);
	http_msg_init(&m, on_body, &b);
	while (ev != HTTP_EV_ERROR && ev != HTTP_EV_DONE && off < n) {
		have = have + step < n ? have + step : n;
		ev = feed_all(&m, in + off, have - off, &used);
		off += used;
	}
	check(ev == HTTP_EV_ERROR && m.err_status == status, "%s: %u", what, status);
	if (ev != HTTP_EV_ERROR || m.err_status != status)
		diag("got event %d, status %u (%s)", ev, m.err_status, m.err);
	http_msg_free(&m);
	buf_free(&b);
}

static void
refused(const char *what, const char *in, unsigned status)
{
	refused_read(what, in, 0, status);
}

/* before, HTTP_HEAD_MAX bytes, after: refused with 431. */
static void
over_limit(const char *what, const char *before, const char *after)
{
	struct buf big;

	buf_init(&big, 1 << 20);
	buf_printf(&big, "%s", before);
	for (int i = 0; i < HTTP_HEAD_MAX / 8; i++)
		buf_printf(&big, "abcdefgh");
	buf_printf(&big, "%s", after);
	refused(what, big.data, 431);
	buf_free(&big);
}

int
main(void)
{
	struct http_msg m;
	struct buf b;
	size_t used;
	enum http_ev ev;
	const char *in;

	buf_init(&b, 1 << 20);
	http_msg_init(&m, on_body, &b);

	/* A head: the path decoded, the query split and decoded, headers trimmed. */
	in = "GET /v1/files/a%20b%2Fc?path=%2Ftmp%2Fx+y&flag&empty=&path=second HTTP/1.1\r\n"
	    "Host: sandbox\r\nX-Sandbox-Secret:   s3cret  \r\nx-sbx-origin: agent\r\n\r\n";
	ev = http_msg_feed(&m, in, strlen(in), &used);
	check(ev == HTTP_EV_HEAD, "a head is an event of its own");
	check(strcmp(m.method, "GET") == 0 && m.http_minor == 1, "method and version");
	check(strcmp(m.path, "/v1/files/a b/c") == 0, "the path is percent-decoded ('%s')", m.path);
	check(m.query.n == 4, "four query arguments");
	check(strcmp(http_fields_get(&m.query, "path"), "/tmp/x y") == 0,
	    "a query value: '+' and %%XX decoded, the first of two");
	check(http_fields_get(&m.query, "flag") == NULL && m.query.v[1].name != NULL,
	    "an argument without '=' has no value");
	check(strcmp(http_fields_get(&m.query, "empty"), "") == 0, "an empty value is empty");
	check(strcmp(http_fields_get(&m.headers, "x-sandbox-secret"), "s3cret") == 0,
	    "header names match in any case, values lose their blanks");
	check(strcmp(http_fields_get(&m.headers, "X-Sbx-Origin"), "agent") == 0, "another header");
	check(m.keep_alive && !m.upgrade && !m.has_body && !m.expect_continue,
	    "HTTP/1.1 keeps the connection; no body, no upgrade");
	ev = http_msg_feed(&m, in + used, strlen(in) - used, &used);
	check(ev == HTTP_EV_DONE, "then the request is done");

	/* Pipelined: a body by length, then a chunked one with a trailer, Expect. */
	http_msg_reset(&m);
	buf_reset(&b);
	in = "POST /v1/exec HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello"
	    "POST /v1/archive/upload HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
	    "Expect: 100-Continue\r\n\r\n3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\nX-Content-Sha256: ff\r\n\r\n"
	    "GET /health HTTP/1.0\r\n\r\n";
	size_t n = strlen(in), off;
	ev = feed_all(&m, in, n, &off);
	check(ev == HTTP_EV_DONE && b.len == 5 && memcmp(b.data, "hello", 5) == 0,
	    "a body by Content-Length");
	http_msg_reset(&m);
	buf_reset(&b);
	ev = http_msg_feed(&m, in + off, n - off, &used);
	check(ev == HTTP_EV_HEAD && m.expect_continue && m.has_body,
	    "the second request's head, with Expect: 100-continue");
	off += used;
	ev = feed_all(&m, in + off, n - off, &used);
	off += used;
	check(ev == HTTP_EV_DONE && b.len == 5 && memcmp(b.data, "abcde", 5) == 0,
	    "a chunked body, put together");
	check(m.trailers.n == 1 && strcmp(http_fields_get(&m.trailers, "x-content-sha256"), "ff") == 0,
	    "its trailer, apart from the headers");
	check(http_fields_get(&m.headers, "X-Content-Sha256") == NULL, "a trailer is no header");
	http_msg_reset(&m);
	ev = feed_all(&m, in + off, n - off, &used);
	check(ev == HTTP_EV_DONE && m.http_minor == 0 && !m.keep_alive,
	    "an HTTP/1.0 request without Host, and its connection closes");

	/* Byte by byte reads the same. */
	http_msg_reset(&m);
	buf_reset(&b);
	in = "PUT /x?a=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nxyz";
	ev = HTTP_EV_MORE;
	int heads = 0;
	for (size_t i = 0; i < strlen(in) && ev != HTTP_EV_DONE; ) {
		ev = http_msg_feed(&m, in + i, 1, &used);
		heads += ev == HTTP_EV_HEAD;
		i += used;
	}
	check(ev == HTTP_EV_DONE && heads == 1 && b.len == 3 && strcmp(m.path, "/x") == 0,
	    "one byte at a time: one head, the whole body");

	/* An upgrade: the bytes after the head are not read. */
	http_msg_reset(&m);
	in = "GET /v1/tunnel?port=1 HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Upgrade\r\n"
	    "Upgrade: websocket\r\n\r\n\x16\x03\x01raw";
	ev = feed_all(&m, in, strlen(in), &used);
	check(ev == HTTP_EV_DONE && m.upgrade && strcmp(in + used, "\x16\x03\x01raw") == 0,
	    "an upgrade ends at its head; what follows is left");

	/* Absolute-form. */
	http_msg_reset(&m);
	in = "GET http://sbxtop-agent:8080/health?x=1 HTTP/1.1\r\nHost: a\r\n\r\n";
	ev = feed_all(&m, in, strlen(in), &used);
	check(ev == HTTP_EV_DONE && strcmp(m.path, "/health") == 0 &&
	    strcmp(http_fields_get(&m.query, "x"), "1") == 0, "an absolute-form target");
	http_msg_free(&m);

	refused("HTTP/1.1 without Host", "GET / HTTP/1.1\r\n\r\n", 400);
	refused("HTTP/2.0", "GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505);
	refused("an encoded NUL in the path", "GET /a%00b HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	refused("an encoded NUL in the query", "GET /a?x=%00 HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	refused("CONNECT", "CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	refused("a bad method", "BREW /pot HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	refused("Content-Length with Transfer-Encoding: chunked",
	    "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400);
	refused("two Content-Lengths", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n"
	    "Content-Length: 4\r\n\r\nabcd", 400);
	refused("a bad chunk size", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "zz\r\n", 400);

	struct buf big;
	buf_init(&big, 1 << 20);
	buf_printf(&big, "GET / HTTP/1.1\r\nHost: a\r\n");
	for (int i = 0; i < HTTP_FIELDS_MAX + 1; i++)
		buf_printf(&big, "X-%d: v\r\n", i);
	buf_printf(&big, "\r\n");
	refused("more header fields than the limit", big.data, 431);
	refused_read("  read 7 bytes at a time", big.data, 7, 431);
	/* Past the limit and then malformed: the same error however the bytes came. */
	big.len -= 2;
	buf_printf(&big, "Bad\001Name: v\r\n\r\n");
	refused("too many fields, then a name with a control byte", big.data, 400);
	for (size_t step = 1; step < 12; step++)
		refused_read("  read in pieces", big.data, step, 400);
	buf_free(&big);
	over_limit("a head over the limit", "GET / HTTP/1.1\r\nHost: a\r\nX-Big: ", "\r\n\r\n");
	over_limit("a target over the limit", "GET /", " HTTP/1.1\r\nHost: a\r\n\r\n");
	buf_free(&b);

	check(strcmp(http_reason(404), "Not Found") == 0 && strcmp(http_reason(599), "Unknown") == 0,
	    "reason phrases from the parser's table");
	check(http_list_has("keep-alive, Upgrade", "upgrade") && !http_list_has("upgraded", "upgrade"),
	    "a token in a comma-separated list");
	return tap_end();
}
