/* This process's terminal relayed to a sandbox's PTY frames (pty-term.h). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>
#include <cjson/cJSON.h>

#include "core/client/pty-term.h"
#include "lib/sig.h"
#include "lib/util.h"

#define FRAME_MAX	(1u << 20)	/* the agent's limit on a frame */

enum { F_DATA = 0, F_RESIZE = 1, F_EXIT = 3 };

int
core_pty_send(int fd, int type, const void *data, uint32_t len)
{
	unsigned char hdr[5] = { (unsigned char)type, (unsigned char)(len >> 24),
		(unsigned char)(len >> 16), (unsigned char)(len >> 8), (unsigned char)len };

	if (write_all(fd, hdr, sizeof hdr) < 0)
		return -1;
	return len ? write_all(fd, data, len) : 0;
}

void
pty_term_size(int *cols, int *rows)
{
	struct winsize ws;

	*cols = 80;
	*rows = 24;
	if (ioctl(0, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
		*cols = ws.ws_col;
		*rows = ws.ws_row;
	}
}

static volatile sig_atomic_t resized;

static void
on_winch(int sig)
{
	resized = 1;
}

/* The exit frame's {"exit_code": N | null, "signal": "NAME" | null} as a shell
 * status. */
static int
exit_status(const unsigned char *p, uint32_t len)
{
	cJSON *o = cJSON_ParseWithLength((const char *)p, len);
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(o, "exit_code");
	const char *sig = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "signal"));
	int st = -1;

	if (cJSON_IsNumber(code))
		st = code->valueint & 0xff;
	if (st < 0 && sig != NULL && sig_number(sig) > 0)
		st = 128 + sig_number(sig);
	cJSON_Delete(o);
	return st < 0 ? 128 + SIGKILL : st;
}

int
pty_term_relay(int fd, int input)
{
	struct termios saved, raw;
	struct sigaction sa, old;
	_cleanup_free_ unsigned char *fr = xmalloc(FRAME_MAX + 5);
	size_t have = 0;
	int cols, rows, status = -1, done = 0, have_tio = 0;
	char buf[8192];

	pty_term_size(&cols, &rows);
	if (input && isatty(0) && tcgetattr(0, &saved) == 0) {
		have_tio = 1;
		raw = saved;
		cfmakeraw(&raw);
		tcsetattr(0, TCSANOW, &raw);
	}
	/* No SA_RESTART: a resize wakes the poll below. */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_winch;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGWINCH, &sa, &old);
	resized = 0;
	while (!done) {
		struct pollfd p[2] = { { fd, POLLIN, 0 }, { input ? 0 : -1, POLLIN, 0 } };
		int c2, r2;
		ssize_t n;

		if (poll(p, 2, 1000) < 0 && errno != EINTR)
			break;
		/* A size changed, whoever caught SIGWINCH (a console's curses too). */
		resized = 0;
		pty_term_size(&c2, &r2);
		if (c2 != cols || r2 != rows) {
			char js[64];
			cols = c2;
			rows = r2;
			snprintf(js, sizeof js, "{\"cols\":%d,\"rows\":%d}", cols, rows);
			if (core_pty_send(fd, F_RESIZE, js, (uint32_t)strlen(js)) < 0)
				break;
		}
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			n = read(0, buf, sizeof buf);
			if (n < 0 && errno == EINTR)
				continue;
			/* The end of a piped input: the shell reads on, the relay
			 * goes on until it exits. */
			if (n <= 0)
				input = 0;
			else if (core_pty_send(fd, F_DATA, buf, (uint32_t)n) < 0)
				break;
		}
		if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = read(fd, fr + have, FRAME_MAX + 5 - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
		while (have >= 5) {
			uint32_t len = (uint32_t)fr[1] << 24 | (uint32_t)fr[2] << 16 |
			    (uint32_t)fr[3] << 8 | fr[4];
			if (len > FRAME_MAX) {
				done = 1;
				break;
			}
			if (have < 5 + (size_t)len)
				break;
			if (fr[0] == F_DATA && write_all(1, fr + 5, len) < 0)
				done = 1;
			if (fr[0] == F_EXIT) {
				status = exit_status(fr + 5, len);
				done = 1;
			}
			memmove(fr, fr + 5 + len, have - 5 - len);
			have -= 5 + len;
		}
	}
	sigaction(SIGWINCH, &old, NULL);
	if (have_tio)
		tcsetattr(0, TCSANOW, &saved);
	return status;
}
