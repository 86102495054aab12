/* Chores of the qemu backend and the image builder: running helper programs
 * with their output captured, host process checks, removing trees, and a small
 * QMP client (one command per connection, which is all suspend, resume and
 * status need). */
#define _XOPEN_SOURCE_EXTENDED 1
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/qemu/qemu.h"
#include "lib/utf8.h"
#include "lib/util.h"

#define RUN_OUTPUT_MAX	(256 * 1024)

char *
qemu_which(const char *prog)
{
	const char *path = getenv("PATH");
	_cleanup_free_ char *copy = xstrdup(path != NULL && *path ? path : "/usr/bin:/bin:/usr/sbin:/sbin");
	char *save = NULL;

	if (strchr(prog, '/') != NULL)
		return access(prog, X_OK) == 0 ? xstrdup(prog) : NULL;
	for (char *d = strtok_r(copy, ":", &save); d != NULL; d = strtok_r(NULL, ":", &save)) {
		char *p = xasprintf("%s/%s", d, prog);
		if (access(p, X_OK) == 0)
			return p;
		free(p);
	}
	/* Debian keeps mke2fs in /sbin, outside a user's PATH. */
	for (const char *const *d = (const char *const[]){ "/usr/sbin", "/sbin", NULL }; *d; d++) {
		char *p = xasprintf("%s/%s", *d, prog);
		if (access(p, X_OK) == 0)
			return p;
		free(p);
	}
	return NULL;
}

int
qemu_run(char *const argv[], const char *cwd, int timeout_ms, char **out, struct sbx_err *e)
{
	char *text = NULL;
	int rc = qemu_run_status(argv, cwd, timeout_ms, &text, NULL, e);

	if (rc == 0 && out != NULL)
		*out = text;
	else
		free(text);
	return rc;
}

int
qemu_run_status(char *const argv[], const char *cwd, int timeout_ms, char **out, int *exit_status,
    struct sbx_err *e)
{
	_cleanup_free_ char *prog = qemu_which(argv[0]);
	int pfd[2], status = 0;
	char *text = NULL;
	size_t len = 0;
	pid_t pid;
	int64_t end = now_ms() + timeout_ms;

	if (out != NULL)
		*out = NULL;
	if (exit_status != NULL)
		*exit_status = -1;
	if (prog == NULL)
		return sbx_error(e, SBX_EUNSUPPORTED, "run scripts/deps.sh (or install it from your distribution)",
		    "%s is not installed (not found in PATH, /usr/sbin or /sbin)", argv[0]);
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "pipe");
	if ((pid = fork()) < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return sbx_error_errno(e, SBX_EIO, NULL, "fork");
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);
		if (null < 0 || dup2(null, 0) < 0 || dup2(pfd[1], 1) < 0 || dup2(pfd[1], 2) < 0)
			_exit(127);
		if (cwd != NULL && chdir(cwd) < 0)
			_exit(127);
		syscall(SYS_close_range, 3, ~0U, 0);
		/* Its own process group, so a timeout kills helpers it started. */
		setpgid(0, 0);
		execv(prog, argv);
		_exit(127);
	}
	close(pfd[1]);
	text = xmalloc(RUN_OUTPUT_MAX + 1);
	for (;;) {
		struct pollfd p = { .fd = pfd[0], .events = POLLIN };
		int left = (int)(end - now_ms());
		ssize_t n;
		if (left <= 0) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			break;
		}
		if (poll(&p, 1, left) <= 0)
			continue;
		if (len < RUN_OUTPUT_MAX)
			n = read(pfd[0], text + len, RUN_OUTPUT_MAX - len);
		else {
			char sink[4096];
			n = read(pfd[0], sink, sizeof sink);	/* keep the head, drop the rest */
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (len < RUN_OUTPUT_MAX)
			len += (size_t)n;
	}
	close(pfd[0]);
	text[len] = '\0';
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (now_ms() >= end && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
		free(text);
		return sbx_error(e, SBX_ETIMEOUT, NULL, "%s did not finish within %d s", argv[0],
		    timeout_ms / 1000);
	}
	if (exit_status != NULL && WIFEXITED(status))
		*exit_status = WEXITSTATUS(status);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		/* The last non-empty line says what went wrong. */
		char *end_line = text + len, *last;
		while (end_line > text && (end_line[-1] == '\n' || end_line[-1] == ' '))
			*--end_line = '\0';
		last = strrchr(text, '\n');
		last = last != NULL ? last + 1 : text;
		sbx_error(e, SBX_EBACKEND, NULL, "%s failed (%s %d): %.300s", argv[0],
		    WIFEXITED(status) ? "exit status" : "signal",
		    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
		    *last ? last : "(no output)");
		if (out != NULL)
			*out = text;
		else
			free(text);
		return -1;
	}
	if (out != NULL)
		*out = text;
	else
		free(text);
	return 0;
}

