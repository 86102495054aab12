/* The layer reader: one layer blob, a stranger's tar, made into a directory an
 * overlay takes as a lower layer.
 *
 * Two libarchive readers in a chain: the first undoes the compression (gzip
 * or zstd, nothing that runs a program) and its output goes through sha256
 * (the layer's diff_id) and a byte count (the cap) into the second, which
 * reads the tar.  Every entry is made relative to the layer's directory with
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS): a name with "..", one that
 * would pass through a link (of this layer: the lower layers are other
 * directories), or a hard link whose target is outside is refused, and the
 * whole layer with it.  Absolute names are taken as relative, as tar does.
 * Device nodes and sockets are skipped (an overlay mounted nodev could not use
 * them, and an ordinary user cannot make them); setuid and setgid bits go
 * when the caller says (an ordinary user's store).  Whiteouts become what
 * overlayfs reads: ".wh.NAME" a 0/0 character device NAME, ".wh..wh..opq" the
 * xattr user.overlay.opaque=y on its directory (the overlays are mounted with
 * userxattr). */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "core/copy/guard.h"
#include "core/image/image-int.h"
#include "lib/util.h"

#define NAME_DEPTH_MAX	128
#define IO_CHUNK	(1 << 16)
#define WH_PREFIX	".wh."
#define WH_OPAQUE	".wh..wh..opq"
#define OPAQUE_XATTR	"user.overlay.opaque"

struct unpack {
	struct archive			*raw, *tar;
	struct sha256_ctx		 ctx;
	int64_t				 bytes;		/* uncompressed, through the chain */
	const struct image_unpack_limits *lim;
	int				 over;		/* the cap was reached */
	char				 buf[IO_CHUNK];
	int				 dest;
	const int			*lower;
	int				 nlower;
	const struct image_ids		*ids;
	struct image_unpack_stats	*st;
};

/* The second reader's input: the first reader's output, counted and hashed. */
static la_ssize_t
chain_read(struct archive *a, void *arg, const void **out)
{
	struct unpack *u = arg;
	la_ssize_t n = archive_read_data(u->raw, u->buf, sizeof u->buf);

	(void)a;
	if (n < 0) {
		archive_set_error(a, EIO, "%s", archive_error_string(u->raw) ?
		    archive_error_string(u->raw) : "cannot decompress");
		return -1;
	}
	if (u->lim->max_bytes > 0 && u->bytes + n > u->lim->max_bytes) {
		u->over = 1;
		archive_set_error(a, EIO, "over the cap");
		return -1;
	}
	u->bytes += n;
	sha256_update(&u->ctx, (size_t)n, (const uint8_t *)u->buf);
	*out = u->buf;
	return n;
}

/* name made plain and relative into out: leading '/' and "./" dropped, "//"
 * and "." components gone, a trailing '/' dropped; "" is the layer's root.
 * -1 for "..", or a name too long or deep. */
static int
plain_name(const char *name, char *out, size_t len)
{
	size_t o = 0;
	int depth = 0;
	const char *p = name;

	if (name == NULL)
		return -1;
	while (*p) {
		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		size_t n = strcspn(p, "/");
		if (n == 1 && p[0] == '.') {
			p += n;
			continue;
		}
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return -1;
		if (++depth > NAME_DEPTH_MAX || o + n + 2 > len)
			return -1;
		if (o > 0)
			out[o++] = '/';
		memcpy(out + o, p, n);
		o += n;
		p += n;
	}
	out[o] = '\0';
	return 0;
}

/* Split plain name into its directory (under dest: opened, made with 0755
 * where missing) and its last component.  The directory fd, or -1 with errno
 * (ELOOP: through a link; ENOTDIR: through a file). */
static int
parent_open(struct unpack *u, char *name, const char **base)
{
	char *slash = strrchr(name, '/');

	if (slash == NULL) {
		*base = name;
		return fcntl(u->dest, F_DUPFD_CLOEXEC, 3);
	}
	*slash = '\0';
	*base = slash + 1;
	int fd = copy_guard_openat(u->dest, name, O_PATH | O_DIRECTORY, 0);
	if (fd < 0 && errno == ENOENT) {
		/* Parents a tar left out: made one by one, each checked. */
		for (char *p = name;; p++) {
			if (*p == '/' || *p == '\0') {
				char c = *p;
				*p = '\0';
				int r = copy_guard_mkdirat(u->dest, name, 0755);
				*p = c;
				if (r < 0) {
					*slash = '/';
					return -1;
				}
				if (c == '\0')
					break;
			}
		}
		fd = copy_guard_openat(u->dest, name, O_PATH | O_DIRECTORY, 0);
	}
	*slash = '/';
	return fd;
}

