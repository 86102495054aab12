/* The console's source through the core server (core/client/client.h,
 * docs/core-protocol.md).  A refresher thread sets the session up (the MCP
 * initialize its tools/call needs, the event subscription, the follow of the
 * selected sandbox) and fetches the state: sbxtop/sandboxes, forward_list,
 * clients and approvals, at once on every sandbox, forward, exec and approval
 * event and every two seconds anyway.  Activity comes from the events; the
 * selected sandbox's execs and output from sbxtop/follow's sbxtop/exec
 * notifications, its log from sbxtop/logs; a shell is a connection of its own
 * (sbxtop/pty); the network policy through sbxtop/net_* (the selected
 * sandbox's on each follow, what waits at setup and after each net.ask,
 * net.decided and operator's verdict); actions are tools/call as an MCP
 * client's are, through
 * mcp/rpc-client.h, which knows what those messages look like.  When the core
 * dies, the client reconnects to a new one and the refresher sets it up
 * again. */
#include <poll.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/client/client.h"
#include "lib/log.h"
#include "lib/util.h"
#include "mcp/rpc-client.h"
#include "tui/source-int.h"

#define REFRESH_MS 2000
#define LOG_LINES 10000		/* the model's MODEL_LOG_LINES */

struct remote {
	struct source	*src;
	struct client	*cl;
	int		 kick[2];	/* pipe: r refresh, s select, d disconnected, n network
					 * asks, q stop */
	pthread_t	 refresher;
	pthread_mutex_t	 mu;
	char		 sel[32];
	int		 setup;		/* the session needs setting up (again) */
	int		 refollow;	/* the selection changed */
	int		 connects;	/* sessions set up so far (the refresher's) */
	char		 mode[16];	/* the approval mode last seen (under mu) */
	int		 pid;		/* the core server set up last (under mu) */
};

static void
kick(struct remote *r, char c)
{
	if (write(r->kick[1], &c, 1) < 0) {
		/* A full pipe already asks for a refresh. */
	}
}

/* Approval ids are numbers on the wire and strings in the console's model. */
static void
id_to_string(cJSON *o)
{
	cJSON *id = cJSON_GetObjectItem(o, "id");
	char buf[32];

	if (cJSON_IsNumber(id)) {
		snprintf(buf, sizeof buf, "%.0f", id->valuedouble);
		cJSON_ReplaceItemInObject(o, "id", cJSON_CreateString(buf));
	}
}

/* --- the state ------------------------------------------------------------ */

