/* A client of the core server (client.h): finding or starting the server, the
 * hello, and calls multiplexed on one connection.  The calling thread reads
 * its own answer (and the notifications before it) until something needs a
 * reader of its own: a subscription, a disconnect callback, or a call made
 * while another is in flight; then a reader thread reads for every caller.  A
 * command's one call thus costs no thread and no hand-over between two.
 *
 * Starting a server is serialized by an flock on core.lock in the runtime
 * directory: whoever holds it tries to connect once more, and only then starts
 * one, so clients racing at a cold start end up with one server.  The server
 * itself holds server.lock for its whole life (server/server.c). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/jspec.h"
#include "lib/buf.h"
#include "core/client/client.h"
#include "lib/line-reader.h"
#include "lib/log.h"
#include "core/paths.h"
#include "lib/util.h"

#define START_WAIT_MS	10000		/* for a started server's socket */
#define HELLO_WAIT_MS	10000
#define HELLO_LINE_MAX	65536
#define LINE_MAX_IN	(64u << 20)	/* largest message read from the server */
#define SERVER_ARGS_MAX	16

static const char *const *server_args;
static char env_digest[24];

void
client_set_server_args(const char *const *argv)
{
	server_args = argv;
}

static int64_t mcp_budget;

void
client_set_mcp_budget(int64_t budget)
{
	mcp_budget = budget;
}

void
client_set_env_digest(uint64_t digest)
{
	snprintf(env_digest, sizeof env_digest, "%016llx", (unsigned long long)digest);
}

char *
client_socket_path(struct sbx_err *e)
{
	return paths_file(PATHS_RUNTIME, "core.sock", 1, e);
}

/* A connected socket, or -errno. */
static int
try_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, err;

	if (strlen(path) >= sizeof sa.sun_path)
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	while (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		if (errno == EINTR)
			continue;
		err = errno;
		close(fd);
		return -err;
	}
	return fd;
}

/* Fork a detached server (setsid, a second fork, stdio on /dev/null, logs to
 * STATE/server.log), as tmux does.  Everything the children need is made
 * before forking: a threaded process may only make system calls after. */
