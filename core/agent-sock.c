/* The agent's unix socket, reached without following a link the sandbox laid
 * down: the name is opened O_PATH|O_NOFOLLOW, the inode checked, and the connect
 * goes through /proc/self/fd/N, which names that very inode (no second lookup of
 * the name, so no race with a rename inside the sandbox). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/agent-sock.h"
#include "lib/util.h"

int
agent_sock_open(const char *path, char *why, size_t len)
{
	_cleanup_free_ char *dir = xstrdup(path);
	_cleanup_close_ int dfd = -1, pfd = -1;
	char *slash = strrchr(dir, '/');
	const char *base = slash ? slash + 1 : dir;
	struct stat st, dst;

	if (slash == dir)
		dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	else if (slash != NULL) {
		*slash = '\0';
		dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	} else
		dfd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fstat(dfd, &dst) < 0) {
		snprintf(why, len, "cannot open the directory of %s: %s", path, strerror(errno));
		return -1;
	}
	if ((pfd = openat(dfd, base, O_PATH | O_NOFOLLOW | O_CLOEXEC)) < 0 || fstat(pfd, &st) < 0) {
		snprintf(why, len, "cannot reach %s: %s", path, strerror(errno));
		return -1;
	}
	if (S_ISLNK(st.st_mode)) {
		snprintf(why, len, "%s is a link, not the agent's socket (the sandbox replaced it): "
		    "not followed", path);
		return -1;
	}
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(why, len, "%s is not a socket", path);
		return -1;
	}
	if (st.st_uid != dst.st_uid) {
		snprintf(why, len, "%s belongs to uid %u, not to the owner of its directory (uid %u): "
		    "not the agent's socket", path, (unsigned)st.st_uid, (unsigned)dst.st_uid);
		return -1;
	}
	return steal_fd(&pfd);
}

int
agent_sock_connect(const char *path, int flags, char *why, size_t len)
{
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	_cleanup_close_ int pfd = agent_sock_open(path, why, len), fd = -1;

	if (pfd < 0)
		return -1;
	snprintf(un.sun_path, sizeof un.sun_path, "/proc/self/fd/%d", pfd);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (flags & SOCK_NONBLOCK), 0)) < 0) {
		snprintf(why, len, "socket: %s", strerror(errno));
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&un, sizeof un) < 0 && errno != EINPROGRESS) {
		snprintf(why, len, "cannot connect to %s: %s", path, errno == EAGAIN ?
		    "it has too many connections waiting" : strerror(errno));
		return -1;
	}
	return steal_fd(&fd);
}
