/* The console's source with the core in this process (--standalone).  Sandboxes
 * come from core_list, refreshed when the registry file changes (inotify: other
 * processes create and destroy sandboxes too) and every five seconds (a full
 * reconcile of 200 sandboxes each second cost 2.5% of a core; see
 * bench/40-console.sh); activity from
 * the core's events; the selected sandbox's execs from its agent's journal and
 * event stream (core-watch.h), so a command run by anyone (the CLI, an agent, this console)
 * shows up with its output.  Actions are the MCP tools an agent calls, run
 * locally: a keypress and an agent's tools/call end in the same core function.
 * The network policy is core/net.h's functions, called here. */
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

#include "core/core-watch.h"
#include "core/core-watch.h"
#include "core/core.h"
#include "core/net.h"
#include "lib/log.h"
#include "core/paths.h"
#include "lib/util.h"
#include "mcp/mcp.h"
#include "mcp/tool.h"
#include "tui/source-int.h"

#define LIST_EVERY_MS	3000	/* a full reconcile with live use; changes come by inotify */
#define LIST_GAP_MS	150	/* registry writes closer than this are one refresh */

struct local {
	struct source	*src;
	struct core	*core;
	int		 sub;
	int		 stop[2];	/* pipe to the poller: q stop, n network asks */
	int		 ino;
	pthread_t	 poller;
	struct core_watch *watch;	/* the selected sandbox's execs */
	/* The calls under way, cancelled when the console quits: a diff or a
	 * command of the operator's does not hold the quit up. */
	pthread_mutex_t	 calls_mu;
	struct running	*calls;
	int		 quitting;
};

struct running {
	struct mcp_call	*call;
	struct running	*next;
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
		cJSON_AddNumberToObject(m, "orphans", core_orphans(l->core));
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
			cJSON_AddNumberToObject(o, "failures", (double)f[i].failures);
			cJSON_AddStringToObject(o, "last_error", f[i].last_error);
			cJSON_AddItemToArray(a, o);
		}
		free(f);
		source_post(l->src, "forwards", m);
	}
}

static void
post_pending(struct local *l)
{
	struct sbx_err e;
	cJSON *a, *m;

	if (core_net_pending(l->core, NULL, &a, &e) < 0)
		return;
	m = cJSON_CreateObject();
	cJSON_AddItemToObject(m, "pending", a);
	source_post(l->src, "net_pending", m);
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
		if (p[0].revents) {
			char c[16];
			ssize_t k = read(l->stop[0], c, sizeof c);
			if (k <= 0 || memchr(c, 'q', (size_t)k) != NULL)
				break;
			post_pending(l);
		}
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
			if (next == 0)
				post_pending(l);
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
	/* What waits changed: the poller reads it again (not here, on the
	 * core's event thread). */
	if (strcmp(ev->type, "net.ask") == 0 || strcmp(ev->type, "net.decided") == 0 ||
	    (strcmp(ev->type, "net.connection") == 0 && strncmp(cJSON_GetStringValue(
	    cJSON_GetObjectItem(ev->data, "rule")) ?: "", "operator", 8) == 0)) {
		if (write(l->stop[1], "n", 1) < 0) {
			/* A full pipe has a wake-up in it already. */
		}
	}
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

static void
on_watch(const char *kind, cJSON *msg, void *arg)
{
	struct local *l = arg;

	source_post(l->src, kind, msg);
}

static void
local_select(struct source *s, const char *id)
{
	struct local *l = s->impl;

	core_watch_select(l->watch, id);
	if (id != NULL && *id) {
		cJSON *p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "sandbox", id);
		cJSON_AddNumberToObject(p, "recent", NET_RECENT);
		source_net_async(s, "show", p);
	}
}

static int
local_net(struct source *s, const char *verb, const cJSON *params, cJSON **result,
    struct sbx_err *e)
{
	struct local *l = s->impl;
	const char *key = cJSON_GetStringValue(cJSON_GetObjectItem(params, "sandbox"));
	const char *a = cJSON_GetStringValue(cJSON_GetObjectItem(params, "req"));
	const char *b = cJSON_GetStringValue(cJSON_GetObjectItem(params, "answer"));
	cJSON *arr;

