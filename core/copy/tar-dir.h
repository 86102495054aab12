/* A tar archive unpacked into a host directory, for what arrives from outside
 * a sandbox as an archive (a REST upload, `sbxtop cp - ID:DIR`): regular
 * files, directories and symbolic links whose names stay inside the
 * directory, nothing else.  libarchive does the reading and the writing. */
#ifndef SBX_TAR_DIR_H
#define SBX_TAR_DIR_H

#include "lib/err.h"

struct archive;

/* Unpack the entries of in into dir, in being what archive_read_open_* made
 * of it (its answer in opened): names made plain by copy_guard_name or
 * skipped, hard links, devices and FIFOs skipped, modes kept (0777 bits), no
 * link followed on the way.  -1 with e (SBX_EINVAL, hint as given) when it is
 * not a `what` ("tar archive"), is broken, or holds nothing. */
int tar_dir_unpack(struct archive *in, int opened, const char *dir, const char *what,
    const char *hint, struct sbx_err *e);

#endif
