/* Archives streamed between the host and an agent (copy/io.h).
 *
 * Into the sandbox: a packer thread walks the host tree and writes the tar
 * (or tar.zst, tar.gz) into a pipe, hashing it; the calling thread sends the
 * pipe as the chunked request body and the sha256 as its trailer, which the
 * agent checks.
 * A packer that fails sends no trailer, so the request is aborted rather than
 * ending as a shorter archive the agent would take for a whole one.
 * Out of it: the calling thread receives the body, hashes it and writes it into
 * a pipe that an extraction thread reads, into a fresh staging directory.  Only
 * when the transfer ended, the extraction ended and the sha256 matches the
 * agent's trailer is the staging moved into place (a rename, or a merge of its
 * entries into an existing directory); otherwise it is removed.
 *
 * What comes out of a sandbox is untrusted: entry names are checked (relative,
 * no "..", bounded depth), only files, directories and symlinks are taken,
 * libarchive refuses to write through a symlink, owners and set-id bits are
 * dropped, and the merge never follows a link at or under the destination (a
 * link there is replaced, not written through). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <openssl/evp.h>

#include "lib/buf.h"
#include "core/copy/guard.h"
#include "core/copy/io.h"
#include "lib/fault.h"
#include "lib/log.h"
#include "lib/util.h"

#define COPY_DEPTH_MAX	200
#define IO_CHUNK	(256 * 1024)
#define PIPE_SIZE	(1 << 20)
#define CORRUPT_OFFSET	(1u << 20)	/* where the test hook flips a byte */

enum copy_format
copy_format(struct agentc *a, const struct sandbox *s)
{
	struct sbx_err e;
	cJSON *h = NULL, *f;
	enum copy_format fmt = COPY_GZIP;

	if (s->backend != NULL &&
	    (strcmp(s->backend, "ns") == 0 || strcmp(s->backend, "qemu") == 0))
		return COPY_TAR;
	if (agentc_health(a, &h, &e) == 0)
		cJSON_ArrayForEach(f, cJSON_GetObjectItem(h, "archive_formats"))
			if (cJSON_IsString(f) && strcmp(f->valuestring, "tar.zst") == 0)
				fmt = COPY_ZSTD;
	cJSON_Delete(h);
	return fmt;
}

const char *
copy_format_name(enum copy_format f)
{
	return f == COPY_TAR ? "tar" : f == COPY_ZSTD ? "tar.zst" : "tar.gz";
}

static void
hex_of(EVP_MD_CTX *md, char hex[65])
{
	unsigned char h[32];
	unsigned int n = 0;

	EVP_DigestFinal_ex(md, h, &n);
	hex_encode(hex, h, sizeof h);
}

static EVP_MD_CTX *
md_new(void)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();

	if (md == NULL || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1)
		fatal("cannot set up sha256");
	return md;
}

/* The test hook SBXTOP_TEST_COPY_CORRUPT=in|out: one byte of the stream in that
 * direction is flipped after it was hashed (in) or before (out), as a damaged
 * link would, so the tests can see the digest check catch it. */
static int
corrupting(const char *dir)
{
	const char *v = getenv("SBXTOP_TEST_COPY_CORRUPT");
	return v != NULL && strcmp(v, dir) == 0;
}

/* data (len bytes at stream offset off) with the hook's byte flipped, in tmp. */
static const void *
corrupt(const void *data, size_t len, uint64_t off, char **tmp)
{
	if (off > CORRUPT_OFFSET || off + len <= CORRUPT_OFFSET)
		return data;
	*tmp = xmalloc(len);
	memcpy(*tmp, data, len);
	(*tmp)[CORRUPT_OFFSET - off] ^= 0x20;
	return *tmp;
}

/* ---- packing ----------------------------------------------------------- */

struct packer {
	struct archive	*a;
	EVP_MD_CTX	*md;
	int		 fd;		/* the pipe's write end */
	char		*buf;
	struct sbx_err	 err;		/* the thread's own */
	const char *const *exclude;
	uint64_t	 files, bytes, sent;
	int		 hook, pipe_broke;

	/* What to pack. */
	int		 dfd;
	char		*name, *arch;

