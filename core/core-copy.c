/* Copies between the host and a sandbox (core_copy_in, core_copy_out).
 *
 * Both directions go through tar.gz archives and the agent's archive routes, so
 * a file and a directory take the same path, modes survive, and binary data
 * needs no encoding; a single file coming out uses files/read instead, because
 * the archive download takes directories only.  Archives are spooled to an
 * unlinked temporary file: memory stays small whatever the size, and the sha256
 * is checked before anything is extracted on the host.
 *
 * What comes out of a sandbox is untrusted: entry names are checked (no
 * absolute names, no "..") and extraction refuses to follow symlinks, so an
 * archive cannot write outside the destination directory. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <openssl/evp.h>

#include "lib/b64.h"
#include "lib/buf.h"
#include "core/copy-guard.h"
#include "core/core-int.h"
#include "lib/log.h"
#include "core/paths.h"
#include "lib/util.h"

#define COPY_DEPTH_MAX	200
#define FILE_READ_MAX	(64 << 20)	/* the agent's files/read limit */
#define IO_CHUNK	65536

/* ---- helpers ----------------------------------------------------------- */

/* An unlinked scratch file in the cache directory (or /tmp). */
static int
scratch_fd(struct sbx_err *e)
{
	struct sbx_err sub;
	_cleanup_free_ char *dir = paths_ensure(PATHS_CACHE, &sub);
	const char *d = dir ? dir : "/tmp";
	int fd = open(d, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
		_cleanup_free_ char *t = xasprintf("%s/copy-XXXXXX", d);
		if ((fd = mkostemp(t, O_CLOEXEC)) >= 0)
			unlink(t);
	}
	if (fd < 0)
		sbx_error_errno(e, SBX_EIO, NULL, "cannot make a scratch file in %s", d);
	return fd;
}

