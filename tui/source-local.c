/* The console's source with the core in this process (--standalone).  Sandboxes
 * come from core_list, refreshed when the registry file changes (inotify: other
 * processes create and destroy sandboxes too) and every five seconds (a full
 * reconcile of 200 sandboxes each second cost 2.5% of a core; see
 * bench/40-console.sh); activity from
 * the core's events; the selected sandbox's execs from its agent's journal and
 * event stream, so a command run by anyone (the CLI, an agent, this console)
 * shows up with its output.  Actions are the MCP tools an agent calls, run
 * locally: a keypress and an agent's tools/call end in the same core function. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

#include "core/core-follow.h"
#include "core/core.h"
#include "core/log.h"
#include "core/paths.h"
#include "core/util.h"
#include "mcp/mcp.h"
#include "mcp/tool.h"
#include "tui/source-int.h"

#define FOLLOW_MAX	48	/* execs followed at once in the selected sandbox */
#define RECENT_EXECS	16	/* exited execs whose output is loaded on select */
#define LIST_EVERY_MS	5000	/* a full reconcile; changes come by inotify */
#define LIST_GAP_MS	150	/* registry writes closer than this are one refresh */

struct follower {
	pthread_t	 t;
	struct local	*l;
	char		 sandbox[32];
	char		 exec[32];
};

struct local {
	struct source	*src;
	struct core	*core;
	int		 sub;
	int		 stop[2];	/* pipe: the poller's stop */
	int		 ino;
	pthread_t	 poller, watcher;

	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;
	char		 sel[32];
	unsigned	 gen;
	int		 quit;
	volatile int	 wstop;		/* the current watch round ends */

	/* The watcher's followers of this round (the watcher thread only). */
	struct follower	*fol[FOLLOW_MAX];
	size_t		 nfol;
	char		 known[FOLLOW_MAX * 4][32];
	size_t		 nknown;
};

/* --- sandboxes and forwards --------------------------------------------- */

static void
post_list(struct local *l)
{
	struct sandbox **v;
	struct core_forward *f;
	struct sbx_err e;
	size_t n;
	cJSON *m, *a;

	if (core_list(l->core, &v, &n, &e) == 0) {
		m = cJSON_CreateObject();
		a = cJSON_AddArrayToObject(m, "sandboxes");
		for (size_t i = 0; i < n; i++)
			cJSON_AddItemToArray(a, sandbox_to_json(v[i], 0));
		core_list_free(v, n);
		source_post(l->src, "list", m);
	} else {
		log_warnx("console: %s", e.msg);
	}
	if (core_forward_list(l->core, NULL, &f, &n, &e) == 0) {
		m = cJSON_CreateObject();
		a = cJSON_AddArrayToObject(m, "forwards");
		for (size_t i = 0; i < n; i++) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "sandbox", f[i].sandbox);
			cJSON_AddStringToObject(o, "bind", f[i].bind);
			cJSON_AddNumberToObject(o, "local", f[i].local_port);
			cJSON_AddNumberToObject(o, "remote", f[i].remote_port);
			cJSON_AddNumberToObject(o, "conns", (double)f[i].conns_now);
			cJSON_AddNumberToObject(o, "bytes_in", (double)f[i].bytes_in);
			cJSON_AddNumberToObject(o, "bytes_out", (double)f[i].bytes_out);
			cJSON_AddBoolToObject(o, "live", f[i].live);
			cJSON_AddItemToArray(a, o);
		}
		free(f);
		source_post(l->src, "forwards", m);
	}
}

/* Refresh at once when the registry file is replaced (another process created
 * or destroyed a sandbox), and every few seconds to catch what died. */
