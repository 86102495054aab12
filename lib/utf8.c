/* UTF-8 validation (RFC 3629). */
#include <stdint.h>
#include <stdio.h>
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

/* Escaping for terminals: a sandbox or an agent may write any bytes, and a
 * terminal acts on C0 controls, DEL and C1 controls (ESC, CSI as 0x9b or as
 * U+009B) whether they arrive raw or UTF-8-encoded. */
size_t
utf8_escape_controls(const char *p, size_t n, char *out, size_t outlen, int keep_nl)
{
	const unsigned char *s = (const unsigned char *)p;
	size_t i = 0, o = 0;

	if (outlen == 0)
		return 0;
	while (i < n) {
		int l = seq_len(s + i, n - i);
		unsigned c = s[i];
		char esc[24];
		size_t el = 0;

		if (l == 1 && (c >= 0x20 && c != 0x7f))
			el = 0;
		else if (l == 1 && keep_nl && (c == '\n' || c == '\t'))
			el = 0;
		else if (l == 1)
			el = (size_t)snprintf(esc, sizeof esc, "\\x%02x", c);
		else if (l == 2 && c == 0xc2 && s[i + 1] < 0xa0)	/* U+0080..U+009F */
			el = (size_t)snprintf(esc, sizeof esc, "\\u%04x", (unsigned)s[i + 1]);
		else if (l <= 0) {
			el = (size_t)snprintf(esc, sizeof esc, "\\x%02x", c);
			l = 1;
		}
		if (el == 0) {
			if (o + (size_t)l >= outlen)
				break;
			memcpy(out + o, s + i, (size_t)l);
			o += (size_t)l;
		} else {
			if (o + el >= outlen)
				break;
			memcpy(out + o, esc, el);
			o += el;
		}
		i += (size_t)l;
	}
	out[o] = '\0';
	return o;
}

size_t
utf8_lossy(const char *p, size_t n, char *out, size_t outlen)
{
	const unsigned char *s = (const unsigned char *)p;
	size_t i = 0, o = 0;

	if (outlen == 0)
		return 0;
	while (i < n) {
		int l = seq_len(s + i, n - i);
		if (l <= 0) {
			if (o + 3 >= outlen)
				break;
			memcpy(out + o, "\xef\xbf\xbd", 3);	/* U+FFFD */
			o += 3;
			i++;
			continue;
		}
		if (o + (size_t)l >= outlen)
			break;
		memcpy(out + o, s + i, (size_t)l);
		o += (size_t)l;
		i += (size_t)l;
	}
	out[o] = '\0';
	return o;
}
