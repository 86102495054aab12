/* POST /v1/exec and the exec journal (/v1/execs...).
 *
 * Shape of an exec: the request thread validates, opens the cwd and the pipes,
 * forks the child (under children_lock, watched before unlocking), then hands the
 * pipes to a pump thread.  The pump is the only reader of the child's output: it
 * cuts it into chunks on UTF-8 character boundaries, keeps the buffered result
 * (capped per stream), appends numbered NDJSON lines to the exec's bounded chunk
 * ring, writes the background log, feeds stdin, and runs the timeout (TERM to the
 * group, KILL after a grace).  Whoever answers a client (the buffered handler, a
 * streaming follower) only waits on the exec's condition variable.
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
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/events.h"
#include "agent/exec.h"
#include "agent/http.h"
#include "agent/path.h"
#include "lib/b64.h"
#include "lib/buf.h"
#include "lib/jspec.h"
#include "lib/log.h"
#include "lib/utf8.h"
#include "lib/util.h"

/* The body carries stdin: 16 MiB of text (what `sbxtop exec` passes on) with room
 * for JSON's escapes. */
#define EXEC_BODY_MAX	(96u << 20)
#define RETAIN_RUNNING	(1u << 20)	/* chunk bytes a running exec keeps for replay */
#define RETAIN_DONE	(256u << 10)	/* ... and once it has exited */
#define DRAIN_MS	100		/* after the leader exits: wait this long for EOF */
#define READ_CHUNK	65536
#define COMMAND_SHOWN	4096		/* bytes of the command kept in the journal */
#define ORIGIN_MAX	32
#define WAIT_TICK_MS	200		/* how often waiters look for a vanished client */

enum mode { MODE_BUFFERED, MODE_STREAM, MODE_BACKGROUND };
enum term_reason { TERM_NONE, TERM_TIMEOUT, TERM_DISCONNECT };

struct chunk {
	char	*line;		/* a whole NDJSON line, '\n'-terminated */
	size_t	 len;
};

struct exec {
	/* Fixed once the exec is started. */
	char		 id[24];
	char		*command;	/* as shown: at most COMMAND_SHOWN bytes */
	char		 origin[ORIGIN_MAX + 1];
	pid_t		 pid;		/* also the process group id */
	enum mode	 mode;
	int		 as_root;
	int64_t		 started_wall, started_mono;
	int64_t		 deadline;	/* monotonic ms, 0: none */
	size_t		 out_max;	/* per stream; not for background */
	char		*log_path;	/* background only */
	int		 wake_fd;	/* eventfd that breaks the pump's poll */

	/* Under ex_mu. */
	int		 refs;
	pthread_cond_t	 cv;
	int		 leader_exited;
	int		 status;
	int64_t		 exit_mono;
	int		 done;		/* output drained, result final */
	int		 draining;	/* the pump still reads pipes someone holds */
	int		 timed_out, truncated;
	enum term_reason term;
	int		 exit_code, signo;	/* -1 when not applicable */
	int64_t		 duration_ms;
	char		*exit_line;
	struct chunk	*chunks;	/* ring of the newest chunks, oldest at head */
	size_t		 chead, ccount, ccap, retained;
	uint64_t	 next_seq;	/* seq of the next chunk; seqs start at 1 */
	int		 primary;	/* the streaming request is attached */
	uint64_t	 primary_seq;	/* next seq it has not taken yet */

	/* Buffered result: written by the pump only, read after done. */
	struct buf	 out[2];
};

static pthread_mutex_t ex_mu = PTHREAD_MUTEX_INITIALIZER;
static struct exec **journal;
static size_t njournal, capjournal;
static uint64_t next_id = 1;

static const char *const stream_name[2] = { "stdout", "stderr" };

/* Signals by name, for results and the signal route (own table: sigabbrev_np is
 * glibc only, and the agent is also built against musl). */
