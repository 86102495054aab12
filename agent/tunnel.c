/* GET /v1/tunnel: a raw TCP stream to a loopback port inside the sandbox (port
 * forwards), carried over an HTTP connection upgrade because the AWS proxy only
 * passes HTTP and WebSocket-style upgrades.  The port is connected before the 101,
 * so a client learns "nothing listens there" as a plain JSON error. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "agent/agent.h"
#include "agent/events.h"
#include "agent/http.h"
#include "lib/log.h"
#include "lib/util.h"

#define TUNNEL_BUF (256 * 1024)		/* per direction: the back-pressure bound */
#define CONNECT_TIMEOUT_MS 5000

struct tunnel {
	uint64_t	 id;
	int		 port;
	int		 target;	/* connected socket to the sandbox port */
	int64_t		 started_ms;
};

static _Atomic uint64_t next_id = 1;

/* One direction of the relay: bytes read from src wait in a pipe until dst takes
 * them.  splice() moves them socket to pipe to socket inside the kernel, never
 * through a buffer of ours. */
struct pipe_dir {
	int		 src, dst;
	int		 pipe[2];
	size_t		 cap;		/* the pipe's size */
	size_t		 len;		/* bytes in the pipe */
	int		 eof;		/* src said EOF (or failed) */
	int		 done;		/* eof seen, pipe drained, dst shut for writing */
	uint64_t	 bytes;
};

static int
dir_open(struct pipe_dir *d, int src, int dst)
{
	int sz;

	d->src = src;
	d->dst = dst;
	if (pipe2(d->pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return -1;
	sz = fcntl(d->pipe[1], F_SETPIPE_SZ, TUNNEL_BUF);
	d->cap = sz > 0 ? (size_t)sz : (size_t)fcntl(d->pipe[1], F_GETPIPE_SZ);
	return 0;
}

static void
dir_close(struct pipe_dir *d)
{
	close(d->pipe[0]);
	close(d->pipe[1]);
}

/* Move what can be moved without blocking.  -1 when the stream is broken. */
static int
dir_pump(struct pipe_dir *d, short src_rev, short dst_rev)
{
	const unsigned fl = SPLICE_F_NONBLOCK | SPLICE_F_MOVE;

	if (d->done)
		return 0;
	if (!d->eof && d->len < d->cap && (src_rev & (POLLIN | POLLHUP | POLLERR))) {
		ssize_t n = splice(d->src, NULL, d->pipe[1], NULL, d->cap - d->len, fl);
		if (n > 0) {
			d->len += (size_t)n;
			d->bytes += (uint64_t)n;
		} else if (n == 0)
			d->eof = 1;
		else if (errno != EAGAIN && errno != EINTR)
			return -1;
	}
	if (d->len > 0 && (dst_rev & (POLLOUT | POLLERR | POLLHUP))) {
		ssize_t n = splice(d->pipe[0], NULL, d->dst, NULL, d->len, fl);
		if (n > 0)
			d->len -= (size_t)n;
		else if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
	}
	if (d->eof && d->len == 0) {
		/* Half-close: pass the EOF on, keep relaying the other way. */
		shutdown(d->dst, SHUT_WR);
		d->done = 1;
	}
	return 0;
}

/* Relay between a and b until both directions ended or one side broke. */
static void
relay(int a, int b, const char *early, size_t early_len, uint64_t *bytes_ab,
    uint64_t *bytes_ba)
{
	struct pipe_dir ab_, ba_, *ab = &ab_, *ba = &ba_;

	memset(ab, 0, sizeof *ab);
	memset(ba, 0, sizeof *ba);
	if (dir_open(ab, a, b) < 0) {
		log_warn("tunnel: cannot make a pipe");
		return;
	}
	if (dir_open(ba, b, a) < 0) {
		log_warn("tunnel: cannot make a pipe");
		dir_close(ab);
		return;
	}
	/* Bytes the client sent right after the request head go first; the upgrade
	 * layer's read buffer is far smaller than the pipe, so they always fit. */
	if (early_len > 0) {
		ssize_t n = write(ab->pipe[1], early, early_len);
		if (n > 0) {
			ab->len = (size_t)n;
			ab->bytes = (uint64_t)n;
		}
	}
	set_nonblock(a, 1);
	set_nonblock(b, 1);
	while (!ab->done || !ba->done) {
		struct pollfd p[2] = { { .fd = a }, { .fd = b } };
		if (!ab->eof && ab->len < ab->cap)
			p[0].events |= POLLIN;
		if (!ba->eof && ba->len < ba->cap)
			p[1].events |= POLLIN;
		if (ab->len > 0)
			p[1].events |= POLLOUT;
		if (ba->len > 0)
			p[0].events |= POLLOUT;
		/* A side we neither read nor write any more: stop hearing its hangup. */
		if (ab->eof && ba->done)
			p[0].fd = -1;
		if (ba->eof && ab->done)
			p[1].fd = -1;
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (dir_pump(ab, p[0].revents, p[1].revents) < 0 ||
		    dir_pump(ba, p[1].revents, p[0].revents) < 0)
			break;
		/* A side that hung up and has nothing more to read can no longer take
		 * what the other side still sends: the stream is over. */
		if ((p[0].revents & (POLLHUP | POLLERR)) && ab->eof && !ba->done)
			break;
		if ((p[1].revents & (POLLHUP | POLLERR)) && ba->eof && !ab->done)
			break;
	}
	*bytes_ab = ab->bytes;
	*bytes_ba = ba->bytes;
	dir_close(ab);
	dir_close(ba);
}

static void
tunnel_run(int sock, const char *early, size_t early_len, void *extra)
{
	struct tunnel *t = extra;
	uint64_t in = 0, out = 0;
	cJSON *ev = cJSON_CreateObject();

	cJSON_AddNumberToObject(ev, "id", (double)t->id);
	cJSON_AddNumberToObject(ev, "port", t->port);
	events_emit("tunnel.opened", ev);

	relay(sock, t->target, early, early_len, &in, &out);

	ev = cJSON_CreateObject();
	cJSON_AddNumberToObject(ev, "id", (double)t->id);
	cJSON_AddNumberToObject(ev, "port", t->port);
	cJSON_AddNumberToObject(ev, "bytes_in", (double)in);
	cJSON_AddNumberToObject(ev, "bytes_out", (double)out);
	cJSON_AddNumberToObject(ev, "duration_ms", (double)(now_ms() - t->started_ms));
	events_emit("tunnel.closed", ev);
	close(t->target);
	free(t);
}

/* Parse host: a loopback address only (127.0.0.0/8, ::1, "localhost").  Fills
 * the socket address; -1 when host is anything else. */
static int
loopback_addr(const char *host, int port, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof *ss);
	if (strcmp(host, "localhost") == 0)
		host = "127.0.0.1";
	if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
		if ((ntohl(s4->sin_addr.s_addr) >> 24) != 127)
			return -1;
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		*len = sizeof *s4;
		return 0;
	}
	if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
		if (!IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr))
			return -1;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		*len = sizeof *s6;
		return 0;
	}
	return -1;
}

