/* Snapshots of qemu sandboxes: $XDG_DATA_HOME/sbxtop/snapshots/NAME/ holds
 * memory (the QEMU migration stream of the paused VM), disk.qcow2 (the disk at
 * the same instant, over base.ext4), vmlinuz and initrd (the machine the memory
 * belongs to) and snapshot.json.  Made by the backend's snapshot op
 * (core_snapshot), used by `create --from-snapshot` (both in qemu-snapshot.c,
 * declared in qemu-vm.h); listed and removed here. */
#ifndef SBX_SNAPSHOT_H
#define SBX_SNAPSHOT_H

#include <cjson/cJSON.h>

#include "lib/err.h"

/* The snapshots' directory (caller frees); NULL with e. */
char *snapshot_root(struct sbx_err *e);
/* The directory of an existing, complete snapshot (caller frees); NULL with e
 * (SBX_ENOTFOUND with a hint naming `sbxtop snapshot ls`). */
char *snapshot_dir(const char *name, struct sbx_err *e);
/* Every snapshot: an array of snapshot.json objects with "name", "dir" and
 * "memory_bytes" (caller frees). */
cJSON *snapshot_list(struct sbx_err *e);
/* Remove a snapshot (sandboxes restored from it keep their own links to its
 * files and go on running). */
int snapshot_rm(const char *name, struct sbx_err *e);

#endif
