/* sudo inside a sandbox: its user may become its root.  That is the sandbox's
 * own business (its root is not the host's, and nothing outside changes), and
 * agents type `sudo apt-get install` by habit.  A setuid sudo cannot work here
 * (no_new_privs voids the bit), so sudo is a request to the agent, PID 1 and
 * root of the sandbox.
 *
 * Server: the agent, when it is PID 1 with a separate sandbox user, listens on
 * the abstract unix socket "@sbxtop-sudo" of the sandbox's network namespace,
 * which nothing outside that namespace reaches (and no file mode guards).  For
 * each request it forks the command as root, in a process group of its own,
 * on the caller's own stdin, stdout, stderr and cwd (passed as descriptors),
 * and answers its wait status.  Signals the caller gets (INT, TERM, HUP, QUIT,
 * USR1, USR2) go on to the command's group; a caller that goes away takes the
 * command with it (KILL).
 *
 * Client: `sbxtop-agent --sudo ARGS`, which the ns image's /usr/local/bin/sudo
 * runs.  It is picked out before main() by a constructor, so the agent's own
 * options never see it.  As root already (a sandbox without a separate user),
 * it runs the command itself.
 *
 * The request is one SOCK_SEQPACKET message of NUL-terminated fields:
 *   "sbxtop-sudo 1" FLAGS ARGC ARG... ENVC ENV... SETC SET...
 * FLAGS is "E" (keep the caller's environment) or ""; ENV the caller's
 * environment, SET the VAR=value words before the command.  Answers: 'x' and a
 * wait status, or 'e', an exit status and a message.  The caller sends 's' and
 * a signal number. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/agent.h"
#include "lib/log.h"
#include "lib/util.h"

#define SUDO_SOCK	"sbxtop-sudo"		/* abstract: "\0sbxtop-sudo" */
#define SUDO_MAGIC	"sbxtop-sudo 1"
#define SUDO_REQ_MAX	(160 * 1024)		/* under the default socket buffer */
#define SUDO_NFDS	4			/* stdin, stdout, stderr, cwd */
#define SUDO_MAX_ARGS	4096
/* Each request holds a thread of the agent, and anyone in the sandbox may
 * ask: a bound, so that they cannot use up the agent's reserve of threads. */
#define SUDO_MAX_CONNS	32
#define SUDO_REQ_TIMEOUT_S 10

static _Atomic int sudo_conns;

static socklen_t
sudo_addr(struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof *sa);
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path + 1, SUDO_SOCK, strlen(SUDO_SOCK));
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(SUDO_SOCK));
}

/* --- the server, in the agent ---------------------------------------------- */

struct sudo_conn {
	int		 sock;
	int		 fds[SUDO_NFDS];
	int		 exit_pipe[2];	/* the reaper writes the wait status here */
	pthread_mutex_t	 mu;
	pid_t		 pid;
	int		 exited;	/* reaped: pid (and its group id) may be reused */
};

/* Environment words kept from the caller without -E. */
static int
env_kept(const char *kv)
{
	static const char *const keep[] = { "TERM=", "COLORTERM=", "LANG=", "LANGUAGE=", "LC_",
	    "TZ=", "COLUMNS=", "LINES=", "NO_COLOR=", "DEBIAN_FRONTEND=" };

	for (size_t i = 0; i < ARRAY_SIZE(keep); i++)
		if (strncmp(kv, keep[i], strlen(keep[i])) == 0)
			return 1;
	return 0;
}

/* Put kv (NAME=value, copied) into the NULL-terminated vector *v of *n words,
 * replacing a word of the same name. */
static void
env_set(char ***v, size_t *n, const char *kv)
{
	const char *eq = strchr(kv, '=');
	size_t klen = eq ? (size_t)(eq - kv) + 1 : strlen(kv);

	if (eq == NULL || eq == kv)
		return;
	for (size_t i = 0; i < *n; i++)
		if (strncmp((*v)[i], kv, klen) == 0) {
			free((*v)[i]);
			(*v)[i] = xstrdup(kv);
			return;
		}
	*v = xrealloc(*v, (*n + 2) * sizeof **v);
	(*v)[(*n)++] = xstrdup(kv);
	(*v)[*n] = NULL;
}

