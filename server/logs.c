/* The follower behind sbxtop/logs (logs.h).  A log is a file on this host
 * (core_log_path), written by the sandbox's agent or init, so following it is
 * reading what was appended: a thread per follower looks at the file every
 * 100 ms (an fstat and a stat: nothing to speak of) rather than relying on
 * inotify, which would miss a log that does not exist yet without watching
 * its directory too.  Once a second it asks for the log's path again, which
 * brings the local copy of a remote sandbox's log up to date.  A file that shrinks or is replaced starts a new replay. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/utf8.h"
#include "lib/util.h"
#include "mcp/jsonrpc.h"
#include "server/logs.h"

#define LOGS_TAIL_MAX	(1 << 20)	/* the replay reads at most this much */
#define LOGS_CHUNK	65536		/* data per notification */
#define LOGS_POLL_MS	100
#define LOGS_REFRESH_MS	1000

struct logs {
	struct core	*core;
	char		 id[32];
	char		 which[16];
	char		*path;
	int		 lines;
	logs_write_fn	 fn;
	void		*arg;
	int		 stop[2];	/* pipe: a byte stops the thread */
	int		 started;
	pthread_t	 th;

	/* The thread's own. */
	int64_t		 next_refresh;
	int		 fd;
	dev_t		 dev;
	ino_t		 ino;
	off_t		 off;
};

/* JSON strings are UTF-8 without NUL: an invalid byte or a NUL becomes '?'. */
static char *
text_of(const char *p, size_t n)
{
	char *s = xmalloc(n + 1);

	memcpy(s, p, n);
	s[n] = '\0';
	if (utf8_valid(s, n) && memchr(s, '\0', n) == NULL)
		return s;
	for (size_t i = 0; i < n;) {
		size_t k = 1;
		if ((unsigned char)s[i] >= 0x80) {
			for (k = 2; k <= 4 && !(i + k <= n && utf8_valid(s + i, k)); k++)
				;
			if (k > 4) {
				s[i] = '?';
				k = 1;
			}
		} else if (s[i] == '\0') {
			s[i] = '?';
		}
		i += k;
	}
	return s;
}

/* One sbxtop/log notification; reset starts the log over (exists: whether the
 * file is there). */
static void
send_data(struct logs *l, const char *data, size_t len, int reset, int exists)
{
	cJSON *p = cJSON_CreateObject();
	_cleanup_free_ char *s = text_of(data, len), *t = NULL;

	cJSON_AddStringToObject(p, "sandbox", l->id);
	cJSON_AddStringToObject(p, "log", l->which);
	if (reset) {
		cJSON_AddBoolToObject(p, "reset", 1);
		cJSON_AddBoolToObject(p, "exists", exists);
	}
	cJSON_AddStringToObject(p, "data", s);
	t = jsonrpc_notification("sbxtop/log", p);
	l->fn(l->arg, t, strlen(t));
}

/* Send buf[0, n) in chunks cut on character boundaries; returns how many
 * bytes went (an incomplete character at the end waits for the rest). */
static size_t
send_text(struct logs *l, const char *buf, size_t n, int reset)
{
	size_t done = 0;

	n = utf8_complete_prefix(buf, n);
	if (n == 0 && !reset)
		return 0;
	do {
		size_t k = n - done > LOGS_CHUNK ? LOGS_CHUNK : n - done;
		if (done + k < n)
			k = utf8_complete_prefix(buf + done, k) ?: k;
		send_data(l, buf + done, k, reset, 1);
		reset = 0;
		done += k;
	} while (done < n);
	return n;
}

/* The start of the last `lines` lines of buf[0, n); from is where buf starts
 * in the file (a partial first line is left out). */
static size_t
tail_start(const char *buf, size_t n, int lines, off_t from)
{
	size_t i = n;
	int count = 0;

	if (lines == 0)
		return n;
	if (i > 0 && buf[i - 1] == '\n')
		i--;
	for (; i > 0; i--)
		if (buf[i - 1] == '\n' && ++count == lines)
			return i;
	if (from > 0) {
		const char *nl = memchr(buf, '\n', n);
		return nl ? (size_t)(nl - buf) + 1 : n;
	}
	return 0;
}

