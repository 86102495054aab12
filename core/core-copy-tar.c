/* Copies as a tar stream on a descriptor, docker cp's `-`: out of a sandbox
 * onto standard output, into one from standard input.  The copy itself is
 * core_copy_out's and core_upload's (their guards, their checks); the stream
 * is made from, or unpacked into, a private scratch directory. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core-int.h"
#include "core/copy/tar-dir.h"
#include "lib/util.h"

static int
scratch_rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)remove(p);
	return 0;
}

/* A private directory for the copy's files; NULL with e. */
static char *
scratch_new(struct sbx_err *e)
{
	const char *t = getenv("TMPDIR");
	char *d = xasprintf("%s/sbxtop-cp-XXXXXX", t && t[0] == '/' ? t : "/var/tmp");

	if (mkdtemp(d) != NULL)
		return d;
	sbx_error_errno(e, SBX_EIO, "set TMPDIR to a writable directory", "cannot make a "
	    "directory for the copy in %s", d);
	free(d);
	return NULL;
}

static void
scratch_free(char *d)
{
	if (d != NULL)
		nftw(d, scratch_rm_one, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	free(d);
}

/* Write the tree below dir to fd as a tar (pax), names relative to dir,
 * owners root as a sandbox's copy would have them. */
static int
tar_write(const char *dir, int fd, struct sbx_err *e)
{
	struct archive *rd = archive_read_disk_new(), *wr = archive_write_new();
	size_t skip = strlen(dir) + 1;
	int rc = -1;

	archive_write_set_format_pax_restricted(wr);
	archive_read_disk_set_symlink_physical(rd);
	archive_read_disk_set_behavior(rd, ARCHIVE_READDISK_NO_TRAVERSE_MOUNTS);
	if (archive_write_open_fd(wr, fd) != ARCHIVE_OK ||
	    archive_read_disk_open(rd, dir) != ARCHIVE_OK) {
		sbx_error(e, SBX_EIO, NULL, "cannot write the archive: %s",
		    archive_error_string(wr) ? archive_error_string(wr) : archive_error_string(rd));
		goto out;
	}
	for (;;) {
		struct archive_entry *en = archive_entry_new();
		int r = archive_read_next_header2(rd, en), in = -1;
		char buf[65536];
		ssize_t n;

		if (r == ARCHIVE_EOF) {
			archive_entry_free(en);
			break;
		}
		if (r != ARCHIVE_OK || strlen(archive_entry_pathname(en)) < skip) {
			archive_entry_free(en);
			if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
				sbx_error(e, SBX_EIO, NULL, "cannot read %s: %s", dir,
				    archive_error_string(rd));
				goto out;
			}
			archive_read_disk_descend(rd);
			continue;
		}
		archive_read_disk_descend(rd);
		archive_entry_set_pathname(en, archive_entry_pathname(en) + skip);
		archive_entry_set_uid(en, 0);
		archive_entry_set_gid(en, 0);
		archive_entry_set_uname(en, "root");
		archive_entry_set_gname(en, "root");
		if (archive_write_header(wr, en) != ARCHIVE_OK) {
			sbx_error(e, SBX_EIO, NULL, "cannot write the archive: %s",
			    archive_error_string(wr));
			archive_entry_free(en);
			goto out;
		}
		if (archive_entry_filetype(en) == AE_IFREG)
			in = open(archive_entry_sourcepath(en), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		while (in >= 0 && (n = read(in, buf, sizeof buf)) > 0)
			if (archive_write_data(wr, buf, (size_t)n) < 0)
				break;
		if (in >= 0)
			close(in);
		archive_entry_free(en);
	}
	if (archive_write_close(wr) != ARCHIVE_OK) {
		sbx_error(e, SBX_EIO, NULL, "cannot write the archive: %s", archive_error_string(wr));
		goto out;
	}
	rc = 0;
out:
	archive_read_free(rd);
	archive_write_free(wr);
	return rc;
}

int
core_copy_out_tar(struct core *c, const char *key, const char *remote, int fd,
    struct sbx_err *e)
{
	char *dir = scratch_new(e);
	int rc;

	if (dir == NULL)
		return -1;
	/* Into an existing directory: the path comes out under its own name,
	 * the archive's top entry as docker's is. */
	rc = core_copy_out(c, key, remote, dir, e) < 0 ? -1 : tar_write(dir, fd, e);
	scratch_free(dir);
	return rc;
}

/* Unpack the tar (plain, gzip, bzip2, xz or zstd) on fd into dir. */
static int
tar_read(int fd, const char *dir, struct sbx_err *e)
{
	struct archive *rd = archive_read_new();
	int rc;

	archive_read_support_filter_all(rd);
	archive_read_support_format_tar(rd);
	rc = tar_dir_unpack(rd, archive_read_open_fd(rd, fd, 65536), dir, "tar archive",
	    "give a whole tar archive on standard input", e);
	archive_read_free(rd);
	return rc;
}

int
core_copy_in_tar(struct core *c, const char *key, int fd, const char *remote,
    struct sbx_err *e)
{
	static const char *const none[] = { NULL };
	struct core_xfer_opts o = { .exclude = none };
	struct core_xfer_result res = { 0 };
	char *dir = scratch_new(e);
	int rc;

	if (dir == NULL)
		return -1;
	rc = tar_read(fd, dir, e) < 0 ? -1 : core_upload(c, key, dir, remote, &o, &res, e);
	core_xfer_result_free(&res);
	scratch_free(dir);
	return rc;
}