static int
spawn_server(struct sbx_err *e)
{
	_cleanup_free_ char *logp = paths_file(PATHS_STATE, "server.log", 1, e);
	const char *argv[SERVER_ARGS_MAX + 8];
	size_t n = 0;
	pid_t pid;
	int st, devnull;

	if (logp == NULL)
		return -1;
	argv[n++] = "sbxtop";
	for (size_t i = 0; server_args != NULL && server_args[i] != NULL &&
	    i < SERVER_ARGS_MAX; i++)
		argv[n++] = server_args[i];
	argv[n++] = "--log";
	argv[n++] = logp;
	argv[n++] = "serve";
	argv[n++] = "--foreground";
	argv[n] = NULL;
	if ((devnull = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "/dev/null");
	if ((pid = fork()) < 0) {
		close(devnull);
		return sbx_error_errno(e, SBX_EINTERNAL, NULL, "fork");
	}
	if (pid == 0) {
		if (setsid() < 0)
			_exit(1);
		if ((pid = fork()) != 0)
			_exit(pid < 0);
		/* The server: no terminal, no inherited descriptors. */
		if (dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 || dup2(devnull, 2) < 0)
			_exit(1);
		close_range(3, ~0U, 0);
		if (chdir("/") < 0)
			_exit(1);
		execv("/proc/self/exe", (char *const *)argv);
		_exit(127);
	}
	close(devnull);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return sbx_error(e, SBX_EINTERNAL, NULL, "cannot start the core server (fork)");
	return 0;
}

/* Connect, starting a server when none answers; a socket or -1 with e. */
static int
connect_or_start(const char *path, int autostart, struct sbx_err *e)
{
	_cleanup_free_ char *lockp = NULL, *logp = NULL;
	_cleanup_close_ int lock = -1;
	int fd = try_connect(path);

	if (fd >= 0)
		return fd;
	if (!autostart || (fd != -ENOENT && fd != -ECONNREFUSED))
		return sbx_error(e, SBX_EIO, autostart ? NULL : "start one with `sbxtop serve`",
		    "cannot connect to the core server at %s: %s", path, strerror(-fd));
	if ((lockp = paths_file(PATHS_RUNTIME, "core.lock", 1, e)) == NULL)
		return -1;
	if ((lock = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot open %s", lockp);
	while (flock(lock, LOCK_EX) < 0)
		if (errno != EINTR)
			return sbx_error_errno(e, SBX_EIO, NULL, "cannot lock %s", lockp);
	/* Someone may have started one while we waited for the lock. */
	if ((fd = try_connect(path)) >= 0)
		return fd;
	log_info("no core server at %s: starting one", path);
	if (spawn_server(e) < 0)
		return -1;
	for (int64_t end = now_ms() + START_WAIT_MS; now_ms() < end; poll(NULL, 0, 10))
		if ((fd = try_connect(path)) >= 0)
			return fd;
	logp = paths_file(PATHS_STATE, "server.log", 0, NULL);
	return sbx_error(e, SBX_ETIMEOUT, NULL, "the core server did not start within %d s "
	    "(see %s)", START_WAIT_MS / 1000, logp ? logp : "server.log");
}

/* One line (without its newline), peeked at and then read up to its newline,
 * so nothing after it is taken from the socket (a byte at a time, this was
 * two system calls a byte: half a millisecond of a command's hello); NULL
 * with e on a timeout, an error or end of file (e->code SBX_EAGENT then). */
static char *
read_line_exact(int fd, int timeout_ms, struct sbx_err *e)
{
	struct buf b;
	int64_t end = now_ms() + timeout_ms;

	buf_init(&b, HELLO_LINE_MAX);
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		int64_t left = end - now_ms();
		char chunk[1024];
		const char *nl;
		ssize_t n;

		if (left <= 0 || poll(&p, 1, (int)left) == 0) {
			buf_free(&b);
			sbx_error(e, SBX_ETIMEOUT, NULL, "the core server did not answer");
			return NULL;
		}
		n = recv(fd, chunk, sizeof chunk, MSG_PEEK);
		if (n > 0) {
			nl = memchr(chunk, '\n', (size_t)n);
			n = recv(fd, chunk, nl != NULL ? (size_t)(nl - chunk) + 1 : (size_t)n, 0);
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			buf_free(&b);
			sbx_error(e, SBX_EAGENT, NULL, "the core server closed the connection");
			return NULL;
		}
		nl = memchr(chunk, '\n', (size_t)n);
		if (buf_append(&b, chunk, nl != NULL ? (size_t)(nl - chunk) : (size_t)n) < 0) {
			buf_free(&b);
			sbx_error(e, SBX_EINTERNAL, NULL, "the core server's answer is too long");
			return NULL;
		}
		if (nl != NULL) {
			buf_append(&b, "", 1);
			return buf_steal(&b);
		}
	}
}

cJSON *
client_err_data(const struct sbx_err *e)
{
	cJSON *d = cJSON_CreateObject();

	cJSON_AddStringToObject(d, "code", sbx_errcode_name(e->code));
	if (e->reason != SBX_R_NONE)
		cJSON_AddStringToObject(d, "reason", sbx_reason_name(e->reason));
	cJSON_AddStringToObject(d, "hint", e->hint);
	return d;
}

int
client_err_from_rpc(const cJSON *err, struct sbx_err *e)
{
	const cJSON *data = cJSON_GetObjectItemCaseSensitive(err, "data");
	const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(err, "message"));
	int code = (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(err, "code"));
	const char *hint = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(data, "hint"));
	enum sbx_errcode c = SBX_EINTERNAL;
	enum sbx_reason r = SBX_R_NONE;

	if (code == CLIENT_ERR_CORE) {
		c = sbx_errcode_by_name(cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(data, "code")));
		r = sbx_reason_by_name(cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(data, "reason")));
	} else if (code == CLIENT_ERR_VERSION) {
		c = SBX_EUNSUPPORTED;
	} else if (code == -32602) {
		c = SBX_EINVAL;
	}
	return sbx_error_reason(e, c, r, hint && hint[0] ? hint : NULL, "%s",
	    msg ? msg : "the core server answered with an error");
}

