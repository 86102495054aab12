/* POST /v1/exec and the exec journal (/v1/execs...).
 *
 * Shape of an exec: the request thread validates, opens the cwd and the pipes,
 * forks the child (exec-spawn.c; under children_lock, watched before unlocking),
 * then hands the pipes to a pump thread (exec-pump.c).  The pump is the only
 * reader of the child's output: it cuts it into chunks on UTF-8 character
 * boundaries, keeps the buffered result (capped per stream), appends numbered
 * NDJSON lines to the exec's bounded chunk ring, writes the background log, feeds
 * stdin, and runs the timeout (TERM to the group, KILL after a grace).  Whoever
 * answers a client (the buffered handler, a streaming follower) only waits on the
 * exec's condition variable.  What the three files share is exec-int.h.
 *
 * The leader's exit is seen by the main loop (child_watch); the pump then drains
 * what is left in the pipes for a moment and declares the exec done, so the exit
 * event always comes after the output.  Grandchildren that still hold the pipes
 * (a server started with `&`) keep being drained, so they never die of SIGPIPE.
 *
 * Locking: ex_mu guards the journal and every exec's shared fields.  Lock order is
 * children_lock() before ex_mu (the exit callback runs with children_lock held);
 * signals to a process group are sent with both held while the leader is known
 * not to be reaped, so a pid is never signalled after it could be reused. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/events.h"
#include "agent/exec-int.h"
#include "agent/exec.h"
#include "agent/http.h"
#include "agent/path.h"
#include "lib/b64.h"
#include "lib/buf.h"
#include "lib/jspec.h"
#include "lib/log.h"
#include "lib/utf8.h"
#include "lib/sig.h"
#include "lib/util.h"

/* The body carries stdin: 16 MiB of text (what `sbxtop exec` passes on) with room
 * for JSON's escapes. */
#define EXEC_BODY_MAX	(96u << 20)
#define COMMAND_SHOWN	4096		/* bytes of the command kept in the journal */
#define WAIT_TICK_MS	200		/* how often waiters look for a vanished client */

pthread_mutex_t ex_mu = PTHREAD_MUTEX_INITIALIZER;
static struct exec **journal;
static size_t njournal, capjournal;
static uint64_t next_id = 1;

cJSON *
signal_json(int sig)
{
	char num[16];

	if (sig <= 0)
		return cJSON_CreateNull();
	if (sig_name(sig) != NULL)
		return cJSON_CreateString(sig_name(sig));
	snprintf(num, sizeof num, "%d", sig);
	return cJSON_CreateString(num);
}

/* --- Exec objects ------------------------------------------------------------- */

static struct exec *
exec_new(void)
{
	struct exec *e = xcalloc(1, sizeof *e);

	e->refs = 1;
	e->wake_fd = -1;
	e->exit_code = e->signo = -1;
	e->next_seq = 1;
	pthread_cond_init(&e->cv, NULL);
	/* Capped by the pump at out_max, which the request chose. */
	buf_init(&e->out[0], SIZE_MAX);
	buf_init(&e->out[1], SIZE_MAX);
	return e;
}

/* --- Kept output ---------------------------------------------------------------- */

static uint64_t keep_total;		/* bytes in every kept file; under ex_mu */
static uint64_t keep_cap = EXEC_KEEP_TOTAL;

void
keep_set_cap(uint64_t fs_bytes)
{
	pthread_mutex_lock(&ex_mu);
	if (fs_bytes > 0 && fs_bytes / 8 < keep_cap)
		keep_cap = fs_bytes / 8;
	pthread_mutex_unlock(&ex_mu);
}

/* Remove e's kept files (ex_mu held). */
static void
keep_remove_locked(struct exec *e)
{
	for (int s = 0; s < 2; s++) {
		_cleanup_free_ char *name = NULL;
		_cleanup_close_ int dfd = -1;

		if (e->keep_path[s] == NULL)
			continue;
		if ((dfd = path_open_parent(e->keep_path[s], &name)) < 0 ||
		    (unlinkat(dfd, name, 0) < 0 && errno != ENOENT))
			log_warn("exec %s: cannot remove %s", e->id, e->keep_path[s]);
		keep_total -= e->kept[s];
		free(e->keep_path[s]);
		e->keep_path[s] = NULL;
	}
}

