/* The ns backend's root filesystem: the cached default image (a skeleton root
 * with a filtered /etc) and, in the launcher's child, the mounts that make the
 * sandbox's root and the pivot into it.  backend-ns.c uses this, and ns-disk.c
 * the layout of a sandbox's directory for its spare disks. */
#ifndef SBX_NS_ROOTFS_H
#define SBX_NS_ROOTFS_H

#include <stdint.h>
#include <sys/types.h>

#include "lib/err.h"

#define NS_MAX_HOST_DIRS 12
/* Lower layers of an OCI image's root (their paths fill one mount's options). */
#define NS_MAX_LAYERS 128

/* Make sure the default image exists, owned by uid/gid (the host ids of the
 * sandbox's root; files are chowned only when we are root), building it once
 * and atomically.  *path is its directory (caller frees). */
int ns_image_ensure(uid_t uid, gid_t gid, char **path, struct sbx_err *e);
/* Remove the images that a rebuild set aside; only when no sandbox is left
 * that may have one as its lower layer.  Returns how many went. */
int ns_image_gc(void);

/* Which host directories the default image takes from the host, as their own
 * overlays: /usr and whichever of /bin /sbin /lib* are real directories.
 * Fills names (static strings) and returns how many. */
int ns_host_dirs(const char *names[NS_MAX_HOST_DIRS]);
/* The flat name of host dir name's layer directory (<dir>/ovl/LAYER): the name
 * itself for the top-level ones, "var-lib-dpkg" for "var/lib/dpkg". */
const char *ns_host_layer(const char *name);

/* The directories a sandbox's directory (dfd) holds before its root is built:
 * upper, work, workspace, run, root, ovl, and a layer (ovl/LAYER/upper and
 * work) for each of the nhost host directories in hosts; all of them, dfd
 * too, owned by uid:gid unless uid is (uid_t)-1.  With fill, one already
 * there is taken as it is (a disk the core server made ready with them).
 * -1 with errno, the path that failed in what. */
int ns_layout_make(int dfd, const char *const *hosts, int nhost, uid_t uid, gid_t gid, int fill,
    char what[64]);
/* Remove the host layers ns_layout_make made for this host's ns_host_dirs
 * from dfd (a sandbox of an image has none). */
void ns_layout_unhost(int dfd);

/* What the child needs to build the root.  Host paths are opened by the child
 * (ns_rootfs_open) and then reached through /proc/self/fd, so no directory
 * above the sandbox's own has to be searchable by the sandbox's ids. */
struct ns_rootfs {
	const char	*dir_path;		/* the sandbox's host directory */
	const char	*image_path;		/* the lower layer of /, or NULL with layers */
	int		 nlayers;		/* an OCI image's layers, top first */
	char *const	*layer_paths;
	int		 layer_fds[NS_MAX_LAYERS];
	const char	*bundle_path;		/* the agent bundle */
	int		 dir_fd, image_fd, bundle_fd;
	int		 image_idmapped;	/* image_fd is a detached idmapped tree */
	int		 nhost;			/* host dirs overlaid (default image only) */
	const char	*host_names[NS_MAX_HOST_DIRS];	/* "usr", "bin", "var/lib/dpkg"... */
	int		 host_fds[NS_MAX_HOST_DIRS];
	int		 host_idmapped;		/* host_fds are detached idmapped trees */
	int		 have_user;		/* chown /workspace and /home/sandbox to it */
	int64_t		 memory_mib;		/* the memory limit /tmp and /dev/shm fit in; 0: none */
	char		 hostname[64];
};

/* In the child, while it still has the creator's uid: open the host paths the
 * mounts need, in the child's own mount namespace (overlay and bind mounts
 * refuse paths from another one).  Fds already set (idmapped trees) are kept. */
int ns_rootfs_open(struct ns_rootfs *r, struct sbx_err *e);

/* In the launcher's child, as root of the sandbox's user namespace, in its own
 * mount namespace: mount the sandbox's root under dir/root, pivot into it and
 * drop the host's tree.  Allocates nothing (the host process may have threads).
 * On return the cwd is the new "/". */
int ns_rootfs_enter(struct ns_rootfs *r, struct sbx_err *e);

#endif
