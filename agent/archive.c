/* The archive routes: tar or tar.gz upload (extracted as it arrives) and download
 * (produced as it is sent), both with libarchive and a sha256 of the bytes on the
 * wire.  Plain tar is for clients on the same machine, where deflate would be the
 * whole cost of a copy; tar.zst for slow links (zstd runs several times faster
 * than deflate and packs tighter); tar.gz is the default, for older clients.
 *
 * Upload: the request body is handed, chunk by chunk, to a pipe read by an
 * extraction thread, so memory stays at the pipe's size whatever the archive's, and
 * nothing is spooled to disk.  The expected sha256 comes as a header or, from a
 * client that streams what it has not finished producing, as a trailer.  Each
 * entry's name is checked (no absolute names, no "..") and resolved through
 * agent/path.h, so a symlink the archive made earlier still cannot lead outside
 * the sandbox root.
 * Download: a producer thread walks the directory (never following symlinks), or
 * takes the one file asked for, and writes the archive into a pipe that the
 * response's read callback drains; the sha256 goes out as a trailer after the
 * last chunk. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <nettle/sha2.h>

#include "agent/agent.h"
#include "agent/events.h"
#include "agent/files.h"
#include "agent/http.h"
#include "lib/err.h"
#include "lib/log.h"
#include "lib/util.h"

#define UPLOAD_BODY_MAX		(4ULL << 30)	/* compressed bytes received */
#define UPLOAD_DATA_MAX		(32ULL << 30)	/* bytes extracted (gzip bombs) */
#define UPLOAD_ENTRIES_MAX	200000
#define SKIPPED_LISTED		100
#define IO_CHUNK		(64 * 1024)
#define EXCLUDES_MAX		64

enum { FMT_TAR, FMT_GZIP, FMT_ZSTD };
static const char *const fmt_names[] = { "tar", "tar.gz", "tar.zst" };

/* Whether this libarchive was built with zstd (asked once). */
static int
zstd_ok(void)
{
	static int ok = -1;

	if (__atomic_load_n(&ok, __ATOMIC_RELAXED) < 0) {
		struct archive *a = archive_write_new();
		int v = archive_write_add_filter_zstd(a) == ARCHIVE_OK;
		archive_write_free(a);
		__atomic_store_n(&ok, v, __ATOMIC_RELAXED);
	}
	return __atomic_load_n(&ok, __ATOMIC_RELAXED);
}

static const char *const default_excludes[] = {
	".git", "node_modules", ".venv", "__pycache__", "dist", "target",
};

/* SHA-256 with nettle (linked in statically where its archive is): OpenSSL's
 * libcrypto would add about 1.4 MiB to every idle agent. */
static void
hex_digest(struct sha256_ctx *md, char hex[65])
{
	uint8_t h[SHA256_DIGEST_SIZE];

	sha256_digest(md, sizeof h, h);
	hex_encode(hex, h, sizeof h);
}

static struct sha256_ctx *
sha256_new(void)
{
	struct sha256_ctx *md = xmalloc(sizeof *md);

	sha256_init(md);
	return md;
}

/* ---- upload ------------------------------------------------------------ */

struct upload {
	char		*dir;		/* sandbox path extracted into */
	int		 pipe_r, pipe_w;	/* pipe_r belongs to the thread */
	pthread_t	 thread;
	int		 started;
	struct sha256_ctx *md;
	uint64_t	 received;
	char		 want[65];	/* X-Content-Sha256, lowercase, or "" */
	char		*rbuf;

	/* Written by the thread; read after joining it (or after failed is set). */
	int		 failed;	/* atomic: the thread gave up */
	unsigned	 status;
	char		 code[32];
	char		 err[600];
	long		 files, dirs, symlinks, entries, nskipped;
	uint64_t	 bytes;
	cJSON		*skipped;
	const char	*format;	/* what the body turned out to be */
	char		*pdir;		/* entry_parent's last directory, */
	int		 pdirfd;	/* and its descriptor (or -1) */
};