/* The next NUL-terminated field of [*p, end), or NULL. */
static const char *
field(const char **p, const char *end)
{
	const char *s = *p, *z = s < end ? memchr(s, '\0', (size_t)(end - s)) : NULL;

	if (z == NULL)
		return NULL;
	*p = z + 1;
	return s;
}

static long
count_field(const char **p, const char *end)
{
	const char *s = field(p, end);
	char *stop;
	long v;

	if (s == NULL || *s == '\0')
		return -1;
	v = strtol(s, &stop, 10);
	return *stop != '\0' || v < 0 || v > SUDO_MAX_ARGS ? -1 : v;
}

/* A command name without '/' found in PATH (absolute entries only), or NULL. */
static char *
find_in_path(const char *name, char *const *envp)
{
	const char *path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

	for (char *const *e = envp; *e != NULL; e++)
		if (strncmp(*e, "PATH=", 5) == 0)
			path = *e + 5;
	for (const char *p = path; *p != '\0';) {
		size_t len = strcspn(p, ":");
		if (len > 0 && p[0] == '/') {
			char *cand = xasprintf("%.*s/%s", (int)len, p, name);
			struct stat st;
			if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0)
				return cand;
			free(cand);
		}
		p += len;
		if (*p == ':')
			p++;
	}
	return NULL;
}

static void
sudo_reaped(pid_t pid, int status, void *arg)
{
	struct sudo_conn *c = arg;

	(void)pid;
	pthread_mutex_lock(&c->mu);
	c->exited = 1;
	(void)!write(c->exit_pipe[1], &status, sizeof status);
	pthread_mutex_unlock(&c->mu);
}

static void
sudo_answer_error(int sock, int code, const char *msg)
{
	char buf[600];
	int32_t c = code;
	size_t n = strlen(msg);

	if (n > sizeof buf - 1 - sizeof c)
		n = sizeof buf - 1 - sizeof c;
	buf[0] = 'e';
	memcpy(buf + 1, &c, sizeof c);
	memcpy(buf + 1 + sizeof c, msg, n);
	(void)send(sock, buf, 1 + sizeof c + n, MSG_NOSIGNAL);
}

/* In the forked child: system calls only until execve (the agent has other
 * threads).  The caller's descriptors onto 0-2, its cwd, every other
 * descriptor closed, signals as a fresh process has them. */
static void __attribute__((noreturn))
sudo_child(const struct sudo_conn *c, int report_fd, const char *path, char **argv,
    char **envp)
{
	int src[SUDO_NFDS + 1] = { c->fds[0], c->fds[1], c->fds[2], c->fds[3], report_fd };
	int tmp[SUDO_NFDS + 1];
	sigset_t none;
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	int err;

	setpgid(0, 0);
	agent_child_oom_expose();
	for (int i = 0; i <= SUDO_NFDS; i++)
		if ((tmp[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 10)) < 0)
			_exit(127);
	for (int i = 0; i < 3; i++)
		if (dup2(tmp[i], i) < 0)
			_exit(127);
	if (dup2(tmp[4], 3) < 0 || fchdir(tmp[3]) < 0)
		goto fail;
	fcntl(3, F_SETFD, FD_CLOEXEC);
	if (close_range(4, ~0U, 0) < 0)
		goto fail;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	sigaction(SIGPIPE, &dfl, NULL);
	execve(path, argv, envp);
fail:
	err = errno;
	(void)!write(3, &err, sizeof err);
	_exit(127);
}