	pthread_t	 thread;
	int		 rc;		/* atomic: 1 running, 0 done, -1 failed */
	char		 hex[65];
	char		 trailer[100];
};

static int
excluded(const struct packer *pk, const char *name)
{
	for (const char *const *x = pk->exclude; x != NULL && *x != NULL; x++)
		if (strcmp(*x, name) == 0)
			return 1;
	return 0;
}

static la_ssize_t
pack_write(struct archive *a, void *arg, const void *p, size_t n)
{
	struct packer *pk = arg;
	_cleanup_free_ char *tmp = NULL;

	EVP_DigestUpdate(pk->md, p, n);
	if (pk->hook)
		p = corrupt(p, n, pk->sent, &tmp);
	/* Past the first block: a stream cut in the middle. */
	if (pk->sent > 0 && fault_point("copy-in.sending", NULL) < 0) {
		archive_set_error(a, EIO, "the upload stopped");
		return -1;
	}
	if (write_all(pk->fd, p, n) < 0) {
		pk->pipe_broke = 1;
		archive_set_error(a, errno, "the upload stopped");
		return -1;
	}
	pk->sent += n;
	return (la_ssize_t)n;
}

static int pack_dir(struct packer *pk, int dfd, const char *prefix, int depth);

/* Add the host entry dfd/name as archive name arch (a directory with what it
 * holds; arch "" for a directory: its contents only). */
