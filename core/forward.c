/* Port forwards (see core.h and forward.h).  One relay thread per core runs an
 * epoll loop over every forward's listening socket and every connection: each
 * accepted connection opens an agent tunnel (an HTTP/1.1 upgrade on a socket of
 * our own, so the bytes after the 101 are ours to relay) and then copies both
 * ways through a bounded buffer per direction.  docs/ARCHITECTURE.md says why a
 * loop rather than a thread per connection.
 *
 * Locking: the loop holds m->mu while it handles a batch of events and its tick,
 * never while it waits; the core_forward_* calls take it to add a forward, mark
 * one for stopping (the loop tears it down: only the loop frees what epoll may
 * still point at) or read counters.  The registry is read every tick, so a
 * forward whose record or sandbox went away (`forward --stop` or `destroy` in
 * another process) stops within a tick or two.
 *
 * An agent behind an HTTPS endpoint (lambda: the AWS proxy) cannot be spliced:
 * the bytes are TLS records.  Such a connection runs TLS (OpenSSL, non-blocking,
 * the certificate verified against AWS_CA_BUNDLE or the system's store) and
 * copies through two bounded buffers of ours instead.  Two kinds go that way: a
 * tunnel (the agent's /v1/tunnel with a WebSocket handshake carrying the
 * lambda-microvms subprotocols, raw bytes after the 101), and a direct HTTP
 * forward (`--http`: each request gets X-aws-proxy-auth and X-aws-proxy-port and
 * goes straight to the port, see fwd-http.h).  Their token is re-read from the
 * registry every tick and renewed through the backend every minute or after a
 * 403, since a forward outlives the token it started with. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "core/agentc.h"
#include "lib/b64.h"
#include "lib/buf.h"
#include "core/core-int.h"
#include "core/forward.h"
#include "core/fwd-http.h"
#include "lib/log.h"
#include "core/registry.h"
#include "lib/util.h"

#define FWD_BUF		(256 * 1024)	/* per direction: the back-pressure bound */
#define FWD_HEAD_MAX	(16 * 1024)	/* the agent's answer head */
#define FWD_CONNS_MAX	4096		/* per manager; more are refused */
#define FWD_HANDSHAKE_MS 10000		/* the agent connects within 5 s */
#define FWD_TICK_MS	250
#define FWD_FLUSH_MS	1000		/* counters to the registry, at most this often */
#define FWD_RELEASE_MS	5000		/* another process letting go of a port */
#define FWD_EVENTS	256
#define FWD_TLS_BUF	(64 * 1024)	/* per direction, TLS relays */
#define FWD_RENEW_MS	60000		/* an HTTPS endpoint's token is checked this often */
/* The port of an AWS MicroVM endpoint where the image runs the agent: the
 * endpoint's default, named in the tunnel's WebSocket subprotocol. */
#define FWD_AWS_AGENT_PORT 8080

enum tag_kind { TAG_WAKE, TAG_LISTEN, TAG_CLIENT, TAG_UP };
struct tag {
	enum tag_kind	 kind;
	void		*p;
};

/* One direction: bytes spliced from the source wait in a pipe until the
 * destination takes them (no copy through our memory); the source is read only
 * while the pipe has room. */
struct dir {
	int		 p[2];		/* -1 until the relay starts */
	size_t		 cap;		/* the pipe's size */
	size_t		 held;		/* bytes in it */
	int		 full;		/* it took nothing more: wait for a drain */
	int		 eof;		/* the source said EOF */
	int		 done;		/* EOF passed on as shutdown(SHUT_WR) */
};

enum conn_state { C_CONNECT, C_TLS, C_SEND, C_HEAD, C_RELAY };

struct fwd;

struct conn {
	struct conn	*prev, *next;	/* in the forward's list */
	struct conn	*dead_next;
	struct fwd	*f;
	int		 cfd, ufd;	/* the local client, the agent */
	struct tag	 ctag, utag;
	uint32_t	 cmask, umask;	/* what epoll watches now (0: not registered) */
	enum conn_state	 st;
	size_t		 req_off;
	struct dir	 cu, uc;	/* client to agent, agent to client */
	char		*head;		/* the agent's answer, while it comes */
	size_t		 head_len;
	int64_t		 deadline;	/* of the handshake */
	int		 dead;
	/* HTTPS endpoints only: */
	SSL		*ssl;
	uint32_t	 tls_want;	/* what OpenSSL waits for on ufd to go on */
	struct buf	 tcu, tuc;	/* client to endpoint, endpoint to client */
	struct fwd_http	*fh;		/* a direct HTTP forward's request rewriter */
	int		 c_eof, u_eof;	/* the client, the endpoint said EOF */
	int		 c_done, u_done; /* that EOF was passed on */
};

struct fwd {
	struct fwd	*next;
	struct fwd_mgr	*m;
	uint64_t	 seq;		/* unique in this manager */
	char		 id[32];
	char		 addr[64];
	int		 local, remote;
	int		 lfd;
	struct tag	 ltag;
	int64_t		 since;		/* wall ms */
	struct sockaddr_storage ep;	/* the agent */
	socklen_t	 eplen;
	char		*req;		/* the upgrade request (holds the secret) */
	size_t		 reqlen;
	int		 tls;		/* the endpoint is https */
	int		 http;		/* a direct HTTP forward (tls only) */
	char		 host[256];	/* the endpoint's name (TLS SNI and verification) */
	char		*hosthdr;	/* its host[:port], for Host */
	char		*inject;	/* direct HTTP: the header lines each request gets */
	char		*hdrs_seen;	/* the agent headers req was built from */
	int		 renew;		/* the endpoint refused the token: renew it */
	int64_t		 next_renew;
	enum sbx_state	 state;		/* as last read from the registry */
	struct conn	*conns;
	_Atomic uint64_t conns_now, conns_total, bytes_in, bytes_out, failures;
	uint64_t	 flushed[5];	/* the counters last written to the registry */
	char		 last_error[160];
	int64_t		 last_log;
	int		 stop;
};

static void fwd_free(struct fwd *f);
static int build_req(struct fwd *f, const struct sandbox *s, struct sbx_err *e);

struct fwd_mgr {
	struct core	*c;
	pthread_t	 th;
	int		 ep, wakefd;
	struct tag	 wtag;
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;		/* a forward was torn down */
	struct fwd	*fwds;
	SSL_CTX		*tls;		/* made for the first HTTPS endpoint */
	struct conn	*dead;		/* closed in this batch, freed after it */
	size_t		 nconns;
	uint64_t	 next_seq;
	int		 quit;
	int64_t		 next_tick, last_flush;
};

/* ---- who owns a forward ------------------------------------------------ */

/* The start time of process pid (clock ticks since boot), 0 when it is gone
 * or a zombie:
 * with the pid it names one process even after the pid is reused. */
static unsigned long long
proc_start(int pid)
{
	char path[64], buf[1024], *p;
	unsigned long long st = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* The command name may hold spaces and parentheses: count from the last ')'. */
	if ((p = strrchr(buf, ')')) == NULL)
		return 0;
	/* A zombie (a core killed whose parent does not reap) runs nothing. */
	if (p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'))
		return 0;
	for (int field = 2; field < 22 && p != NULL; field++)
		p = strchr(p + 1, ' ');
	if (p != NULL)
		st = strtoull(p + 1, NULL, 10);
	return st;
}

static unsigned long long
self_start(void)
{
	static unsigned long long st;

	if (st == 0)
		st = proc_start(getpid());
	return st;
}

static int
entry_int(const cJSON *en, const char *k)
{
	return (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(en, k));
}

static uint64_t
entry_u64(const cJSON *en, const char *k)
{
	double d = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(en, k));

	return d > 0 && d < 9e18 ? (uint64_t)d : 0;
}

static int
entry_is_own(const cJSON *en)
{
	return entry_int(en, "pid") == getpid() &&
	    entry_u64(en, "pid_start") == self_start();
}

static int
entry_live(const cJSON *en)
{
	int pid = entry_int(en, "pid");
	unsigned long long st = entry_u64(en, "pid_start");

	return pid > 0 && st != 0 && proc_start(pid) == st;
}

