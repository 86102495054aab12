/* The network log of a sandbox: one JSON object a line in STATE/net/ID/net.log,
 * bounded (net.log.1 keeps the previous megabyte), its text form, the policy
 * file the proxy reads, and the watcher that hands what the proxies log to a
 * hook, which core-net.c makes core events for the console (see net.h). */
#include <math.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/net.h"
#include "core/paths.h"
#include "lib/jspec.h"
#include "lib/log.h"
#include "lib/util.h"

static int
id_ok(const char *id)
{
	size_t n = strlen(id);

	return n > 0 && n < 32 && id[0] != '.' &&
	    strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

char *
net_dir(const char *id, int mk, struct sbx_err *e)
{
	_cleanup_free_ char *state = NULL;
	char *d;

	if (!id_ok(id)) {
		sbx_error(e, SBX_EINVAL, NULL, "invalid sandbox id '%s'", id);
		return NULL;
	}
	if ((state = mk ? paths_ensure(PATHS_STATE, e) : paths_dir(PATHS_STATE, e)) == NULL)
		return NULL;
	d = xasprintf("%s/net/%s", state, id);
	if (mk) {
		_cleanup_free_ char *ask = xasprintf("%s/ask", d);
		if (mkdir_p(ask, 0700) < 0) {
			sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", ask);
			free(d);
			return NULL;
		}
	}
	return d;
}

static int
write_atomic(const char *path, const char *text, struct sbx_err *e)
{
	_cleanup_free_ char *tmp = xasprintf("%s.%d.tmp", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot write %s", tmp);
	if (write_all(fd, text, strlen(text)) < 0 || close(fd) < 0 || rename(tmp, path) < 0) {
		unlink(tmp);
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot write %s", path);
	}
	return 0;
}

int
net_policy_write(const char *id, const cJSON *net, struct sbx_err *e)
{
	_cleanup_free_ char *d = net_dir(id, 1, e), *path = NULL, *text = NULL;

	if (d == NULL)
		return -1;
	path = xasprintf("%s/policy.json", d);
	text = net ? cJSON_PrintUnformatted(net) : xstrdup("{}");
	return write_atomic(path, text, e);
}

cJSON *
net_counts(const char *id)
{
	struct sbx_err e;
	_cleanup_free_ char *d = net_dir(id, 0, &e), *p = d ? xasprintf("%s/counts.json", d) :
	    NULL, *t = p ? read_file(p, 4096, NULL) : NULL;

	return t ? cJSON_Parse(t) : NULL;
}

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;

void
net_log_append(const char *id, cJSON *o)
{
	struct sbx_err e;
	_cleanup_free_ char *d = net_dir(id, 1, &e), *line = NULL, *path = NULL;
	struct stat st;
	int fd;

	if (d == NULL) {
		cJSON_Delete(o);
		return;
	}
	if (cJSON_GetObjectItemCaseSensitive(o, "time_ms") == NULL)
		cJSON_AddNumberToObject(o, "time_ms", (double)wall_ms());
	line = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	path = xasprintf("%s/net.log", d);
	pthread_mutex_lock(&log_mu);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0) {
		(void)write_line(fd, line, strlen(line));
		if (fstat(fd, &st) == 0 && st.st_size > NET_LOG_MAX) {
			_cleanup_free_ char *old = xasprintf("%s.1", path);
			(void)rename(path, old);
		}
		close(fd);
	}
	pthread_mutex_unlock(&log_mu);
}

void
net_log_format(const cJSON *o, char *buf, size_t len)
{
	time_t t = (time_t)(jnum(o, "time_ms", NAN) / 1000);
	struct tm tm;
	char when[32], dest[300];
	const char *type = jstr(o, "type", "connection"), *host = jstr(o, "host", "?");
	double port = jnum(o, "port", NAN);

	localtime_r(&t, &tm);
	strftime(when, sizeof when, "%H:%M:%S", &tm);
	if (port > 0)
		snprintf(dest, sizeof dest, "%s:%d", host, (int)port);
	else
		snprintf(dest, sizeof dest, "%s", host);
	if (strcmp(type, "ask") == 0) {
		snprintf(buf, len, "%s  ask    %-36s req %s%s%s", when, dest, jstr(o, "req", "?"),
		    cJSON_GetObjectItemCaseSensitive(o, "reason") ? "  reason: " : "",
		    jstr(o, "reason", ""));
		return;
	}
	if (strcmp(type, "policy") == 0) {
		char *a = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(o, "allow"));
		char *d = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(o, "deny"));
		snprintf(buf, len, "%s  policy allow %s deny %s", when, a ? a : "[]", d ? d : "[]");
		free(a);
		free(d);
		return;
	}
	if (strcmp(type, "decided") == 0) {
		snprintf(buf, len, "%s  answer %-36s req %s: %s by %s", when, dest,
		    jstr(o, "req", "?"), jstr(o, "answer", "?"), jstr(o, "by", "?"));
		return;
	}
	snprintf(buf, len, "%s  %-6s %-36s %-15s %-5s %8.0f up %8.0f down %6.0f ms  %s%s%s",
	    when, jstr(o, "verdict", "?"), dest, jstr(o, "addr", "-"), jstr(o, "kind", "-"),
	    jnum(o, "up", NAN), jnum(o, "down", NAN), jnum(o, "ms", NAN), jstr(o, "rule", "-"),
	    cJSON_GetObjectItemCaseSensitive(o, "error") ? "  " : "", jstr(o, "error", ""));
}