size_t
keep_reserve(struct exec *e, int s, size_t want)
{
	uint64_t room;

	/* Room first: the oldest exited exec's files go (the journal is oldest
	 * first), never a running one's. */
	for (size_t i = 0; i < njournal && keep_total + want > keep_cap; i++)
		if (journal[i] != e && journal[i]->done)
			keep_remove_locked(journal[i]);
	room = e->kept[s] < EXEC_KEEP_STREAM ? EXEC_KEEP_STREAM - e->kept[s] : 0;
	if (keep_total >= keep_cap)
		room = 0;
	else if (keep_cap - keep_total < room)
		room = keep_cap - keep_total;
	if (want > room)
		want = (size_t)room;
	e->kept[s] += want;
	keep_total += want;
	return want;
}

void
keep_unreserve(struct exec *e, int s, size_t n)
{
	pthread_mutex_lock(&ex_mu);
	e->kept[s] -= n;
	keep_total -= n;
	pthread_mutex_unlock(&ex_mu);
}

void
keep_json_locked(const struct exec *e, cJSON *o)
{
	static const char *const names[2][3] = {
		{ "stdout_bytes", "stdout_path", "stdout_kept" },
		{ "stderr_bytes", "stderr_path", "stderr_kept" },
	};

	for (int s = 0; s < 2; s++)
		cJSON_AddNumberToObject(o, names[s][0], (double)e->bytes[s]);
	for (int s = 0; s < 2; s++) {
		if (e->keep_path[s] == NULL)
			continue;
		cJSON_AddStringToObject(o, names[s][1], e->keep_path[s]);
		cJSON_AddNumberToObject(o, names[s][2], (double)e->kept[s]);
	}
}

static void
exec_free(struct exec *e)
{
	pthread_mutex_lock(&ex_mu);
	keep_remove_locked(e);
	pthread_mutex_unlock(&ex_mu);
	for (size_t i = 0; i < e->ccount; i++)
		free(e->chunks[(e->chead + i) % e->ccap].line);
	free(e->chunks);
	buf_free(&e->out[0]);
	buf_free(&e->out[1]);
	free(e->command);
	free(e->log_path);
	free(e->exit_line);
	if (e->wake_fd >= 0)
		close(e->wake_fd);
	pthread_cond_destroy(&e->cv);
	free(e);
}

void
exec_ref_locked(struct exec *e)
{
	e->refs++;
}

/* Drop a reference with ex_mu held; 1 when the caller must exec_free() it after
 * unlocking. */
static int
exec_unref_locked(struct exec *e)
{
	return --e->refs == 0;
}

void
exec_unref(struct exec *e)
{
	int last;

	pthread_mutex_lock(&ex_mu);
	last = exec_unref_locked(e);
	pthread_mutex_unlock(&ex_mu);
	if (last)
		exec_free(e);
}

static void
exec_wake(struct exec *e)
{
	uint64_t one = 1;

	if (write(e->wake_fd, &one, sizeof one) < 0 && errno != EAGAIN)
		log_warn("exec %s: cannot wake its pump", e->id);
}

int
exec_kill(struct exec *e, int sig)
{
	int rc = -1;

	children_lock();
	pthread_mutex_lock(&ex_mu);
	if (!e->leader_exited) {
		if (kill(-e->pid, sig) < 0 && errno != ESRCH)
			log_warn("exec %s: kill(-%d, %d)", e->id, (int)e->pid, sig);
		rc = 0;
	}
	pthread_mutex_unlock(&ex_mu);
	children_unlock();
	return rc;
}

/* Ask the pump to stop the exec: TERM to the group, KILL after the grace. */
static void
exec_terminate(struct exec *e, enum term_reason why)
{
	pthread_mutex_lock(&ex_mu);
	if (e->term == TERM_NONE && !e->leader_exited)
		e->term = why;
	pthread_mutex_unlock(&ex_mu);
	exec_wake(e);
}

/* Record and wake. */
void
exec_reaped(pid_t pid, int status, void *arg)
{
	struct exec *e = arg;
	int last;

	pthread_mutex_lock(&ex_mu);
	e->leader_exited = 1;
	e->status = status;
	e->exit_mono = now_ms();
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&ex_mu);
	if (e->wake_fd >= 0)
		exec_wake(e);
	pthread_mutex_lock(&ex_mu);
	last = exec_unref_locked(e);
	pthread_mutex_unlock(&ex_mu);
	if (last)
		exec_free(e);
}

static const char *
exec_state(const struct exec *e)
{
	return e->done ? "exited" : "running";
}

const char *
exec_reason(const struct exec *e)
{
	if (e->oom)
		return "oom";
	if (e->timed_out)
		return "timeout";
	return e->signo > 0 ? "signal" : "exit";
}

