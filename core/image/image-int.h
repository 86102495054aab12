/* What the files of core/image/ share and nothing else calls. */
#ifndef SBX_IMAGE_INT_H
#define SBX_IMAGE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <nettle/sha2.h>

#include "core/image/image.h"

/* "sha256:" + hex of the context's digest into out (IMAGE_DIGEST_LEN). */
void image_sha256_finish(struct sha256_ctx *ctx, char out[IMAGE_DIGEST_LEN]);
/* The digest of what fd holds from its start (read to its end), and its size. */
int image_sha256_fd(int fd, char out[IMAGE_DIGEST_LEN], int64_t *size);
void image_sha256_buf(const void *p, size_t n, char out[IMAGE_DIGEST_LEN]);

/* Reads of blobs go through a buffer this large, from the heap: a thread's
 * static TLS comes out of its stack, which the core server's HTTP threads
 * keep small. */
#define IO_BUF		(1u << 16)

/* Largest manifest, index or config read into memory. */
#define IMAGE_META_MAX	(4u << 20)

#endif