static int
entry_is(const cJSON *en, const struct fwd *f)
{
	const char *b = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(en, "bind"));

	return entry_is_own(en) && entry_int(en, "local") == f->local &&
	    entry_int(en, "remote") == f->remote && b != NULL && strcmp(b, f->addr) == 0;
}

/* The record with exactly this id (registry_find also takes prefixes and names). */
static struct sandbox *
record_of(const struct registry *r, const char *id)
{
	for (size_t i = 0; i < registry_count(r); i++)
		if (strcmp(registry_at(r, i)->id, id) == 0)
			return registry_at(r, i);
	return NULL;
}

/* ---- the loop's pieces ------------------------------------------------- */

static void
wake(struct fwd_mgr *m)
{
	uint64_t one = 1;

	if (write(m->wakefd, &one, sizeof one) < 0 && errno != EAGAIN)
		log_warn("forward: wake");
}

/* Watch fd for want (0: stop watching, so a hung-up socket we cannot act on
 * does not wake the loop over and over). */
static void
watch(struct fwd_mgr *m, int fd, struct tag *t, uint32_t *cur, uint32_t want)
{
	struct epoll_event ev = { .events = want, .data.ptr = t };
	int op;

	if (want == *cur)
		return;
	op = *cur == 0 ? EPOLL_CTL_ADD : want == 0 ? EPOLL_CTL_DEL : EPOLL_CTL_MOD;
	if (epoll_ctl(m->ep, op, fd, &ev) < 0)
		fatal("forward: epoll_ctl: %s", strerror(errno));
	*cur = want;
}

static void
conn_rewatch(struct conn *k)
{
	struct fwd_mgr *m = k->f->m;
	uint32_t cw = 0, uw = 0;

	switch (k->st) {
	case C_CONNECT:
		uw = EPOLLOUT;
		break;
	case C_TLS:
		uw = k->tls_want ? k->tls_want : EPOLLIN;
		break;
	case C_SEND:
		uw = k->ssl && k->tls_want ? k->tls_want : EPOLLOUT;
		break;
	case C_HEAD:
		uw = k->ssl && k->tls_want ? k->tls_want : EPOLLIN;
		break;
	case C_RELAY:
		if (k->ssl != NULL) {
			if (!k->c_eof && k->tcu.len < FWD_TLS_BUF)
				cw |= EPOLLIN;
			if (k->tuc.len > 0)
				cw |= EPOLLOUT;
			if (!k->u_eof && k->tuc.len < FWD_TLS_BUF)
				uw |= EPOLLIN;
			uw |= k->tls_want;
			break;
		}
		if (!k->cu.eof && !k->cu.full)
			cw |= EPOLLIN;
		if (k->uc.held > 0)
			cw |= EPOLLOUT;
		if (!k->uc.eof && !k->uc.full)
			uw |= EPOLLIN;
		if (k->cu.held > 0)
			uw |= EPOLLOUT;
		break;
	}
	watch(m, k->cfd, &k->ctag, &k->cmask, cw);
	if (k->ufd >= 0)
		watch(m, k->ufd, &k->utag, &k->umask, uw);
}

static void
conn_close(struct conn *k)
{
	struct fwd *f = k->f;
	struct fwd_mgr *m = f->m;

	if (k->dead)
		return;
	k->dead = 1;
	/* Closing drops the fds from the epoll set; events already taken for this
	 * batch see k->dead, and k is freed after the batch. */
	close(k->cfd);
	if (k->ufd >= 0)
		close(k->ufd);
	for (int i = 0; i < 2; i++) {
		if (k->cu.p[i] >= 0)
			close(k->cu.p[i]);
		if (k->uc.p[i] >= 0)
			close(k->uc.p[i]);
	}
	if (k->prev)
		k->prev->next = k->next;
	else
		f->conns = k->next;
	if (k->next)
		k->next->prev = k->prev;
	k->dead_next = m->dead;
	m->dead = k;
	m->nconns--;
	atomic_fetch_sub(&f->conns_now, 1);
}

static void
free_dead(struct fwd_mgr *m)
{
	while (m->dead != NULL) {
		struct conn *k = m->dead;
		m->dead = k->dead_next;
		free(k->head);
		SSL_free(k->ssl);
		buf_free(&k->tcu);
		buf_free(&k->tuc);
		fwd_http_free(k->fh);
		free(k);
	}
}

/* The connection found no tunnel: count it, say why (not too often), close the
 * local side at once so the client sees it promptly. */
static void __attribute__((format(printf, 2, 3)))
conn_fail(struct conn *k, const char *fmt, ...)
{
	struct fwd *f = k->f;
	char msg[sizeof f->last_error];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	atomic_fetch_add(&f->failures, 1);
	if (strcmp(msg, f->last_error) != 0 || now_ms() - f->last_log > 5000) {
		log_warnx("forward %s:%d -> %s:%d: %s", f->addr, f->local, f->id, f->remote, msg);
		f->last_log = now_ms();
	}
	snprintf(f->last_error, sizeof f->last_error, "%s", msg);
	conn_close(k);
}

/* Move what can be moved in direction d without blocking; -1 when broken. */
static int
pump(struct dir *d, int src, int dst, int can_read, int can_write, _Atomic uint64_t *count)
{
	const unsigned fl = SPLICE_F_MOVE | SPLICE_F_NONBLOCK;

	if (can_read && !d->eof && !d->full) {
		ssize_t n = splice(src, NULL, d->p[1], NULL, d->cap - d->held, fl);
		if (n > 0) {
			d->held += (size_t)n;
			can_write = 1;		/* usually it takes it at once */
		} else if (n == 0) {
			d->eof = 1;
		} else if (errno == EAGAIN) {
			/* The source said readable, so with bytes held the pipe is what is
			 * full (its slots can run out before its bytes do): wait for a
			 * drain.  With none held the wakeup was spurious. */
			d->full = d->held > 0;
		} else if (errno != EINTR) {
			return -1;
		}
		if (d->held >= d->cap)
			d->full = 1;
	}
	if (can_write && d->held > 0) {
		ssize_t n = splice(d->p[0], NULL, dst, NULL, d->held, fl);
		if (n > 0) {
			d->held -= (size_t)n;
			d->full = 0;
			atomic_fetch_add_explicit(count, (uint64_t)n, memory_order_relaxed);
		} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
			return -1;
		}
	}
	if (d->eof && !d->done && d->held == 0) {
		/* Half-close: pass the EOF on and keep relaying the other way. */
		shutdown(dst, SHUT_WR);
		d->done = 1;
	}
	return 0;
}

/* The two pipes of a relay, sized to the back-pressure bound where the system
 * allows it. */
static int
dir_open(struct dir *d)
{
	int sz;

	if (pipe2(d->p, O_NONBLOCK | O_CLOEXEC) < 0) {
		d->p[0] = d->p[1] = -1;
		return -1;
	}
	(void)fcntl(d->p[1], F_SETPIPE_SZ, FWD_BUF);
	sz = fcntl(d->p[1], F_GETPIPE_SZ);
	d->cap = sz > 0 ? (size_t)sz : 65536;
	return 0;
}

static void
relay(struct conn *k, int from_up, uint32_t ev)
{
	int rd = (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) != 0;
	int wr = (ev & (EPOLLOUT | EPOLLHUP | EPOLLERR)) != 0;
	int rc;

	if (from_up)	/* the agent readable: to the client; writable: the client's bytes */
		rc = pump(&k->uc, k->ufd, k->cfd, rd, 0, &k->f->bytes_out) < 0 ||
		    pump(&k->cu, k->cfd, k->ufd, 0, wr, &k->f->bytes_in) < 0;
	else
		rc = pump(&k->cu, k->cfd, k->ufd, rd, 0, &k->f->bytes_in) < 0 ||
		    pump(&k->uc, k->ufd, k->cfd, 0, wr, &k->f->bytes_out) < 0;
	if (rc || (k->cu.done && k->uc.done)) {
		conn_close(k);
		return;
	}
	conn_rewatch(k);
}

/* After an OpenSSL call returned r <= 0: 0 when it waits for the socket (what
 * for is noted in k->tls_want), 1 at the endpoint's EOF, -1 when broken. */