static void
hex_of(EVP_MD_CTX *md, char hex[65])
{
	unsigned char h[32];
	unsigned int n = 0;

	EVP_DigestFinal_ex(md, h, &n);
	for (unsigned i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", h[i]);
}

/* The sandbox's view of path: {exists, type, mode, ...}. */
static cJSON *
remote_stat(struct agentc *a, const char *path, struct sbx_err *e)
{
	cJSON *req = cJSON_CreateObject(), *ans = NULL;

	cJSON_AddStringToObject(req, "path", path);
	if (agentc_call(a, "POST", "/v1/files/stat", req, 30000, &ans, e) < 0)
		ans = NULL;
	cJSON_Delete(req);
	return ans;
}

static int
is_type(const cJSON *st, const char *type)
{
	const char *t = cJSON_GetStringValue(cJSON_GetObjectItem(st, "type"));
	return cJSON_IsTrue(cJSON_GetObjectItem(st, "exists")) && t && strcmp(t, type) == 0;
}

static char *
base_of(const char *path)
{
	_cleanup_free_ char *p = xstrdup(path);
	size_t n = strlen(p);

	while (n > 1 && p[n - 1] == '/')
		p[--n] = '\0';
	return xstrdup(basename(p));
}

static char *
dir_of(const char *path)
{
	_cleanup_free_ char *p = xstrdup(path);
	size_t n = strlen(p);

	while (n > 1 && p[n - 1] == '/')
		p[--n] = '\0';
	return xstrdup(dirname(p));
}

static char *
join(const char *dir, const char *name)
{
	size_t n = strlen(dir);
	return xasprintf("%s%s%s", dir, n > 0 && dir[n - 1] == '/' ? "" : "/", name);
}

/* ---- into the sandbox -------------------------------------------------- */

struct packer {
	struct archive	*a;
	EVP_MD_CTX	*md;
	int		 fd;
	char		*buf;
	struct sbx_err	*e;
	/* Transfers (core_upload, core_download) only. */
	const char *const *exclude;	/* NULL: nothing skipped */
	uint64_t	 files, bytes;
	core_progress_fn progress;
	void		*parg;
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

	if (write_all(pk->fd, p, n) < 0) {
		archive_set_error(a, errno, "cannot write the scratch file");
		return -1;
	}
	EVP_DigestUpdate(pk->md, p, n);
	return (la_ssize_t)n;
}

/* Start a tar.gz into a scratch file, hashing what is written: the upload's
 * body and its X-Content-Sha256.  pack_free undoes it, whatever happened. */
static int
pack_open(struct packer *pk, struct sbx_err *e)
{
	if ((pk->fd = scratch_fd(e)) < 0)
		return -1;
	pk->md = EVP_MD_CTX_new();
	if (pk->md == NULL || EVP_DigestInit_ex(pk->md, EVP_sha256(), NULL) != 1)
		fatal("cannot set up sha256");
	pk->buf = xmalloc(IO_CHUNK);
	pk->a = archive_write_new();
	archive_write_add_filter_gzip(pk->a);
	/* Level 1: on a local socket the deflate time is the whole cost of a copy. */
	archive_write_set_filter_option(pk->a, "gzip", "compression-level", "1");
	archive_write_set_format_pax_restricted(pk->a);
	archive_write_set_bytes_in_last_block(pk->a, 1);
	if (archive_write_open2(pk->a, pk, NULL, pack_write, NULL, NULL) != ARCHIVE_OK)
		return sbx_error(e, SBX_EIO, NULL, "archive: %s", archive_error_string(pk->a));
	return 0;
}

/* Add the host entry dfd/name as archive name arch. */
static int pack_dir(struct packer *pk, int dfd, const char *prefix, int depth);

static int
pack_entry(struct packer *pk, int dfd, const char *name, const char *arch, int depth)
{
	struct archive_entry *ent;
	_cleanup_close_ int fd = -1;
	struct stat st;
	int rc = 0;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return sbx_error_errno(pk->e, SBX_EIO, NULL, "cannot stat %s", arch);
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode)) {
		log_warnx("skipping %s: not a file, directory or symlink", arch);
		return 0;
	}
	if (S_ISREG(st.st_mode) &&
	    ((fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    fstat(fd, &st) < 0))
		return sbx_error_errno(pk->e, SBX_EIO, NULL, "cannot read %s", arch);
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
			return sbx_error_errno(pk->e, SBX_EIO, NULL, "cannot read the link %s", arch);
		}
		target[n] = '\0';
		archive_entry_copy_symlink(ent, target);
		archive_entry_set_size(ent, 0);
	}
	if (S_ISDIR(st.st_mode))
		archive_entry_set_size(ent, 0);
	if (archive_write_header(pk->a, ent) < ARCHIVE_WARN) {
		archive_entry_free(ent);
		return sbx_error(pk->e, SBX_EIO, NULL, "archive: %s", archive_error_string(pk->a));
	}
	archive_entry_free(ent);
	for (off_t left = st.st_size; fd >= 0 && left > 0;) {
		ssize_t n = read(fd, pk->buf, left < IO_CHUNK ? (size_t)left : IO_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sbx_error_errno(pk->e, SBX_EIO, NULL, "cannot read %s", arch);
		if (n == 0)
			break;	/* shrank meanwhile: libarchive pads */
		if (archive_write_data(pk->a, pk->buf, (size_t)n) < 0)
			return sbx_error(pk->e, SBX_EIO, NULL, "archive: %s",
			    archive_error_string(pk->a));
		left -= n;
		pk->bytes += (uint64_t)n;
		if (pk->progress && pk->progress(pk->bytes, 0, "packing", pk->parg) != 0)
			return sbx_error(pk->e, SBX_EIO, NULL, "the transfer was stopped");
	}
	if (fd >= 0)
		pk->files++;
	if (S_ISDIR(st.st_mode)) {
		_cleanup_close_ int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			return sbx_error_errno(pk->e, SBX_EIO, NULL, "cannot open %s", arch);
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
		return sbx_error(pk->e, SBX_EINVAL, NULL, "%s: deeper than %d levels", prefix,
		    COPY_DEPTH_MAX);
	}
	if ((d = fdopendir(dfd)) == NULL) {
		close(dfd);
		return sbx_error_errno(pk->e, SBX_EIO, NULL, "cannot list %s", prefix);
	}
	/* Sorted, so the same tree always gives the same archive. */
	n = scandirat(dfd, ".", &names, NULL, alphasort);
	if (n < 0)
		rc = sbx_error_errno(pk->e, SBX_EIO, NULL, "cannot list %s", prefix);
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

int
core_copy_in(struct core *c, const char *key, const char *local, const char *remote,
    struct sbx_err *e)
{
	struct sandbox *s = NULL;
	struct agentc *a = NULL;
	struct packer pk = { .fd = -1, .e = e };
	cJSON *rst = NULL, *ans = NULL;
	_cleanup_free_ char *target = NULL, *upload_dir = NULL, *q = NULL, *url = NULL;
	_cleanup_free_ char *hdr = NULL, *lbase = base_of(local);
	struct stat st;
	char hex[65];
	int rc = -1, isdir;
	off_t size;

	if (copy_guard_source(local, &st, e) < 0)
		return -1;
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return sbx_error(e, SBX_EINVAL, NULL, "%s is not a file or a directory", local);
	isdir = S_ISDIR(st.st_mode);
	if (core_agent_for(c, key, &s, &a, e) < 0)
		return -1;
	agentc_set_origin(a, "cli");

	/* cp semantics: into an existing directory, under the source's own name. */
	if ((rst = remote_stat(a, remote, e)) == NULL)
		goto out;
	if (is_type(rst, "dir") || (remote[strlen(remote) - 1] == '/' &&
	    !cJSON_IsTrue(cJSON_GetObjectItem(rst, "exists"))))
		target = join(remote, lbase);
	else if (isdir && cJSON_IsTrue(cJSON_GetObjectItem(rst, "exists"))) {
		sbx_error(e, SBX_EINVAL, NULL, "cannot copy the directory %s over %s:%s, which is "
		    "not a directory", local, s->id, remote);
		goto out;
	} else
		target = xstrdup(remote);

	if (pack_open(&pk, e) < 0)
		goto out;
	if (isdir) {
		int dfd = open(local, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0) {
			sbx_error_errno(e, SBX_EIO, NULL, "cannot open %s", local);
			goto out;
		}
		upload_dir = xstrdup(target);
		if (pack_dir(&pk, dfd, "", 0) < 0)
			goto out;
	} else {
		_cleanup_free_ char *ldir = dir_of(local), *tbase = base_of(target);
		_cleanup_close_ int dfd = open(ldir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0) {
			sbx_error_errno(e, SBX_EIO, NULL, "cannot open %s", ldir);
			goto out;
		}
		upload_dir = dir_of(target);
		if (pack_entry(&pk, dfd, lbase, tbase, 0) < 0)
			goto out;
	}
	if (archive_write_close(pk.a) != ARCHIVE_OK) {
		sbx_error(e, SBX_EIO, NULL, "archive: %s", archive_error_string(pk.a));
		goto out;
	}
	hex_of(pk.md, hex);
	if ((size = lseek(pk.fd, 0, SEEK_CUR)) < 0 || lseek(pk.fd, 0, SEEK_SET) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "scratch file");
		goto out;
	}
	q = agentc_escape(upload_dir);
	url = xasprintf("/v1/archive/upload?path=%s", q);
	hdr = xasprintf("X-Content-Sha256: %s", hex);
	if (agentc_upload_fd(a, url, "application/gzip", pk.fd, (uint64_t)size, hdr, &ans,
	    e) < 0)
		goto out;
	{
		cJSON *ev = cJSON_CreateObject();
		cJSON_AddStringToObject(ev, "from", local);
		cJSON_AddStringToObject(ev, "to", target);
		core_events_emit(c, "copy.in", s->id, ev);
	}
	rc = 0;
out:
	if (pk.a)
		archive_write_free(pk.a);
	if (pk.md)
		EVP_MD_CTX_free(pk.md);
	free(pk.buf);
	if (pk.fd >= 0)
		close(pk.fd);
	cJSON_Delete(rst);
	cJSON_Delete(ans);
	agentc_free(a);
	sandbox_free(s);
	return rc;
}