static void
upload_fail(struct upload *u, unsigned status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void
upload_fail(struct upload *u, unsigned status, const char *code, const char *fmt, ...)
{
	va_list ap;

	u->status = status;
	snprintf(u->code, sizeof u->code, "%s", code);
	va_start(ap, fmt);
	vsnprintf(u->err, sizeof u->err, fmt, ap);
	va_end(ap);
}

static void
upload_skip(struct upload *u, const char *name, const char *why)
{
	if (u->nskipped++ < SKIPPED_LISTED) {
		cJSON *s = cJSON_CreateObject();
		cJSON_AddStringToObject(s, "name", name);
		cJSON_AddStringToObject(s, "reason", why);
		cJSON_AddItemToArray(u->skipped, s);
	}
}

static la_ssize_t
upload_read(struct archive *a, void *cls, const void **out)
{
	struct upload *u = cls;
	ssize_t n;

	do
		n = read(u->pipe_r, u->rbuf, IO_CHUNK);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		archive_set_error(a, errno, "reading the body: %s", strerror(errno));
	*out = u->rbuf;
	return n;
}

/* The entry's name made relative and clean ("./a//b" is "a/b"), in out; NULL with
 * *why when it is absolute or climbs with "..". */
static char *
clean_name(const char *name, char *out, size_t outlen, const char **why)
{
	size_t o = 0;

	if (name[0] == '/') {
		*why = "absolute name";
		return NULL;
	}
	for (const char *s = name; *s != '\0';) {
		const char *e = strchrnul(s, '/');
		size_t n = (size_t)(e - s);
		if (n == 2 && s[0] == '.' && s[1] == '.') {
			*why = "name climbs out with '..'";
			return NULL;
		}
		if (n > 0 && !(n == 1 && s[0] == '.')) {
			if (o + n + 2 > outlen) {
				*why = "name too long";
				return NULL;
			}
			if (o > 0)
				out[o++] = '/';
			memcpy(out + o, s, n);
			o += n;
		}
		s = *e ? e + 1 : e;
	}
	out[o] = '\0';
	return out;
}

/* Errors that concern one entry (something in the way, a name too long): the entry
 * is skipped.  Anything else (no space, read-only) stops the upload. */
static int
entry_errno(int err)
{
	return err == ENOENT || err == ENOTDIR || err == EEXIST || err == EISDIR || err == ELOOP ||
	    err == ENAMETOOLONG || err == EINVAL || err == ENOTEMPTY || err == EACCES ||
	    err == EPERM;
}

static void
parent_forget(struct upload *u)
{
	if (u->pdirfd >= 0)
		close(u->pdirfd);
	u->pdirfd = -1;
	free(u->pdir);
	u->pdir = NULL;
}

/* The directory holding full, with the last name in *name, anything but a
 * directory of that name removed (a later entry replaces an earlier one).
 * The last directory is kept open: entries come directory by directory, and
 * making and resolving every parent again for each file cost more than the
 * file.  Anything that replaces an entry or makes a link forgets it, so what
 * the path resolves to is always what resolving it again would give. */
static int
entry_parent(struct upload *u, const char *full, char **name)
{
	const char *slash = strrchr(full, '/');
	size_t dlen = slash ? (size_t)(slash - full) : 0;
	struct stat st;
	int pfd;

	if (slash != NULL && u->pdir != NULL && strlen(u->pdir) == dlen &&
	    memcmp(u->pdir, full, dlen) == 0) {
		if ((pfd = fcntl(u->pdirfd, F_DUPFD_CLOEXEC, 0)) < 0)
			return -1;
		*name = xstrdup(slash + 1);
	} else {
		parent_forget(u);
		if (files_mkdirs(full, 0) < 0 || (pfd = path_open_parent(full, name)) < 0)
			return -1;
		if (slash != NULL && (u->pdirfd = fcntl(pfd, F_DUPFD_CLOEXEC, 0)) >= 0)
			u->pdir = xstrndup(full, dlen);
	}
	if (fstatat(pfd, *name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISDIR(st.st_mode)) {
			errno = EISDIR;
			goto fail;
		}
		parent_forget(u);
		if (unlinkat(pfd, *name, 0) < 0)
			goto fail;
	}
	return pfd;
fail:
	close(pfd);
	free(*name);
	*name = NULL;
	return -1;
}

static int
extract_data(struct upload *u, struct archive *a, struct archive_entry *e, int fd,
    mode_t mode)
{
	/* Blocks as libarchive holds them (no copy); an offset past the end is a
	 * hole, as in a sparse entry. */
	for (la_int64_t pos = 0;;) {
		const void *blk;
		size_t n;
		la_int64_t off;
		int r = archive_read_data_block(a, &blk, &n, &off);
		if (r == ARCHIVE_EOF) {
			if (archive_entry_size_is_set(e) && archive_entry_size(e) > pos &&
			    ftruncate(fd, archive_entry_size(e)) < 0)
				return -1;
			break;
		}
		if (r < ARCHIVE_WARN) {
			errno = EBADMSG;
			return -1;
		}
		if (off < 0 || (uint64_t)off > UPLOAD_DATA_MAX ||
		    (u->bytes += (uint64_t)n) > UPLOAD_DATA_MAX) {
			errno = EFBIG;
			return -1;
		}
		if (off != pos && lseek(fd, off, SEEK_SET) < 0)
			return -1;
		if (write_all(fd, blk, n) < 0)
			return -1;
		pos = off + (la_int64_t)n;
	}
	if (fchmod(fd, mode) < 0)
		return -1;
	if (archive_entry_mtime_is_set(e)) {
		struct timespec ts[2] = {
			{ .tv_nsec = UTIME_OMIT },
			{ archive_entry_mtime(e), archive_entry_mtime_nsec(e) },
		};
		futimens(fd, ts);
	}
	u->files++;
	return 0;
}

/* The file's data goes to a hidden name beside it, renamed into place once
 * whole: an upload cut short (the client gone, the disk full, the agent
 * killed) never leaves a half-written file under the name it was sent as. */
static int
extract_file(struct upload *u, struct archive *a, struct archive_entry *e,
    const char *full)
{
	_cleanup_free_ char *name = NULL;
	_cleanup_close_ int pfd = entry_parent(u, full, &name);
	_cleanup_close_ int fd = -1;
	mode_t mode = archive_entry_perm(e) & 01777;	/* never set-id */
	char part[32], hex[13];
	int rc;

	if (pfd < 0)
		return -1;
	for (int tries = 0; fd < 0 && tries < 8; tries++) {
		random_hex(hex, 6);
		snprintf(part, sizeof part, ".sbxtop-part-%s", hex);
		fd = openat(pfd, part, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 && errno != EEXIST)
			return -1;
	}
	if (fd < 0)
		return -1;
	if ((rc = extract_data(u, a, e, fd, mode)) == 0 && renameat(pfd, part, pfd, name) == 0)
		return 0;
	rc = errno;
	(void)unlinkat(pfd, part, 0);
	errno = rc;
	return -1;
}

static int
extract_dir(struct upload *u, struct archive_entry *e, const char *full)
{
	_cleanup_free_ char *name = NULL;
	_cleanup_close_ int pfd = -1;
	_cleanup_close_ int fd = -1;

	if (files_mkdirs(full, 1) < 0 || (pfd = path_open_parent(full, &name)) < 0)
		return -1;
	/* O_NOFOLLOW: a symlink standing where the directory is named (one the archive
	 * made, or one already there) is kept, and its target's mode and owner are not
	 * the archive's to change. */
	if ((fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return errno == ELOOP || errno == ENOTDIR ? 0 : -1;
	/* A directory already there that is not the user's keeps its mode. */
	if (fchmod(fd, archive_entry_perm(e) & 01777) < 0 && errno != EPERM)
		return -1;
	u->dirs++;
	return 0;
}

static int
extract_symlink(struct upload *u, struct archive_entry *e, const char *full)
{
	const char *target = archive_entry_symlink(e);
	_cleanup_free_ char *name = NULL;
	_cleanup_close_ int pfd = -1;

	if (target == NULL || target[0] == '\0') {
		errno = EINVAL;
		return -1;
	}
	if ((pfd = entry_parent(u, full, &name)) < 0)
		return -1;
	parent_forget(u);
	/* The target is stored as given: whoever follows it later does so inside the
	 * sandbox, and the agent itself only follows links through path_open. */
	if (symlinkat(target, pfd, name) < 0)
		return -1;
	u->symlinks++;
	return 0;
}

/* 0 on success or skip; -1 after upload_fail. */
static int
extract_entry(struct upload *u, struct archive *a, struct archive_entry *e)
{
	const char *raw = archive_entry_pathname(e);
	const char *why = NULL;
	char clean[PATH_MAX_LEN + 1];
	_cleanup_free_ char *full = NULL;
	int rc;

	if (raw == NULL)
		raw = "";
	if (clean_name(raw, clean, sizeof clean, &why) == NULL) {
		upload_skip(u, raw, why);
		return 0;
	}
	if (clean[0] == '\0')
		return 0;			/* "./": the directory itself */
	full = xasprintf("%s/%s", strcmp(u->dir, "/") == 0 ? "" : u->dir, clean);
	switch (archive_entry_filetype(e)) {
	case AE_IFREG:
		if (archive_entry_hardlink(e) != NULL) {
			upload_skip(u, raw, "hard links are not supported");
			return 0;
		}
		rc = extract_file(u, a, e, full);
		break;
	case AE_IFDIR:
		rc = extract_dir(u, e, full);
		break;
	case AE_IFLNK:
		rc = extract_symlink(u, e, full);
		break;
	default:
		upload_skip(u, raw, "not a file, directory or symlink");
		return 0;
	}
	if (rc == 0)
		return 0;
	if (errno == EBADMSG) {
		upload_fail(u, HTTP_STATUS_BAD_REQUEST, "bad_archive", "corrupt archive at entry "
		    "'%.300s': %s", raw, archive_error_string(a));
		return -1;
	}
	if (errno == EFBIG) {
		upload_fail(u, HTTP_STATUS_PAYLOAD_TOO_LARGE, "too_large", "the archive expands "
		    "to more than %llu bytes", (unsigned long long)UPLOAD_DATA_MAX);
		return -1;
	}
	if (entry_errno(errno)) {
		upload_skip(u, raw, errno == EISDIR ? "a directory is in the way" :
		    errno == ENOTDIR || errno == EEXIST ? "a file is in the way" :
		    errno == EACCES || errno == EPERM ? "permission denied (the sandbox's user "
		    "may not write there)" :
		    errno == ENOENT ? "its directory cannot be made (a dangling symlink?)" :
		    strerror(errno));
		return 0;
	}
	upload_fail(u, errno == ENOSPC || errno == EDQUOT ? HTTP_STATUS_INSUFFICIENT_STORAGE :
	    HTTP_STATUS_INTERNAL_SERVER_ERROR, "extract_failed", "cannot extract '%.300s': %s",
	    raw, strerror(errno));
	return -1;
}

static void *
upload_thread(void *arg)
{
	struct upload *u = arg;
	struct archive *a = archive_read_new();
	struct archive_entry *e;
	_cleanup_act_ struct agent_act act = { 0 };
	int rc;

	/* An upload is the sandbox user's: every entry is made as the user. */
	if (agent_act_as(0, &act) < 0) {
		upload_fail(u, HTTP_STATUS_INTERNAL_SERVER_ERROR, "internal",
		    "cannot act as the sandbox's user: %s", strerror(errno));
		goto out;
	}

	archive_read_support_filter_gzip(a);
	archive_read_support_filter_zstd(a);
	archive_read_support_format_tar(a);
	if (archive_read_open(a, u, NULL, upload_read, NULL) != ARCHIVE_OK) {
		upload_fail(u, HTTP_STATUS_BAD_REQUEST, "bad_archive", "not a tar.gz archive: %s",
		    archive_error_string(a));
		goto out;
	}
	while ((rc = archive_read_next_header(a, &e)) != ARCHIVE_EOF) {
		if (rc < ARCHIVE_WARN) {
			if (u->entries == 0)
				upload_fail(u, HTTP_STATUS_BAD_REQUEST, "bad_archive",
				    "not a tar.gz archive: %s", archive_error_string(a));
			else
				upload_fail(u, HTTP_STATUS_BAD_REQUEST, "bad_archive",
				    "corrupt archive after %ld entries: %s", u->entries,
				    archive_error_string(a));
			goto out;
		}
		if (++u->entries > UPLOAD_ENTRIES_MAX) {
			upload_fail(u, HTTP_STATUS_PAYLOAD_TOO_LARGE, "too_large",
			    "the archive has more than %d entries", UPLOAD_ENTRIES_MAX);
			goto out;
		}
		if (extract_entry(u, a, e) < 0)
			goto out;
	}
	u->format = archive_filter_code(a, 0) == ARCHIVE_FILTER_GZIP ? "tar.gz" :
	    archive_filter_code(a, 0) == ARCHIVE_FILTER_ZSTD ? "tar.zst" : "tar";
	/* The archive ended: read what follows (gzip padding) so the writer never
	 * blocks on a full pipe. */
	while (upload_read(a, u, &(const void *){ NULL }) > 0)
		;
out:
	archive_read_free(a);
	parent_forget(u);
	if (u->status != 0)
		__atomic_store_n(&u->failed, 1, __ATOMIC_RELEASE);
	close(u->pipe_r);	/* a writer still going gets EPIPE */
	return NULL;
}

static void
upload_free(void *ctx, int completed)
{
	struct upload *u = ctx;

	if (u->pipe_w >= 0)
		close(u->pipe_w);
	if (u->started)
		pthread_join(u->thread, NULL);
	free(u->md);
	cJSON_Delete(u->skipped);
	free(u->rbuf);
	free(u->dir);
	free(u);
}

static void
upload_finish_thread(struct upload *u)
{
	if (u->pipe_w >= 0) {
		close(u->pipe_w);
		u->pipe_w = -1;
	}
	if (u->started) {
		pthread_join(u->thread, NULL);
		u->started = 0;
	}
}

static cJSON *
upload_result(struct upload *u)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "path", u->dir);
	cJSON_AddNumberToObject(o, "files", (double)u->files);
	cJSON_AddNumberToObject(o, "dirs", (double)u->dirs);
	cJSON_AddNumberToObject(o, "symlinks", (double)u->symlinks);
	cJSON_AddNumberToObject(o, "bytes", (double)u->bytes);
	return o;
}

/* Whether this thread may make entries in the directory open on fd: the top of
 * an upload must be, or nothing at all would go in.  0, or -1 with errno (an
 * older kernel without faccessat2 is not asked). */
static int
top_writable(int fd)
{
	if (syscall(SYS_faccessat2, fd, "", W_OK, AT_EACCESS | AT_EMPTY_PATH) == 0 ||
	    errno == ENOSYS || errno == EINVAL)
		return 0;
	return -1;
}

/* First chunk: check the query and header, create the directory, start the
 * extraction thread.  Problems are recorded with upload_fail and answered once the
 * body is in (the client is still sending it). */
static void
upload_begin(struct req *r, struct upload *u)
{
	const char *p = http_query(r, "path");
	const char *want = http_header(r, "X-Content-Sha256");
	_cleanup_act_ struct agent_act act = { 0 };
	int pfd[2], fd = -1;

	u->pipe_r = u->pipe_w = -1;
	u->pdirfd = -1;
	u->md = sha256_new();
	u->skipped = cJSON_CreateArray();
	if ((u->dir = path_normalize(agent.workspace, p && *p ? p : ".")) == NULL) {
		upload_fail(u, HTTP_STATUS_BAD_REQUEST, "bad_request", "query parameter 'path' "
		    "must be a path of at most %d bytes", PATH_MAX_LEN);
		return;
	}
	if (want != NULL && (strlen(want) != 64 || strspn(want, "0123456789abcdefABCDEF") != 64)) {
		upload_fail(u, HTTP_STATUS_BAD_REQUEST, "bad_request",
		    "header X-Content-Sha256 must be 64 hex digits");
		return;
	}
	for (size_t i = 0; want != NULL && i < 64; i++)
		u->want[i] = (char)(want[i] | 0x20);
	if (agent_act_as(0, &act) < 0 || files_mkdirs(u->dir, 1) < 0 ||
	    (fd = path_open(u->dir, O_PATH | O_DIRECTORY, 0)) < 0 || top_writable(fd) < 0) {
		if (errno == ENOTDIR || errno == EEXIST)
			upload_fail(u, HTTP_STATUS_CONFLICT, "conflict", "cannot extract into %s: "
			    "it (or a parent) is not a directory", u->dir);
		else if (errno == EACCES || errno == EPERM)
			upload_fail(u, HTTP_STATUS_FORBIDDEN, "forbidden", "cannot extract into %s: "
			    "permission denied (the sandbox's user may not write there)", u->dir);
		else
			upload_fail(u, HTTP_STATUS_INTERNAL_SERVER_ERROR, "internal",
			    "cannot create %s: %s", u->dir, strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	close(fd);
	agent_act_end(&act);	/* a thread starts with its creator's identity */
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		upload_fail(u, HTTP_STATUS_INTERNAL_SERVER_ERROR, "internal", "pipe: %s",
		    strerror(errno));
		return;
	}
	(void)fcntl(pfd[1], F_SETPIPE_SZ, 1 << 20);
	u->pipe_r = pfd[0];
	u->pipe_w = pfd[1];
	u->rbuf = xmalloc(IO_CHUNK);
	if (pthread_create(&u->thread, NULL, upload_thread, u) != 0) {
		close(u->pipe_r);
		close(u->pipe_w);
		u->pipe_w = -1;
		upload_fail(u, HTTP_STATUS_INTERNAL_SERVER_ERROR, "internal",
		    "cannot start the extraction thread");
		return;
	}
	u->started = 1;
}

/* Feed a chunk to the extraction thread; once anything failed, the rest of the
 * body is only counted and hashed. */
static int
upload_body(struct req *r, const char *data, size_t len)
{
	struct upload *u = r->ctx;

	if (u == NULL) {
		r->ctx = u = xcalloc(1, sizeof *u);
		r->ctx_free = upload_free;
		upload_begin(r, u);
	}
	u->received += len;
	sha256_update(u->md, len, (const uint8_t *)data);
	if (u->pipe_w < 0)		/* refused or stopped: u->status says why */
		return 0;
	if (u->received > UPLOAD_BODY_MAX) {
		upload_finish_thread(u);
		upload_fail(u, HTTP_STATUS_PAYLOAD_TOO_LARGE, "too_large",
		    "the archive is over the %llu byte limit", (unsigned long long)UPLOAD_BODY_MAX);
		return 0;
	}
	if (__atomic_load_n(&u->failed, __ATOMIC_ACQUIRE) ||
	    write_all(u->pipe_w, data, len) < 0) {
		upload_finish_thread(u);	/* its error is in u->status now */
		if (u->status == 0)
			upload_fail(u, HTTP_STATUS_INTERNAL_SERVER_ERROR, "internal",
			    "the extraction stopped early");
	}
	return 0;
}

/* The sha256 sent as a trailer of a chunked body; -1 when it is there but
 * malformed. */
static int
want_from_trailer(struct req *r, struct upload *u)
{
	const char *want = http_trailer(r, "X-Content-Sha256");

	if (want == NULL)
		return 0;
	if (strlen(want) != 64 || strspn(want, "0123456789abcdefABCDEF") != 64)
		return -1;
	for (size_t i = 0; i < 64; i++)
		u->want[i] = (char)(want[i] | 0x20);
	u->want[64] = '\0';
	return 0;
}

static enum http_rc
archive_upload(struct req *r)
{
	struct upload *u = r->ctx;
	char hex[65];

	if (u == NULL)
		return http_bad_request(r, "not a tar.gz archive: the body is empty");
	upload_finish_thread(u);
	if (u->status != 0)
		return http_error(r, u->status, u->code, "%s", u->err);
	if (u->want[0] == '\0' && want_from_trailer(r, u) < 0)
		return http_bad_request(r, "trailer X-Content-Sha256 must be 64 hex digits");
	hex_digest(u->md, hex);
	if (u->want[0] != '\0' && strcmp(u->want, hex) != 0) {
		cJSON *o = upload_result(u);
		cJSON_AddStringToObject(o, "error", "sha256_mismatch");
		cJSON_AddStringToObject(o, "message", "the body's sha256 differs from "
		    "X-Content-Sha256: what was extracted (counted here) may be damaged; "
		    "delete it and upload again");
		cJSON_AddStringToObject(o, "sha256", hex);
		cJSON_AddStringToObject(o, "expected", u->want);
		return http_json(r, HTTP_STATUS_BAD_REQUEST, o);
	}

	cJSON *ev = upload_result(u);
	cJSON_AddStringToObject(ev, "sha256", hex);
	cJSON_AddStringToObject(ev, "format", u->format ? u->format : "tar");
	events_emit("archive.uploaded", ev);
	log_info("archive: received %s (%s, %ld files, %llu bytes in %llu)", u->dir,
	    u->format ? u->format : "tar", u->files, (unsigned long long)u->bytes,
	    (unsigned long long)u->received);

	cJSON *o = upload_result(u);
	cJSON_AddNumberToObject(o, "received", (double)u->received);
	cJSON_AddStringToObject(o, "sha256", hex);
	cJSON_AddItemToObject(o, "skipped", steal_pointer(&u->skipped));
	cJSON_AddNumberToObject(o, "skipped_count", (double)u->nskipped);
	return http_json(r, HTTP_STATUS_OK, o);
}

/* ---- download ---------------------------------------------------------- */

struct download {
	struct req	*r;		/* touched only from the read callback */
	char		*dir;
	int		 dirfd;		/* the producer's */
	int		 pipe_r, pipe_w;	/* pipe_w belongs to the producer */
	pthread_t	 thread;
	int		 started;
	char		*excl[EXCLUDES_MAX];
	size_t		 nexcl;
	char		*xbuf;
	int		 format;	/* FMT_* */
	char		*fname;		/* a single file: dirfd is that file */

	/* Written by the producer; read after joining it. */
	struct sha256_ctx *md;
	uint64_t	 bytes;
	int		 failed;
	char		 err[512];
};

static la_ssize_t
download_write(struct archive *a, void *cls, const void *buf, size_t len)
{
	struct download *d = cls;

	if (write_all(d->pipe_w, buf, len) < 0) {
		archive_set_error(a, errno, "the client went away");
		return -1;
	}
	sha256_update(d->md, len, (const uint8_t *)buf);
	d->bytes += len;
	return (la_ssize_t)len;
}

struct producer {
	struct download	*d;
	struct archive	*a;
};

static int
excluded(const struct download *d, const char *name)
{
	for (size_t i = 0; i < d->nexcl; i++)
		if (strcmp(d->excl[i], name) == 0)
			return 1;
	return 0;
}

/* Add the entry name (in dfd, lstat st) as arch; fd is the file already open, or
 * -1.  Returns WALK_GO for a directory, WALK_PRUNE otherwise, -1 with errno. */
static int
add_entry(struct producer *p, int dfd, const char *name, const char *arch,
    const struct stat *st, int fd)
{
	struct archive_entry *e;
	_cleanup_close_ int own = -1;
	struct stat fst = *st;
	int rc = WALK_PRUNE;

	if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode) && !S_ISLNK(st->st_mode))
		return WALK_PRUNE;		/* sockets, FIFOs, devices */
	if (S_ISREG(st->st_mode) && fd < 0) {
		fd = own = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &fst) < 0 || !S_ISREG(fst.st_mode))
			return errno == ENOENT ? WALK_PRUNE : -1;
	}
	e = archive_entry_new();
	archive_entry_copy_stat(e, &fst);
	archive_entry_copy_pathname(e, arch);
	if (S_ISLNK(st->st_mode)) {
		char target[PATH_MAX_LEN + 1];
		ssize_t n = readlinkat(dfd, name, target, sizeof target - 1);
		if (n < 0) {
			archive_entry_free(e);
			return errno == ENOENT ? WALK_PRUNE : -1;
		}
		target[n] = '\0';
		archive_entry_copy_symlink(e, target);
		archive_entry_set_size(e, 0);
	}
	if (S_ISDIR(st->st_mode))
		rc = WALK_GO;
	if (archive_write_header(p->a, e) < ARCHIVE_WARN) {
		archive_entry_free(e);
		errno = EPIPE;
		return -1;
	}
	archive_entry_free(e);
	/* Copy at most the size announced in the header: a file growing meanwhile is
	 * cut there, one shrinking is padded by libarchive. */
	for (off_t left = fst.st_size; S_ISREG(fst.st_mode) && left > 0;) {
		ssize_t n = read(fd, p->d->xbuf, left < IO_CHUNK ? (size_t)left : IO_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (archive_write_data(p->a, p->d->xbuf, (size_t)n) < 0) {
			errno = EPIPE;
			return -1;
		}
		left -= n;
	}
	return rc;
}