/* Connect with a bound on the wait (a full listen backlog would otherwise stall
 * the request for minutes).  The socket, or -1 with errno. */
static int
connect_bounded(const struct sockaddr_storage *ss, socklen_t len)
{
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int err = 0;
	socklen_t elen = sizeof err;

	if (fd < 0)
		return -1;
	if (connect(fd, (const struct sockaddr *)ss, len) == 0)
		return fd;
	if (errno != EINPROGRESS)
		goto fail;
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	int rc = poll(&p, 1, CONNECT_TIMEOUT_MS);
	if (rc == 0) {
		errno = ETIMEDOUT;
		goto fail;
	}
	if (rc < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0)
		goto fail;
	if (err != 0) {
		errno = err;
		goto fail;
	}
	return fd;
fail:
	err = errno;
	close(fd);
	errno = err;
	return -1;
}

static enum http_rc
tunnel_get(struct req *r)
{
	const char *ps = http_query(r, "port"), *host = http_query(r, "host");
	struct sockaddr_storage ss;
	socklen_t sslen;
	struct tunnel *t;
	char *end;
	long port;
	int fd;

	if (ps == NULL)
		return http_bad_request(r, "query 'port' is required (1-65535)");
	port = strtol(ps, &end, 10);
	if (*ps == '\0' || *end != '\0' || port < 1 || port > 65535)
		return http_bad_request(r, "query 'port' must be a number from 1 to 65535");
	if (host == NULL || *host == '\0')
		host = "127.0.0.1";
	if (loopback_addr(host, (int)port, &ss, &sslen) < 0)
		return http_bad_request(r, "query 'host' must be a loopback address "
		    "(127.0.0.0/8, ::1 or localhost): tunnels reach only the sandbox itself");
	if (http_upgrade_check(r) < 0)
		return HTTP_DONE;
	if ((fd = connect_bounded(&ss, sslen)) < 0) {
		if (errno == ECONNREFUSED)
			return http_error(r, HTTP_STATUS_BAD_GATEWAY, "connect_failed",
			    "nothing listens on %s:%ld inside the sandbox", host, port);
		return http_error(r, HTTP_STATUS_BAD_GATEWAY, "connect_failed",
		    "cannot connect to %s:%ld inside the sandbox: %s", host, port,
		    strerror(errno));
	}
	t = xcalloc(1, sizeof *t);
	t->id = next_id++;
	t->port = (int)port;
	t->target = fd;
	t->started_ms = now_ms();
	return http_upgrade(r, NULL, tunnel_run, t);
}

const struct route tunnel_routes[] = {
	{ "GET", "/v1/tunnel", 0, tunnel_get, NULL, 0 },
	{ NULL, NULL, 0, NULL, NULL, 0 }
};
