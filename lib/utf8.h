/* UTF-8 validation, so output is returned as text only when it really is text,
 * and streamed chunks are never split in the middle of a character. */
#ifndef SBX_UTF8_H
#define SBX_UTF8_H

#include <stddef.h>

/* 1 if the n bytes are valid UTF-8 (no overlongs, surrogates or > U+10FFFF). */
int utf8_valid(const char *s, size_t n);
/* Length of the longest prefix of s that does not end inside a multi-byte sequence
 * which the following bytes could still complete.  Invalid bytes count as whole. */
size_t utf8_complete_prefix(const char *s, size_t n);

#endif