static int
hello(int fd, const char *kind, cJSON **answer, struct sbx_err *e)
{
	const char *ver = getenv("SBXTOP_TEST_FAKE_VERSION");	/* tests only */
	cJSON *req = cJSON_CreateObject(), *p, *cl, *msg;
	_cleanup_free_ char *text = NULL, *line = NULL;
	int rc = -1;

	cJSON_AddStringToObject(req, "jsonrpc", "2.0");
	cJSON_AddStringToObject(req, "id", "sbxtop-hello");
	cJSON_AddStringToObject(req, "method", "sbxtop/hello");
	p = cJSON_AddObjectToObject(req, "params");
	cl = cJSON_AddObjectToObject(p, "client");
	cJSON_AddStringToObject(cl, "kind", kind);
	cJSON_AddStringToObject(cl, "name", kind);
	cJSON_AddStringToObject(cl, "version", ver && ver[0] ? ver : SBX_VERSION);
	cJSON_AddNumberToObject(cl, "pid", getpid());
	if (mcp_budget > 0 && strcmp(kind, "mcp") == 0)
		cJSON_AddNumberToObject(p, "budget", (double)mcp_budget);
	text = cJSON_PrintUnformatted(req);
	cJSON_Delete(req);
	if (text == NULL)
		fatal("out of memory");
	if (write_line(fd, text, strlen(text)) < 0)
		return sbx_error(e, SBX_EAGENT, NULL, "the core server closed the connection");
	if ((line = read_line_exact(fd, HELLO_WAIT_MS, e)) == NULL)
		return -1;
	if ((msg = cJSON_Parse(line)) == NULL)
		return sbx_error(e, SBX_EINTERNAL, NULL, "the core server's hello answer is not "
		    "JSON");
	if (cJSON_GetObjectItemCaseSensitive(msg, "error") != NULL) {
		client_err_from_rpc(cJSON_GetObjectItemCaseSensitive(msg, "error"), e);
	} else {
		if (answer != NULL)
			*answer = cJSON_DetachItemFromObjectCaseSensitive(msg, "result");
		rc = 0;
	}
	cJSON_Delete(msg);
	return rc;
}

/* client_connect_fd, keeping the hello's answer in *answer (caller frees; answer
 * may be NULL). */
static int
connect_hello(const char *kind, int autostart, cJSON **answer, struct sbx_err *e)
{
	_cleanup_free_ char *path = client_socket_path(e);

	if (path == NULL)
		return -1;
	/* A server on its way out may accept and then close: try again, and
	 * again start one when it is gone. */
	for (int attempt = 0;; attempt++) {
		int fd = connect_or_start(path, autostart, e);
		if (fd < 0)
			return -1;
		if (kind == NULL || hello(fd, kind, answer, e) == 0)
			return fd;
		close(fd);
		if (e->code != SBX_EAGENT || attempt == 2)
			return -1;
		poll(NULL, 0, 50);
	}
}

int
client_connect_fd(const char *kind, int autostart, struct sbx_err *e)
{
	return connect_hello(kind, autostart, NULL, e);
}

#define PTY_ANSWER_WAIT_MS 30000	/* a qemu or lambda agent may be slow to answer */

int
client_pty_open(const char *key, int cols, int rows, const char *command, struct sbx_err *e)
{
	cJSON *req = cJSON_CreateObject(), *p, *msg;
	_cleanup_free_ char *text = NULL, *line = NULL;
	_cleanup_close_ int fd = -1;
	int rc;

	cJSON_AddStringToObject(req, "jsonrpc", "2.0");
	cJSON_AddNumberToObject(req, "id", 1);
	cJSON_AddStringToObject(req, "method", "sbxtop/pty");
	p = cJSON_AddObjectToObject(req, "params");
	cJSON_AddStringToObject(p, "sandbox", key);
	cJSON_AddNumberToObject(p, "cols", cols);
	cJSON_AddNumberToObject(p, "rows", rows);
	if (command != NULL)
		cJSON_AddStringToObject(p, "command", command);
	text = cJSON_PrintUnformatted(req);
	cJSON_Delete(req);
	if (text == NULL)
		fatal("out of memory");
	if ((fd = client_connect_fd("shell", 1, e)) < 0)
		return -1;
	if (write_line(fd, text, strlen(text)) < 0)
		return sbx_error(e, SBX_EAGENT, NULL, "the core server closed the connection");
	/* Read exactly the answer: the frames follow it on the same socket. */
	if ((line = read_line_exact(fd, PTY_ANSWER_WAIT_MS, e)) == NULL)
		return -1;
	if ((msg = cJSON_Parse(line)) == NULL)
		return sbx_error(e, SBX_EINTERNAL, NULL, "the core server's answer to sbxtop/pty "
		    "is not JSON");
	rc = cJSON_GetObjectItemCaseSensitive(msg, "error") != NULL ?
	    client_err_from_rpc(cJSON_GetObjectItemCaseSensitive(msg, "error"), e) : 0;
	cJSON_Delete(msg);
	return rc < 0 ? -1 : steal_fd(&fd);
}

