/* GET /v1/pty: a login shell on a new pseudo-terminal (the console's "open shell"),
 * carried over an HTTP connection upgrade with a small framing:
 * [type: 1 byte][length: 4 bytes big-endian][payload], both directions.
 *
 * One thread per PTY relays the socket and the master side.  The shell is forked
 * with children_lock held and reaped by the main loop, which tells this thread
 * through an eventfd. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/events.h"
#include "agent/http.h"
#include "agent/path.h"
#include "lib/log.h"
#include "lib/sig.h"
#include "lib/util.h"

#define PTY_FRAME_MAX (1u << 20)	/* larger frames close the connection */
#define PTY_CTL_MAX 256			/* resize and signal payloads */
#define PTY_BUF (64 * 1024)
#define PTY_DIM_MAX 10000
#define PTY_HUP_GRACE_MS 2000		/* after SIGHUP, before SIGKILL */
#define PTY_COMMAND_MAX (64 * 1024)
#define PTY_DRAIN_MAX (1u << 20)		/* output sent after the shell exited */

enum { F_DATA = 0, F_RESIZE = 1, F_SIGNAL = 2, F_EXIT = 3 };

struct pty {
	uint64_t	 id;
	int		 cols, rows;
	int		 as_root;
	int		 cwd;		/* O_PATH directory, for fchdir in the child */
	char		*command;	/* NULL: an interactive login shell */

	pid_t		 pid;
	int		 master;
	int		 efd;		/* eventfd: the main loop saw the shell exit */
	pthread_mutex_t	 mu;
	int		 exited;	/* under mu */
	int		 status;	/* under mu */
};

static _Atomic uint64_t next_id = 1;

static void
pty_free(struct pty *p)
{
	if (p->cwd >= 0)
		close(p->cwd);
	if (p->master >= 0)
		close(p->master);
	if (p->efd >= 0)
		close(p->efd);
	pthread_mutex_destroy(&p->mu);
	free(p->command);
	free(p);
}

/* Main thread, children lock held: record and wake the relay thread. */
static void
pty_exited(pid_t pid, int status, void *arg)
{
	struct pty *p = arg;
	uint64_t one = 1;

	pthread_mutex_lock(&p->mu);
	p->exited = 1;
	p->status = status;
	pthread_mutex_unlock(&p->mu);
	(void)!write(p->efd, &one, sizeof one);
}

static int
pty_has_exited(struct pty *p, int *status)
{
	int e;

	pthread_mutex_lock(&p->mu);
	e = p->exited;
	if (status != NULL)
		*status = p->status;
	pthread_mutex_unlock(&p->mu);
	return e;
}

/* The first shell that exists: bash for a familiar prompt, sh otherwise. */
static const char *
pick_shell(void)
{
	static const char *const shells[] = { "/bin/bash", "/usr/bin/bash", "/bin/sh" };

	for (size_t i = 0; i < ARRAY_SIZE(shells); i++)
		if (access(shells[i], X_OK) == 0)
			return shells[i];
	return "/bin/sh";
}

/* Open a master/slave pair, both close-on-exec so a concurrent fork elsewhere in
 * the agent never inherits them.  0 or -1 with errno. */
