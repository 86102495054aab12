/* The relay behind sbxtop/pty (pty.h).  Frames pass through unchanged, so the
 * server needs no knowledge of them: resizes, signals and the exit frame are
 * the agent's business and the client's.  Both descriptors are made
 * non-blocking and each direction has a buffer of its own, so a client that
 * types while it is not reading (or a shell that prints while nobody reads)
 * cannot lock the two directions against each other. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include "lib/util.h"
#include "server/pty.h"

#define PTY_BUF	65536

struct dir {
	int	 from, to;
	size_t	 off, len;
	int	 eof;
	char	 buf[PTY_BUF];
};

/* Read what there is; -1 when the source ended or failed. */
static int
pull(struct dir *d)
{
	ssize_t n = read(d->from, d->buf, sizeof d->buf);

	if (n > 0) {
		d->off = 0;
		d->len = (size_t)n;
		return 0;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	d->eof = 1;
	return -1;
}

/* Write what waits; -1 when the destination is gone. */
static int
push(struct dir *d)
{
	while (d->len > 0) {
		ssize_t n = write(d->to, d->buf + d->off, d->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n <= 0)
			return -1;
		d->off += (size_t)n;
		d->len -= (size_t)n;
	}
	return 0;
}

void
pty_relay(int cfd, int afd)
{
	_cleanup_free_ struct dir *dirs = xcalloc(2, sizeof *dirs);
	struct dir *up = &dirs[0], *down = &dirs[1];
	int cfl = fcntl(cfd, F_GETFL), afl = fcntl(afd, F_GETFL), hup[2] = { 0, 0 };

	up->from = down->to = cfd;
	up->to = down->from = afd;
	fcntl(cfd, F_SETFL, cfl | O_NONBLOCK);
	fcntl(afd, F_SETFL, afl | O_NONBLOCK);
	while (!up->eof && !down->eof) {
		struct pollfd p[2] = { { cfd, 0, 0 }, { afd, 0, 0 } };

		/* Read a side only when its buffer is empty: back-pressure.  A
		 * side that hung up is not polled while what it sent waits to go
		 * out (its hangup would wake us in a loop); then it reads its
		 * end. */
		p[0].events = (up->len == 0 ? POLLIN : 0) | (down->len > 0 ? POLLOUT : 0);
		p[1].events = (down->len == 0 ? POLLIN : 0) | (up->len > 0 ? POLLOUT : 0);
		for (int i = 0; i < 2; i++)
			if (hup[i] && dirs[i].len > 0)
				p[i].fd = -1;
		if (poll(p, 2, 1000) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int i = 0; i < 2; i++) {
			if (p[i].revents & (POLLHUP | POLLERR))
				hup[i] = 1;
			if ((p[i].revents & (POLLIN | POLLHUP | POLLERR)) && dirs[i].len == 0)
				pull(&dirs[i]);
		}
		/* What was read before an end is written first: the shell's last
		 * words (the exit frame) reach the client. */
		if (push(up) < 0 || push(down) < 0)
			break;
	}
	fcntl(cfd, F_SETFL, cfl);
	fcntl(afd, F_SETFL, afl);
}
