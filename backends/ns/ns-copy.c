/* Copies of a sandbox's writable trees (its overlay upper directories and
 * /workspace) for a fork.  The tree is the sandbox's: anything in it may be a
 * link to a host file, a FIFO that blocks whoever opens it, or a name swapped
 * while we copy.  So every step is relative to a directory fd, nothing is
 * opened through a link (O_NOFOLLOW, links copied as links), regular files are
 * opened non-blocking and checked to be what fstatat said, no mount is crossed,
 * and devices other than overlay whiteouts (0:0) are left out.  Owners, modes,
 * times and extended attributes (overlay's opaque markers) go with each file;
 * file data is cloned (FICLONE) where the filesystem shares blocks, else
 * copied (copy_range: copy_file_range, or read and write across filesystems).
 * Files owned by subordinate ids are copied from a user namespace with the
 * sandbox's mapping, as ns_rmtree removes them. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "backends/ns/ns-idmap.h"
#include "backends/ns/ns.h"
#include "lib/fault.h"
#include "lib/log.h"
#include "lib/proc.h"
#include "lib/util.h"

#define COPY_MAX_DEPTH	256
#define XATTR_LIST_MAX_LEN 65536
#define XATTR_VALUE_MAX_LEN 65536

struct copy_ctx {
	const char	*src, *dst;	/* the trees, for a copy in a user namespace */
	dev_t		 dev;		/* the source tree's filesystem */
	int		 err;		/* first errno */
	char		 where[256];	/* the name it failed on */
	unsigned long	 skipped;	/* devices and sockets left out */
};

static int
fail(struct copy_ctx *k, const char *name)
{
	if (k->err == 0) {
		k->err = errno ? errno : EIO;
		snprintf(k->where, sizeof k->where, "%s", name);
	}
	return -1;
}

/* The extended attributes of src to dst, both fds of the same kind. */
static int
copy_xattrs(int src, int dst)
{
	char *names, *val;
	ssize_t n, v;
	int rc = 0;

	n = flistxattr(src, NULL, 0);
	if (n <= 0)
		return n < 0 && errno != ENOTSUP && errno != EPERM ? -1 : 0;
	if (n > XATTR_LIST_MAX_LEN)
		n = XATTR_LIST_MAX_LEN;
	names = xmalloc((size_t)n);
	val = xmalloc(XATTR_VALUE_MAX_LEN);
	if ((n = flistxattr(src, names, (size_t)n)) < 0)
		n = 0;
	for (char *p = names; p < names + n; p += strlen(p) + 1) {
		/* security.* (capabilities, SELinux labels) is the host's business. */
		if (strncmp(p, "security.", 9) == 0)
			continue;
		if ((v = fgetxattr(src, p, val, XATTR_VALUE_MAX_LEN)) < 0)
			continue;
		if (fsetxattr(dst, p, val, (size_t)v, 0) < 0 && errno != ENOTSUP &&
		    errno != EPERM)
			rc = -1;
	}
	free(names);
	free(val);
	return rc;
}

/* Owner, then mode (a chown clears set-id bits), xattrs and times of fd. */
static int
copy_meta(int src, int dst, const struct stat *st)
{
	struct timespec ts[2] = { st->st_atim, st->st_mtim };

	if (fchown(dst, st->st_uid, st->st_gid) < 0 && errno != EPERM)
		return -1;
	if (fchmod(dst, st->st_mode & 07777) < 0)
		return -1;
	if (copy_xattrs(src, dst) < 0)
		return -1;
	return futimens(dst, ts);
}

static int
copy_data(int in, int out, off_t size)
{
	/* A file that shrank meanwhile: what is there is copied. */
	if (size == 0 || ioctl(out, FICLONE, in) == 0)
		return 0;
	return copy_range(in, 0, out, 0, size) < 0 ? -1 : 0;
}

static int copy_dir(struct copy_ctx *k, int sfd, int dfd, int depth);

