/* Path resolution confined to the sandbox root with openat2(RESOLVE_IN_ROOT). */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/path.h"
#include "lib/util.h"

char *
path_normalize(const char *workspace, const char *path)
{
	size_t plen = strlen(path);
	_cleanup_free_ char *full = NULL;
	char *out, *o;

	if (plen == 0 || plen > PATH_MAX_LEN) {
		errno = EINVAL;
		return NULL;
	}
	full = path[0] == '/' ? xstrdup(path) : xasprintf("%s/%s", workspace, path);
	out = o = xmalloc(strlen(full) + 2);
	*o++ = '/';
	for (const char *s = full; *s != '\0';) {
		while (*s == '/')
			s++;
		const char *e = strchrnul(s, '/');
		size_t n = (size_t)(e - s);
		if (n == 0 || (n == 1 && s[0] == '.')) {
			/* nothing */
		} else if (n == 2 && s[0] == '.' && s[1] == '.') {
			if (o > out + 1) {		/* drop the last component */
				o--;
				while (o > out + 1 && o[-1] != '/')
					o--;
			}
		} else {
			memcpy(o, s, n);
			o += n;
			*o++ = '/';
		}
		s = e;
	}
	if (o > out + 1)
		o--;				/* trailing slash */
	*o = '\0';
	return out;
}

static int rootfd = -1;

int
path_root_open(void)
{
	if (rootfd < 0)
		rootfd = open(agent.root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return rootfd < 0 ? -1 : 0;
}

/* A descriptor of the root for one resolution (caller closes). */
static int
root_fd(void)
{
	if (rootfd >= 0)
		return fcntl(rootfd, F_DUPFD_CLOEXEC, 0);
	return open(agent.root, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

static int
open_in_root(int dirfd, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int fd;

	do
		fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
	while (fd < 0 && errno == EAGAIN);
	return fd;
}

int
path_open(const char *path, int flags, mode_t mode)
{
	_cleanup_free_ char *norm = path_normalize(agent.workspace, path);
	_cleanup_close_ int rfd = -1;

	if (norm == NULL)
		return -1;
	if ((rfd = root_fd()) < 0)
		return -1;
	return open_in_root(rfd, norm, flags, mode);
}

int
path_open_parent(const char *path, char **name)
{
	_cleanup_free_ char *norm = path_normalize(agent.workspace, path);
	_cleanup_close_ int rfd = -1;
	char *slash;
	int fd;

	if (norm == NULL)
		return -1;
	if (strcmp(norm, "/") == 0) {
		errno = EINVAL;
		return -1;
	}
	if ((rfd = root_fd()) < 0)
		return -1;
	slash = strrchr(norm, '/');
	*name = xstrdup(slash + 1);
	if (slash == norm)
		slash[1] = '\0';
	else
		*slash = '\0';
	fd = open_in_root(rfd, norm, O_PATH | O_DIRECTORY, 0);
	if (fd < 0) {
		free(*name);
		*name = NULL;
	}
	return fd;
}

int
path_mkdir_parents(const char *path)
{
	_cleanup_free_ char *norm = path_normalize(agent.workspace, path);
	_cleanup_close_ int rfd = -1;
	char *last;

	if (norm == NULL)
		return -1;
	if ((rfd = root_fd()) < 0)
		return -1;
	last = strrchr(norm, '/');
	/* Each prefix is resolved from the root, so symlinks on the way resolve as they
	 * would for any process in the sandbox, and never outside it. */
	for (char *slash = strchr(norm + 1, '/'); slash != NULL && slash <= last;
	    slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		int fd = open_in_root(rfd, norm, O_PATH | O_DIRECTORY, 0);
		if (fd >= 0) {
			close(fd);
		} else if (errno == ENOENT) {
			char *sep = strrchr(norm, '/');
			*sep = '\0';
			fd = open_in_root(rfd, sep == norm ? "/" : norm, O_PATH | O_DIRECTORY, 0);
			*sep = '/';
			if (fd < 0)
				return -1;
			int rc = mkdirat(fd, sep + 1, 0755);
			close(fd);
			if (rc < 0 && errno != EEXIST)
				return -1;
		} else
			return -1;
		*slash = '/';
	}
	return 0;
}
