/* Bounded growable buffer. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/util.h"

void
buf_init(struct buf *b, size_t max)
{
	b->data = NULL;
	b->len = b->cap = 0;
	b->max = max;
}

void
buf_free(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

void
buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data != NULL)
		b->data[0] = '\0';
}

static void
buf_reserve(struct buf *b, size_t need)
{
	if (need + 1 <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < need + 1)
		cap *= 2;
	b->data = xrealloc(b->data, cap);
	b->cap = cap;
}

int
buf_append(struct buf *b, const void *p, size_t n)
{
	if (n > b->max - b->len)
		return -1;
	buf_reserve(b, b->len + n);
	if (n > 0)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

size_t
buf_append_some(struct buf *b, const void *p, size_t n)
{
	size_t room = b->max - b->len;
	if (n > room)
		n = room;
	buf_append(b, p, n);
	return n;
}

int
buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n, rc;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		fatal("out of memory");
	rc = buf_append(b, s, (size_t)n);
	free(s);
	return rc;
}

void
buf_consume(struct buf *b, size_t n)
{
	if (n >= b->len) {
		buf_reset(b);
		return;
	}
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
	b->data[b->len] = '\0';
}

char *
buf_steal(struct buf *b)
{
	char *p = b->data ? b->data : xstrdup("");
	b->data = NULL;
	b->len = b->cap = 0;
	return p;
}