static void
post_state(struct remote *r)
{
	cJSON *res = NULL, *m, *a, *x;
	struct sbx_err e;
	int n;

	if (client_call(r->cl, "sbxtop/sandboxes", NULL, &res, &e) == 0) {
		m = cJSON_CreateObject();
		cJSON_AddItemToObject(m, "sandboxes", cJSON_DetachItemFromObject(res,
		    "sandboxes"));
		if (cJSON_IsNumber(cJSON_GetObjectItem(res, "orphans")))
			cJSON_AddNumberToObject(m, "orphans",
			    cJSON_GetObjectItem(res, "orphans")->valuedouble);
		source_post(r->src, "list", m);
	} else {
		log_debug("console: sbxtop/sandboxes: %s", e.msg);
	}
	cJSON_Delete(res);
	res = NULL;
	if (client_call(r->cl, "sbxtop/forward_list", NULL, &res, &e) == 0) {
		m = cJSON_CreateObject();
		a = cJSON_AddArrayToObject(m, "forwards");
		cJSON_ArrayForEach(x, cJSON_GetObjectItem(res, "forwards")) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "sandbox", cJSON_GetStringValue(
			    cJSON_GetObjectItem(x, "sandbox")) ?: "");
			cJSON_AddStringToObject(o, "bind", cJSON_GetStringValue(
			    cJSON_GetObjectItem(x, "bind")) ?: "");
			cJSON_AddNumberToObject(o, "local", cJSON_GetNumberValue(
			    cJSON_GetObjectItem(x, "local_port")));
			cJSON_AddNumberToObject(o, "remote", cJSON_GetNumberValue(
			    cJSON_GetObjectItem(x, "remote_port")));
			cJSON_AddNumberToObject(o, "conns", cJSON_GetNumberValue(
			    cJSON_GetObjectItem(x, "conns")));
			cJSON_AddNumberToObject(o, "bytes_in", cJSON_GetNumberValue(
			    cJSON_GetObjectItem(x, "bytes_in")));
			cJSON_AddNumberToObject(o, "bytes_out", cJSON_GetNumberValue(
			    cJSON_GetObjectItem(x, "bytes_out")));
			cJSON_AddBoolToObject(o, "live", cJSON_IsTrue(cJSON_GetObjectItem(x,
			    "live")));
			cJSON_AddNumberToObject(o, "failures", cJSON_GetNumberValue(
			    cJSON_GetObjectItem(x, "failures")) > 0 ? cJSON_GetNumberValue(
			    cJSON_GetObjectItem(x, "failures")) : 0);
			const char *le = cJSON_GetStringValue(cJSON_GetObjectItem(x, "last_error"));
			cJSON_AddStringToObject(o, "last_error", le ? le : "");
			cJSON_AddItemToArray(a, o);
		}
		source_post(r->src, "forwards", m);
	}
	cJSON_Delete(res);
	res = NULL;
	if (client_call(r->cl, "sbxtop/clients", NULL, &res, &e) == 0) {
		n = 0;
		cJSON_ArrayForEach(x, cJSON_GetObjectItem(res, "clients")) {
			const char *k = cJSON_GetStringValue(cJSON_GetObjectItem(x, "kind"));
			double pid = cJSON_GetNumberValue(cJSON_GetObjectItem(x, "pid"));
			/* Live sessions only: a bridge whose process has gone is over,
			 * whatever the server has not yet noticed. */
			n += k != NULL && strcmp(k, "mcp") == 0 &&
			    (!(pid > 0) || kill((pid_t)pid, 0) == 0 || errno == EPERM);
		}
		m = cJSON_CreateObject();
		cJSON_AddNumberToObject(m, "mcp", n);
		source_post(r->src, "sessions", m);
	}
	cJSON_Delete(res);
	res = NULL;
	if (client_call(r->cl, "sbxtop/approvals", NULL, &res, &e) == 0) {
		m = cJSON_CreateObject();
		a = cJSON_DetachItemFromObject(res, "approvals");
		if (!cJSON_IsArray(a)) {
			cJSON_Delete(a);
			a = cJSON_CreateArray();
		}
		cJSON_ArrayForEach(x, a)
			id_to_string(x);
		cJSON_AddItemToObject(m, "approvals", a);
		/* A call made after the core died reaches a new one, which
		 * has not been set up yet: its mode is the configured one,
		 * not the operator's, and must not replace it. */
		const char *mode = cJSON_GetStringValue(cJSON_GetObjectItem(res, "mode"));
		int pid = client_server_pid(r->cl);
		pthread_mutex_lock(&r->mu);
		if (r->setup || pid != r->pid)
			mode = NULL;
		else if (mode != NULL)
			snprintf(r->mode, sizeof r->mode, "%s", mode);
		pthread_mutex_unlock(&r->mu);
		if (mode != NULL)
			cJSON_AddStringToObject(m, "mode", mode);
		source_post(r->src, "approvals", m);
	}
	cJSON_Delete(res);
}

/* What waits for the operator in every sandbox's network policy. */
static void
post_pending(struct remote *r)
{
	cJSON *res = NULL, *m;
	struct sbx_err e;

	if (client_call(r->cl, "sbxtop/net_pending", NULL, &res, &e) < 0) {
		log_debug("console: sbxtop/net_pending: %s", e.msg);
		return;
	}
	m = cJSON_CreateObject();
	cJSON_AddItemToObject(m, "pending", cJSON_DetachItemFromObject(res, "pending"));
	cJSON_Delete(res);
	source_post(r->src, "net_pending", m);
}

/* A network event that changes what waits: an ask, its answer, or the
 * connection an operator's answer (or its timeout) decided. */