static const struct { int sig; const char *name; } signames[] = {
	{ SIGHUP, "HUP" }, { SIGINT, "INT" }, { SIGQUIT, "QUIT" }, { SIGILL, "ILL" },
	{ SIGTRAP, "TRAP" }, { SIGABRT, "ABRT" }, { SIGBUS, "BUS" }, { SIGFPE, "FPE" },
	{ SIGKILL, "KILL" }, { SIGUSR1, "USR1" }, { SIGSEGV, "SEGV" }, { SIGUSR2, "USR2" },
	{ SIGPIPE, "PIPE" }, { SIGALRM, "ALRM" }, { SIGTERM, "TERM" }, { SIGCHLD, "CHLD" },
	{ SIGCONT, "CONT" }, { SIGSTOP, "STOP" }, { SIGTSTP, "TSTP" }, { SIGTTIN, "TTIN" },
	{ SIGTTOU, "TTOU" }, { SIGURG, "URG" }, { SIGXCPU, "XCPU" }, { SIGXFSZ, "XFSZ" },
	{ SIGVTALRM, "VTALRM" }, { SIGPROF, "PROF" }, { SIGWINCH, "WINCH" }, { SIGIO, "IO" },
	{ SIGPWR, "PWR" }, { SIGSYS, "SYS" },
};

static cJSON *
signal_json(int sig)
{
	char num[16];

	if (sig <= 0)
		return cJSON_CreateNull();
	for (size_t i = 0; i < ARRAY_SIZE(signames); i++)
		if (signames[i].sig == sig)
			return cJSON_CreateString(signames[i].name);
	snprintf(num, sizeof num, "%d", sig);
	return cJSON_CreateString(num);
}

