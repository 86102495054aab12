/* The ns backend's root filesystem.
 *
 * The default image is a skeleton root built once and cached under
 * $XDG_DATA_HOME/sbxtop/images/host: the host's top-level layout of /bin /sbin
 * /lib*, empty mount points, and a filtered copy of /etc (world-readable files
 * only, never shadow, gshadow, backups, SSH host keys, sudoers or machine-id)
 * with a generated passwd and group.  The host's /usr (and whichever of /bin
 * /sbin /lib* are real directories) are not copied: each is its own overlay at
 * the same place inside, so the sandbox can write over them and the host never
 * sees it.
 *
 * ns_rootfs_enter() runs in the launcher's child, between clone() and the exec
 * of the agent; it only uses the stack (the host process may have threads whose
 * locks were copied mid-flight by clone). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "backends/ns/ns-idmap.h"
#include "backends/ns/ns-rootfs.h"
#include "lib/buf.h"
#include "lib/util.h"

#define IMAGE_VERSION	2
#define IMAGE_STAMP	".sbxtop-image"
#define OLD_IMAGE_PREFIX ".host.old."
#define ETC_MAX_BYTES	(64u << 20)	/* a bound on what /etc may cost */
#define ETC_MAX_FILE	(8u << 20)

static const char *const top_dirs[] = { "bin", "sbin", "lib", "lib32", "lib64", "libx32" };

/* Mount points and empty directories of the image, with their modes. */
static const struct { const char *path; mode_t mode; } skel[] = {
	{ "usr", 0755 }, { "proc", 0555 }, { "dev", 0755 }, { "sys", 0555 },
	{ "tmp", 01777 }, { "workspace", 0755 }, { "run", 0755 }, { "run/sbxtop", 0755 },
	{ "home", 0755 }, { "home/sandbox", 0750 }, { "root", 0700 }, { "opt", 0755 },
	{ "opt/sbxtop", 0755 }, { "mnt", 0755 }, { "srv", 0755 }, { "media", 0755 },
	{ "var", 0755 }, { "var/tmp", 01777 }, { "var/lib", 0755 }, { "var/cache", 0755 },
	{ "var/log", 0755 }, { "var/spool", 0755 }, { "etc", 0755 },
	{ "var/lib/dpkg", 0755 }, { "var/lib/apt", 0755 }, { "var/cache/apt", 0755 },
	{ "var/log/apt", 0755 }, { "usr/local", 0755 }, { "usr/local/bin", 0755 },
};

/* The host's package state, each its own copy-on-write overlay like /usr, so
 * `apt-get install` and `dpkg -i` work inside (their lock, database and cache
 * are the sandbox's) and the host's stay as they are.  Layer names are flat. */
static const struct { const char *path, *layer; } pkg_dirs[] = {
	{ "var/lib/dpkg", "var-lib-dpkg" }, { "var/lib/apt", "var-lib-apt" },
	{ "var/cache/apt", "var-cache-apt" },
};

/* The image's own /usr/local/bin/sudo, above the host's /usr (the image's usr/
 * is the top lower layer of that overlay): the agent, as PID 1, runs the
 * command as the sandbox's root (agent/sudo.c).  It has no setuid bit, and
 * no_new_privs would void one: sudo here is a request to the agent. */
static const char sudo_shim[] =
	"#!/bin/sh\n"
	"# sudo in an sbxtop sandbox: the sandbox's agent runs the command as the\n"
	"# sandbox's root, which is not the host's.  See sbxtop-agent(8).\n"
	"exec /opt/sbxtop/sbxtop-agent --sudo \"$@\"\n";

/* The generated accounts: ours, then the host's system accounts (ids 1-999:
 * the dpkg database and packages' files name them, `statoverride` among
 * them), never its people, and no group's member list. */
static const char passwd_text[] =
	"root:x:0:0:root:/root:/bin/bash\n"
	"sandbox:x:1000:1000:sandbox:/home/sandbox:/bin/bash\n"
	"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
static const char group_text[] =
	"root:x:0:\n"
	"sandbox:x:1000:\n"
	"nogroup:x:65534:\n";
/* apt drops to _apt to fetch; a host without one still gets it. */
static const char apt_user[] = "_apt:x:42:65534::/nonexistent:/usr/sbin/nologin\n";
#define ACCOUNTS_MAX	(1u << 20)

