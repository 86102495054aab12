/* UTF-8 validation (RFC 3629). */
#include <stdint.h>
#include <string.h>

#include "lib/utf8.h"

/* Length of the valid sequence at s (1..4), 0 if invalid, -k if the n bytes are a
 * valid but incomplete start of a k-byte sequence. */
static int
seq_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	int len;
	unsigned char lo = 0x80, hi = 0xbf;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		if (c == 0xe0) lo = 0xa0;	/* overlong */
		if (c == 0xed) hi = 0x9f;	/* surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		if (c == 0xf0) lo = 0x90;	/* overlong */
		if (c == 0xf4) hi = 0x8f;	/* > U+10FFFF */
	} else
		return 0;
	for (int i = 1; i < len; i++) {
		if ((size_t)i >= n)
			return -len;
		unsigned char l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xbf;
		if (s[i] < l || s[i] > h)
			return 0;
	}
	return len;
}

int
utf8_valid(const char *p, size_t n)
{
	const unsigned char *s = (const unsigned char *)p;
	size_t i = 0;

	while (i < n) {
		/* ASCII fast path, eight bytes at a time: most output is ASCII. */
		while (i + 8 <= n) {
			uint64_t w;
			memcpy(&w, s + i, 8);
			if (w & 0x8080808080808080ULL)
				break;
			i += 8;
		}
		if (i == n)
			break;
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		int l = seq_len(s + i, n - i);
		if (l <= 0)
			return 0;
		i += (size_t)l;
	}
	return 1;
}

size_t
utf8_complete_prefix(const char *p, size_t n)
{
	const unsigned char *s = (const unsigned char *)p;
	/* Only the last three bytes can start an incomplete sequence. */
	size_t start = n > 3 ? n - 3 : 0;

	for (size_t i = start; i < n; i++) {
		if (s[i] < 0xc0)
			continue;
		if (seq_len(s + i, n - i) < 0)
			return i;
	}
	return n;
}
