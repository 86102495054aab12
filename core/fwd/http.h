/* The request side of a direct HTTP forward (lambda `forward --http`): the bytes
 * a local client sends, request after request on one connection, with the
 * headers the AWS endpoint needs put into each request head (X-aws-proxy-auth,
 * X-aws-proxy-port), the client's own X-aws-proxy-* headers dropped, and Host
 * set to the endpoint's.  Bodies (Content-Length or chunked) pass unchanged; after
 * an upgrade request the rest of the stream passes unchanged. */
#ifndef SBX_FWD_HTTP_H
#define SBX_FWD_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "lib/buf.h"

#define FWD_HTTP_HEAD_MAX	(32 * 1024)	/* one request head */

struct fwd_http;

/* A rewriter that adds the header lines inject ("Name: value\r\n"...) and sets
 * Host to host.  Both are copied. */
struct fwd_http *fwd_http_new(const char *inject, const char *host);
void fwd_http_free(struct fwd_http *h);
/* Use inject for the requests from now on (a re-minted token). */
void fwd_http_set_inject(struct fwd_http *h, const char *inject);
/* Feed n bytes from the client; what goes upstream is appended to out.  -1 with
 * why filled for a request that cannot be relayed (a head over the limit, a bad
 * Content-Length or chunk size). */
int fwd_http_feed(struct fwd_http *h, const char *in, size_t n, struct buf *out, char *why,
    size_t whylen);

/* Whether the last coding of a Transfer-Encoding value (vl bytes) is chunked. */
int fwd_last_is_chunked(const char *v, size_t vl);
/* The size of a chunk-size line (hex digits, then an extension or the end);
 * -1 for anything else, or a size that does not fit in 64 bits with its CRLF. */
int fwd_chunk_size(const char *line, uint64_t *out);

/* The status of an answer head ("HTTP/1.x NNN ..."), or -1 when it is not one. */
int fwd_head_status(const char *head, size_t len);
/* The value of header name (any case, blanks trimmed) in an answer head of len
 * bytes, into out; -1 when it is missing, given twice, or longer than outlen-1. */
int fwd_head_field(const char *head, size_t len, const char *name, char *out,
    size_t outlen);

#endif