/* ours + the system accounts of host file path (passwd or group format). */
static char *
accounts_text(const char *path, const char *ours, int is_passwd)
{
	_cleanup_free_ char *host = read_file(path, ACCOUNTS_MAX, NULL);
	struct buf b;
	char *line, *save = NULL;
	int have_apt = 0;

	buf_init(&b, 2 * ACCOUNTS_MAX);
	(void)buf_append(&b, ours, strlen(ours));
	for (line = host ? strtok_r(host, "\n", &save) : NULL; line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		char *f[7], *p = line;
		int n = 0;
		while (n < 7 && (f[n] = strsep(&p, ":")) != NULL)
			n++;
		if (n != (is_passwd ? 7 : 4) || p != NULL)
			continue;
		char *end;
		unsigned long id = strtoul(f[2], &end, 10);
		if (*f[2] == '\0' || *end != '\0' || id < 1 || id > 999 || strcmp(f[0], "sandbox") == 0 ||
		    strcmp(f[0], "nobody") == 0 || strcmp(f[0], "nogroup") == 0 ||
		    strchr(f[0], '+') != NULL || strchr(f[0], '-') == f[0])
			continue;
		have_apt |= is_passwd && strcmp(f[0], "_apt") == 0;
		if (is_passwd)
			(void)buf_printf(&b, "%s:x:%s:%s:%s:%s:%s\n", f[0], f[2], f[3], f[4], f[5], f[6]);
		else
			(void)buf_printf(&b, "%s:x:%s:\n", f[0], f[2]);
	}
	if (is_passwd && !have_apt)
		(void)buf_append(&b, apt_user, strlen(apt_user));
	return buf_steal(&b);
}

int
ns_host_dirs(const char *names[NS_MAX_HOST_DIRS])
{
	struct stat st;
	char path[32];
	int n = 0;

	names[n++] = "usr";
	for (size_t i = 0; i < ARRAY_SIZE(top_dirs); i++) {
		snprintf(path, sizeof path, "/%s", top_dirs[i]);
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
			names[n++] = top_dirs[i];
	}
	for (size_t i = 0; i < ARRAY_SIZE(pkg_dirs); i++) {
		snprintf(path, sizeof path, "/%s", pkg_dirs[i].path);
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
			names[n++] = pkg_dirs[i].path;
	}
	return n;
}

const char *
ns_host_layer(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(pkg_dirs); i++)
		if (strcmp(name, pkg_dirs[i].path) == 0)
			return pkg_dirs[i].layer;
	return name;
}