/* Copy the entry name of directory sfd into directory dfd. */
static int
copy_entry(struct copy_ctx *k, int sfd, int dfd, const char *name, int depth)
{
	struct stat st, fst;
	int in = -1, out = -1, rc = -1;

	if (fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : fail(k, name);
	if (st.st_dev != k->dev)
		return 0;	/* a mount point: nothing of the sandbox's own */
	switch (st.st_mode & S_IFMT) {
	case S_IFDIR:
		if (depth >= COPY_MAX_DEPTH) {
			errno = ELOOP;
			return fail(k, name);
		}
		if ((in = openat(sfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
			return fail(k, name);
		if (mkdirat(dfd, name, 0700) < 0 ||
		    (out = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
			fail(k, name);
			goto out;
		}
		if (fstat(in, &fst) < 0 || fst.st_ino != st.st_ino || fst.st_dev != st.st_dev) {
			errno = ESTALE;
			fail(k, name);
			goto out;
		}
		if (copy_dir(k, in, out, depth + 1) < 0)
			goto out;
		rc = copy_meta(in, out, &fst) < 0 ? fail(k, name) : 0;
		break;
	case S_IFREG:
		/* Non-blocking: a FIFO swapped in after the fstatat must not hang us. */
		in = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (in < 0)
			return errno == ENOENT ? 0 : fail(k, name);
		if (fstat(in, &fst) < 0 || !S_ISREG(fst.st_mode) || fst.st_ino != st.st_ino) {
			errno = ESTALE;
			fail(k, name);
			goto out;
		}
		out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (out < 0 || copy_data(in, out, fst.st_size) < 0 || copy_meta(in, out, &fst) < 0) {
			fail(k, name);
			goto out;
		}
		rc = 0;
		break;
	case S_IFLNK: {
		char target[PATH_MAX];
		struct timespec ts[2] = { st.st_atim, st.st_mtim };
		ssize_t n = readlinkat(sfd, name, target, sizeof target - 1);
		if (n < 0)
			return fail(k, name);
		target[n] = '\0';
		if (symlinkat(target, dfd, name) < 0 ||
		    (fchownat(dfd, name, st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) < 0 &&
		    errno != EPERM) || utimensat(dfd, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
			return fail(k, name);
		return 0;
	}
	case S_IFCHR:
	case S_IFBLK:
	case S_IFSOCK:
		/* Only overlay's whiteouts (0:0) mean anything in an upper directory;
		 * a sandbox cannot make a real device, and a socket is dead here. */
		if (!S_ISCHR(st.st_mode) || st.st_rdev != makedev(0, 0)) {
			k->skipped++;
			return 0;
		}
		/* FALLTHROUGH */
	case S_IFIFO: {
		struct timespec ts[2] = { st.st_atim, st.st_mtim };
		if (mknodat(dfd, name, (st.st_mode & S_IFMT) | 0600, st.st_rdev) < 0 ||
		    (fchownat(dfd, name, st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) < 0 &&
		    errno != EPERM) || fchmodat(dfd, name, st.st_mode & 07777, 0) < 0 ||
		    utimensat(dfd, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
			return fail(k, name);
		return 0;
	}
	default:
		k->skipped++;
		return 0;
	}
out:
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return rc;
}

static int
copy_dir(struct copy_ctx *k, int sfd, int dfd, int depth)
{
	int fd = dup(sfd);
	struct dirent *de;
	DIR *d;
	int rc = 0;

	if (fd < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return fail(k, ".");
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (copy_entry(k, dirfd(d), dfd, de->d_name, depth) < 0) {
			rc = -1;
			break;
		}
	}
	closedir(d);
	return rc;
}

/* The contents and metadata of directory src into the existing directory dst. */
static int
copy_here(struct copy_ctx *k, const char *src, const char *dst)
{
	struct stat st;
	_cleanup_close_ int sfd = -1, dfd = -1;

	if ((sfd = open(src, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return fail(k, src);
	if ((dfd = open(dst, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return fail(k, dst);
	if (fstat(sfd, &st) < 0)
		return fail(k, src);
	k->dev = st.st_dev;
	if (copy_dir(k, sfd, dfd, 0) < 0)
		return -1;
	return copy_meta(sfd, dfd, &st) < 0 ? fail(k, src) : 0;
}

static int
ctx_error(const struct copy_ctx *k, const char *src, struct sbx_err *e)
{
	errno = k->err;
	return sbx_error_errno(e, SBX_EIO, "destroy the half-made copy; check the disk's free "
	    "space (`df`)", "cannot copy %s (at '%s')", src, k->where);
}

static int
copy_in_ns(void *arg, void *report)
{
	struct copy_ctx *k = arg;

	(void)report;	/* k itself: the failure's place and errno */
	return copy_here(k, k->src, k->dst);
}

int
ns_copy_tree(const struct ns_idmap *m, const char *src, const char *dst, struct sbx_err *e)
{
	_cleanup_free_ char *what = NULL;
	struct copy_ctx k;
	int st, r;

	memset(&k, 0, sizeof k);
	/* As root, or when every file is ours (one uid mapped), here. */
	if (geteuid() == 0 || m->mode != NS_MAP_HELPER)
		return copy_here(&k, src, dst) < 0 ? ctx_error(&k, src, e) : 0;

	/* Files of subordinate uids: copy them as the sandbox's root, from a user
	 * namespace with its mapping (where that root may read and chown them). */
	k.src = src;
	k.dst = dst;
	what = xasprintf("copy %s", src);
	if ((r = ns_idmap_run(m, copy_in_ns, &k, &k, sizeof k, &st, what, e)) <= 0)
		return r;
	if (k.err != 0)
		return ctx_error(&k, src, e);
	return sbx_error(e, SBX_EIO, "run `sbxtop doctor` to check user namespaces",
	    "cannot copy %s from the sandbox's user namespace (status %d)", src, st);
}

int
ns_copy_sandbox(const struct ns_idmap *m, const char *from, const char *to, struct sbx_err *e)
{
	static const char *const trees[] = { "upper", "workspace" };
	_cleanup_free_ char *ovl = xasprintf("%s/ovl", to);
	struct dirent *de;
	DIR *d;
	int rc = 0;

	for (size_t i = 0; i < ARRAY_SIZE(trees); i++) {
		_cleanup_free_ char *a = xasprintf("%s/%s", from, trees[i]);
		_cleanup_free_ char *b = xasprintf("%s/%s", to, trees[i]);
		if (ns_copy_tree(m, a, b, e) < 0)
			return -1;
	}
	/* The host layers the new sandbox has (its own, made by the host), each
	 * from the source's layer of the same name when there is one. */
	if ((d = opendir(ovl)) == NULL)
		return 0;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		_cleanup_free_ char *a = xasprintf("%s/ovl/%s/upper", from, de->d_name);
		_cleanup_free_ char *b = xasprintf("%s/ovl/%s/upper", to, de->d_name);
		struct stat st;
		if (lstat(a, &st) == 0 && S_ISDIR(st.st_mode))
			rc = ns_copy_tree(m, a, b, e);
	}
	closedir(d);
	return rc;
}

/* --- a fork's copy of its source ------------------------------------------ */

/* While a fork holds its source still, DIR/.fork-hold is there, locked by
 * the forking process: a status that finds it unlocked (the forker died
 * before it thawed the source) lets the source go again (ns_fork_unhold). */
#define FORK_HOLD ".fork-hold"

static int
hold_take(const char *dir)
{
	_cleanup_free_ char *p = xasprintf("%s/" FORK_HOLD, dir);
	int fd = open(p, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd >= 0 && flock(fd, LOCK_EX) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static void
hold_drop(const char *dir, int fd)
{
	_cleanup_free_ char *p = xasprintf("%s/" FORK_HOLD, dir);

	(void)unlink(p);
	if (fd >= 0)
		close(fd);
}

int
ns_fork_unhold(struct sandbox *s, const char *dir)
{
	_cleanup_free_ char *p = xasprintf("%s/" FORK_HOLD, dir);
	_cleanup_close_ int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct sbx_err e;

	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0)
		return 0;
	if (ns_suspend_resume(s, 0, &e) < 0) {
		log_warnx("cannot thaw %s, held by a fork that died: %s", s->id, e.msg);
		return 0;
	}
	(void)unlink(p);
	log_info("thawed %s, held still by a fork whose process died", s->id);
	return 1;
}

/* The trees a sandbox writes (its root's upper directory, /workspace and the
 * upper directory of each host layer), copied from src's directory into dir
 * with src held still by the freezer meanwhile, so the copy is of one instant
 * and nothing in src moves names under it. */
int
ns_fork_copy(const struct sandbox *src, const char *dir, const struct ns_idmap *m,
    struct sbx_err *e)
{
	struct ns_data d;
	struct sandbox *held = NULL;
	struct sbx_err sub;
	int rc = -1, hold = -1;

	if (ns_data_get(src, &d, e) < 0)
		return -1;
	if (!ns_init_alive(d.pid, d.starttime, NULL)) {
		sbx_error(e, SBX_ESTATE, "`sbxtop status ID` says why", "sandbox %s is not running",
		    src->id);
		goto out;
	}
	if (src->state == SBX_RUNNING) {
		if ((hold = hold_take(d.dir)) < 0) {
			sbx_error_errno(e, SBX_EIO, NULL, "cannot mark %s as held by a fork", src->id);
			goto out;
		}
		if (ns_suspend_resume((held = sandbox_dup(src)), 1, e) < 0) {
			sandbox_free(steal_pointer(&held));
			goto out;
		}
	}
	if (fault_point("fork.ns.frozen", e) < 0)
		goto out;
	rc = ns_copy_sandbox(m, d.dir, dir, e);
	if (rc == 0 && fault_point("fork.ns.copied", e) < 0)
		rc = -1;
out:
	if (held != NULL) {
		if (ns_suspend_resume(held, 0, &sub) < 0)
			log_warnx("cannot thaw %s after copying it: %s", src->id, sub.msg);
		sandbox_free(held);
	}
	if (hold >= 0)
		hold_drop(d.dir, hold);
	free(d.dir);
	return rc;
}