/* (Re)open the log and replay its tail; 0 when open. */
static int
replay(struct logs *l)
{
	struct stat st;
	_cleanup_free_ char *buf = NULL;
	off_t from = 0;
	size_t n = 0, i;

	if (l->fd >= 0)
		close(l->fd);
	/* Never through a symlink the sandbox put there (open_regular_nofollow). */
	l->fd = open_regular_nofollow(l->path);
	if (l->fd < 0 || fstat(l->fd, &st) < 0) {
		if (l->fd >= 0)
			close(l->fd);
		l->fd = -1;
		return -1;
	}
	l->dev = st.st_dev;
	l->ino = st.st_ino;
	if ((buf = tail_read_fd(l->fd, LOGS_TAIL_MAX, &from, &n)) == NULL)
		n = 0;
	i = tail_start(buf ? buf : "", n, l->lines, from);
	l->off = from + (off_t)i + (off_t)send_text(l, buf ? buf + i : "", n - i, 1);
	return 0;
}

static void
follow(struct logs *l)
{
	char buf[LOGS_CHUNK];
	struct stat st, fst;
	ssize_t n;

	/* A remote sandbox's log is a local copy that asking for its path brings
	 * up to date (core_log_path): once a second. */
	if (now_ms() >= l->next_refresh) {
		struct sbx_err e;
		free(core_log_path(l->core, l->id, l->which, &e));
		l->next_refresh = now_ms() + LOGS_REFRESH_MS;
	}
	if (l->fd < 0) {
		if (replay(l) < 0)
			return;
	} else if (lstat(l->path, &st) == 0 && (st.st_dev != l->dev || st.st_ino != l->ino)) {
		/* Replaced (lstat: by a link too): the new file's tail, or the
		 * news that there is no log any more. */
		if (replay(l) < 0)
			send_data(l, "", 0, 1, 0);
		return;
	} else if (fstat(l->fd, &fst) == 0 && fst.st_size < l->off) {
		/* Truncated: start over. */
		if (replay(l) < 0)
			send_data(l, "", 0, 1, 0);
		return;
	}
	while ((n = pread(l->fd, buf, sizeof buf, l->off)) > 0) {
		size_t k = send_text(l, buf, (size_t)n, 0);
		if (k == 0)
			break;		/* only a character's start: wait for the rest */
		l->off += (off_t)k;
	}
}

static void *
follower(void *arg)
{
	struct logs *l = arg;

	if (replay(l) < 0)
		send_data(l, "", 0, 1, 0);
	for (;;) {
		struct pollfd p = { l->stop[0], POLLIN, 0 };
		if (poll(&p, 1, LOGS_POLL_MS) != 0 && (p.revents || errno != EINTR))
			break;
		follow(l);
	}
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
	return NULL;
}

struct logs *
logs_open(struct core *c, const char *key, const char *which, int lines, logs_write_fn fn,
    void *arg, struct sbx_err *e)
{
	struct sandbox *s = core_get(c, key, e);
	struct logs *l;
	char *path;

	if (s == NULL)
		return NULL;
	if ((path = core_log_path(c, s->id, which, e)) == NULL) {
		sandbox_free(s);
		return NULL;
	}
	l = xcalloc(1, sizeof *l);
	l->core = c;
	l->next_refresh = now_ms() + LOGS_REFRESH_MS;
	snprintf(l->id, sizeof l->id, "%s", s->id);
	snprintf(l->which, sizeof l->which, "%s", which);
	sandbox_free(s);
	l->path = path;
	l->lines = lines;
	l->fn = fn;
	l->arg = arg;
	l->fd = -1;
	if (pipe2(l->stop, O_CLOEXEC) < 0) {
		sbx_error_errno(e, SBX_EIO, "retry", "pipe");
		free(l->path);
		free(l);
		return NULL;
	}
	return l;
}

int
logs_start(struct logs *l, struct sbx_err *e)
{
	if (pthread_create(&l->th, NULL, follower, l) != 0) {
		logs_stop(l);
		return sbx_error(e, SBX_EINTERNAL, "retry", "cannot start a thread");
	}
	l->started = 1;
	return 0;
}

void
logs_stop(struct logs *l)
{
	if (l == NULL)
		return;
	if (l->started) {
		(void)!write(l->stop[1], "q", 1);
		pthread_join(l->th, NULL);
	}
	close(l->stop[0]);
	close(l->stop[1]);
	free(l->path);
	free(l);
}
