/* A warm pool member's agent connection, opened ahead and kept warm.  A claim
 * gives the guest's agent its deadline and idle policy; on a new connection
 * that request waits for the handshake through QEMU's user network into a TCG
 * guest and for the guest to settle the new connection, 10-45 ms here, against
 * 1-5 ms on one opened earlier.  So the member's connection is opened when it
 * is made, and the pool's check (the backend's status, every 5 s) sends GET
 * /health on it, which keeps it open and the guest's path warm. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "backends/qemu/qemu-vm.h"
#include "lib/log.h"
#include "lib/util.h"

#define KEEP_MAX	64
#define ANSWER_MAX	(64 * 1024)

struct kept {
	char	id[32];
	int	fd;
};

static pthread_mutex_t keep_mu = PTHREAD_MUTEX_INITIALIZER;
static struct kept kept[KEEP_MAX];
static int nkept;

/* The kept connection of id, taken out of the table (-1: none). */
static int
take(const char *id)
{
	int fd = -1;

	pthread_mutex_lock(&keep_mu);
	for (int i = 0; i < nkept; i++)
		if (strcmp(kept[i].id, id) == 0) {
			fd = kept[i].fd;
			kept[i] = kept[--nkept];
			break;
		}
	pthread_mutex_unlock(&keep_mu);
	return fd;
}

static void
put(const char *id, int fd)
{
	pthread_mutex_lock(&keep_mu);
	if (nkept < KEEP_MAX && strlen(id) < sizeof kept[0].id) {
		snprintf(kept[nkept].id, sizeof kept[0].id, "%s", id);
		kept[nkept++].fd = fd;
		fd = -1;
	}
	pthread_mutex_unlock(&keep_mu);
	if (fd >= 0)
		close(fd);
}

static int
dial(const struct sandbox *s)
{
	int port = (int)qemu_json_num(s->backend_data, "port"), one = 1, fd;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	    .sin_port = htons((uint16_t)port) };

	if (port <= 0 || (fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Send req on fd and read the answer (a head and a Content-Length body) until
 * end (monotonic ms): its status, and its body in *body (caller frees).  -1
 * when the connection failed; *sent says whether req went out. */
static int
exchange(int fd, const char *req, int64_t end, char **body, int *sent)
{
	_cleanup_free_ char *buf = xmalloc(ANSWER_MAX + 1);
	size_t have = 0;
	char *head_end = NULL;
	long clen = -1;
	int status = 0;

	*sent = 0;
	*body = NULL;
	if (write_all(fd, req, strlen(req)) < 0)
		return -1;
	*sent = 1;
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = end - now_ms();
		ssize_t n;

		if (head_end != NULL && clen >= 0 && have >= (size_t)(head_end - buf) + 4 + (size_t)clen)
			break;
		if (have == ANSWER_MAX || left <= 0 || poll(&p, 1, (int)left) <= 0)
			return -1;
		if ((n = read(fd, buf + have, ANSWER_MAX - have)) <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return -1;
		}
		have += (size_t)n;
		buf[have] = '\0';
		if (head_end == NULL && (head_end = strstr(buf, "\r\n\r\n")) != NULL) {
			const char *cl = strcasestr(buf, "\r\nContent-Length:");
			if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1 || cl == NULL || cl > head_end)
				return -1;
			clen = strtol(cl + 17, NULL, 10);
			if (clen < 0 || clen > ANSWER_MAX)
				return -1;
		}
	}
	*body = xstrndup(head_end + 4, (size_t)clen);
	return status;
}

/* GET /health on fd: 0 when the agent answered 200. */
static int
health(int fd)
{
	static const char req[] = "GET /health HTTP/1.1\r\nHost: sbxtop-agent\r\n\r\n";
	_cleanup_free_ char *body = NULL;
	int sent;

	return exchange(fd, req, now_ms() + 5000, &body, &sent) == 200 ? 0 : -1;
}

void
qemu_keep_warm(const struct sandbox *s)
{
	int fd = take(s->id);

	if (fd >= 0 && health(fd) < 0) {
		close(fd);
		fd = -1;
	}
	if (fd < 0 && (fd = dial(s)) >= 0 && health(fd) < 0) {
		log_debug("%s: no warm connection to its agent", s->id);
		close(fd);
		fd = -1;
	}
	if (fd >= 0)
		put(s->id, fd);
}

int
qemu_keep_post(const struct sandbox *s, const char *path, const cJSON *json, int64_t timeout_ms,
    cJSON **out, struct sbx_err *e)
{
	_cleanup_free_ char *req = NULL, *body = NULL, *text = cJSON_PrintUnformatted(json);
	int fd = take(s->id), sent, status;

	if (fd < 0)
		return 1;
	if (text == NULL || s->agent_secret == NULL || strpbrk(s->agent_secret, "\r\n") != NULL) {
		close(fd);
		return 1;
	}
	req = xasprintf("POST %s HTTP/1.1\r\nHost: sbxtop-agent\r\nX-Sandbox-Secret: %s\r\n"
	    "X-Sbx-Origin: pool\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
	    path, s->agent_secret, strlen(text), text);
	status = exchange(fd, req, now_ms() + timeout_ms, &body, &sent);
	explicit_bzero(req, strlen(req));
	close(fd);	/* a member's connection: the claimed sandbox's client has its own */
	if (status < 0 && !sent)
		return 1;	/* gone before it was asked: the caller asks anew */
	if (status < 0)
		return sbx_error(e, SBX_EAGENT, NULL, "the agent of %s did not answer %s", s->id, path);
	if (status != 200) {
		return sbx_error(e, SBX_EAGENT, NULL, "the agent of %s answered %s with %d%s%.200s",
		    s->id, path, status, body ? ": " : "", body ? body : "");
	}
	if (out != NULL && (*out = cJSON_Parse(body)) == NULL)
		return sbx_error(e, SBX_EAGENT, NULL, "the agent of %s answered %s with no JSON",
		    s->id, path);
	return 0;
}

void
qemu_keep_drop(const char *id)
{
	int fd = take(id);

	if (fd >= 0)
		close(fd);
}
