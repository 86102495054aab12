/* The order, the folding and the cursors of a sandbox's changes (diff.c):
 * pure functions of sandbox paths, apart so that unit tests and a fuzz target
 * reach them without a sandbox. */
#ifndef SBX_DIFF_ORDER_H
#define SBX_DIFF_ORDER_H

#include <stddef.h>
#include <stdint.h>

/* <0, 0 or >0 as sandbox path a comes before, with or after b in a listing of
 * changes: /workspace and what is under it first (the agent's own work), then
 * the rest; within each, component by component (a directory right before
 * what is in it, "a/b" before "a.txt").  A trailing '/' sorts as the start of
 * the directory's contents. */
int diff_order_cmp(const char *a, const char *b);

/* Why the directory at sandbox path is one line in a listing whatever it
 * holds: "cache" (~/.npm, ~/.cache, __pycache__, pip's, cargo's and go's
 * module caches, /var/cache ...), "packages" (node_modules, site-packages),
 * "git" (.git); NULL for any other. */
const char *diff_fold_known(const char *path);

/* The position of the item at index (0-based, in the listing's order) whose
 * path is path, at line of its diff, as a cursor: "d1.INDEX.LINE.HASH" into
 * buf (64 bytes suffice). */
void diff_cursor_make(char *buf, size_t len, uint64_t index, uint64_t line,
    const char *path);
/* Parse a cursor diff_cursor_make made: 0 with *index, *line and *hash, -1 when
 * s is not one. */
int diff_cursor_parse(const char *s, uint64_t *index, uint64_t *line, uint32_t *hash);
/* The hash a cursor holds of path. */
uint32_t diff_cursor_hash(const char *path);

#endif