static int
pack_entry(struct packer *pk, int dfd, const char *name, const char *arch, int depth)
{
	struct archive_entry *ent;
	_cleanup_close_ int fd = -1;
	struct stat st;
	int rc = 0;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return sbx_error_errno(&pk->err, SBX_EIO, NULL, "cannot stat %s", arch);
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode)) {
		log_warnx("skipping %s: not a file, directory or symlink", arch);
		return 0;
	}
	if (S_ISREG(st.st_mode) &&
	    ((fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    fstat(fd, &st) < 0))
		return sbx_error_errno(&pk->err, SBX_EIO, NULL, "cannot read %s", arch);
	if (arch[0] != '\0') {
		ent = archive_entry_new();
		archive_entry_copy_stat(ent, &st);
		archive_entry_set_uid(ent, 0);
		archive_entry_set_gid(ent, 0);
		archive_entry_copy_pathname(ent, arch);
		if (S_ISLNK(st.st_mode)) {
			char target[4096];
			ssize_t n = readlinkat(dfd, name, target, sizeof target - 1);
			if (n < 0) {
				archive_entry_free(ent);
				return sbx_error_errno(&pk->err, SBX_EIO, NULL,
				    "cannot read the link %s", arch);
			}
			target[n] = '\0';
			archive_entry_copy_symlink(ent, target);
			archive_entry_set_size(ent, 0);
		}
		if (S_ISDIR(st.st_mode))
			archive_entry_set_size(ent, 0);
		if (archive_write_header(pk->a, ent) < ARCHIVE_WARN) {
			archive_entry_free(ent);
			return sbx_error(&pk->err, SBX_EIO, NULL, "archive: %s",
			    archive_error_string(pk->a));
		}
		archive_entry_free(ent);
	}
	for (off_t left = st.st_size; fd >= 0 && left > 0;) {
		ssize_t n = read(fd, pk->buf, left < IO_CHUNK ? (size_t)left : IO_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sbx_error_errno(&pk->err, SBX_EIO, NULL, "cannot read %s", arch);
		if (n == 0)
			break;	/* shrank meanwhile: libarchive pads */
		if (archive_write_data(pk->a, pk->buf, (size_t)n) < 0)
			return sbx_error(&pk->err, SBX_EIO, NULL, "archive: %s",
			    archive_error_string(pk->a));
		left -= n;
		pk->bytes += (uint64_t)n;
	}
	if (fd >= 0)
		pk->files++;
	if (S_ISDIR(st.st_mode)) {
		_cleanup_close_ int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			return sbx_error_errno(&pk->err, SBX_EIO, NULL, "cannot open %s",
			    arch[0] ? arch : name);
		rc = pack_dir(pk, steal_fd(&sub), arch, depth + 1);
	}
	return rc;
}

/* Takes dfd. */
static int
pack_dir(struct packer *pk, int dfd, const char *prefix, int depth)
{
	DIR *d;
	struct dirent **names = NULL;
	int n, rc = 0;

	if (depth > COPY_DEPTH_MAX) {
		close(dfd);
		return sbx_error(&pk->err, SBX_EINVAL, NULL, "%s: deeper than %d levels", prefix,
		    COPY_DEPTH_MAX);
	}
	if ((d = fdopendir(dfd)) == NULL) {
		close(dfd);
		return sbx_error_errno(&pk->err, SBX_EIO, NULL, "cannot list %s", prefix);
	}
	/* Sorted, so the same tree always gives the same archive. */
	n = scandirat(dfd, ".", &names, NULL, alphasort);
	if (n < 0)
		rc = sbx_error_errno(&pk->err, SBX_EIO, NULL, "cannot list %s", prefix);
	for (int i = 0; i < n; i++) {
		const char *nm = names[i]->d_name;
		if (rc == 0 && strcmp(nm, ".") != 0 && strcmp(nm, "..") != 0 && !excluded(pk, nm)) {
			_cleanup_free_ char *arch = prefix[0] ? xasprintf("%s/%s", prefix, nm) :
			    xstrdup(nm);
			rc = pack_entry(pk, dirfd(d), nm, arch, depth);
		}
		free(names[i]);
	}
	free(names);
	closedir(d);
	return rc;
}

static void *
pack_thread(void *arg)
{
	struct packer *pk = arg;
	int rc;

	rc = pack_entry(pk, pk->dfd, pk->name, pk->arch, 0);
	if (rc == 0 && archive_write_close(pk->a) != ARCHIVE_OK)
		rc = sbx_error(&pk->err, SBX_EIO, NULL, "archive: %s",
		    archive_error_string(pk->a));
	if (rc == 0) {
		hex_of(pk->md, pk->hex);
		snprintf(pk->trailer, sizeof pk->trailer, "X-Content-Sha256: %s", pk->hex);
	}
	__atomic_store_n(&pk->rc, rc < 0 ? -1 : 0, __ATOMIC_RELEASE);
	close(pk->fd);		/* the body ends here */
	pk->fd = -1;
	return NULL;
}

/* The trailer once the packer is done and well; NULL aborts the request. */
static const char *
pack_trailer(void *arg)
{
	struct packer *pk = arg;

	return __atomic_load_n(&pk->rc, __ATOMIC_ACQUIRE) == 0 ? pk->trailer : NULL;
}

int
copy_send(struct agentc *a, const char *url, enum copy_format f, int dfd,
    const char *name,
    const char *arch, const char *const *exclude, struct copy_stats *st, cJSON **ans,
    struct sbx_err *e)
{
	struct packer pk = { .fd = -1, .exclude = exclude, .dfd = dfd, .rc = 1 };
	int pfd[2], rc = -1, started = 0;
	const char *theirs;

	*ans = NULL;
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "pipe");
	(void)fcntl(pfd[1], F_SETPIPE_SZ, PIPE_SIZE);
	pk.fd = pfd[1];
	pk.md = md_new();
	pk.buf = xmalloc(IO_CHUNK);
	pk.name = xstrdup(name);
	pk.arch = xstrdup(arch);
	pk.hook = corrupting("in");
	pk.a = archive_write_new();
	if (f == COPY_GZIP) {
		archive_write_add_filter_gzip(pk.a);
		/* Level 1: past it, deflate costs more time than the link saves. */
		archive_write_set_filter_option(pk.a, "gzip", "compression-level", "1");
	} else if (f == COPY_ZSTD && archive_write_add_filter_zstd(pk.a) != ARCHIVE_OK) {
		sbx_error(e, SBX_EIO, NULL, "archive: %s", archive_error_string(pk.a));
		close(pk.fd);
		goto out;
	}
	archive_write_set_format_pax_restricted(pk.a);
	archive_write_set_bytes_in_last_block(pk.a, 1);
	archive_write_set_bytes_per_block(pk.a, 64 * 1024);
	if (archive_write_open2(pk.a, &pk, NULL, pack_write, NULL, NULL) != ARCHIVE_OK) {
		sbx_error(e, SBX_EIO, NULL, "archive: %s", archive_error_string(pk.a));
		close(pk.fd);
		goto out;
	}
	if (pthread_create(&pk.thread, NULL, pack_thread, &pk) != 0) {
		sbx_error(e, SBX_EIO, NULL, "cannot start the archive thread");
		close(pk.fd);
		goto out;
	}
	started = 1;
	rc = agentc_upload_stream(a, url, f == COPY_GZIP ? "application/gzip" :
	    f == COPY_ZSTD ? "application/zstd" : "application/x-tar",
	    pfd[0], pack_trailer, &pk, ans, e);
	close(pfd[0]);		/* a packer still writing stops with EPIPE */
	pfd[0] = -1;
	pthread_join(pk.thread, NULL);
	started = 0;
	if (pk.rc < 0 && !(rc < 0 && pk.pipe_broke)) {
		*e = pk.err;	/* why the body stopped */
		rc = -1;
		goto out;
	}
	if (rc < 0) {
		/* The agent's sha256_mismatch is a 400, but no fault of the caller's. */
		if (e->reason == SBX_R_SHA256_MISMATCH)
			sbx_error(e, SBX_EAGENT, "copy it again: what was extracted may be "
			    "damaged", "the archive arrived damaged in the sandbox (its sha256 "
			    "differs from the one sent)");
		goto out;
	}
	st->files = pk.files;
	st->bytes = pk.bytes;
	memcpy(st->sha256, pk.hex, sizeof st->sha256);
	/* An agent that predates the trailer does not check it: compare here. */
	theirs = cJSON_GetStringValue(cJSON_GetObjectItem(*ans, "sha256"));
	if (theirs != NULL && strcasecmp(theirs, st->sha256) != 0) {
		rc = sbx_error(e, SBX_EAGENT, "copy it again", "the archive arrived damaged in "
		    "the sandbox (sha256 %s there, %s sent)", theirs, st->sha256);
		goto out;
	}
out:
	if (pfd[0] >= 0)
		close(pfd[0]);
	if (started)
		pthread_join(pk.thread, NULL);
	archive_write_free(pk.a);
	EVP_MD_CTX_free(pk.md);
	free(pk.buf);
	free(pk.name);
	free(pk.arch);
	if (rc < 0) {
		cJSON_Delete(*ans);
		*ans = NULL;
	}
	return rc;
}