/* The journal view of an exec (ex_mu held). */
static cJSON *
exec_json_locked(const struct exec *e)
{
	cJSON *o = cJSON_CreateObject();
	int64_t dur = e->done ? e->duration_ms :
	    (e->leader_exited ? e->exit_mono : now_ms()) - e->started_mono;

	cJSON_AddStringToObject(o, "id", e->id);
	cJSON_AddStringToObject(o, "command", e->command);
	cJSON_AddStringToObject(o, "origin", e->origin);
	cJSON_AddNumberToObject(o, "pid", e->pid);
	cJSON_AddStringToObject(o, "state", exec_state(e));
	if (e->done && e->exit_code >= 0)
		cJSON_AddNumberToObject(o, "exit_code", e->exit_code);
	else
		cJSON_AddNullToObject(o, "exit_code");
	cJSON_AddItemToObject(o, "signal", signal_json(e->done ? e->signo : -1));
	cJSON_AddNumberToObject(o, "started_ms", (double)e->started_wall);
	cJSON_AddNumberToObject(o, "duration_ms", (double)dur);
	cJSON_AddBoolToObject(o, "background", e->mode == MODE_BACKGROUND);
	cJSON_AddBoolToObject(o, "as_root", e->as_root);
	cJSON_AddBoolToObject(o, "timed_out", e->timed_out);
	cJSON_AddBoolToObject(o, "truncated", e->truncated);
	if (e->done)
		cJSON_AddStringToObject(o, "reason", exec_reason(e));
	if (e->log_path != NULL)
		cJSON_AddStringToObject(o, "log_path", e->log_path);
	if (e->mode != MODE_BACKGROUND)
		keep_json_locked(e, o);
	return o;
}

/* Add an exec; then drop the oldest exited ones beyond the bound. */
static void
journal_add(struct exec *e)
{
	pthread_mutex_lock(&ex_mu);
	if (njournal == capjournal) {
		capjournal = capjournal ? capjournal * 2 : EXEC_JOURNAL_MAX + 16;
		journal = xrealloc(journal, capjournal * sizeof *journal);
	}
	exec_ref_locked(e);
	journal[njournal++] = e;
	pthread_mutex_unlock(&ex_mu);
}

void
journal_trim(void)
{
	struct exec *gone[8];
	size_t ngone = 0;

	pthread_mutex_lock(&ex_mu);
	for (size_t i = 0; i < njournal && njournal > EXEC_JOURNAL_MAX && ngone < ARRAY_SIZE(gone);) {
		if (!journal[i]->done) {
			i++;
			continue;
		}
		if (exec_unref_locked(journal[i]))
			gone[ngone++] = journal[i];
		memmove(journal + i, journal + i + 1, (njournal - i - 1) * sizeof *journal);
		njournal--;
	}
	pthread_mutex_unlock(&ex_mu);
	for (size_t i = 0; i < ngone; i++)
		exec_free(gone[i]);
}

/* The exec with this id, referenced, or NULL. */
static struct exec *
journal_find(const char *id)
{
	struct exec *e = NULL;

	pthread_mutex_lock(&ex_mu);
	for (size_t i = 0; i < njournal; i++) {
		if (strcmp(journal[i]->id, id) == 0) {
			e = journal[i];
			exec_ref_locked(e);
			break;
		}
	}
	pthread_mutex_unlock(&ex_mu);
	return e;
}

/* Also the groups of exited execs whose pipes are still held: what is left there
 * (a server started with `&`) is ours to stop too. */
void
exec_signal_all(int sig)
{
	children_lock();
	pthread_mutex_lock(&ex_mu);
	for (size_t i = 0; i < njournal; i++)
		if (!journal[i]->leader_exited || journal[i]->draining)
			kill(-journal[i]->pid, sig);
	pthread_mutex_unlock(&ex_mu);
	children_unlock();
}

void
exec_keep_clear(void)
{
	pthread_mutex_lock(&ex_mu);
	for (size_t i = 0; i < njournal; i++)
		keep_remove_locked(journal[i]);
	pthread_mutex_unlock(&ex_mu);
}

int
exec_count_running(int foreground_only)
{
	int n = 0;

	pthread_mutex_lock(&ex_mu);
	for (size_t i = 0; i < njournal; i++)
		if (!journal[i]->done &&
		    !(foreground_only && journal[i]->mode == MODE_BACKGROUND))
			n++;
	pthread_mutex_unlock(&ex_mu);
	return n;
}