static int
net_ask_changed(const char *type, const cJSON *ev)
{
	const char *rule = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(ev,
	    "data"), "rule"));

	return strcmp(type, "net.ask") == 0 || strcmp(type, "net.decided") == 0 ||
	    (strcmp(type, "net.connection") == 0 && rule && strncmp(rule, "operator", 8) == 0);
}

/* --- events and the followed sandbox ---------------------------------------- */

static void
on_event(const cJSON *ev, void *arg)
{
	struct remote *r = arg;
	const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(ev, "type"));
	cJSON *m;

	if (type == NULL)
		return;
	if (strncmp(type, "sandbox.", 8) == 0 || strncmp(type, "forward.", 8) == 0 ||
	    strncmp(type, "approval.", 9) == 0 || strcmp(type, "events.lost") == 0)
		kick(r, 'r');
	if (net_ask_changed(type, ev))
		kick(r, 'n');
	/* Output reaches the console through sbxtop/follow (every exec of the
	 * selected sandbox, whoever runs it); the core's copy would come twice. */
	if (strcmp(type, "exec.output") == 0)
		return;
	m = cJSON_Duplicate(ev, 1);
	if (strncmp(type, "approval.", 9) == 0)
		id_to_string(cJSON_GetObjectItem(m, "data"));
	source_post(r->src, "event", m);
}

static void
on_notify(const char *method, const cJSON *params, void *arg)
{
	struct remote *r = arg;
	const char *kind = cJSON_GetStringValue(cJSON_GetObjectItem(params, "kind"));
	cJSON *m;

	if (strcmp(method, "sbxtop/log") == 0) {
		/* The selected sandbox's log: its tail, then what is appended. */
		source_post(r->src, "log", cJSON_Duplicate(params, 1));
		return;
	}
	if (strcmp(method, "sbxtop/exec") != 0 || kind == NULL)
		return;
	if (strcmp(kind, "exec") != 0 && strcmp(kind, "output") != 0 &&
	    strcmp(kind, "exit") != 0)
		return;
	m = cJSON_Duplicate(params, 1);
	cJSON_DeleteItemFromObject(m, "kind");
	source_post(r->src, kind, m);
}

static void
on_disconnect(void *arg)
{
	struct remote *r = arg;
	cJSON *m = cJSON_CreateObject();

	pthread_mutex_lock(&r->mu);
	r->setup = 1;
	pthread_mutex_unlock(&r->mu);
	/* The console says so until a new core answers. */
	cJSON_AddStringToObject(m, "state", "lost");
	source_post(r->src, "core", m);
	kick(r, 'd');
}

/* The session's setup: the MCP initialize (tools/call needs it), the events
 * and the followed sandbox.  0 when done. */
static int
setup(struct remote *r)
{
	cJSON *p, *m;
	struct sbx_err e;
	char mode[16];

	/* The session is ready once initialize is answered; an error here
	 * (already initialized, after a failed subscribe) changes nothing. */
	if (mcp_client_initialize(r->cl, "console", SBX_VERSION, &e) < 0)
		log_debug("console: initialize: %s", e.msg);
	if (client_subscribe(r->cl, 0, on_event, r, &e) < 0) {
		log_debug("console: subscribe: %s", e.msg);
		return -1;
	}
	/* A new core starts with the configured approval mode; the operator's
	 * choice made on the old one holds (an agent's destructive calls must
	 * not slip through because a core died). */
	pthread_mutex_lock(&r->mu);
	snprintf(mode, sizeof mode, "%s", r->mode);
	pthread_mutex_unlock(&r->mu);
	if (r->connects > 0 && mode[0]) {
		p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "mode", mode);
		if (client_call(r->cl, "sbxtop/approve_mode", p, NULL, &e) < 0)
			log_warnx("console: cannot set the approval mode again: %s", e.msg);
		cJSON_Delete(p);
	}
	pthread_mutex_lock(&r->mu);
	r->pid = client_server_pid(r->cl);
	pthread_mutex_unlock(&r->mu);
	m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "state", "connected");
	cJSON_AddNumberToObject(m, "pid", r->pid);
	cJSON_AddBoolToObject(m, "reconnected", r->connects++ > 0);
	source_post(r->src, "core", m);
	return 0;
}

