/* Fuzz target: the scrubbing of a secret's host's answers (core/net/scrub.c).
 * Whatever the answer and however it is cut into reads (the first byte picks
 * the size of each), no value is ever in what goes to the sandbox, and the
 * answer ends the same way (complete, cut, refused) however it was cut. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/net/scrub.h"

static const char *const vals[] = { "SeCrEt", "tok3n-9" };

static int
run(const char *in, size_t n, size_t step, int head)
{
	struct net_scrub *s = net_scrub_new(vals, 2, head);
	struct buf out;
	char why[256];
	int rc = 0;

	buf_init(&out, 1 << 24);
	for (size_t off = 0; off < n && rc == 0; off += step)
		rc = net_scrub_feed(s, in + off, n - off < step ? n - off : step, &out, why,
		    sizeof why);
	if (rc == 0)
		rc = net_scrub_end(s, &out, why, sizeof why) < 0 ? -2 : 0;
	if (rc == -1 && !net_scrub_started(s) && out.len != 0)
		abort();	/* refused before anything, yet something went out */
	for (size_t i = 0; i < 2; i++)
		if (out.len > 0 && memmem(out.data, out.len, vals[i], strlen(vals[i])) != NULL)
			abort();
	net_scrub_free(s);
	buf_free(&out);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t step;
	int head;

	if (size < 1)
		return 0;
	step = (size_t)(data[0] & 0x3f) + 1;
	head = data[0] >> 7;
	data++;
	size--;
	if (run((const char *)data, size, size ? size : 1, head) !=
	    run((const char *)data, size, step, head))
		abort();
	return 0;
}