static int
tls_status(struct conn *k, int r)
{
	switch (SSL_get_error(k->ssl, r)) {
	case SSL_ERROR_WANT_READ:
		k->tls_want |= EPOLLIN;
		return 0;
	case SSL_ERROR_WANT_WRITE:
		k->tls_want |= EPOLLOUT;
		return 0;
	case SSL_ERROR_ZERO_RETURN:
		return 1;
	case SSL_ERROR_SYSCALL:
		return errno == EAGAIN || errno == EINTR ? 0 : errno == 0 ? 1 : -1;
	default:
		return -1;
	}
}

/* Move what can be moved both ways between the client and the TLS session,
 * until nothing moves; then wait for what the last round waited for. */
static void
tls_relay(struct conn *k)
{
	struct fwd *f = k->f;
	char tmp[16384], why[128];

	for (int round = 0; round < 64; round++) {
		int moved = 0, r;
		k->tls_want = 0;
		if (!k->c_eof && k->tcu.len < FWD_TLS_BUF) {
			size_t room = FWD_TLS_BUF - k->tcu.len;
			ssize_t n = recv(k->cfd, tmp, room < sizeof tmp ? room : sizeof tmp, 0);
			if (n > 0) {
				atomic_fetch_add_explicit(&f->bytes_in, (uint64_t)n,
				    memory_order_relaxed);
				if (k->fh != NULL) {
					if (fwd_http_feed(k->fh, tmp, (size_t)n, &k->tcu, why,
					    sizeof why) < 0) {
						conn_fail(k, "%s", why);
						return;
					}
				} else {
					buf_append(&k->tcu, tmp, (size_t)n);
				}
				moved = 1;
			} else if (n == 0) {
				k->c_eof = moved = 1;
			} else if (errno != EAGAIN && errno != EINTR) {
				conn_close(k);
				return;
			}
		}
		if (k->tcu.len > 0) {
			ERR_clear_error();
			r = SSL_write(k->ssl, k->tcu.data, k->tcu.len > INT32_MAX ? INT32_MAX :
			    (int)k->tcu.len);
			if (r > 0) {
				buf_consume(&k->tcu, (size_t)r);
				moved = 1;
			} else if (tls_status(k, r) != 0) {
				conn_close(k);
				return;
			}
		} else if (k->c_eof && !k->u_done) {
			/* TLS has no half-close of its own: close_notify says EOF, and
			 * the other direction goes on. */
			ERR_clear_error();
			(void)SSL_shutdown(k->ssl);
			k->u_done = moved = 1;
		}
		if (!k->u_eof && k->tuc.len < FWD_TLS_BUF) {
			size_t room = FWD_TLS_BUF - k->tuc.len;
			ERR_clear_error();
			r = SSL_read(k->ssl, tmp, (int)(room < sizeof tmp ? room : sizeof tmp));
			if (r > 0) {
				buf_append(&k->tuc, tmp, (size_t)r);
				moved = 1;
			} else {
				int st = tls_status(k, r);
				if (st < 0) {
					conn_close(k);
					return;
				}
				if (st > 0)
					k->u_eof = moved = 1;
			}
		}
		if (k->tuc.len > 0) {
			ssize_t n = send(k->cfd, k->tuc.data, k->tuc.len, MSG_NOSIGNAL);
			if (n > 0) {
				buf_consume(&k->tuc, (size_t)n);
				atomic_fetch_add_explicit(&f->bytes_out, (uint64_t)n,
				    memory_order_relaxed);
				moved = 1;
			} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
				conn_close(k);
				return;
			}
		} else if (k->u_eof && !k->c_done) {
			shutdown(k->cfd, SHUT_WR);
			k->c_done = moved = 1;
		}
		if (!moved)
			break;
	}
	if (k->c_done && (k->u_done || k->c_eof)) {
		conn_close(k);
		return;
	}
	conn_rewatch(k);
}

static void
tls_relay_start(struct conn *k, const char *early, size_t n)
{
	buf_init(&k->tcu, FWD_TLS_BUF + FWD_HTTP_HEAD_MAX + 8192);
	buf_init(&k->tuc, FWD_TLS_BUF + FWD_HEAD_MAX);
	if (n > 0)
		buf_append(&k->tuc, early, n);
	if (k->f->http)
		k->fh = fwd_http_new(k->f->inject, k->f->hosthdr);
	k->st = C_RELAY;
	tls_relay(k);
}

/* The agent's answer head is in k->uc: 101 starts the relay, anything else is
 * a failure the agent explains in its JSON body. */
static void
handshake_answer(struct conn *k, size_t head_len)
{
	int status = 0;
	char *body, *end;

	if (sscanf(k->head, "HTTP/1.%*d %d", &status) != 1) {
		conn_fail(k, "the agent sent something that is not HTTP");
		return;
	}
	if (status == 101 && k->ssl != NULL) {
		char *early = k->head;
		size_t n = k->head_len - head_len;
		k->head = NULL;
		tls_relay_start(k, early + head_len, n);
		free(early);
		return;
	}
	if (status == 403 && k->ssl != NULL)
		k->f->renew = 1;	/* the endpoint refused the token: the tick renews it */
	if (status == 101) {
		if (dir_open(&k->cu) < 0 || dir_open(&k->uc) < 0) {
			conn_fail(k, "cannot relay: %s", strerror(errno));
			return;
		}
		/* Bytes after the head are the port's: they go first. */
		if (k->head_len > head_len) {
			ssize_t n = write(k->uc.p[1], k->head + head_len, k->head_len - head_len);
			if (n != (ssize_t)(k->head_len - head_len)) {
				conn_fail(k, "cannot relay: %s", n < 0 ? strerror(errno) : "short write");
				return;
			}
			k->uc.held = (size_t)n;
		}
		free(k->head);
		k->head = NULL;
		k->st = C_RELAY;
		if (k->uc.held > 0 && pump(&k->uc, k->ufd, k->cfd, 0, 1, &k->f->bytes_out) < 0) {
			conn_close(k);
			return;
		}
		conn_rewatch(k);
		return;
	}
	body = k->head + head_len;
	cJSON *j = cJSON_Parse(body);
	const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "message"));
	if (msg != NULL) {
		conn_fail(k, "%s", msg);
	} else {
		if ((end = strstr(k->head, "\r\n")) != NULL)
			*end = '\0';
		conn_fail(k, "the agent answered %d", status);
	}
	cJSON_Delete(j);
}

/* The TLS session with the endpoint: its handshake, then the upgrade request
 * and the answer head as for a plain agent (a direct HTTP forward relays at
 * once).  Each step goes on until OpenSSL waits for the socket. */
static void
tls_handshake(struct conn *k)
{
	struct fwd *f = k->f;
	int r;

	k->tls_want = 0;
	if (k->st == C_TLS) {
		ERR_clear_error();
		if ((r = SSL_connect(k->ssl)) != 1) {
			long v = SSL_get_verify_result(k->ssl);
			if (tls_status(k, r) == 0) {
				conn_rewatch(k);
				return;
			}
			if (v != X509_V_OK)
				conn_fail(k, "the TLS certificate of %.100s is not trusted (%s): if it "
				    "comes from a private CA, set AWS_CA_BUNDLE to its PEM file",
				    f->host, X509_verify_cert_error_string(v));
			else
				conn_fail(k, "TLS with %.100s failed: %s", f->host,
				    ERR_peek_error() ? ERR_reason_error_string(ERR_peek_error()) :
				    "the connection closed");
			return;
		}
		if (f->http) {
			tls_relay_start(k, NULL, 0);
			return;
		}
		k->st = C_SEND;
	}
	while (k->st == C_SEND) {
		ERR_clear_error();
		r = SSL_write(k->ssl, f->req + k->req_off, (int)(f->reqlen - k->req_off));
		if (r <= 0) {
			if (tls_status(k, r) != 0) {
				conn_fail(k, "cannot talk to the endpoint %.100s", f->host);
				return;
			}
			conn_rewatch(k);
			return;
		}
		k->req_off += (size_t)r;
		if (k->req_off == f->reqlen)
			k->st = C_HEAD;
	}
	while (k->st == C_HEAD) {
		char *end;
		ERR_clear_error();
		r = SSL_read(k->ssl, k->head + k->head_len, (int)(FWD_HEAD_MAX - k->head_len));
		if (r <= 0) {
			int st = tls_status(k, r);
			if (st == 0) {
				conn_rewatch(k);
				return;
			}
			conn_fail(k, "the endpoint closed the tunnel before answering");
			return;
		}
		k->head_len += (size_t)r;
		k->head[k->head_len] = '\0';
		if ((end = strstr(k->head, "\r\n\r\n")) != NULL) {
			handshake_answer(k, (size_t)(end - k->head) + 4);
			return;
		}
		if (k->head_len >= FWD_HEAD_MAX) {
			conn_fail(k, "the agent's answer head is too long");
			return;
		}
	}
}

