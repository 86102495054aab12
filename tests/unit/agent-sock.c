/* Unit tests for core/client/agentc.c: the agent's socket is reached only when it
 * is a socket itself, owned by its directory's owner; a link to another socket
 * of the host user (the confused deputy) or a socket someone else owns is
 * refused, and nothing connects to it.  TAP lines. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "tap.h"
#include "core/client/agentc.h"

static int
listen_at(const char *path)
{
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);

	snprintf(un.sun_path, sizeof un.sun_path, "%s", path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&un, sizeof un) < 0 || listen(fd, 4) < 0)
		return -1;
	return fd;
}

/* Whether a connection waits on the listener. */
static int
pending(int lfd)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	return poll(&p, 1, 50) == 1;
}

int
main(void)
{
	char tmpl[] = "/tmp/agent-sock-XXXXXX", sb[256], decoy[256], why[256];
	const char *top = mkdtemp(tmpl);
	int agent, other, fd;

	snprintf(sb, sizeof sb, "%s/agent.sock", top);
	snprintf(decoy, sizeof decoy, "%s/other.sock", top);
	agent = listen_at(sb);
	other = listen_at(decoy);
	check(agent >= 0 && other >= 0, "two listening sockets");

	fd = agent_sock_connect(sb, 0, why, sizeof why);
	check(fd >= 0 && pending(agent), "the agent's own socket is reached");
	if (fd >= 0)
		close(fd);
	fd = agent_sock_connect(sb, SOCK_NONBLOCK, why, sizeof why);
	check(fd >= 0 && (fcntl(fd, F_GETFL) & O_NONBLOCK), "... non-blocking when asked");
	if (fd >= 0)
		close(fd);

	/* The sandbox's root swaps the name for a link to another socket. */
	unlink(sb);
	check(symlink(decoy, sb) == 0, "agent.sock replaced by a link to another socket");
	fd = agent_sock_connect(sb, 0, why, sizeof why);
	check(fd < 0 && strstr(why, "is a link") != NULL, "the link is refused: %s", why);
	check(!pending(other), "and the other socket got no connection");
	fd = agent_sock_open(sb, why, sizeof why);
	check(fd < 0, "agent_sock_open refuses it too");

	/* Not a socket at all. */
	unlink(sb);
	close(open(sb, O_WRONLY | O_CREAT, 0600));
	check(agent_sock_connect(sb, 0, why, sizeof why) < 0 && strstr(why, "not a socket"),
	    "a regular file in its place is refused: %s", why);
	unlink(sb);

	/* A socket another uid owns (as root only: chown needs it). */
	if (geteuid() == 0) {
		close(agent);
		agent = listen_at(sb);
		check(chown(sb, 65534, 65534) == 0, "the socket now belongs to nobody");
		fd = agent_sock_connect(sb, 0, why, sizeof why);
		check(fd < 0 && strstr(why, "not the agent's socket") != NULL,
		    "a socket not owned by its directory's owner is refused: %s", why);
		check(!pending(agent), "and it got no connection");
	} else {
		check(1, "# SKIP a socket of another uid needs root");
	}
	check(agent_sock_connect("/nonexistent-dir/agent.sock", 0, why, sizeof why) < 0,
	    "a missing directory is an error: %s", why);

	close(agent);
	close(other);
	unlink(sb);
	unlink(decoy);
	rmdir(top);
	return tap_end();
}