static int
produce_entry(struct walk *w, int dfd, const char *name, const struct stat *st,
    int depth, void *arg)
{
	struct producer *p = arg;

	(void)depth;
	if (excluded(p->d, name))
		return WALK_PRUNE;
	return add_entry(p, dfd, name, files_walk_path(w), st, -1);
}

static void *
download_thread(void *arg)
{
	struct download *d = arg;
	struct archive *a = archive_write_new();
	struct producer p = { d, a };
	char failed[PATH_MAX_LEN + 1] = "";

	struct stat st;

	if (d->format == FMT_GZIP)
		archive_write_add_filter_gzip(a);
	else if (d->format == FMT_ZSTD)
		archive_write_add_filter_zstd(a);
	archive_write_set_format_pax_restricted(a);
	archive_write_set_bytes_in_last_block(a, 1);
	if (archive_write_open2(a, d, NULL, download_write, NULL, NULL) != ARCHIVE_OK) {
		snprintf(d->err, sizeof d->err, "%s", archive_error_string(a));
		d->failed = 1;
	} else if (d->fname != NULL) {
		/* One file: a single entry under its own name. */
		if (fstat(d->dirfd, &st) < 0 ||
		    add_entry(&p, AT_FDCWD, "", d->fname, &st, d->dirfd) < 0) {
			snprintf(d->err, sizeof d->err, "%s: %s", d->fname, strerror(errno));
			d->failed = 1;
		}
	} else if (files_walk(d->dirfd, produce_entry, NULL, &p, failed, sizeof failed) < 0) {
		snprintf(d->err, sizeof d->err, "at %.400s: %s", failed, strerror(errno));
		d->failed = 1;
	}
	if (archive_write_close(a) != ARCHIVE_OK && !d->failed) {
		snprintf(d->err, sizeof d->err, "%s", archive_error_string(a));
		d->failed = 1;
	}
	archive_write_free(a);
	close(d->pipe_w);
	return NULL;
}