static void
follow(struct remote *r)
{
	cJSON *p = cJSON_CreateObject();
	struct sbx_err e;

	pthread_mutex_lock(&r->mu);
	if (r->sel[0])
		cJSON_AddStringToObject(p, "sandbox", r->sel);
	else
		cJSON_AddNullToObject(p, "sandbox");
	r->refollow = 0;
	pthread_mutex_unlock(&r->mu);
	if (client_call(r->cl, "sbxtop/follow", p, NULL, &e) < 0)
		log_debug("console: sbxtop/follow: %s", e.msg);
	/* Its log too: as much of its end as the console keeps (the server
	 * reads at most the last MiB, as the standalone console does), then
	 * live.  An unknown sandbox stops the last. */
	cJSON_AddNumberToObject(p, "lines", LOG_LINES);
	if (client_call(r->cl, "sbxtop/logs", p, NULL, &e) < 0)
		log_debug("console: sbxtop/logs: %s", e.msg);
	cJSON_Delete(p);
	/* Its network policy and recent connections: the Network tab's first
	 * paint (net.* events keep it up to date). */
	pthread_mutex_lock(&r->mu);
	p = r->sel[0] ? cJSON_CreateObject() : NULL;
	if (p != NULL)
		cJSON_AddStringToObject(p, "sandbox", r->sel);
	pthread_mutex_unlock(&r->mu);
	if (p != NULL) {
		cJSON *res = NULL, *m;
		cJSON_AddNumberToObject(p, "recent", NET_RECENT);
		m = cJSON_CreateObject();
		cJSON_AddStringToObject(m, "verb", "show");
		if (client_call(r->cl, "sbxtop/net_show", p, &res, &e) < 0) {
			cJSON_AddBoolToObject(m, "ok", 0);
			cJSON_AddStringToObject(m, "message", e.msg);
		} else {
			cJSON_AddBoolToObject(m, "ok", 1);
			cJSON_AddItemToObject(m, "data", res);
		}
		source_post(r->src, "net", m);
		cJSON_Delete(p);
	}
}

static void *
refresher(void *arg)
{
	struct remote *r = arg;
	int64_t next = 0;
	char buf[64];

	for (;;) {
		int do_setup, do_follow, refresh = 0, asks = 0;

		pthread_mutex_lock(&r->mu);
		do_setup = r->setup;
		r->setup = 0;
		do_follow = r->refollow || do_setup;
		pthread_mutex_unlock(&r->mu);
		if (do_setup && setup(r) < 0) {
			/* No core answers yet: try again at the next round. */
			pthread_mutex_lock(&r->mu);
			r->setup = 1;
			pthread_mutex_unlock(&r->mu);
			do_follow = 0;
		}
		if (do_follow)
			follow(r);
		if (now_ms() >= next || do_setup) {
			post_state(r);
			next = now_ms() + REFRESH_MS;
		}
		if (do_setup)
			post_pending(r);
		struct pollfd p = { r->kick[0], POLLIN, 0 };
		int64_t wait = next - now_ms();
		if (poll(&p, 1, wait < 0 ? 0 : (int)wait) > 0) {
			ssize_t n = read(r->kick[0], buf, sizeof buf);
			for (ssize_t i = 0; i < n; i++) {
				if (buf[i] == 'q')
					return NULL;
				refresh |= buf[i] == 'r' || buf[i] == 'd';
				asks |= buf[i] == 'n';
			}
			if (asks)
				post_pending(r);
			/* Events come in bursts: one fetch for the lot. */
			if (refresh)
				next = now_ms() + 30;
		}
	}
}

static void
remote_select(struct source *s, const char *id)
{
	struct remote *r = s->impl;

	pthread_mutex_lock(&r->mu);
	if (strcmp(r->sel, id ? id : "") != 0) {
		snprintf(r->sel, sizeof r->sel, "%s", id ? id : "");
		r->refollow = 1;
	}
	pthread_mutex_unlock(&r->mu);
	kick(r, 's');
}

