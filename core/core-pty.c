/* A PTY connection to a sandbox's agent (GET /v1/pty, an HTTP/1.1 upgrade), for
 * the console's "open a shell".  libcurl has no way to hand over an upgraded
 * connection, so this speaks the few lines of HTTP itself, as forward.c does
 * for tunnels; afterwards the socket carries the agent's PTY frames. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "backends/backend.h"
#include "core/core-watch.h"
#include "core/agentc.h"
#include "core/core-int.h"
#include "lib/util.h"

#define PTY_HEAD_MAX 8192

/* A connected socket to the agent of s, and the Host header value. */
static int
agent_connect(const struct sandbox *s, char *host, size_t hostlen, struct sbx_err *e)
{
	const char *ep = s->agent_endpoint;
	_cleanup_close_ int fd = -1;

	if (ep == NULL || *ep == '\0')
		return sbx_error(e, SBX_ESTATE, "run `sbxtop status ID`",
		    "sandbox %s has no agent endpoint", s->id);
	if (strncmp(ep, "unix:", 5) == 0) {
		char why[256];
		if ((fd = agent_sock_connect(ep + 5, 0, why, sizeof why)) < 0)
			return sbx_error(e, SBX_EAGENT, "run `sbxtop status ID`",
			    "cannot reach the agent of %s: %s", s->id, why);
		snprintf(host, hostlen, "sbxtop-agent");
		return steal_fd(&fd);
	}
	if (strncmp(ep, "http://", 7) == 0) {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai, *p;
		const char *hp = ep + 7, *slash = strchr(hp, '/');
		char hbuf[256], *colon, *name = hbuf;
		const char *port = "80";
		int rc;

		snprintf(hbuf, sizeof hbuf, "%.*s", slash ? (int)(slash - hp) : (int)strlen(hp),
		    hp);
		snprintf(host, hostlen, "%s", hbuf);
		colon = hbuf[0] == '[' ? strstr(hbuf, "]:") : strrchr(hbuf, ':');
		if (colon != NULL) {
			port = colon + (hbuf[0] == '[' ? 2 : 1);
			*colon = '\0';
			if (hbuf[0] == '[')
				name = hbuf + 1;
		}
		if ((rc = getaddrinfo(name, port, &hints, &ai)) != 0)
			return sbx_error(e, SBX_EAGENT, NULL, "cannot resolve the agent of %s "
			    "(%s): %s", s->id, ep, gai_strerror(rc));
		for (p = ai; p != NULL && fd < 0; p = p->ai_next) {
			fd = socket(p->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
			if (fd >= 0 && connect(fd, p->ai_addr, p->ai_addrlen) < 0) {
				close(fd);
				fd = -1;
			}
		}
		freeaddrinfo(ai);
		if (fd < 0)
			return sbx_error_errno(e, SBX_EAGENT, "run `sbxtop status ID`",
			    "cannot reach the agent of %s at %s", s->id, ep);
		return steal_fd(&fd);
	}
	return sbx_error(e, SBX_EUNSUPPORTED, "shells reach agents over a unix socket or "
	    "plain http for now", "sandbox %s: cannot open a shell through %s yet", s->id, ep);
}

/* Read the answer head byte by byte: nothing after it may be consumed, since
 * the frames start right there. */
static int
read_head(int fd, char *head, size_t max, struct sbx_err *e)
{
	size_t n = 0;

	while (n + 1 < max) {
		ssize_t r = read(fd, head + n, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return sbx_error(e, SBX_EAGENT, NULL, "the agent closed the PTY "
			    "connection before answering");
		n++;
		head[n] = '\0';
		if (n >= 4 && memcmp(head + n - 4, "\r\n\r\n", 4) == 0)
			return (int)n;
	}
	return sbx_error(e, SBX_EAGENT, NULL, "the agent's answer head is too long");
}

int
core_pty_open(struct core *c, const char *key, int cols, int rows, const char *command,
    const char *origin, struct sbx_err *e)
{
	struct sandbox *s = NULL;
	struct agentc *a = NULL;
	const struct backend *b;
	_cleanup_free_ char *req = NULL, *q = NULL;
	_cleanup_close_ int fd = -1;
	char host[256], extra[2048], head[PTY_HEAD_MAX];
	int status = 0;

	if (core_agent_for(c, key, &s, &a, e) < 0)
		return -1;
	agentc_free(a);
	b = backend_find(s->backend);
	if (b != NULL && b->pty_open != NULL) {
		/* Through a proxy the backend knows: it speaks to the endpoint. */
		q = command ? agentc_escape(command) : NULL;
		req = xasprintf("cols=%d&rows=%d%s%s", cols, rows, q ? "&command=" : "",
		    q ? q : "");
		fd = b->pty_open(s, req, origin, e);
		sandbox_free(s);
		return steal_fd(&fd);
	}
	if ((fd = agent_connect(s, host, sizeof host, e)) < 0)
		goto fail;
	if (sandbox_agent_header_lines(s, extra, sizeof extra, e) < 0)
		goto fail;
	q = command ? agentc_escape(command) : NULL;
	req = xasprintf("GET /v1/pty?cols=%d&rows=%d%s%s HTTP/1.1\r\nHost: %s\r\n"
	    "Connection: Upgrade\r\nUpgrade: pty\r\nX-Sbx-Origin: %s\r\n"
	    "X-Sandbox-Secret: %s\r\n%s\r\n", cols, rows, q ? "&command=" : "", q ? q : "",
	    host, origin ? origin : "console", s->agent_secret ? s->agent_secret : "", extra);
	if (write_all(fd, req, strlen(req)) < 0) {
		sbx_error_errno(e, SBX_EAGENT, NULL, "cannot talk to the agent of %s", s->id);
		goto fail;
	}
	if (read_head(fd, head, sizeof head, e) < 0)
		goto fail;
	if (sscanf(head, "HTTP/1.%*d %d", &status) != 1 || status != 101) {
		const char *body = strstr(head, "\r\n\r\n");
		char *eol = strstr(head, "\r\n");
		if (eol)
			*eol = '\0';
		sbx_error(e, SBX_EAGENT, NULL, "sandbox %s: the agent refused the shell: %s%s",
		    s->id, head, body ? "" : "");
		goto fail;
	}
	sandbox_free(s);
	return steal_fd(&fd);
fail:
	sandbox_free(s);
	return -1;
}
