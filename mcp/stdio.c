/* The stdio transport: newline-delimited JSON-RPC on two file descriptors.  A
 * line is held by the line reader, capped at MCP_LINE_MAX; a longer one is
 * answered with an error and skipped to its end, so no input makes memory grow
 * without bound. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/line-reader.h"
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
line(void *arg, const char *p, size_t n)
{
	struct mcp_session *s = arg;

	if (n > 0 && p[n - 1] == '\r')
		n--;
	/* Blank lines carry nothing; tolerate them between messages. */
	if (n > 0 && strspn(p, " \t\r") < n)
		mcp_session_input(s, p, n);
}

/* A message over MCP_LINE_MAX: answered once, and dropped as it comes. */
static void
over(void *arg, const char *piece, size_t n, int first, int end)
{
	if (first)
		mcp_session_reply_error(arg, NULL, JSONRPC_INVALID_REQUEST, "Invalid Request: "
		    "the message is over the 16 MiB limit and was dropped", NULL);
}

int
mcp_session_read_fd(struct mcp_session *s, int fd)
{
	struct line_reader in;
	int rc;

	line_reader_init(&in, MCP_LINE_MAX, line, over, s);
	if ((rc = line_reader_read_fd(&in, fd)) < 0)
		log_warn("mcp: cannot read from the client");
	else
		line_reader_finish(&in);	/* a last message without its newline counts */
	line_reader_free(&in);
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