static int
signal_parse(const char *s)
{
	if (strncasecmp(s, "SIG", 3) == 0)
		s += 3;
	for (size_t i = 0; i < ARRAY_SIZE(signames); i++)
		if (strcasecmp(signames[i].name, s) == 0)
			return signames[i].sig;
	return -1;
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

static void
exec_free(struct exec *e)
{
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

static void
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

static void
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

/* Signal the exec's process group if its leader has not been reaped yet (so the
 * group id cannot have been reused).  0, or -1 when it has exited. */
static int
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

/* child_watch callback: main thread, children_lock held.  Record and wake. */
static void
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
	if (e->log_path != NULL)
		cJSON_AddStringToObject(o, "log_path", e->log_path);
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

static void
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

/* Append s (n bytes of valid UTF-8, NULs allowed) as a quoted JSON string. */
static void
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

static char *
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

/* Wait on cv (ex_mu held) for at most ms; the pthread_cond_timedwait result. */
static int
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

/* ex_mu held. */
static void
ring_drop_oldest(struct exec *e)
{
	struct chunk *c = &e->chunks[e->chead];

	e->retained -= c->len;
	free(c->line);
	e->chead = (e->chead + 1) % e->ccap;
	e->ccount--;
}

/* --- The pump ---------------------------------------------------------------------- */

struct pump {
	struct exec	*e;
	int		 fd[2];		/* stdout, stderr read ends (-1 once at EOF) */
	int		 in_fd;		/* stdin write end, -1 when done */
	const char	*in_data;	/* owned via in_owner */
	char		*in_owner;
	size_t		 in_len, in_off;
	int		 log_fd;	/* background: where the output goes */
	int		 log_failed;
	char		 carry[2][4];	/* an incomplete UTF-8 character held back */
	size_t		 ncarry[2];
	size_t		 used[2];	/* bytes kept per stream, for the cap */
	uint64_t	 seq;		/* seq of the next chunk */
	int64_t		 term_at;	/* when TERM was sent, 0: not yet */
	int		 killed;
	int64_t		 drain_until;
	char		 rbuf[READ_CHUNK + 4];
};

static void
pump_close(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Timeout and termination: TERM to the group when asked or past the deadline,
 * KILL once the grace is over. */
static void
pump_control(struct pump *p)
{
	struct exec *e = p->e;
	int64_t now = now_ms();
	enum term_reason term;

	pthread_mutex_lock(&ex_mu);
	if (e->deadline && now >= e->deadline && e->term == TERM_NONE && !e->leader_exited) {
		e->term = TERM_TIMEOUT;
		e->timed_out = 1;
	}
	term = e->term;
	pthread_mutex_unlock(&ex_mu);
	if (term != TERM_NONE && p->term_at == 0) {
		exec_kill(e, SIGTERM);
		p->term_at = now;
	}
	if (p->term_at && !p->killed && now >= p->term_at + EXEC_KILL_GRACE_MS) {
		exec_kill(e, SIGKILL);
		p->killed = 1;
	}
}

/* Append a chunk line to the ring.  A streaming client is never made to skip
 * output: while it still needs the oldest chunk and the ring is full, the pump
 * waits (and the child, its pipe full, waits too). */
static void
ring_push(struct pump *p, char *line, size_t len)
{
	struct exec *e = p->e;
	int64_t t0 = now_ms();

	pthread_mutex_lock(&ex_mu);
	while (e->ccount > 0 && e->retained + len > RETAIN_RUNNING) {
		if (e->primary && e->next_seq - e->ccount >= e->primary_seq) {
			/* The oldest chunk is not sent yet: wait for the client. */
			cond_wait_ms(&e->cv, 100);
			pthread_mutex_unlock(&ex_mu);
			pump_control(p);
			pthread_mutex_lock(&ex_mu);
			continue;
		}
		ring_drop_oldest(e);
	}
	/* Time spent waiting for the client does not count against the drain. */
	if (p->drain_until)
		p->drain_until += now_ms() - t0;
	if (e->ccount == e->ccap) {
		size_t ncap = e->ccap ? e->ccap * 2 : 64;
		struct chunk *n = xmalloc(ncap * sizeof *n);
		for (size_t i = 0; i < e->ccount; i++)
			n[i] = e->chunks[(e->chead + i) % e->ccap];
		free(e->chunks);
		e->chunks = n;
		e->chead = 0;
		e->ccap = ncap;
	}
	e->chunks[(e->chead + e->ccount) % e->ccap] = (struct chunk){ line, len };
	e->ccount++;
	e->retained += len;
	e->next_seq++;
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&ex_mu);
}

/* n bytes of stream s, cut on a character boundary unless binary. */
static void
pump_emit(struct pump *p, int s, const char *d, size_t n)
{
	struct exec *e = p->e;
	struct buf line;

	if (n == 0)
		return;
	if (p->log_fd >= 0 && write_all(p->log_fd, d, n) < 0 && !p->log_failed) {
		log_warn("exec %s: cannot write its log %s", e->id, e->log_path);
		p->log_failed = 1;
	}
	if (e->mode != MODE_BACKGROUND) {
		size_t room = e->out_max - p->used[s];
		if (n > room) {
			n = utf8_complete_prefix(d, room);
			p->used[s] = e->out_max;	/* nothing more from this stream */
			pthread_mutex_lock(&ex_mu);
			e->truncated = 1;
			pthread_mutex_unlock(&ex_mu);
		} else
			p->used[s] += n;
		if (n == 0)
			return;
		if (e->mode == MODE_BUFFERED)
			buf_append(&e->out[s], d, n);
	}

	buf_init(&line, SIZE_MAX);
	buf_printf(&line, "{\"type\":\"%s\",\"seq\":%" PRIu64 ",", stream_name[s], p->seq++);
	if (utf8_valid(d, n)) {
		buf_append(&line, "\"data\":", 7);
		json_quote(&line, d, n);
	} else {
		_cleanup_free_ char *enc = b64_encode(d, n);
		buf_printf(&line, "\"data_b64\":\"%s\"", enc);
	}
	buf_append(&line, "}\n", 2);
	size_t len = line.len;
	ring_push(p, buf_steal(&line), len);
}

/* Read what stream s has; at EOF flush the held-back bytes and close it. */
static void
pump_read(struct pump *p, int s, int keep)
{
	size_t have = p->ncarry[s], cut;
	ssize_t n;

	memcpy(p->rbuf, p->carry[s], have);
	n = read(p->fd[s], p->rbuf + have, READ_CHUNK);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		if (keep)
			pump_emit(p, s, p->carry[s], have);
		else if (p->log_fd >= 0)
			(void)write_all(p->log_fd, p->carry[s], have);
		p->ncarry[s] = 0;
		pump_close(&p->fd[s]);
		return;
	}
	have += (size_t)n;
	if (!keep) {		/* after the exec is done: log or drop */
		if (p->log_fd >= 0)
			(void)write_all(p->log_fd, p->rbuf, have);
		p->ncarry[s] = 0;
		return;
	}
	cut = utf8_complete_prefix(p->rbuf, have);
	pump_emit(p, s, p->rbuf, cut);
	p->ncarry[s] = have - cut;
	memcpy(p->carry[s], p->rbuf + cut, have - cut);
}

static void
pump_write_stdin(struct pump *p)
{
	while (p->in_off < p->in_len) {
		size_t n = p->in_len - p->in_off;
		ssize_t w = write(p->in_fd, p->in_data + p->in_off, n > 65536 ? 65536 : n);
		if (w < 0) {
			if (errno == EAGAIN)
				return;
			if (errno == EINTR)
				continue;
			break;		/* EPIPE: the command did not want it all */
		}
		p->in_off += (size_t)w;
	}
	pump_close(&p->in_fd);
}

static int
clamp_wait(int64_t until, int64_t now, int cur)
{
	int64_t d = until - now;

	if (d < 0)
		d = 0;
	return d < cur ? (int)d : cur;
}

/* The exec is over: settle the result, wake everyone, tell the event log. */
static void
pump_finish(struct pump *p)
{
	struct exec *e = p->e;
	cJSON *o, *ev;

	for (int s = 0; s < 2; s++) {
		pump_emit(p, s, p->carry[s], p->ncarry[s]);
		p->ncarry[s] = 0;
	}
	/* A stopped exec's leftovers (grandchildren in the group) go too. */
	if (p->term_at && !p->killed)
		kill(-e->pid, SIGKILL);

	pthread_mutex_lock(&ex_mu);
	if (WIFEXITED(e->status))
		e->exit_code = WEXITSTATUS(e->status);
	else if (WIFSIGNALED(e->status))
		e->signo = WTERMSIG(e->status);
	e->duration_ms = e->exit_mono - e->started_mono;
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "type", "exit");
	if (e->exit_code >= 0)
		cJSON_AddNumberToObject(o, "exit_code", e->exit_code);
	else
		cJSON_AddNullToObject(o, "exit_code");
	cJSON_AddItemToObject(o, "signal", signal_json(e->signo));
	cJSON_AddNumberToObject(o, "duration_ms", (double)e->duration_ms);
	cJSON_AddBoolToObject(o, "timed_out", e->timed_out);
	cJSON_AddBoolToObject(o, "truncated", e->truncated);
	e->exit_line = json_line(o);
	while (e->ccount > 0 && e->retained > RETAIN_DONE &&
	    !(e->primary && e->next_seq - e->ccount >= e->primary_seq))
		ring_drop_oldest(e);
	e->done = 1;
	e->draining = p->fd[0] >= 0 || p->fd[1] >= 0;
	ev = cJSON_CreateObject();
	cJSON_AddStringToObject(ev, "id", e->id);
	cJSON_AddItemToObject(ev, "exit_code", e->exit_code >= 0 ?
	    cJSON_CreateNumber(e->exit_code) : cJSON_CreateNull());
	cJSON_AddItemToObject(ev, "signal", signal_json(e->signo));
	cJSON_AddNumberToObject(ev, "duration_ms", (double)e->duration_ms);
	cJSON_AddBoolToObject(ev, "timed_out", e->timed_out);
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&ex_mu);

	events_emit("exec.exited", ev);
	journal_trim();
}

