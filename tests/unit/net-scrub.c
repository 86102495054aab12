/* Unit tests for the scrubbing of a secret's host's answers (core/net/scrub.c):
 * the value echoed in a header, in a Content-Length body, at the very end of a
 * body, split across chunks and across reads (fed a byte at a time), in the
 * trailers; a close-delimited body; an interim 100; a HEAD answer; and the
 * answers that are not passed: compressed, another transfer coding, cut
 * short. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "core/net/scrub.h"

#define V "s3cr3t-VALUE-0123456789"

/* The answer in scrubbed through a scrubber of V (and "other-v"), fed step
 * bytes at a time (0: whole); *rc the last feed's result (or the end's: -2
 * for an end that failed). */
static char *
scrub(const char *in, size_t n, size_t step, int head, int close_at_end, int *rc)
{
	const char *vals[] = { V, "other-v" };
	struct net_scrub *s = net_scrub_new(vals, 2, head);
	struct buf out;
	char why[256];

	buf_init(&out, 1 << 20);
	*rc = 0;
	for (size_t off = 0; off < n && *rc == 0;) {
		size_t k = step == 0 || n - off < step ? n - off : step;
		*rc = net_scrub_feed(s, in + off, k, &out, why, sizeof why);
		off += k;
	}
	if (*rc == 0 && close_at_end && net_scrub_end(s, &out, why, sizeof why) < 0)
		*rc = -2;
	if (*rc < 0)
		diag("why: %s", why);
	net_scrub_free(s);
	buf_append(&out, "", 0);
	return out.data ? out.data : calloc(1, 1);
}

/* The data of a chunked body (after the head), or NULL when it is not one. */
static char *
dechunk(const char *p)
{
	size_t cap = strlen(p) + 1, o = 0;
	char *out = calloc(1, cap);

	for (;;) {
		char *end;
		unsigned long n = strtoul(p, &end, 16);
		if (end == p || strncmp(end, "\r\n", 2) != 0) {
			free(out);
			return NULL;
		}
		p = end + 2;
		if (n == 0)
			return out;
		memcpy(out + o, p, n);
		o += n;
		p += n;
		if (strncmp(p, "\r\n", 2) != 0) {
			free(out);
			return NULL;
		}
		p += 2;
	}
}

int
main(void)
{
	char in[4096], *a, *b, *body;
	int rc, rc2, same = 1;
	size_t n;

	n = (size_t)snprintf(in, sizeof in, "HTTP/1.1 200 OK\r\nX-Echo: Bearer " V "\r\n"
	    "Content-Length: %zu\r\n\r\nAuthorization: Bearer " V "\n", strlen(V) + 23);
	a = scrub(in, n, 0, 0, 1, &rc);
	check(rc == 1 && strstr(a, V) == NULL, "the value in a header and a body: gone");
	check(strstr(a, "X-Echo: Bearer ***********************\r\n") != NULL &&
	    strlen(a) == n, "replaced by as many '*', so the Content-Length stays true");
	for (size_t step = 1; step < 40; step++) {
		b = scrub(in, n, step, 0, 1, &rc2);
		same &= rc2 == 1 && strcmp(a, b) == 0;
		free(b);
	}
	check(same, "fed 1 to 39 bytes at a time (a value cut by every read): the same");
	free(a);

	n = (size_t)snprintf(in, sizeof in, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n"
	    "ends with " V, strlen(V) + 10);
	a = scrub(in, n, 3, 0, 1, &rc);
	check(rc == 1 && strstr(a, V) == NULL && strstr(a, "ends with *") != NULL,
	    "the value as the body's last bytes: gone");
	free(a);

	/* The value cut across chunks: "s3cr3t-V" | "ALUE-01" | "23456789", with an
	 * extension, and in a trailer. */
	n = (size_t)snprintf(in, sizeof in, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "b;ext=1\r\ntoken: s3cr\r\n4\r\n3t-V\r\n7\r\nALUE-01\r\n9\r\n23456789\n\r\n"
	    "0\r\nX-Trailer: " V "\r\n\r\nafter");
	a = scrub(in, n, 0, 0, 1, &rc);
	body = strstr(a, "\r\n\r\n") ? dechunk(strstr(a, "\r\n\r\n") + 4) : NULL;
	check(rc == 1 && body != NULL && strstr(a, "ext=1") == NULL,
	    "a chunked answer goes out chunked (without the host's extensions)");
	check(body != NULL && strstr(body, V) == NULL && strstr(body, "token: ****") != NULL,
	    "the value cut across three chunks: gone from the body");
	check(strstr(a, "X-Trailer: ***") != NULL && strstr(a, V) == NULL,
	    "and from the trailers");
	check(strstr(a, "after") == NULL, "nothing after the answer is passed");
	free(body);
	body = dechunk(strstr(a, "\r\n\r\n") + 4);
	for (size_t step = 1; step < 30 && body != NULL; step++) {
		char *bb;
		b = scrub(in, n, step, 0, 1, &rc2);
		bb = strstr(b, "\r\n\r\n") ? dechunk(strstr(b, "\r\n\r\n") + 4) : NULL;
		same &= rc2 == 1 && bb != NULL && strcmp(body, bb) == 0 &&
		    strstr(b, "X-Trailer: ***") != NULL;
		free(bb);
		free(b);
	}
	check(same, "fed a byte or more at a time: the same body (in other chunks) and trailer");
	free(body);
	free(a);

	n = (size_t)snprintf(in, sizeof in, "HTTP/1.0 200 OK\r\n\r\nto the end " V " and other-v");
	a = scrub(in, n, 5, 0, 1, &rc);
	check(rc == 0 && strstr(a, V) == NULL && strstr(a, "other-v") == NULL &&
	    strstr(a, "to the end") != NULL, "a body to the close, two values: both gone");
	free(a);

	n = (size_t)snprintf(in, sizeof in, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 400 Bad\r\n"
	    "Content-Length: %zu\r\n\r\n<p>bad header " V "</p>", strlen(V) + 18);
	a = scrub(in, n, 0, 0, 1, &rc);
	check(rc == 1 && strstr(a, "100 Continue") != NULL && strstr(a, V) == NULL &&
	    strstr(a, "<p>bad header ***") != NULL, "an error page after a 100: gone");
	free(a);

	n = (size_t)snprintf(in, sizeof in, "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n"
	    "Content-Length: 20\r\n\r\n\x1f\x8b compressed bytes!!");
	a = scrub(in, n, 0, 0, 1, &rc);
	check(rc == -1 && a[0] == '\0', "a compressed answer: refused, nothing passed");
	free(a);
	a = scrub(in, strstr(in, "\r\n\r\n") + 4 - in, 0, 1, 1, &rc);
	check(rc == 1 && strstr(a, "gzip") != NULL, "but the head of an answer to HEAD passes");
	free(a);
	n = (size_t)snprintf(in, sizeof in, "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked"
	    "\r\n\r\n0\r\n\r\n");
	a = scrub(in, n, 0, 0, 1, &rc);
	check(rc == -1 && a[0] == '\0', "a transfer coding other than chunked: refused");
	free(a);
	n = (size_t)snprintf(in, sizeof in, "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort " V);
	a = scrub(in, n, 0, 0, 1, &rc);
	check(rc == -2 && strstr(a, V) == NULL, "an answer cut short: said so, nothing of the "
	    "value passed");
	free(a);
	n = (size_t)snprintf(in, sizeof in, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
	a = scrub(in, n, 0, 0, 1, &rc);
	check(rc == -1, "Content-Length and Transfer-Encoding together: refused");
	free(a);
	return tap_end();
}
