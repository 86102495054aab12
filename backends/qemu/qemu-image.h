/* VM images for the qemu backend: $XDG_DATA_HOME/sbxtop/images/NAME/ holds
 * vmlinuz, initrd (busybox and the virtio modules the kernel needs, then
 * switch_root), rootfs.ext4 (made with mke2fs -d: no root, no loop mounts) and
 * image.json (what was built and how). */
#ifndef SBX_IMAGE_H
#define SBX_IMAGE_H

#include <stdint.h>
#include <cjson/cJSON.h>

#include "lib/err.h"

#define IMAGE_DEFAULT_NAME	"default"

struct image_build_opts {
	const char	*name;		/* NULL: "default" */
	const char	*kernel;	/* NULL: Debian's cloud kernel package (cached);
					 * a vmlinuz file, a linux-image .deb, or a
					 * directory where one was extracted */
	const char	*from;		/* NULL: busybox; a rootfs directory or tarball */
	const char	*debootstrap;	/* NULL, or a suite debootstrap makes the rootfs of
					 * (root only; not with from) */
	const char	*packages;	/* NULL, or packages (comma-separated) added to it */
	int64_t		 size_mib;	/* 0: 1024 (sparse) */
};

/* Build (or rebuild) an image; *info (when not NULL) gets its image.json.
 * Nothing half-made is left behind on failure. */
int image_build(const struct image_build_opts *o, cJSON **info, struct sbx_err *e);
/* What goes on top of an OCI image's root for the disk sbxtop makes of it
 * (struct backend's image_inject): the agent bundle, busybox, the guest's init
 * at /opt/sbxtop/init, and the image's Env, User and WorkingDir as the agent's
 * arguments in /opt/sbxtop/image-args; *dir a new directory (caller removes). */
int qemu_image_inject(const cJSON *spec, char **dir, struct sbx_err *e);
/* Every image: an array of image.json objects with "name" and "dir". */
cJSON *image_list(struct sbx_err *e);
/* Remove an image. */
int image_rm(const char *name, struct sbx_err *e);
/* The directory of an existing, complete image (caller frees); NULL with e,
 * whose hint says how to build it. */
char *image_dir(const char *name, struct sbx_err *e);
/* 1 when name is a valid image name (letters, digits, '.', '_', '-'). */
int image_name_valid(const char *name);

/* The entries of a store under root (images, snapshots): each one's meta file
 * (image.json, snapshot.json) as an object with "name" and "dir", or with
 * "error" when dir_of (image_dir, snapshot_dir) finds it incomplete or the file
 * cannot be read. */
cJSON *qemu_store_list(const char *root, const char *meta,
    char *(*dir_of)(const char *name, struct sbx_err *e));
/* Remove the entry name of the store under root; kind ("image", "snapshot")
 * names it in errors. */
int image_store_rm(const char *root, const char *kind, const char *name, struct sbx_err *e);

#endif