static void *
pump_main(void *arg)
{
	struct pump *p = arg;
	struct exec *e = p->e;

	if (p->in_fd >= 0 && p->in_len == 0)
		pump_close(&p->in_fd);
	for (;;) {
		struct pollfd pf[4];
		int npf = 0, idx[2] = { -1, -1 }, iin = -1, wait = 1000, exited;
		int64_t now;

		pump_control(p);
		pthread_mutex_lock(&ex_mu);
		exited = e->leader_exited;
		pthread_mutex_unlock(&ex_mu);
		now = now_ms();
		if (exited) {
			if (p->drain_until == 0) {
				p->drain_until = now + DRAIN_MS;
				pump_close(&p->in_fd);
			}
			if ((p->fd[0] < 0 && p->fd[1] < 0) || now >= p->drain_until)
				break;
			wait = clamp_wait(p->drain_until, now, wait);
		}
		if (e->deadline && p->term_at == 0)
			wait = clamp_wait(e->deadline, now, wait);
		if (p->term_at && !p->killed)
			wait = clamp_wait(p->term_at + EXEC_KILL_GRACE_MS, now, wait);

		pf[npf++] = (struct pollfd){ .fd = e->wake_fd, .events = POLLIN };
		for (int s = 0; s < 2; s++) {
			if (p->fd[s] >= 0) {
				idx[s] = npf;
				pf[npf++] = (struct pollfd){ .fd = p->fd[s], .events = POLLIN };
			}
		}
		if (p->in_fd >= 0) {
			iin = npf;
			pf[npf++] = (struct pollfd){ .fd = p->in_fd, .events = POLLOUT };
		}
		if (poll(pf, (nfds_t)npf, wait) < 0) {
			if (errno != EINTR)
				log_warn("exec %s: poll", e->id);
			continue;
		}
		if (pf[0].revents) {
			uint64_t v;
			(void)!read(e->wake_fd, &v, sizeof v);
		}
		for (int s = 0; s < 2; s++)
			if (idx[s] >= 0 && pf[idx[s]].revents)
				pump_read(p, s, 1);
		if (iin >= 0 && pf[iin].revents)
			pump_write_stdin(p);
	}
	pump_finish(p);

	/* Whatever still holds the pipes (a server started with `&`) is drained until
	 * it lets go: into the log for a background job, nowhere otherwise. */
	while (p->fd[0] >= 0 || p->fd[1] >= 0) {
		struct pollfd pf[2];
		int npf = 0, which[2];

		for (int s = 0; s < 2; s++)
			if (p->fd[s] >= 0) {
				which[npf] = s;
				pf[npf++] = (struct pollfd){ .fd = p->fd[s], .events = POLLIN };
			}
		if (poll(pf, (nfds_t)npf, -1) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < npf; i++)
			if (pf[i].revents)
				pump_read(p, which[i], 0);
	}
	pthread_mutex_lock(&ex_mu);
	e->draining = 0;
	pthread_mutex_unlock(&ex_mu);
	pump_close(&p->fd[0]);
	pump_close(&p->fd[1]);
	pump_close(&p->in_fd);
	pump_close(&p->log_fd);
	free(p->in_owner);
	free(p);
	exec_unref(e);
	return NULL;
}

