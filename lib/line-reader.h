/* One reader of newline-delimited messages (the core protocol, MCP on stdio, the
 * --mcp bridge): bytes in, whole lines out, each line capped.  A line that grows
 * past the cap is handed over in pieces instead, so that a caller can drop it
 * (and say so) or pass it on as it comes. */
#ifndef SBX_LINE_READER_H
#define SBX_LINE_READER_H

#include <stddef.h>

#include "lib/buf.h"

/* A whole line, without its newline. */
typedef void (*line_reader_line_fn)(void *arg, const char *line, size_t len);
/* A piece of a line over the cap: first on the first piece (what was held so
 * far), end on the last (the newline reached; it is not in the piece). */
typedef void (*line_reader_over_fn)(void *arg, const char *piece, size_t len, int first, int end);

struct line_reader {
	struct buf	 b;
	int		 over;		/* the current line went past the cap */
	line_reader_line_fn	 line;
	line_reader_over_fn	 over_fn;
	void		*arg;
};

void line_reader_init(struct line_reader *l, size_t max, line_reader_line_fn line, line_reader_over_fn over, void *arg);
void line_reader_free(struct line_reader *l);
/* Split n more bytes into lines. */
void line_reader_feed(struct line_reader *l, const char *p, size_t n);
/* The input ended: a last line without its newline (one under the cap) still
 * goes to line. */
void line_reader_finish(struct line_reader *l);
/* Read fd to its end, feeding l (EINTR retried): 0 at the end, -1 with errno on
 * a read error.  line_reader_finish is the caller's. */
int line_reader_read_fd(struct line_reader *l, int fd);

#endif
