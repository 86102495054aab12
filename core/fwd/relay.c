/* The forward manager's relay thread (see fwd/relay.h): one epoll loop over
 * every forward's listening socket and every connection.  Each accepted
 * connection opens an agent tunnel (fwd/tls.c: an HTTP/1.1 upgrade on a socket
 * of our own, so the bytes after the 101 are ours to relay) and then copies
 * both ways through a bounded buffer per direction.  docs/ARCHITECTURE.md says
 * why a loop rather than a thread per connection.
 *
 * Locking: the loop holds m->mu while it handles a batch of events and its tick,
 * never while it waits; the core_forward_* calls (core-forward.c) take it to add a
 * forward, mark one for stopping (the loop tears it down: only the loop frees
 * what epoll may still point at) or read counters.  The registry is read every
 * tick (fwd/store.c), so a forward whose record or sandbox went away
 * (`forward --stop` or `destroy` in another process) stops within a tick or two. */
#include <errno.h>
#include <fcntl.h>
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

#include <openssl/ssl.h>

#include "core/client/agentc.h"
#include "core/fwd/fwd.h"
#include "lib/log.h"
#include "lib/util.h"

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

void
fwd_conn_rewatch(struct conn *k)
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

void
fwd_conn_close(struct conn *k)
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
void
fwd_conn_fail(struct conn *k, const char *fmt, ...)
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
	fwd_conn_close(k);
}

/* Move what can be moved in direction d without blocking; -1 when broken. */
int
fwd_pump(struct dir *d, int src, int dst, int can_read, int can_write,
    _Atomic uint64_t *count)
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
int
fwd_dir_open(struct dir *d)
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
		rc = fwd_pump(&k->uc, k->ufd, k->cfd, rd, 0, &k->f->bytes_out) < 0 ||
		    fwd_pump(&k->cu, k->cfd, k->ufd, 0, wr, &k->f->bytes_in) < 0;
	else
		rc = fwd_pump(&k->cu, k->cfd, k->ufd, rd, 0, &k->f->bytes_in) < 0 ||
		    fwd_pump(&k->uc, k->ufd, k->cfd, 0, wr, &k->f->bytes_out) < 0;
	if (rc || (k->cu.done && k->uc.done)) {
		fwd_conn_close(k);
		return;
	}
	fwd_conn_rewatch(k);
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
	if (f->m->hooks.resume(f->m->hooks.arg, f->id, &e) < 0) {
		snprintf(why, len, "cannot resume sandbox %s: %.100s", f->id, e.msg);
		return -1;
	}
	log_info("forward %s:%d: resumed sandbox %s for a connection", f->addr, f->local, f->id);
	f->state = SBX_RUNNING;
	/* A token checked while the sandbox was suspended is checked now. */
	f->renew = f->tls;
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
		fwd_conn_fail(k, "more than %d connections at once", FWD_CONNS_MAX);
		return;
	}
	if (ensure_running(f, why, sizeof why) < 0) {
		fwd_conn_fail(k, "%s", why);
		return;
	}
	if (f->ep.ss_family == AF_UNIX) {
		/* Never through a link the sandbox put in the socket's place. */
		if ((k->ufd = agent_sock_connect(((struct sockaddr_un *)&f->ep)->sun_path,
		    SOCK_NONBLOCK, why, sizeof why)) < 0) {
			fwd_conn_fail(k, "cannot reach the agent of %s: %s", f->id, why);
			return;
		}
		k->st = C_SEND;
		fwd_handshake(k, EPOLLOUT);
		return;
	}
	k->ufd = socket(f->ep.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (k->ufd < 0) {
		fwd_conn_fail(k, "socket: %s", strerror(errno));
		return;
	}
	if (f->ep.ss_family != AF_UNIX)
		(void)setsockopt(k->ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (f->tls && fwd_tls_open(k, why, sizeof why) < 0) {
		fwd_conn_fail(k, "%s", why);
		return;
	}
	if (connect(k->ufd, (struct sockaddr *)&f->ep, f->eplen) == 0) {
		k->st = f->tls ? C_TLS : C_SEND;
		fwd_handshake(k, EPOLLOUT);
	} else if (errno == EINPROGRESS) {
		k->st = C_CONNECT;
		fwd_conn_rewatch(k);
	} else {
		fwd_conn_fail(k, "cannot reach the agent of %s: %s", f->id,
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
		fwd_conn_close(f->conns);
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

/* Every tick: handshakes past their deadline fail; tokens are renewed; then
 * the registry says which forwards stop (fwd/store.c). */
static void
tick(struct fwd_mgr *m)
{
	int64_t now = now_ms();
	struct sbx_err e;

	for (struct fwd *f = m->fwds; f != NULL; f = f->next)
		for (struct conn *k = f->conns, *next; k != NULL; k = next) {
			next = k->next;
			if (k->st != C_RELAY && now > k->deadline)
				fwd_conn_fail(k, "the agent did not answer within %d s (is the "
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
		if (m->hooks.renew(m->hooks.arg, f->id, &e) < 0)
			log_warnx("forward %s:%d -> %s:%d: %s", f->addr, f->local, f->id, f->remote,
			    e.msg);
	}
	fwd_store_sync(m, now);
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
					fwd_tls_relay(k);
				else if (k->st == C_RELAY)
					relay(k, t->kind == TAG_UP, evs[i].events);
				else if (t->kind == TAG_UP)
					fwd_handshake(k, evs[i].events);
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
fwd_mgr_new(const struct fwd_hooks *h)
{
	struct fwd_mgr *m = xcalloc(1, sizeof *m);
	struct epoll_event ev = { .events = EPOLLIN };
	struct rlimit rl;
	sigset_t all, old;

	m->hooks = *h;
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

void
fwd_mgr_add(struct fwd_mgr *m, struct fwd *f)
{
	struct epoll_event ev = { .events = EPOLLIN };

	f->m = m;
	f->ltag = (struct tag){ TAG_LISTEN, f };
	ev.data.ptr = &f->ltag;
	pthread_mutex_lock(&m->mu);
	f->seq = m->next_seq++;
	f->next = m->fwds;
	m->fwds = f;
	if (epoll_ctl(m->ep, EPOLL_CTL_ADD, f->lfd, &ev) < 0)
		fatal("forward: epoll_ctl: %s", strerror(errno));
	pthread_mutex_unlock(&m->mu);
}

/* The ports are free when this returns. */
int
fwd_mgr_stop(struct fwd_mgr *m, const char *id, int remote)
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
	fwd_mgr_stop(m, id, 0);
}

void
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