/* ---- extracting -------------------------------------------------------- */
struct unpacker {
	int		 fd;		/* the pipe's read end */
	char		*dir;		/* the staging directory, resolved */
	EVP_MD_CTX	*content;	/* FETCH_FILE: the file's own sha256 */
	uint64_t	 files, bytes;
	struct buf	 skipped;	/* what was left out and why, a line each: logged
					 * by the caller's thread, whose log lines reach the
					 * operator */
	struct sbx_err	 err;
	int		 rc;
};

/* Extract the archive on u->fd into u->dir (fresh, resolved: the only symlinks
 * on the way are ones the archive made, and those are refused). */
static int
unpack(struct unpacker *u)
{
	struct archive *in = archive_read_new(), *out = archive_write_disk_new();
	struct archive_entry *ent;
	struct sbx_err *e = &u->err;
	int rc = 0, r;

	archive_read_support_filter_gzip(in);
	archive_read_support_filter_zstd(in);
	archive_read_support_format_tar(in);
	archive_write_disk_set_options(out, ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_PERM |
	    ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NODOTDOT);
	if (archive_read_open_fd(in, u->fd, IO_CHUNK) != ARCHIVE_OK) {
		rc = sbx_error(e, SBX_EAGENT, NULL, "the archive from the sandbox is unreadable: %s",
		    archive_error_string(in));
		goto out;
	}
	while ((r = archive_read_next_header(in, &ent)) == ARCHIVE_OK || r == ARCHIVE_WARN) {
		const char *name = archive_entry_pathname(ent);
		const void *blk;
		size_t len;
		la_int64_t off;
		mode_t t = archive_entry_filetype(ent);
		char plain[4096], why[128];
		const char *lt;

		/* copy/guard.h: no ".", "..", absolute or empty names (an entry "."
		 * would set the destination's own mode); no link out of the tree. */
		if (name == NULL ||
		    copy_guard_name(name, plain, sizeof plain, why, sizeof why) < 0 ||
		    (t != AE_IFREG && t != AE_IFDIR && t != AE_IFLNK) ||
		    archive_entry_hardlink(ent) != NULL) {
			(void)buf_printf(&u->skipped, "skipping an archive entry from the "
			    "sandbox: %.200s\n", name ? name : "(no name)");
			continue;
		}
		if (t == AE_IFLNK && ((lt = archive_entry_symlink(ent)) == NULL ||
		    !copy_guard_link_inside(plain, lt))) {
			(void)buf_printf(&u->skipped, "skipping the link %.200s -> %.200s: it "
			    "points outside the copied tree\n", plain, lt ? lt : "?");
			continue;
		}
		_cleanup_free_ char *full = xasprintf("%s/%s", u->dir, plain);
		_cleanup_free_ char *shown = xstrdup(plain);
		archive_entry_copy_pathname(ent, full);
		name = shown;
		/* Never take the sandbox's owners or set-id bits on the host. */
		archive_entry_set_perm(ent, archive_entry_perm(ent) & 0777);
		if (archive_write_header(out, ent) < ARCHIVE_WARN) {
			rc = sbx_error(e, SBX_EIO, NULL, "cannot extract %s: %s", name,
			    archive_error_string(out));
			goto out;
		}
		while ((r = archive_read_data_block(in, &blk, &len, &off)) == ARCHIVE_OK) {
			/* A failed write(2) (a full disk) is only ARCHIVE_WARN. */
			if (archive_write_data_block(out, blk, len, off) != ARCHIVE_OK) {
				rc = sbx_error(e, SBX_EIO, NULL, "cannot write %s: %s", name,
				    archive_errno(out) ? strerror(archive_errno(out)) :
				    archive_error_string(out));
				goto out;
			}
			if (u->content)
				EVP_DigestUpdate(u->content, blk, len);
			u->bytes += len;
		}
		if (t == AE_IFREG)
			u->files++;
		if (r != ARCHIVE_EOF) {
			rc = sbx_error(e, SBX_EAGENT, NULL, "the archive from the sandbox is "
			    "damaged: %s", archive_error_string(in));
			goto out;
		}
		if (archive_write_finish_entry(out) < ARCHIVE_WARN) {
			rc = sbx_error(e, SBX_EIO, NULL, "cannot finish %s: %s", name,
			    archive_error_string(out));
			goto out;
		}
	}
	if (r != ARCHIVE_EOF)
		rc = sbx_error(e, SBX_EAGENT, NULL, "the archive from the sandbox is damaged: %s",
		    archive_error_string(in));
out:
	if (archive_write_close(out) != ARCHIVE_OK && rc == 0)
		rc = sbx_error(e, SBX_EIO, NULL, "extracting: %s", archive_error_string(out));
	archive_write_free(out);
	archive_read_free(in);
	return rc;
}

