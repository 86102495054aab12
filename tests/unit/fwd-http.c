/* Unit tests for the request rewriter of direct HTTP forwards (core/fwd/http.c):
 * the endpoint's headers put into every request head of a connection, the
 * client's own X-aws-proxy-* and Host replaced, bodies (Content-Length, chunked
 * with trailers) passed whole, an upgrade passing the rest raw, and bad input
 * refused; each fed whole and byte by byte.  TAP lines. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "lib/buf.h"
#include "core/fwd/http.h"
#include "core/fwd/fwd.h"

#define INJ "X-aws-proxy-auth: tok\r\nX-aws-proxy-port: 8000\r\n"

/* Feed in (in pieces of step bytes; 0: whole) and return what goes upstream,
 * or NULL when the rewriter refused (why filled). */
static char *
run(const char *in, size_t n, size_t step, char *why, size_t whylen)
{
	struct fwd_http *h = fwd_http_new(INJ, "ep.example:443");
	struct buf out;
	int rc = 0;

	buf_init(&out, 1 << 20);
	if (step == 0)
		step = n;
	for (size_t off = 0; off < n && rc == 0; off += step)
		rc = fwd_http_feed(h, in + off, n - off < step ? n - off : step, &out, why, whylen);
	fwd_http_free(h);
	if (rc < 0) {
		buf_free(&out);
		return NULL;
	}
	return buf_steal(&out);
}

static void
same(const char *name, const char *in, const char *want)
{
	char why[128] = "";

	for (size_t step = 0; step <= 7; step += 7) {	/* whole, then 7 bytes at a time */
		char *got = run(in, strlen(in), step, why, sizeof why);
		if (!check(got != NULL && strcmp(got, want) == 0, "%s (%s)", name,
		    step ? "in pieces" : "whole"))
			printf("# got:  %s\n# want: %s\n# why: %s\n", got ? got : "(refused)", want,
			    why);
		free(got);
	}
	/* and one byte at a time */
	char *got = run(in, strlen(in), 1, why, sizeof why);
	check(got != NULL && strcmp(got, want) == 0, "%s (byte by byte)", name);
	free(got);
}

static void
refused(const char *name, const char *in, size_t n, const char *why_like)
{
	char why[128] = "";
	char *got = run(in, n, 0, why, sizeof why);

	if (!check(got == NULL && strstr(why, why_like) != NULL, "%s", name))
		printf("# why: %s\n", why);
	free(got);
}