static void *
poller(void *arg)
{
	struct local *l = arg;
	char buf[4096] __attribute__((aligned(8)));
	int64_t next = 0, pending = 0;

	for (;;) {
		struct pollfd p[2] = { { l->stop[0], POLLIN, 0 }, { l->ino, POLLIN, 0 } };
		int64_t now = now_ms(), wait = next - now;
		if (pending && pending - now < wait)
			wait = pending - now;
		if (wait < 0)
			wait = 0;
		if (poll(p, l->ino >= 0 ? 2 : 1, (int)wait) < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			break;
		if (l->ino >= 0 && (p[1].revents & POLLIN)) {
			ssize_t n = read(l->ino, buf, sizeof buf);
			for (ssize_t off = 0; off < n;) {
				const struct inotify_event *ie = (const void *)(buf + off);
				if (ie->len > 0 && strcmp(ie->name, "sandboxes.json") == 0 &&
				    pending == 0)
					pending = now_ms() + 20;
				off += (ssize_t)(sizeof *ie + ie->len);
			}
		}
		now = now_ms();
		if (now >= next || (pending && now >= pending)) {
			post_list(l);
			/* Our own core_list may write the registry: what it
			 * wrote is already in the list just posted. */
			next = now_ms() + LIST_EVERY_MS;
			pending = 0;
			while (l->ino >= 0 && read(l->ino, buf, sizeof buf) > 0)
				;
		}
	}
	return NULL;
}

/* --- events ------------------------------------------------------------- */

static void
on_event(const struct core_event *ev, void *arg)
{
	struct local *l = arg;
	cJSON *m;

	/* Exec output reaches the console through the journal (every exec,
	 * whoever runs it); the core's copy of its own would come twice. */
	if (strcmp(ev->type, "exec.output") == 0)
		return;
	m = cJSON_CreateObject();
	cJSON_AddNumberToObject(m, "seq", (double)ev->seq);
	cJSON_AddNumberToObject(m, "time_ms", (double)ev->time_ms);
	cJSON_AddStringToObject(m, "type", ev->type);
	if (ev->sandbox)
		cJSON_AddStringToObject(m, "sandbox", ev->sandbox);
	if (ev->data)
		cJSON_AddItemToObject(m, "data", cJSON_Duplicate(ev->data, 1));
	source_post(l->src, "event", m);
}

/* --- the selected sandbox's execs ---------------------------------------- */

static int
follow_line(const cJSON *line, void *arg)
{
	struct follower *f = arg;
	const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(line, "type"));
	cJSON *m;

	if (type == NULL)
		return 0;
	if (strcmp(type, "stdout") == 0 || strcmp(type, "stderr") == 0) {
		const char *d = cJSON_GetStringValue(cJSON_GetObjectItem(line, "data"));
		m = cJSON_CreateObject();
		cJSON_AddStringToObject(m, "sandbox", f->sandbox);
		cJSON_AddStringToObject(m, "exec", f->exec);
		/* Bytes that are not UTF-8 are shown as a mark, not as garbage. */
		cJSON_AddStringToObject(m, "data", d ? d : "\xe2\x80\xa6(binary output)\n");
		source_post(f->l->src, "output", m);
	} else if (strcmp(type, "exit") == 0) {
		m = cJSON_Duplicate(line, 1);
		cJSON_DeleteItemFromObject(m, "type");
		cJSON_AddStringToObject(m, "sandbox", f->sandbox);
		cJSON_AddStringToObject(m, "exec", f->exec);
		source_post(f->l->src, "exit", m);
	} else if (strcmp(type, "gap") == 0) {
		m = cJSON_CreateObject();
		cJSON_AddStringToObject(m, "sandbox", f->sandbox);
		cJSON_AddStringToObject(m, "exec", f->exec);
		cJSON_AddStringToObject(m, "data", "\xe2\x80\xa6(earlier output dropped)\n");
		source_post(f->l->src, "output", m);
	}
	return 0;
}

static void *
follower(void *arg)
{
	struct follower *f = arg;
	struct sbx_err e;

	if (core_exec_follow(f->l->core, f->sandbox, f->exec, 1, follow_line, f,
	    &f->l->wstop, &e) < 0)
		log_debug("console: follow %s %s: %s", f->sandbox, f->exec, e.msg);
	return NULL;
}

static int
known(struct local *l, const char *id)
{
	for (size_t i = 0; i < l->nknown; i++)
		if (strcmp(l->known[i], id) == 0)
			return 1;
	if (l->nknown < ARRAY_SIZE(l->known))
		snprintf(l->known[l->nknown++], sizeof l->known[0], "%s", id);
	return 0;
}