static void *
unpack_thread(void *arg)
{
	struct unpacker *u = arg;
	char buf[4096];

	u->rc = unpack(u);
	/* Whatever follows the archive's end is read, so the sender never blocks. */
	while (u->rc == 0 && read(u->fd, buf, sizeof buf) > 0)
		;
	close(u->fd);		/* a sender still going gets EPIPE */
	u->fd = -1;
	return NULL;
}

struct receiver {
	EVP_MD_CTX	*md;
	int		 fd;		/* the pipe's write end */
	char		*buf;		/* what goes into the pipe next */
	size_t		 len;
	uint64_t	 got;
	int		 hook, pipe_broke;
	core_progress_fn progress;
	void		*parg;
};

static int
recv_flush(struct receiver *rv)
{
	int rc = rv->len > 0 ? write_all(rv->fd, rv->buf, rv->len) : 0;

	rv->len = 0;
	if (rc < 0)
		rv->pipe_broke = 1;
	return rc;
}

/* libcurl hands the body over in pieces of at most 16 KiB: they are gathered,
 * so the pipe (and the extraction thread) sees a few large writes. */
static int
recv_data(const char *data, size_t len, void *arg, struct sbx_err *e)
{
	struct receiver *rv = arg;
	_cleanup_free_ char *tmp = NULL;
	const char *p = rv->hook ? corrupt(data, len, rv->got, &tmp) : data;

	if (rv->got > 0 && fault_point("copy-out.receiving", e) < 0)
		return -1;
	EVP_DigestUpdate(rv->md, p, len);
	for (size_t off = 0; off < len;) {
		size_t k = len - off < IO_CHUNK - rv->len ? len - off : IO_CHUNK - rv->len;
		memcpy(rv->buf + rv->len, p + off, k);
		rv->len += k;
		off += k;
		if (rv->len == IO_CHUNK && recv_flush(rv) < 0)
			return sbx_error(e, SBX_EIO, NULL, "the extraction stopped");
	}
	rv->got += len;
	if (rv->progress && rv->progress(rv->got, 0, "downloading", rv->parg) != 0)
		return sbx_error(e, SBX_EIO, NULL, "the transfer was stopped");
	return 0;
}

