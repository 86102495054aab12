/* sbxtop-guestfwd SOCK: the command QEMU's user network runs for each
 * connection a qemu guest under network rules makes to its proxy's address
 * (guestfwd=...-cmd:, backends/qemu/qemu-launch.c), with that connection on
 * descriptors 0, 1 and 2.  It hands descriptor 0 over the unix socket SOCK to
 * the sandbox's proxy (core/net/proxy.c), which serves the connection itself,
 * and exits.  A program of its own, linked with libc only: QEMU starts one per
 * connection, and sbxtop-core's fifty libraries took about 25 ms to load each
 * time where this takes about one.  Nothing may go to stderr: it is the
 * guest's connection. */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
	static const char gone[] = "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\n"
	    "Connection: close\r\n\r\nsbxtop: the network proxy of this sandbox is not running\n";
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	union {
		struct cmsghdr	h;
		char		buf[CMSG_SPACE(sizeof(int))];
	} u;
	char b = 0;
	struct iovec iov = { &b, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
	    .msg_controllen = sizeof u.buf };
	struct cmsghdr *h;
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC), fd, zero = 0;

	if (null >= 0)
		dup2(null, 2);
	signal(SIGPIPE, SIG_IGN);
	memset(u.buf, 0, sizeof u.buf);
	h = CMSG_FIRSTHDR(&m);
	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(h), &zero, sizeof zero);
	if (argc != 2 || strlen(argv[1]) >= sizeof a.sun_path ||
	    (fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		goto fail;
	memcpy(a.sun_path, argv[1], strlen(argv[1]) + 1);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0 || sendmsg(fd, &m, 0) != 1)
		goto fail;
	return 0;
fail:
	/* The guest's client shows this. */
	for (size_t off = 0; off < sizeof gone - 1;) {
		ssize_t n = write(1, gone + off, sizeof gone - 1 - off);
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	return 1;
}