static void
follow_exec(struct local *l, const char *sandbox, const char *id)
{
	struct follower *f;

	if (l->nfol >= FOLLOW_MAX)
		return;
	f = xcalloc(1, sizeof *f);
	f->l = l;
	snprintf(f->sandbox, sizeof f->sandbox, "%s", sandbox);
	snprintf(f->exec, sizeof f->exec, "%s", id);
	if (pthread_create(&f->t, NULL, follower, f) != 0) {
		free(f);
		return;
	}
	l->fol[l->nfol++] = f;
}

static void
post_exec(struct local *l, const char *sandbox, const cJSON *x)
{
	cJSON *m = cJSON_Duplicate(x, 1);

	cJSON_DeleteItemFromObject(m, "sandbox");
	cJSON_AddStringToObject(m, "sandbox", sandbox);
	source_post(l->src, "exec", m);
}

struct round {
	struct local	*l;
	const char	*sandbox;
};

static int
agent_event(const cJSON *line, void *arg)
{
	struct round *r = arg;
	const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(line, "type"));
	const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(line, "id"));

	if (type == NULL || id == NULL || strcmp(type, "exec.started") != 0 ||
	    known(r->l, id))
		return 0;
	cJSON *x = cJSON_Duplicate(line, 1);
	cJSON_DeleteItemFromObject(x, "type");
	cJSON_AddStringToObject(x, "state", "running");
	cJSON_AddNumberToObject(x, "started_ms",
	    cJSON_GetNumberValue(cJSON_GetObjectItem(line, "ts_ms")));
	post_exec(r->l, r->sandbox, x);
	cJSON_Delete(x);
	follow_exec(r->l, r->sandbox, id);
	return 0;
}

/* One round of watching sandbox id, until the selection changes. */
static int
watch_round(struct local *l, const char *id)
{
	cJSON *execs = NULL, *x;
	struct round r = { l, id };
	struct sbx_err e;
	int n, skip;

	l->nknown = 0;
	if (core_execs(l->core, id, &execs, &e) < 0)
		return -1;
	/* Every exec already in the journal is known (so the event replay below
	 * does not start it again); the recent ones are shown and followed. */
	n = cJSON_GetArraySize(execs);
	skip = n > RECENT_EXECS ? n - RECENT_EXECS : 0;
	cJSON_ArrayForEach(x, execs) {
		const char *xid = cJSON_GetStringValue(cJSON_GetObjectItem(x, "id"));
		if (xid == NULL)
			continue;
		known(l, xid);
		if (skip-- > 0)
			continue;
		post_exec(l, id, x);
		follow_exec(l, id, xid);
	}
	cJSON_Delete(execs);
	return core_agent_events(l->core, id, 1, agent_event, &r, &l->wstop, &e);
}

