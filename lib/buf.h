/* A growable byte buffer with a hard maximum, like curl's dynbuf: every buffer
 * that grows from input has a cap, and reaching it is an error the caller sees. */
#ifndef SBX_BUF_H
#define SBX_BUF_H

#include <stddef.h>

struct buf {
	char	*data;	/* always NUL-terminated when non-NULL */
	size_t	 len;
	size_t	 cap;
	size_t	 max;	/* hard limit on len */
};

void buf_init(struct buf *b, size_t max);
void buf_free(struct buf *b);
void buf_reset(struct buf *b);
/* Append n bytes; -1 (nothing appended) if len would exceed max. */
int buf_append(struct buf *b, const void *p, size_t n);
/* Append as much as fits; returns bytes appended (less than n means truncated). */
size_t buf_append_some(struct buf *b, const void *p, size_t n);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Drop the first n bytes. */
void buf_consume(struct buf *b, size_t n);
/* Hand over the data (caller frees); the buffer is left empty. */
char *buf_steal(struct buf *b);

#endif
