/* The agent's connections: listeners on unix sockets and TCP, a thread per
 * connection reading requests (http-parse.c), and the answers put on the wire
 * (Content-Length, chunked streams with trailers, 101 and the raw socket after).
 * HTTP/1.1 with keep-alive and pipelining; HTTP/1.0 closed after each answer
 * unless it asks for keep-alive (a stream always: it has no chunks). */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>

#include "agent/agent.h"
#include "agent/http-int.h"
#include "lib/log.h"
#include "lib/util.h"

#define MAX_LISTENERS	8
/* Connections at once on one listener; past it a new one is closed at once. */
#define CONN_MAX	512
/* A connection's thread: handlers block on it (an exec waiting for its command). */
#define CONN_STACK	(256 * 1024)
/* Reads from the client: archives come in pieces this large. */
#define READ_CHUNK	(128 * 1024)
/* A stream's chunks, at most. */
#define STREAM_CHUNK	(64 * 1024)
/* A connection with no request under way is closed after this long ... */
#define IDLE_MS		(300 * 1000)
/* ... and one whose request (head or body) stops coming for this long. */
#define STALL_MS	(120 * 1000)
/* http_stop_all waits this long for the connections to end. */
#define STOP_WAIT_MS	2000

struct listener {
	int		 fd;
	int		 hooks_only;
	char		*unix_path;
	pthread_t	 thread;
	_Atomic int	 nconns;
};

static struct listener listeners[MAX_LISTENERS];
static int nlisteners;

/* Every live connection, so that a stop can end them. */
struct live {
	struct live		*next, *prev;
	int			 fd;
};
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t live_cv = PTHREAD_COND_INITIALIZER;
static struct live *live_head;
static int live_count;
static _Atomic int stopping;

/* The head and then the body, in one system call where the socket takes both.
 * (Writes to a client that left fail with EPIPE: the agent ignores SIGPIPE.) */