/* --- Starting a child ------------------------------------------------------------ */

enum spawn_stage { STAGE_PRIVS = 1, STAGE_CWD, STAGE_EXEC };

struct spawn_report {
	int	stage;
	int	err;
};

struct spawn {
	const char	*shell;
	char		*argv[4];
	char		**envp;
	int		 cwd_fd;
	int		 in_fd, out_fd, err_fd;	/* the child's ends */
	int		 as_root;
};

static const char *
shell_path(void)
{
	if (access("/bin/bash", X_OK) == 0)
		return "/bin/bash";
	if (access("/usr/bin/bash", X_OK) == 0)
		return "/usr/bin/bash";
	return "/bin/sh";
}

static void __attribute__((noreturn))
child_fail(int stage)
{
	struct spawn_report rep = { stage, errno };

	(void)!write(3, &rep, sizeof rep);
	_exit(127);
}

/* In the vforked child (sharing the agent's memory until execve): only system
 * calls from here on, nothing that allocates or takes a lock.  The order is
 * fixed: own process group; move the needed descriptors out of the way, then onto
 * 0-4; close every other descriptor; clean signal state; drop privileges; enter
 * the cwd as the user (so its permissions apply); exec. */
static void __attribute__((noreturn))
child_run(const struct spawn *sp, int report_fd)
{
	int src[5] = { sp->in_fd, sp->out_fd, sp->err_fd, report_fd, sp->cwd_fd };
	int tmp[5];
	sigset_t none;
	struct sigaction dfl = { .sa_handler = SIG_DFL };

	setpgid(0, 0);
	for (int i = 0; i < 5; i++)
		if ((tmp[i] = fcntl(src[i], F_DUPFD, 10)) < 0)
			_exit(127);
	for (int i = 0; i < 5; i++)
		if (dup2(tmp[i], i) < 0)
			_exit(127);
	fcntl(3, F_SETFD, FD_CLOEXEC);
	if (close_range(5, ~0U, 0) < 0) {
		struct rlimit rl;
		int max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536 ?
		    (int)rl.rlim_cur : 65536;
		for (int fd = 5; fd < max; fd++)
			close(fd);
	}
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	sigaction(SIGPIPE, &dfl, NULL);
	if (agent_drop_privs(sp->as_root) < 0)
		child_fail(STAGE_PRIVS);
	if (fchdir(4) < 0)
		child_fail(STAGE_CWD);
	close(4);
	execve(sp->shell, sp->argv, sp->envp);
	child_fail(STAGE_EXEC);
}