/* Remove dfd/name and everything under it, following no link. */
static void
rm_tree(int dfd, const char *name, int depth)
{
	DIR *d;
	struct dirent *de;
	int fd;

	if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT || depth > COPY_GUARD_DEPTH_MAX + 2)
		return;
	if ((fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return;
	(void)fchmod(fd, 0700);
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			rm_tree(dirfd(d), de->d_name, depth + 1);
	closedir(d);
	(void)unlinkat(dfd, name, AT_REMOVEDIR);
}

/* The staging directories (named prefix...) that copies killed before they
 * were done left in dfd: unlocked, since a copy holds its own locked. */
static void
stale_remove(int dfd, const char *prefix)
{
	int fd = dup(dfd);
	struct dirent *de;
	DIR *d;

	if (fd < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		_cleanup_close_ int sd = -1;
		if (strncmp(de->d_name, prefix, strlen(prefix)) != 0 ||
		    (sd = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC)) < 0 || flock(sd, LOCK_EX | LOCK_NB) < 0)
			continue;
		log_info("removing %s, left by a copy that was stopped", de->d_name);
		rm_tree(dfd, de->d_name, 0);
	}
	closedir(d);
}

/* Move what the directory sfd holds into the directory dfd (shown as where):
 * new names are renamed in, directories on both sides merged, anything else
 * replaced (a symlink in the way is replaced, never followed). */
static int
merge(int sfd, int dfd, const char *where, const char *skip, int depth, struct sbx_err *e)
{
	DIR *d;
	struct dirent *de;
	int rc = 0, fd = dup(sfd);

	if (fd < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot list the staging of %s", where);
	}
	while (rc == 0 && (de = readdir(d)) != NULL) {
		const char *nm = de->d_name;
		struct stat ss, ds;

		if (strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0 ||
		    (skip != NULL && strcmp(nm, skip) == 0))
			continue;
		if (fstatat(sfd, nm, &ss, AT_SYMLINK_NOFOLLOW) < 0) {
			rc = sbx_error_errno(e, SBX_EIO, NULL, "staging of %s/%s", where, nm);
			break;
		}
		if (fstatat(dfd, nm, &ds, AT_SYMLINK_NOFOLLOW) == 0) {
			if (S_ISDIR(ds.st_mode) && S_ISDIR(ss.st_mode) && depth < COPY_GUARD_DEPTH_MAX) {
				_cleanup_close_ int s2 = openat(sfd, nm, O_RDONLY | O_DIRECTORY |
				    O_NOFOLLOW | O_CLOEXEC);
				_cleanup_close_ int d2 = openat(dfd, nm, O_RDONLY | O_DIRECTORY |
				    O_NOFOLLOW | O_CLOEXEC);
				_cleanup_free_ char *sub = xasprintf("%s/%s", where, nm);
				if (s2 < 0 || d2 < 0) {
					rc = sbx_error_errno(e, SBX_EIO, NULL, "cannot open %s", sub);
					break;
				}
				/* Writable while entries move; the archive's mode after. */
				(void)fchmod(s2, 0700);
				(void)fchmod(d2, (ds.st_mode & 07777) | 0700);
				rc = merge(s2, d2, sub, NULL, depth + 1, e);
				(void)fchmod(d2, ss.st_mode & 0777);
				continue;
			}
			if (S_ISDIR(ds.st_mode)) {
				rc = sbx_error(e, SBX_EINVAL, "move it away and copy again",
				    "cannot put %s/%s: a directory is in the way", where, nm);
				break;
			}
			/* rename() puts a directory over a non-directory only when it is gone. */
			if (S_ISDIR(ss.st_mode) && unlinkat(dfd, nm, 0) < 0) {
				rc = sbx_error_errno(e, SBX_EIO, NULL, "cannot replace %s/%s", where, nm);
				break;
			}
		}
		if (renameat(sfd, nm, dfd, nm) < 0)
			rc = sbx_error_errno(e, SBX_EIO, NULL, "cannot put %s/%s", where, nm);
	}
	closedir(d);
	return rc;
}