static int
send_two(int fd, const char *a, size_t alen, const char *b, size_t blen)
{
	struct iovec iov[2] = { { (void *)a, alen }, { (void *)b, blen } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	ssize_t k;

	do
		k = sendmsg(fd, &mh, MSG_NOSIGNAL);
	while (k < 0 && errno == EINTR);
	if (k < 0)
		return -1;
	if ((size_t)k < alen)
		return write_all(fd, a + k, alen - (size_t)k) < 0 ? -1 : write_all(fd, b, blen);
	k -= (ssize_t)alen;
	return write_all(fd, b + k, blen - (size_t)k);
}

/* Up to max bytes from the client into buf, waiting at most ms for the first;
 * 0 at its end, on a timeout or an error. */
static size_t
read_some(int fd, char *buf, size_t max, int ms)
{
	for (;;) {
		ssize_t n = recv(fd, buf, max, MSG_DONTWAIT);
		if (n > 0)
			return (size_t)n;
		if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
			return 0;
		if (errno == EINTR)
			continue;
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int k = poll(&p, 1, ms);
		if (k == 0)
			return 0;
		if (k < 0 && errno != EINTR)
			return 0;
	}
}

/* The status line and fields of o, with how the body is framed. */
static void
head_make(struct buf *h, const struct http_out *o, const char *framing, int keep, int minor)
{
	buf_printf(h, "HTTP/1.1 %u %s\r\n", o->status, http_reason(o->status));
	buf_append(h, o->fields.data, o->fields.len);
	if (framing != NULL)
		buf_printf(h, "%s\r\n", framing);
	if (!keep)
		buf_printf(h, "Connection: close\r\n");
	else if (minor == 0)
		buf_printf(h, "Connection: keep-alive\r\n");
	buf_append(h, "\r\n", 2);
}

/* A stream's chunks until its end; 0 when it ended whole. */
static int
stream_send(int fd, struct http_out *o, int chunked)
{
	enum { ROOM = 16 };	/* before a chunk: its size line */
	_cleanup_free_ char *b = xmalloc(ROOM + STREAM_CHUNK + 2);
	uint64_t pos = 0;

	for (;;) {
		ssize_t n = o->read(o->cls, pos, b + ROOM, STREAM_CHUNK);
		if (n > 0) {
			char line[ROOM];
			int k = snprintf(line, sizeof line, "%zx\r\n", (size_t)n);
			if (n > STREAM_CHUNK)
				fatal("a stream gave %zd bytes for %d", n, STREAM_CHUNK);
			memcpy(b + ROOM - k, line, (size_t)k);
			memcpy(b + ROOM + n, "\r\n", 2);
			if ((chunked ? write_all(fd, b + ROOM - k, (size_t)k + (size_t)n + 2) :
			    write_all(fd, b + ROOM, (size_t)n)) < 0)
				return -1;
			pos += (uint64_t)n;
			continue;
		}
		if (n == 0) {
			/* Nothing yet: wait a little, unless the client left. */
			if (http_peer_gone(fd))
				return -1;
			poll(NULL, 0, 10);
			continue;
		}
		if (n != HTTP_STREAM_END)
			return -1;
		if (!chunked)
			return 0;
		struct buf t;
		buf_init(&t, 128 * 1024);
		buf_append(&t, "0\r\n", 3);
		buf_append(&t, o->trailers.data, o->trailers.len);
		buf_append(&t, "\r\n", 2);
		int rc = write_all(fd, t.data, t.len);
		buf_free(&t);
		return rc;
	}
}

/* Put r's answer on the wire.  0 when it went out whole; *keep is cleared when
 * the connection must close after it. */
static int
answer_send(struct http_conn *c, struct req *r, int *keep)
{
	struct http_out *o = r->out;
	const struct http_msg *m = &c->msg;
	int head_only = strcmp(r->method, "HEAD") == 0, rc;
	struct buf h;
	char framing[48];

	buf_init(&h, 256 * 1024);
	if (o->upgrade != NULL) {
		*keep = 0;
		head_make(&h, o, NULL, 1, 1);
		rc = write_all(c->fd, h.data, h.len);
	} else if (o->read != NULL) {
		/* HTTP/1.0 has no chunks: the end of the connection ends the body. */
		int chunked = m->http_minor >= 1;
		if (!chunked)
			*keep = 0;
		head_make(&h, o, chunked ? "Transfer-Encoding: chunked" : NULL, *keep, m->http_minor);
		rc = write_all(c->fd, h.data, h.len);
		if (rc == 0 && !head_only)
			rc = stream_send(c->fd, o, chunked);
		if (rc < 0)
			*keep = 0;
	} else {
		snprintf(framing, sizeof framing, "Content-Length: %zu", o->body_len);
		head_make(&h, o, framing, *keep, m->http_minor);
		rc = send_two(c->fd, h.data, h.len, o->body, head_only ? 0 : o->body_len);
	}
	buf_free(&h);
	if (o->free_cls != NULL) {
		o->free_cls(o->cls);
		o->free_cls = NULL;
	}
	return rc;
}

/* An answer for a request that could not be read, and the connection ends. */
static void
refuse(struct http_conn *c, unsigned status, const char *why)
{
	struct req *r = xcalloc(1, sizeof *r);
	int keep = 0;

	r->conn = c;
	r->method = "?";
	r->url = "?";
	http_error(r, status, status == HTTP_STATUS_BAD_REQUEST ||
	    status == HTTP_STATUS_HTTP_VERSION_NOT_SUPPORTED ? "bad_request" : "too_large",
	    "%s", why);
	c->msg.http_minor = 1;
	answer_send(c, r, &keep);
	http_req_free(r, 0);
}

static void
conn_body(void *cls, const char *data, size_t len)
{
	struct http_conn *c = cls;

	if (c->req != NULL)
		http_req_body(c->req, data, len);
}

static void
live_add(struct live *lv, int fd)
{
	lv->fd = fd;
	pthread_mutex_lock(&live_mu);
	lv->prev = NULL;
	lv->next = live_head;
	if (live_head != NULL)
		live_head->prev = lv;
	live_head = lv;
	live_count++;
	if (stopping)
		shutdown(fd, SHUT_RDWR);
	pthread_mutex_unlock(&live_mu);
}

static void
live_remove(struct live *lv)
{
	pthread_mutex_lock(&live_mu);
	if (lv->prev != NULL)
		lv->prev->next = lv->next;
	else
		live_head = lv->next;
	if (lv->next != NULL)
		lv->next->prev = lv->prev;
	live_count--;
	pthread_cond_broadcast(&live_cv);
	pthread_mutex_unlock(&live_mu);
}

/* One connection: its requests in turn, until it closes, breaks, idles out or
 * becomes something else (an upgrade). */
static void
conn_serve(struct http_conn *c)
{
	_cleanup_free_ char *in = xmalloc(READ_CHUNK);
	size_t off = 0, have = 0, used;
	int keep = 1;

	http_msg_init(&c->msg, conn_body, c);
	while (keep) {
		enum http_ev ev = HTTP_EV_MORE;
		int began = 0;
		struct req *r;

		/* Read up to the end of the next request. */
		while (ev != HTTP_EV_DONE) {
			if (off == have) {
				have = read_some(c->fd, in, READ_CHUNK, began ? STALL_MS : IDLE_MS);
				off = 0;
				if (have == 0)
					goto out;	/* gone, broken or quiet */
			}
			began = 1;
			ev = http_msg_feed(&c->msg, in + off, have - off, &used);
			off += used;
			if (ev == HTTP_EV_ERROR) {
				refuse(c, c->msg.err_status, c->msg.err);
				goto out;
			}
			if (ev != HTTP_EV_HEAD)
				continue;
			c->req = http_req_begin(c);
			if (!c->msg.expect_continue)
				continue;
			if (c->req->answered) {
				/* Refused before its body: the client sends none, and the
				 * connection cannot go on. */
				c->msg.keep_alive = 0;
				break;
			}
			if (write_all(c->fd, "HTTP/1.1 100 Continue\r\n\r\n", 25) < 0)
				goto out;
		}
		r = c->req;
		keep = c->msg.keep_alive && !stopping;
		if (http_req_run(r) == HTTP_DROP || answer_send(c, r, &keep) < 0) {
			http_req_free(r, 0);
			c->req = NULL;
			goto out;
		}
		if (r->out->upgrade != NULL) {
			http_upgrade_fn fn = r->out->upgrade;
			void *extra = r->out->upgrade_extra;
			http_req_free(r, 1);
			c->req = NULL;
			fn(c->fd, in + off, have - off, extra);
			goto out;
		}
		http_req_free(r, 1);
		c->req = NULL;
		http_msg_reset(&c->msg);
	}
out:
	if (c->req != NULL)
		http_req_free(c->req, 0);
	c->req = NULL;
	http_msg_free(&c->msg);
}

static void *
conn_main(void *arg)
{
	struct http_conn *c = arg;
	struct listener *l = c->listener;
	struct live lv;

	live_add(&lv, c->fd);
	conn_serve(c);
	live_remove(&lv);
	close(c->fd);
	free(c);
	l->nconns--;
	return NULL;
}

static void *
accept_main(void *arg)
{
	struct listener *l = arg;
	pthread_attr_t at;

	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, CONN_STACK);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	for (;;) {
		struct http_conn *c;
		pthread_t t;
		int fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (stopping || errno == EINVAL)
				break;
			if (errno != EINTR && errno != ECONNABORTED) {
				/* Out of descriptors or memory: the queue waits. */
				log_warn("accept on %s", l->unix_path ? l->unix_path : "tcp");
				poll(NULL, 0, 100);
			}
			continue;
		}
		if (l->nconns >= CONN_MAX) {
			close(fd);
			continue;
		}
		if (l->unix_path == NULL) {
			int one = 1;
			/* A head and its first chunk go out at once, not after an ACK. */
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		}
		c = xcalloc(1, sizeof *c);
		c->fd = fd;
		c->hooks_only = l->hooks_only;
		c->listener = l;
		l->nconns++;
		if (pthread_create(&t, &at, conn_main, c) != 0) {
			log_warnx("no thread for a new connection: closed");
			l->nconns--;
			close(fd);
			free(c);
		}
	}
	pthread_attr_destroy(&at);
	return NULL;
}