static ssize_t
download_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct download *d = cls;
	ssize_t n;
	char hex[65];

	do
		n = read(d->pipe_r, buf, max);
	while (n < 0 && errno == EINTR);
	if (n > 0)
		return n;
	if (d->started) {
		pthread_join(d->thread, NULL);
		d->started = 0;
	}
	if (n < 0 || d->failed) {
		log_warnx("archive download of %s failed: %s", d->dir, d->err);
		return HTTP_STREAM_ERROR;
	}
	hex_digest(d->md, hex);
	http_stream_trailer(d->r, "X-Content-Sha256", hex);
	cJSON *ev = cJSON_CreateObject();
	cJSON_AddStringToObject(ev, "path", d->dir);
	cJSON_AddNumberToObject(ev, "bytes", (double)d->bytes);
	cJSON_AddStringToObject(ev, "sha256", hex);
	cJSON_AddStringToObject(ev, "format", fmt_names[d->format]);
	events_emit("archive.downloaded", ev);
	log_info("archive: sent %s (%s, %llu bytes)", d->dir, fmt_names[d->format],
	    (unsigned long long)d->bytes);
	return HTTP_STREAM_END;
}

static void
download_free(void *cls)
{
	struct download *d = cls;

	close(d->pipe_r);		/* a producer still writing gets EPIPE */
	if (d->started)
		pthread_join(d->thread, NULL);
	if (d->dirfd >= 0)
		close(d->dirfd);
	for (size_t i = 0; i < d->nexcl; i++)
		free(d->excl[i]);
	free(d->md);
	free(d->xbuf);
	free(d->fname);
	free(d->dir);
	free(d);
}