/* Fork and exec; e->pid is set and the child watched.  0, or -1 with a message
 * in err and *client set when the request is at fault (the cwd). */
static int
spawn_child(struct exec *e, const struct spawn *sp, const char *cwd, char *err,
    size_t errlen, int *client)
{
	int rp[2];
	pid_t pid;
	struct spawn_report rep;
	ssize_t n;

	*client = 0;
	if (pipe2(rp, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "cannot create a pipe: %s", strerror(errno));
		return -1;
	}
	children_lock();
	/* vfork: no copy of the agent's page tables, the cheapest way to start a
	 * command; the child only makes system calls until execve or _exit. */
	pid = vfork();
	if (pid == 0)
		child_run(sp, rp[1]);
	if (pid < 0) {
		int saved = errno;
		children_unlock();
		close(rp[0]);
		close(rp[1]);
		snprintf(err, errlen, "cannot fork: %s", strerror(saved));
		return -1;
	}
	/* Also from this side, so the group exists before anyone signals it. */
	setpgid(pid, pid);
	pthread_mutex_lock(&ex_mu);
	e->pid = pid;
	exec_ref_locked(e);		/* the watch's */
	pthread_mutex_unlock(&ex_mu);
	child_watch(pid, exec_reaped, e);
	children_unlock();

	close(rp[1]);
	do
		n = read(rp[0], &rep, sizeof rep);
	while (n < 0 && errno == EINTR);
	close(rp[0]);
	if (n != (ssize_t)sizeof rep)
		return 0;		/* EOF: exec succeeded */
	switch (rep.stage) {
	case STAGE_CWD:
		*client = 1;
		snprintf(err, errlen, "cannot enter cwd %s: %s", cwd, strerror(rep.err));
		break;
	case STAGE_PRIVS:
		snprintf(err, errlen, "cannot switch to the sandbox user: %s", strerror(rep.err));
		break;
	default:
		if (rep.err == E2BIG) {
			*client = 1;
			snprintf(err, errlen, "the command or env is too large for the kernel "
			    "(at most 128 KiB per string); write the script to a file and run that");
			break;
		}
		snprintf(err, errlen, "cannot run %s: %s", sp->shell, strerror(rep.err));
	}
	return -1;
}

/* The child's environment: the clean base, then the request's (which wins). */
static char **
build_env(int as_root, const cJSON *env)
{
	char **base = agent_child_env(as_root), **out;
	size_t nbase = 0, nreq = 0, n = 0;
	const cJSON *v;

	while (base[nbase] != NULL)
		nbase++;
	cJSON_ArrayForEach(v, env)
		nreq++;
	out = xcalloc(nbase + nreq + 1, sizeof *out);
	for (size_t i = 0; i < nbase; i++) {
		size_t klen = strcspn(base[i], "=");
		int overridden = 0;
		cJSON_ArrayForEach(v, env) {
			if (strlen(v->string) == klen && strncmp(v->string, base[i], klen) == 0)
				overridden = 1;
		}
		if (overridden)
			free(base[i]);
		else
			out[n++] = base[i];
	}
	free(base);
	cJSON_ArrayForEach(v, env)
		out[n++] = xasprintf("%s=%s", v->string, v->valuestring);
	out[n] = NULL;
	return out;
}

/* The background log of exec id: a new file inside the sandbox, in a directory the
 * agent owns (one a sandbox user made could hold a symlink we would write through).
 * An older log of the same name (from an earlier agent) is kept: the new one gets a
 * suffix.  The descriptor, with *path set (caller frees), or -1 with err. */