/* --- JSON helpers ---------------------------------------------------------------- */

void
json_quote(struct buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t run = 0;

	buf_append(b, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[7];
		size_t elen = 2;

		/* Skip eight plain bytes at a time (no control character, quote or
		 * backslash: the usual SWAR zero-byte tests). */
		while (i + 8 <= n) {
			uint64_t w, ctl, q, bs;
			memcpy(&w, s + i, 8);
			ctl = (w - 0x2020202020202020ULL) & ~w;
			q = ((w ^ 0x2222222222222222ULL) - 0x0101010101010101ULL) &
			    ~(w ^ 0x2222222222222222ULL);
			bs = ((w ^ 0x5c5c5c5c5c5c5c5cULL) - 0x0101010101010101ULL) &
			    ~(w ^ 0x5c5c5c5c5c5c5c5cULL);
			if ((ctl | q | bs) & 0x8080808080808080ULL)
				break;
			i += 8;
		}
		if (i >= n)
			break;
		c = (unsigned char)s[i];
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		buf_append(b, s + run, i - run);
		run = i + 1;
		esc[0] = '\\';
		switch (c) {
		case '"':  esc[1] = '"'; break;
		case '\\': esc[1] = '\\'; break;
		case '\n': esc[1] = 'n'; break;
		case '\r': esc[1] = 'r'; break;
		case '\t': esc[1] = 't'; break;
		default:
			memcpy(esc + 1, "u00", 3);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			elen = 6;
		}
		buf_append(b, esc, elen);
	}
	buf_append(b, s + run, n - run);
	buf_append(b, "\"", 1);
}

/* Output bytes as a JSON value: text when valid UTF-8, else base64 (encoding is
 * set accordingly).  Returns a raw cJSON item. */
static cJSON *
output_json(const char *s, size_t n, const char **encoding)
{
	struct buf b;
	cJSON *item;

	buf_init(&b, SIZE_MAX);
	if (utf8_valid(s, n)) {
		json_quote(&b, s, n);
		*encoding = "utf-8";
	} else {
		_cleanup_free_ char *enc = b64_encode(s, n);
		buf_printf(&b, "\"%s\"", enc);
		*encoding = "base64";
	}
	item = cJSON_CreateRaw(b.data);
	buf_free(&b);
	if (item == NULL)
		fatal("out of memory");
	return item;
}

char *
json_line(cJSON *o)
{
	char *s = cJSON_PrintUnformatted(o);
	size_t n;

	cJSON_Delete(o);
	if (s == NULL)
		fatal("out of memory");
	n = strlen(s);
	s = xrealloc(s, n + 2);
	s[n] = '\n';
	s[n + 1] = '\0';
	return s;
}

int
cond_wait_ms(pthread_cond_t *cv, int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return pthread_cond_timedwait(cv, &ex_mu, &ts);
}
/* --- Following an exec (NDJSON) ---------------------------------------------------- */

struct follower {
	struct exec	*e;
	uint64_t	 seq;		/* next chunk to send */
	int		 fd;		/* the client's socket */
	int		 primary;	/* the POST /v1/exec stream: it owns the exec */
	int		 sent_start, sent_exit;
	char		*pending;
	size_t		 pending_len, pending_off;
};

/* The next line for f, or NULL when there is none yet (ex_mu held). */
static char *
follower_next_locked(struct follower *f)
{
	struct exec *e = f->e;
	uint64_t first = e->next_seq - e->ccount;

	if (!f->sent_start) {
		f->sent_start = 1;
		return xasprintf("{\"type\":\"start\",\"id\":\"%s\",\"pid\":%d}\n", e->id, (int)e->pid);
	}
	if (f->seq < first) {
		/* Asked for chunks the ring no longer holds: say so, then go on. */
		char *l = xasprintf("{\"type\":\"gap\",\"from\":%" PRIu64 ",\"to\":%" PRIu64 "}\n",
		    f->seq, first - 1);
		f->seq = first;
		return l;
	}
	if (f->seq < e->next_seq) {
		struct chunk *c = &e->chunks[(e->chead + (f->seq - first)) % e->ccap];
		f->seq++;
		if (f->primary) {
			e->primary_seq = f->seq;
			pthread_cond_broadcast(&e->cv);
		}
		return xstrndup(c->line, c->len);
	}
	if (e->done && !f->sent_exit) {
		f->sent_exit = 1;
		return xstrdup(e->exit_line);
	}
	return NULL;
}