static int
open_pty(int *master, int *slave, int cols, int rows)
{
	struct winsize ws = { .ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols };
	char name[64];
	int m, s;

	if ((m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0)
		return -1;
	if (grantpt(m) < 0 || unlockpt(m) < 0 || ptsname_r(m, name, sizeof name) != 0 ||
	    (s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) {
		int e = errno;
		close(m);
		errno = e;
		return -1;
	}
	ioctl(m, TIOCSWINSZ, &ws);
	*master = m;
	*slave = s;
	return 0;
}

/* In the forked child: only async-signal-safe calls from here to execve. */
static void __attribute__((noreturn))
child_exec(struct pty *p, int slave, char **argv, char **envp)
{
	sigset_t none;

	/* Order: new session, the slave as controlling terminal and stdio, cwd (before
	 * closing fds: it is one), drop every other fd, default signal state, then
	 * privileges, then exec. */
	if (setsid() < 0 || ioctl(slave, TIOCSCTTY, 0) < 0)
		_exit(126);
	agent_child_oom_expose();
	if (dup2(slave, 0) < 0 || dup2(slave, 1) < 0 || dup2(slave, 2) < 0)
		_exit(126);
	if (fchdir(p->cwd) < 0) {
		static const char msg[] = "sbxtop-agent: cannot enter the working directory\r\n";
		(void)!write(2, msg, sizeof msg - 1);
		_exit(126);
	}
	close_range(3, ~0U, 0);
	/* Every disposition back to default, not just SIGPIPE: the agent may have been
	 * started with SIGINT ignored (a background job of a script), and an ignored
	 * signal stays ignored across exec, so Ctrl-C would never work in the shell. */
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigemptyset(&dfl.sa_mask);
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			sigaction(sig, &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (agent_drop_privs(p->as_root) < 0) {
		static const char msg[] = "sbxtop-agent: cannot drop privileges\r\n";
		(void)!write(2, msg, sizeof msg - 1);
		_exit(126);
	}
	execve(argv[0], argv, envp);
	static const char msg[] = "sbxtop-agent: cannot run the shell\r\n";
	(void)!write(2, msg, sizeof msg - 1);
	_exit(127);
}

/* Start the shell on a new PTY.  0, or -1 with errno. */
static int
pty_spawn(struct pty *p)
{
	const char *shell = pick_shell();
	char *argv[5] = { (char *)shell, (char *)"-l", NULL, NULL, NULL };
	char **envp = agent_child_env(p->as_root);
	int slave, e;
	pid_t pid;

	if (p->command != NULL) {
		argv[2] = (char *)"-c";
		argv[3] = p->command;
	}
	/* agent_child_env sets TERM already; make sure a PTY shell always has one. */
	envp = env_default(envp, "TERM", "xterm-256color");
	if (open_pty(&p->master, &slave, p->cols, p->rows) < 0) {
		strv_free(envp);
		return -1;
	}
	children_lock();
	pid = fork();
	if (pid == 0)
		child_exec(p, slave, argv, envp);
	e = errno;
	if (pid > 0) {
		p->pid = pid;
		child_watch(pid, pty_exited, p);
	}
	children_unlock();
	close(slave);
	strv_free(envp);
	errno = e;
	return pid > 0 ? 0 : -1;
}

/* Write one whole frame to the (blocking) socket; -1 when the client is gone. */
static int
send_frame(int sock, int type, const void *data, size_t len)
{
	unsigned char h[5] = { (unsigned char)type, (unsigned char)(len >> 24),
	    (unsigned char)(len >> 16), (unsigned char)(len >> 8), (unsigned char)len };

	set_nonblock(sock, 0);
	if (write_all(sock, h, 5) < 0 || (len > 0 && write_all(sock, data, len) < 0))
		return -1;
	return 0;
}

/* Frame parser state for client -> agent. */
struct parser {
	unsigned char	 hdr[5];
	size_t		 hdr_len;
	int		 type;
	size_t		 left;		/* payload bytes still to come */
	char		 ctl[PTY_CTL_MAX + 1];
	size_t		 ctl_len;
};

static void
apply_resize(struct pty *p, const char *json)
{
	cJSON *o = cJSON_Parse(json);
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, "cols");
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "rows");

	if (cJSON_IsNumber(c) && cJSON_IsNumber(r) && c->valuedouble >= 1 &&
	    c->valuedouble <= PTY_DIM_MAX && r->valuedouble >= 1 &&
	    r->valuedouble <= PTY_DIM_MAX) {
		struct winsize ws = { .ws_row = (unsigned short)r->valueint,
		    .ws_col = (unsigned short)c->valueint };
		/* The kernel sends SIGWINCH to the foreground process group. */
		ioctl(p->master, TIOCSWINSZ, &ws);
	} else
		log_debug("pty %llu: ignoring a malformed resize frame",
		    (unsigned long long)p->id);
	cJSON_Delete(o);
}

static void
apply_signal(struct pty *p, const char *name)
{
	int sig = sig_number(name);
	pid_t pg = tcgetpgrp(p->master);

	if (sig == 0) {
		log_debug("pty %llu: ignoring unknown signal '%s'", (unsigned long long)p->id,
		    name);
		return;
	}
	if (pg <= 0)
		pg = p->pid;	/* the shell leads its own process group */
	kill(-pg, sig);
}

/* Consume input bytes from in[*off..len): frames' data goes to the master as far
 * as it takes it.  0 to go on (all consumed, or the master is full: *off says
 * where), -1 on a protocol error. */
static int
parse_input(struct pty *p, struct parser *ps, const char *in, size_t *off, size_t len)
{
	while (*off < len) {
		if (ps->hdr_len < 5) {
			ps->hdr[ps->hdr_len++] = (unsigned char)in[(*off)++];
			if (ps->hdr_len < 5)
				continue;
			ps->type = ps->hdr[0];
			ps->left = (size_t)ps->hdr[1] << 24 | (size_t)ps->hdr[2] << 16 |
			    (size_t)ps->hdr[3] << 8 | ps->hdr[4];
			ps->ctl_len = 0;
			if (ps->left > PTY_FRAME_MAX) {
				log_warnx("pty %llu: frame of %zu bytes is over the %u limit: closing",
				    (unsigned long long)p->id, ps->left, PTY_FRAME_MAX);
				return -1;
			}
			if (ps->type != F_DATA && ps->type != F_RESIZE && ps->type != F_SIGNAL) {
				log_warnx("pty %llu: unknown frame type %d: closing",
				    (unsigned long long)p->id, ps->type);
				return -1;
			}
			if (ps->type != F_DATA && ps->left > PTY_CTL_MAX) {
				log_warnx("pty %llu: control frame of %zu bytes: closing",
				    (unsigned long long)p->id, ps->left);
				return -1;
			}
		} else if (ps->type == F_DATA && ps->left > 0) {
			size_t n = len - *off < ps->left ? len - *off : ps->left;
			ssize_t w = write(p->master, in + *off, n);
			if (w < 0) {
				if (errno == EAGAIN || errno == EINTR)
					return 0;
				/* The shell is gone (EIO): drop input, the exit frame follows. */
				w = (ssize_t)n;
			}
			*off += (size_t)w;
			ps->left -= (size_t)w;
		} else if (ps->left > 0) {
			size_t n = len - *off < ps->left ? len - *off : ps->left;
			memcpy(ps->ctl + ps->ctl_len, in + *off, n);
			ps->ctl_len += n;
			*off += n;
			ps->left -= n;
		}
		if (ps->hdr_len == 5 && ps->left == 0) {
			ps->ctl[ps->ctl_len] = '\0';
			if (ps->type == F_RESIZE)
				apply_resize(p, ps->ctl);
			else if (ps->type == F_SIGNAL)
				apply_signal(p, ps->ctl);
			ps->hdr_len = 0;
		}
	}
	return 0;
}

/* Send whatever output the master still holds, without waiting for more.  Bounded:
 * a background job that outlived the shell may keep writing forever. */
static void
drain_output(struct pty *p, int sock, char *buf)
{
	size_t total = 0;
	ssize_t n;

	set_nonblock(p->master, 1);
	while (total < PTY_DRAIN_MAX && (n = read(p->master, buf, PTY_BUF)) > 0) {
		if (send_frame(sock, F_DATA, buf, (size_t)n) < 0)
			return;
		total += (size_t)n;
	}
}

static void
send_exit(int sock, int status)
{
	cJSON *o = cJSON_CreateObject();
	char *s;

	if (WIFEXITED(status)) {
		cJSON_AddNumberToObject(o, "exit_code", WEXITSTATUS(status));
		cJSON_AddNullToObject(o, "signal");
	} else {
		const char *name = sig_name(WTERMSIG(status));
		cJSON_AddNullToObject(o, "exit_code");
		if (name != NULL)
			cJSON_AddStringToObject(o, "signal", name);
		else
			cJSON_AddNumberToObject(o, "signal", WTERMSIG(status));
	}
	s = cJSON_PrintUnformatted(o);
	(void)send_frame(sock, F_EXIT, s, strlen(s));
	free(s);
	cJSON_Delete(o);
}

/* Wait up to ms for the main loop to report the shell's exit; 1 when it has. */
static int
wait_exit(struct pty *p, int ms)
{
	int64_t end = now_ms() + ms;

	while (!pty_has_exited(p, NULL)) {
		int64_t left = end - now_ms();
		struct pollfd pf = { .fd = p->efd, .events = POLLIN };
		if (ms >= 0 && left <= 0)
			return 0;
		poll(&pf, 1, ms >= 0 ? (int)left : 1000);
	}
	return 1;
}

/* The relay: socket frames to the master, master output to frames, until the
 * shell exits (exit frame) or the client goes away (hang up the shell). */
static void
pty_relay(struct pty *p, int sock, const char *early, size_t early_len)
{
	_cleanup_free_ char *in = xmalloc(PTY_BUF), *out = xmalloc(PTY_BUF);
	struct parser ps = { .hdr_len = 0 };
	size_t in_off = 0, in_len = 0, out_off = 0, out_len = 0;
	int master_eof = 0;

	if (early_len > 0) {
		in_len = early_len < PTY_BUF ? early_len : PTY_BUF;
		memcpy(in, early, in_len);
	}
	set_nonblock(p->master, 1);
	set_nonblock(sock, 1);
	for (;;) {
		if (in_off < in_len && parse_input(p, &ps, in, &in_off, in_len) < 0)
			return;		/* protocol error: hang up */
		if (in_off == in_len)
			in_off = in_len = 0;

		struct pollfd pf[3] = {
			{ .fd = sock },
			{ .fd = master_eof ? -1 : p->master },
			{ .fd = p->efd, .events = POLLIN },
		};
		if (in_len == 0)
			pf[0].events |= POLLIN | POLLRDHUP;
		else
			pf[1].events |= POLLOUT;	/* the master must take input first */
		if (out_off < out_len)
			pf[0].events |= POLLOUT;
		else
			pf[1].events |= POLLIN;
		if (poll(pf, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		if (pf[2].revents & POLLIN) {
			int status;
			pty_has_exited(p, &status);
			/* Output written before the exit is in the master already.  What
			 * out holds is the rest of a frame begun, header included: it
			 * goes as it is, not in a frame of its own. */
			set_nonblock(sock, 0);
			if (out_off < out_len && write_all(sock, out + out_off, out_len - out_off) < 0)
				return;
			drain_output(p, sock, out);
			send_exit(sock, status);
			return;
		}
		if (in_len == 0 && (pf[0].revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR))) {
			ssize_t n = read(sock, in, PTY_BUF);
			if (n > 0)
				in_len = (size_t)n;
			else if (n == 0 || (errno != EAGAIN && errno != EINTR))
				return;		/* the client went away (or half-closed) */
		} else if (pf[0].revents & (POLLHUP | POLLERR))
			return;
		if (pf[1].revents & (POLLIN | POLLHUP | POLLERR) && out_off == out_len) {
			/* Leave room for the frame header before the data. */
			ssize_t n = read(p->master, out + 5, PTY_BUF - 5);
			if (n > 0) {
				out[0] = F_DATA;
				out[1] = (char)((size_t)n >> 24);
				out[2] = (char)((size_t)n >> 16);
				out[3] = (char)((size_t)n >> 8);
				out[4] = (char)n;
				out_off = 0;
				out_len = (size_t)n + 5;
			} else if (n == 0 || (errno != EAGAIN && errno != EINTR))
				master_eof = 1;	/* EIO: every slave closed; exit is near */
		}
		if (out_off < out_len && (pf[0].revents & POLLOUT)) {
			ssize_t n = send(sock, out + out_off, out_len - out_off, MSG_NOSIGNAL);
			if (n > 0)
				out_off += (size_t)n;
			else if (n < 0 && errno != EAGAIN && errno != EINTR)
				return;
			if (out_off == out_len)
				out_off = out_len = 0;
		}
	}
}

static void
pty_run(int sock, const char *early, size_t early_len, void *extra)
{
	struct pty *p = extra;
	int64_t started = now_ms();
	int status = 0;
	cJSON *ev;

	if (pty_spawn(p) < 0) {
		char msg[256];
		int n = snprintf(msg, sizeof msg, "sbxtop-agent: cannot start a shell: %s\r\n",
		    strerror(errno));
		log_warn("pty: cannot start a shell");
		(void)send_frame(sock, F_DATA, msg, (size_t)n);
		(void)send_frame(sock, F_EXIT, "{\"exit_code\":null,\"signal\":null}", 32);
		pty_free(p);
		return;
	}
	ev = cJSON_CreateObject();
	cJSON_AddNumberToObject(ev, "id", (double)p->id);
	cJSON_AddNumberToObject(ev, "pid", p->pid);
	events_emit("pty.opened", ev);

	pty_relay(p, sock, early, early_len);

	/* Hang up: closing the master sends SIGHUP to the shell's session; a shell
	 * that lingers past the grace is killed with its process group. */
	close(p->master);
	p->master = -1;
	if (!wait_exit(p, PTY_HUP_GRACE_MS)) {
		kill(-p->pid, SIGKILL);
		kill(p->pid, SIGKILL);
		wait_exit(p, -1);
	}
	pty_has_exited(p, &status);
	ev = cJSON_CreateObject();
	cJSON_AddNumberToObject(ev, "id", (double)p->id);
	cJSON_AddNumberToObject(ev, "pid", p->pid);
	if (WIFEXITED(status)) {
		cJSON_AddNumberToObject(ev, "exit_code", WEXITSTATUS(status));
		cJSON_AddNullToObject(ev, "signal");
	} else {
		const char *name = sig_name(WTERMSIG(status));
		cJSON_AddNullToObject(ev, "exit_code");
		if (name != NULL)
			cJSON_AddStringToObject(ev, "signal", name);
		else
			cJSON_AddNumberToObject(ev, "signal", WTERMSIG(status));
	}
	cJSON_AddNumberToObject(ev, "duration_ms", (double)(now_ms() - started));
	events_emit("pty.closed", ev);
	pty_free(p);
}

/* A whole number in [min, max] from the query, or def when absent; -1 when bad. */
static long
query_long(struct req *r, const char *name, long def, long min, long max)
{
	const char *s = http_query(r, name);
	char *end;
	long v;

	if (s == NULL)
		return def;
	v = strtol(s, &end, 10);
	if (*s == '\0' || *end != '\0' || v < min || v > max)
		return -1;
	return v;
}

static enum http_rc
pty_get(struct req *r)
{
	const char *cwd = http_query(r, "cwd"), *cmd = http_query(r, "command");
	const char *root = http_query(r, "as_root");
	long cols = query_long(r, "cols", 80, 1, PTY_DIM_MAX);
	long rows = query_long(r, "rows", 24, 1, PTY_DIM_MAX);
	int as_root = 0, fd;
	struct pty *p;

	if (cols < 0)
		return http_bad_request(r, "query 'cols' must be a number from 1 to %d", PTY_DIM_MAX);
	if (rows < 0)
		return http_bad_request(r, "query 'rows' must be a number from 1 to %d", PTY_DIM_MAX);
	if (root != NULL) {
		if (strcmp(root, "1") == 0 || strcmp(root, "true") == 0)
			as_root = 1;
		else if (strcmp(root, "0") != 0 && strcmp(root, "false") != 0)
			return http_bad_request(r, "query 'as_root' must be 1, 0, true or false");
	}
	if (cmd != NULL && (*cmd == '\0' || strlen(cmd) > PTY_COMMAND_MAX))
		return http_bad_request(r, "query 'command' must be 1 to %d bytes", PTY_COMMAND_MAX);
	if (cwd == NULL || *cwd == '\0')
		cwd = agent.cwd ? agent.cwd : agent.workspace;
	if ((fd = path_open(cwd, O_PATH | O_DIRECTORY, 0)) < 0)
		return http_bad_request(r, "query 'cwd': cannot use '%s' as the working directory: %s",
		    cwd, strerror(errno));
	if (http_upgrade_check(r) < 0) {
		close(fd);
		return HTTP_DONE;
	}
	p = xcalloc(1, sizeof *p);
	p->id = next_id++;
	p->cols = (int)cols;
	p->rows = (int)rows;
	p->as_root = as_root;
	p->cwd = fd;
	p->command = cmd ? xstrdup(cmd) : NULL;
	p->master = -1;
	pthread_mutex_init(&p->mu, NULL);
	if ((p->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
		pty_free(p);
		return http_error(r, HTTP_STATUS_INTERNAL_SERVER_ERROR, "internal",
		    "cannot create an eventfd: %s; the agent may be out of descriptors",
		    strerror(errno));
	}
	return http_upgrade(r, NULL, pty_run, p);
}

const struct route pty_routes[] = {
	{ "GET", "/v1/pty", 0, pty_get, NULL, 0 },
	{ NULL, NULL, 0, NULL, NULL, 0 }
};
