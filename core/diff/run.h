/* The walk of a sandbox's layers (diff.c) as the walker process (walker.c)
 * runs it: in that process, items handed to fn as they come. */
#ifndef SBX_DIFF_RUN_H
#define SBX_DIFF_RUN_H

#include "core/core.h"

#define DIFF_PATH_MAX	4096

/* What an item's type and folded point at (static, the same in every process
 * of this program): an item crosses to the core as indexes into these. */
#define DIFF_TYPES	4
#define DIFF_FOLDS	6
extern const char *const diff_type_names[DIFF_TYPES];
extern const char *const diff_fold_names[DIFF_FOLDS];

/* At most DIFF_RUNNING diffs at once in this process: enter waits for a turn. */
void diff_run_enter(void);
void diff_run_leave(void);

/* core_diff_layers without the limit of diffs at once. */
int diff_run(const struct backend_layer *layers, size_t n, const char *id,
    const struct core_diff_opts *o, core_diff_fn fn, void *arg,
    struct core_diff_info *info, struct sbx_err *e);

#endif