static ssize_t
follower_read(void *cls, uint64_t pos, char *out, size_t max)
{
	struct follower *f = cls;
	struct exec *e = f->e;
	size_t n = 0;

	pthread_mutex_lock(&ex_mu);
	for (;;) {
		if (f->pending == NULL) {
			f->pending = follower_next_locked(f);
			f->pending_len = f->pending ? strlen(f->pending) : 0;
			f->pending_off = 0;
		}
		if (f->pending != NULL) {
			size_t k = f->pending_len - f->pending_off;
			if (k > max - n)
				k = max - n;
			memcpy(out + n, f->pending + f->pending_off, k);
			n += k;
			f->pending_off += k;
			if (f->pending_off == f->pending_len) {
				free(f->pending);
				f->pending = NULL;
			}
			if (n == max)
				break;
			continue;
		}
		if (n > 0)
			break;
		if (f->sent_exit) {
			pthread_mutex_unlock(&ex_mu);
			return HTTP_STREAM_END;
		}
		if (cond_wait_ms(&e->cv, WAIT_TICK_MS) == ETIMEDOUT) {
			pthread_mutex_unlock(&ex_mu);
			if (http_peer_gone(f->fd))
				return HTTP_STREAM_ERROR;
			pthread_mutex_lock(&ex_mu);
		}
	}
	pthread_mutex_unlock(&ex_mu);
	return (ssize_t)n;
}

/* The response is over.  A streaming client that leaves before the exit event
 * takes its exec with it; a follower of the journal does not. */
static void
follower_free(void *cls)
{
	struct follower *f = cls;
	struct exec *e = f->e;
	int abandoned = 0;

	pthread_mutex_lock(&ex_mu);
	if (f->primary) {
		e->primary = 0;
		abandoned = !f->sent_exit;
		/* What was kept for it alone can go now. */
		while (e->done && e->ccount > 0 && e->retained > RETAIN_DONE)
			ring_drop_oldest(e);
		pthread_cond_broadcast(&e->cv);
	}
	pthread_mutex_unlock(&ex_mu);
	if (abandoned)
		exec_terminate(e, TERM_DISCONNECT);
	free(f->pending);
	free(f);
	exec_unref(e);
}

static enum http_rc
follow(struct req *r, struct exec *e, uint64_t from, int primary)
{
	struct follower *f = xcalloc(1, sizeof *f);

	f->e = e;		/* takes the caller's reference */
	f->seq = from ? from : 1;
	f->fd = http_conn_fd(r);
	f->primary = primary;
	return http_stream(r, HTTP_STATUS_OK, "application/x-ndjson", follower_read, f,
	    follower_free);
}

/* --- Routes ---------------------------------------------------------------------- */

static const struct jfield exec_spec[] = {
	{ "command", J_STRING, 1, 0, 0 },
	{ "cwd", J_STRING, 0, 0, 0 },
	{ "env", J_STRMAP, 0, 0, 0 },
	{ "stdin", J_STRING, 0, 0, 0 },
	{ "timeout_s", J_INT, 0, 1, EXEC_TIMEOUT_MAX_S },
	{ "as_root", J_BOOL, 0, 0, 0 },
	{ "background", J_BOOL, 0, 0, 0 },
	{ "max_output_bytes", J_INT, 0, 0, EXEC_OUTPUT_MAX },
	{ NULL, 0, 0, 0, 0 }
};

static int
origin_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > ORIGIN_MAX)
		return 0;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

static int
wants_ndjson(struct req *r)
{
	const char *a = http_header(r, "Accept");
	return a != NULL && strstr(a, "application/x-ndjson") != NULL;
}

static char *
command_shown(const char *cmd)
{
	size_t n = strlen(cmd);

	if (n <= COMMAND_SHOWN)
		return xstrdup(cmd);
	n = utf8_complete_prefix(cmd, COMMAND_SHOWN);
	return xasprintf("%.*s...", (int)n, cmd);
}

static void
close_pair(int p[2])
{
	pump_close(&p[0]);
	pump_close(&p[1]);
}