/* The exclude list: the defaults when the parameter is absent, none when it is
 * empty, else its comma-separated names.  -1 when there are too many. */
static int
parse_excludes(struct download *d, const char *q)
{
	if (q == NULL) {
		for (size_t i = 0; i < ARRAY_SIZE(default_excludes); i++)
			d->excl[d->nexcl++] = xstrdup(default_excludes[i]);
		return 0;
	}
	for (const char *s = q; *s != '\0';) {
		const char *e = strchrnul(s, ',');
		if (e > s) {
			if (d->nexcl == EXCLUDES_MAX)
				return -1;
			d->excl[d->nexcl++] = xstrndup(s, (size_t)(e - s));
		}
		s = *e ? e + 1 : e;
	}
	return 0;
}

/* The format query: tar.gz when absent, -1 when unknown. */
static int
format_of(const char *q)
{
	if (q == NULL || strcmp(q, "tar.gz") == 0 || strcmp(q, "tgz") == 0)
		return FMT_GZIP;
	if (strcmp(q, "tar") == 0)
		return FMT_TAR;
	if (strcmp(q, "tar.zst") == 0 && zstd_ok())
		return FMT_ZSTD;
	return -1;
}

cJSON *
archive_formats(void)
{
	cJSON *a = cJSON_CreateArray();

	cJSON_AddItemToArray(a, cJSON_CreateString("tar"));
	cJSON_AddItemToArray(a, cJSON_CreateString("tar.gz"));
	if (zstd_ok())
		cJSON_AddItemToArray(a, cJSON_CreateString("tar.zst"));
	return a;
}