static void
handshake(struct conn *k, uint32_t ev)
{
	struct fwd *f = k->f;

	if (k->st == C_CONNECT) {
		int err = 0;
		socklen_t len = sizeof err;
		if (getsockopt(k->ufd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			err = errno;
		if (err != 0) {
			conn_fail(k, "cannot reach the agent: %s", strerror(err));
			return;
		}
		k->st = f->tls ? C_TLS : C_SEND;
	}
	if (f->tls) {
		tls_handshake(k);
		return;
	}
	if (k->st == C_SEND) {
		ssize_t n = send(k->ufd, f->req + k->req_off, f->reqlen - k->req_off,
		    MSG_NOSIGNAL);
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			conn_fail(k, "cannot talk to the agent: %s", strerror(errno));
			return;
		}
		if (n > 0)
			k->req_off += (size_t)n;
		if (k->req_off == f->reqlen)
			k->st = C_HEAD;
		conn_rewatch(k);
		return;
	}
	if (k->st == C_HEAD && (ev & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
		ssize_t n = read(k->ufd, k->head + k->head_len, FWD_HEAD_MAX - k->head_len);
		char *end;
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			conn_fail(k, "the agent closed the tunnel before answering%s%s",
			    n < 0 ? ": " : "", n < 0 ? strerror(errno) : "");
			return;
		}
		k->head_len += (size_t)n;
		k->head[k->head_len] = '\0';
		if ((end = strstr(k->head, "\r\n\r\n")) != NULL)
			handshake_answer(k, (size_t)(end - k->head) + 4);
		else if (k->head_len >= FWD_HEAD_MAX)
			conn_fail(k, "the agent's answer head is too long");
	}
}

/* The first connection to a suspended sandbox resumes it (where the backend can). */
static int
ensure_running(struct fwd *f, char *why, size_t len)
{
	struct sbx_err e;

	if (f->state == SBX_RUNNING)
		return 0;
	if (f->state != SBX_SUSPENDED) {
		snprintf(why, len, "sandbox %s is %s", f->id, sbx_state_name(f->state));
		return -1;
	}
	if (core_resume(f->m->c, f->id, &e) < 0) {
		snprintf(why, len, "cannot resume sandbox %s: %.100s", f->id, e.msg);
		return -1;
	}
	log_info("forward %s:%d: resumed sandbox %s for a connection", f->addr, f->local, f->id);
	f->state = SBX_RUNNING;
	/* A token checked while the sandbox was suspended is checked now. */
	f->renew = f->tls;
	return 0;
}

/* The client context for HTTPS endpoints: peer verification always on, against
 * the CA file the backend named (AWS_CA_BUNDLE) or the system's store. */
static SSL_CTX *
tls_ctx(struct fwd_mgr *m, char *why, size_t len)
{
	const char *ca = agentc_ca_file();
	SSL_CTX *ctx;

	if (m->tls != NULL)
		return m->tls;
	if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL) {
		snprintf(why, len, "cannot set up TLS");
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	/* A peer that closes without close_notify has still ended its stream. */
	SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
	    SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	if (ca != NULL ? SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1 :
	    SSL_CTX_set_default_verify_paths(ctx) != 1) {
		snprintf(why, len, "cannot load the CA certificates%s%s: check AWS_CA_BUNDLE",
		    ca ? " from " : "", ca ? ca : "");
		SSL_CTX_free(ctx);
		return NULL;
	}
	return m->tls = ctx;
}

/* A TLS session on k->ufd for the endpoint f names, verifying that name. */
static int
tls_open(struct conn *k, char *why, size_t len)
{
	struct fwd *f = k->f;
	SSL_CTX *ctx = tls_ctx(f->m, why, len);
	struct in6_addr a6;
	struct in_addr a4;
	int ip = inet_pton(AF_INET, f->host, &a4) == 1 || inet_pton(AF_INET6, f->host, &a6) == 1;

	if (ctx == NULL)
		return -1;
	if ((k->ssl = SSL_new(ctx)) == NULL || SSL_set_fd(k->ssl, k->ufd) != 1) {
		snprintf(why, len, "cannot set up TLS");
		return -1;
	}
	/* An address is checked against the certificate's IP names; a host name is
	 * sent as SNI and checked against its DNS names. */
	if (ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(k->ssl), f->host) != 1 :
	    (SSL_set_tlsext_host_name(k->ssl, f->host) != 1 || SSL_set1_host(k->ssl, f->host) != 1)) {
		snprintf(why, len, "cannot verify TLS for %.100s", f->host);
		return -1;
	}
	return 0;
}