static int
rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st; (void)ftw;
	if (type == FTW_DP)
		return rmdir(path) < 0 && errno != ENOENT ? -1 : 0;
	return unlink(path) < 0 && errno != ENOENT ? -1 : 0;
}

int
qemu_rmtree(const char *path, struct sbx_err *e)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : sbx_error_errno(e, SBX_EIO, NULL, "cannot stat %s", path);
	if (nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot remove %s", path);
	return 0;
}

void
qemu_file_tail(const char *path, char *out, size_t max)
{
	/* The guest writes the console: its controls, C1 ones too, are escaped. */
	tail_text(path, out, max < 8192 ? max : 8192);
}

int
qemu_write_file(const char *path, const void *data, size_t len, struct sbx_err *e)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0 || write_all(fd, data, len) < 0)
		return sbx_error_errno(e, SBX_EIO, "is the disk full?", "cannot write %s", path);
	return 0;
}

/* Hard link from to to (so removing the image or snapshot never pulls a file
 * from under a VM), or a copy (reflinked where the filesystem can) when they
 * are on different filesystems. */
int
qemu_link_or_copy(const char *from, const char *to, struct sbx_err *e)
{
	if (link(from, to) == 0)
		return 0;
	if (errno != EXDEV && errno != EPERM && errno != EMLINK)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot link %s to %s", from, to);
	char *argv[] = { "cp", "--reflink=auto", "--sparse=always", "--", (char *)from, (char *)to, NULL };
	return qemu_run(argv, NULL, 5 * 60 * 1000, NULL, e);
}

/* --- QMP ------------------------------------------------------------------ */

/* Read one JSON line (QMP sends one object per line) into buf. */
static int
qmp_line(int fd, char *buf, size_t cap, int64_t end, struct sbx_err *e)
{
	size_t len = 0;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int left = (int)(end - now_ms());
		ssize_t n;
		if (left <= 0)
			return sbx_error(e, SBX_ETIMEOUT, NULL, "QMP did not answer in time");
		if (poll(&p, 1, left) <= 0)
			continue;
		if (len + 1 >= cap)
			return sbx_error(e, SBX_EBACKEND, NULL, "QMP sent a line longer than %zu bytes", cap);
		n = read(fd, buf + len, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return sbx_error(e, SBX_EBACKEND, NULL, "QMP closed the connection");
		if (buf[len] == '\n') {
			buf[len] = '\0';
			return 0;
		}
		len++;
	}
}

/* Send line, then read until the answer (skipping events). */
static int
qmp_call(int fd, const char *line, int64_t end, cJSON **reply, struct sbx_err *e)
{
	char buf[16384];

	if (write_all(fd, line, strlen(line)) < 0)
		return sbx_error_errno(e, SBX_EBACKEND, NULL, "cannot write to QMP");
	for (;;) {
		cJSON *o;
		if (qmp_line(fd, buf, sizeof buf, end, e) < 0)
			return -1;
		if ((o = cJSON_Parse(buf)) == NULL)
			return sbx_error(e, SBX_EBACKEND, NULL, "QMP sent something that is not JSON");
		if (cJSON_GetObjectItemCaseSensitive(o, "return") != NULL ||
		    cJSON_GetObjectItemCaseSensitive(o, "error") != NULL) {
			*reply = o;
			return 0;
		}
		cJSON_Delete(o);	/* an event */
	}
}

int
qemu_qmp(const char *path, const char *cmd, const char *args_json, int timeout_ms,
    char **ret, struct sbx_err *e)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *line = NULL;
	int64_t end = now_ms() + timeout_ms;
	char greeting[4096];
	cJSON *reply = NULL, *err;
	int rc = -1;

	if (ret != NULL)
		*ret = NULL;
	if (strlen(path) >= sizeof sa.sun_path)
		return sbx_error(e, SBX_EINVAL, NULL, "QMP socket path too long: %s", path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "socket");
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
		return sbx_error_errno(e, SBX_EBACKEND, "run `sbxtop status` to see whether the VM is alive",
		    "cannot connect to QMP at %s", path);
	if (qmp_line(fd, greeting, sizeof greeting, end, e) < 0 ||
	    qmp_call(fd, "{\"execute\":\"qmp_capabilities\"}\n", end, &reply, e) < 0)
		return -1;
	cJSON_Delete(reply);
	reply = NULL;
	line = args_json != NULL ?
	    xasprintf("{\"execute\":\"%s\",\"arguments\":%s}\n", cmd, args_json) :
	    xasprintf("{\"execute\":\"%s\"}\n", cmd);
	if (qmp_call(fd, line, end, &reply, e) < 0)
		return -1;
	if ((err = cJSON_GetObjectItemCaseSensitive(reply, "error")) != NULL) {
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(err, "desc");
		sbx_error(e, SBX_EBACKEND, NULL, "QMP %s: %s", cmd,
		    cJSON_IsString(d) ? d->valuestring : "error");
	} else {
		if (ret != NULL)
			*ret = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(reply, "return"));
		rc = 0;
	}
	cJSON_Delete(reply);
	return rc;
}