static void
sudo_serve(struct sudo_conn *c)
{
	_cleanup_free_ char *req = xmalloc(SUDO_REQ_MAX);
	char cbuf[CMSG_SPACE(sizeof(int) * SUDO_NFDS)];
	struct iovec iov = { .iov_base = req, .iov_len = SUDO_REQ_MAX };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
	    .msg_controllen = sizeof cbuf };
	struct cmsghdr *cm;
	struct ucred cred;
	socklen_t clen = sizeof cred;
	const char *p, *end, *flags, *who = "?";
	char pwbuf[1024];
	char **argv = NULL, **envp = NULL, *path = NULL, *cmdline = NULL;
	size_t nenv = 0;
	long argc, envc, setc;
	int rp[2] = { -1, -1 }, status = 0, have_status = 0, err = 0;
	ssize_t n;
	pid_t pid;

	n = recvmsg(c->sock, &mh, MSG_CMSG_CLOEXEC);
	if (n <= 0)
		return;
	if ((cm = CMSG_FIRSTHDR(&mh)) != NULL && cm->cmsg_level == SOL_SOCKET &&
	    cm->cmsg_type == SCM_RIGHTS) {
		int nfds = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (int i = 0; i < nfds; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
			if (i < SUDO_NFDS)
				c->fds[i] = fd;
			else
				close(fd);
		}
	}
	if ((mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || c->fds[SUDO_NFDS - 1] < 0) {
		sudo_answer_error(c->sock, 1, "sudo: a malformed request (too large, or without "
		    "its descriptors)");
		return;
	}
	if (getsockopt(c->sock, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0)
		cred.uid = cred.gid = (uid_t)-1;
	p = req;
	end = req + n;
	if ((flags = field(&p, end)) == NULL || strcmp(flags, SUDO_MAGIC) != 0 ||
	    (flags = field(&p, end)) == NULL || (argc = count_field(&p, end)) < 1) {
		sudo_answer_error(c->sock, 1, "sudo: a malformed request (this sudo and the agent differ?)");
		return;
	}
	argv = xcalloc((size_t)argc + 1, sizeof *argv);
	for (long i = 0; i < argc; i++)
		if ((argv[i] = (char *)field(&p, end)) == NULL)
			goto malformed;
	/* The root's clean environment; the caller's words it keeps (all with -E);
	 * what sudo conventionally adds; then VAR=value from the command line. */
	envp = agent_child_env(1);
	while (envp[nenv] != NULL)
		nenv++;
	if ((envc = count_field(&p, end)) < 0)
		goto malformed;
	for (long i = 0; i < envc; i++) {
		const char *kv = field(&p, end);
		if (kv == NULL)
			goto malformed;
		if (strchr(flags, 'E') != NULL || env_kept(kv))
			env_set(&envp, &nenv, kv);
	}
	{
		struct passwd pw, *pwp = NULL;
		if (getpwuid_r(cred.uid, &pw, pwbuf, sizeof pwbuf, &pwp) == 0 && pwp != NULL)
			who = pwp->pw_name;
		_cleanup_free_ char *user_kv = xasprintf("SUDO_USER=%s", who);
		_cleanup_free_ char *uid_kv = xasprintf("SUDO_UID=%u", (unsigned)cred.uid);
		_cleanup_free_ char *gid_kv = xasprintf("SUDO_GID=%u", (unsigned)cred.gid);
		cmdline = xstrdup("SUDO_COMMAND=");
		for (long k = 0; k < argc; k++) {
			char *t = xasprintf("%s%s%s", cmdline, k ? " " : "", argv[k]);
			free(cmdline);
			cmdline = t;
		}
		env_set(&envp, &nenv, user_kv);
		env_set(&envp, &nenv, uid_kv);
		env_set(&envp, &nenv, gid_kv);
		env_set(&envp, &nenv, cmdline);
	}
	if ((setc = count_field(&p, end)) < 0)
		goto malformed;
	for (long i = 0; i < setc; i++) {
		const char *kv = field(&p, end);
		if (kv == NULL)
			goto malformed;
		env_set(&envp, &nenv, kv);
	}

	if (strchr(argv[0], '/') != NULL) {
		path = xstrdup(argv[0]);	/* relative to the caller's cwd, in the child */
	} else if ((path = find_in_path(argv[0], envp)) == NULL) {
		_cleanup_free_ char *m = xasprintf("sudo: %s: command not found", argv[0]);
		sudo_answer_error(c->sock, 1, m);
		goto out;
	}
	if (pipe2(rp, O_CLOEXEC) < 0 || pipe2(c->exit_pipe, O_CLOEXEC) < 0) {
		sudo_answer_error(c->sock, 1, "sudo: the agent cannot make a pipe");
		goto out;
	}
	log_info("sudo: %s (uid %u) runs %s as root", who, (unsigned)cred.uid, cmdline + 13);
	children_lock();
	pid = fork();
	if (pid == 0)
		sudo_child(c, rp[1], path, argv, envp);
	if (pid < 0) {
		children_unlock();
		sudo_answer_error(c->sock, 1, "sudo: the agent cannot fork");
		goto out;
	}
	setpgid(pid, pid);
	c->pid = pid;
	child_watch(pid, sudo_reaped, c);
	children_unlock();
	close(rp[1]);
	rp[1] = -1;
	for (int i = 0; i < SUDO_NFDS; i++) {
		close(c->fds[i]);
		c->fds[i] = -1;
	}
	if (read(rp[0], &err, sizeof err) != (ssize_t)sizeof err)
		err = 0;		/* EOF at exec: it runs */

	/* Until it is reaped: the caller's signals go to its group, and a caller
	 * that leaves takes it along. */
	struct pollfd pf[2] = { { .fd = c->exit_pipe[0], .events = POLLIN },
	    { .fd = c->sock, .events = POLLIN | POLLRDHUP } };
	while (!have_status) {
		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pf[0].revents) {
			have_status = read(c->exit_pipe[0], &status, sizeof status) == (ssize_t)sizeof status;
			break;
		}
		if (pf[1].revents) {
			char m[8];
			int32_t sig;
			n = recv(c->sock, m, sizeof m, MSG_DONTWAIT);
			pthread_mutex_lock(&c->mu);
			if (n == 5 && m[0] == 's') {
				memcpy(&sig, m + 1, sizeof sig);
				if (!c->exited && (sig == SIGINT || sig == SIGTERM || sig == SIGHUP ||
				    sig == SIGQUIT || sig == SIGUSR1 || sig == SIGUSR2))
					kill(-pid, sig);
			} else if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
				if (!c->exited)
					kill(-pid, SIGKILL);
				pf[1].fd = -1;	/* nobody to answer: wait for the reap */
			}
			pthread_mutex_unlock(&c->mu);
		}
	}
	if (err != 0) {
		_cleanup_free_ char *m = xasprintf("sudo: %s: %s", argv[0], strerror(err));
		sudo_answer_error(c->sock, err == ENOENT ? 1 : 126, m);
	} else if (have_status) {
		char m[1 + sizeof(int32_t)];
		int32_t st = status;
		m[0] = 'x';
		memcpy(m + 1, &st, sizeof st);
		(void)send(c->sock, m, sizeof m, MSG_NOSIGNAL);
	}
	goto out;