static enum http_rc
archive_download(struct req *r)
{
	const char *p = http_query(r, "path");
	_cleanup_free_ char *norm = path_normalize(agent.workspace, p && *p ? p : ".");
	_cleanup_close_ int fd = -1;
	struct download *d;
	struct stat st;
	int pfd[2], format = format_of(http_query(r, "format"));
	enum http_rc rc;

	if (norm == NULL)
		return http_bad_request(r, "query parameter 'path' must be a path of at most "
		    "%d bytes", PATH_MAX_LEN);
	if (format < 0)
		return http_bad_request(r, "query parameter 'format' must be tar, tar.gz%s",
		    zstd_ok() ? " or tar.zst" : " (tar.zst is not built in)");
	/* O_NONBLOCK: a FIFO named here must not hold the request up. */
	if ((fd = path_open(norm, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0)) < 0 ||
	    fstat(fd, &st) < 0) {
		if (errno == ENOENT)
			return http_error(r, HTTP_STATUS_NOT_FOUND, "not_found", "%s does not exist",
			    norm);
		return http_error(r, HTTP_STATUS_INTERNAL_SERVER_ERROR, "internal",
		    "cannot open %s: %s", norm, strerror(errno));
	}
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
		return http_bad_request(r, "%s is not a file or a directory", norm);
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return http_error(r, HTTP_STATUS_INTERNAL_SERVER_ERROR, "internal", "pipe: %s",
		    strerror(errno));
	/* A bigger pipe: fewer wake-ups between the producer and the sender. */
	(void)fcntl(pfd[1], F_SETPIPE_SZ, 1 << 20);
	d = xcalloc(1, sizeof *d);
	d->r = r;
	d->format = format;
	if (S_ISREG(st.st_mode)) {
		const char *slash = strrchr(norm, '/');
		d->fname = xstrdup(slash && slash[1] ? slash + 1 : "file");
	}
	d->dir = steal_pointer(&norm);
	d->dirfd = steal_fd(&fd);
	d->pipe_r = pfd[0];
	d->pipe_w = pfd[1];
	d->md = sha256_new();
	d->xbuf = xmalloc(IO_CHUNK);
	if (parse_excludes(d, http_query(r, "exclude")) < 0) {
		close(d->pipe_w);
		download_free(d);
		return http_bad_request(r, "query parameter 'exclude' has more than %d names",
		    EXCLUDES_MAX);
	}
	if (pthread_create(&d->thread, NULL, download_thread, d) != 0) {
		close(d->pipe_w);
		download_free(d);
		return http_error(r, HTTP_STATUS_INTERNAL_SERVER_ERROR, "internal",
		    "cannot start the archive thread");
	}
	d->started = 1;
	rc = http_stream(r, HTTP_STATUS_OK, format == FMT_GZIP ? "application/gzip" :
	    format == FMT_ZSTD ? "application/zstd" : "application/x-tar", download_read, d,
	    download_free);
	/* The response is not sent before this handler returns (same thread). */
	http_stream_header(r, "Trailer", "X-Content-Sha256");
	return rc;
}

const struct route archive_routes[] = {
	{ "POST", "/v1/archive/upload", ROUTE_STREAM_BODY, archive_upload, upload_body,
	  UPLOAD_BODY_MAX },
	{ "GET", "/v1/archive/download", 0, archive_download, NULL, 0 },
	{ NULL, NULL, 0, NULL, NULL, 0 }
};
