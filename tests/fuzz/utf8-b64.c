/* Fuzz target: UTF-8 validation and base64.  utf8_complete_prefix agrees with
 * utf8_valid (a valid text cut anywhere leaves a valid prefix and a valid rest);
 * base64 decode(encode(x)) == x; decoding garbage never crashes, and what it
 * accepts re-encodes to the same length and decodes to the same bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/b64.h"
#include "lib/utf8.h"

static void
check_utf8(const char *s, size_t n)
{
	size_t p = utf8_complete_prefix(s, n);
	int valid = utf8_valid(s, n);

	if (p > n || n - p > 3)
		abort();
	if (valid && p != n)
		abort();		/* a valid text ends on a character boundary */
	if (!valid)
		return;
	/* Cut a valid text anywhere: the complete prefix and the rest are valid. */
	for (size_t cut = 0; cut <= n && cut <= 64; cut++) {
		size_t q = utf8_complete_prefix(s, cut);
		if (q > cut || cut - q > 3 || !utf8_valid(s, q) || !utf8_valid(s + q, n - q))
			abort();
	}
}

static void
check_b64(const unsigned char *d, size_t n)
{
	char *enc = b64_encode(d, n);
	size_t elen = strlen(enc), outlen = 0;

	if (elen != (n + 2) / 3 * 4)
		abort();
	for (size_t i = 0; i < elen; i++)
		if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=", enc[i]))
			abort();
	unsigned char *dec = b64_decode(enc, elen, &outlen);
	if (dec == NULL || outlen != n || memcmp(dec, d, n) != 0 || dec[n] != '\0')
		abort();
	free(dec);
	free(enc);

	/* The input as base64 text: rejected or decoded, never a crash. */
	dec = b64_decode((const char *)d, n, &outlen);
	if (dec == NULL)
		return;
	if (n % 4 != 0 || outlen > n / 4 * 3)
		abort();
	enc = b64_encode(dec, outlen);
	if (strlen(enc) != n)
		abort();
	unsigned char *again = b64_decode(enc, n, &outlen);
	if (again == NULL || memcmp(again, dec, outlen) != 0)
		abort();
	free(again);
	free(enc);
	free(dec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_utf8((const char *)data, size);
	check_b64(data, size);
	return 0;
}
