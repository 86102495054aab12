/* What a copy out of a sandbox may make on the host (see copy/guard.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/copy/guard.h"
#include "lib/util.h"

int
copy_guard_name(const char *name, char *out, size_t len, char *why, size_t whylen)
{
	const char *p = name;
	size_t n;

	while (p[0] == '.' && p[1] == '/')
		p += 2;
	n = strlen(p);
	while (n > 0 && p[n - 1] == '/')
		n--;		/* a directory's trailing slash */
	if (name[0] == '/') {
		snprintf(why, whylen, "an absolute name");
		return -1;
	}
	if (n == 0) {
		snprintf(why, whylen, "the name of the destination itself (\"%s\")", name);
		return -1;
	}
	if (n >= len) {
		snprintf(why, whylen, "a name too long");
		return -1;
	}
	for (size_t i = 0, depth = 0; i < n; depth++) {
		size_t k = 0;
		while (i + k < n && p[i + k] != '/')
			k++;
		if (k == 0 || (k == 1 && p[i] == '.') || (k == 2 && p[i] == '.' && p[i + 1] == '.')) {
			snprintf(why, whylen, "a name with an empty, \".\" or \"..\" part");
			return -1;
		}
		if (depth == COPY_GUARD_DEPTH_MAX) {
			snprintf(why, whylen, "a name more than %d directories deep",
			    COPY_GUARD_DEPTH_MAX);
			return -1;
		}
		i += k + 1;
	}
	memcpy(out, p, n);
	out[n] = '\0';
	return 0;
}

int
copy_guard_link_inside(const char *name, const char *target)
{
	int depth = 0;

	if (target[0] == '/' || target[0] == '\0')
		return 0;
	/* Start at the link's own directory: one level per component of name
	 * but its last. */
	for (const char *p = name; (p = strchr(p, '/')) != NULL; p++)
		depth++;
	/* ".." only as a prefix: after a name, that name may itself be a link
	 * (to "." say) and the text would no longer say where it leads. */
	int down = 0;
	for (const char *p = target; *p;) {
		const char *sl = strchrnul(p, '/');
		size_t k = (size_t)(sl - p);
		if (k == 2 && p[0] == '.' && p[1] == '.') {
			if (down || --depth < 0)
				return 0;
		} else if (k > 0 && !(k == 1 && p[0] == '.')) {
			down = 1;
		}
		p = *sl ? sl + 1 : sl;
	}
	return 1;
}

int
copy_guard_dest_open(const char *dest, int mkdir_it, struct sbx_err *e)
{
	struct stat st;
	int fd;

	if (mkdir_it && mkdir(dest, 0755) < 0 && errno != EEXIST)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", dest);
	if (lstat(dest, &st) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot reach %s", dest);
	if (S_ISLNK(st.st_mode))
		return sbx_error(e, SBX_EDENIED, "remove the link, or copy to its target's path",
		    "%s is a symlink: a copy out of a sandbox never writes through one", dest);
	if ((fd = open(dest, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot open %s", dest);
	return fd;
}

static int
openat_beneath(int dfd, const char *rel, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (unsigned long long)(flags | O_CLOEXEC | O_NOFOLLOW),
		.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};

	return (int)syscall(SYS_openat2, dfd, rel, &how, sizeof how);
}

int
copy_guard_openat(int dfd, const char *rel, int flags, mode_t mode)
{
	return openat_beneath(dfd, rel, flags, mode);
}

int
copy_guard_mkdirat(int dfd, const char *rel, mode_t mode)
{
	_cleanup_free_ char *dir = xstrdup(rel);
	char *slash = strrchr(dir, '/');
	_cleanup_close_ int pfd = -1;
	const char *base = rel;

	if (slash != NULL) {
		*slash = '\0';
		base = slash + 1;
		if ((pfd = openat_beneath(dfd, dir, O_PATH | O_DIRECTORY, 0)) < 0)
			return -1;
	}
	if (mkdirat(pfd >= 0 ? pfd : dfd, base, mode) < 0 && errno != EEXIST)
		return -1;
	/* What is there now must be a directory reached through no link. */
	_cleanup_close_ int chk = openat_beneath(dfd, rel, O_PATH | O_DIRECTORY, 0);
	return chk < 0 ? -1 : 0;
}

int
copy_guard_source(const char *local, struct stat *st, struct sbx_err *e)
{
	if (lstat(local, st) < 0)
		return sbx_error_errno(e, errno == ENOENT ? SBX_ENOTFOUND : SBX_EIO, NULL,
		    "cannot read %s", local);
	if (S_ISLNK(st->st_mode))
		return sbx_error(e, SBX_EINVAL, "name the link's target instead (readlink -f), "
		    "or end a link to a directory with '/' to follow it",
		    "%s is a symlink: a copy into a sandbox does not follow the one it starts at "
		    "(it may be one a sandbox laid down)", local);
	return 0;
}
