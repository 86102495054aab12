/* Reading and comparing one file of a diff (core/diff/diff.c): opens that never
 * follow a link, what counts as text, and a unified diff bounded in time and
 * memory. */
#ifndef SBX_CORE_DIFF_TEXT_H
#define SBX_CORE_DIFF_TEXT_H

#include <stddef.h>

#define DIFF_CONTEXT	3
#define DIFF_LCS_CELLS	(2u << 20)	/* the middle part compared line by line */
#define DIFF_OUT_MAX	(256 * 1024)	/* of one file's diff */
#define DIFF_SNIFF	8192		/* a NUL in these first bytes: binary */

/* rel (a/b/c) under root, never through a link: an O_PATH fd, or -1. */
int diff_open_beneath(const char *root, const char *rel);
/* The regular file name in dir (no link followed, no FIFO waited on): its first
 * max bytes (*len; *whole 0 when there is more; *binary when a NUL is in its
 * first DIFF_SNIFF bytes, and then only those are read), or NULL. */
char *diff_read_at(int dir, const char *name, size_t max, size_t *len, int *whole,
    int *binary);
/* Text: UTF-8 (a character cut at the end of what was read is fine) with no
 * NUL and few control characters. */
int diff_is_text(const char *b, size_t n);
/* A unified diff (DIFF_CONTEXT lines of context) of a and b under the name
 * path, at most DIFF_OUT_MAX bytes and a note when cut; cut adds a note that
 * only the first bytes of the file were compared. */
char *diff_unified(const char *path, const char *ab, size_t an, const char *bb,
    size_t bn, int cut);

#endif
