/* The door of the HTTP listener (http-door.h).
 *
 * The lobby: one thread and an epoll set.  Each accepted connection waits
 * there, peeked at (MSG_PEEK: its bytes stay in the socket for libmicrohttpd
 * to read) each time data arrives (edge-triggered), until its request head
 * has come, then it is handed over (MHD_add_connection).  The lobby holds
 * LOBBY_MAX connections, LOBBY_PER_ADDR from one address; a new one past
 * either pushes out the connection that has waited longest (from that
 * address), and none waits past the header deadline.  A client with the token
 * sends its head at once and leaves in well under a millisecond; a flood of
 * connections that say nothing only pushes out its own.
 *
 * What libmicrohttpd serves is tracked from its connection notices: the same
 * thread closes (shutdown: libmicrohttpd then closes and frees it, after
 * telling us, so the descriptor is never one reused) a connection that idles
 * past its deadline between requests, and http_door_done closes one that
 * never showed the token as soon as its request is answered. */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/util.h"
#include "mcp/http-door.h"

#define LOBBY_MAX	1024	/* connections waiting for their head */
#define LOBBY_PER_ADDR	256	/* of them from one address */
#define HEAD_PEEK	16384	/* a head longer than this goes over unseen */
#define TICK_MS		200

/* A connection in the lobby (the door's thread only). */
struct waiting {
	struct waiting		*prev, *next;	/* oldest first */
	int			 fd;
	struct sockaddr_in	 sin;
	int64_t			 since_ms;
};

/* A connection libmicrohttpd serves (under the door's lock). */
struct served {
	struct served	*prev, *next;
	int		 fd;
	int64_t		 idle_since;	/* handed over, or its last request ended */
	int		 busy;		/* a request is running */
	int		 trusted;	/* it showed the token */
	int		 closing;
};

struct http_door {
	int			 lfd, ep, wake;
	struct MHD_Daemon	*d;
	int64_t			 header_ms, idle_ms;
	pthread_t		 th;
	int			 running;
	int			 stopping;	/* atomic */
	struct waiting		*head, *tail;
	unsigned		 nwaiting;
	unsigned long		 pushed_out;	/* for the log */
	pthread_mutex_t		 mu;		/* served */
	struct served		*served;
};

/* Tags of the listening socket and the wake-up in the epoll set. */
static char tag_listen, tag_wake;

struct http_door *
http_door_new(int lfd, int64_t header_ms, int64_t idle_ms, struct sbx_err *e)
{
	struct http_door *dr = xcalloc(1, sizeof *dr);
	struct epoll_event ev = { .events = EPOLLIN };
	struct rlimit rl;

	dr->lfd = lfd;
	dr->header_ms = header_ms;
	dr->idle_ms = idle_ms;
	pthread_mutex_init(&dr->mu, NULL);
	if ((dr->ep = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
	    (dr->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "the HTTP listener's door");
		goto fail;
	}
	ev.data.ptr = &tag_listen;
	if (epoll_ctl(dr->ep, EPOLL_CTL_ADD, lfd, &ev) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "epoll_ctl");
		goto fail;
	}
	ev.data.ptr = &tag_wake;
	if (epoll_ctl(dr->ep, EPOLL_CTL_ADD, dr->wake, &ev) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "epoll_ctl");
		goto fail;
	}
	/* A descriptor per waiting connection: take the whole allowance. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	return dr;
fail:
	if (dr->ep > 0)
		close(dr->ep);
	if (dr->wake > 0)
		close(dr->wake);
	pthread_mutex_destroy(&dr->mu);
	free(dr);
	return NULL;
}

/* --- the lobby (the door's thread) ---------------------------------------- */

static void
unlink_waiting(struct http_door *dr, struct waiting *w)
{
	if (w->prev)
		w->prev->next = w->next;
	else
		dr->head = w->next;
	if (w->next)
		w->next->prev = w->prev;
	else
		dr->tail = w->prev;
	dr->nwaiting--;
	epoll_ctl(dr->ep, EPOLL_CTL_DEL, w->fd, NULL);
}