static int
open_log(const char *id, char **path, char *err, size_t errlen)
{
	_cleanup_free_ char *dir_probe = xasprintf(EXEC_LOG_DIR "/exec-%s.log", id);
	_cleanup_free_ char *name = NULL;
	_cleanup_close_ int dfd = -1;
	struct stat st;

	if (path_mkdir_parents(dir_probe) < 0 || (dfd = path_open_parent(dir_probe, &name)) < 0) {
		snprintf(err, errlen, "cannot create %s: %s", EXEC_LOG_DIR, strerror(errno));
		return -1;
	}
	if (fstat(dfd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
		snprintf(err, errlen, "%s is not a directory owned by the agent with mode 0755; "
		    "remove it and retry", EXEC_LOG_DIR);
		return -1;
	}
	for (int n = 0; n < 100; n++) {
		_cleanup_free_ char *file = n ? xasprintf("exec-%s.%d.log", id, n) :
		    xasprintf("exec-%s.log", id);
		int fd = openat(dfd, file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd >= 0) {
			*path = xasprintf(EXEC_LOG_DIR "/%s", file);
			return fd;
		}
		if (errno != EEXIST) {
			snprintf(err, errlen, "cannot create %s/%s: %s", EXEC_LOG_DIR, file,
			    strerror(errno));
			return -1;
		}
	}
	snprintf(err, errlen, "too many old logs for exec %s in %s; remove some", id, EXEC_LOG_DIR);
	return -1;
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
			return MHD_CONTENT_READER_END_OF_STREAM;
		}
		if (cond_wait_ms(&e->cv, WAIT_TICK_MS) == ETIMEDOUT) {
			pthread_mutex_unlock(&ex_mu);
			if (http_peer_gone(f->fd))
				return MHD_CONTENT_READER_END_WITH_ERROR;
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

static enum MHD_Result
follow(struct req *r, struct exec *e, uint64_t from, int primary)
{
	struct follower *f = xcalloc(1, sizeof *f);

	f->e = e;		/* takes the caller's reference */
	f->seq = from ? from : 1;
	f->fd = http_conn_fd(r);
	f->primary = primary;
	return http_stream(r, MHD_HTTP_OK, "application/x-ndjson", follower_read, f,
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

static enum MHD_Result
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
	cJSON_AddStringToObject(o, "stdout_encoding", enc[0]);
	cJSON_AddStringToObject(o, "stderr_encoding", enc[1]);
	pthread_mutex_unlock(&ex_mu);
	return http_json(r, MHD_HTTP_OK, o);
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

static enum MHD_Result
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
	enum MHD_Result rc;
	cJSON *ev;

	if (jspec_check(r->json, exec_spec, msg, sizeof msg) < 0)
		return http_bad_request(r, "%s", msg);
	command = jstr(r->json, "command", "");
	cwd = jstr(r->json, "cwd", agent.workspace);
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
	if ((cwd_fd = path_open(cwd, O_PATH | O_DIRECTORY, 0)) < 0) {
		if (errno == ENOENT)
			return http_bad_request(r, "cwd does not exist: %s", cwd);
		if (errno == ENOTDIR)
			return http_bad_request(r, "cwd is not a directory: %s", cwd);
		return http_bad_request(r, "cannot open cwd %s: %s", cwd, strerror(errno));
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
		if ((log_fd = open_log(e->id, &e->log_path, msg, sizeof msg)) < 0) {
			exec_unref(e);
			return http_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "%s", msg);
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
		.shell = shell_path(),
		.envp = build_env(as_root, env),
		.cwd_fd = cwd_fd,
		.in_fd = in_p[0], .out_fd = out_p[1], .err_fd = err_p[1],
		.as_root = as_root,
	};
	sp.argv[0] = strrchr(sp.shell, '/') + 1;
	sp.argv[1] = "-c";
	sp.argv[2] = (char *)command;
	sp.argv[3] = NULL;
	e->started_wall = wall_ms();
	e->started_mono = now_ms();
	if (!background || cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(r->json, "timeout_s")))
		e->deadline = e->started_mono +
		    jint(r->json, "timeout_s", EXEC_TIMEOUT_DEFAULT_S) * 1000;
	int spawned = spawn_child(e, &sp, cwd, msg, sizeof msg, &client);
	strv_free(sp.envp);
	pump_close(&in_p[0]);
	pump_close(&out_p[1]);
	pump_close(&err_p[1]);
	if (spawned < 0) {
		close_pair(in_p);
		close_pair(out_p);
		close_pair(err_p);
		exec_unref(e);
		if (client)
			return http_bad_request(r, "%s", msg);
		return http_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "exec_failed", "%s", msg);
	}

	p = xcalloc(1, sizeof *p);
	p->e = e;
	p->fd[0] = out_p[0];
	p->fd[1] = err_p[0];
	p->in_fd = in_p[1];
	if (in != NULL) {
		p->in_owner = xstrdup(in);
		p->in_data = p->in_owner;
		p->in_len = strlen(in);
	}
	p->log_fd = steal_fd(&log_fd);
	p->seq = 1;
	pthread_mutex_lock(&ex_mu);
	exec_ref_locked(e);		/* the pump's */
	pthread_mutex_unlock(&ex_mu);

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
		return http_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal",
		    "cannot start a thread for the command; the agent may be out of resources");
	}
	pthread_detach(th);

	if (background) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "id", e->id);
		cJSON_AddNumberToObject(o, "pid", e->pid);
		cJSON_AddStringToObject(o, "log_path", e->log_path);
		exec_unref(e);
		return http_json(r, MHD_HTTP_OK, o);
	}
	if (stream)
		return follow(r, e, 1, 1);
	if (wait_done(r, e) < 0) {
		exec_terminate(e, TERM_DISCONNECT);
		exec_unref(e);
		return MHD_NO;
	}
	rc = result_json(r, e);
	exec_unref(e);
	return rc;