/* --- the multiplexed client ---------------------------------------------- */

struct pending {
	int64_t		 id;
	int		 done;
	cJSON		*result;
	cJSON		*error;
	struct pending	*next;
};

struct client {
	char		 kind[16];
	int		 autostart;
	pthread_mutex_t	 wmu;		/* whole lines out */
	pthread_mutex_t	 mu;		/* everything below */
	pthread_cond_t	 cv;
	int		 fd;		/* -1: disconnected */
	int		 server_pid;	/* of the current connection */
	int		 reader_live;
	pthread_t	 reader;
	int		 async;		/* a reader thread reads (once set, for good) */
	int		 reading;	/* a caller reads its own answer now */
	struct line_reader in;		/* the connection's lines, whoever reads */
	int		 in_live;
	struct pending	*pend;
	int64_t		 next_id;
	client_event_fn	 evfn;
	void		*evarg;
	client_notify_fn nfn;		/* other notifications */
	void		*narg;
	void		(*discfn)(void *arg);
	void		*discarg;
	char		 server_digest[24];	/* from the last hello */
};

static void
deliver(struct client *c, cJSON *msg)
{
	const char *method = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg,
	    "method"));
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
	client_event_fn fn;
	void *arg;

	if (method != NULL && id == NULL) {
		client_notify_fn nfn;
		void *narg;
		pthread_mutex_lock(&c->mu);
		fn = c->evfn;
		arg = c->evarg;
		nfn = c->nfn;
		narg = c->narg;
		pthread_mutex_unlock(&c->mu);
		if (strcmp(method, "sbxtop/event") != 0 &&
		    strcmp(method, "sbxtop/events_lost") != 0) {
			if (nfn != NULL)
				nfn(method, cJSON_GetObjectItemCaseSensitive(msg, "params"), narg);
			return;
		}
		if (fn == NULL)
			return;
		if (strcmp(method, "sbxtop/event") == 0) {
			fn(cJSON_GetObjectItemCaseSensitive(msg, "params"), arg);
		} else if (strcmp(method, "sbxtop/events_lost") == 0) {
			/* As an event of its own type, so the client can refetch. */
			cJSON *ev = cJSON_CreateObject();
			cJSON_AddNumberToObject(ev, "seq", 0);
			cJSON_AddNumberToObject(ev, "time_ms", (double)wall_ms());
			cJSON_AddStringToObject(ev, "type", "events.lost");
			cJSON_AddNullToObject(ev, "sandbox");
			cJSON_AddItemToObject(ev, "data", cJSON_Duplicate(
			    cJSON_GetObjectItemCaseSensitive(msg, "params"), 1));
			fn(ev, arg);
			cJSON_Delete(ev);
		}
		return;
	}
	if (!cJSON_IsNumber(id))
		return;
	pthread_mutex_lock(&c->mu);
	for (struct pending *p = c->pend; p != NULL; p = p->next)
		if (p->id == jint_of(id, -1, INT64_MIN, INT64_MAX) && !p->done) {
			p->result = cJSON_DetachItemFromObjectCaseSensitive(msg, "result");
			p->error = cJSON_DetachItemFromObjectCaseSensitive(msg, "error");
			p->done = 1;
			pthread_cond_broadcast(&c->cv);
			break;
		}
	pthread_mutex_unlock(&c->mu);
}

static void
reader_line(void *arg, const char *line, size_t len)
{
	cJSON *msg = cJSON_ParseWithLength(line, len);

	if (msg != NULL)
		deliver(arg, msg);
	cJSON_Delete(msg);
}

static void
reader_over(void *arg, const char *piece, size_t len, int first, int end)
{
	(void)arg; (void)piece; (void)len; (void)end;
	if (first)
		log_warnx("client: a message from the core server is over %u MiB: dropped",
		    LINE_MAX_IN >> 20);
}

/* With c->mu held, once the connection fd ended: every call waiting fails, the
 * next call reconnects.  Returns the disconnect callback to call unlocked. */