static void
drop(struct http_door *dr, struct waiting *w)
{
	unlink_waiting(dr, w);
	close(w->fd);
	free(w);
}

static void
hand_over(struct http_door *dr, struct waiting *w)
{
	unlink_waiting(dr, w);
	/* libmicrohttpd owns the descriptor from here, and closes it on failure
	 * (the connection limit). */
	if (MHD_add_connection(dr->d, w->fd, (struct sockaddr *)&w->sin,
	    sizeof w->sin) != MHD_YES)
		log_warnx("mcp http: a connection was refused: %s (the listener serves "
		    "many already)", strerror(errno));
	free(w);
}

/* Room for a connection from addr: past a cap, the one that waited longest
 * (from addr, when that is the cap reached) goes. */
static void
make_room(struct http_door *dr, in_addr_t addr)
{
	struct waiting *oldest = NULL;
	unsigned n = 0;

	for (struct waiting *w = dr->head; w != NULL; w = w->next)
		if (w->sin.sin_addr.s_addr == addr && n++ == 0)
			oldest = w;
	if (n < LOBBY_PER_ADDR && dr->nwaiting < LOBBY_MAX)
		return;
	if (n < LOBBY_PER_ADDR)
		oldest = dr->head;
	if (dr->pushed_out++ % 1000 == 0)
		log_warnx("mcp http: %u connections wait without sending a request (%u from "
		    "one address): the longest waiting goes for each new one", dr->nwaiting, n);
	drop(dr, oldest);
}

static void
accept_all(struct http_door *dr)
{
	for (;;) {
		struct sockaddr_in sin;
		socklen_t len = sizeof sin;
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP | EPOLLET };
		struct waiting *w;
		int fd = accept4(dr->lfd, (struct sockaddr *)&sin, &len,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE) {
				/* Out of descriptors: the longest waiting one makes way;
				 * with none waiting, the backlog waits a moment rather
				 * than the thread spinning on it. */
				log_warnx("mcp http: out of descriptors with %u connections "
				    "waiting", dr->nwaiting);
				if (dr->head == NULL) {
					poll(NULL, 0, TICK_MS);
					return;
				}
				drop(dr, dr->head);
				continue;
			}
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				log_warn("mcp http: accept");
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return;
		}
		make_room(dr, sin.sin_addr.s_addr);
		w = xcalloc(1, sizeof *w);
		w->fd = fd;
		w->sin = sin;
		w->since_ms = now_ms();
		w->prev = dr->tail;
		if (dr->tail)
			dr->tail->next = w;
		else
			dr->head = w;
		dr->tail = w;
		dr->nwaiting++;
		ev.data.ptr = w;
		if (epoll_ctl(dr->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
			log_warn("mcp http: epoll_ctl");
			dr->nwaiting--;
			if (w->prev)
				w->prev->next = NULL;
			else
				dr->head = NULL;
			dr->tail = w->prev;
			close(fd);
			free(w);
		}
	}
}

/* New bytes (or the end) on w: its head complete, it goes over. */
static void
look(struct http_door *dr, struct waiting *w, uint32_t events)
{
	char buf[HEAD_PEEK];
	ssize_t n = recv(w->fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		drop(dr, w);	/* gone before a request */
		return;
	}
	if (memmem(buf, (size_t)n, "\r\n\r\n", 4) != NULL ||
	    memmem(buf, (size_t)n, "\n\n", 2) != NULL || (size_t)n == sizeof buf) {
		hand_over(dr, w);
		return;
	}
	if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		drop(dr, w);	/* half a head, and nothing more will come */
}

/* Deadlines: the lobby's, oldest first, and those of what is served. */
static void
tick(struct http_door *dr, int64_t now)
{
	while (dr->head != NULL && now - dr->head->since_ms >= dr->header_ms)
		drop(dr, dr->head);
	pthread_mutex_lock(&dr->mu);
	for (struct served *s = dr->served; s != NULL; s = s->next)
		if (!s->busy && !s->closing &&
		    now - s->idle_since >= (s->trusted ? dr->idle_ms : dr->header_ms)) {
			shutdown(s->fd, SHUT_RDWR);
			s->closing = 1;
		}
	pthread_mutex_unlock(&dr->mu);
}

