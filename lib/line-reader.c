/* Newline-delimited messages (see line-reader.h). */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "lib/line-reader.h"

void
line_reader_init(struct line_reader *l, size_t max, line_reader_line_fn line, line_reader_over_fn over, void *arg)
{
	buf_init(&l->b, max);
	l->over = 0;
	l->line = line;
	l->over_fn = over;
	l->arg = arg;
}

void
line_reader_free(struct line_reader *l)
{
	buf_free(&l->b);
}

void
line_reader_feed(struct line_reader *l, const char *p, size_t n)
{
	const char *end = p + n;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t k = (size_t)((nl ? nl : end) - p);

		if (!l->over && buf_append(&l->b, p, k) < 0) {
			size_t max = l->b.max;
			l->over = 1;
			l->over_fn(l->arg, l->b.data ? l->b.data : "", l->b.len, 1, 0);
			/* What was held is handed over: let its memory go too. */
			buf_free(&l->b);
			buf_init(&l->b, max);
		}
		if (l->over && (k > 0 || nl != NULL))
			l->over_fn(l->arg, p, k, 0, nl != NULL);
		p += k;
		if (nl == NULL)
			break;
		p++;
		if (!l->over)
			l->line(l->arg, l->b.data ? l->b.data : "", l->b.len);
		l->over = 0;
		buf_reset(&l->b);
	}
}

void
line_reader_finish(struct line_reader *l)
{
	if (!l->over && l->b.len > 0)
		l->line(l->arg, l->b.data, l->b.len);
	l->over = 0;
	buf_reset(&l->b);
}

int
line_reader_read_fd(struct line_reader *l, int fd)
{
	char chunk[65536];

	for (;;) {
		ssize_t n = read(fd, chunk, sizeof chunk);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			return 0;
		line_reader_feed(l, chunk, (size_t)n);
	}
}