/* Remove what is at pfd/base (this layer's only), a tree included. */
static int
remove_at(int pfd, const char *base, int depth)
{
	struct stat sb;

	if (fstatat(pfd, base, &sb, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(sb.st_mode))
		return unlinkat(pfd, base, 0);
	if (depth > NAME_DEPTH_MAX + 2) {
		errno = ELOOP;
		return -1;
	}
	int dfd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	DIR *d = fdopendir(dfd);
	struct dirent *de;
	if (d == NULL) {
		close(dfd);
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (remove_at(dirfd(d), de->d_name, depth + 1) < 0) {
			closedir(d);
			return -1;
		}
	}
	closedir(d);
	return unlinkat(pfd, base, AT_REMOVEDIR);
}

static int
fail(struct sbx_err *e, const char *why, const char *name)
{
	char shown[200];
	size_t i = 0;

	for (const char *p = name ? name : "(no name)"; *p && i < sizeof shown - 1; p++)
		shown[i++] = (unsigned char)*p < ' ' || *p == 0x7f ? '?' : *p;
	shown[i] = '\0';
	return sbx_error(e, SBX_EDENIED, "the image is damaged or hostile: use another, or ask "
	    "its publisher", "layer refused: entry '%s' %s", shown, why);
}

/* Owner, mode and times of what is now at pfd/base, as the entry says. */
static int
apply_meta(struct unpack *u, int pfd, const char *base, struct archive_entry *ent, int is_link)
{
	uint64_t uid = (uint64_t)archive_entry_uid(ent), gid = (uint64_t)archive_entry_gid(ent);
	mode_t mode = archive_entry_perm(ent) & 07777;
	struct timespec ts[2];

	if (uid >= u->ids->count || gid >= u->ids->count) {
		u->st->squashed_ids++;
		if (uid >= u->ids->count)
			uid = 0;
		if (gid >= u->ids->count)
			gid = 0;
	}
	if (u->ids->chown && fchownat(pfd, base, (uid_t)uid, (gid_t)gid, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	if (!is_link) {
		if (u->ids->strip_setid && archive_entry_filetype(ent) != AE_IFDIR &&
		    (mode & (S_ISUID | S_ISGID))) {
			mode &= ~(mode_t)(S_ISUID | S_ISGID);
			u->st->stripped_setid++;
		}
		if (fchmodat(pfd, base, mode, 0) < 0)
			return -1;
	}
	ts[0].tv_sec = ts[1].tv_sec = archive_entry_mtime(ent);
	ts[0].tv_nsec = ts[1].tv_nsec = archive_entry_mtime_is_set(ent) ?
	    archive_entry_mtime_nsec(ent) : 0;
	(void)utimensat(pfd, base, ts, AT_SYMLINK_NOFOLLOW);
	return 0;
}

static int
write_data(struct unpack *u, int fd, struct archive_entry *ent)
{
	const void *blk;
	size_t size;
	la_int64_t off;
	int r;

	while ((r = archive_read_data_block(u->tar, &blk, &size, &off)) == ARCHIVE_OK) {
		const char *p = blk;
		while (size > 0) {
			ssize_t n = pwrite(fd, p, size, off);
			if (n < 0) {
				if (errno == EINTR)
					continue;
				return -1;
			}
			p += n;
			size -= (size_t)n;
			off += n;
		}
	}
	if (r != ARCHIVE_EOF) {
		errno = EIO;
		return -1;
	}
	/* A sparse file's end, and the size the header gives. */
	return ftruncate(fd, archive_entry_size(ent));
}

/* A hard link to target (plain, in this layer; or a lower layer's file,
 * copied) at pfd/base. */
static int
make_hardlink(struct unpack *u, const char *target, int pfd, const char *base,
    struct archive_entry *ent, struct sbx_err *e, const char *name)
{
	char proc[64];
	int tfd = copy_guard_openat(u->dest, target, O_PATH, 0);
	struct stat sb;

	if (tfd >= 0) {
		if (fstat(tfd, &sb) < 0 || S_ISDIR(sb.st_mode)) {
			close(tfd);
			return fail(e, "is a hard link to a directory", name);
		}
		snprintf(proc, sizeof proc, "/proc/self/fd/%d", tfd);
		int r = linkat(AT_FDCWD, proc, pfd, base, AT_SYMLINK_FOLLOW);
		close(tfd);
		if (r < 0)
			return sbx_error_errno(e, SBX_EIO, NULL, "cannot link %.200s", name);
		u->st->hardlinks++;
		return 0;
	}
	if (errno == ELOOP || errno == EXDEV)
		return fail(e, "is a hard link through a symbolic link", name);
	/* Not in this layer: a file of a lower one (top first), copied. */
	for (int i = 0; i < u->nlower; i++) {
		_cleanup_close_ int src = copy_guard_openat(u->lower[i], target, O_RDONLY | O_NONBLOCK, 0);
		if (src < 0) {
			if (errno == ENOENT)
				continue;
			break;
		}
		if (fstat(src, &sb) < 0 || !S_ISREG(sb.st_mode))
			break;
		_cleanup_close_ int dst = openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
		if (dst < 0)
			return sbx_error_errno(e, SBX_EIO, NULL, "cannot create %.200s", name);
		for (off_t left = sb.st_size; left > 0;) {
			ssize_t n = copy_file_range(src, NULL, dst, NULL, (size_t)left, 0);
			if (n <= 0)
				return sbx_error_errno(e, SBX_EIO, NULL, "cannot copy %.200s", name);
			left -= n;
		}
		u->st->copied_links++;
		return apply_meta(u, pfd, base, ent, 0) < 0 ?
		    sbx_error_errno(e, SBX_EIO, NULL, "cannot set the owner or mode of %.200s", name) : 0;
	}
	return fail(e, "is a hard link to a file the image does not have", name);
}

/* One entry of the tar. */
static int
one_entry(struct unpack *u, struct archive_entry *ent, struct sbx_err *e)
{
	char name[PATH_MAX], target[PATH_MAX];
	const char *raw = archive_entry_pathname(ent), *base, *hl = archive_entry_hardlink(ent);
	mode_t type = archive_entry_filetype(ent);
	_cleanup_close_ int pfd = -1;

	if (plain_name(raw, name, sizeof name) < 0)
		return fail(e, "has a \"..\" component, or is too long or deep", raw);
	if (name[0] == '\0') {
		/* The layer's root itself: its owner and mode, if a directory. */
		if (type != AE_IFDIR || hl != NULL)
			return fail(e, "names the root as something other than a directory", raw);
		return apply_meta(u, u->dest, ".", ent, 0) < 0 ?
		    sbx_error_errno(e, SBX_EIO, NULL, "cannot set the root's owner or mode") : 0;
	}
	if ((pfd = parent_open(u, name, &base)) < 0) {
		if (errno == ELOOP || errno == EXDEV)
			return fail(e, "passes through a symbolic link", raw);
		if (errno == ENOTDIR)
			return fail(e, "passes through something that is not a directory", raw);
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot make the directory of %.200s", raw);
	}
	/* Whiteouts. */
	if (strncmp(base, WH_PREFIX, strlen(WH_PREFIX)) == 0) {
		if (strcmp(base, WH_OPAQUE) == 0) {
			_cleanup_close_ int dfd = -1;
			char *slash = strrchr(name, '/');
			if (slash != NULL)
				*slash = '\0';
			dfd = slash != NULL ? copy_guard_openat(u->dest, name, O_RDONLY | O_DIRECTORY, 0) :
			    fcntl(u->dest, F_DUPFD_CLOEXEC, 3);
			if (dfd < 0 || fsetxattr(dfd, OPAQUE_XATTR, "y", 1, 0) < 0)
				return sbx_error_errno(e, SBX_EIO, "check that the store's filesystem "
				    "takes user.* xattrs", "cannot mark %.200s opaque", raw);
			u->st->opaque++;
			return 0;
		}
		if (strncmp(base, WH_PREFIX WH_PREFIX, 2 * strlen(WH_PREFIX)) == 0)
			return 0;	/* aufs's own metadata (.wh..wh.plnk): not content */
		const char *gone = base + strlen(WH_PREFIX);
		if (gone[0] == '\0' || strcmp(gone, ".") == 0 || strcmp(gone, "..") == 0)
			return fail(e, "is a whiteout of nothing", raw);
		if (remove_at(pfd, gone, 0) < 0 ||
		    mknodat(pfd, gone, S_IFCHR | 0000, makedev(0, 0)) < 0)
			return sbx_error_errno(e, SBX_EIO, NULL, "cannot make the whiteout %.200s", raw);
		u->st->whiteouts++;
		return 0;
	}
	if (hl != NULL) {
		if (plain_name(hl, target, sizeof target) < 0 || target[0] == '\0')
			return fail(e, "is a hard link whose target leaves the image", raw);
		if (strcmp(target, name) == 0)
			return fail(e, "is a hard link to itself", raw);
		if (remove_at(pfd, base, 0) < 0)
			return sbx_error_errno(e, SBX_EIO, NULL, "cannot replace %.200s", raw);
		return make_hardlink(u, target, pfd, base, ent, e, raw);
	}
	switch (type) {
	case AE_IFDIR: {
		struct stat sb;
		if (fstatat(pfd, base, &sb, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(sb.st_mode) &&
		    remove_at(pfd, base, 0) < 0)
			return sbx_error_errno(e, SBX_EIO, NULL, "cannot replace %.200s", raw);
		if (mkdirat(pfd, base, 0700) < 0 && errno != EEXIST)
			return sbx_error_errno(e, SBX_EIO, NULL, "cannot make %.200s", raw);
		break;
	}
	case AE_IFREG: {
		_cleanup_close_ int fd = -1;
		if (archive_entry_size(ent) < 0)
			return fail(e, "has a negative size", raw);
		if (u->lim->max_bytes > 0 && archive_entry_size(ent) > u->lim->max_bytes) {
			u->over = 1;	/* a sparse file that would be larger than the cap */
			return -1;
		}
		if (remove_at(pfd, base, 0) < 0)
			return sbx_error_errno(e, SBX_EIO, NULL, "cannot replace %.200s", raw);
		fd = openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			return sbx_error_errno(e, SBX_EIO, NULL, "cannot create %.200s", raw);
		if (write_data(u, fd, ent) < 0) {
			if (u->over)
				return -1;	/* said by the caller */
			return sbx_error_errno(e, SBX_EIO, NULL, "cannot write %.200s", raw);
		}
		u->st->bytes += archive_entry_size(ent);
		break;
	}
	case AE_IFLNK: {
		const char *to = archive_entry_symlink(ent);
		if (to == NULL || to[0] == '\0' || strlen(to) >= PATH_MAX)
			return fail(e, "is a symbolic link to nothing", raw);
		if (remove_at(pfd, base, 0) < 0 || symlinkat(to, pfd, base) < 0)
			return sbx_error_errno(e, SBX_EIO, NULL, "cannot make the link %.200s", raw);
		return apply_meta(u, pfd, base, ent, 1) < 0 ?
		    sbx_error_errno(e, SBX_EIO, NULL, "cannot set the owner of %.200s", raw) : 0;
	}
	case AE_IFIFO:
		if (remove_at(pfd, base, 0) < 0 || mkfifoat(pfd, base, 0600) < 0)
			return sbx_error_errno(e, SBX_EIO, NULL, "cannot make the fifo %.200s", raw);
		break;
	case AE_IFCHR:
	case AE_IFBLK:
	case AE_IFSOCK:
	default:
		/* Device nodes work on no overlay we mount (nodev), and no
		 * ordinary user can make them: left out. */
		u->st->skipped_devices++;
		return 0;
	}
	if (apply_meta(u, pfd, base, ent, 0) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot set the owner or mode of %.200s", raw);
	return 0;
}

int
image_layer_unpack(int blob_fd, int dest_fd, const int *lower_fds, int nlower,
    const char *diff_id, const struct image_ids *ids, const struct image_unpack_limits *limits,
    struct image_unpack_stats *stats, struct sbx_err *e)
{
	struct unpack *u = xcalloc(1, sizeof *u);
	struct archive_entry *ent;
	char got[IMAGE_DIGEST_LEN];
	int r, rc = -1;

	memset(stats, 0, sizeof *stats);
	u->lim = limits;
	u->dest = dest_fd;
	u->lower = lower_fds;
	u->nlower = nlower;
	u->ids = ids;
	u->st = stats;
	sha256_init(&u->ctx);
	if (lseek(blob_fd, 0, SEEK_SET) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot read the layer");
		goto out;
	}
	u->raw = archive_read_new();
	u->tar = archive_read_new();
	if (u->raw == NULL || u->tar == NULL)
		fatal("out of memory");
	/* gzip and zstd are what OCI layers use; libarchive would run an
	 * external program for formats it lacks: those stay off. */
	if (archive_read_support_filter_none(u->raw) != ARCHIVE_OK ||
	    archive_read_support_filter_gzip(u->raw) != ARCHIVE_OK ||
	    archive_read_support_filter_zstd(u->raw) != ARCHIVE_OK ||
	    archive_read_support_format_raw(u->raw) != ARCHIVE_OK ||
	    archive_read_support_format_tar(u->tar) != ARCHIVE_OK) {
		sbx_error(e, SBX_EUNSUPPORTED, "install a libarchive with zlib and zstd",
		    "this libarchive cannot read gzip or zstd by itself");
		goto out;
	}
	if (archive_read_open_fd(u->raw, blob_fd, IO_CHUNK) != ARCHIVE_OK ||
	    archive_read_next_header(u->raw, &ent) != ARCHIVE_OK) {
		sbx_error(e, SBX_EINVAL, "the layer is damaged: pull the image again",
		    "cannot read the layer: %s", archive_error_string(u->raw) ?
		    archive_error_string(u->raw) : "unknown format");
		goto out;
	}
	if (archive_read_open(u->tar, u, NULL, chain_read, NULL) != ARCHIVE_OK) {
		if (u->over)
			goto over_or_out;
		sbx_error(e, SBX_EINVAL, "the layer is damaged: pull the image again",
		    "the layer is not a tar archive: %s", archive_error_string(u->tar) ?
		    archive_error_string(u->tar) : "unknown format");
		goto out;
	}
	while ((r = archive_read_next_header(u->tar, &ent)) == ARCHIVE_OK ||
	    r == ARCHIVE_WARN) {
		if (limits->max_entries > 0 && ++stats->entries > limits->max_entries) {
			sbx_error(e, SBX_EDENIED, "raise image_max_entries in sbxtop.conf if the image "
			    "is trusted", "layer refused: more than %lld entries",
			    (long long)limits->max_entries);
			goto out;
		}
		if (limits->max_entries <= 0)
			stats->entries++;
		if (one_entry(u, ent, e) < 0)
			goto over_or_out;
	}
	if (r != ARCHIVE_EOF) {
		if (u->over)
			goto over_or_out;
		sbx_error(e, SBX_EINVAL, "the layer is damaged: pull the image again",
		    "cannot read the layer's tar: %s", archive_error_string(u->tar) ?
		    archive_error_string(u->tar) : "unknown error");
		goto out;
	}
	/* What follows the tar's end (its padding) is part of the diff_id. */
	for (;;) {
		la_ssize_t n = archive_read_data(u->raw, u->buf, sizeof u->buf);
		if (n == 0)
			break;
		if (n < 0) {
			sbx_error(e, SBX_EINVAL, "the layer is damaged: pull the image again",
			    "cannot read the layer: %s", archive_error_string(u->raw) ?
			    archive_error_string(u->raw) : "unknown error");
			goto out;
		}
		if (limits->max_bytes > 0 && u->bytes + n > limits->max_bytes) {
			u->over = 1;
			goto over_or_out;
		}
		u->bytes += n;
		sha256_update(&u->ctx, (size_t)n, (const uint8_t *)u->buf);
	}
	image_sha256_finish(&u->ctx, got);
	if (diff_id != NULL && strcmp(got, diff_id) != 0) {
		sbx_error(e, SBX_EINVAL, "the image is damaged: pull it again, or ask its publisher",
		    "layer refused: its content has digest %.19s..., the image's config says "
		    "%.19s...", got, diff_id);
		goto out;
	}
	rc = 0;
	goto out;
over_or_out:
	if (u->over)
		sbx_error(e, SBX_EDENIED, "raise image_max_layer (MiB) in sbxtop.conf if the image is "
		    "trusted", "layer refused: it unpacks to more than %lld MiB (a decompression bomb, "
		    "or a layer over the cap)", (long long)(limits->max_bytes >> 20));
out:
	if (u->tar)
		archive_read_free(u->tar);
	if (u->raw)
		archive_read_free(u->raw);
	free(u);
	return rc;
}