static int
listen_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof sa.sun_path) {
		fprintf(stderr, "sbxtop-agent: socket path too long: %s\n", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -1;
	unlink(path);
	/* chmod after bind, not the umask: that is process-wide, and listeners start
	 * while earlier ones already serve on their threads. */
	int rc = bind(fd, (struct sockaddr *)&sa, sizeof sa);
	if (rc < 0 || chmod(path, 0600) < 0 || listen(fd, 128) < 0) {
		fprintf(stderr, "sbxtop-agent: cannot listen on unix:%s: %s\n", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static int
listen_tcp(const char *hostport)
{
	_cleanup_free_ char *host = xstrdup(hostport);
	char *colon = strrchr(host, ':');
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct addrinfo *ai;
	int fd = -1, one = 1, rc;

	if (colon == NULL) {
		fprintf(stderr, "sbxtop-agent: tcp listener needs HOST:PORT, got '%s'\n", hostport);
		return -1;
	}
	*colon = '\0';
	if (host[0] == '[' && colon[-1] == ']') {	/* [::1]:port */
		colon[-1] = '\0';
		memmove(host, host + 1, strlen(host));
	}
	if ((rc = getaddrinfo(host, colon + 1, &hints, &ai)) != 0) {
		fprintf(stderr, "sbxtop-agent: cannot resolve '%s': %s\n", hostport, gai_strerror(rc));
		return -1;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 128) < 0) {
			fprintf(stderr, "sbxtop-agent: cannot listen on tcp:%s: %s\n", hostport,
			    strerror(errno));
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(ai);
	return fd;
}

/* Print the address actually bound (useful with port 0) for whoever started us. */
static void
report_tcp_port(int fd, const char *spec)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	char host[64];
	int port;

	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
		return;
	if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof host);
		port = ntohs(s6->sin6_port);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		inet_ntop(AF_INET, &s4->sin_addr, host, sizeof host);
		port = ntohs(s4->sin_port);
	}
	log_info("listening on tcp:%s:%d (%s)", host, port, spec);
}

int
http_listen(const char *spec, int hooks_only)
{
	struct listener *l;
	int fd;

	if (nlisteners == MAX_LISTENERS) {
		fprintf(stderr, "sbxtop-agent: at most %d listeners\n", MAX_LISTENERS);
		return -1;
	}
	l = &listeners[nlisteners];
	if (strncmp(spec, "unix:", 5) == 0) {
		if ((fd = listen_unix(spec + 5)) < 0)
			return -1;
		l->unix_path = xstrdup(spec + 5);
	} else if (strncmp(spec, "tcp:", 4) == 0) {
		if ((fd = listen_tcp(spec + 4)) < 0)
			return -1;
		report_tcp_port(fd, spec);
	} else {
		fprintf(stderr, "sbxtop-agent: listener must be unix:PATH or tcp:HOST:PORT, got '%s'\n",
		    spec);
		return -1;
	}
	l->fd = fd;
	l->hooks_only = hooks_only;
	if ((errno = pthread_create(&l->thread, NULL, accept_main, l)) != 0) {
		fprintf(stderr, "sbxtop-agent: cannot start serving %s: %s\n", spec, strerror(errno));
		close(fd);
		if (l->unix_path != NULL)
			unlink(l->unix_path);
		free(l->unix_path);
		l->unix_path = NULL;
		return -1;
	}
	nlisteners++;
	return 0;
}

void
http_stop_all(void)
{
	int64_t end = now_ms() + STOP_WAIT_MS;

	stopping = 1;
	for (int i = 0; i < nlisteners; i++) {
		struct listener *l = &listeners[i];
		/* Wakes the accept: it fails with EINVAL from now on. */
		shutdown(l->fd, SHUT_RDWR);
		pthread_join(l->thread, NULL);
		close(l->fd);
		if (l->unix_path != NULL)
			unlink(l->unix_path);
		free(l->unix_path);
		l->unix_path = NULL;
	}
	nlisteners = 0;
	/* Every connection sees its client gone: handlers waiting on one give up. */
	pthread_mutex_lock(&live_mu);
	for (struct live *lv = live_head; lv != NULL; lv = lv->next)
		shutdown(lv->fd, SHUT_RDWR);
	while (live_count > 0) {
		struct timespec ts;
		int64_t left = end - now_ms();
		if (left <= 0)
			break;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += left / 1000;
		ts.tv_nsec += (left % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&live_cv, &live_mu, &ts);
	}
	pthread_mutex_unlock(&live_mu);
}