malformed:
	sudo_answer_error(c->sock, 1, "sudo: a malformed request");
out:
	if (rp[0] >= 0) close(rp[0]);
	if (rp[1] >= 0) close(rp[1]);
	free(argv);		/* the words point into req */
	strv_free(envp);
	free(path);
	free(cmdline);
}

static void *
sudo_conn_main(void *arg)
{
	struct sudo_conn *c = arg;

	sudo_serve(c);
	/* Whatever became of the request, a forked command is reaped before the
	 * connection goes (the reaper writes to its pipe). */
	if (c->pid > 0) {
		pthread_mutex_lock(&c->mu);
		int exited = c->exited;
		pthread_mutex_unlock(&c->mu);
		if (!exited) {
			int st;
			while (read(c->exit_pipe[0], &st, sizeof st) < 0 && errno == EINTR)
				;
		}
	}
	for (int i = 0; i < SUDO_NFDS; i++)
		if (c->fds[i] >= 0)
			close(c->fds[i]);
	if (c->exit_pipe[0] >= 0) close(c->exit_pipe[0]);
	if (c->exit_pipe[1] >= 0) close(c->exit_pipe[1]);
	close(c->sock);
	pthread_mutex_destroy(&c->mu);
	free(c);
	sudo_conns--;
	return NULL;
}

static void *
sudo_accept_main(void *arg)
{
	int lfd = (int)(intptr_t)arg;

	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		pthread_t t;
		if (fd < 0) {
			if (errno != EINTR && errno != ECONNABORTED)
				poll(NULL, 0, 100);	/* out of descriptors: breathe */
			continue;
		}
		if (sudo_conns >= SUDO_MAX_CONNS) {
			sudo_answer_error(fd, 1, "sudo: too many sudo commands run at once in this "
			    "sandbox; wait for one to finish");
			close(fd);
			continue;
		}
		/* The request comes at once or not at all. */
		struct timeval tv = { .tv_sec = SUDO_REQ_TIMEOUT_S };
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		sudo_conns++;
		struct sudo_conn *c = xcalloc(1, sizeof *c);
		c->sock = fd;
		c->fds[0] = c->fds[1] = c->fds[2] = c->fds[3] = -1;
		c->exit_pipe[0] = c->exit_pipe[1] = -1;
		pthread_mutex_init(&c->mu, NULL);
		if (pthread_create(&t, NULL, sudo_conn_main, c) != 0) {
			close(fd);
			pthread_mutex_destroy(&c->mu);
			free(c);
			sudo_conns--;
			continue;
		}
		pthread_detach(t);
	}
	return NULL;
}

