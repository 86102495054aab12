/* Listing and removing qemu snapshots (see snapshot.h); making and restoring
 * them is the qemu backend's (core/backend-qemu.c). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/image.h"
#include "core/paths.h"
#include "core/qemu.h"
#include "core/snapshot.h"
#include "core/util.h"

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
	struct dirent *de;
	cJSON *arr;
	DIR *d;

	if (root == NULL)
		return NULL;
	arr = cJSON_CreateArray();
	if ((d = opendir(root)) == NULL)
		return arr;
	while ((de = readdir(d)) != NULL) {
		_cleanup_free_ char *dir = NULL, *p = NULL, *text = NULL, *full = NULL;
		struct sbx_err sub;
		struct stat st;
		cJSON *o = NULL;

		if (de->d_name[0] == '.' || !image_name_valid(de->d_name))
			continue;
		if ((dir = snapshot_dir(de->d_name, &sub)) != NULL) {
			p = xasprintf("%s/snapshot.json", dir);
			if ((text = read_file(p, 1 << 20, NULL)) != NULL)
				o = cJSON_Parse(text);
		}
		if (o == NULL || !cJSON_IsObject(o)) {
			cJSON_Delete(o);
			o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "error", dir == NULL ? sub.msg : "unreadable snapshot.json");
		}
		full = xasprintf("%s/%s", root, de->d_name);
		cJSON_DeleteItemFromObjectCaseSensitive(o, "name");
		cJSON_AddStringToObject(o, "name", de->d_name);
		cJSON_DeleteItemFromObjectCaseSensitive(o, "dir");
		cJSON_AddStringToObject(o, "dir", full);
		free(p);
		p = xasprintf("%s/memory", full);
		if (stat(p, &st) == 0) {
			cJSON_DeleteItemFromObjectCaseSensitive(o, "memory_bytes");
			cJSON_AddNumberToObject(o, "memory_bytes", (double)st.st_size);
		}
		cJSON_AddItemToArray(arr, o);
	}
	closedir(d);
	return arr;
}

int
snapshot_rm(const char *name, struct sbx_err *e)
{
	_cleanup_free_ char *root = NULL, *dir = NULL;
	struct stat st;

	if (name == NULL || !image_name_valid(name))
		return sbx_error(e, SBX_EINVAL, NULL, "invalid snapshot name '%s'", name ? name : "");
	if ((root = snapshot_root(e)) == NULL)
		return -1;
	dir = xasprintf("%s/%s", root, name);
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return sbx_error(e, SBX_ENOTFOUND, "see `sbxtop snapshot ls`", "no snapshot '%s'", name);
	return qemu_rmtree(dir, e);
}
