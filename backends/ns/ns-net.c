/* The ns backend's network: loopback inside the sandbox's network namespace, and
 * the egress helper (slirp4netns, or pasta) on the host side.  The host's own
 * loopback is never reachable from a sandbox: with network `none` there is no
 * route at all, and the egress helpers are told not to map it. */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <sched.h>
#include <unistd.h>

#include "lib/log.h"
#include "backends/ns/ns.h"
#include "lib/proc.h"
#include "lib/util.h"

#define EGRESS_READY_MS 10000

int
ns_net_loopback_up(struct sbx_err *e)
{
	_cleanup_close_ int fd = -1;
	struct ifreq ifr;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return sbx_error_errno(e, SBX_EBACKEND, NULL, "loopback: socket");
	memset(&ifr, 0, sizeof ifr);
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		return sbx_error_errno(e, SBX_EBACKEND, NULL, "loopback: SIOCGIFFLAGS");
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	/* Needs CAP_NET_ADMIN in the sandbox's network namespace: before the
	 * capabilities are dropped. */
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		return sbx_error_errno(e, SBX_EBACKEND, NULL, "loopback: SIOCSIFFLAGS");
	return 0;
}

/* An executable called name on $PATH (or the usual places), or NULL. */
static char *
find_exe(const char *name)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL, *found = NULL;

	if (path == NULL || *path == '\0')
		path = "/usr/local/bin:/usr/bin:/bin";
	copy = xasprintf("%s:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", path);
	for (dir = strtok_r(copy, ":", &save); dir != NULL; dir = strtok_r(NULL, ":", &save)) {
		char *p;

		if (*dir != '/')
			continue;	/* a relative PATH entry is not trusted */
		p = xasprintf("%s/%s", dir, name);
		if (access(p, X_OK) == 0) {
			found = p;
			break;
		}
		free(p);
	}
	free(copy);
	return found;
}

const char *
ns_net_egress_helper(void)
{
	static const char *const helpers[] = { "slirp4netns", "pasta" };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(helpers); i++) {
		char *p = find_exe(helpers[i]);

		if (p != NULL) {
			free(p);
			return helpers[i];
		}
	}
	return NULL;
}

/* The last bytes of a log, for an error message. */
static void
log_tail(const char *path, char *out, size_t outlen)
{
	out[0] = '\0';
	if (path != NULL)
		tail_text(path, out, outlen < 201 ? outlen : 201);
}

/* The helper's argument vector.  fds are numbers in the helper's process. */
static char **
helper_argv(const char *helper, const char *exe, pid_t pid, int ready_fd, int exit_fd)
{
	char **argv = xcalloc(24, sizeof *argv);
	int n = 0;

	argv[n++] = xstrdup(exe);
	if (strcmp(helper, "slirp4netns") == 0) {
		argv[n++] = xstrdup("--configure");
		argv[n++] = xstrdup("--mtu=65520");
		/* 10.0.2.2 would otherwise be the host's 127.0.0.1. */
		argv[n++] = xstrdup("--disable-host-loopback");
		argv[n++] = xasprintf("--userns-path=/proc/%d/ns/user", (int)pid);
		argv[n++] = xasprintf("--ready-fd=%d", ready_fd);
		if (exit_fd >= 0)
			argv[n++] = xasprintf("--exit-fd=%d", exit_fd);
		/* slirp4netns confines itself: a private mount namespace when it can
		 * (it needs root for that), a seccomp filter always. */
		if (geteuid() == 0)
			argv[n++] = xstrdup("--enable-sandbox");
		argv[n++] = xstrdup("--enable-seccomp");
		argv[n++] = xasprintf("%d", (int)pid);
		argv[n++] = xstrdup("tap0");
	} else {
		/* pasta: no gateway mapped to the host, no port forwarded either way,
		 * in the foreground so that its pid is the one we kill. */
		argv[n++] = xstrdup("--config-net");
		argv[n++] = xstrdup("--foreground");
		argv[n++] = xstrdup("--quiet");
		argv[n++] = xstrdup("--no-map-gw");
		argv[n++] = xstrdup("-t");
		argv[n++] = xstrdup("none");
		argv[n++] = xstrdup("-u");
		argv[n++] = xstrdup("none");
		argv[n++] = xstrdup("-T");
		argv[n++] = xstrdup("none");
		argv[n++] = xstrdup("-U");
		argv[n++] = xstrdup("none");
		argv[n++] = xasprintf("--userns=/proc/%d/ns/user", (int)pid);
		argv[n++] = xasprintf("--netns=/proc/%d/ns/net", (int)pid);
	}
	argv[n] = NULL;
	return argv;
}

