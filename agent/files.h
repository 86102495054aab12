/* File routes (/v1/files/...) and the helpers the archive routes share with them:
 * directory creation, and a directory walk that never follows symlinks and never
 * leaves the directory it starts from. */
#ifndef AGENT_FILES_H
#define AGENT_FILES_H

#include <stdint.h>
#include <sys/stat.h>
#include <cjson/cJSON.h>

#include "agent/path.h"

/* Deepest directory level a walk descends to (the connection threads have small
 * stacks, and no real tree is this deep). */
#define WALK_MAX_DEPTH 200

enum { WALK_GO = 0, WALK_PRUNE = 1, WALK_STOP = 2 };

struct walk;
/* Called for each entry of a walk: dfd is the directory holding it, name its name,
 * st its lstat; files_walk_path(w) is its path relative to the walk's start.
 * Returns WALK_GO (descend into a directory), WALK_PRUNE (do not), WALK_STOP (end
 * the walk, no error), or -1 with errno to fail. */
typedef int (*walk_fn)(struct walk *w, int dfd, const char *name,
    const struct stat *st, int depth, void *arg);

/* Walk the directory open (O_RDONLY) on dirfd, entries sorted by name in each
 * directory: pre for every entry, post (may be NULL) for each directory after its
 * contents.  Directories are opened with O_NOFOLLOW from their parent's descriptor,
 * so symlinks are reported, never followed.  0, or -1 with errno, with
 * files_walk_path(w) naming the entry where it failed. */
int files_walk(int dirfd, walk_fn pre, walk_fn post, void *arg, char *failed_at,
    size_t failed_len);
/* The current entry's path relative to the walk's start. */
const char *files_walk_path(const struct walk *w);

/* The names in the directory open on fd (without "." and "..", and without
 * those starting with '.' unless hidden), sorted; NULL with errno.  Free with
 * files_names_free. */
char **files_names(int fd, int hidden, size_t *count);
void files_names_free(char **names, size_t n);
/* An entry of a listing: {path, name, type, size, mode, mtime_ms, target?}; dfd
 * and name locate it for reading a link's target. */
cJSON *files_entry_json(const char *path, const char *name, const struct stat *st, int dfd);

/* A breadth-first listing (agent/files-list.c). */
struct files_list_opts {
	const char	*base;		/* the listed directory, sandbox-absolute */
	int		 recursive, hidden;
	int64_t		 offset;	/* entries of the listing order to skip */
	int64_t		 max;		/* entries to give */
	int64_t		 fold;		/* a directory with more entries is not entered (0: any size is) */
	const char	**fold_names;	/* directories never entered (NULL-terminated, may be NULL) */
};
/* List the directory open on fd: *out gets {entries, total, total_capped,
 * truncated}, each directory entry with its number of entries and, when a
 * recursive listing did not enter it, folded (big, name, filesystem, depth,
 * unreadable).  -1 with errno when fd cannot be read. */
int files_list_breadth(int fd, const struct files_list_opts *o, cJSON **out);

/* Create directory path and any missing parents (include_self: path too), mode
 * 0755, as whoever this thread acts as (agent_act_as).  0 or -1 with errno. */
int files_mkdirs(const char *path, int include_self);

#endif
