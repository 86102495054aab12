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

/* The n bytes of s with every control a terminal would act on written as text:
 * C0 controls and DEL as \xNN (newline and tab kept when keep_nl), C1 controls
 * (U+0080..U+009F) as \u00NN, bytes that are not UTF-8 as \xNN.  At most
 * outlen-1 bytes and a NUL into out, never a cut escape or character; returns
 * the length written. */
size_t utf8_escape_controls(const char *s, size_t n, char *out, size_t outlen, int keep_nl);
/* The n bytes of s as valid UTF-8, each invalid byte replaced by U+FFFD; at most
 * outlen-1 bytes and a NUL into out (3n+1 always suffices); returns the length. */
size_t utf8_lossy(const char *s, size_t n, char *out, size_t outlen);

#endif
