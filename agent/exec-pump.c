/* The pump of an exec (see exec.c for the shape of an exec): one thread per exec,
 * the only reader of the child's output.  It cuts the output into chunks on UTF-8
 * character boundaries, keeps the buffered result (capped per stream), appends
 * numbered NDJSON lines to the exec's bounded chunk ring, writes the background
 * log, feeds stdin, and runs the timeout (TERM to the group, KILL after a grace).
 *
 * The leader's exit is seen by the main loop (exec_reaped); the pump then drains
 * what is left in the pipes for a moment and declares the exec done, so the exit
 * event always comes after the output.  Grandchildren that still hold the pipes
 * (a server started with `&`) keep being drained, so they never die of SIGPIPE. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/events.h"
#include "agent/agent.h"
#include "agent/exec-int.h"
#include "agent/exec.h"
#include "lib/b64.h"
#include "lib/buf.h"
#include "lib/log.h"
#include "lib/utf8.h"
#include "lib/util.h"

#define DRAIN_MS	100		/* after the leader exits: wait this long for EOF */
#define READ_CHUNK	65536

static const char *const stream_name[2] = { "stdout", "stderr" };

void
ring_drop_oldest(struct exec *e)
{
	struct chunk *c = &e->chunks[e->chead];

	e->retained -= c->len;
	free(c->line);
	e->chead = (e->chead + 1) % e->ccap;
	e->ccount--;
}

struct pump {
	struct exec	*e;
	int		 fd[2];		/* stdout, stderr read ends (-1 once at EOF) */
	int		 in_fd;		/* stdin write end, -1 when done */
	const char	*in_data;	/* owned via in_owner */
	char		*in_owner;
	size_t		 in_len, in_off;
	int		 log_fd;	/* background: where the output goes */
	int		 log_failed;
	int		 keep_fd[2];	/* the kept output's files, -1: none (yet) */
	int		 keep_off[2];	/* no more goes into them */
	char		 carry[2][4];	/* an incomplete UTF-8 character held back */
	size_t		 ncarry[2];
	size_t		 used[2];	/* bytes kept per stream, for the cap */
	uint64_t	 seq;		/* seq of the next chunk */
	int64_t		 term_at;	/* when TERM was sent, 0: not yet */
	int		 killed;
	int64_t		 drain_until;
	char		 rbuf[READ_CHUNK + 4];
};

void
pump_close(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

struct pump *
pump_new(struct exec *e, int out_fd, int err_fd, int in_fd, const char *in, int log_fd)
{
	struct pump *p = xcalloc(1, sizeof *p);

	p->e = e;
	p->fd[0] = out_fd;
	p->fd[1] = err_fd;
	p->in_fd = in_fd;
	if (in != NULL) {
		p->in_owner = xstrdup(in);
		p->in_data = p->in_owner;
		p->in_len = strlen(in);
	}
	p->log_fd = log_fd;
	p->keep_fd[0] = p->keep_fd[1] = -1;
	p->keep_off[0] = p->keep_off[1] = e->mode == MODE_BACKGROUND;
	p->seq = 1;
	pthread_mutex_lock(&ex_mu);
	exec_ref_locked(e);		/* the pump's */
	pthread_mutex_unlock(&ex_mu);
	return p;
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

/* n bytes of stream s into its kept file, as far as there is room; the file is
 * made at the first byte. */
static void
pump_keep(struct pump *p, int s, const char *d, size_t n)
{
	static const char *const ext[2] = { "stdout", "stderr" };
	struct exec *e = p->e;
	char err[256];
	size_t k;

	if (p->keep_off[s])
		return;
	if (p->keep_fd[s] < 0) {
		char *path;
		uint64_t fs = 0;
		if ((p->keep_fd[s] = spawn_open_file(e->id, ext[s], &path, &fs, err,
		    sizeof err)) < 0) {
			log_warnx("exec %s: its output is not kept: %s", e->id, err);
			p->keep_off[s] = 1;
			return;
		}
		keep_set_cap(fs);
		pthread_mutex_lock(&ex_mu);
		e->keep_path[s] = path;
		pthread_mutex_unlock(&ex_mu);
	}
	pthread_mutex_lock(&ex_mu);
	/* Removed to make room (a later exec's output): this one keeps no more. */
	k = e->keep_path[s] != NULL ? keep_reserve(e, s, n) : 0;
	pthread_mutex_unlock(&ex_mu);
	for (size_t done = 0; done < k;) {
		ssize_t w = write(p->keep_fd[s], d + done, k - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {	/* ENOSPC: /tmp is full */
			log_warn("exec %s: cannot keep all of its %s", e->id, ext[s]);
			keep_unreserve(e, s, k - done);
			k = 0;
			break;
		}
		done += (size_t)w;
	}
	if (k < n) {
		p->keep_off[s] = 1;
		pump_close(&p->keep_fd[s]);
	}
}

/* n bytes of stream s, cut on a character boundary unless binary. */
static void
pump_emit(struct pump *p, int s, const char *d, size_t n)
{
	struct exec *e = p->e;
	struct buf line;

	if (n == 0)
		return;
	pthread_mutex_lock(&ex_mu);
	e->bytes[s] += n;
	pthread_mutex_unlock(&ex_mu);
	pump_keep(p, s, d, n);
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
		/* What comes after the exit is not the command's result: the kept
		 * files end here. */
		p->keep_off[s] = 1;
		pump_close(&p->keep_fd[s]);
	}
	/* A stopped exec's leftovers (grandchildren in the group) go too. */
	if (p->term_at && !p->killed)
		kill(-e->pid, SIGKILL);

	pthread_mutex_lock(&ex_mu);
	if (WIFEXITED(e->status))
		e->exit_code = WEXITSTATUS(e->status);
	else if (WIFSIGNALED(e->status))
		e->signo = WTERMSIG(e->status);
	/* Killed (or a shell reporting its child killed, 128+9) while the
	 * sandbox's OOM-kill count rose, and not by us: the OOM killer's.  Another
	 * command's kill -9 at the same moment would be taken for one too. */
	if ((e->signo == SIGKILL || e->exit_code == 128 + SIGKILL) && e->term == TERM_NONE &&
	    e->oom_base >= 0) {
		int64_t n = agent_oom_kills();
		e->oom = n > e->oom_base;
	}
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
	cJSON_AddStringToObject(o, "reason", exec_reason(e));
	keep_json_locked(e, o);
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
	cJSON_AddStringToObject(ev, "reason", exec_reason(e));
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&ex_mu);

	events_emit("exec.exited", ev);
	journal_trim();
}

void *
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
