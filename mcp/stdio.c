/* The stdio transport: newline-delimited JSON-RPC on two file descriptors.  A
 * line is held in a buffer capped at MCP_LINE_MAX; a longer one is answered with
 * an error and skipped to its end, so no input makes memory grow without bound. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/log.h"
#include "lib/util.h"
#include "mcp/jsonrpc.h"
#include "mcp/mcp.h"

struct out {
	pthread_mutex_t	 mu;	/* the session's sends and the reader's own errors */
	int		 fd;
	int		 broken;	/* the reader went away: stop writing */
};

/* One message and its newline in one write sequence (the session serializes). */
static void
send_line(void *arg, const char *msg, size_t len)
{
	struct out *o = arg;

	pthread_mutex_lock(&o->mu);
	if (!o->broken && write_line(o->fd, msg, len) < 0) {
		log_warn("mcp: cannot write to the client");
		o->broken = 1;
	}
	pthread_mutex_unlock(&o->mu);
}

static void
line(struct mcp_session *s, struct buf *b)
{
	size_t n = b->len;

	if (n > 0 && b->data[n - 1] == '\r')
		n--;
	/* Blank lines carry nothing; tolerate them between messages. */
	if (n > 0 && strspn(b->data, " \t\r") < n)
		mcp_session_input(s, b->data, n);
	buf_reset(b);
}

int
mcp_session_read_fd(struct mcp_session *s, int fd)
{
	char chunk[65536];
	struct buf b;
	int skipping = 0, rc = 0;

	buf_init(&b, MCP_LINE_MAX);
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof chunk);
		const char *p = chunk, *end;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			log_warn("mcp: cannot read from the client");
			rc = -1;
			break;
		}
		if (n == 0)
			break;
		end = chunk + n;
		while (p < end) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			size_t k = (size_t)((nl ? nl : end) - p);

			if (!skipping && buf_append(&b, p, k) < 0) {
				mcp_session_reply_error(s, NULL, JSONRPC_INVALID_REQUEST, "Invalid "
				    "Request: the message is over the 16 MiB limit and was dropped", NULL);
				buf_free(&b);
				buf_init(&b, MCP_LINE_MAX);
				skipping = 1;
			}
			p += k;
			if (nl == NULL)
				break;
			p++;
			if (skipping)
				skipping = 0;
			else
				line(s, &b);
		}
	}
	/* A last message without its newline still counts. */
	if (rc == 0 && !skipping && b.len > 0)
		line(s, &b);
	buf_free(&b);
	return rc;
}

int
mcp_serve_stdio(struct core *c, int in_fd, int out_fd)
{
	struct out o = { PTHREAD_MUTEX_INITIALIZER, out_fd, 0 };
	struct mcp_session *s = mcp_session_new(c, "stdio", send_line, &o);
	int rc = mcp_session_read_fd(s, in_fd) < 0 ? 1 : 0;

	mcp_session_close(s);
	mcp_tasks_shutdown();
	pthread_mutex_destroy(&o.mu);
	return rc;
}