void
sudo_listen(void)
{
	struct sockaddr_un sa;
	socklen_t len = sudo_addr(&sa);
	pthread_t t;
	int fd;

	/* Only as the sandbox's init: an agent run on a host (tests, a plain
	 * --listen) must not offer root to whoever shares its network namespace. */
	if (!agent.init || getpid() != 1 || !agent.have_user)
		return;
	if ((fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, len) < 0 || listen(fd, 64) < 0) {
		log_warn("sudo: cannot listen on @%s", SUDO_SOCK);
		if (fd >= 0)
			close(fd);
		return;
	}
	if (pthread_create(&t, NULL, sudo_accept_main, (void *)(intptr_t)fd) != 0) {
		log_warnx("sudo: cannot start its thread");
		close(fd);
		return;
	}
	pthread_detach(t);
}

/* --- the client: sbxtop-agent --sudo ----------------------------------------- */

static int sudo_sock = -1;

static void
sudo_forward(int sig)
{
	char m[1 + sizeof(int32_t)];
	int32_t s = sig;
	int saved = errno;

	m[0] = 's';
	memcpy(m + 1, &s, sizeof s);
	(void)send(sudo_sock, m, sizeof m, MSG_NOSIGNAL | MSG_DONTWAIT);
	errno = saved;
}

static void
sudo_usage(FILE *f)
{
	fprintf(f, "usage: sudo [-EHnSkKv] [-u root] [-D DIR] [-i | -s] [VAR=value]... [--] COMMAND [ARG]...\n"
	    "       sudo -l | -V | -h\n"
	    "Runs COMMAND as this sandbox's root, through the sandbox's agent (no password:\n"
	    "the sandbox's root is the sandbox's own, not the host's).\n");
}

/* Words joined for `sh -c`, each character that is not plain escaped (as
 * sudo -s and -i do). */