static enum http_rc
result_json(struct req *r, struct exec *e)
{
	cJSON *o = cJSON_CreateObject();
	const char *enc[2];
	cJSON *items[2];

	for (int s = 0; s < 2; s++) {
		struct buf *b = &e->out[s];
		size_t len = b->len;
		/* A cut at the cap may leave half a character behind: drop it, so text
		 * stays text. */
		if (e->truncated && len > 0) {
			size_t cut = utf8_complete_prefix(b->data, len);
			if (utf8_valid(b->data, cut))
				len = cut;
		}
		items[s] = output_json(b->data ? b->data : "", len, &enc[s]);
	}
	pthread_mutex_lock(&ex_mu);
	cJSON_AddStringToObject(o, "id", e->id);
	cJSON_AddItemToObject(o, "exit_code", e->exit_code >= 0 ?
	    cJSON_CreateNumber(e->exit_code) : cJSON_CreateNull());
	cJSON_AddItemToObject(o, "signal", signal_json(e->signo));
	cJSON_AddItemToObject(o, "stdout", items[0]);
	cJSON_AddItemToObject(o, "stderr", items[1]);
	cJSON_AddNumberToObject(o, "duration_ms", (double)e->duration_ms);
	cJSON_AddBoolToObject(o, "timed_out", e->timed_out);
	cJSON_AddBoolToObject(o, "truncated", e->truncated);
	cJSON_AddStringToObject(o, "reason", exec_reason(e));
	cJSON_AddStringToObject(o, "stdout_encoding", enc[0]);
	cJSON_AddStringToObject(o, "stderr_encoding", enc[1]);
	keep_json_locked(e, o);
	pthread_mutex_unlock(&ex_mu);
	return http_json(r, HTTP_STATUS_OK, o);
}

/* Wait until the exec is done; 0, or -1 when the client went away first. */
static int
wait_done(struct req *r, struct exec *e)
{
	int fd = http_conn_fd(r);

	pthread_mutex_lock(&ex_mu);
	while (!e->done) {
		if (cond_wait_ms(&e->cv, WAIT_TICK_MS) == ETIMEDOUT && !e->done) {
			pthread_mutex_unlock(&ex_mu);
			if (http_peer_gone(fd))
				return -1;
			pthread_mutex_lock(&ex_mu);
		}
	}
	pthread_mutex_unlock(&ex_mu);
	return 0;
}