static int
layout_dir(int dfd, const char *path, mode_t mode, uid_t uid, gid_t gid, int fill, char what[64])
{
	snprintf(what, 64, "%s", path);
	if (mkdirat_exact(dfd, path, mode) < 0)
		return fill && errno == EEXIST ? 0 : -1;
	if (uid != (uid_t)-1 && fchownat(dfd, path, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	return 0;
}

int
ns_layout_make(int dfd, const char *const *hosts, int nhost, uid_t uid, gid_t gid, int fill,
    char what[64])
{
	/* upper/ gives the sandbox's / its mode: it must be searchable. */
	static const struct { const char *name; mode_t mode; } own[] = {
		{ "upper", 0755 }, { "work", 0700 }, { "workspace", 0755 }, { "run", 0700 },
		{ "root", 0700 }, { "ovl", 0700 } };
	char p[64];

	snprintf(what, 64, ".");
	if (uid != (uid_t)-1 && fchownat(dfd, "", uid, gid, AT_EMPTY_PATH) < 0)
		return -1;
	for (size_t i = 0; i < ARRAY_SIZE(own); i++)
		if (layout_dir(dfd, own[i].name, own[i].mode, uid, gid, fill, what) < 0)
			return -1;
	for (int i = 0; i < nhost; i++) {
		const char *l = ns_host_layer(hosts[i]);
		snprintf(p, sizeof p, "ovl/%s", l);
		if (layout_dir(dfd, p, 0700, uid, gid, fill, what) < 0)
			return -1;
		snprintf(p, sizeof p, "ovl/%s/upper", l);
		if (layout_dir(dfd, p, 0755, uid, gid, fill, what) < 0)
			return -1;
		snprintf(p, sizeof p, "ovl/%s/work", l);
		if (layout_dir(dfd, p, 0700, uid, gid, fill, what) < 0)
			return -1;
	}
	return 0;
}

void
ns_layout_unhost(int dfd)
{
	const char *names[NS_MAX_HOST_DIRS];
	char p[64];
	int n = ns_host_dirs(names);

	for (int i = 0; i < n; i++) {
		static const char *const sub[] = { "/upper", "/work", "" };
		for (size_t j = 0; j < ARRAY_SIZE(sub); j++) {
			snprintf(p, sizeof p, "ovl/%s%s", ns_host_layer(names[i]), sub[j]);
			(void)unlinkat(dfd, p, AT_REMOVEDIR);
		}
	}
}

/* --- the default image ---------------------------------------------------- */

/* /etc entries that never enter a sandbox, whatever their mode. */
static int
etc_excluded(const char *rel, const char *name)
{
	size_t n = strlen(name);

	if (strcmp(name, "shadow") == 0 || strcmp(name, "gshadow") == 0 ||
	    strcmp(name, "machine-id") == 0 || strncmp(name, "sudoers", 7) == 0 ||
	    (n > 0 && name[n - 1] == '-'))
		return 1;
	if (strcmp(rel, "ssh") == 0 && strncmp(name, "ssh_host_", 9) == 0)
		return 1;
	/* Generated instead. */
	return rel[0] == '\0' && (strcmp(name, "passwd") == 0 || strcmp(name, "group") == 0);
}

static int
copy_file_at(int sdir, int ddir, const char *name, size_t *budget)
{
	_cleanup_close_ int in = -1, out = -1;
	struct stat st;
	char buf[65536];
	ssize_t n;

	in = openat(sdir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (in < 0)
		return 0;		/* vanished or unreadable: not ours to copy */
	/* Check the opened file, not the name: it may have changed since. */
	if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode) || !(st.st_mode & S_IROTH) ||
	    (size_t)st.st_size > ETC_MAX_FILE || (size_t)st.st_size > *budget)
		return 0;
	out = openat(ddir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    st.st_mode & 0777);
	if (out < 0 || fchmod(out, st.st_mode & 0777) < 0)	/* whatever the umask */
		return -1;
	while ((n = read(in, buf, sizeof buf)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (write_all(out, buf, (size_t)n) < 0)
			return -1;
		*budget -= (size_t)n > *budget ? *budget : (size_t)n;
	}
	return fchmod(out, st.st_mode & 0777);
}

/* Copy the world-readable part of directory sdir into ddir, recursively. */
static int
copy_etc(int sdir, int ddir, const char *rel, int depth, size_t *budget)
{
	DIR *d;
	struct dirent *de;
	int rc = 0;

	if (depth > 16)
		return 0;
	int fd = dup(sdir);
	if (fd < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while (rc == 0 && (de = readdir(d)) != NULL) {
		struct stat st;
		char sub[256], target[4096];
		ssize_t n;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    etc_excluded(rel, de->d_name))
			continue;
		if (fstatat(sdir, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			n = readlinkat(sdir, de->d_name, target, sizeof target - 1);
			if (n < 0)
				continue;
			target[n] = '\0';
			if (symlinkat(target, ddir, de->d_name) < 0)
				rc = -1;
		} else if (S_ISREG(st.st_mode)) {
			if (st.st_mode & S_IROTH)
				rc = copy_file_at(sdir, ddir, de->d_name, budget);
		} else if (S_ISDIR(st.st_mode) && (st.st_mode & (S_IROTH | S_IXOTH)) ==
		    (S_IROTH | S_IXOTH)) {
			_cleanup_close_ int s2 = -1, d2 = -1;
			if (mkdirat_exact(ddir, de->d_name, st.st_mode & 0777) < 0) {
				rc = -1;
				break;
			}
			s2 = openat(sdir, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			d2 = openat(ddir, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (s2 < 0 || d2 < 0)
				continue;
			if ((size_t)snprintf(sub, sizeof sub, "%s%s%s", rel, rel[0] ? "/" : "",
			    de->d_name) >= sizeof sub)
				continue;
			rc = copy_etc(s2, d2, sub, depth + 1, budget);
		}
	}
	closedir(d);
	return rc;
}

static int
chown_tree(int dfd, uid_t uid, gid_t gid, int depth)
{
	DIR *d;
	struct dirent *de;
	int fd = dup(dfd), rc = 0;

	if (fd < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while (rc == 0 && (de = readdir(d)) != NULL) {
		struct stat st;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fchownat(dfd, de->d_name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0 ||
		    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			rc = -1;
			break;
		}
		if (S_ISDIR(st.st_mode) && depth < 32) {
			_cleanup_close_ int sub = openat(dfd, de->d_name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			rc = sub < 0 ? -1 : chown_tree(sub, uid, gid, depth + 1);
		}
	}
	closedir(d);
	return rc;
}

static int
write_at(int dfd, const char *name, const char *text, mode_t mode)
{
	_cleanup_close_ int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
	    O_CLOEXEC, mode);
	return fd < 0 || fchmod(fd, mode) < 0 || write_all(fd, text, strlen(text)) < 0 ? -1 : 0;
}

static void
stamp_text(char *buf, size_t len, uid_t uid, gid_t gid)
{
	snprintf(buf, len, "sbxtop-image %d owner %u:%u\n", IMAGE_VERSION, (unsigned)uid,
	    (unsigned)gid);
}

static int
image_valid(const char *dir, uid_t uid, gid_t gid)
{
	_cleanup_free_ char *path = xasprintf("%s/%s", dir, IMAGE_STAMP);
	_cleanup_free_ char *got = read_file(path, 256, NULL);
	char want[96];

	stamp_text(want, sizeof want, uid, gid);
	return got != NULL && strcmp(got, want) == 0;
}

static int
build_image(const char *tmp, uid_t uid, gid_t gid, struct sbx_err *e)
{
	_cleanup_close_ int root = -1, etc = -1, hetc = -1;
	size_t budget = ETC_MAX_BYTES;
	char stamp[96], target[256];
	struct stat st;

	if ((root = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "open %s", tmp);
	if (fchmod(root, 0755) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "chmod %s", tmp);
	/* The host's layout of /bin /sbin /lib*: symlinks stay symlinks (merged /usr),
	 * real directories become mount points for their own overlays. */
	for (size_t i = 0; i < ARRAY_SIZE(top_dirs); i++) {
		char hpath[32];
		ssize_t n;
		snprintf(hpath, sizeof hpath, "/%s", top_dirs[i]);
		if (lstat(hpath, &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode) && (n = readlink(hpath, target, sizeof target - 1)) > 0) {
			target[n] = '\0';
			if (symlinkat(target, root, top_dirs[i]) < 0)
				return sbx_error_errno(e, SBX_EIO, NULL, "symlink %s/%s", tmp, top_dirs[i]);
		} else if (S_ISDIR(st.st_mode) && mkdirat_exact(root, top_dirs[i], 0755) < 0) {
			return sbx_error_errno(e, SBX_EIO, NULL, "mkdir %s/%s", tmp, top_dirs[i]);
		}
	}
	for (size_t i = 0; i < ARRAY_SIZE(skel); i++) {
		if (mkdirat(root, skel[i].path, skel[i].mode) < 0 ||
		    fchmodat(root, skel[i].path, skel[i].mode, 0) < 0)
			return sbx_error_errno(e, SBX_EIO, NULL, "mkdir %s/%s", tmp, skel[i].path);
	}
	if ((etc = openat(root, "etc", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    (hetc = open("/etc", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "open etc");
	if (copy_etc(hetc, etc, "", 0, &budget) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "copy /etc into %s", tmp);
	{
		_cleanup_free_ char *pw = accounts_text("/etc/passwd", passwd_text, 1);
		_cleanup_free_ char *gr = accounts_text("/etc/group", group_text, 0);
		if (write_at(etc, "passwd", pw, 0644) < 0 || write_at(etc, "group", gr, 0644) < 0)
			return sbx_error_errno(e, SBX_EIO, NULL, "write %s/etc/passwd", tmp);
	}
	if (write_at(root, "usr/local/bin/sudo", sudo_shim, 0755) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "write %s/usr/local/bin/sudo", tmp);
	if (geteuid() == 0) {
		/* Owned by the sandbox's root, so /etc is writable (copy-up) inside. */
		if (chown_tree(root, uid, gid, 0) < 0 || fchown(root, uid, gid) < 0 ||
		    fchownat(root, "home/sandbox", uid + NS_SANDBOX_UID, gid + NS_SANDBOX_UID, 0) < 0)
			return sbx_error_errno(e, SBX_EIO, NULL, "chown %s", tmp);
	}
	/* Last: a directory without its stamp is incomplete and is rebuilt. */
	stamp_text(stamp, sizeof stamp, uid, gid);
	if (write_at(root, IMAGE_STAMP, stamp, 0644) < 0 || fsync(root) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "write %s/%s", tmp, IMAGE_STAMP);
	return 0;
}

static char *
data_images_dir(struct sbx_err *e)
{
	const char *x = getenv("XDG_DATA_HOME"), *home = getenv("HOME");

	if (x != NULL && x[0] == '/')
		return xasprintf("%s/sbxtop/images", x);
	if (home != NULL && home[0] == '/')
		return xasprintf("%s/.local/share/sbxtop/images", home);
	sbx_error(e, SBX_EIO, "set XDG_DATA_HOME or HOME to an absolute path",
	    "no place for images: neither XDG_DATA_HOME nor HOME is an absolute path");
	return NULL;
}

int
ns_image_ensure(uid_t uid, gid_t gid, char **path, struct sbx_err *e)
{
	_cleanup_free_ char *images = data_images_dir(e), *final = NULL, *tmp = NULL,
	    *old = NULL;
	_cleanup_close_ int lock = -1;
	struct sbx_err scratch;

	if (images == NULL)
		return -1;
	final = xasprintf("%s/host", images);
	if (image_valid(final, uid, gid)) {
		*path = steal_pointer(&final);
		return 0;
	}
	if (mkdir_p(images, 0700) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", images);
	/* One builder at a time: a burst of first creates would otherwise copy
	 * /etc once each.  Those that waited find the image made. */
	{
		_cleanup_free_ char *lp = xasprintf("%s/.host.lock", images);
		if ((lock = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0 || flock(lock, LOCK_EX) < 0)
			return sbx_error_errno(e, SBX_EIO, NULL, "cannot lock %s", lp);
	}
	if (image_valid(final, uid, gid)) {
		*path = steal_pointer(&final);
		return 0;
	}
	/* Build aside, then rename: a reader sees no image or a whole one. */
	tmp = xasprintf("%s/.host.XXXXXX", images);
	if (mkdtemp(tmp) == NULL)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", tmp);
	if (build_image(tmp, uid, gid, e) < 0) {
		struct ns_idmap none = { .mode = NS_MAP_SINGLE };
		(void)ns_rmtree(&none, tmp, &scratch);
		return -1;
	}
	if (rename(tmp, final) < 0) {
		struct ns_idmap none = { .mode = NS_MAP_SINGLE };
		if ((errno != ENOTEMPTY && errno != EEXIST) || image_valid(final, uid, gid)) {
			/* Another process built it first: use theirs. */
			int err = errno;
			(void)ns_rmtree(&none, tmp, &scratch);
			if (!image_valid(final, uid, gid)) {
				errno = err;
				return sbx_error_errno(e, SBX_EIO, NULL, "cannot install image %s", final);
			}
		} else {
			/* A stale or broken image: set it aside and put ours in.  It
			 * stays until no sandbox is left (ns_image_gc): a sandbox made
			 * before has it as its lower layer, and overlayfs must not see
			 * a lower layer's files vanish. */
			old = xasprintf("%s/%s%lld.%d", images, OLD_IMAGE_PREFIX, (long long)time(NULL),
			    (int)getpid());
			if (rename(final, old) < 0 || rename(tmp, final) < 0) {
				(void)ns_rmtree(&none, tmp, &scratch);
				return sbx_error_errno(e, SBX_EIO, NULL, "cannot replace image %s", final);
			}
		}
	}
	*path = steal_pointer(&final);
	return 0;
}

int
ns_image_gc(void)
{
	_cleanup_free_ char *images = data_images_dir(NULL);
	struct ns_idmap none = { .mode = NS_MAP_SINGLE };
	struct sbx_err scratch;
	struct dirent *de;
	DIR *d;
	int n = 0;

	if (images == NULL || (d = opendir(images)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, OLD_IMAGE_PREFIX, strlen(OLD_IMAGE_PREFIX)) != 0)
			continue;
		_cleanup_free_ char *p = xasprintf("%s/%s", images, de->d_name);
		n += ns_rmtree(&none, p, &scratch) == 0;
	}
	closedir(d);
	return n;
}

/* --- in the child: mounts and pivot_root ----------------------------------- */

static int
fail(struct sbx_err *e, const char *what, const char *path)
{
	return sbx_error_errno(e, SBX_EBACKEND, "run `sbxtop doctor` to see what this host allows",
	    "%s %s", what, path);
}

static int
mount_setattr_at(const char *path, unsigned long long set, int recursive)
{
	struct mount_attr a = { .attr_set = set };

	return (int)syscall(SYS_mount_setattr, AT_FDCWD, path, recursive ? AT_RECURSIVE : 0,
	    &a, sizeof a);
}

/* Bind src on dst, then add flags to the new mount only (mount_setattr keeps
 * whatever flags the source mount had locked). */
static int
bind_at(const char *src, const char *dst, unsigned long long set, int recursive,
    struct sbx_err *e)
{
	if (mount(src, dst, NULL, MS_BIND | (recursive ? MS_REC : 0), NULL) < 0)
		return fail(e, "bind-mount on", dst);
	if (set != 0 && mount_setattr_at(dst, set, recursive) < 0)
		return fail(e, "set mount flags on", dst);
	return 0;
}

/* top, when not NULL, is a lower layer above the nlower fds of lower (top
 * first). */
static int
overlay_at(const char *target, const char *top, const int *lower, int nlower, int dir_fd,
    const char *layer, struct sbx_err *e)
{
	char opts[4096];
	size_t n;

	/* userxattr: overlay's own metadata in user.* xattrs, which a user
	 * namespace may write (an image layer's opaque directories too). */
	n = (size_t)snprintf(opts, sizeof opts, "lowerdir=%s%s", top ? top : "", top ? ":" : "");
	for (int i = 0; i < nlower && n < sizeof opts; i++)
		n += (size_t)snprintf(opts + n, sizeof opts - n, "%s/proc/self/fd/%d", i ? ":" : "",
		    lower[i]);
	if (n < sizeof opts)
		n += (size_t)snprintf(opts + n, sizeof opts - n, ",upperdir=/proc/self/fd/%d/%supper,"
		    "workdir=/proc/self/fd/%d/%swork,userxattr", dir_fd, layer, dir_fd, layer);
	if (n >= sizeof opts) {
		errno = E2BIG;
		return fail(e, "mount overlay (too many layers) on", target);
	}
	/* volatile: no sync of the upper layer, so the kernel's last unmount of
	 * each overlay, when the sandbox ends, does not flush the disk (2-3 ms
	 * of every destroy).  A sandbox does not outlive its host, and its
	 * upper and work directories are never mounted again (a fork copies
	 * the upper one; the work one, which now says the layer was volatile,
	 * is made anew).  Kernels before 5.10 do not know it. */
	if (n + sizeof ",volatile" <= sizeof opts) {
		memcpy(opts + n, ",volatile", sizeof ",volatile");
		if (mount("overlay", target, "overlay", MS_NODEV, opts) == 0)
			return 0;
		if (errno != EINVAL)
			return fail(e, "mount overlay on", target);
		opts[n] = '\0';
	}
	if (mount("overlay", target, "overlay", MS_NODEV, opts) < 0)
		return fail(e, "mount overlay on", target);
	return 0;
}

static int
mkdir_here(const char *path, mode_t mode, struct sbx_err *e)
{
	if (mkdir_exact(path, mode) < 0 && errno != EEXIST)
		return fail(e, "mkdir", path);
	return 0;
}

/* path (relative, one component, or two with a plain first) as a plain
 * directory: an image may have a link or a file there, which a mount would
 * follow out of the sandbox's root (the host's tree is still the root here). */
static int
plain_dir_here(const char *path, mode_t mode, struct sbx_err *e)
{
	struct stat st;

	if (lstat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return 0;
		if (unlink(path) < 0)
			return fail(e, "remove the image's non-directory", path);
	}
	return mkdir_here(path, mode, e);
}

/* tmpfs pages are charged to the sandbox's memory cgroup and, without swap,
 * cannot be reclaimed: a /tmp as large as the memory limit lets a file fill
 * the cgroup until the OOM killer takes processes.  /tmp gets half of the
 * limit and /dev/shm a quarter, so writes there fail with ENOSPC and the rest
 * stays for processes; without a limit, the same shares of the host's RAM
 * (the kernel's default is half of it for each). */
static void
tmpfs_opts(const struct ns_rootfs *r, int shift, char *buf, size_t len)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	uint64_t base = r->memory_mib > 0 ? (uint64_t)r->memory_mib << 20 :
	    pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 1ull << 30;
	uint64_t kib = (base >> shift) >> 10;

	snprintf(buf, len, "mode=1777,size=%lluk", (unsigned long long)(kib > 1024 ? kib : 1024));
}

static int
setup_dev(const struct ns_rootfs *r, struct sbx_err *e)
{
	static const char *const nodes[] = { "null", "zero", "full", "random", "urandom", "tty" };
	static const char *const links[][2] = {
		{ "pts/ptmx", "dev/ptmx" }, { "/proc/self/fd", "dev/fd" },
		{ "/proc/self/fd/0", "dev/stdin" }, { "/proc/self/fd/1", "dev/stdout" },
		{ "/proc/self/fd/2", "dev/stderr" },
	};
	char src[32], dst[32], opts[48];

	if (mount("tmpfs", "dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k") < 0)
		return fail(e, "mount tmpfs on", "/dev");
	for (size_t i = 0; i < ARRAY_SIZE(nodes); i++) {
		int fd;
		snprintf(src, sizeof src, "/dev/%s", nodes[i]);
		snprintf(dst, sizeof dst, "dev/%s", nodes[i]);
		if ((fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666)) < 0)
			return fail(e, "create", dst);
		close(fd);
		if (bind_at(src, dst, 0, 0, e) < 0)
			return -1;
	}
	if (mkdir_here("dev/pts", 0755, e) < 0 || mkdir_here("dev/shm", 01777, e) < 0)
		return -1;
	/* A private devpts instance: the sandbox sees its own ptys only. */
	if (mount("devpts", "dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
	    "newinstance,ptmxmode=0666,mode=0620") < 0)
		return fail(e, "mount devpts on", "/dev/pts");
	tmpfs_opts(r, 2, opts, sizeof opts);
	if (mount("tmpfs", "dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		return fail(e, "mount tmpfs on", "/dev/shm");
	for (size_t i = 0; i < ARRAY_SIZE(links); i++)
		if (symlink(links[i][0], links[i][1]) < 0)
			return fail(e, "symlink", links[i][1]);
	return 0;
}

static int
setup_proc(struct sbx_err *e)
{
	static const char *const masked[] = { "proc/kcore", "proc/keys", "proc/timer_list",
	    "proc/sysrq-trigger" };

	if (mount("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return fail(e, "mount proc on", "/proc");
	if (bind_at("proc/sys", "proc/sys", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
	    MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, 1, e) < 0)
		return -1;
	for (size_t i = 0; i < ARRAY_SIZE(masked); i++)
		if (access(masked[i], F_OK) == 0 && bind_at("dev/null", masked[i], 0, 0, e) < 0)
			return -1;
	return 0;
}

static int
open_dir(const char *path, int *fd, struct sbx_err *e)
{
	if (*fd < 0 && (*fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return fail(e, "open", path);
	return 0;
}

int
ns_rootfs_open(struct ns_rootfs *r, struct sbx_err *e)
{
	char p[32];

	if (open_dir(r->dir_path, &r->dir_fd, e) < 0 ||
	    (r->image_path != NULL && open_dir(r->image_path, &r->image_fd, e) < 0) ||
	    open_dir(r->bundle_path, &r->bundle_fd, e) < 0)
		return -1;
	for (int i = 0; i < r->nlayers; i++)
		if (open_dir(r->layer_paths[i], &r->layer_fds[i], e) < 0)
			return -1;
	for (int i = 0; i < r->nhost; i++) {
		snprintf(p, sizeof p, "/%s", r->host_names[i]);
		if (open_dir(p, &r->host_fds[i], e) < 0)
			return -1;
	}
	return 0;
}

/* A detached idmapped tree made by the parent belongs to a mount namespace the
 * sandbox does not own: attach it at target in ours, and return an fd on it
 * that overlay accepts as a lower layer. */
static int
attach_tree(int *fd, const char *target, struct sbx_err *e)
{
	int nfd;

	if (syscall(SYS_move_mount, *fd, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return fail(e, "attach the idmapped tree on", target);
	if ((nfd = open(target, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return fail(e, "open", target);
	close(*fd);
	*fd = nfd;
	return 0;
}

int
ns_rootfs_enter(struct ns_rootfs *r, struct sbx_err *e)
{
	char p[128], layer[64];
	struct stat st;

	/* Nothing mounted from here on may propagate back to the host. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return fail(e, "make private:", "/");

	/* The root: the image below, this sandbox's upper directory above. */
	snprintf(p, sizeof p, "/proc/self/fd/%d/root", r->dir_fd);
	if (r->image_idmapped && attach_tree(&r->image_fd, p, e) < 0)
		return -1;
	if (r->nlayers > 0 ? overlay_at(p, NULL, r->layer_fds, r->nlayers, r->dir_fd, "", e) < 0 :
	    overlay_at(p, NULL, &r->image_fd, 1, r->dir_fd, "", e) < 0)
		return -1;
	if (chdir(p) < 0)
		return fail(e, "chdir", p);
	/* From here every path is relative to the new root (cwd); each mount
	 * point a plain directory, never a link an image put there. */
	if (plain_dir_here("proc", 0555, e) < 0 || plain_dir_here("dev", 0755, e) < 0 ||
	    plain_dir_here("tmp", 01777, e) < 0 || plain_dir_here("workspace", 0755, e) < 0 ||
	    plain_dir_here("run", 0755, e) < 0 || plain_dir_here("run/sbxtop", 0755, e) < 0 ||
	    plain_dir_here("opt", 0755, e) < 0 || plain_dir_here("opt/sbxtop", 0755, e) < 0)
		return -1;
	for (int i = 0; i < r->nhost; i++) {
		char top[64];
		/* The image's usr/ (its /usr/local/bin/sudo) above the host's /usr. */
		snprintf(top, sizeof top, "/proc/self/fd/%d/usr/local", r->image_fd);
		int with_top = strcmp(r->host_names[i], "usr") == 0 && access(top, F_OK) == 0;
		snprintf(top, sizeof top, "/proc/self/fd/%d/usr", r->image_fd);
		snprintf(layer, sizeof layer, "ovl/%s/", ns_host_layer(r->host_names[i]));
		if (mkdir_here(r->host_names[i], 0755, e) < 0 ||
		    (r->host_idmapped && attach_tree(&r->host_fds[i], r->host_names[i], e) < 0) ||
		    overlay_at(r->host_names[i], with_top ? top : NULL, &r->host_fds[i], 1, r->dir_fd,
		    layer, e) < 0)
			return -1;
	}

	snprintf(p, sizeof p, "/proc/self/fd/%d/workspace", r->dir_fd);
	if (bind_at(p, "workspace", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0, e) < 0)
		return -1;
	/* The agent's socket and log: the host reaches them in <dir>/run. */
	snprintf(p, sizeof p, "/proc/self/fd/%d/run", r->dir_fd);
	if (bind_at(p, "run/sbxtop", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
	    0, e) < 0)
		return -1;
	snprintf(p, sizeof p, "/proc/self/fd/%d", r->bundle_fd);
	if (bind_at(p, "opt/sbxtop", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
	    1, e) < 0)
		return -1;
	tmpfs_opts(r, 1, p, sizeof p);
	if (mount("tmpfs", "tmp", "tmpfs", MS_NOSUID | MS_NODEV, p) < 0)
		return fail(e, "mount tmpfs on", "/tmp");
	if (setup_dev(r, e) < 0 || setup_proc(e) < 0)
		return -1;

	if (r->have_user) {
		/* /workspace and the home belong to the user commands run as. */
		if (chown("workspace", NS_SANDBOX_UID, NS_SANDBOX_UID) < 0)
			return fail(e, "chown", "/workspace");
		if (lstat("home/sandbox", &st) == 0 && S_ISDIR(st.st_mode) &&
		    st.st_uid != NS_SANDBOX_UID &&
		    chown("home/sandbox", NS_SANDBOX_UID, NS_SANDBOX_UID) < 0)
			return fail(e, "chown", "/home/sandbox");
	}
	if (sethostname(r->hostname, strlen(r->hostname)) < 0)
		return fail(e, "sethostname", r->hostname);

	/* Swap roots and drop the host's tree: after this no host path is
	 * reachable except through the fds we still hold (closed before exec). */
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		return fail(e, "pivot_root into", "the new root");
	if (umount2(".", MNT_DETACH) < 0)
		return fail(e, "detach", "the old root");
	if (chdir("/") < 0)
		return fail(e, "chdir", "/");
	return 0;
}
