/* Listing and removing qemu snapshots (see qemu-snapshot.h); making and restoring
 * them is the qemu backend's (backends/qemu/backend-qemu.c). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/qemu/qemu-image.h"
#include "core/paths.h"
#include "backends/qemu/qemu.h"
#include "backends/qemu/qemu-snapshot.h"
#include "lib/util.h"

static const char *const parts[] = { "snapshot.json", "memory", "disk.qcow2", "base.ext4",
    "vmlinuz", "initrd" };

char *
snapshot_root(struct sbx_err *e)
{
	_cleanup_free_ char *data = paths_dir(PATHS_DATA, e);

	return data != NULL ? xasprintf("%s/snapshots", data) : NULL;
}

char *
snapshot_dir(const char *name, struct sbx_err *e)
{
	_cleanup_free_ char *root = NULL;
	char *dir;

	if (name == NULL || !image_name_valid(name)) {
		sbx_error(e, SBX_EINVAL, "snapshot names are 1 to 64 letters, digits, '.', '_' and '-'",
		    "invalid snapshot name '%s'", name ? name : "");
		return NULL;
	}
	if ((root = snapshot_root(e)) == NULL)
		return NULL;
	dir = xasprintf("%s/%s", root, name);
	for (size_t i = 0; i < ARRAY_SIZE(parts); i++) {
		_cleanup_free_ char *p = xasprintf("%s/%s", dir, parts[i]);
		if (access(p, R_OK) < 0) {
			if (i == 0)
				sbx_error(e, SBX_ENOTFOUND, "see `sbxtop snapshot ls`; make one with "
				    "`sbxtop snapshot ID NAME`", "no snapshot '%s'", name);
			else
				sbx_error(e, SBX_EINVAL, "remove it (`sbxtop snapshot rm`) and take it again",
				    "snapshot '%s' is broken: %s is missing", name, parts[i]);
			free(dir);
			return NULL;
		}
	}
	return dir;
}

cJSON *
snapshot_list(struct sbx_err *e)
{
	_cleanup_free_ char *root = snapshot_root(e);
	cJSON *arr, *o;

	if (root == NULL || (arr = image_store_list(root, "snapshot.json", snapshot_dir)) == NULL)
		return NULL;
	cJSON_ArrayForEach(o, arr) {
		_cleanup_free_ char *p = xasprintf("%s/%s/memory", root,
		    cJSON_GetStringValue(cJSON_GetObjectItem(o, "name")));
		struct stat st;
		if (stat(p, &st) == 0) {
			cJSON_DeleteItemFromObjectCaseSensitive(o, "memory_bytes");
			cJSON_AddNumberToObject(o, "memory_bytes", (double)st.st_size);
		}
	}
	return arr;
}

int
snapshot_rm(const char *name, struct sbx_err *e)
{
	_cleanup_free_ char *root = snapshot_root(e);

	return root ? image_store_rm(root, "snapshot", name, e) : -1;
}