static void *
door_main(void *arg)
{
	struct http_door *dr = arg;
	struct epoll_event ev[64];

	while (!__atomic_load_n(&dr->stopping, __ATOMIC_RELAXED)) {
		int n = epoll_wait(dr->ep, ev, ARRAY_SIZE(ev), TICK_MS);

		if (n < 0 && errno != EINTR) {
			log_warn("mcp http: epoll_wait");
			break;
		}
		for (int i = 0; i < n; i++) {
			if (ev[i].data.ptr == &tag_listen)
				accept_all(dr);
			else if (ev[i].data.ptr != &tag_wake)
				look(dr, ev[i].data.ptr, ev[i].events);
		}
		tick(dr, now_ms());
	}
	return NULL;
}

int
http_door_open(struct http_door *dr, struct MHD_Daemon *d, struct sbx_err *e)
{
	dr->d = d;
	if (pthread_create(&dr->th, NULL, door_main, dr) != 0)
		return sbx_error(e, SBX_EIO, NULL, "cannot start the HTTP listener's thread");
	dr->running = 1;
	return 0;
}

/* --- what libmicrohttpd serves ------------------------------------------- */

static struct served *
served_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn,
	    MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci != NULL ? ci->socket_context : NULL;
}

void
http_door_notify(void *cls, struct MHD_Connection *conn, void **socket_ctx,
    enum MHD_ConnectionNotificationCode code)
{
	struct http_door *dr = cls;
	struct served *s;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn,
		    MHD_CONNECTION_INFO_CONNECTION_FD);
		s = xcalloc(1, sizeof *s);
		s->fd = ci != NULL ? ci->connect_fd : -1;
		s->idle_since = now_ms();
		s->closing = s->fd < 0;
		pthread_mutex_lock(&dr->mu);
		s->next = dr->served;
		if (dr->served)
			dr->served->prev = s;
		dr->served = s;
		pthread_mutex_unlock(&dr->mu);
		*socket_ctx = s;
		return;
	}
	/* Closed: told before libmicrohttpd closes the descriptor. */
	if ((s = *socket_ctx) == NULL)
		return;
	pthread_mutex_lock(&dr->mu);
	if (s->prev)
		s->prev->next = s->next;
	else
		dr->served = s->next;
	if (s->next)
		s->next->prev = s->prev;
	pthread_mutex_unlock(&dr->mu);
	free(s);
	*socket_ctx = NULL;
}

void
http_door_request(struct http_door *dr, struct MHD_Connection *conn, int trusted)
{
	struct served *s = served_of(conn);

	if (s == NULL)
		return;
	pthread_mutex_lock(&dr->mu);
	s->busy = 1;
	s->trusted |= trusted;
	pthread_mutex_unlock(&dr->mu);
}

void
http_door_done(struct http_door *dr, struct MHD_Connection *conn)
{
	struct served *s = served_of(conn);

	if (s == NULL)
		return;
	pthread_mutex_lock(&dr->mu);
	s->busy = 0;
	s->idle_since = now_ms();
	/* Answered (a refusal, /health): a client without the token keeps no
	 * thread waiting for its next request. */
	if (!s->trusted && !s->closing) {
		shutdown(s->fd, SHUT_RDWR);
		s->closing = 1;
	}
	pthread_mutex_unlock(&dr->mu);
}

void
http_door_stop(struct http_door *dr)
{
	uint64_t one = 1;

	if (dr == NULL)
		return;
	__atomic_store_n(&dr->stopping, 1, __ATOMIC_RELAXED);
	if (dr->running) {
		(void)!write(dr->wake, &one, sizeof one);
		pthread_join(dr->th, NULL);
		dr->running = 0;
	}
	while (dr->head != NULL)
		drop(dr, dr->head);
	close(dr->lfd);
	dr->lfd = -1;
}

void
http_door_free(struct http_door *dr)
{
	if (dr == NULL)
		return;
	/* Everything libmicrohttpd served has been told closed by now. */
	close(dr->ep);
	close(dr->wake);
	pthread_mutex_destroy(&dr->mu);
	free(dr);
}