static enum http_rc
exec_post(struct req *r)
{
	char msg[512];
	const cJSON *env, *v;
	const char *command, *cwd, *origin, *in;
	int background, as_root, client, stream;
	int out_p[2] = { -1, -1 }, err_p[2] = { -1, -1 }, in_p[2] = { -1, -1 };
	_cleanup_close_ int cwd_fd = -1;
	_cleanup_close_ int log_fd = -1;
	struct exec *e;
	struct pump *p;
	struct spawn sp;
	pthread_t th;
	enum http_rc rc;
	cJSON *ev;

	if (jspec_check(r->json, exec_spec, msg, sizeof msg) < 0)
		return http_bad_request(r, "%s", msg);
	command = jstr(r->json, "command", "");
	cwd = jstr(r->json, "cwd", agent.cwd ? agent.cwd : agent.workspace);
	env = cJSON_GetObjectItemCaseSensitive(r->json, "env");
	in = jstr(r->json, "stdin", NULL);
	background = jbool(r->json, "background", 0);
	as_root = jbool(r->json, "as_root", 0);
	stream = !background && wants_ndjson(r);
	origin = http_header(r, "X-Sbx-Origin");
	if (origin == NULL)
		origin = "api";
	if (!origin_valid(origin))
		return http_bad_request(r, "header X-Sbx-Origin must be 1-%d letters, digits, "
		    "'.', '_' or '-' (e.g. \"agent\", \"human\")", ORIGIN_MAX);
	if (command[0] == '\0')
		return http_bad_request(r, "field 'command' must not be empty");
	cJSON_ArrayForEach(v, env) {
		if (v->string[0] == '\0' || strchr(v->string, '=') != NULL)
			return http_bad_request(r, "field 'env' has a bad name '%.64s': names are "
			    "non-empty and hold no '='", v->string);
	}

	/* The cwd is resolved here, inside the sandbox root, and entered by fd. */
	/* exec_failed: the command cannot be started here (docker's 126), which
	 * a client tells apart from a request it got wrong. */
	if ((cwd_fd = path_open(cwd, O_PATH | O_DIRECTORY, 0)) < 0) {
		if (errno == ENOENT)
			return http_error(r, HTTP_STATUS_BAD_REQUEST, "exec_failed",
			    "cwd does not exist: %s", cwd);
		if (errno == ENOTDIR)
			return http_error(r, HTTP_STATUS_BAD_REQUEST, "exec_failed",
			    "cwd is not a directory: %s", cwd);
		return http_error(r, HTTP_STATUS_BAD_REQUEST, "exec_failed", "cannot open cwd %s: %s",
		    cwd, strerror(errno));
	}

	e = exec_new();
	e->mode = background ? MODE_BACKGROUND : stream ? MODE_STREAM : MODE_BUFFERED;
	e->as_root = as_root;
	e->command = command_shown(command);
	snprintf(e->origin, sizeof e->origin, "%s", origin);
	/* A stream keeps nothing, so it is capped only when the client asks. */
	e->out_max = (size_t)jint(r->json, "max_output_bytes",
	    stream ? INT64_MAX : EXEC_OUTPUT_DEFAULT);
	e->primary = stream;
	e->primary_seq = 1;
	pthread_mutex_lock(&ex_mu);
	snprintf(e->id, sizeof e->id, "x%" PRIu64, next_id++);
	pthread_mutex_unlock(&ex_mu);

	if (background) {
		if ((log_fd = spawn_open_file(e->id, "log", &e->log_path, NULL, msg,
		    sizeof msg)) < 0) {
			exec_unref(e);
			return http_error(r, HTTP_STATUS_INTERNAL_SERVER_ERROR, "internal", "%s", msg);
		}
	}
	if ((e->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
	    pipe2(out_p, O_CLOEXEC) < 0 || pipe2(err_p, O_CLOEXEC) < 0 ||
	    (in != NULL ? pipe2(in_p, O_CLOEXEC) :
	     (in_p[0] = open("/dev/null", O_RDONLY | O_CLOEXEC))) < 0) {
		snprintf(msg, sizeof msg, "cannot set up the command's pipes: %s", strerror(errno));
		goto fail_fds;
	}
	set_nonblock(out_p[0], 1);
	set_nonblock(err_p[0], 1);
	if (in_p[1] >= 0)
		set_nonblock(in_p[1], 1);

	sp = (struct spawn){
		.shell = spawn_shell(),
		.envp = spawn_env(as_root, env),
		.cwd_fd = cwd_fd,
		.in_fd = in_p[0], .out_fd = out_p[1], .err_fd = err_p[1],
		.as_root = as_root,
	};
	sp.argv[0] = strrchr(sp.shell, '/') + 1;
	sp.argv[1] = "-c";
	sp.argv[2] = (char *)command;
	sp.argv[3] = NULL;
	spawn_plain(&sp, command);
	e->started_wall = wall_ms();
	e->started_mono = now_ms();
	e->oom_base = agent_oom_kills();
	if (!background || cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(r->json, "timeout_s")))
		e->deadline = e->started_mono +
		    jint(r->json, "timeout_s", EXEC_TIMEOUT_DEFAULT_S) * 1000;
	int spawned = spawn_child(e, &sp, cwd, msg, sizeof msg, &client);
	spawn_plain_free(&sp);
	strv_free(sp.envp);
	pump_close(&in_p[0]);
	pump_close(&out_p[1]);
	pump_close(&err_p[1]);
	if (spawned < 0) {
		close_pair(in_p);
		close_pair(out_p);
		close_pair(err_p);
		exec_unref(e);
		if (client == 1)
			return http_bad_request(r, "%s", msg);
		return http_error(r, client ? HTTP_STATUS_BAD_REQUEST :
		    HTTP_STATUS_INTERNAL_SERVER_ERROR, "exec_failed", "%s", msg);
	}

	p = pump_new(e, out_p[0], err_p[0], in_p[1], in, steal_fd(&log_fd));

	/* In the journal and the event log before the pump runs, so exec.started
	 * always comes before exec.exited. */
	journal_add(e);
	journal_trim();
	ev = cJSON_CreateObject();
	cJSON_AddStringToObject(ev, "id", e->id);
	cJSON_AddStringToObject(ev, "command", e->command);
	cJSON_AddStringToObject(ev, "origin", e->origin);
	cJSON_AddNumberToObject(ev, "pid", e->pid);
	cJSON_AddBoolToObject(ev, "background", background);
	events_emit("exec.started", ev);

	if (pthread_create(&th, NULL, pump_main, p) != 0) {
		/* No thread to spare: stop the command and settle it here. */
		log_warnx("exec %s: cannot start its pump thread", e->id);
		pthread_mutex_lock(&ex_mu);
		e->primary = 0;
		pthread_mutex_unlock(&ex_mu);
		exec_kill(e, SIGKILL);
		pump_main(p);
		exec_unref(e);
		return http_error(r, HTTP_STATUS_INTERNAL_SERVER_ERROR, "internal",
		    "cannot start a thread for the command; the agent may be out of resources");
	}
	pthread_detach(th);

	if (background) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "id", e->id);
		cJSON_AddNumberToObject(o, "pid", e->pid);
		cJSON_AddStringToObject(o, "log_path", e->log_path);
		exec_unref(e);
		return http_json(r, HTTP_STATUS_OK, o);
	}
	if (stream)
		return follow(r, e, 1, 1);
	if (wait_done(r, e) < 0) {
		exec_terminate(e, TERM_DISCONNECT);
		exec_unref(e);
		return HTTP_DROP;
	}
	rc = result_json(r, e);
	exec_unref(e);
	return rc;