static void
accept_one(struct fwd *f, int cfd)
{
	struct fwd_mgr *m = f->m;
	struct conn *k = xcalloc(1, sizeof *k);
	int one = 1;
	char why[160];

	k->f = f;
	k->cfd = cfd;
	k->ufd = -1;
	k->ctag = (struct tag){ TAG_CLIENT, k };
	k->utag = (struct tag){ TAG_UP, k };
	k->head = xmalloc(FWD_HEAD_MAX + 1);	/* room for a NUL */
	k->cu.p[0] = k->cu.p[1] = k->uc.p[0] = k->uc.p[1] = -1;
	k->deadline = now_ms() + FWD_HANDSHAKE_MS;
	k->next = f->conns;
	if (f->conns)
		f->conns->prev = k;
	f->conns = k;
	m->nconns++;
	atomic_fetch_add(&f->conns_now, 1);
	atomic_fetch_add(&f->conns_total, 1);
	(void)setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

	if (m->nconns > FWD_CONNS_MAX) {
		conn_fail(k, "more than %d connections at once", FWD_CONNS_MAX);
		return;
	}
	if (ensure_running(f, why, sizeof why) < 0) {
		conn_fail(k, "%s", why);
		return;
	}
	k->ufd = socket(f->ep.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (k->ufd < 0) {
		conn_fail(k, "socket: %s", strerror(errno));
		return;
	}
	if (f->ep.ss_family != AF_UNIX)
		(void)setsockopt(k->ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (f->tls && tls_open(k, why, sizeof why) < 0) {
		conn_fail(k, "%s", why);
		return;
	}
	if (connect(k->ufd, (struct sockaddr *)&f->ep, f->eplen) == 0) {
		k->st = f->tls ? C_TLS : C_SEND;
		handshake(k, EPOLLOUT);
	} else if (errno == EINPROGRESS) {
		k->st = C_CONNECT;
		conn_rewatch(k);
	} else {
		conn_fail(k, "cannot reach the agent of %s: %s", f->id,
		    errno == EAGAIN ? "it has too many connections waiting" : strerror(errno));
	}
}

static void
on_listen(struct fwd *f)
{
	for (int i = 0; i < 64 && !f->stop; i++) {
		int cfd = accept4(f->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				log_warn("forward %s:%d: accept", f->addr, f->local);
			return;
		}
		accept_one(f, cfd);
	}
}

static void
fwd_teardown(struct fwd_mgr *m, struct fwd *f)
{
	struct fwd **pp;

	while (f->conns != NULL)
		conn_close(f->conns);
	free_dead(m);
	close(f->lfd);
	for (pp = &m->fwds; *pp != NULL; pp = &(*pp)->next)
		if (*pp == f) {
			*pp = f->next;
			break;
		}
	fwd_free(f);
	pthread_cond_broadcast(&m->cv);
}

/* ---- the registry side ------------------------------------------------- */

static void
counters(struct fwd *f, uint64_t v[5])
{
	v[0] = atomic_load(&f->conns_now);
	v[1] = atomic_load(&f->conns_total);
	v[2] = atomic_load(&f->bytes_in);
	v[3] = atomic_load(&f->bytes_out);
	v[4] = atomic_load(&f->failures);
}

static void
entry_set_counters(cJSON *en, const uint64_t v[5], const char *last_error)
{
	static const char *const k[5] = {
		"conns", "conns_total", "bytes_in", "bytes_out", "failures",
	};

	for (int i = 0; i < 5; i++) {
		cJSON_DeleteItemFromObjectCaseSensitive(en, k[i]);
		cJSON_AddNumberToObject(en, k[i], (double)v[i]);
	}
	cJSON_DeleteItemFromObjectCaseSensitive(en, "last_error");
	if (last_error != NULL && last_error[0] != '\0')
		cJSON_AddStringToObject(en, "last_error", last_error);
	cJSON_DeleteItemFromObjectCaseSensitive(en, "updated_at");
	cJSON_AddNumberToObject(en, "updated_at", (double)wall_ms());
}

static int
txn_flush(struct registry *r, void *arg, struct sbx_err *e)
{
	struct fwd_mgr *m = arg;

	for (struct fwd *f = m->fwds; f != NULL; f = f->next) {
		struct sandbox *s = record_of(r, f->id);
		cJSON *en;
		uint64_t v[5];
		if (s == NULL)
			continue;
		counters(f, v);
		cJSON_ArrayForEach(en, s->forwards)
			if (entry_is(en, f)) {
				entry_set_counters(en, v, f->last_error);
				memcpy(f->flushed, v, sizeof v);
			}
	}
	return 0;
}

/* Every tick: handshakes past their deadline fail; forwards whose record or
 * sandbox went away stop; counters go to the registry when they changed. */
static void
tick(struct fwd_mgr *m)
{
	int64_t now = now_ms();
	struct registry *r;
	struct sbx_err e;
	int changed = 0;

	for (struct fwd *f = m->fwds; f != NULL; f = f->next)
		for (struct conn *k = f->conns, *next; k != NULL; k = next) {
			next = k->next;
			if (k->st != C_RELAY && now > k->deadline)
				conn_fail(k, "the agent did not answer within %d s (is the "
				    "sandbox suspended?)", FWD_HANDSHAKE_MS / 1000);
		}
	free_dead(m);
	if (m->fwds == NULL)
		return;
	/* HTTPS endpoints: the token is checked (and re-minted when it lapses, is
	 * refused, or lacks a port) every minute, or at once after a 403.  It is a
	 * call to the backend, made here rather than per connection. */
	for (struct fwd *f = m->fwds; f != NULL; f = f->next) {
		if (!f->tls || f->stop || f->state != SBX_RUNNING ||
		    (!f->renew && now < f->next_renew))
			continue;
		f->renew = 0;
		f->next_renew = now + FWD_RENEW_MS;
		if (core_endpoint_renew(m->c, f->id, &e) < 0)
			log_warnx("forward %s:%d -> %s:%d: %s", f->addr, f->local, f->id, f->remote,
			    e.msg);
	}
	if ((r = registry_load(&e)) == NULL) {
		log_debug("forward: %s", e.msg);
		return;
	}
	for (struct fwd *f = m->fwds; f != NULL; f = f->next) {
		struct sandbox *s = record_of(r, f->id);
		const cJSON *en;
		int found = 0;
		uint64_t v[5];
		if (f->stop)
			continue;
		if (s == NULL || s->state == SBX_TERMINATED || s->state == SBX_ERROR) {
			log_warnx("sandbox %s is %s: forward %s:%d -> %d stopped", f->id,
			    s ? sbx_state_name(s->state) : "gone", f->addr, f->local, f->remote);
			f->stop = 1;
			continue;
		}
		cJSON_ArrayForEach(en, s->forwards)
			found |= entry_is(en, f);
		if (!found) {
			log_info("forward %s:%d -> %s:%d was stopped", f->addr, f->local, f->id,
			    f->remote);
			f->stop = 1;
			continue;
		}
		f->state = s->state;
		if (f->tls) {
			/* A renewed token (by this core or another process) is used by
			 * the connections from now on. */
			char *h = s->agent_headers ? cJSON_PrintUnformatted(s->agent_headers) :
			    xstrdup("");
			if ((f->hdrs_seen == NULL || strcmp(h, f->hdrs_seen) != 0) &&
			    build_req(f, s, &e) == 0 && f->http)
				for (struct conn *k = f->conns; k != NULL; k = k->next)
					if (k->fh != NULL)
						fwd_http_set_inject(k->fh, f->inject);
			free(h);
		}
		counters(f, v);
		changed |= memcmp(v, f->flushed, sizeof v) != 0;
	}
	registry_free(r);
	if (changed && now - m->last_flush >= FWD_FLUSH_MS) {
		m->last_flush = now;
		if (registry_update(txn_flush, m, &e) < 0)
			log_debug("forward: counters: %s", e.msg);
	}
}

static void *
loop(void *arg)
{
	struct fwd_mgr *m = arg;
	struct epoll_event evs[FWD_EVENTS];

	for (;;) {
		int64_t wait = m->next_tick - now_ms();
		int n = epoll_wait(m->ep, evs, FWD_EVENTS, wait < 0 ? 0 : (int)wait);
		if (n < 0 && errno != EINTR)
			fatal("forward: epoll_wait: %s", strerror(errno));
		pthread_mutex_lock(&m->mu);
		for (int i = 0; i < n; i++) {
			struct tag *t = evs[i].data.ptr;
			struct conn *k = t->p;
			switch (t->kind) {
			case TAG_WAKE: {
				uint64_t v;
				if (read(m->wakefd, &v, sizeof v) < 0 && errno != EAGAIN)
					log_warn("forward: wake");
				break;
			}
			case TAG_LISTEN:
				on_listen(t->p);
				break;
			case TAG_CLIENT:
			case TAG_UP:
				if (k->dead)
					break;
				if (k->st == C_RELAY && k->ssl != NULL)
					tls_relay(k);
				else if (k->st == C_RELAY)
					relay(k, t->kind == TAG_UP, evs[i].events);
				else if (t->kind == TAG_UP)
					handshake(k, evs[i].events);
				break;
			}
		}
		free_dead(m);
		if (now_ms() >= m->next_tick) {
			tick(m);
			m->next_tick = now_ms() + FWD_TICK_MS;
		}
		for (struct fwd *f = m->fwds, *next; f != NULL; f = next) {
			next = f->next;
			if (f->stop || m->quit)
				fwd_teardown(m, f);
		}
		if (m->quit) {
			pthread_mutex_unlock(&m->mu);
			return NULL;
		}
		pthread_mutex_unlock(&m->mu);
	}
}

struct fwd_mgr *
fwd_mgr_new(struct core *c)
{
	struct fwd_mgr *m = xcalloc(1, sizeof *m);
	struct epoll_event ev = { .events = EPOLLIN };
	struct rlimit rl;
	sigset_t all, old;

	m->c = c;
	m->next_seq = 1;
	pthread_mutex_init(&m->mu, NULL);
	pthread_cond_init(&m->cv, NULL);
	if ((m->ep = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
	    (m->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
		fatal("forward: %s", strerror(errno));
	m->wtag = (struct tag){ TAG_WAKE, NULL };
	ev.data.ptr = &m->wtag;
	if (epoll_ctl(m->ep, EPOLL_CTL_ADD, m->wakefd, &ev) < 0)
		fatal("forward: epoll_ctl: %s", strerror(errno));
	/* Two descriptors per connection: take the whole allowance. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	m->next_tick = now_ms() + FWD_TICK_MS;
	/* Signals belong to the front end's thread (SIGINT ends a foreground forward). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&m->th, NULL, loop, m) != 0)
		fatal("forward: cannot start the relay thread");
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return m;
}

void
fwd_mgr_free(struct fwd_mgr *m)
{
	if (m == NULL)
		return;
	pthread_mutex_lock(&m->mu);
	m->quit = 1;
	wake(m);
	pthread_mutex_unlock(&m->mu);
	pthread_join(m->th, NULL);
	close(m->ep);
	close(m->wakefd);
	SSL_CTX_free(m->tls);
	pthread_mutex_destroy(&m->mu);
	pthread_cond_destroy(&m->cv);
	free(m);
}

/* Mark the forwards that match for stopping and wait until the loop has torn
 * them down (their ports are free when this returns).  Returns how many. */
static int
stop_matching(struct fwd_mgr *m, const char *id, int remote)
{
	int n = 0;

	if (m == NULL)
		return 0;
	pthread_mutex_lock(&m->mu);
	for (struct fwd *f = m->fwds; f != NULL; f = f->next)
		if ((id == NULL || strcmp(f->id, id) == 0) && (remote <= 0 || f->remote == remote)) {
			f->stop = 1;
			n++;
		}
	wake(m);
	for (;;) {
		int left = 0;
		for (struct fwd *f = m->fwds; f != NULL; f = f->next)
			left += f->stop;
		if (left == 0)
			break;
		pthread_cond_wait(&m->cv, &m->mu);
	}
	pthread_mutex_unlock(&m->mu);
	return n;
}

void
fwd_mgr_drop_sandbox(struct fwd_mgr *m, const char *id)
{
	stop_matching(m, id, 0);
}

/* ---- the core's front door --------------------------------------------- */

/* The local address: an IPv4 or IPv6 literal, or localhost. */
static int
parse_bind(const char *addr, int port, struct sockaddr_storage *ss, socklen_t *len,
    struct sbx_err *e)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof *ss);
	if (strcmp(addr, "localhost") == 0)
		addr = "127.0.0.1";
	if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		*len = sizeof *s4;
		return 0;
	}
	if (inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		*len = sizeof *s6;
		return 0;
	}
	return sbx_error(e, SBX_EINVAL, "give an IP address such as 127.0.0.1, ::1 or 0.0.0.0",
	    "--addr: '%s' is not an IP address", addr);
}

static int
listen_on(const char *addr, int port, int *bound, struct sbx_err *e)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int one = 1;
	_cleanup_close_ int fd = -1;

	if (parse_bind(addr, port, &ss, &len, e) < 0)
		return -1;
	if ((fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "socket");
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (ss.ss_family == AF_INET6)
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
	if (bind(fd, (struct sockaddr *)&ss, len) < 0) {
		if (errno == EADDRINUSE)
			return sbx_error(e, SBX_EINVAL, "choose another local port, or leave it "
			    "out for a free one", "%s port %d is already in use", addr, port);
		if (errno == EACCES)
			return sbx_error(e, SBX_EDENIED, "use a local port of 1024 or more",
			    "%s port %d needs privileges", addr, port);
		return sbx_error_errno(e, SBX_EINVAL, NULL, "cannot listen on %s port %d", addr,
		    port);
	}
	if (listen(fd, SOMAXCONN) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "listen on %s port %d", addr, port);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "getsockname");
	*bound = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port :
	    ((struct sockaddr_in6 *)&ss)->sin6_port);
	return steal_fd(&fd);
}

static void
fwd_free(struct fwd *f)
{
	if (f->req != NULL)
		explicit_bzero(f->req, f->reqlen);
	free(f->req);
	if (f->inject != NULL)
		explicit_bzero(f->inject, strlen(f->inject));
	free(f->inject);
	free(f->hdrs_seen);
	free(f->hosthdr);
	free(f);
}

/* The request that opens a tunnel through the agent (or, for a direct HTTP
 * forward, the header lines each request gets), from s's secret and headers. */
static int
build_req(struct fwd *f, const struct sandbox *s, struct sbx_err *e)
{
	char extra[4096], key[32];
	unsigned char rnd[16];

	if (sandbox_agent_header_lines(s, extra, sizeof extra, e) < 0)
		return -1;
	if (RAND_bytes(rnd, sizeof rnd) != 1)
		return sbx_error(e, SBX_EINTERNAL, NULL, "no random bytes for a key");
	if (f->req != NULL)
		explicit_bzero(f->req, f->reqlen);
	free(f->req);
	f->req = NULL;
	if (f->inject != NULL)
		explicit_bzero(f->inject, strlen(f->inject));
	free(f->inject);
	f->inject = NULL;
	free(f->hdrs_seen);
	f->hdrs_seen = s->agent_headers ? cJSON_PrintUnformatted(s->agent_headers) : xstrdup("");
	if (f->http) {
		/* Straight to the port: the endpoint's token and port, never the
		 * sandbox secret (the server there is not the agent). */
		f->inject = xasprintf("%sX-aws-proxy-port: %d\r\n", extra, f->remote);
		return 0;
	}
	if (f->tls) {
		/* The AWS proxy passes WebSocket upgrades; the port behind the
		 * endpoint is named in the subprotocols (the agent's).  The agent
		 * answers 101 with the matching Sec-WebSocket-Accept and then relays
		 * raw bytes. */
		char *k64 = b64_encode(rnd, sizeof rnd);
		snprintf(key, sizeof key, "%s", k64);
		free(k64);
		f->req = xasprintf("GET /v1/tunnel?port=%d HTTP/1.1\r\nHost: %s\r\n"
		    "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
		    "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Protocol: lambda-microvms, "
		    "lambda-microvms.port.%d\r\nX-Sbx-Origin: forward\r\n"
		    "X-Sandbox-Secret: %s\r\n%s\r\n", f->remote, f->hosthdr, key,
		    FWD_AWS_AGENT_PORT, s->agent_secret ? s->agent_secret : "", extra);
	} else {
		f->req = xasprintf("GET /v1/tunnel?port=%d HTTP/1.1\r\nHost: %s\r\n"
		    "Connection: Upgrade\r\nUpgrade: tcp\r\nX-Sbx-Origin: forward\r\n"
		    "X-Sandbox-Secret: %s\r\n%s\r\n", f->remote, f->hosthdr,
		    s->agent_secret ? s->agent_secret : "", extra);
	}
	f->reqlen = strlen(f->req);
	return 0;
}

/* Where the agent is (the endpoint's address, and whether it is TLS). */
static int
agent_target(struct fwd *f, const struct sandbox *s, struct sbx_err *e)
{
	const char *ep = s->agent_endpoint;

	if (ep == NULL || *ep == '\0')
		return sbx_error(e, SBX_ESTATE, "run `sbxtop status ID`",
		    "sandbox %s has no agent endpoint (it may not have started)", s->id);
	if (strncmp(ep, "unix:", 5) == 0) {
		struct sockaddr_un *un = (struct sockaddr_un *)&f->ep;
		if (strlen(ep + 5) >= sizeof un->sun_path)
			return sbx_error(e, SBX_EINVAL, "use a shorter XDG_STATE_HOME",
			    "the agent socket path of %s is too long", s->id);
		un->sun_family = AF_UNIX;
		strcpy(un->sun_path, ep + 5);
		f->eplen = sizeof *un;
		f->hosthdr = xstrdup("sbxtop-agent");
	} else if (strncmp(ep, "http://", 7) == 0 || strncmp(ep, "https://", 8) == 0) {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
		const char *hp, *slash, *colon;
		_cleanup_free_ char *name = NULL;
		const char *port;
		f->tls = ep[4] == 's';
		hp = ep + (f->tls ? 8 : 7);
		slash = strchr(hp, '/');
		port = f->tls ? "443" : "80";
		f->hosthdr = slash ? xstrndup(hp, (size_t)(slash - hp)) : xstrdup(hp);
		colon = f->hosthdr[0] == '[' ? strstr(f->hosthdr, "]:") : strrchr(f->hosthdr, ':');
		if (colon != NULL) {
			port = colon + (f->hosthdr[0] == '[' ? 2 : 1);
			name = xstrndup(f->hosthdr + (f->hosthdr[0] == '['), (size_t)(colon -
			    f->hosthdr) - (f->hosthdr[0] == '['));
		} else if (f->hosthdr[0] == '[') {
			name = xstrndup(f->hosthdr + 1, strcspn(f->hosthdr + 1, "]"));
		} else {
			name = xstrdup(f->hosthdr);
		}
		if (strlen(name) >= sizeof f->host)
			return sbx_error(e, SBX_EINVAL, NULL, "the endpoint of %s has a host name "
			    "that is too long", s->id);
		snprintf(f->host, sizeof f->host, "%s", name);
		int rc = getaddrinfo(name, port, &hints, &ai);
		if (rc != 0)
			return sbx_error(e, SBX_EAGENT, NULL, "cannot resolve the agent of %s "
			    "(%s): %s", s->id, ep, gai_strerror(rc));
		memcpy(&f->ep, ai->ai_addr, ai->ai_addrlen);
		f->eplen = ai->ai_addrlen;
		freeaddrinfo(ai);
	} else {
		return sbx_error(e, SBX_EUNSUPPORTED, "forwards reach agents over a unix "
		    "socket, http or https", "sandbox %s: cannot open tunnels to the agent at "
		    "%s", s->id, ep);
	}
	if (f->http && !f->tls)
		return sbx_error(e, SBX_EUNSUPPORTED, "leave out --http: a tunnel carries HTTP "
		    "too", "--http is for sandboxes behind an HTTPS endpoint (lambda); %s is "
		    "reached at %s", s->id, ep);
	return 0;
}

static cJSON *
new_entry(const struct fwd *f)
{
	cJSON *en = cJSON_CreateObject();
	uint64_t zero[5] = { 0 };

	cJSON_AddNumberToObject(en, "remote", f->remote);
	cJSON_AddNumberToObject(en, "local", f->local);
	cJSON_AddStringToObject(en, "bind", f->addr);
	cJSON_AddNumberToObject(en, "pid", getpid());
	cJSON_AddNumberToObject(en, "pid_start", (double)self_start());
	cJSON_AddNumberToObject(en, "since", (double)f->since);
	if (f->http)
		cJSON_AddStringToObject(en, "mode", "http");
	entry_set_counters(en, zero, NULL);
	return en;
}

static void forget_entry(const struct fwd *f);

struct txn_add {
	const char	*id;
	cJSON		*entry;
};

static int
txn_add(struct registry *r, void *arg, struct sbx_err *e)
{
	struct txn_add *t = arg;
	struct sandbox *s = record_of(r, t->id);

	if (s == NULL)
		return sbx_error(e, SBX_ENOTFOUND, "run `sbxtop ls`", "sandbox %s is gone", t->id);
	if (s->state == SBX_TERMINATED || s->state == SBX_ERROR)
		return sbx_error(e, SBX_ESTATE, "create a new one", "sandbox %s is %s", s->id,
		    sbx_state_name(s->state));
	if (s->forwards == NULL)
		s->forwards = cJSON_CreateArray();
	cJSON_AddItemToArray(s->forwards, cJSON_Duplicate(t->entry, 1));
	return 0;
}

int
core_forward_start(struct core *c, const char *key, const struct core_forward_opts *o,
    struct core_forward *out, struct sbx_err *e)
{
	const char *addr = o->bind && *o->bind ? o->bind : "127.0.0.1";
	struct sandbox *s;
	struct fwd *f;
	struct fwd_mgr *m;
	struct txn_add t;
	char id[32];
	cJSON *ev;

	if (o->remote_port < 1 || o->remote_port > 65535)
		return sbx_error(e, SBX_EINVAL, NULL, "remote port %d is not valid: expected 1 "
		    "to 65535", o->remote_port);
	if (o->local_port < 0 || o->local_port > 65535)
		return sbx_error(e, SBX_EINVAL, NULL, "local port %d is not valid: expected 0 "
		    "(a free one) to 65535", o->local_port);
	if (strlen(addr) >= sizeof f->addr)
		return sbx_error(e, SBX_EINVAL, NULL, "--addr: '%s' is not an IP address", addr);
	if ((s = core_get(c, key, e)) == NULL)
		return -1;
	if (s->state != SBX_RUNNING && s->state != SBX_SUSPENDED) {
		sbx_error(e, SBX_ESTATE, "`sbxtop status ID` says why", "sandbox %s is %s: "
		    "only a running or suspended sandbox can be forwarded to", s->id,
		    sbx_state_name(s->state));
		sandbox_free(s);
		return -1;
	}
	f = xcalloc(1, sizeof *f);
	f->lfd = -1;
	snprintf(f->id, sizeof f->id, "%s", s->id);
	snprintf(f->addr, sizeof f->addr, "%s", addr);
	f->remote = o->remote_port;
	f->http = o->http;
	f->state = s->state;
	f->since = wall_ms();
	if (core_refresh_endpoint(s, e) < 0 || agent_target(f, s, e) < 0 ||
	    (f->lfd = listen_on(addr, o->local_port, &f->local, e)) < 0)
		goto fail;
	t.id = s->id;
	t.entry = new_entry(f);
	if (registry_update(txn_add, &t, e) < 0) {
		cJSON_Delete(t.entry);
		goto fail;
	}
	cJSON_Delete(t.entry);
	/* An HTTPS endpoint's token may have lapsed, and a direct forward's port
	 * must be in it: the backend renews it, with the record now naming the
	 * forward.  The request is built from the renewed record. */
	if (f->tls && s->state == SBX_RUNNING) {
		struct sandbox *s2;
		if (core_endpoint_renew(c, s->id, e) < 0 || (s2 = core_get(c, s->id, e)) == NULL) {
			forget_entry(f);
			goto fail;
		}
		sandbox_free(s);
		s = s2;
	}
	if (build_req(f, s, e) < 0) {
		forget_entry(f);
		goto fail;
	}
	f->next_renew = now_ms() + FWD_RENEW_MS;
	sandbox_free(s);
	s = NULL;

	m = core_fwd_mgr(c, 1);
	f->m = m;
	f->ltag = (struct tag){ TAG_LISTEN, f };
	pthread_mutex_lock(&m->mu);
	f->seq = m->next_seq++;
	f->next = m->fwds;
	m->fwds = f;
	struct epoll_event eev = { .events = EPOLLIN, .data.ptr = &f->ltag };
	if (epoll_ctl(m->ep, EPOLL_CTL_ADD, f->lfd, &eev) < 0)
		fatal("forward: epoll_ctl: %s", strerror(errno));
	if (out != NULL) {
		memset(out, 0, sizeof *out);
		snprintf(out->sandbox, sizeof out->sandbox, "%s", f->id);
		snprintf(out->bind, sizeof out->bind, "%s", f->addr);
		out->local_port = f->local;
		out->remote_port = f->remote;
		out->pid = getpid();
		out->live = 1;
		out->http = f->http;
		out->since_ms = f->since;
	}
	ev = cJSON_CreateObject();
	cJSON_AddStringToObject(ev, "bind", f->addr);
	cJSON_AddNumberToObject(ev, "local", f->local);
	cJSON_AddNumberToObject(ev, "remote", f->remote);
	snprintf(id, sizeof id, "%s", f->id);
	pthread_mutex_unlock(&m->mu);
	core_events_emit(c, "forward.opened", id, ev);
	return 0;
fail:
	if (f->lfd >= 0)
		close(f->lfd);
	fwd_free(f);
	sandbox_free(s);
	return -1;
}

struct txn_remove {
	const char	*id;		/* NULL: every record */
	int		 remote;	/* 0: any */
	int		 own_only;
	cJSON		*removed;	/* array of the entries taken out */
};

static int
txn_remove(struct registry *r, void *arg, struct sbx_err *e)
{
	struct txn_remove *t = arg;

	for (size_t i = 0; i < registry_count(r); i++) {
		struct sandbox *s = registry_at(r, i);
		if (t->id != NULL && strcmp(s->id, t->id) != 0)
			continue;
		for (int j = cJSON_GetArraySize(s->forwards) - 1; j >= 0; j--) {
			cJSON *en = cJSON_GetArrayItem(s->forwards, j);
			if ((t->remote > 0 && entry_int(en, "remote") != t->remote) ||
			    (t->own_only && !entry_is_own(en)))
				continue;
			en = cJSON_DetachItemFromArray(s->forwards, j);
			cJSON_AddStringToObject(en, "sandbox", s->id);
			cJSON_AddItemToArray(t->removed, en);
		}
		if (s->forwards != NULL && cJSON_GetArraySize(s->forwards) == 0) {
			cJSON_Delete(s->forwards);
			s->forwards = NULL;
		}
	}
	return 0;
}

/* Whether something still accepts on addr:port. */
static int
port_open(const char *addr, int port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	struct sbx_err e;
	_cleanup_close_ int fd = -1;

	if (strcmp(addr, "0.0.0.0") == 0)
		addr = "127.0.0.1";
	else if (strcmp(addr, "::") == 0)
		addr = "::1";
	if (parse_bind(addr, port, &ss, &len, &e) < 0 ||
	    (fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return 0;
	return connect(fd, (struct sockaddr *)&ss, len) == 0;
}

int
core_forward_stop(struct core *c, const char *key, int remote_port, int *stopped,
    struct sbx_err *e)
{
	struct txn_remove t = { NULL, remote_port, key == NULL, cJSON_CreateArray() };
	struct sandbox *s = NULL;
	const cJSON *en;
	int n;

	if (stopped)
		*stopped = 0;
	if (key != NULL) {
		if ((s = core_get(c, key, e)) == NULL) {
			cJSON_Delete(t.removed);
			return -1;
		}
		t.id = s->id;
	}
	if (registry_update(txn_remove, &t, e) < 0) {
		cJSON_Delete(t.removed);
		sandbox_free(s);
		return -1;
	}
	stop_matching(core_fwd_mgr(c, 0), t.id, remote_port);
	n = cJSON_GetArraySize(t.removed);
	/* A forward another process runs: it sees its record gone on its next tick;
	 * wait for its port, so the caller may take the same port again at once. */
	cJSON_ArrayForEach(en, t.removed) {
		const char *b = cJSON_GetStringValue(cJSON_GetObjectItem(en, "bind"));
		int64_t until = now_ms() + FWD_RELEASE_MS;
		if (entry_is_own(en) || !entry_live(en) || b == NULL)
			continue;
		while (port_open(b, entry_int(en, "local")) && now_ms() < until)
			usleep(20 * 1000);
	}
	cJSON_ArrayForEach(en, t.removed) {
		cJSON *ev = cJSON_CreateObject();
		cJSON_AddNumberToObject(ev, "local", entry_int(en, "local"));
		cJSON_AddNumberToObject(ev, "remote", entry_int(en, "remote"));
		core_events_emit(c, "forward.closed",
		    cJSON_GetStringValue(cJSON_GetObjectItem(en, "sandbox")), ev);
	}
	cJSON_Delete(t.removed);
	if (n == 0 && key != NULL) {
		char hint[96];
		snprintf(hint, sizeof hint, "`sbxtop forward --list %s` shows them", s->id);
		if (remote_port > 0)
			sbx_error(e, SBX_ENOTFOUND, hint, "sandbox %s has no forward to port %d",
			    s->id, remote_port);
		else
			sbx_error(e, SBX_ENOTFOUND, hint, "sandbox %s has no forwards", s->id);
		sandbox_free(s);
		return -1;
	}
	sandbox_free(s);
	if (stopped)
		*stopped = n;
	return 0;
}

static void
entry_to_info(const cJSON *en, const char *id, struct core_forward *out)
{
	const char *b = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(en, "bind"));
	const char *le = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(en, "last_error"));

	memset(out, 0, sizeof *out);
	snprintf(out->sandbox, sizeof out->sandbox, "%s", id);
	snprintf(out->bind, sizeof out->bind, "%s", b ? b : "?");
	out->local_port = entry_int(en, "local");
	out->remote_port = entry_int(en, "remote");
	out->pid = entry_int(en, "pid");
	out->live = entry_live(en);
	out->since_ms = (int64_t)entry_u64(en, "since");
	out->conns_now = out->live ? entry_u64(en, "conns") : 0;
	out->conns_total = entry_u64(en, "conns_total");
	out->bytes_in = entry_u64(en, "bytes_in");
	out->bytes_out = entry_u64(en, "bytes_out");
	out->failures = entry_u64(en, "failures");
	out->http = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(en, "mode")) != NULL &&
	    strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(en, "mode")), "http") == 0;
	snprintf(out->last_error, sizeof out->last_error, "%s", le ? le : "");
}