	*result = NULL;
	if (strcmp(verb, "pending") == 0) {
		if (core_net_pending(l->core, key, &arr, e) < 0)
			return -1;
		*result = cJSON_CreateObject();
		cJSON_AddItemToObject(*result, "pending", arr);
		return 0;
	}
	if (key == NULL)
		return sbx_error(e, SBX_EINVAL, NULL, "which sandbox?");
	if (strcmp(verb, "show") == 0)
		return core_net_show(l->core, key, (int)cJSON_GetNumberValue(cJSON_GetObjectItem(
		    params, "recent")), result, e);
	if (strcmp(verb, "decide") == 0) {
		if (a == NULL || b == NULL)
			return sbx_error(e, SBX_EINVAL, NULL, "decide needs req and answer");
		return core_net_decide(l->core, key, a, b, "console", e);
	}
	if (strcmp(verb, "change") == 0) {
		a = cJSON_GetStringValue(cJSON_GetObjectItem(params, "verb"));
		b = cJSON_GetStringValue(cJSON_GetObjectItem(params, "entry"));
		if (a == NULL || b == NULL)
			return sbx_error(e, SBX_EINVAL, NULL, "change needs verb and entry");
		return core_net_change(l->core, key, a, b, e);
	}
	return sbx_error(e, SBX_EINVAL, NULL, "no network verb '%s'", verb);
}

/* --- actions ------------------------------------------------------------ */

static void
running_add(struct local *l, struct mcp_call *call)
{
	struct running *r = xmalloc(sizeof *r);

	pthread_mutex_lock(&l->calls_mu);
	r->call = call;
	r->next = l->calls;
	l->calls = r;
	if (l->quitting)
		mcp_call_local_cancel(call);
	pthread_mutex_unlock(&l->calls_mu);
}

static void
running_remove(struct local *l, struct mcp_call *call)
{
	pthread_mutex_lock(&l->calls_mu);
	for (struct running **p = &l->calls; *p != NULL; p = &(*p)->next)
		if ((*p)->call == call) {
			struct running *r = *p;
			*p = r->next;
			free(r);
			break;
		}
	pthread_mutex_unlock(&l->calls_mu);
}

static void
running_cancel_all(struct local *l)
{
	pthread_mutex_lock(&l->calls_mu);
	l->quitting = 1;
	for (struct running *r = l->calls; r != NULL; r = r->next)
		mcp_call_local_cancel(r->call);
	pthread_mutex_unlock(&l->calls_mu);
}

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
	running_add(l, call);
	rc = t->run(call, args, &res, e);
	running_remove(l, call);
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

	if (write(l->stop[1], "q", 1) < 0) {
		/* The pipe is ours and empty. */
	}
	core_watch_free(l->watch);
	pthread_join(l->poller, NULL);
	core_events_unsubscribe(l->core, l->sub);
	running_cancel_all(l);
	source_fini(s);
	/* Forwards started from the console end with it (standalone). */
	core_free(l->core);
	close(l->stop[0]);
	close(l->stop[1]);
	if (l->ino >= 0)
		close(l->ino);
	pthread_mutex_destroy(&l->calls_mu);
	free(l);
}

static const struct source_ops local_ops = {
	.kind = "standalone",
	.free = local_free,
	.select = local_select,
	.log_path = local_log_path,
	.call = local_call,
	.net = local_net,
	.pty_open = local_pty_open,
};

struct source *
source_standalone_new(struct config *cfg, struct sbx_err *e)
{
	struct source *s = xcalloc(1, sizeof *s);
	struct local *l = xcalloc(1, sizeof *l);
	_cleanup_free_ char *dir = NULL;

	source_init(s, &local_ops, l);
	pthread_mutex_init(&l->calls_mu, NULL);
	l->src = s;
	l->core = core_new(cfg);
	core_runs_track(l->core, 1);
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
	l->watch = core_watch_new(l->core, on_watch, l);
	if (pthread_create(&l->poller, NULL, poller, l) != 0)
		fatal("cannot start the console's threads");
	return s;
}
