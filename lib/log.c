/* Logging: one line per message, control characters escaped, never to stdout. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "lib/log.h"
#include "lib/utf8.h"
#include "lib/util.h"

static const char *log_prog = "sbxtop";
static int log_fd = 2;
static enum log_level log_level = LOG_INFO;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread log_hook_fn hook_fn;
static __thread void *hook_arg;
static __thread enum log_level hook_level;

int
log_open(const char *prog, const char *path)
{
	log_prog = prog;
	if (path == NULL)
		return 0;
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	if (log_fd > 2)
		close(log_fd);
	log_fd = fd;
	return 0;
}

void log_set_level(enum log_level level) { log_level = level; }

void
log_set_thread_hook(log_hook_fn fn, enum log_level level, void *arg)
{
	hook_fn = fn;
	hook_level = level;
	hook_arg = arg;
}
enum log_level log_get_level(void) { return log_level; }

void
log_msg(enum log_level level, int with_errno, const char *fmt, ...)
{
	static const char *names[] = { "error", "warn", "info", "debug" };
	int saved = errno;
	char msg[2048], line[4096 + 64];
	size_t n;
	va_list ap;

	int to_hook = hook_fn != NULL && level <= hook_level;

	if (level > log_level && !to_hook)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (to_hook) {
		char full[2048 + 256];
		log_hook_fn fn = hook_fn;
		snprintf(full, sizeof full, "%s%s%s", msg, with_errno ? ": " : "",
		    with_errno ? strerror(saved) : "");
		/* Not from inside the hook itself. */
		hook_fn = NULL;
		fn(level, full, hook_arg);
		hook_fn = fn;
		if (level > log_level) {
			errno = saved;
			return;
		}
	}

	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = (size_t)snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %s: ",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
	    tm.tm_sec, ts.tv_nsec / 1000000, log_prog, names[level]);
	/* Escape control characters, C1 ones included: a log line is one line, and
	 * nothing in it steers the terminal that shows it, whatever the input. */
	n += utf8_escape_controls(msg, strlen(msg), line + n, sizeof line - 8 - n, 0);
	if (with_errno)
		n += (size_t)snprintf(line + n, sizeof line - n, ": %s", strerror(saved));
	if (n > sizeof line - 2)
		n = sizeof line - 2;
	line[n++] = '\n';
	pthread_mutex_lock(&log_lock);
	(void)write_all(log_fd, line, n);
	pthread_mutex_unlock(&log_lock);
	errno = saved;
}
