/* Base64 (RFC 4648, standard alphabet, padded). */
#ifndef SBX_B64_H
#define SBX_B64_H

#include <stddef.h>

/* Encode n bytes; returns a NUL-terminated string the caller frees. */
char *b64_encode(const void *p, size_t n);
/* Decode; returns a buffer (NUL-terminated for convenience) and its length, or NULL
 * if s is not valid base64.  Whitespace is not accepted. */
unsigned char *b64_decode(const char *s, size_t slen, size_t *outlen);

#endif