static void (*lost(struct client *c, int fd, void **fnarg))(void *)
{
	if (c->fd == fd) {
		close(c->fd);
		c->fd = -1;
		c->server_pid = 0;
	}
	for (struct pending *p = c->pend; p != NULL; p = p->next)
		p->done = 1;
	pthread_cond_broadcast(&c->cv);
	*fnarg = c->discarg;
	return c->discfn;
}

static void *
reader_main(void *arg)
{
	struct client *c = arg;
	int fd;
	void (*fn)(void *);
	void *fnarg;

	pthread_mutex_lock(&c->mu);
	fd = c->fd;
	pthread_mutex_unlock(&c->mu);
	/* c->in is this thread's alone: no caller reads once a reader runs. */
	(void)line_reader_read_fd(&c->in, fd);
	pthread_mutex_lock(&c->mu);
	fn = lost(c, fd, &fnarg);
	pthread_mutex_unlock(&c->mu);
	if (fn != NULL)
		fn(fnarg);
	return NULL;
}

/* With c->mu held: the reader thread, for a connection nobody reads yet. */
static int
start_reader(struct client *c, struct sbx_err *e)
{
	if (c->fd < 0 || c->reader_live || c->reading)
		return 0;
	if (pthread_create(&c->reader, NULL, reader_main, c) != 0) {
		void *arg;
		(void)lost(c, c->fd, &arg);
		return sbx_error(e, SBX_EINTERNAL, NULL, "cannot start a thread");
	}
	c->reader_live = 1;
	return 0;
}

/* With c->mu held: from now on a reader thread reads. */
static void
make_async(struct client *c)
{
	struct sbx_err e;

	c->async = 1;
	if (start_reader(c, &e) < 0)
		log_warnx("client: %s", e.msg);
}

/* With c->mu held: connect when disconnected (joining the old reader). */
static int
ensure_connected(struct client *c, struct sbx_err *e)
{
	cJSON *hi = NULL;
	const char *d;
	int fd;

	if (c->fd >= 0)
		return 0;
	if (c->reader_live && !pthread_equal(c->reader, pthread_self())) {
		pthread_join(c->reader, NULL);
		c->reader_live = 0;
	}
	if ((fd = connect_hello(c->kind, c->autostart, &hi, e)) < 0)
		return -1;
	c->server_pid = (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(hi, "pid"));
	d = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(hi, "env_digest"));
	snprintf(c->server_digest, sizeof c->server_digest, "%s", d ? d : "");
	cJSON_Delete(hi);
	c->fd = fd;
	if (c->in_live)
		line_reader_free(&c->in);
	line_reader_init(&c->in, LINE_MAX_IN, reader_line, reader_over, c);
	c->in_live = 1;
	return c->async ? start_reader(c, e) : 0;
}

struct client *
client_connect(const char *kind, int autostart, struct sbx_err *e)
{
	struct client *c = xcalloc(1, sizeof *c);

	snprintf(c->kind, sizeof c->kind, "%s", kind);
	c->autostart = autostart;
	c->fd = -1;
	c->next_id = 1;
	pthread_mutex_init(&c->wmu, NULL);
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	pthread_mutex_lock(&c->mu);
	if (ensure_connected(c, e) < 0) {
		pthread_mutex_unlock(&c->mu);
		client_close(c);
		return NULL;
	}
	pthread_mutex_unlock(&c->mu);
	return c;
}

void
client_close(struct client *c)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&c->mu);
	c->discfn = NULL;
	if (c->fd >= 0)
		shutdown(c->fd, SHUT_RDWR);
	pthread_mutex_unlock(&c->mu);
	if (c->reader_live)
		pthread_join(c->reader, NULL);
	if (c->fd >= 0)
		close(c->fd);
	if (c->in_live)
		line_reader_free(&c->in);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	pthread_mutex_destroy(&c->wmu);
	free(c);
}

int
client_call(struct client *c, const char *method, cJSON *params, cJSON **result,
    struct sbx_err *e)
{
	struct pending p = { 0 }, **pp;
	cJSON *req = cJSON_CreateObject();
	_cleanup_free_ char *text = NULL;
	int fd, rc = -1, lead;

	if (result != NULL)
		*result = NULL;
	pthread_mutex_lock(&c->mu);
	if (ensure_connected(c, e) < 0) {
		pthread_mutex_unlock(&c->mu);
		cJSON_Delete(req);
		return -1;
	}
	p.id = c->next_id++;
	p.next = c->pend;
	c->pend = &p;
	fd = c->fd;
	/* A call while another reads its own answer: that one hands the
	 * connection to a reader thread once it has it. */
	if (c->reading)
		c->async = 1;
	lead = !c->async;
	c->reading |= lead;
	pthread_mutex_unlock(&c->mu);