fail_fds:
	close_pair(in_p);
	close_pair(out_p);
	close_pair(err_p);
	exec_unref(e);
	return http_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "%s", msg);
}

static enum MHD_Result
not_found(struct req *r, const char *id)
{
	return http_error(r, MHD_HTTP_NOT_FOUND, "not_found",
	    "no exec '%.64s' (GET /v1/execs lists them)", id);
}

static enum MHD_Result
execs_list(struct req *r)
{
	cJSON *o = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(o, "execs");

	pthread_mutex_lock(&ex_mu);
	for (size_t i = 0; i < njournal; i++)
		cJSON_AddItemToArray(a, exec_json_locked(journal[i]));
	pthread_mutex_unlock(&ex_mu);
	return http_json(r, MHD_HTTP_OK, o);
}

static enum MHD_Result
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
	return http_json(r, MHD_HTTP_OK, o);
}

static enum MHD_Result
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

static enum MHD_Result
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
	else if ((sig = signal_parse(v->valuestring)) < 0)
		return http_bad_request(r, "field 'signal': unknown signal '%.32s' (use TERM, "
		    "KILL, INT, HUP, STOP, CONT, USR1, USR2 or a number)", v->valuestring);
	if ((e = journal_find(r->params[0])) == NULL)
		return not_found(r, r->params[0]);
	rc = exec_kill(e, sig);
	exec_unref(e);
	if (rc < 0)
		return http_error(r, MHD_HTTP_CONFLICT, "conflict",
		    "exec '%s' has exited; there is nothing to signal", r->params[0]);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", r->params[0]);
	cJSON_AddItemToObject(o, "signal", signal_json(sig));
	cJSON_AddBoolToObject(o, "sent", 1);
	return http_json(r, MHD_HTTP_OK, o);
}

const struct route exec_routes[] = {
	{ "POST", "/v1/exec", ROUTE_JSON, exec_post, NULL, EXEC_BODY_MAX },
	{ "GET", "/v1/execs", 0, execs_list, NULL, 0 },
	{ "GET", "/v1/execs/*", 0, execs_get, NULL, 0 },
	{ "GET", "/v1/execs/*/stream", 0, execs_stream, NULL, 0 },
	{ "POST", "/v1/execs/*/signal", ROUTE_JSON, execs_signal, NULL, 0 },
	{ NULL, NULL, 0, NULL, NULL, 0 }
};