/* ---- out of the sandbox ------------------------------------------------ */

static int
spool(const char *data, size_t len, void *arg, struct sbx_err *e)
{
	struct packer *pk = arg;

	if (write_all(pk->fd, data, len) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot write the scratch file");
	EVP_DigestUpdate(pk->md, data, len);
	return 0;
}

/* An entry name from the sandbox: relative, no "..", no empty components. */
static int
entry_name_ok(const char *n)
{
	if (n[0] == '/' || n[0] == '\0')
		return 0;
	for (const char *p = n; *p;) {
		const char *sl = strchrnul(p, '/');
		size_t k = (size_t)(sl - p);
		if (k == 2 && p[0] == '.' && p[1] == '.')
			return 0;
		p = *sl ? sl + 1 : sl;
	}
	return 1;
}

/* Extract the archive on fd into dir (which exists; resolved, so that the only
 * symlinks on the way are ones the archive made, and those are refused). */
static int
unpack(int fd, const char *dir, uint64_t *files, uint64_t *bytes, struct sbx_err *e)
{
	struct archive *in = archive_read_new(), *out = archive_write_disk_new();
	struct archive_entry *ent;
	int rc = 0, r;

	archive_read_support_filter_gzip(in);
	archive_read_support_format_tar(in);
	archive_write_disk_set_options(out, ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_PERM |
	    ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NODOTDOT);
	if (archive_read_open_fd(in, fd, IO_CHUNK) != ARCHIVE_OK) {
		rc = sbx_error(e, SBX_EAGENT, NULL, "the archive from the sandbox is unreadable: %s",
		    archive_error_string(in));
		goto out;
	}
	while ((r = archive_read_next_header(in, &ent)) == ARCHIVE_OK || r == ARCHIVE_WARN) {
		const char *name = archive_entry_pathname(ent), *lt;
		const void *blk;
		size_t len;
		la_int64_t off;
		mode_t t = archive_entry_filetype(ent);
		char plain[4096], why[128];

		/* copy-guard.h: no ".", "..", absolute or empty names (an entry "."
		 * would set the destination's own mode); no link out of the tree. */
		if (name == NULL || !entry_name_ok(name) ||
		    copy_guard_name(name, plain, sizeof plain, why, sizeof why) < 0 ||
		    (t != AE_IFREG && t != AE_IFDIR && t != AE_IFLNK) ||
		    archive_entry_hardlink(ent) != NULL) {
			log_warnx("skipping an archive entry from the sandbox: %s",
			    name ? name : "(no name)");
			continue;
		}
		if (t == AE_IFLNK && ((lt = archive_entry_symlink(ent)) == NULL ||
		    !copy_guard_link_inside(plain, lt))) {
			log_warnx("skipping the link %s -> %s: it points outside the copied tree",
			    plain, lt ? lt : "?");
			continue;
		}
		_cleanup_free_ char *full = xasprintf("%s/%s", dir, plain);
		archive_entry_copy_pathname(ent, full);
		/* Never take the sandbox's owners or set-id bits on the host. */
		archive_entry_set_perm(ent, archive_entry_perm(ent) & 0777);
		if (archive_write_header(out, ent) < ARCHIVE_WARN) {
			rc = sbx_error(e, SBX_EIO, NULL, "cannot extract %s: %s", full,
			    archive_error_string(out));
			goto out;
		}
		while ((r = archive_read_data_block(in, &blk, &len, &off)) == ARCHIVE_OK) {
			if (archive_write_data_block(out, blk, len, off) < ARCHIVE_WARN) {
				rc = sbx_error(e, SBX_EIO, NULL, "cannot write %s: %s", full,
				    archive_error_string(out));
				goto out;
			}
			if (bytes)
				*bytes += len;
		}
		if (files && t == AE_IFREG)
			(*files)++;
		if (r != ARCHIVE_EOF) {
			rc = sbx_error(e, SBX_EAGENT, NULL, "the archive from the sandbox is "
			    "damaged: %s", archive_error_string(in));
			goto out;
		}
		if (archive_write_finish_entry(out) < ARCHIVE_WARN) {
			rc = sbx_error(e, SBX_EIO, NULL, "cannot finish %s: %s", full,
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

static int
copy_out_file(struct agentc *a, const char *remote, const char *dest, mode_t mode,
    struct core_xfer_result *res, struct sbx_err *e)
{
	cJSON *req = cJSON_CreateObject(), *ans = NULL;
	_cleanup_free_ unsigned char *data = NULL;
	_cleanup_free_ char *tmp = NULL;
	_cleanup_close_ int fd = -1;
	const char *b64;
	size_t len;

	cJSON_AddStringToObject(req, "path", remote);
	cJSON_AddStringToObject(req, "encoding", "base64");
	cJSON_AddNumberToObject(req, "max_bytes", FILE_READ_MAX);
	if (agentc_call(a, "POST", "/v1/files/read", req, 0, &ans, e) < 0) {
		cJSON_Delete(req);
		return -1;
	}
	cJSON_Delete(req);
	if (cJSON_IsTrue(cJSON_GetObjectItem(ans, "truncated"))) {
		cJSON_Delete(ans);
		return sbx_error(e, SBX_EINVAL, "copy the directory that holds it instead",
		    "%s is larger than %d MiB, the most a single file copy takes", remote,
		    FILE_READ_MAX >> 20);
	}
	b64 = cJSON_GetStringValue(cJSON_GetObjectItem(ans, "content"));
	data = b64 ? b64_decode(b64, strlen(b64), &len) : NULL;
	cJSON_Delete(ans);
	if (data == NULL)
		return sbx_error(e, SBX_EAGENT, NULL, "the agent sent a file that is not base64");
	/* Write beside the destination and rename, so a failure leaves the old file. */
	tmp = xasprintf("%s.sbxtop-XXXXXX", dest);
	if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot write %s", dest);
	if (write_all(fd, data, len) < 0 || fchmod(fd, mode & 0777) < 0 ||
	    rename(tmp, dest) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot write %s", dest);
		unlink(tmp);
		return -1;
	}
	if (res != NULL) {
		unsigned char h[32];
		EVP_Digest(data, len, h, NULL, EVP_sha256(), NULL);
		for (unsigned i = 0; i < 32; i++)
			snprintf(res->sha256 + 2 * i, 3, "%02x", h[i]);
		res->bytes = len;
		res->files = 1;
	}
	return 0;
}

/* Fetch the agent's tar.gz of from (at url) into pk's scratch file through
 * feed(arg) (spool, or a wrapper of it), check it against the agent's sha256
 * trailer and unpack it into the directory dest, made when missing; digest
 * gets the archive's sha256, files and bytes (may be NULL) what it held. */
static int
fetch_tree(struct agentc *a, const struct sandbox *s, const char *from, const char *url,
    agentc_data_fn feed, void *arg, struct packer *pk, const char *dest, char digest[65],
    uint64_t *files, uint64_t *bytes, struct sbx_err *e)
{
	_cleanup_free_ char *real = NULL;
	char got[65] = "";

	if ((pk->fd = scratch_fd(e)) < 0)
		return -1;
	pk->md = EVP_MD_CTX_new();
	if (pk->md == NULL || EVP_DigestInit_ex(pk->md, EVP_sha256(), NULL) != 1)
		fatal("cannot set up sha256");
	if (agentc_download(a, url, feed, arg, got, e) < 0)
		return -1;
	hex_of(pk->md, digest);
	if (got[0] != '\0' && strcasecmp(got, digest) != 0)
		return sbx_error(e, SBX_EAGENT, "retry the copy", "the archive of %s:%s arrived "
		    "damaged (sha256 %s, the agent sent %s)", s->id, from, digest, got);
	if (lseek(pk->fd, 0, SEEK_SET) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "scratch file");
	/* Never into a link at dest (copy-guard.h); below it, libarchive's
	 * SECURE_SYMLINKS refuses every link on the way. */
	_cleanup_close_ int dfd = copy_guard_dest_open(dest, 1, e);
	if (dfd < 0)
		return -1;
	if ((real = realpath(dest, NULL)) == NULL)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot resolve %s", dest);
	return unpack(pk->fd, real, files, bytes, e);
}

int
core_copy_out(struct core *c, const char *key, const char *remote, const char *local,
    struct sbx_err *e)
{
	struct sandbox *s = NULL;
	struct agentc *a = NULL;
	struct packer pk = { .fd = -1, .e = e };
	cJSON *rst = NULL;
	_cleanup_free_ char *dest = NULL, *rbase = base_of(remote), *q = NULL, *url = NULL;
	char want[65];
	struct stat st;
	int rc = -1, local_dir;

	if (core_agent_for(c, key, &s, &a, e) < 0)
		return -1;
	agentc_set_origin(a, "cli");
	if ((rst = remote_stat(a, remote, e)) == NULL)
		goto out;
	if (!cJSON_IsTrue(cJSON_GetObjectItem(rst, "exists"))) {
		sbx_error(e, SBX_ENOTFOUND, NULL, "%s:%s does not exist", s->id, remote);
		goto out;
	}
	local_dir = stat(local, &st) == 0 && S_ISDIR(st.st_mode);
	if (local_dir)
		dest = join(local, rbase);
	else if (local[strlen(local) - 1] == '/') {
		sbx_error(e, SBX_ENOTFOUND, NULL, "no such directory: %s", local);
		goto out;
	} else
		dest = xstrdup(local);

	if (!is_type(rst, "dir")) {
		double m = cJSON_GetNumberValue(cJSON_GetObjectItem(rst, "mode"));
		rc = copy_out_file(a, remote, dest, isnan(m) ? 0644 : (mode_t)m, NULL, e);
		goto done;
	}
	if (stat(dest, &st) == 0 && !S_ISDIR(st.st_mode)) {
		sbx_error(e, SBX_EINVAL, NULL, "cannot copy the directory %s:%s over %s, which is "
		    "not a directory", s->id, remote, dest);
		goto out;
	}
	/* exclude= (empty): a copy takes everything, unlike the agent's default. */
	q = agentc_escape(remote);
	url = xasprintf("/v1/archive/download?path=%s&exclude=", q);
	rc = fetch_tree(a, s, remote, url, spool, &pk, &pk, dest, want, NULL, NULL, e);
done:
	if (rc == 0) {
		cJSON *ev = cJSON_CreateObject();
		cJSON_AddStringToObject(ev, "from", remote);
		cJSON_AddStringToObject(ev, "to", dest);
		core_events_emit(c, "copy.out", s->id, ev);
	}
out:
	if (pk.md)
		EVP_MD_CTX_free(pk.md);
	if (pk.fd >= 0)
		close(pk.fd);
	cJSON_Delete(rst);
	agentc_free(a);
	sandbox_free(s);
	return rc;
}

/* ---- transfers: contents of a directory, with excludes and a digest ------ */

const char *const core_exclude_default[] = {
	".git", "node_modules", ".venv", "__pycache__", "dist", "target", NULL,
};

#define EXCLUDE_MAX 64

static int
exclude_check(const char *const *x, struct sbx_err *e)
{
	size_t n = 0;

	for (; x != NULL && *x != NULL; x++, n++) {
		if (n >= EXCLUDE_MAX)
			return sbx_error(e, SBX_EINVAL, NULL, "exclude: at most %d names",
			    EXCLUDE_MAX);
		if ((*x)[0] == '\0' || strpbrk(*x, "/,") != NULL || strlen(*x) > 255)
			return sbx_error(e, SBX_EINVAL, "give file or directory names such as "
			    "\"node_modules\", not paths", "exclude: '%s' is not a name", *x);
	}
	return 0;
}

struct xfer_prog {
	const struct core_xfer_opts	*o;
	uint64_t			 total;
	const char			*what;
};

static int
xfer_prog(void *arg, uint64_t down, uint64_t up)
{
	struct xfer_prog *p = arg;

	return p->o->progress(up > down ? up : down, p->total, p->what, p->o->arg);
}

void
core_xfer_result_free(struct core_xfer_result *res)
{
	free(res->path);
	res->path = NULL;
}

int
core_upload(struct core *c, const char *key, const char *local, const char *remote,
    const struct core_xfer_opts *o, struct core_xfer_result *res, struct sbx_err *e)
{
	struct sandbox *s = NULL;
	struct agentc *a = NULL;
	struct packer pk = { NULL, NULL, -1, NULL, e, NULL, 0, 0, NULL, NULL };
	struct xfer_prog xp = { o, 0, "uploading" };
	cJSON *ans = NULL;
	_cleanup_free_ char *q = NULL, *url = NULL, *hdr = NULL;
	const char *where = remote ? remote : "/workspace";
	struct stat st;
	int rc = -1;
	off_t size;

	memset(res, 0, sizeof *res);
	pk.exclude = o->exclude ? o->exclude : core_exclude_default;
	pk.progress = o->progress;
	pk.parg = o->arg;
	if (exclude_check(o->exclude, e) < 0)
		return -1;
	if (copy_guard_source(local, &st, e) < 0)
		return -1;
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return sbx_error(e, SBX_EINVAL, NULL, "%s is not a file or a directory", local);
	if (core_agent_for(c, key, &s, &a, e) < 0)
		return -1;
	agentc_set_origin(a, o->origin ? o->origin : "cli");

	if (pack_open(&pk, e) < 0)
		goto out;
	if (S_ISDIR(st.st_mode)) {
		int dfd = open(local, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0) {
			sbx_error_errno(e, SBX_EIO, NULL, "cannot open %s", local);
			goto out;
		}
		if (pack_dir(&pk, dfd, "", 0) < 0)
			goto out;
	} else {
		_cleanup_free_ char *ldir = dir_of(local), *lbase = base_of(local);
		_cleanup_close_ int dfd = open(ldir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0) {
			sbx_error_errno(e, SBX_EIO, NULL, "cannot open %s", ldir);
			goto out;
		}
		if (pack_entry(&pk, dfd, lbase, lbase, 0) < 0)
			goto out;
	}
	if (archive_write_close(pk.a) != ARCHIVE_OK) {
		sbx_error(e, SBX_EIO, NULL, "archive: %s", archive_error_string(pk.a));
		goto out;
	}
	hex_of(pk.md, res->sha256);
	if ((size = lseek(pk.fd, 0, SEEK_CUR)) < 0 || lseek(pk.fd, 0, SEEK_SET) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "scratch file");
		goto out;
	}
	if (o->progress) {
		xp.total = (uint64_t)size;
		agentc_set_progress(a, xfer_prog, &xp);
	}
	q = agentc_escape(where);
	url = xasprintf("/v1/archive/upload?path=%s", q);
	hdr = xasprintf("X-Content-Sha256: %s", res->sha256);
	if (agentc_upload_fd(a, url, "application/gzip", pk.fd, (uint64_t)size, hdr, &ans,
	    e) < 0)
		goto out;
	{
		const char *p = cJSON_GetStringValue(cJSON_GetObjectItem(ans, "path"));
		double f = cJSON_GetNumberValue(cJSON_GetObjectItem(ans, "files"));
		double b = cJSON_GetNumberValue(cJSON_GetObjectItem(ans, "bytes"));
		cJSON *ev = cJSON_CreateObject();
		res->path = xstrdup(p ? p : where);
		res->files = isnan(f) ? pk.files : (uint64_t)f;
		res->bytes = isnan(b) ? pk.bytes : (uint64_t)b;
		cJSON_AddStringToObject(ev, "from", local);
		cJSON_AddStringToObject(ev, "to", res->path);
		cJSON_AddNumberToObject(ev, "files", (double)res->files);
		cJSON_AddNumberToObject(ev, "bytes", (double)res->bytes);
		core_events_emit(c, "copy.in", s->id, ev);
	}
	rc = 0;
out:
	if (pk.a)
		archive_write_free(pk.a);
	if (pk.md)
		EVP_MD_CTX_free(pk.md);
	free(pk.buf);
	if (pk.fd >= 0)
		close(pk.fd);
	cJSON_Delete(ans);
	agentc_free(a);
	sandbox_free(s);
	if (rc < 0)
		core_xfer_result_free(res);
	return rc;
}

struct spooler {
	struct packer			*pk;
	const struct core_xfer_opts	*o;
	uint64_t			 got;
};

static int
spool_prog(const char *data, size_t len, void *arg, struct sbx_err *e)
{
	struct spooler *sp = arg;

	if (spool(data, len, sp->pk, e) < 0)
		return -1;
	sp->got += len;
	if (sp->o->progress && sp->o->progress(sp->got, 0, "downloading", sp->o->arg) != 0)
		return sbx_error(e, SBX_EIO, NULL, "the transfer was stopped");
	return 0;
}

/* "a,b,c" for the agent's exclude query (names are checked: no ',' in them). */
static char *
exclude_query(const char *const *x)
{
	struct buf b;

	buf_init(&b, 64 * 1024);
	buf_append(&b, "", 0);
	for (size_t i = 0; x[i] != NULL; i++) {
		_cleanup_free_ char *q = agentc_escape(x[i]);
		if (i > 0)
			buf_append(&b, ",", 1);
		buf_append(&b, q, strlen(q));
	}
	return buf_steal(&b);
}

int
core_download(struct core *c, const char *key, const char *remote, const char *local,
    const struct core_xfer_opts *o, struct core_xfer_result *res, struct sbx_err *e)
{
	struct sandbox *s = NULL;
	struct agentc *a = NULL;
	struct packer pk = { NULL, NULL, -1, NULL, e, NULL, 0, 0, NULL, NULL };
	struct spooler sp = { &pk, o, 0 };
	cJSON *rst = NULL;
	const char *from = remote ? remote : "/workspace";
	_cleanup_free_ char *dest = NULL, *parent = NULL, *q = NULL, *xq = NULL, *url = NULL;
	struct stat st;
	int rc = -1;

	memset(res, 0, sizeof *res);
	if (exclude_check(o->exclude, e) < 0)
		return -1;
	if (local[0] != '/')
		return sbx_error(e, SBX_EINVAL, "give an absolute host path",
		    "%s is not an absolute path", local);
	parent = dir_of(local);
	if (stat(parent, &st) < 0 || !S_ISDIR(st.st_mode))
		return sbx_error(e, SBX_ENOTFOUND, "create the directory first, or choose "
		    "another local_path", "the host directory %s does not exist", parent);
	if (core_agent_for(c, key, &s, &a, e) < 0)
		return -1;
	agentc_set_origin(a, o->origin ? o->origin : "cli");
	if ((rst = remote_stat(a, from, e)) == NULL)
		goto out;
	if (!cJSON_IsTrue(cJSON_GetObjectItem(rst, "exists"))) {
		sbx_error(e, SBX_ENOTFOUND, "sandbox_list_files shows what is there",
		    "%s does not exist in sandbox %s", from, s->id);
		goto out;
	}
	if (!is_type(rst, "dir")) {
		double m = cJSON_GetNumberValue(cJSON_GetObjectItem(rst, "mode"));
		if (is_type(rst, "symlink") || !is_type(rst, "file")) {
			sbx_error(e, SBX_EINVAL, NULL, "%s in sandbox %s is not a file or a directory",
			    from, s->id);
			goto out;
		}
		if (stat(local, &st) == 0 && S_ISDIR(st.st_mode)) {
			_cleanup_free_ char *b = base_of(from);
			dest = join(local, b);
		} else {
			dest = xstrdup(local);
		}
		if (stat(dest, &st) == 0 && S_ISDIR(st.st_mode)) {
			sbx_error(e, SBX_EINVAL, "choose another local_path", "%s is a directory",
			    dest);
			goto out;
		}
		rc = copy_out_file(a, from, dest, isnan(m) ? 0644 : (mode_t)m, res, e);
		goto done;
	}
	dest = xstrdup(local);
	if (lstat(dest, &st) == 0 && !S_ISDIR(st.st_mode)) {
		/* Never through a symlink, never over a file: only the target is written. */
		sbx_error(e, SBX_EINVAL, "choose a new path or an existing directory",
		    "%s exists and is not a directory", dest);
		goto out;
	}
	q = agentc_escape(from);
	xq = exclude_query(o->exclude ? o->exclude : core_exclude_default);
	url = xasprintf("/v1/archive/download?path=%s&exclude=%s", q, xq);
	rc = fetch_tree(a, s, from, url, spool_prog, &sp, &pk, dest, res->sha256, &res->files,
	    &res->bytes, e);
done:
	if (rc == 0) {
		cJSON *ev = cJSON_CreateObject();
		res->path = xstrdup(dest);
		cJSON_AddStringToObject(ev, "from", from);
		cJSON_AddStringToObject(ev, "to", dest);
		cJSON_AddNumberToObject(ev, "files", (double)res->files);
		cJSON_AddNumberToObject(ev, "bytes", (double)res->bytes);
		core_events_emit(c, "copy.out", s->id, ev);
	}
out:
	if (pk.md)
		EVP_MD_CTX_free(pk.md);
	if (pk.fd >= 0)
		close(pk.fd);
	cJSON_Delete(rst);
	agentc_free(a);
	sandbox_free(s);
	if (rc < 0)
		core_xfer_result_free(res);
	return rc;
}
