/* The console's `/` filter: a PCRE2 regular expression (UTF-8, case-insensitive
 * unless it holds an upper-case letter, as less(1) does), and a leading `!`
 * keeps the lines that do NOT match. */
#ifndef SBX_TUI_FILTER_H
#define SBX_TUI_FILTER_H

#include <stddef.h>

struct filter;

/* Compile pattern; NULL with the compiler's message (and offset) in err. */
struct filter *filter_new(const char *pattern, char *err, size_t errlen);
void filter_free(struct filter *f);
/* 1 when text (len bytes) passes the filter (f NULL: everything passes). */
int filter_pass(struct filter *f, const char *text, size_t len);
/* The pattern as typed. */
const char *filter_text(const struct filter *f);

#endif
