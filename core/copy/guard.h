/* The host side of copies out of a sandbox (and the start of copies in): what
 * an archive or a listing from the sandbox may make on the host.  A sandbox
 * decides the names, types, modes and link targets of what comes out; none of
 * it may write outside the destination, through a link, or on the destination
 * directory itself.  core/core-copy.c calls these; they hold no state. */
#ifndef SBX_COPY_GUARD_H
#define SBX_COPY_GUARD_H

#include <stddef.h>
#include <sys/stat.h>

#include "lib/err.h"

/* The most components a name from the sandbox may have. */
#define COPY_GUARD_DEPTH_MAX	256

/* An archive entry's name made relative and plain into out: a leading "./" is
 * dropped; "", ".", "..", an absolute name, an empty, "." or ".." component, a
 * name deeper than COPY_GUARD_DEPTH_MAX, or one longer than len-1 are refused
 * (-1 with why): an entry "." would set the mode of the destination directory
 * itself. */
int copy_guard_name(const char *name, char *out, size_t len, char *why, size_t whylen);

/* Whether a link entry (its plain name, as copy_guard_name made it) pointing
 * at target stays inside the copied tree: 1 when a relative target, taken from
 * the entry's directory, never climbs above the tree's top (".." only as its
 * prefix); 0 for an absolute target, one that leaves, or one with ".." after a
 * name (such a link is never made on the host: skip it, and say so). */
int copy_guard_link_inside(const char *name, const char *target);

/* The destination directory of a copy out, opened (O_PATH is not enough for
 * mkdirat, so O_RDONLY|O_DIRECTORY) without following a link at dest itself;
 * made (0755) when missing and mkdir is set.  Its parents are the operator's
 * own path and are followed.  -1 with e: a link or a non-directory at dest. */
int copy_guard_dest_open(const char *dest, int mkdir_it, struct sbx_err *e);

/* Under the destination dfd: open (flags and mode as for openat; O_CLOEXEC
 * and O_NOFOLLOW added) or make a directory at the plain name rel, resolving
 * every component beneath dfd and through no link at all (openat2
 * RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS), so what a sandbox laid down in an
 * earlier copy cannot redirect this one.  -1 with errno (ELOOP: a link on the
 * way, EXDEV: outside). */
int copy_guard_openat(int dfd, const char *rel, int flags, mode_t mode);
int copy_guard_mkdirat(int dfd, const char *rel, mode_t mode);

/* The top-level source of a copy in, lstat'ed into *st: a link is refused with
 * e (the one at the top could point anywhere on the host; name its target
 * instead, or write "link/", which lstat follows, as the operator's explicit
 * choice); below it, entries are read with fstatat(AT_SYMLINK_NOFOLLOW) and
 * links go in as links. */
int copy_guard_source(const char *local, struct stat *st, struct sbx_err *e);

#endif