/* --- actions ------------------------------------------------------------ */

static int
remote_call(struct source *s, const char *tool, cJSON *args, cJSON **result,
    struct sbx_err *e)
{
	struct remote *r = s->impl;

	return mcp_client_call_tool(r->cl, tool, args, result, e);
}

/* {approvals: [...], mode}, ids as strings. */
static int
remote_approvals(struct source *s, cJSON **list, struct sbx_err *e)
{
	struct remote *r = s->impl;
	cJSON *x;

	if (client_call(r->cl, "sbxtop/approvals", NULL, list, e) < 0)
		return -1;
	cJSON_ArrayForEach(x, cJSON_GetObjectItem(*list, "approvals"))
		id_to_string(x);
	return 0;
}

static int
remote_approve(struct source *s, const char *id, int allow, const char *reason,
    struct sbx_err *e)
{
	struct remote *r = s->impl;
	cJSON *p;
	char *end;
	long long n = strtoll(id, &end, 10);
	int rc;

	if (*id == '\0' || *end != '\0' || n <= 0)
		return sbx_error(e, SBX_EINVAL, NULL, "no approval '%s'", id);
	p = cJSON_CreateObject();
	cJSON_AddNumberToObject(p, "id", (double)n);
	cJSON_AddBoolToObject(p, "allow", allow);
	if (reason && *reason)
		cJSON_AddStringToObject(p, "reason", reason);
	rc = client_call(r->cl, "sbxtop/approve", p, NULL, e);
	cJSON_Delete(p);
	kick(r, 'r');
	return rc;
}

static int
remote_approve_mode(struct source *s, const char *mode, struct sbx_err *e)
{
	struct remote *r = s->impl;
	cJSON *p = cJSON_CreateObject();
	int rc;

	cJSON_AddStringToObject(p, "mode", mode);
	rc = client_call(r->cl, "sbxtop/approve_mode", p, NULL, e);
	cJSON_Delete(p);
	if (rc == 0) {
		pthread_mutex_lock(&r->mu);
		snprintf(r->mode, sizeof r->mode, "%s", mode);
		pthread_mutex_unlock(&r->mu);
	}
	kick(r, 'r');
	return rc;
}

static int
remote_net(struct source *s, const char *verb, const cJSON *params, cJSON **result,
    struct sbx_err *e)
{
	struct remote *r = s->impl;
	char method[32];

	snprintf(method, sizeof method, "sbxtop/net_%s", verb);
	return client_call(r->cl, method, (cJSON *)params, result, e);
}

static int
remote_pty_open(struct source *s, const char *id, int cols, int rows, struct sbx_err *e)
{
	(void)s;
	return client_pty_open(id, cols, rows, NULL, e);
}

static void
remote_free(struct source *s)
{
	struct remote *r = s->impl;

	kick(r, 'q');
	pthread_join(r->refresher, NULL);
	client_close(r->cl);
	source_fini(s);
	close(r->kick[0]);
	close(r->kick[1]);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

static const struct source_ops remote_ops = {
	.kind = "local",
	.free = remote_free,
	.select = remote_select,
	.call = remote_call,
	.approvals = remote_approvals,
	.approve = remote_approve,
	.approve_mode = remote_approve_mode,
	.net = remote_net,
	.pty_open = remote_pty_open,
};

struct source *
source_remote_new(struct sbx_err *e)
{
	struct client *cl = client_connect("console", 1, e);
	struct source *s;
	struct remote *r;

	if (cl == NULL)
		return NULL;
	s = xcalloc(1, sizeof *s);
	r = xcalloc(1, sizeof *r);
	source_init(s, &remote_ops, r);
	r->src = s;
	r->cl = cl;
	r->setup = 1;
	pthread_mutex_init(&r->mu, NULL);
	if (pipe(r->kick) < 0)
		fatal("pipe: out of descriptors");
	client_on_notify(cl, on_notify, r);
	client_on_disconnect(cl, on_disconnect, r);
	if (pthread_create(&r->refresher, NULL, refresher, r) != 0)
		fatal("cannot start the console's threads");
	return s;
}