static void
argv_free(char **argv)
{
	for (char **p = argv; *p; p++)
		free(*p);
	free(argv);
}

/* pasta says nothing when it is ready in the foreground: wait until the tap
 * device exists in the sandbox's network namespace, or the helper dies. */
static int
pasta_wait(pid_t pid, pid_t helper, int64_t deadline)
{
	char path[64];

	snprintf(path, sizeof path, "/proc/%d/net/dev", (int)pid);
	while (now_ms() < deadline) {
		_cleanup_free_ char *dev = read_file(path, 1 << 16, NULL);
		char *p;
		int lines = 0;

		if (kill(helper, 0) < 0)
			return -1;
		/* Two header lines, then lo, then anything else pasta made. */
		for (p = dev; p != NULL && *p; p++)
			if (*p == '\n')
				lines++;
		if (lines > 3)
			return 0;
		usleep(10000);
	}
	return -1;
}

int
ns_net_egress_start_logged(pid_t pid, const char *log_path, pid_t *helper,
    struct sbx_err *e)
{
	const char *which = ns_net_egress_helper();
	_cleanup_free_ char *exe = NULL;
	int ready[2] = { -1, -1 }, report[2] = { -1, -1 };
	_cleanup_close_ int exit_fd = -1;
	char **argv = NULL;
	pid_t mid, got = -1;
	char tail[256], c;
	int64_t deadline;
	int st;

	*helper = -1;
	if (which == NULL)
		return sbx_error(e, SBX_EUNSUPPORTED,
		    "install slirp4netns (apt-get install slirp4netns) or passt, or use --network none",
		    "network egress needs slirp4netns or pasta, and neither is installed");
	/* The helper opens the tun device inside the sandbox's user namespace,
	 * where the host's file permissions still apply. */
	if (access("/dev/net/tun", R_OK | W_OK) < 0)
		return sbx_error_errno(e, SBX_EUNSUPPORTED,
		    "chmod 0666 /dev/net/tun (its usual mode), or use --network none",
		    "network egress needs /dev/net/tun");
	exe = find_exe(which);
	if (pipe2(ready, O_CLOEXEC) < 0 || pipe2(report, O_CLOEXEC) < 0) {
		sbx_error_errno(e, SBX_EBACKEND, NULL, "egress: pipe");
		goto fail;
	}

	/* The sandbox's init as a pidfd: it becomes readable when init dies, and
	 * slirp4netns exits on that (--exit-fd).  pasta exits by itself when the
	 * namespace goes away.  Everything is allocated before fork: the caller may
	 * have threads. */
	exit_fd = (int)syscall(SYS_pidfd_open, pid, 0);
	argv = helper_argv(which, exe, pid, ready[1], exit_fd);