static void *
watcher(void *arg)
{
	struct local *l = arg;
	unsigned seen = 0;
	char id[32];

	pthread_mutex_lock(&l->mu);
	for (;;) {
		while (!l->quit && seen == l->gen)
			pthread_cond_wait(&l->cv, &l->mu);
		if (l->quit)
			break;
		seen = l->gen;
		snprintf(id, sizeof id, "%s", l->sel);
		l->wstop = 0;
		pthread_mutex_unlock(&l->mu);
		int rc = id[0] ? watch_round(l, id) : 0;
		/* The round is over (new selection, or the stream broke):
		 * its followers stop within a second. */
		l->wstop = 1;
		for (size_t i = 0; i < l->nfol; i++) {
			pthread_join(l->fol[i]->t, NULL);
			free(l->fol[i]);
		}
		l->nfol = 0;
		pthread_mutex_lock(&l->mu);
		if (rc < 0 && seen == l->gen && !l->quit) {
			/* Not running yet, or its agent went away: look again. */
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 2;
			pthread_cond_timedwait(&l->cv, &l->mu, &ts);
			if (seen == l->gen)
				seen--;
		}
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

static void
local_select(struct source *s, const char *id)
{
	struct local *l = s->impl;

	pthread_mutex_lock(&l->mu);
	if (strcmp(l->sel, id ? id : "") != 0) {
		snprintf(l->sel, sizeof l->sel, "%s", id ? id : "");
		l->gen++;
		l->wstop = 1;
		pthread_cond_broadcast(&l->cv);
	}
	pthread_mutex_unlock(&l->mu);
}

/* --- actions ------------------------------------------------------------ */

static int
local_call(struct source *s, const char *tool, cJSON *args, cJSON **result,
    struct sbx_err *e)
{
	struct local *l = s->impl;
	const struct mcp_tool *t = mcp_tool_find(tool);
	const char *sb = cJSON_GetStringValue(cJSON_GetObjectItem(args, "sandbox_id"));
	struct mcp_call *call;
	cJSON *res = NULL, *d;
	int64_t t0 = now_ms();
	int rc;

	if (result)
		*result = NULL;
	if (t == NULL) {
		cJSON_Delete(args);
		return sbx_error(e, SBX_EINVAL, NULL, "no tool '%s'", tool);
	}
	/* The journal of tool calls shows the operator's too. */
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "tool", tool);
	cJSON_AddStringToObject(d, "client", "console");
	cJSON_AddStringToObject(d, "origin", "console");
	cJSON_AddItemToObject(d, "arguments", cJSON_Duplicate(args, 1));
	core_events_emit(l->core, "tool.started", sb, d);
	call = mcp_call_local_new(l->core, "console");
	rc = t->run(call, args, &res, e);
	mcp_call_local_free(call);
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "tool", tool);
	cJSON_AddStringToObject(d, "client", "console");
	cJSON_AddNumberToObject(d, "duration_ms", (double)(now_ms() - t0));
	cJSON_AddStringToObject(d, "outcome", rc == 0 ? "ok" : "error");
	if (rc < 0)
		cJSON_AddStringToObject(d, "message", e->msg);
	core_events_emit(l->core, "tool.finished", sb, d);
	cJSON_Delete(args);
	if (rc == 0 && result)
		*result = res;
	else
		cJSON_Delete(res);
	return rc < 0 ? -1 : 0;
}

static char *
local_log_path(struct source *s, const char *id)
{
	struct local *l = s->impl;
	struct sbx_err e;

	return core_log_path(l->core, id, "agent", &e);
}

static int
local_pty_open(struct source *s, const char *id, int cols, int rows, struct sbx_err *e)
{
	struct local *l = s->impl;

	return core_pty_open(l->core, id, cols, rows, NULL, "human", e);
}

static void
local_free(struct source *s)
{
	struct local *l = s->impl;

	pthread_mutex_lock(&l->mu);
	l->quit = 1;
	l->wstop = 1;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
	if (write(l->stop[1], "q", 1) < 0) {
		/* The pipe is ours and empty. */
	}
	pthread_join(l->watcher, NULL);
	pthread_join(l->poller, NULL);
	core_events_unsubscribe(l->core, l->sub);
	source_fini(s);
	/* Forwards started from the console end with it (standalone). */
	core_free(l->core);
	close(l->stop[0]);
	close(l->stop[1]);
	if (l->ino >= 0)
		close(l->ino);
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->cv);
	free(l);
}

static const struct source_ops local_ops = {
	.kind = "standalone",
	.free = local_free,
	.select = local_select,
	.log_path = local_log_path,
	.call = local_call,
	.pty_open = local_pty_open,
};

struct source *
source_standalone_new(struct config *cfg, struct sbx_err *e)
{
	struct source *s = xcalloc(1, sizeof *s);
	struct local *l = xcalloc(1, sizeof *l);
	_cleanup_free_ char *dir = NULL;

	source_init(s, &local_ops, l);
	l->src = s;
	l->core = core_new(cfg);
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cv, NULL);
	if (pipe2(l->stop, O_CLOEXEC) < 0)
		fatal("pipe: out of descriptors");
	l->ino = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	dir = paths_ensure(PATHS_STATE, e);
	if (dir == NULL) {
		l->ino >= 0 ? close(l->ino) : 0;
		l->ino = -1;
	} else if (l->ino >= 0 &&
	    inotify_add_watch(l->ino, dir, IN_CLOSE_WRITE | IN_MOVED_TO) < 0) {
		log_warn("console: cannot watch %s (the list refreshes every second)", dir);
		close(l->ino);
		l->ino = -1;
	}
	l->sub = core_events_subscribe(l->core, on_event, l);
	if (pthread_create(&l->poller, NULL, poller, l) != 0 ||
	    pthread_create(&l->watcher, NULL, watcher, l) != 0)
		fatal("cannot start the console's threads");
	return s;
}
