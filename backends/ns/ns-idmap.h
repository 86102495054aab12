/* How the ns backend maps the sandbox's user ids onto the host: a subordinate
 * range (as root, or through newuidmap/newgidmap), or the caller's uid alone.
 * Only the ns backend (backend-ns.c, ns-rootfs.c) uses this. */
#ifndef SBX_NS_IDMAP_H
#define SBX_NS_IDMAP_H

#include <sys/types.h>

#include "lib/err.h"

/* The fixed range used as root when /etc/subuid has no entry for root. */
#define NS_ROOT_RANGE_START	1065536u
#define NS_RANGE_COUNT		65536u
/* The unprivileged user inside, where a range exists. */
#define NS_SANDBOX_UID		1000u

enum ns_map_mode {
	NS_MAP_ROOT,		/* we are root: write uid_map/gid_map directly */
	NS_MAP_HELPER,		/* ordinary user: newuidmap/newgidmap with /etc/subuid */
	NS_MAP_SINGLE,		/* ordinary user, no range: 0 -> the caller only */
};

struct ns_idmap {
	enum ns_map_mode mode;
	uid_t	uid_base;	/* host uid of the sandbox's root */
	gid_t	gid_base;
	uid_t	sub_uid;	/* HELPER: first subordinate uid (inside uid 1) */
	gid_t	sub_gid;
	unsigned count;		/* ids mapped from 0: NS_RANGE_COUNT, or 1 */
	int	have_user;	/* a separate `sandbox` user exists inside */
	char	where[128];	/* where the range came from, for notes and docs */
};

/* Decide the mapping for this caller on this host. */
int ns_idmap_choose(struct ns_idmap *m, struct sbx_err *e);
/* Write the maps of the user namespace that pid created (it must be waiting). */
int ns_idmap_write(const struct ns_idmap *m, pid_t pid, struct sbx_err *e);
/* The host uid/gid that sandbox id `in` maps to, or (uid_t)-1 when unmapped. */
uid_t ns_idmap_host_uid(const struct ns_idmap *m, uid_t in);
gid_t ns_idmap_host_gid(const struct ns_idmap *m, gid_t in);
/* Run fn(arg, report) in a child process, as root of a new user namespace with
 * m's mapping (where the sandbox's files are ours to touch).  fn returns 0, or
 * fills report and returns -1; report (rlen bytes) comes back to the
 * caller's copy either way.
 * Returns 0 when fn succeeded; 1 when it failed, with report filled (zeroed when
 * it did not get through) and *status the child's wait status; -1 when no
 * namespace could be made to `what` (e says why). */
int ns_idmap_run(const struct ns_idmap *m, int (*fn)(void *arg, void *report), void *arg,
    void *report, size_t rlen, int *status, const char *what, struct sbx_err *e);
/* The same, with pre(arg, report) first, in the child once its maps are
 * written and before it becomes that root: still the creator's uid, with
 * every capability in the new namespace (make a mount namespace, open paths
 * above what the sandbox's root may search). */
int ns_idmap_run2(const struct ns_idmap *m, int (*pre)(void *arg, void *report),
    int (*fn)(void *arg, void *report), void *arg, void *report, size_t rlen, int *status,
    const char *what, struct sbx_err *e);
/* Remove the tree at path, whoever inside the sandbox owns its files: directly
 * when we may, else from a user namespace with the sandbox's mapping.  A path
 * that does not exist is not an error. */
int ns_rmtree(const struct ns_idmap *m, const char *path, struct sbx_err *e);
/* Copy the contents of directory src (a sandbox's, hostile) into the existing
 * directory dst: owners, modes, times and xattrs kept, links never followed,
 * data cloned where the filesystem can (ns-copy.c). */
int ns_copy_tree(const struct ns_idmap *m, const char *src, const char *dst,
    struct sbx_err *e);
/* The writable trees of the sandbox directory from (upper, workspace, each host
 * layer's upper) into the new sandbox directory to, by ns_copy_tree. */
int ns_copy_sandbox(const struct ns_idmap *m, const char *from, const char *to,
    struct sbx_err *e);

/* A clone of host dir path whose files appear inside as owned by their own ids
 * as seen through the user namespace userns_fd (host root -> sandbox root):
 * an fd for move_mount, or -1 with e. */
int ns_idmapped_tree(int userns_fd, const char *path, struct sbx_err *e);

#endif