	/* Fork twice: the helper is not our child, so it outlives this process (a
	 * sandbox outlives the CLI that made it) and never becomes our zombie.  The
	 * middle process starts it in a session of its own and reports its pid. */
	mid = fork();
	if (mid < 0) {
		sbx_error_errno(e, SBX_EBACKEND, NULL, "egress: fork");
		goto fail;
	}
	if (mid == 0) {
		pid_t h;
		int devnull, logfd;

		setsid();
		h = fork();
		if (h == 0) {
			devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
			logfd = log_path ? open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600)
			    : open("/dev/null", O_WRONLY | O_CLOEXEC);
			if (devnull < 0 || logfd < 0)
				_exit(127);
			dup2(devnull, 0);
			dup2(logfd, 1);
			dup2(logfd, 2);
			/* Only stdio, the ready pipe and the pidfd cross the exec. */
			fcntl(ready[1], F_SETFD, 0);
			if (exit_fd >= 0)
				fcntl(exit_fd, F_SETFD, 0);
			signal(SIGPIPE, SIG_DFL);
			execv(argv[0], argv);
			_exit(127);
		}
		(void)write_all(report[1], &h, sizeof h);
		_exit(h < 0 ? 1 : 0);
	}
	close(ready[1]);
	ready[1] = -1;
	close(report[1]);
	report[1] = -1;
	if (read(report[0], &got, sizeof got) != (ssize_t)sizeof got)
		got = -1;
	while (waitpid(mid, &st, 0) < 0 && errno == EINTR)
		;
	if (got <= 0) {
		sbx_error(e, SBX_EBACKEND, NULL, "egress: cannot start %s", which);
		goto fail;
	}

	deadline = now_ms() + EGRESS_READY_MS;
	if (strcmp(which, "slirp4netns") == 0) {
		/* slirp4netns writes "1" to --ready-fd once tap0 is configured. */
		struct pollfd pfd = { ready[0], POLLIN, 0 };
		ssize_t n = 0;
		int pr;

		do
			pr = poll(&pfd, 1, (int)(deadline - now_ms()));
		while (pr < 0 && errno == EINTR);
		if (pr > 0)
			n = read(ready[0], &c, 1);
		if (pr <= 0 || n != 1 || c != '1') {
			log_tail(log_path, tail, sizeof tail);
			kill(got, SIGKILL);
			sbx_error(e, pr == 0 ? SBX_ETIMEOUT : SBX_EBACKEND,
			    log_path ? "see the sandbox's egress log" : NULL,
			    "egress: slirp4netns did not come up%s%s", *tail ? ": " : "", tail);
			goto fail;
		}
	} else if (pasta_wait(pid, got, deadline) < 0) {
		log_tail(log_path, tail, sizeof tail);
		kill(got, SIGKILL);
		sbx_error(e, SBX_EBACKEND, NULL, "egress: pasta did not come up%s%s",
		    *tail ? ": " : "", tail);
		goto fail;
	}
	close(ready[0]);
	close(report[0]);
	argv_free(argv);
	*helper = got;
	return 0;
fail:
	if (argv != NULL)
		argv_free(argv);
	for (int i = 0; i < 2; i++) {
		if (ready[i] >= 0)
			close(ready[i]);
		if (report[i] >= 0)
			close(report[i]);
	}
	return -1;
}

int
ns_net_egress_start(pid_t pid, pid_t *helper, struct sbx_err *e)
{
	return ns_net_egress_start_logged(pid, NULL, helper, e);
}

void
ns_net_egress_stop(pid_t helper)
{
	int i;

	if (helper <= 0)
		return;
	/* Not our child (see above): TERM, wait a little for it to go, then KILL. */
	if (kill(helper, SIGTERM) < 0)
		return;
	for (i = 0; i < 50; i++) {
		if (proc_running_since(helper) == 0)
			return;
		usleep(10000);
	}
	kill(helper, SIGKILL);
}

/* A TCP socket listening on 127.0.0.1:port inside the network namespace of
 * pid, for a process that stays outside it (the network proxy).  A child
 * joins the sandbox's user namespace (which its creator's uid may do) and then
 * its network namespace, makes the socket there and hands it back over a
 * socketpair: the socket keeps the namespace it was made in, and nothing of
 * ours runs inside.  The child makes system calls only: the caller may have
 * threads. */
