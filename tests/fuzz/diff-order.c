/* Fuzz target: a diff's cursor, which an agent hands back, and the order and
 * folding of the paths a sandbox names (core/diff/order.c).  The input is a
 * cursor, or two paths split at a NUL.  A cursor taken has numbers a later
 * cursor can carry; the order is a total one (antisymmetric, a path equal to
 * itself). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/diff/order.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
sign(int v)
{
	return (v > 0) - (v < 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char buf[4200], again[64];
	const char *b;
	uint64_t idx, line;
	uint32_t hash, h2;

	if (size >= sizeof buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	if (diff_cursor_parse(buf, &idx, &line, &hash) == 0) {
		if (idx >= 1000000000000ull || line >= 1000000000000ull)
			abort();
		/* What a cursor names, written again, reads the same. */
		snprintf(again, sizeof again, "d1.%llu.%llu.%08x", (unsigned long long)idx,
		    (unsigned long long)line, hash);
		if (diff_cursor_parse(again, &idx, &line, &h2) != 0 || h2 != hash)
			abort();
	}
	b = memchr(buf, '\0', size) ? buf + strlen(buf) + 1 : "";
	if (sign(diff_order_cmp(buf, b)) != -sign(diff_order_cmp(b, buf)) ||
	    diff_order_cmp(buf, buf) != 0)
		abort();
	(void)diff_fold_known(buf);
	diff_cursor_make(again, sizeof again, size, size, buf);
	if (diff_cursor_parse(again, &idx, &line, &hash) != 0 || idx != size ||
	    hash != diff_cursor_hash(buf))
		abort();
	return 0;
}
