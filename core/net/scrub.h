/* What a secret's host answers, on its way back to the sandbox, with every
 * secret's value scrubbed out (net/secret.c).  The host may echo the request
 * it got, and that request carried the value: in a body (an echo service, a
 * debug endpoint, an error page quoting the request), in a header, or split
 * across the chunks of a chunked body.  So the answer is read as HTTP/1.1
 * framing: the head whole, then the body by its Content-Length, its chunks or
 * to the end, and each value is replaced wherever it occurs in the head, the
 * body (however it is cut into chunks, TCP reads or TLS records) and the
 * trailers, by as many '*' as it has bytes (a Content-Length stays true).
 * What cannot be read that way is not passed at all: a compressed body
 * (Content-Encoding other than identity, a transfer coding other than
 * chunked), which could carry the value where no match finds it, and framing
 * this cannot follow.  Only the exact bytes are found: a value transformed on
 * the way (base64, hex, escaped, cut into pieces by the host) is not.  Pure
 * logic: a fuzz target reads it. */
#ifndef SBX_NET_SCRUB_H
#define SBX_NET_SCRUB_H

#include <stddef.h>

#include "lib/buf.h"

#define NET_SCRUB_HEAD_MAX	(64 * 1024)	/* an answer head, or its trailers */

struct net_scrub;

/* A scrubber of the answer to one request (head_request: it was HEAD, so no
 * body follows) for the n values (copied; each non-empty). */
struct net_scrub *net_scrub_new(const char *const *values, size_t n, int head_request);
/* Free it, wiping what it held. */
void net_scrub_free(struct net_scrub *s);

/* Feed n bytes the host sent; what may go to the sandbox is appended to out.
 * 0: more to come; 1: the answer is complete (anything after it is not
 * passed); -1 with why: an answer that cannot be checked, or broken framing
 * (nothing more may be passed; when net_scrub_started is 0, nothing was). */
int net_scrub_feed(struct net_scrub *s, const char *in, size_t n, struct buf *out,
    char *why, size_t whylen);
/* The host closed the connection: what is held goes out.  0, or -1 with why
 * when the answer was cut short (in its head, a chunk, or before its
 * Content-Length). */
int net_scrub_end(struct net_scrub *s, struct buf *out, char *why, size_t whylen);
/* Whether any byte of the answer was passed yet. */
int net_scrub_started(const struct net_scrub *s);

#endif
