/* Fuzz target: the relay's HTTP heads (core/fwd/http.c).  A client's bytes go
 * through the request rewriter whole and then cut where the first input byte
 * says: both runs must agree (accept or refuse, and the same bytes upstream),
 * and every head sent upstream starts with the endpoint's Host and token.  The
 * same bytes are also read as an answer head (status, one header). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/fwd/http.h"
#include "lib/buf.h"

#define INJ "X-aws-proxy-auth: tok\r\nX-aws-proxy-port: 8000\r\n"

static int
feed(const char *in, size_t n, size_t step, struct buf *out)
{
	struct fwd_http *h = fwd_http_new(INJ, "ep:443");
	char why[128];
	int rc = 0;

	for (size_t off = 0; off < n && rc == 0; off += step)
		rc = fwd_http_feed(h, in + off, n - off < step ? n - off : step, out, why, sizeof why);
	fwd_http_free(h);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf a, b;
	char v[64];
	size_t step;
	int ra, rb;

	if (size < 1)
		return 0;
	step = (size_t)(data[0] % 16) + 1;
	data++, size--;
	buf_init(&a, 1 << 22);
	buf_init(&b, 1 << 22);
	ra = feed((const char *)data, size, size ? size : 1, &a);
	rb = feed((const char *)data, size, step, &b);
	if (ra == 0 && rb == 0 && (a.len != b.len || (a.len > 0 && memcmp(a.data, b.data, a.len) != 0)))
		abort();		/* how the bytes came in changed what went out */
	if ((ra == 0) != (rb == 0))
		abort();		/* refused one way, taken the other */
	/* Whatever went out starts with a rewritten head (or is empty). */
	if (ra == 0 && a.len > 0) {
		const char *nl = memchr(a.data, '\n', a.len);
		static const char want[] = "Host: ep:443\r\n" INJ;
		if (nl == NULL || (size_t)(a.data + a.len - nl - 1) < sizeof want - 1 ||
		    memcmp(nl + 1, want, sizeof want - 1) != 0)
			abort();
	}
	buf_free(&a);
	buf_free(&b);

	int st = fwd_head_status((const char *)data, size);
	if (st != -1 && (st < 100 || st > 999))
		abort();
	if (fwd_head_field((const char *)data, size, "Sec-WebSocket-Accept", v, sizeof v) == 0 &&
	    strlen(v) >= sizeof v)
		abort();
	return 0;
}
