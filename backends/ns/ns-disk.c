/* The ns backend's disk limit.  As root, a sandbox's directory is the mount
 * point of a filesystem of its own: ext4 in a sparse file of the limit's size
 * on a loop device, so everything it writes (the overlay upper and work
 * directories, /workspace, its logs) is inside it and a write past the limit
 * gets ENOSPC there, while the filesystem that holds the state directory
 * only ever gives it what the file holds.
 *
 * One template per size is made by mke2fs (no journal, no reserved blocks,
 * no blocks kept for growing it, inode tables left to the file's holes, which
 * read as zeros: 172 KiB of data for 4 GiB) under
 * <sandboxes>/.disk/, and each sandbox gets a sparse copy of it (a reflink
 * where the filesystem shares blocks).  The file is unlinked as soon as the
 * loop device holds it, and the device has LO_FLAGS_AUTOCLEAR: the unmount
 * at destroy frees the device and then the file's blocks, and a create that
 * dies half-way leaves a file in its directory (removed with it) or a mount
 * (which gc's teardown unmounts), never a loop device of its own.
 *
 * A process that outlives its creates (the core server: ns_disk_keep_ready)
 * keeps SPARES filesystems ready for the next creates, of the size the last
 * one asked for (one was not enough: a pool's refill, or a script's second
 * create right after its first, then made its own, 15-40 ms): a detached mount (fsmount) on a loop device whose file never had
 * a name (O_TMPFILE in the sandboxes' directory), which the create attaches
 * (move_mount) instead of copying, binding and mounting in its own time, with
 * the directories a sandbox's directory starts with already in it, owned as
 * the creates of this server own them (ns_layout_make; about a millisecond
 * of a create, made there).  It is made for nobody in particular and used once; the server's end, however
 * it ends, takes it along, since nothing of it is named anywhere.
 *
 * An ordinary user can mount neither; there the limit is RLIMIT_FSIZE (no
 * file above it, ns-harden.c) and the core server's watcher, which suspends a
 * sandbox whose layers hold more (core/core-usage.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/loop.h>
#include <linux/mount.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/ns/ns.h"
#include "backends/ns/ns-idmap.h"
#include "backends/ns/ns-rootfs.h"
#include "core/paths.h"
#include "lib/log.h"
#include "lib/util.h"

#define DISK_FILE	".disk"
#define DISK_MIN_MIB	8
#define TEMPLATE_VERSION 1	/* in the templates' names: a change of mke2fs options */
#define LOOP_TRIES	64
#define SPARE_AFTER_MS	100	/* a refill waits this long after a take: the create goes first */
#define SPARES		2	/* kept ready at once */
/* What this host does not allow (no ext4, a root without CAP_SYS_ADMIN in a
 * container): the limit falls back to what an ordinary user gets, and the
 * note says why.  Anything else fails the create. */
#define NOT_HERE(err)	((err) == ENODEV || (err) == EPERM || (err) == EACCES || \
			 (err) == ENXIO || (err) == ENOENT ? SBX_EUNSUPPORTED : SBX_EBACKEND)

static const char *const mke2fs_paths[] = { "/usr/sbin/mke2fs", "/sbin/mke2fs",
    "/usr/bin/mke2fs" };

/* Where the templates are: beside the images, a cache like them. */
static char *
templates_dir(struct sbx_err *e)
{
	_cleanup_free_ char *data = paths_dir(PATHS_DATA, e);

	return data ? xasprintf("%s/images/disks", data) : NULL;
}

/* The template of mib MiB, made once (under a lock, then renamed into
 * place).  *path is its name (caller frees). */