	cJSON_AddStringToObject(req, "jsonrpc", "2.0");
	cJSON_AddNumberToObject(req, "id", (double)p.id);
	cJSON_AddStringToObject(req, "method", method);
	if (params != NULL)
		cJSON_AddItemReferenceToObject(req, "params", params);
	text = cJSON_PrintUnformatted(req);
	cJSON_Delete(req);
	if (text == NULL)
		fatal("out of memory");
	pthread_mutex_lock(&c->wmu);
	if (write_line(fd, text, strlen(text)) < 0)
		shutdown(fd, SHUT_RDWR);	/* the reader notices and fails us */
	pthread_mutex_unlock(&c->wmu);

	if (lead) {
		void (*fn)(void *) = NULL;
		void *fnarg = NULL;
		char chunk[16384];
		ssize_t n = 1;

		/* deliver(), on this thread, marks p done. */
		while (!p.done && n != 0) {
			if ((n = read(fd, chunk, sizeof chunk)) > 0)
				line_reader_feed(&c->in, chunk, (size_t)n);
			else if (n < 0 && errno != EINTR)
				n = 0;
		}
		pthread_mutex_lock(&c->mu);
		if (!p.done)
			fn = lost(c, fd, &fnarg);
		c->reading = 0;
		if (c->async) {
			struct sbx_err sub;
			if (start_reader(c, &sub) < 0)
				log_warnx("client: %s", sub.msg);
		}
		if (fn != NULL) {
			pthread_mutex_unlock(&c->mu);
			fn(fnarg);
			pthread_mutex_lock(&c->mu);
		}
	} else {
		pthread_mutex_lock(&c->mu);
	}
	while (!p.done)
		pthread_cond_wait(&c->cv, &c->mu);
	for (pp = &c->pend; *pp != NULL; pp = &(*pp)->next)
		if (*pp == &p) {
			*pp = p.next;
			break;
		}
	pthread_mutex_unlock(&c->mu);
	if (p.error != NULL) {
		client_err_from_rpc(p.error, e);
	} else if (p.result == NULL) {
		sbx_error(e, SBX_EAGENT, "the next call starts a new core server",
		    "the core server went away during %s", method);
	} else {
		rc = 0;
		if (result != NULL)
			*result = steal_pointer(&p.result);
	}
	cJSON_Delete(p.result);
	cJSON_Delete(p.error);
	return rc;
}

int
client_subscribe(struct client *c, uint64_t from, client_event_fn fn, void *arg,
    struct sbx_err *e)
{
	cJSON *params = cJSON_CreateObject();
	int rc;

	/* Before the call: the replay follows its answer at once, read by the
	 * reader thread, as every event after it. */
	pthread_mutex_lock(&c->mu);
	c->evfn = fn;
	c->evarg = arg;
	make_async(c);
	pthread_mutex_unlock(&c->mu);
	cJSON_AddNumberToObject(params, "from", (double)from);
	rc = client_call(c, "sbxtop/subscribe", params, NULL, e);
	cJSON_Delete(params);
	return rc;
}

int
client_server_pid(struct client *c)
{
	int pid;

	pthread_mutex_lock(&c->mu);
	pid = c->fd >= 0 ? c->server_pid : 0;
	pthread_mutex_unlock(&c->mu);
	return pid;
}

int
client_env_matches(struct client *c)
{
	int m;

	pthread_mutex_lock(&c->mu);
	m = env_digest[0] == '\0' || strcmp(env_digest, c->server_digest) == 0;
	pthread_mutex_unlock(&c->mu);
	return m;
}

void
client_on_notify(struct client *c, client_notify_fn fn, void *arg)
{
	pthread_mutex_lock(&c->mu);
	c->nfn = fn;
	c->narg = arg;
	pthread_mutex_unlock(&c->mu);
}

void
client_on_disconnect(struct client *c, void (*fn)(void *arg), void *arg)
{
	pthread_mutex_lock(&c->mu);
	c->discfn = fn;
	c->discarg = arg;
	make_async(c);	/* a loss is noticed between calls too */
	pthread_mutex_unlock(&c->mu);
}