int
main(void)
{
	same("a GET gets the headers; Host is the endpoint's",
	    "GET /a HTTP/1.1\r\nHost: 127.0.0.1:5000\r\nAccept: */*\r\n\r\n",
	    "GET /a HTTP/1.1\r\nHost: ep.example:443\r\n" INJ "Accept: */*\r\n\r\n");
	same("the client's X-aws-proxy-* headers are dropped (any case)",
	    "GET / HTTP/1.1\r\nx-AWS-proxy-port: 22\r\nX-Aws-Proxy-Auth: mine\r\n"
	    "A: b\r\n\r\n",
	    "GET / HTTP/1.1\r\nHost: ep.example:443\r\n" INJ "A: b\r\n\r\n");
	same("two equal Content-Lengths are one",
	    "POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc"
	    "GET / HTTP/1.1\r\n\r\n",
	    "POST / HTTP/1.1\r\nHost: ep.example:443\r\n" INJ
	    "Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc"
	    "GET / HTTP/1.1\r\nHost: ep.example:443\r\n" INJ "\r\n");
	same("a chunk size of 2^64-3 is taken (it fits with its CRLF)",
	    "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffd\r\nab",
	    "POST / HTTP/1.1\r\nHost: ep.example:443\r\n" INJ
	    "Transfer-Encoding: chunked\r\n\r\nfffffffffffffffd\r\nab");
	same("pipelined requests each get them; a Content-Length body passes unchanged",
	    "POST /p HTTP/1.1\r\nContent-Length: 20\r\n\r\nGET / HTTP/1.1\r\n\r\nxxx"
	    "GET /2 HTTP/1.1\r\n\r\n",
	    "POST /p HTTP/1.1\r\nHost: ep.example:443\r\n" INJ "Content-Length: 20\r\n\r\n"
	    "GET / HTTP/1.1\r\n\r\nxxx"
	    "GET /2 HTTP/1.1\r\nHost: ep.example:443\r\n" INJ "\r\n");
	same("a chunked body with extensions and trailers, then the next request",
	    "POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
	    "5;ext=1\r\nGET /\r\na\r\n\r\n\r\n\r\n\r\n\r\n\r\n0\r\nX-T: 1\r\n\r\n"
	    "GET /n HTTP/1.1\r\n\r\n",
	    "POST / HTTP/1.1\r\nHost: ep.example:443\r\n" INJ
	    "Transfer-Encoding: gzip, chunked\r\n\r\n"
	    "5;ext=1\r\nGET /\r\na\r\n\r\n\r\n\r\n\r\n\r\n\r\n0\r\nX-T: 1\r\n\r\n"
	    "GET /n HTTP/1.1\r\nHost: ep.example:443\r\n" INJ "\r\n");
	same("after an upgrade request the rest passes raw",
	    "GET /ws HTTP/1.1\r\nConnection: keep-alive, Upgrade\r\nUpgrade: websocket\r\n\r\n"
	    "GET / HTTP/1.1\r\n\r\n",
	    "GET /ws HTTP/1.1\r\nHost: ep.example:443\r\n" INJ
	    "Connection: keep-alive, Upgrade\r\nUpgrade: websocket\r\n\r\n"
	    "GET / HTTP/1.1\r\n\r\n");
	same("blank lines between requests are dropped",
	    "\r\n\r\nGET / HTTP/1.1\r\n\r\n",
	    "GET / HTTP/1.1\r\nHost: ep.example:443\r\n" INJ "\r\n");

	refused("a bad Content-Length is refused",
	    "POST / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", 39, "Content-Length");
	refused("a header line without ':' is refused",
	    "GET / HTTP/1.1\r\nnocolon\r\n\r\n", 27, "':'");
	refused("a bad chunk size is refused",
	    "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 51, "chunk size");
#define R(name, lit, why) refused(name, lit, sizeof(lit) - 1, why)
	/* RFC 9112: what a server (and so this relay, which frames for one) must
	 * refuse, each a way to make the endpoint frame a request otherwise. */
	R("Content-Length with Transfer-Encoding chunked is refused",
	    "POST / HTTP/1.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n",
	    "both Content-Length and Transfer-Encoding");
	R("... in either order",
	    "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n",
	    "both Content-Length and Transfer-Encoding");
	R("two different Content-Lengths are refused",
	    "POST / HTTP/1.1\r\nContent-Length: 4\r\nContent-Length: 40\r\n\r\n",
	    "two different Content-Lengths");
	R("\"Host :\" (space before the colon) is refused",
	    "GET / HTTP/1.1\r\nHost : evil.example\r\n\r\n", "whitespace before its ':'");
	R("any header name with a tab before the colon is refused",
	    "GET / HTTP/1.1\r\nContent-Length\t: 5\r\n\r\n", "whitespace before its ':'");
	R("a header name with a space inside is refused",
	    "GET / HTTP/1.1\r\nX Y: 5\r\n\r\n", "not a token");
	R("a folded header line is refused",
	    "GET / HTTP/1.1\r\nX-aws-proxy-port: 22\r\n\tfolded\r\n\r\n", "folded");
	R("a header line ending in a bare LF is refused",
	    "GET / HTTP/1.1\r\nA: b\nHost: x\r\n\r\n", "CRLF");
	R("a Transfer-Encoding not ending in chunked is refused",
	    "POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", "does not end with chunked");
	R("a chunk size above 2^64 is refused (no wrap)",
	    "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000005\r\n", "64 bits");
	R("a chunk size of 2^64-1 is refused (its CRLF would wrap)",
	    "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n", "64 bits");
	R("a chunk size with junk after the digits is refused",
	    "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5x\r\n", "chunk size");
	R("a Content-Length over 19 digits is refused",
	    "POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", "Content-Length");
	{
		static const char nul[] = "GET / HTTP/1.1\r\nA: \0b\r\n\r\n";
		refused("a NUL in a head is refused", nul, sizeof nul - 1, "NUL");
	}
	{
		size_t n = FWD_HTTP_HEAD_MAX + 100;
		char *big = malloc(n);
		memcpy(big, "GET / HTTP/1.1\r\nA: ", 19);
		memset(big + 19, 'a', n - 19);
		refused("a head over the limit is refused", big, n, "over");
		free(big);
	}

	/* The answer head: status and one header, as the relay reads them. */
	{
		static const char h[] = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
		    "sec-websocket-accept:  s3pPLMBiTxaQ9kYGzzhZRbK+xOo= \r\n\r\n";
		char v[64], acc[32];
		check(fwd_head_status(h, sizeof h - 1) == 101, "the status of a 101 head");
		check(fwd_head_status("HTTP/1.1 20", 11) == -1, "a cut status line is not a status");
		check(fwd_head_status("HTTX/1.1 200 OK\r\n", 17) == -1, "not HTTP is not a status");
		check(fwd_head_status("HTTP/1.1 2000 OK\r\n", 18) == -1, "four digits are not a status");
		check(fwd_head_field(h, sizeof h - 1, "Sec-WebSocket-Accept", v, sizeof v) == 0 &&
		    strcmp(v, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=") == 0, "a header found in any case, trimmed");
		static const char twice[] = "HTTP/1.1 101 X\r\nSec-WebSocket-Accept: a\r\n"
		    "Sec-WebSocket-Accept: b\r\n\r\n";
		check(fwd_head_field(twice, sizeof twice - 1, "Sec-WebSocket-Accept", v, sizeof v) < 0,
		    "a header given twice is not taken");
		check(fwd_head_field(h, sizeof h - 1, "Sec-WebSocket-Key", v, sizeof v) < 0,
		    "a missing header is missing");
		/* RFC 6455 section 1.3's sample. */
		fwd_ws_accept("dGhlIHNhbXBsZSBub25jZQ==", acc, sizeof acc);
		check(strcmp(acc, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=") == 0,
		    "Sec-WebSocket-Accept of RFC 6455's sample key (%s)", acc);
	}
	return tap_end();
}