int
core_forward_list(struct core *c, const char *key, struct core_forward **out, size_t *n,
    struct sbx_err *e)
{
	struct registry *r;
	struct fwd_mgr *m = core_fwd_mgr(c, 0);
	const struct sandbox *only = NULL;
	size_t cap = 0;

	*out = NULL;
	*n = 0;
	if ((r = registry_load(e)) == NULL)
		return -1;
	if (key != NULL && (only = registry_find(r, key, e)) == NULL) {
		registry_free(r);
		return -1;
	}
	if (m != NULL)
		pthread_mutex_lock(&m->mu);
	for (size_t i = 0; i < registry_count(r); i++) {
		const struct sandbox *s = registry_at(r, i);
		const cJSON *en;
		if (only != NULL && s != only)
			continue;
		cJSON_ArrayForEach(en, s->forwards) {
			struct core_forward *cf;
			if (*n == cap) {
				cap = cap ? 2 * cap : 8;
				*out = xrealloc(*out, cap * sizeof **out);
			}
			cf = &(*out)[(*n)++];
			entry_to_info(en, s->id, cf);
			/* Ours: the live counters rather than the last flushed copy. */
			for (struct fwd *f = m ? m->fwds : NULL; f != NULL; f = f->next) {
				uint64_t v[5];
				if (strcmp(f->id, s->id) != 0 || !entry_is(en, f))
					continue;
				counters(f, v);
				cf->conns_now = v[0], cf->conns_total = v[1];
				cf->bytes_in = v[2], cf->bytes_out = v[3], cf->failures = v[4];
				snprintf(cf->last_error, sizeof cf->last_error, "%s", f->last_error);
			}
		}
	}
	if (m != NULL)
		pthread_mutex_unlock(&m->mu);
	registry_free(r);
	return 0;
}