static int
template_ensure(int64_t mib, char **path, struct sbx_err *e)
{
	_cleanup_free_ char *tdir = templates_dir(e);
	_cleanup_free_ char *final = NULL;
	_cleanup_free_ char *tmp = NULL, *lp = NULL;
	_cleanup_close_ int lock = -1;
	char size[32], *argv[16];
	char *envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
	const char *tool = NULL;
	struct stat st;
	pid_t child;
	int rc, status, argc = 0;

	if (tdir == NULL)
		return -1;
	final = xasprintf("%s/%lld-%d.ext4", tdir, (long long)mib, TEMPLATE_VERSION);
	if (stat(final, &st) == 0 && S_ISREG(st.st_mode)) {
		*path = steal_pointer(&final);
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(mke2fs_paths) && tool == NULL; i++)
		if (access(mke2fs_paths[i], X_OK) == 0)
			tool = mke2fs_paths[i];
	if (tool == NULL)
		return sbx_error(e, SBX_EUNSUPPORTED, "install e2fsprogs, or create with --disk 0",
		    "mke2fs not found: no filesystem for the disk limit");
	if (mkdir_p(tdir, 0700) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", tdir);
	lp = xasprintf("%s/.lock", tdir);
	if ((lock = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0 || flock(lock, LOCK_EX) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot lock %s", lp);
	if (stat(final, &st) == 0 && S_ISREG(st.st_mode)) {
		*path = steal_pointer(&final);
		return 0;
	}
	tmp = xasprintf("%s/.%lld.%d", tdir, (long long)mib, (int)getpid());
	(void)unlink(tmp);
	snprintf(size, sizeof size, "%lldm", (long long)mib);
	argv[argc++] = "mke2fs";
	argv[argc++] = "-q";
	argv[argc++] = "-F";
	argv[argc++] = "-t";
	argv[argc++] = "ext4";
	argv[argc++] = "-O";
	argv[argc++] = "^has_journal,^resize_inode";
	argv[argc++] = "-m";
	argv[argc++] = "0";
	argv[argc++] = "-E";
	argv[argc++] = "lazy_itable_init=1,nodiscard";
	argv[argc++] = tmp;
	argv[argc++] = size;
	argv[argc] = NULL;
	/* posix_spawn: the core server has threads, and the child only execs.
	 * Its output goes to a file beside the template (our stdout may be a
	 * protocol: --mcp), read back if it fails. */
	_cleanup_free_ char *errf = xasprintf("%s.err", tmp);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, errf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	rc = posix_spawn(&child, tool, &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0) {
		errno = rc;
		return sbx_error_errno(e, SBX_EBACKEND, NULL, "cannot run %s", tool);
	}
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || rename(tmp, final) < 0) {
		/* A host whose mke2fs cannot make it (an old one, a filesystem
		 * without sparse files) still makes sandboxes: as an ordinary
		 * user's, with the note saying why. */
		_cleanup_free_ char *msg = read_file(errf, 512, NULL);
		char *nl = msg != NULL ? strchr(msg, '\n') : NULL;
		if (nl != NULL)
			*nl = '\0';
		(void)unlink(tmp);
		(void)unlink(errf);
		return sbx_error(e, SBX_EUNSUPPORTED, "run `mke2fs -t ext4 FILE SIZE` to see why, or "
		    "create with --disk 0", "mke2fs of a %lld MiB filesystem failed (status %d%s%s)",
		    (long long)mib, status, msg != NULL && *msg ? ": " : "", msg ? msg : "");
	}
	(void)unlink(errf);
	*path = steal_pointer(&final);
	return 0;
}

/* Copy template into the empty file out: a reflink where the filesystem
 * shares blocks, else its data extents only, so the copy stays sparse. */
static int
sparse_copy(const char *template, int out, struct sbx_err *e)
{
	_cleanup_close_ int in = open(template, O_RDONLY | O_CLOEXEC);
	struct stat st;
	off_t pos = 0, end;

	if (in < 0 || fstat(in, &st) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot open %s", template);
	if (ioctl(out, FICLONE, in) == 0)
		return 0;
	while ((pos = lseek(in, pos, SEEK_DATA)) >= 0 && pos < st.st_size) {
		if ((end = lseek(in, pos, SEEK_HOLE)) < 0)
			end = st.st_size;
		if (copy_range(in, pos, out, pos, end - pos) != end - pos)
			return sbx_error_errno(e, SBX_EIO, NULL, "cannot copy %s", template);
		pos = end;
	}
	if (ftruncate(out, st.st_size) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot size a copy of %s", template);
	return 0;
}

/* A free loop device bound to fd (autoclear, direct I/O where it works);
 * its name in dev. */
static int
loop_attach(int fd, char *dev, size_t len, struct sbx_err *e)
{
	_cleanup_close_ int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);

	if (ctl < 0)
		return sbx_error_errno(e, SBX_EUNSUPPORTED, "create with --disk 0",
		    "no loop devices (/dev/loop-control)");
	for (int tries = 0, busy = -1; tries < LOOP_TRIES; tries++) {
		struct loop_config c;
		int n = ioctl(ctl, LOOP_CTL_GET_FREE), lfd;

		if (n < 0)
			return sbx_error_errno(e, NOT_HERE(errno), NULL, "no free loop device");
		/* GET_FREE names a device that another create took a moment ago,
		 * or one an unmount is still letting go of (autoclear runs after
		 * the last close): go past the busy ones, adding devices. */
		if (n <= busy && ioctl(ctl, LOOP_CTL_ADD, (n = busy + 1)) < 0 && errno != EEXIST)
			return sbx_error_errno(e, SBX_EBACKEND, NULL, "cannot add loop device %d", n);
		snprintf(dev, len, "/dev/loop%d", n);
		if ((lfd = open(dev, O_RDWR | O_CLOEXEC)) < 0 && errno == ENOENT &&
		    mknod(dev, S_IFBLK | 0600, makedev(7, (unsigned)n)) == 0)
			lfd = open(dev, O_RDWR | O_CLOEXEC);
		if (lfd < 0)
			return sbx_error_errno(e, NOT_HERE(errno), NULL, "cannot open %s", dev);
		memset(&c, 0, sizeof c);
		c.fd = (unsigned)fd;
		c.info.lo_flags = LO_FLAGS_AUTOCLEAR | LO_FLAGS_DIRECT_IO;
		if (ioctl(lfd, LOOP_CONFIGURE, &c) == 0)
			return lfd;
		c.info.lo_flags = LO_FLAGS_AUTOCLEAR;
		if (errno == EINVAL && ioctl(lfd, LOOP_CONFIGURE, &c) == 0)
			return lfd;
		int err = errno;
		close(lfd);
		/* EBUSY: another create took it between GET_FREE and ours. */
		if ((errno = err) != EBUSY)
			return sbx_error_errno(e, SBX_EBACKEND, NULL, "cannot set up %s", dev);
		busy = n;
	}
	return sbx_error(e, SBX_EBACKEND, "try again", "no loop device stayed free for us");
}

/* dir, the mount point of the sandbox's new filesystem, is the sandbox's. */
static int
disk_own(const char *dir, uid_t uid, gid_t gid, int *lock_fd, struct sbx_err *e)
{
	if (chown(dir, uid, gid) < 0 || chmod(dir, 0700) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot chown %s", dir);
		(void)ns_disk_detach(dir);
		close(*lock_fd);
		*lock_fd = -1;
		return -1;
	}
	return 0;
}

/* ---- the spare ----------------------------------------------------------- */

static struct {
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;
	pthread_t	 keeper;
	int		 on;		/* ns_disk_keep_ready(1), and not (0) since */
	int		 cannot;	/* this host makes none: stop trying */
	int64_t		 want;		/* the size to keep ready (the last create's) */
	char		*root;		/* where its file is: the sandboxes' directory */
	int64_t		 taken_ms;	/* when a create last took one */
	int64_t		 mib;		/* the spares' size */
	uid_t		 uid;		/* the owner of their directories */
	gid_t		 gid;
	int		 fd[SPARES];	/* their detached mounts */
	int		 n;
} spare = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

/* The ext4 on dev mounted detached (fsmount), lost+found gone (it would only
 * be one more directory for the sandbox's diff): its mount's fd. */
static int
mount_detached(const char *dev, struct sbx_err *e)
{
	_cleanup_close_ int fs = -1;
	int mfd;

	if ((fs = (int)syscall(SYS_fsopen, "ext4", FSOPEN_CLOEXEC)) < 0 ||
	    syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "source", dev, 0) < 0 ||
	    syscall(SYS_fsconfig, fs, FSCONFIG_SET_FLAG, "noinit_itable", NULL, 0) < 0 ||
	    syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0 ||
	    (mfd = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC,
	    MOUNT_ATTR_NODEV | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOATIME)) < 0)
		return sbx_error_errno(e, NOT_HERE(errno), "run `sbxtop doctor`, or create with "
		    "--disk 0", "cannot mount the sandbox's filesystem (%s)", dev);
	(void)unlinkat(mfd, "lost+found", AT_REMOVEDIR);
	return mfd;
}

/* The detached mount mfd attached on dir, its root locked first (*lock_fd):
 * gc, which takes an unlocked sandbox directory for a dead create's, never
 * sees it unlocked. */
static int
attach_locked(int mfd, const char *dir, int *lock_fd)
{
	int root = openat(mfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (root < 0 || flock(root, LOCK_EX) < 0 ||
	    syscall(SYS_move_mount, mfd, "", AT_FDCWD, dir, MOVE_MOUNT_F_EMPTY_PATH) < 0) {
		int err = errno;
		if (root >= 0)
			close(root);
		errno = err;
		return -1;
	}
	*lock_fd = root;
	return 0;
}

/* A filesystem of mib MiB, detached, its file unnamed in root, with the
 * directories of a sandbox of the default image in it, owned by the sandbox's
 * root as this server maps it (*uid, *gid): its mount's fd. */
static int
spare_make(const char *root, int64_t mib, uid_t *uid, gid_t *gid, struct sbx_err *e)
{
	_cleanup_free_ char *template = NULL;
	_cleanup_close_ int img = -1, lfd = -1, dfd = -1;
	const char *hosts[NS_MAX_HOST_DIRS];
	struct ns_idmap map;
	char dev[32], what[64];
	int mfd;

	if (ns_idmap_choose(&map, e) < 0 || template_ensure(mib, &template, e) < 0)
		return -1;
	if ((img = open(root, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600)) < 0)
		return sbx_error_errno(e, SBX_EUNSUPPORTED, NULL, "no unnamed file in %s", root);
	if (sparse_copy(template, img, e) < 0 || (lfd = loop_attach(img, dev, sizeof dev, e)) < 0 ||
	    (mfd = mount_detached(dev, e)) < 0)
		return -1;
	*uid = map.mode == NS_MAP_ROOT ? map.uid_base : (uid_t)-1;
	*gid = map.gid_base;
	if ((dfd = openat(mfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    ns_layout_make(dfd, hosts, ns_host_dirs(hosts), *uid, *gid, 0, what) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot make %s in a spare disk", what);
		close(mfd);
		return -1;
	}
	return mfd;
}

/* The keeper: SPARES of the size wanted, made a moment after a take. */
static void *
spare_keeper(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&spare.mu);
	while (spare.on) {
		int64_t mib = spare.want, wait = spare.taken_ms + SPARE_AFTER_MS - now_ms();
		char *root;
		int old[SPARES], nold = 0, fd;
		struct sbx_err e;

		if (spare.cannot || mib <= 0 || (spare.n == SPARES && spare.mib == mib)) {
			pthread_cond_wait(&spare.cv, &spare.mu);
			continue;
		}
		uid_t uid = (uid_t)-1;
		gid_t gid = (gid_t)-1;

		root = xstrdup(spare.root);
		while (spare.n > 0 && spare.mib != mib)
			old[nold++] = spare.fd[--spare.n];
		spare.mib = mib;
		pthread_mutex_unlock(&spare.mu);
		while (nold > 0)
			close(old[--nold]);
		if (wait > 0)
			usleep((useconds_t)wait * 1000);
		fd = spare_make(root, mib, &uid, &gid, &e);
		free(root);
		pthread_mutex_lock(&spare.mu);
		if (fd < 0) {
			/* Unsupported: never here; anything else: again at the next create. */
			log_debug("ns: no spare disk of %lld MiB: %s", (long long)mib, e.msg);
			spare.cannot = e.code == SBX_EUNSUPPORTED;
			spare.want = spare.want == mib ? 0 : spare.want;
		} else if (spare.n == SPARES || spare.mib != mib || !spare.on ||
		    (spare.n > 0 && (spare.uid != uid || spare.gid != gid))) {
			close(fd);
		} else {
			spare.uid = uid;
			spare.gid = gid;
			spare.fd[spare.n++] = fd;
		}
	}
	pthread_mutex_unlock(&spare.mu);
	return NULL;
}

void
ns_disk_keep_ready(int on)
{
	pthread_mutex_lock(&spare.mu);
	if (on && !spare.on) {
		spare.on = pthread_create(&spare.keeper, NULL, spare_keeper, NULL) == 0;
		pthread_mutex_unlock(&spare.mu);
		return;
	}
	if (on || !spare.on) {
		pthread_mutex_unlock(&spare.mu);
		return;
	}
	spare.on = 0;
	pthread_cond_signal(&spare.cv);
	pthread_mutex_unlock(&spare.mu);
	pthread_join(spare.keeper, NULL);
	pthread_mutex_lock(&spare.mu);
	while (spare.n > 0)
		close(spare.fd[--spare.n]);
	spare.want = 0;
	free(spare.root);
	spare.root = NULL;
	pthread_mutex_unlock(&spare.mu);
}

/* A spare for a create of mib MiB in dir whose directories are uid's (-1:
 * none); either way, the keeper makes the next ones of this size. */
static int
spare_take(const char *dir, int64_t mib, uid_t uid, gid_t gid)
{
	const char *slash = strrchr(dir, '/');
	int fd = -1;

	pthread_mutex_lock(&spare.mu);
	if (spare.on && slash != NULL) {
		if (spare.n > 0 && spare.mib == mib && spare.uid == uid && spare.gid == gid)
			fd = spare.fd[--spare.n];
		free(spare.root);
		spare.root = xstrndup(dir, (size_t)(slash - dir));
		spare.want = mib;
		spare.taken_ms = now_ms();
		pthread_cond_signal(&spare.cv);
	}
	pthread_mutex_unlock(&spare.mu);
	return fd;
}

int
ns_disk_attach(const char *dir, int64_t mib, uid_t uid, gid_t gid, int *lock_fd,
    struct sbx_err *e)
{
	_cleanup_free_ char *template = NULL, *file = NULL;
	_cleanup_close_ int img = -1, lfd = -1, mfd = -1;
	char dev[32];
	int fd;

	if (mib < DISK_MIN_MIB)
		return sbx_error(e, SBX_EINVAL, "give --disk 8 or more, or 0 for none",
		    "a disk limit of %lld MiB is too small for a filesystem", (long long)mib);
	/* Only root mounts one: its sandboxes' directories are uid's. */
	if ((fd = spare_take(dir, mib, uid, gid)) >= 0) {
		int rc = attach_locked(fd, dir, lock_fd);
		if (rc < 0)
			log_debug("ns: cannot attach the spare disk on %s: %s", dir, strerror(errno));
		close(fd);
		if (rc == 0)
			return disk_own(dir, uid, gid, lock_fd, e) < 0 ? -1 : 1;
	}
	if (template_ensure(mib, &template, e) < 0)
		return -1;
	file = xasprintf("%s/%s", dir, DISK_FILE);
	img = open(file, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (img < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", file);
	if (sparse_copy(template, img, e) < 0 || (lfd = loop_attach(img, dev, sizeof dev, e)) < 0) {
		(void)unlink(file);
		return -1;
	}
	/* The device holds the file now: nothing of it is left by name. */
	(void)unlink(file);
	if ((mfd = mount_detached(dev, e)) < 0)
		return -1;
	if (attach_locked(mfd, dir, lock_fd) < 0)
		return sbx_error_errno(e, NOT_HERE(errno), "run `sbxtop doctor`, or create with --disk 0",
		    "cannot mount the sandbox's %lld MiB filesystem (%s) on %s", (long long)mib, dev,
		    dir);
	return disk_own(dir, uid, gid, lock_fd, e);
}

/* 1 when dir is a mount point (of its own filesystem), else 0. */
static int
is_mount(const char *dir)
{
	_cleanup_free_ char *parent = xasprintf("%s/..", dir);
	struct stat a, b;

	return lstat(dir, &a) == 0 && S_ISDIR(a.st_mode) && stat(parent, &b) == 0 &&
	    a.st_dev != b.st_dev;
}

int
ns_disk_detach(const char *dir)
{
	if (!is_mount(dir))
		return 0;
	/* Detached: a process that still has a file open there (a copy out)
	 * keeps it until it closes; the device and the file go then. */
	return umount2(dir, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 ? -1 : 1;
}

int64_t
ns_disk_used(const char *dir)
{
	struct statvfs v;

	if (!is_mount(dir) || statvfs(dir, &v) < 0)
		return -1;
	return (int64_t)(v.f_blocks - v.f_bfree) * (int64_t)v.f_frsize;
}

int
ns_disk_setup(const char *dir, const struct sbx_limits *l, uid_t uid, gid_t gid, int *lock_fd,
    char **note, struct sbx_err *e)
{
	struct sbx_err why;
	int fd, rc;

	*note = NULL;
	if (l->disk_mib <= 0)
		return 0;
	sbx_err_clear(&why);
	if (geteuid() != 0) {
		snprintf(why.msg, sizeof why.msg, "an ordinary user cannot mount one");
	} else if ((rc = ns_disk_attach(dir, l->disk_mib, uid, gid, &fd, &why)) >= 0) {
		/* The lock goes with the directory gc now opens: the mount's root,
		 * locked before it was mounted. */
		close(*lock_fd);
		*lock_fd = fd;
		return rc == 1 ? 2 : 1;
	} else if (why.code != SBX_EUNSUPPORTED) {
		*e = why;
		return -1;
	}
	*note = xasprintf("disk: no ENOSPC at the limit, no filesystem of its own (%s); "
	    "instead no file may grow past %lld MiB, and the core server suspends the sandbox "
	    "when its files hold more; for ENOSPC, %s", why.msg, (long long)l->disk_mib,
	    geteuid() != 0 ? "run sbxtop as root" : "mend what stops it (`sbxtop doctor`)");
	return 0;
}

/* Templates go once no sandbox is being made from them (gc, none left). */
int
ns_disk_gc(void)
{
	_cleanup_free_ char *tdir = templates_dir(NULL);
	struct dirent *de;
	DIR *d;
	int n = 0;

	if (tdir == NULL || (d = opendir(tdir)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			n += unlinkat(dirfd(d), de->d_name, 0) == 0 && strcmp(de->d_name, ".lock") != 0;
	closedir(d);
	(void)rmdir(tdir);
	return n;
}