static char *
parent_of(const char *path)
{
	_cleanup_free_ char *p = xstrdup(path);
	char *sl;
	size_t n = strlen(p);

	while (n > 1 && p[n - 1] == '/')
		p[--n] = '\0';
	if ((sl = strrchr(p, '/')) == NULL)
		return xstrdup(".");
	if (sl == p)
		return xstrdup("/");
	*sl = '\0';
	return xstrdup(p);
}

static const char *
last_of(const char *path, char *buf, size_t len)
{
	size_t n = strlen(path);
	const char *b;

	while (n > 1 && path[n - 1] == '/')
		n--;
	snprintf(buf, len, "%.*s", (int)n, path);
	b = strrchr(buf, '/');
	return b ? b + 1 : buf;
}

/* The one regular file the staging directory sfd holds, renamed to dest. */
static int
place_file(int sfd, const char *dest, const char *what, struct sbx_err *e)
{
	DIR *d;
	struct dirent *de;
	char name[256] = "";
	int fd = dup(sfd), n = 0, ok = 1;

	if (fd < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot list the staging of %s", dest);
	}
	while ((de = readdir(d)) != NULL) {
		struct stat st;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (n++ > 0 || fstatat(sfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			ok = 0;
		snprintf(name, sizeof name, "%s", de->d_name);
	}
	closedir(d);
	/* Nothing moves unless the archive is exactly one file. */
	if (n != 1 || !ok)
		return sbx_error(e, SBX_EAGENT, NULL, "the archive of %s is not one file", what);
	if (renameat(sfd, name, AT_FDCWD, dest) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot write %s", dest);
	return 0;
}

int
copy_fetch(struct agentc *a, const char *url, const char *what, const char *dest,
    enum copy_fetch_mode mode, core_progress_fn progress, void *parg,
    struct copy_stats *st, struct sbx_err *e)
{
	struct unpacker u = { .fd = -1 };
	struct receiver rv = { .fd = -1, .progress = progress, .parg = parg };
	_cleanup_free_ char *parent = NULL, *real = NULL, *stage = NULL, *prefix = NULL;
	_cleanup_close_ int pdfd = -1, sfd = -1;
	char got[65] = "", base[4096];
	struct stat dst;
	pthread_t thread;
	int rc = -1, into = 0, pfd[2] = { -1, -1 }, started = 0, committing = 0;

	memset(st, 0, sizeof *st);
	e->msg[0] = '\0';
	/* The staging directory: inside dest when it is a directory already (the same
	 * filesystem whatever is mounted there), beside it otherwise. */
	/* Never into a link at dest (copy/guard.h): its parents are the
	 * operator's path, dest itself may be what a sandbox laid down before. */
	if (mode == FETCH_TREE && lstat(dest, &dst) == 0 && S_ISLNK(dst.st_mode))
		return sbx_error(e, SBX_EINVAL, "remove the link, or name its target",
		    "%s is a symlink: a copy out never writes through one", dest);
	into = mode == FETCH_TREE && stat(dest, &dst) == 0 && S_ISDIR(dst.st_mode);
	parent = into ? xstrdup(dest) : parent_of(dest);
	if ((real = realpath(parent, NULL)) == NULL)
		return sbx_error_errno(e, SBX_ENOTFOUND, NULL, "cannot resolve %s", parent);
	prefix = xasprintf(".%.200s.sbxtop-", into ? "copy" : last_of(dest, base, sizeof base));
	stage = xasprintf("%s/%sXXXXXX", strcmp(real, "/") == 0 ? "" : real, prefix);
	if ((pdfd = open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot open %s", real);
	stale_remove(pdfd, prefix);
	if (mkdtemp(stage) == NULL)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot write in %s", parent);
	/* Locked while it is ours: one left unlocked is a killed copy's. */
	if ((sfd = open(stage, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    flock(sfd, LOCK_EX) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot open %s", stage);
		goto out;
	}
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "pipe");
		goto out;
	}
	(void)fcntl(pfd[1], F_SETPIPE_SZ, PIPE_SIZE);
	u.fd = pfd[0];
	u.dir = stage;
	u.content = mode == FETCH_FILE ? md_new() : NULL;
	buf_init(&u.skipped, 64 * 1024);
	rv.fd = pfd[1];
	rv.md = md_new();
	rv.buf = xmalloc(IO_CHUNK);
	rv.hook = corrupting("out");
	if (pthread_create(&thread, NULL, unpack_thread, &u) != 0) {
		sbx_error(e, SBX_EIO, NULL, "cannot start the extraction thread");
		goto out;
	}
	started = 1;
	pfd[0] = -1;		/* the thread's now */

	rc = agentc_download(a, url, recv_data, &rv, got, e);
	if (rc == 0 && recv_flush(&rv) < 0)
		rc = sbx_error(e, SBX_EIO, NULL, "the extraction stopped");
	close(pfd[1]);
	pfd[1] = -1;
	pthread_join(thread, NULL);
	started = 0;
	if (u.rc < 0 && (rc == 0 || rv.pipe_broke)) {
		*e = u.err;	/* why the extraction stopped (a full disk, a bad archive) */
		rc = -1;
	}
	if (rc < 0)
		goto out;
	hex_of(rv.md, st->sha256);
	if (got[0] != '\0' && strcasecmp(got, st->sha256) != 0) {
		rc = sbx_error(e, SBX_EAGENT, NULL, "the archive of %s arrived damaged "
		    "(sha256 %s, the agent sent %s)", what, st->sha256, got);
		goto out;
	}
	st->files = u.files;
	st->bytes = u.bytes;
	if ((rc = fault_point("copy-out.received", e)) < 0)
		goto out;
	if (mode == FETCH_FILE) {
		hex_of(u.content, st->sha256);
		rc = place_file(sfd, dest, what, e);
	} else if (into) {
		rc = merge(sfd, pdfd, dest, strrchr(stage, '/') + 1, 0, e);
		committing = 1;
	} else {
		/* A new directory: the staging becomes it. */
		(void)fchmod(sfd, 0755);
		if (renameat(pdfd, strrchr(stage, '/') + 1, AT_FDCWD, dest) == 0) {
			free(stage);
			stage = NULL;
		} else if (errno == EEXIST || errno == ENOTEMPTY) {
			_cleanup_close_ int dfd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			rc = dfd < 0 ? sbx_error_errno(e, SBX_EIO, NULL, "cannot open %s", dest) :
			    merge(sfd, dfd, dest, NULL, 0, e);
			committing = 1;
		} else {
			rc = sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", dest);
		}
	}
out:
	if (pfd[0] >= 0)
		close(pfd[0]);
	if (pfd[1] >= 0)
		close(pfd[1]);
	if (started)
		pthread_join(thread, NULL);
	if (stage != NULL && pdfd >= 0)
		rm_tree(pdfd, strrchr(stage, '/') + 1, 0);
	/* Whether anything reached dest is the caller's first question. */
	if (rc < 0 && (e->hint[0] == '\0' || !committing))
		snprintf(e->hint, sizeof e->hint, committing ? "what came before it is in %s; "
		    "copy again once the cause is fixed" : "nothing was written to %s; copy again "
		    "once the cause is fixed", dest);
	if (rv.md)
		EVP_MD_CTX_free(rv.md);
	free(rv.buf);
	if (u.content)
		EVP_MD_CTX_free(u.content);
	for (char *p = u.skipped.data, *nl; p != NULL && *p; p = nl + 1) {
		if ((nl = strchr(p, '\n')) == NULL)
			break;
		log_warnx("%.*s", (int)(nl - p), p);
	}
	buf_free(&u.skipped);
	return rc;
}