static char *
shell_join(char **v, int n)
{
	size_t len = 1;
	char *out, *q;

	for (int i = 0; i < n; i++)
		len += 2 * strlen(v[i]) + 1;
	out = q = xmalloc(len);
	for (int i = 0; i < n; i++) {
		if (i > 0)
			*q++ = ' ';
		for (const char *s = v[i]; *s; s++) {
			if (!(*s == '_' || *s == '-' || *s == '$' || *s == '/' || *s == '.' ||
			    (*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
				*q++ = '\\';
			*q++ = *s;
		}
	}
	*q = '\0';
	return out;
}

static int
sudo_root_user(const char *u)
{
	return strcmp(u, "root") == 0 || strcmp(u, "0") == 0 || strcmp(u, "#0") == 0;
}

static int
sudo_client(int argc, char **argv, char **envp)
{
	int keep_env = 0, login = 0, shell = 0, i;
	const char *chdir_to = NULL;
	char **cmd, **sets;
	int ncmd = 0, nsets = 0;

	for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1] != '\0'; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (a[1] == '-') {
			const char *eq = strchr(a, '=');
			size_t kl = eq ? (size_t)(eq - a) : strlen(a);
#define LONG(name) (kl == strlen(name) && strncmp(a, name, kl) == 0)
			if (LONG("--preserve-env"))		keep_env = 1;
			else if (LONG("--login"))		login = 1;
			else if (LONG("--shell"))		shell = 1;
			else if (LONG("--non-interactive") || LONG("--stdin") || LONG("--set-home"))
				;
			else if (LONG("--reset-timestamp") || LONG("--remove-timestamp") ||
			    LONG("--validate"))
				return 0;
			else if (LONG("--user") || LONG("--chdir") || LONG("--group") || LONG("--prompt")) {
				const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
				if (v == NULL) {
					fprintf(stderr, "sudo: %.*s needs a value\n", (int)kl, a);
					return 1;
				}
				if ((LONG("--user") || LONG("--group")) && !sudo_root_user(v)) {
					fprintf(stderr, "sudo: this sandbox's sudo runs commands as root only, not '%s'\n", v);
					return 1;
				}
				if (LONG("--chdir"))
					chdir_to = v;
			} else if (LONG("--help")) {
				sudo_usage(stdout);
				return 0;
			} else if (LONG("--version")) {
				printf("sudo (sbxtop sandbox, through sbxtop-agent %s)\n", SBX_VERSION);
				return 0;
			} else if (LONG("--list")) {
				printf("You may run the following commands in this sandbox:\n    (root) NOPASSWD: ALL\n");
				return 0;
			} else {
				fprintf(stderr, "sudo: unknown option %s\n", a);
				sudo_usage(stderr);
				return 1;
			}
#undef LONG
			continue;
		}
		for (const char *f = a + 1; *f; f++) {
			switch (*f) {
			case 'E': keep_env = 1; break;
			case 'i': login = 1; break;
			case 's': shell = 1; break;
			case 'n': case 'S': case 'H': case 'P': case 'A': break;
			case 'k': case 'K': case 'v':
				if (a[2] == '\0' && i + 1 == argc)
					return 0;
				break;
			case 'l': printf("You may run the following commands in this sandbox:\n"
				      "    (root) NOPASSWD: ALL\n"); return 0;
			case 'V': printf("sudo (sbxtop sandbox, through sbxtop-agent %s)\n", SBX_VERSION);
				return 0;
			case 'h': sudo_usage(stdout); return 0;
			case 'u': case 'g': case 'D': case 'p': case 'C': case 'T': {
				const char *v = f[1] ? f + 1 : (i + 1 < argc ? argv[++i] : NULL);
				if (v == NULL) {
					fprintf(stderr, "sudo: -%c needs a value\n", *f);
					return 1;
				}
				if ((*f == 'u' || *f == 'g') && !sudo_root_user(v)) {
					fprintf(stderr, "sudo: this sandbox's sudo runs commands as root only, not '%s'\n", v);
					return 1;
				}
				if (*f == 'D')
					chdir_to = v;
				f = a + strlen(a) - 1;	/* the rest of the word was the value */
				break;
			}
			default:
				fprintf(stderr, "sudo: unknown option -%c\n", *f);
				sudo_usage(stderr);
				return 1;
			}
		}
	}
	sets = argv + i;
	while (i < argc && strchr(argv[i], '=') != NULL && argv[i][0] != '=' &&
	    strcspn(argv[i], "=") == strspn(argv[i], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")) {
		nsets++;
		i++;
	}
	/* The command: as given, or a shell (-s) or root's login shell (-i). */
	if (login || shell) {
		struct passwd *pw = login ? getpwuid(0) : NULL;
		const char *sh = login ? (pw && pw->pw_shell[0] ? pw->pw_shell : "/bin/sh") :
		    (getenv("SHELL") ? getenv("SHELL") : "/bin/sh");
		cmd = xcalloc(5, sizeof *cmd);
		cmd[ncmd++] = xstrdup(sh);
		if (login)
			cmd[ncmd++] = xstrdup("-l");
		if (i < argc) {
			cmd[ncmd++] = xstrdup("-c");
			cmd[ncmd++] = shell_join(argv + i, argc - i);
		}
		if (login && chdir_to == NULL)
			chdir_to = pw && pw->pw_dir[0] ? pw->pw_dir : "/root";
	} else if (i < argc) {
		cmd = argv + i;
		ncmd = argc - i;
	} else {
		sudo_usage(stderr);
		return 1;
	}

	if (geteuid() == 0) {
		/* Root already (a sandbox without a separate user): just run it. */
		for (int k = 0; k < nsets; k++)
			putenv(sets[k]);
		if (chdir_to != NULL && chdir(chdir_to) < 0) {
			fprintf(stderr, "sudo: cannot enter %s: %s\n", chdir_to, strerror(errno));
			return 1;
		}
		char **v = xcalloc((size_t)ncmd + 1, sizeof *v);
		memcpy(v, cmd, sizeof *v * (size_t)ncmd);
		execvp(v[0], v);
		fprintf(stderr, "sudo: %s: %s\n", v[0], errno == ENOENT ? "command not found" : strerror(errno));
		return errno == ENOENT ? 1 : 126;
	}

	struct sockaddr_un sa;
	socklen_t salen = sudo_addr(&sa);
	if ((sudo_sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0)) < 0 ||
	    connect(sudo_sock, (struct sockaddr *)&sa, salen) < 0) {
		fprintf(stderr, "sudo: cannot reach this sandbox's agent (@%s: %s); sudo works in "
		    "sbxtop sandboxes that have a separate sandbox user\n", SUDO_SOCK, strerror(errno));
		return 1;
	}
	/* The request. */
	struct buf_req { char *d; size_t len, cap; } r = { NULL, 0, 0 };
#define PUT(s) do { size_t _l = strlen(s) + 1; \
		if (r.len + _l > SUDO_REQ_MAX) goto too_big; \
		if (r.len + _l > r.cap) { r.cap = (r.len + _l) * 2; r.d = xrealloc(r.d, r.cap); } \
		memcpy(r.d + r.len, (s), _l); r.len += _l; } while (0)
	char num[16];
	int nenv = 0;
	PUT(SUDO_MAGIC);
	PUT(keep_env ? "E" : "");
	snprintf(num, sizeof num, "%d", ncmd);
	PUT(num);
	for (int k = 0; k < ncmd; k++)
		PUT(cmd[k]);
	while (envp != NULL && envp[nenv] != NULL)
		nenv++;
	snprintf(num, sizeof num, "%d", nenv);
	PUT(num);
	for (int k = 0; k < nenv; k++)
		PUT(envp[k]);
	snprintf(num, sizeof num, "%d", nsets);
	PUT(num);
	for (int k = 0; k < nsets; k++)
		PUT(sets[k]);
#undef PUT

	int fds[SUDO_NFDS];
	for (int k = 0; k < 3; k++)
		if ((fds[k] = fcntl(k, F_DUPFD_CLOEXEC, 3)) < 0)
			fds[k] = open("/dev/null", k == 0 ? O_RDONLY | O_CLOEXEC : O_WRONLY | O_CLOEXEC);
	fds[3] = open(chdir_to ? chdir_to : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fds[3] < 0) {
		fprintf(stderr, "sudo: cannot use %s as the directory: %s\n",
		    chdir_to ? chdir_to : "the current directory", strerror(errno));
		return 1;
	}
	char cbuf[CMSG_SPACE(sizeof fds)];
	memset(cbuf, 0, sizeof cbuf);
	struct iovec iov = { .iov_base = r.d, .iov_len = r.len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
	    .msg_controllen = sizeof cbuf };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof fds);
	memcpy(CMSG_DATA(cm), fds, sizeof fds);
	int sndbuf = SUDO_REQ_MAX + 4096;
	(void)setsockopt(sudo_sock, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
	if (sendmsg(sudo_sock, &mh, MSG_NOSIGNAL) != (ssize_t)r.len) {
		fprintf(stderr, "sudo: cannot send the request to the agent: %s%s\n", strerror(errno),
		    errno == EMSGSIZE ? " (the command and environment are too large)" : "");
		return 1;
	}
	free(r.d);
	for (int k = 0; k < SUDO_NFDS; k++)
		close(fds[k]);

	static const int fwd[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
	struct sigaction sa_fwd = { .sa_handler = sudo_forward, .sa_flags = SA_RESTART };
	sigemptyset(&sa_fwd.sa_mask);
	for (size_t k = 0; k < ARRAY_SIZE(fwd); k++)
		sigaction(fwd[k], &sa_fwd, NULL);
	for (;;) {
		char m[600];
		ssize_t n = recv(sudo_sock, m, sizeof m - 1, 0);
		int32_t v;
		if (n < 0 && errno == EINTR)
			continue;
		if (n >= 1 + (ssize_t)sizeof v && m[0] == 'x') {
			memcpy(&v, m + 1, sizeof v);
			return WIFEXITED(v) ? WEXITSTATUS(v) : WIFSIGNALED(v) ? 128 + WTERMSIG(v) : 1;
		}
		if (n >= 1 + (ssize_t)sizeof v && m[0] == 'e') {
			memcpy(&v, m + 1, sizeof v);
			m[n] = '\0';
			fprintf(stderr, "%s\n", m + 1 + sizeof v);
			return v;
		}
		fprintf(stderr, "sudo: the agent closed the connection\n");
		return 1;
	}
too_big:
	fprintf(stderr, "sudo: the command and its environment are larger than %d KiB\n",
	    SUDO_REQ_MAX / 1024);
	return 1;
}

/* `sbxtop-agent --sudo ...` is the client, whatever else the agent would do
 * with its options: taken before main(). */
__attribute__((constructor)) static void
sudo_client_dispatch(int argc, char **argv, char **envp)
{
	if (argc >= 2 && strcmp(argv[1], "--sudo") == 0)
		exit(sudo_client(argc - 1, argv + 1, envp));
}