/* --- the watcher: proxies' logs to events, through the watcher's hook ---- */

struct watched {
	char	 id[32];
	ino_t	 ino;
	off_t	 off;
};

struct net_watch {
	net_event_fn	 fn;
	void		*arg;
	pthread_t	 thread;
	volatile int	 stop;
	struct watched	*w;
	size_t		 nw;
};

static pthread_mutex_t watch_mu = PTHREAD_MUTEX_INITIALIZER;
/* One watcher per arg (a core); a process has one or two cores at most. */
#define WATCH_MAX 4
static struct net_watch *watches[WATCH_MAX];

static void
emit_line(struct net_watch *nw, const char *id, const char *line)
{
	static const char *const types[][2] = { { "connection", "net.connection" },
		{ "ask", "net.ask" }, { "decided", "net.decided" }, { "policy", "net.policy" } };
	cJSON *o = cJSON_Parse(line);
	const char *type, *ev = NULL;

	if (o == NULL)
		return;
	type = jstr(o, "type", "connection");
	for (size_t i = 0; i < ARRAY_SIZE(types); i++)
		if (strcmp(type, types[i][0]) == 0)
			ev = types[i][1];
	cJSON_DeleteItemFromObjectCaseSensitive(o, "type");
	if (ev == NULL) {
		cJSON_Delete(o);
		return;
	}
	nw->fn(nw->arg, ev, id, o);
}

/* New lines of id's log to events.  What was logged before the watcher's first
 * look is history, not news: the first pass starts at the end of each log;
 * a log seen later (a new sandbox) is read from its start. */
static void
watch_one(struct net_watch *nw, const char *dir, const char *id, int first_pass)
{
	_cleanup_free_ char *path = xasprintf("%s/%s/net.log", dir, id);
	struct watched *w = NULL;
	struct stat st;
	_cleanup_close_ int fd = -1;
	char buf[16384];
	ssize_t n;
	off_t at;
	int have;

	for (size_t i = 0; i < nw->nw; i++)
		if (strcmp(nw->w[i].id, id) == 0)
			w = &nw->w[i];
	have = (fd = open_regular_nofollow(path)) >= 0 && fstat(fd, &st) == 0;
	if (w == NULL) {
		nw->w = xrealloc(nw->w, (nw->nw + 1) * sizeof *nw->w);
		w = &nw->w[nw->nw++];
		snprintf(w->id, sizeof w->id, "%s", id);
		w->ino = have ? st.st_ino : 0;
		w->off = have && first_pass ? st.st_size : 0;
	}
	if (!have)
		return;
	if (w->ino != st.st_ino || st.st_size < w->off) {
		/* Rotated (or first seen): the new file from its start. */
		w->ino = st.st_ino;
		w->off = 0;
	}
	at = w->off;
	while (at < st.st_size && (n = pread(fd, buf, sizeof buf - 1, at)) > 0) {
		char *p = buf, *nl;
		buf[n] = '\0';
		while ((nl = memchr(p, '\n', (size_t)(buf + n - p))) != NULL) {
			*nl = '\0';
			emit_line(nw, id, p);
			p = nl + 1;
		}
		if (p == buf)
			break;	/* a partial line: wait for the rest */
		at += p - buf;
	}
	w->off = at;
}

static void *
watch_main(void *arg)
{
	struct net_watch *nw = arg;
	struct sbx_err e;
	_cleanup_free_ char *state = paths_dir(PATHS_STATE, &e);
	_cleanup_free_ char *dir = state ? xasprintf("%s/net", state) : NULL;

	for (int first = 1; !nw->stop && dir != NULL; first = 0) {
		DIR *d = opendir(dir);
		struct dirent *de;

		while (d != NULL && (de = readdir(d)) != NULL)
			if (de->d_name[0] != '.' && strlen(de->d_name) < 32)
				watch_one(nw, dir, de->d_name, first);
		if (d != NULL)
			closedir(d);
		for (int i = 0; i < 4 && !nw->stop; i++)
			usleep(50 * 1000);
	}
	return NULL;
}

void
net_watch(net_event_fn fn, void *arg)
{
	struct net_watch *nw;
	int slot = -1;

	pthread_mutex_lock(&watch_mu);
	for (int i = 0; i < WATCH_MAX; i++) {
		if (watches[i] != NULL && watches[i]->arg == arg) {
			pthread_mutex_unlock(&watch_mu);
			return;
		}
		if (watches[i] == NULL && slot < 0)
			slot = i;
	}
	if (slot >= 0) {
		nw = xcalloc(1, sizeof *nw);
		nw->fn = fn;
		nw->arg = arg;
		if (pthread_create(&nw->thread, NULL, watch_main, nw) != 0) {
			log_warnx("cannot start the network log watcher");
			free(nw);
		} else {
			watches[slot] = nw;
		}
	}
	pthread_mutex_unlock(&watch_mu);
}

void
net_watch_stop(void *arg)
{
	struct net_watch *nw = NULL;

	pthread_mutex_lock(&watch_mu);
	for (int i = 0; i < WATCH_MAX; i++)
		if (watches[i] != NULL && watches[i]->arg == arg) {
			nw = watches[i];
			watches[i] = NULL;
		}
	pthread_mutex_unlock(&watch_mu);
	if (nw == NULL)
		return;
	nw->stop = 1;
	pthread_join(nw->thread, NULL);
	free(nw->w);
	free(nw);
}
