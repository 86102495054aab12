/* A bounded extractor for AWS's XML answers (see aws-xml.h). */
#include <string.h>

#include "backends/lambda/aws-xml.h"

#define TAG_MAX	64

static int
name_end(char c)
{
	return c == '>' || c == '/' || c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* The first start tag named tag in [p, end): sets *content to just past its '>'
 * and *empty for <tag/>.  0 when there is none. */
static int
find_start(const char *p, const char *end, const char *tag, const char **content, int *empty)
{
	size_t tl = strlen(tag);

	while (p < end && (p = memchr(p, '<', (size_t)(end - p))) != NULL) {
		p++;
		if ((size_t)(end - p) > tl && memcmp(p, tag, tl) == 0 && name_end(p[tl])) {
			const char *gt = memchr(p + tl, '>', (size_t)(end - p - tl));
			if (gt == NULL)
				return 0;
			*empty = gt[-1] == '/';
			*content = gt + 1;
			return 1;
		}
	}
	return 0;
}

/* Append the code point cp as UTF-8; -1 when it is not a character XML allows
 * or does not fit. */
static int
put_utf8(unsigned long cp, char *out, size_t outsz, size_t *n)
{
	char b[4];
	size_t k;

	if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return -1;
	if (cp < 0x80) {
		b[0] = (char)cp;
		k = 1;
	} else if (cp < 0x800) {
		b[0] = (char)(0xC0 | (cp >> 6));
		b[1] = (char)(0x80 | (cp & 0x3F));
		k = 2;
	} else if (cp < 0x10000) {
		b[0] = (char)(0xE0 | (cp >> 12));
		b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		b[2] = (char)(0x80 | (cp & 0x3F));
		k = 3;
	} else {
		b[0] = (char)(0xF0 | (cp >> 18));
		b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
		b[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
		b[3] = (char)(0x80 | (cp & 0x3F));
		k = 4;
	}
	if (*n + k >= outsz)
		return -1;
	memcpy(out + *n, b, k);
	*n += k;
	return 0;
}

/* Decode the text [p, q) into out. */
static int
decode(const char *p, const char *q, char *out, size_t outsz)
{
	static const struct { const char *name; char c; } ent[] = {
		{ "amp", '&' }, { "lt", '<' }, { "gt", '>' }, { "quot", '"' }, { "apos", '\'' },
	};
	size_t n = 0;

	while (p < q) {
		if (*p == '<' || *p == '\0')
			return -1;		/* nested markup, CDATA, comments: not ours */
		if (*p != '&') {
			if (n + 1 >= outsz)
				return -1;
			out[n++] = *p++;
			continue;
		}
		const char *semi = memchr(p, ';', (size_t)(q - p));
		size_t el;
		if (semi == NULL || (el = (size_t)(semi - p - 1)) == 0 || el > 10)
			return -1;
		if (p[1] == '#') {
			unsigned long cp = 0;
			int hex = el > 1 && (p[2] == 'x' || p[2] == 'X');
			const char *d = p + 2 + hex;
			if (d == semi)
				return -1;
			for (; d < semi; d++) {
				int v = *d >= '0' && *d <= '9' ? *d - '0' :
				    hex && *d >= 'a' && *d <= 'f' ? *d - 'a' + 10 :
				    hex && *d >= 'A' && *d <= 'F' ? *d - 'A' + 10 : -1;
				if (v < 0)
					return -1;
				cp = cp * (hex ? 16 : 10) + (unsigned long)v;
				if (cp > 0x10FFFF)
					return -1;
			}
			if (put_utf8(cp, out, outsz, &n) < 0)
				return -1;
		} else {
			size_t i;
			for (i = 0; i < sizeof ent / sizeof ent[0]; i++)
				if (strlen(ent[i].name) == el && memcmp(p + 1, ent[i].name, el) == 0)
					break;
			if (i == sizeof ent / sizeof ent[0] || n + 1 >= outsz)
				return -1;
			out[n++] = ent[i].c;
		}
		p = semi + 1;
	}
	out[n] = '\0';
	return 0;
}

/* The element's content [*cs, *ce) after find_start; -1 with no end tag. */
static int
element(const char *xml, const char *end, const char *tag, const char **cs, const char **ce)
{
	char close[TAG_MAX + 4];
	size_t cl, tl = strlen(tag);
	int empty = 0;

	if (tl == 0 || tl > TAG_MAX)
		return -1;
	if (!find_start(xml, end, tag, cs, &empty))
		return 0;
	if (empty) {
		*ce = *cs;
		return 1;
	}
	close[0] = '<';
	close[1] = '/';
	memcpy(close + 2, tag, tl);
	close[tl + 2] = '>';
	cl = tl + 3;
	for (const char *p = *cs; p + cl <= end; p++) {
		p = memchr(p, '<', (size_t)(end - p));
		if (p == NULL || p + cl > end)
			break;
		if (memcmp(p, close, cl) == 0) {
			*ce = p;
			return 1;
		}
	}
	return -1;
}

int
aws_xml_text(const char *xml, size_t len, const char *tag, char *out, size_t outsz)
{
	const char *cs, *ce;
	int r;

	if (outsz == 0)
		return -1;
	out[0] = '\0';
	if (xml == NULL || (r = element(xml, xml + len, tag, &cs, &ce)) <= 0)
		return xml == NULL ? 0 : r;
	return decode(cs, ce, out, outsz) < 0 ? (out[0] = '\0', -1) : 1;
}

int
aws_xml_text_in(const char *xml, size_t len, const char *parent, const char *tag,
    char *out, size_t outsz)
{
	const char *cs, *ce;
	int r;

	if (outsz == 0)
		return -1;
	out[0] = '\0';
	if (xml == NULL || (r = element(xml, xml + len, parent, &cs, &ce)) <= 0)
		return xml == NULL ? 0 : r;
	return aws_xml_text(cs, (size_t)(ce - cs), tag, out, outsz);
}

int
aws_pct_decode(char *s, int form)
{
	char *w = s;

	for (const char *r = s; *r; r++) {
		if (*r == '%') {
			int v = 0;
			for (int i = 1; i <= 2; i++) {
				char c = r[i];
				int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ?
				    c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
				if (d < 0)
					return -1;
				v = v * 16 + d;
			}
			if (v == 0)
				return -1;
			*w++ = (char)v;
			r += 2;
		} else {
			*w++ = form && *r == '+' ? ' ' : *r;
		}
	}
	*w = '\0';
	return 0;
}
