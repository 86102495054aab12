/* A tar archive unpacked into a host directory (copy/tar-dir.h). */
#include <archive.h>
#include <archive_entry.h>
#include <stdio.h>

#include "core/copy/guard.h"
#include "core/copy/tar-dir.h"
#include "lib/util.h"

int
tar_dir_unpack(struct archive *in, int opened, const char *dir, const char *what,
    const char *hint, struct sbx_err *e)
{
	struct archive *out;
	struct archive_entry *en;
	int n = 0;

	if (opened != ARCHIVE_OK)
		return sbx_error(e, SBX_EINVAL, hint, "not a %s: %s", what,
		    archive_error_string(in));
	out = archive_write_disk_new();
	/* The names are joined to dir once copy_guard_name made them plain. */
	archive_write_disk_set_options(out, ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME |
	    ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NODOTDOT);
	for (;;) {
		char plain[4096], skip[128];
		const void *buf;
		size_t len;
		int64_t off;
		unsigned type;
		int r = archive_read_next_header(in, &en);

		if (r == ARCHIVE_EOF)
			break;
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
			archive_write_free(out);
			if (n > 0)
				return sbx_error(e, SBX_EINVAL, hint, "corrupt archive after %d "
				    "entries: %s", n, archive_error_string(in));
			return sbx_error(e, SBX_EINVAL, hint, "not a %s: %s", what,
			    archive_error_string(in));
		}
		n++;
		type = archive_entry_filetype(en);
		if ((type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) ||
		    archive_entry_hardlink(en) != NULL ||
		    copy_guard_name(archive_entry_pathname(en), plain, sizeof plain, skip,
		    sizeof skip) < 0)
			continue;
		_cleanup_free_ char *to = xasprintf("%s/%s", dir, plain);
		archive_entry_set_pathname(en, to);
		archive_entry_set_perm(en, archive_entry_perm(en) & 0777);
		if (archive_write_header(out, en) != ARCHIVE_OK)
			continue;	/* refused by the secure flags: skipped */
		while (archive_read_data_block(in, &buf, &len, &off) == ARCHIVE_OK)
			if (archive_write_data_block(out, buf, len, off) != ARCHIVE_OK)
				break;
		archive_write_finish_entry(out);
	}
	archive_write_free(out);
	if (n == 0)
		return sbx_error(e, SBX_EINVAL, hint, "not a %s: it holds no entry", what);
	return 0;
}