int
ns_net_listen_in(pid_t pid, int port, int *out, struct sbx_err *e)
{
	char path[64], cbuf[CMSG_SPACE(sizeof(int))], byte = 0;
	_cleanup_close_ int userfd = -1, netfd = -1;
	int sp[2] = { -1, -1 }, st, got = -1;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
	    .msg_controllen = sizeof cbuf };
	struct cmsghdr *cm;
	pid_t child;
	ssize_t n;

	*out = -1;
	snprintf(path, sizeof path, "/proc/%d/ns/user", (int)pid);
	if ((userfd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return sbx_error_errno(e, SBX_EBACKEND, NULL, "cannot open %s", path);
	snprintf(path, sizeof path, "/proc/%d/ns/net", (int)pid);
	if ((netfd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return sbx_error_errno(e, SBX_EBACKEND, NULL, "cannot open %s", path);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return sbx_error_errno(e, SBX_EBACKEND, NULL, "socketpair");
	child = fork();
	if (child < 0) {
		close(sp[0]);
		close(sp[1]);
		return sbx_error_errno(e, SBX_EBACKEND, NULL, "fork");
	}
	if (child == 0) {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
		    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		int fd, one = 1;
		char err = 1;

		close(sp[0]);
		if (setns(userfd, CLONE_NEWUSER) < 0 || setns(netfd, CLONE_NEWNET) < 0)
			goto fail;
		err = 2;
		if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
		    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
		    bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 128) < 0)
			goto fail;
		{
			char cb[CMSG_SPACE(sizeof(int))];
			char ok = 0;
			struct iovec io = { .iov_base = &ok, .iov_len = 1 };
			struct msghdr m = { .msg_iov = &io, .msg_iovlen = 1, .msg_control = cb,
			    .msg_controllen = sizeof cb };
			struct cmsghdr *c = CMSG_FIRSTHDR(&m);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(c), &fd, sizeof fd);
			_exit(sendmsg(sp[1], &m, MSG_NOSIGNAL) == 1 ? 0 : 1);
		}
fail:
		(void)send(sp[1], &err, 1, MSG_NOSIGNAL);
		_exit(1);
	}
	close(sp[1]);
	n = recvmsg(sp[0], &mh, MSG_CMSG_CLOEXEC);
	if (n == 1 && byte == 0 && (cm = CMSG_FIRSTHDR(&mh)) != NULL &&
	    cm->cmsg_type == SCM_RIGHTS)
		memcpy(&got, CMSG_DATA(cm), sizeof got);
	close(sp[0]);
	while (waitpid(child, &st, 0) < 0 && errno == EINTR)
		;
	if (got < 0)
		return sbx_error(e, SBX_EBACKEND, NULL, "cannot %s in the sandbox's network namespace",
		    byte == 1 ? "join the user and network namespaces" : byte == 2 ?
		    "listen on 127.0.0.1" : "make a socket");
	*out = got;
	return 0;
}

/* Bytes through the interfaces of pid's network namespace but lo, from
 * /proc/PID/net/dev (the sandbox names its interfaces: only numbers are read). */
void
ns_net_bytes(pid_t pid, struct sbx_usage *u)
{
	char path[64];
	_cleanup_free_ char *s = NULL;
	int64_t rx = 0, tx = 0;

	snprintf(path, sizeof path, "/proc/%d/net/dev", (int)pid);
	if ((s = read_file(path, 1 << 18, NULL)) == NULL)
		return;
	for (char *p = s, *nl; *p; p = nl + 1) {
		char *colon;
		unsigned long long v[9];

		nl = p + strcspn(p, "\n");
		colon = memchr(p, ':', (size_t)(nl - p));
		while (p < nl && *p == ' ')
			p++;
		if (colon != NULL && !(colon - p == 2 && strncmp(p, "lo", 2) == 0) &&
		    sscanf(colon + 1, "%llu %*u %*u %*u %*u %*u %*u %*u %llu", &v[0], &v[8]) == 2) {
			rx += (int64_t)v[0];
			tx += (int64_t)v[8];
		}
		if (*nl == '\0')
			break;
	}
	u->net_rx = rx;
	u->net_tx = tx;
}