fail_fds:
	close_pair(in_p);
	close_pair(out_p);
	close_pair(err_p);
	exec_unref(e);
	return http_error(r, HTTP_STATUS_INTERNAL_SERVER_ERROR, "internal", "%s", msg);
}

static enum http_rc
not_found(struct req *r, const char *id)
{
	return http_error(r, HTTP_STATUS_NOT_FOUND, "not_found",
	    "no exec '%.64s' (GET /v1/execs lists them)", id);
}

static enum http_rc
execs_list(struct req *r)
{
	cJSON *o = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(o, "execs");

	pthread_mutex_lock(&ex_mu);
	for (size_t i = 0; i < njournal; i++)
		cJSON_AddItemToArray(a, exec_json_locked(journal[i]));
	pthread_mutex_unlock(&ex_mu);
	return http_json(r, HTTP_STATUS_OK, o);
}

static enum http_rc
execs_get(struct req *r)
{
	struct exec *e = journal_find(r->params[0]);
	cJSON *o;

	if (e == NULL)
		return not_found(r, r->params[0]);
	pthread_mutex_lock(&ex_mu);
	o = exec_json_locked(e);
	pthread_mutex_unlock(&ex_mu);
	exec_unref(e);
	return http_json(r, HTTP_STATUS_OK, o);
}

static enum http_rc
execs_stream(struct req *r)
{
	const char *from = http_query(r, "from");
	uint64_t seq = 1;
	struct exec *e;

	if (from != NULL) {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(from, &end, 10);
		if (*from < '0' || *from > '9' || *end != '\0' || errno != 0)
			return http_bad_request(r, "query 'from' must be a chunk sequence number");
		seq = v;
	}
	if ((e = journal_find(r->params[0])) == NULL)
		return not_found(r, r->params[0]);
	return follow(r, e, seq, 0);
}

static enum http_rc
execs_signal(struct req *r)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->json, "signal");
	const struct jfield spec[] = {
		{ "signal", cJSON_IsNumber(v) ? J_INT : J_STRING, 1, 1, 64 },
		{ NULL, 0, 0, 0, 0 }
	};
	char msg[256];
	struct exec *e;
	int sig, rc;

	if (jspec_check(r->json, spec, msg, sizeof msg) < 0)
		return http_bad_request(r, "%s (a name such as \"TERM\" or a number)", msg);
	if (cJSON_IsNumber(v))
		sig = (int)v->valuedouble;
	else if ((sig = sig_number(v->valuestring)) == 0)
		return http_bad_request(r, "field 'signal': unknown signal '%.32s' (use TERM, "
		    "KILL, INT, HUP, STOP, CONT, USR1, USR2 or a number)", v->valuestring);
	if ((e = journal_find(r->params[0])) == NULL)
		return not_found(r, r->params[0]);
	rc = exec_kill(e, sig);
	exec_unref(e);
	if (rc < 0)
		return http_error(r, HTTP_STATUS_CONFLICT, "conflict",
		    "exec '%s' has exited; there is nothing to signal", r->params[0]);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", r->params[0]);
	cJSON_AddItemToObject(o, "signal", signal_json(sig));
	cJSON_AddBoolToObject(o, "sent", 1);
	return http_json(r, HTTP_STATUS_OK, o);
}

const struct route exec_routes[] = {
	{ "POST", "/v1/exec", ROUTE_JSON, exec_post, NULL, EXEC_BODY_MAX },
	{ "GET", "/v1/execs", 0, execs_list, NULL, 0 },
	{ "GET", "/v1/execs/*", 0, execs_get, NULL, 0 },
	{ "GET", "/v1/execs/*/stream", 0, execs_stream, NULL, 0 },
	{ "POST", "/v1/execs/*/signal", ROUTE_JSON, execs_signal, NULL, 0 },
	{ NULL, NULL, 0, NULL, NULL, 0 }
};
