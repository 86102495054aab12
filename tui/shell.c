/* The console's `s`: a login shell in the selected sandbox on the whole
 * terminal.  The console has left curses mode; here the terminal is put in raw
 * mode and relayed to the agent's PTY frames until the shell exits, then put
 * back as it was.  Window size changes are passed on. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "core/core-watch.h"
#include "lib/util.h"
#include "tui/source.h"
#include "tui/tui.h"

#define FRAME_MAX (1u << 20)

static void
winsize(int *cols, int *rows)
{
	struct winsize ws;

	*cols = 80;
	*rows = 24;
	if (ioctl(0, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
		*cols = ws.ws_col;
		*rows = ws.ws_row;
	}
}

int
shell_run(struct source *src, const char *id, struct sbx_err *e)
{
	struct termios saved, raw;
	_cleanup_close_ int fd = -1;
	_cleanup_free_ unsigned char *fr = xmalloc(FRAME_MAX + 5);
	size_t have = 0;
	int cols, rows, done = 0, have_tio;
	char buf[8192];

	winsize(&cols, &rows);
	if ((fd = source_pty_open(src, id, cols, rows, e)) < 0)
		return -1;
	have_tio = tcgetattr(0, &saved) == 0;
	if (have_tio) {
		raw = saved;
		cfmakeraw(&raw);
		tcsetattr(0, TCSANOW, &raw);
	}
	while (!done) {
		struct pollfd p[2] = { { 0, POLLIN, 0 }, { fd, POLLIN, 0 } };
		int c2, r2;
		ssize_t n;

		if (poll(p, 2, 500) < 0 && errno != EINTR)
			break;
		/* A resize shows as a changed size, whoever caught SIGWINCH. */
		winsize(&c2, &r2);
		if (c2 != cols || r2 != rows) {
			char js[64];
			cols = c2;
			rows = r2;
			snprintf(js, sizeof js, "{\"cols\":%d,\"rows\":%d}", cols, rows);
			if (core_pty_send(fd, 1, js, (uint32_t)strlen(js)) < 0)
				break;
		}
		if (p[0].revents & (POLLIN | POLLHUP)) {
			n = read(0, buf, sizeof buf);
			if (n <= 0 || core_pty_send(fd, 0, buf, (uint32_t)n) < 0)
				break;
		}
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			n = read(fd, fr + have, FRAME_MAX + 5 - have);
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
				if (fr[0] == 0 && write_all(1, fr + 5, len) < 0)
					done = 1;
				if (fr[0] == 3)
					done = 1;
				memmove(fr, fr + 5 + len, have - 5 - len);
				have -= 5 + len;
			}
		}
	}
	if (have_tio)
		tcsetattr(0, TCSANOW, &saved);
	return 0;
}