struct txn_forget {
	const char	*id;
	int		 local, pid;
	const char	*addr;
};

static int
txn_forget(struct registry *r, void *arg, struct sbx_err *e)
{
	struct txn_forget *t = arg;
	struct sandbox *s = record_of(r, t->id);

	for (int j = s ? cJSON_GetArraySize(s->forwards) - 1 : -1; j >= 0; j--) {
		cJSON *en = cJSON_GetArrayItem(s->forwards, j);
		const char *b = cJSON_GetStringValue(cJSON_GetObjectItem(en, "bind"));
		if (entry_int(en, "local") == t->local && entry_int(en, "pid") == t->pid &&
		    b != NULL && strcmp(b, t->addr) == 0)
			cJSON_DeleteItemFromArray(s->forwards, j);
	}
	return 0;
}

/* Drop the record of f (started by this process) after a failed start. */
static void
forget_entry(const struct fwd *f)
{
	struct txn_forget t = { f->id, f->local, getpid(), f->addr };
	struct sbx_err sub;

	if (registry_update(txn_forget, &t, &sub) < 0)
		log_warnx("cannot drop the record of %s:%d: %s", f->addr, f->local, sub.msg);
}

int
core_forward_restore(struct core *c, struct sbx_err *e)
{
	struct core_forward *v;
	size_t n;
	int restored = 0;

	if (core_forward_list(c, NULL, &v, &n, e) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		struct core_forward_opts o = { v[i].bind, v[i].remote_port, v[i].local_port,
		    v[i].http };
		struct txn_forget t = { v[i].sandbox, v[i].local_port, v[i].pid, v[i].bind };
		struct sbx_err sub;
		if (v[i].live)
			continue;
		/* A record that cannot be restored now stays, for a later try (and for
		 * `forward --stop` to remove). */
		if (core_forward_start(c, v[i].sandbox, &o, NULL, &sub) < 0) {
			log_warnx("cannot restore the forward %s:%d -> %s:%d: %s", v[i].bind,
			    v[i].local_port, v[i].sandbox, v[i].remote_port, sub.msg);
			continue;
		}
		if (registry_update(txn_forget, &t, &sub) < 0)
			log_warnx("cannot drop the old record of %s:%d: %s", v[i].bind,
			    v[i].local_port, sub.msg);
		restored++;
	}
	free(v);
	return restored;
}

size_t
core_forward_running(struct core *c)
{
	struct fwd_mgr *m = core_fwd_mgr(c, 0);
	size_t n = 0;

	if (m == NULL)
		return 0;
	pthread_mutex_lock(&m->mu);
	for (struct fwd *f = m->fwds; f != NULL; f = f->next)
		n += !f->stop;
	pthread_mutex_unlock(&m->mu);
	return n;
}
