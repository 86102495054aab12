/* The core server (server.h): the listening socket, one thread per client
 * connection, each connection one MCP session extended with the sbxtop/...
 * methods (docs/core-protocol.md), the idle exit, and reaping what this process
 * created of the sandboxes (core_reap, since it outlives their creation).
 *
 * Events reach a subscriber through a queue of its own and a writer thread:
 * core_events_emit calls subscribers with the event ring locked, so a client
 * that stops reading must never be written to from there. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/client/client.h"
#include "core/core-watch.h"
#include "lib/log.h"
#include "core/paths.h"
#include "lib/util.h"
#include "mcp/budget.h"
#include "mcp/jsonrpc.h"
#include "mcp/mcp.h"
#include "mcp/tool-util.h"
#include "server/admin.h"
#include "server/forwards.h"
#include "server/approve.h"
#include "server/logs.h"
#include "server/pty.h"
#include "server/listen.h"
#include "server/rest.h"
#include "core/keys/keys.h"
#include "server/net.h"
#include "server/server.h"

#define EVQ_MAX_BYTES	(8u << 20)	/* a subscriber this far behind loses events */
#define LOCK_WAIT_MS	3000		/* a server on its way out lets go of the lock */
#define REAP_EVERY_MS	1000
#define RESTORE_TRY_MS	30000		/* a killed core's ports may take a while to close */

struct evq_item {
	char		*text;
	size_t		 len;
	struct evq_item	*next;
};

struct conn {
	struct srv	*srv;
	int		 fd;
	unsigned	 id;
	pid_t		 peer_pid;
	int64_t		 since_ms;
	pthread_t	 th;

	/* Set by sbxtop/hello on the reader thread; read under srv->mu. */
	int		 hello;
	char		 kind[16];
	unsigned	 kind_bit;	/* KIND_* of kind */
	char		 name[64];
	char		 version[32];
	int		 pid;

	struct mcp_session *s;
	int		 leaving;	/* under srv->mu: s is being freed */
	pthread_mutex_t	 wmu;		/* whole lines on fd */
	int		 broken;

	/* The event subscription. */
	pthread_mutex_t	 qmu;
	pthread_cond_t	 qcv;
	struct evq_item	*qhead, *qtail;
	size_t		 qbytes;
	uint64_t	 lost_from;	/* first seq dropped, 0: none */
	int		 sub;		/* core handle, 0: none */
	int		 qclosing;
	pthread_t	 writer;

	/* sbxtop/follow: one sandbox's execs (the reader thread only). */
	struct core_watch *watch;
	/* sbxtop/logs: one sandbox's log (the reader thread only). */
	struct logs	*logs;

	/* The admin commands' state (server/admin.c; the reader thread only). */
	struct admin	*admin;
	/* An HTTP MCP listener this client opened (server/listen.c), under srv->mu. */
	struct listen	*listen;

	struct conn	*next;
};

struct srv {
	struct core	*core;
	struct approvals *ap;
	int		 lfd;
	int		 wake[2];	/* signals and sbxtop/shutdown poke the main loop */
	char		*sock_path;
	dev_t		 sock_dev;
	ino_t		 sock_ino;
	int64_t		 started_ms;	/* wall clock */
	char		 env_digest[24];	/* config_env_digest, told in the hello */

	pthread_mutex_t	 mu;		/* conns, dead, next_id */
	struct conn	*conns;
	struct conn	*dead;		/* ended, to join */
	int		 nconns;
	unsigned	 next_id;
	int		 stop;		/* atomic */
	int		 restore_left;	/* recorded forwards still to try (-1: all), until ... */
	int64_t		 restore_until;	/* ... this (now_ms) */
};

static int wake_fd = -1;

static void
on_signal(int sig)
{
	int saved = errno;
	char c = (char)sig;

	if (wake_fd >= 0)
		(void)!write(wake_fd, &c, 1);
	errno = saved;
}

static void
poke(struct srv *srv)
{
	char c = 0;

	(void)!write(srv->wake[1], &c, 1);
}

/* --- writing --------------------------------------------------------------- */

static void
conn_write(struct conn *cn, const char *msg, size_t len)
{
	pthread_mutex_lock(&cn->wmu);
	if (!cn->broken && write_line(cn->fd, msg, len) < 0) {
		cn->broken = 1;
		/* The reader learns of it too: end the connection. */
		shutdown(cn->fd, SHUT_RDWR);
	}
	pthread_mutex_unlock(&cn->wmu);
}

static void
session_send(void *arg, const char *msg, size_t len)
{
	conn_write(arg, msg, len);
}

/* --- events -------------------------------------------------------------- */

static cJSON *
event_json(const struct core_event *ev)
{
	cJSON *p = cJSON_CreateObject();

	cJSON_AddNumberToObject(p, "seq", (double)ev->seq);
	cJSON_AddNumberToObject(p, "time_ms", (double)ev->time_ms);
	cJSON_AddStringToObject(p, "type", ev->type);
	if (ev->sandbox)
		cJSON_AddStringToObject(p, "sandbox", ev->sandbox);
	else
		cJSON_AddNullToObject(p, "sandbox");
	cJSON_AddItemToObject(p, "data", ev->data ? cJSON_Duplicate(ev->data, 1) :
	    cJSON_CreateNull());
	return p;
}

/* With the event ring locked: queue, never write. */
static void
on_event(const struct core_event *ev, void *arg)
{
	struct conn *cn = arg;
	char *text = jsonrpc_notification("sbxtop/event", event_json(ev));
	struct evq_item *it;
	size_t len = strlen(text);

	/* No line over MCP_LINE_OUT_MAX, as the sessions' (mcp/budget.h). */
	if (len > MCP_LINE_OUT_MAX) {
		char *cut = mcp_line_cut(text, len);
		free(text);
		if ((text = cut) == NULL)
			return;
		len = strlen(text);
	}

	pthread_mutex_lock(&cn->qmu);
	if (cn->qbytes + len > EVQ_MAX_BYTES) {
		if (cn->lost_from == 0)
			cn->lost_from = ev->seq;
		pthread_mutex_unlock(&cn->qmu);
		free(text);
		return;
	}
	it = xcalloc(1, sizeof *it);
	it->text = text;
	it->len = len;
	if (cn->qtail)
		cn->qtail->next = it;
	else
		cn->qhead = it;
	cn->qtail = it;
	cn->qbytes += len;
	pthread_cond_signal(&cn->qcv);
	pthread_mutex_unlock(&cn->qmu);
}

static void *
event_writer(void *arg)
{
	struct conn *cn = arg;

	pthread_mutex_lock(&cn->qmu);
	for (;;) {
		struct evq_item *it;

		while (cn->qhead == NULL && cn->lost_from == 0 && !cn->qclosing)
			pthread_cond_wait(&cn->qcv, &cn->qmu);
		if (cn->qclosing)
			break;
		if ((it = cn->qhead) != NULL) {
			cn->qhead = it->next;
			if (cn->qhead == NULL)
				cn->qtail = NULL;
			cn->qbytes -= it->len;
			pthread_mutex_unlock(&cn->qmu);
			conn_write(cn, it->text, it->len);
			free(it->text);
			free(it);
			pthread_mutex_lock(&cn->qmu);
			continue;
		}
		/* Caught up after a loss: say what was lost, so the client can
		 * fetch the state again rather than trust a broken stream. */
		cJSON *p = cJSON_CreateObject();
		cJSON_AddNumberToObject(p, "from", (double)cn->lost_from);
		cn->lost_from = 0;
		pthread_mutex_unlock(&cn->qmu);
		char *t = jsonrpc_notification("sbxtop/events_lost", p);
		conn_write(cn, t, strlen(t));
		free(t);
		pthread_mutex_lock(&cn->qmu);
	}
	pthread_mutex_unlock(&cn->qmu);
	return NULL;
}

static void
unsubscribe(struct conn *cn)
{
	if (cn->sub == 0)
		return;
	core_events_unsubscribe(cn->srv->core, cn->sub);
	cn->sub = 0;
	pthread_mutex_lock(&cn->qmu);
	cn->qclosing = 1;
	pthread_cond_signal(&cn->qcv);
	pthread_mutex_unlock(&cn->qmu);
	pthread_join(cn->writer, NULL);
	while (cn->qhead) {
		struct evq_item *it = cn->qhead;
		cn->qhead = it->next;
		free(it->text);
		free(it);
	}
	cn->qtail = NULL;
}

/* --- the sbxtop/... methods ---------------------------------------------- */

/* The kinds a hello may name, and which of the table's each is. */
static const struct {
	const char	*name;
	unsigned	 bit;
} kinds[] = {
	{ "console",	KIND_CONSOLE },
	{ "shell",	KIND_CONSOLE },	/* a console's PTY connection */
	{ "cli",	KIND_CLI },
	{ "mcp",	KIND_MCP },
};

static int
count_consoles(struct srv *srv)
{
	int n = 0;

	for (struct conn *c = srv->conns; c != NULL; c = c->next)
		n += c->hello && strcmp(c->kind, "console") == 0;
	return n;
}

static void
m_hello(struct srv_call *c)
{
	struct conn *cn = c->conn;
	const cJSON *id = c->id, *params = c->params;
	struct srv *srv = cn->srv;
	const cJSON *cl = cJSON_GetObjectItemCaseSensitive(params, "client");
	const char *kind = mcp_arg_str(cl, "kind"), *name = mcp_arg_str(cl, "name");
	const char *ver = mcp_arg_str(cl, "version");
	int64_t pid = srv_int_param(cl, "pid", 0, INT32_MAX, 0);
	unsigned bit = 0;
	cJSON *r;
	int consoles;

	if (cn->hello) {
		/* The bridge's hello named the connection an agent's: what the
		 * agent sends after it may not rename it a console. */
		mcp_session_reply_error(cn->s, id, JSONRPC_INVALID_REQUEST, "sbxtop/hello comes "
		    "once per connection: its kind does not change", NULL);
		return;
	}
	for (size_t i = 0; kind != NULL && i < ARRAY_SIZE(kinds) && bit == 0; i++)
		if (strcmp(kinds[i].name, kind) == 0)
			bit = kinds[i].bit;
	if (kind == NULL || ver == NULL || pid == -2) {
		srv_invalid(c, "Invalid params: sbxtop/hello needs client {kind, name, version, "
		    "pid}: kind and version strings");
		return;
	}
	if (strcmp(ver, SBX_VERSION) != 0) {
		char msg[300];
		snprintf(msg, sizeof msg, "sbxtop %.40s talks to a core server of version %s: "
		    "stop it with `sbxtop serve --stop`", ver, SBX_VERSION);
		log_warnx("refused a client of version %.40s (pid %lld)", ver, (long long)pid);
		mcp_session_reply_error(cn->s, id, CLIENT_ERR_VERSION, msg, NULL);
		return;
	}
	if (bit == 0) {
		srv_invalid(c, "Invalid params: the hello's kind is console, cli, mcp (an "
		    "agent's MCP client) or shell (a console's PTY); REST clients use the HTTP "
		    "listener");
		return;
	}
	pthread_mutex_lock(&srv->mu);
	cn->hello = 1;
	cn->kind_bit = bit;
	snprintf(cn->kind, sizeof cn->kind, "%s", kind);
	snprintf(cn->name, sizeof cn->name, "%.60s", name ? name : kind);
	snprintf(cn->version, sizeof cn->version, "%s", ver);
	cn->pid = (int)pid;
	consoles = count_consoles(srv);
	pthread_mutex_unlock(&srv->mu);
	mcp_session_set_kind(cn->s, kind);
	/* The result budget the client's mcp_budget asks for (mcp/budget.h). */
	double budget = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(params, "budget"));
	if (budget > 0 && budget < 1e9)
		mcp_session_set_budget(cn->s, (size_t)budget);
	approvals_set_consoles(srv->ap, consoles);
	log_info("client %u: %s %s, pid %d", cn->id, cn->kind, cn->name, cn->pid);

	r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "server_version", SBX_VERSION);
	cJSON_AddNumberToObject(r, "pid", (double)getpid());
	cJSON_AddNumberToObject(r, "started_ms", (double)srv->started_ms);
	cJSON_AddNumberToObject(r, "client_id", cn->id);
	cJSON_AddStringToObject(r, "approve", approve_mode_name(approvals_mode(srv->ap)));
	cJSON_AddStringToObject(r, "env_digest", srv->env_digest);
	mcp_session_reply(cn->s, id, r);
}

static void
m_subscribe(struct srv_call *c)
{
	struct conn *cn = c->conn;
	const cJSON *id = c->id, *params = c->params;
	int64_t from = srv_int_param(params, "from", 0, INT64_MAX / 2, 0);
	uint64_t first;
	cJSON *r;

	if (from == -2) {
		srv_invalid(c, "Invalid params: \"from\" must be a sequence number (0: all kept)");
		return;
	}
	if (cn->sub != 0) {
		mcp_session_reply_error(cn->s, id, JSONRPC_INVALID_REQUEST, "Invalid Request: "
		    "this connection is already subscribed", NULL);
		return;
	}
	if (pthread_create(&cn->writer, NULL, event_writer, cn) != 0) {
		mcp_session_reply_error(cn->s, id, JSONRPC_INTERNAL_ERROR, "Internal error: "
		    "cannot start a thread; retry", NULL);
		return;
	}
	/* The answer goes first; what the replay queues follows it. */
	r = cJSON_CreateObject();
	mcp_session_reply(cn->s, id, r);
	cn->sub = core_events_subscribe_from(cn->srv->core, (uint64_t)from, on_event, cn, &first);
	if ((uint64_t)from > 0 && (uint64_t)from < first) {
		pthread_mutex_lock(&cn->qmu);
		/* Older than the ring: the client learns where the gap is. */
		cn->lost_from = (uint64_t)from;
		pthread_cond_signal(&cn->qcv);
		pthread_mutex_unlock(&cn->qmu);
	}
}

static void
m_clients(struct srv_call *c)
{
	struct conn *cn = c->conn;
	const cJSON *id = c->id;
	struct srv *srv = cn->srv;
	cJSON *r = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(r, "clients");

	pthread_mutex_lock(&srv->mu);
	for (struct conn *x = srv->conns; x != NULL; x = x->next) {
		cJSON *o;
		const char *mc;
		if (x->leaving)
			continue;
		o = cJSON_CreateObject();
		mc = mcp_session_client(x->s);
		cJSON_AddNumberToObject(o, "id", x->id);
		cJSON_AddStringToObject(o, "kind", x->hello ? x->kind : "unknown");
		cJSON_AddStringToObject(o, "name", x->hello ? x->name : "");
		cJSON_AddNumberToObject(o, "pid", x->hello ? x->pid : x->peer_pid);
		cJSON_AddNumberToObject(o, "since_ms", (double)x->since_ms);
		if (mc)
			cJSON_AddStringToObject(o, "mcp_client", mc);
		else
			cJSON_AddNullToObject(o, "mcp_client");
		cJSON_AddBoolToObject(o, "self", x == cn);
		cJSON_AddItemToArray(a, o);
		listen_clients(x->listen, a);
	}
	pthread_mutex_unlock(&srv->mu);
	cJSON_AddNumberToObject(r, "approvals_pending", (double)approvals_pending(srv->ap));
	cJSON_AddStringToObject(r, "approve", approve_mode_name(approvals_mode(srv->ap)));
	mcp_session_reply(cn->s, id, r);
}

/* On the watch's threads: written at once, in order per exec (the write lock
 * keeps lines whole; a client that stops reading holds up only its own
 * watch). */
static void
on_watch(const char *kind, cJSON *msg, void *arg)
{
	struct conn *cn = arg;
	char *t;

	cJSON_AddStringToObject(msg, "kind", kind);
	t = jsonrpc_notification("sbxtop/exec", msg);
	conn_write(cn, t, strlen(t));
	free(t);
}

static void
m_follow(struct srv_call *c)
{
	struct conn *cn = c->conn;
	const cJSON *id = c->id, *params = c->params;
	const cJSON *sb = cJSON_GetObjectItemCaseSensitive(params, "sandbox");
	cJSON *r;

	if (!(sb == NULL || cJSON_IsNull(sb) || (cJSON_IsString(sb) &&
	    strlen(sb->valuestring) < 32))) {
		srv_invalid(c, "Invalid params: sbxtop/follow needs {sandbox: an id, or null "
		    "to stop}");
		return;
	}
	/* The answer first: what the watch finds follows it. */
	r = cJSON_CreateObject();
	mcp_session_reply(cn->s, id, r);
	if (cn->watch == NULL)
		cn->watch = core_watch_new(cn->srv->core, on_watch, cn);
	core_watch_select(cn->watch, cJSON_IsString(sb) ? sb->valuestring : NULL);
}

/* On the log follower's thread. */
static void
on_log(void *arg, const char *text, size_t len)
{
	conn_write(arg, text, len);
}

static void
m_logs(struct srv_call *c)
{
	struct conn *cn = c->conn;
	const cJSON *id = c->id, *params = c->params;
	const cJSON *sb = cJSON_GetObjectItemCaseSensitive(params, "sandbox");
	const char *which = mcp_arg_str(params, "log");
	int64_t lines = srv_int_param(params, "lines", 0, 100000, 1000);
	struct logs *l = NULL;
	struct sbx_err e;

	if (!(sb == NULL || cJSON_IsNull(sb) || cJSON_IsString(sb)) || lines < 0 ||
	    (which != NULL && strcmp(which, "agent") != 0 && strcmp(which, "console") != 0)) {
		srv_invalid(c, "Invalid params: sbxtop/logs needs {sandbox: an id, or null to "
		    "stop, log?: \"agent\"|\"console\", lines?: 0..100000}");
		return;
	}
	/* The follow this replaces has written its last line before the answer. */
	logs_stop(cn->logs);
	cn->logs = NULL;
	if (cJSON_IsString(sb) && (l = logs_open(cn->srv->core, sb->valuestring,
	    which ? which : "agent", (int)lines, on_log, cn, &e)) == NULL) {
		srv_reply_err(c, &e);
		return;
	}
	/* The answer first: the replay follows it. */
	mcp_session_reply(cn->s, id, NULL);
	if (l != NULL && logs_start(l, &e) < 0)
		log_warnx("client %u: sbxtop/logs: %s", cn->id, e.msg);
	else
		cn->logs = l;
}

/* The connection becomes the PTY's until the shell ends, then it is closed:
 * nothing else may have used it but the hello. */
static void
m_pty(struct srv_call *c)
{
	struct conn *cn = c->conn;
	const cJSON *id = c->id, *params = c->params;
	const char *key = mcp_arg_str(params, "sandbox");
	const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(params, "command");
	int64_t cols = srv_int_param(params, "cols", 1, 10000, 80);
	int64_t rows = srv_int_param(params, "rows", 1, 10000, 24);
	struct sbx_err e;
	int afd;

	if (key == NULL || cols < 0 || rows < 0 ||
	    !(cmd == NULL || cJSON_IsNull(cmd) || cJSON_IsString(cmd))) {
		srv_invalid(c, "Invalid params: sbxtop/pty needs {sandbox, cols?: 1..10000, "
		    "rows?: 1..10000, command?: a string (default: a login shell)}");
		return;
	}
	if (cn->sub != 0 || cn->watch != NULL || cn->logs != NULL) {
		mcp_session_reply_error(cn->s, id, JSONRPC_INVALID_REQUEST, "Invalid Request: "
		    "sbxtop/pty needs a connection of its own (open one, send sbxtop/hello, "
		    "then sbxtop/pty)", NULL);
		return;
	}
	if ((afd = core_pty_open(cn->srv->core, key, (int)cols, (int)rows,
	    cJSON_IsString(cmd) ? cmd->valuestring : NULL, "human", &e)) < 0) {
		srv_reply_err(c, &e);
		return;
	}
	mcp_session_reply(cn->s, id, NULL);
	log_info("client %u: a PTY in %s (%lldx%lld)", cn->id, key, (long long)cols,
	    (long long)rows);
	pty_relay(cn->fd, afd);
	close(afd);
	shutdown(cn->fd, SHUT_RDWR);
	log_info("client %u: the PTY in %s ended", cn->id, key);
}

static void
m_shutdown(struct srv_call *c)
{
	struct conn *cn = c->conn;
	const cJSON *id = c->id;
	/* Any client of ours may: the peer is our own user, and a client of
	 * another version must be able to stop us. */
	log_info("client %u asked the server to stop", cn->id);
	mcp_session_reply(cn->s, id, NULL);
	__atomic_store_n(&cn->srv->stop, 1, __ATOMIC_RELAXED);
	poke(cn->srv);
}

static void m_methods(struct srv_call *c);

#define M_BEFORE_HELLO	0x1	/* also before sbxtop/hello, whatever the kind */
#define M_LISTENER	0x2	/* uses the connection's HTTP listener */
#define M_MCP		0x4	/* the row of every MCP method (no name, no handler) */

#define K_OPERATOR	(KIND_CONSOLE | KIND_CLI)
#define NO_KEY		0		/* no API key reaches it: not an HTTP session's */
#define K_SOCKET	(KIND_CONSOLE | KIND_CLI | KIND_MCP)

/* Every method of the core server, and who may call it: the one table a
 * request passes.  The MCP methods are one row (mcp/ names them): the
 * connection's session answers them (mcp/server.c), so an agent's calls end in
 * tools/call and its approval gate.  A name not here is "method not found" on
 * the socket.  An agent (kind mcp) reaches the MCP methods and nothing that is
 * the operator's: no command run outside a tool, no approvals, no listener, no
 * forward on an address of its choice, no shutdown.  REST requests reach none
 * of these: each route names the tool it runs (rest_op_begin, server/rest.c)
 * and passes the gate.  docs/core-protocol.md lists the table;
 * tests/integration/capabilities.sh calls every method as every kind against
 * sbxtop/methods. */
static const struct method {
	const char	*name;
	srv_method_fn	*fn;
	unsigned	 kinds;
	unsigned	 flags;
	unsigned	 scope;		/* what an HTTP session's API key needs (KEY_* of
				 * core/keys/keys.h), or NO_KEY: none reaches it */
} methods[] = {
	/* every MCP method (mcp_method_name of mcp/mcp.h): the session answers */
	{ NULL,				NULL,			K_SOCKET, M_MCP, KEY_EXEC },
	/* the connection */
	{ "sbxtop/hello",		m_hello,		K_SOCKET, M_BEFORE_HELLO, NO_KEY },
	{ "sbxtop/shutdown",		m_shutdown,		K_OPERATOR, M_BEFORE_HELLO, NO_KEY },
	{ "sbxtop/methods",		m_methods,		K_OPERATOR, 0, NO_KEY },
	{ "sbxtop/subscribe",		m_subscribe,		K_OPERATOR, 0, NO_KEY },
	{ "sbxtop/clients",		m_clients,		K_OPERATOR, 0, NO_KEY },
	/* the console */
	{ "sbxtop/sandboxes",		admin_list,		K_OPERATOR, 0, NO_KEY },
	{ "sbxtop/follow",		m_follow,		K_OPERATOR, 0, NO_KEY },
	{ "sbxtop/logs",		m_logs,			K_OPERATOR, 0, NO_KEY },
	{ "sbxtop/pty",			m_pty,			K_OPERATOR, 0, NO_KEY },
	{ "sbxtop/approvals",		approvals_method_list,	K_OPERATOR, 0, NO_KEY },
	{ "sbxtop/approve",		approvals_method_answer, K_OPERATOR, 0, NO_KEY },
	{ "sbxtop/approve_mode",	approvals_method_mode,	K_OPERATOR, 0, NO_KEY },
	/* forwards (an address of the operator's choosing: --bind) */
	{ "sbxtop/forward_start",	forwards_start,		K_OPERATOR, 0, NO_KEY },
	{ "sbxtop/forward_stop",	forwards_stop,		K_OPERATOR, 0, NO_KEY },
	{ "sbxtop/forward_list",	forwards_list,		K_OPERATOR, 0, NO_KEY },
	{ "sbxtop/forward_restore",	forwards_restore,	K_OPERATOR, 0, NO_KEY },
	/* the admin commands (admin.c) */
	{ "sbxtop/list",		admin_list,		K_OPERATOR, 0, NO_KEY },
	{ "sbxtop/status",		admin_status,		K_OPERATOR, 0, NO_KEY },
	{ "sbxtop/create",		admin_create,		K_OPERATOR, 0, NO_KEY },
	{ "sbxtop/suspend",		admin_suspend,		K_OPERATOR, 0, NO_KEY },
	{ "sbxtop/resume",		admin_resume,		K_OPERATOR, 0, NO_KEY },
	{ "sbxtop/destroy",		admin_destroy,		K_OPERATOR, 0, NO_KEY },
	{ "sbxtop/exec_stdin",		admin_exec_stdin,	K_OPERATOR, 0, NO_KEY },
	{ "sbxtop/exec",		admin_exec,		K_OPERATOR, 0, NO_KEY },
	{ "sbxtop/copy_in",		admin_copy_in,		K_OPERATOR, 0, NO_KEY },
	{ "sbxtop/copy_out",		admin_copy_out,		K_OPERATOR, 0, NO_KEY },
	{ "sbxtop/log_path",		admin_log_path,		K_OPERATOR, 0, NO_KEY },
	/* HTTP listeners (listen.c): `sbxtop serve --listen` */
	{ "sbxtop/http_listen",		listen_start,		KIND_CLI, M_LISTENER, NO_KEY },
	{ "sbxtop/http_stop",		listen_stop,		KIND_CLI, M_LISTENER, NO_KEY },
	/* network policies (net.c) */
	{ "sbxtop/net_show",		server_net_show,	K_OPERATOR, 0, NO_KEY },
	{ "sbxtop/net_pending",		server_net_pending,	K_OPERATOR, 0, NO_KEY },
	{ "sbxtop/net_decide",		server_net_decide,	K_OPERATOR, 0, NO_KEY },
	{ "sbxtop/net_change",		server_net_change,	K_OPERATOR, 0, NO_KEY },
};

unsigned
server_mcp_scope(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(methods); i++)
		if (methods[i].flags & M_MCP)
			return methods[i].scope;
	return 0;
}

static const struct method *
method_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(methods); i++) {
		if (!(methods[i].flags & M_MCP) && strcmp(methods[i].name, name) == 0)
			return &methods[i];
		for (size_t k = 0; (methods[i].flags & M_MCP) && mcp_method_name(k) != NULL; k++)
			if (strcmp(mcp_method_name(k), name) == 0)
				return &methods[i];
	}
	return NULL;
}

static cJSON *
method_json(const char *name, const struct method *mt)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "method", name);
	cJSON_AddItemToObject(o, "kinds", srv_kinds_json(mt->kinds));
	cJSON_AddBoolToObject(o, "before_hello", (mt->flags & M_BEFORE_HELLO) != 0);
	if (key_scope_name(mt->scope) != NULL)
		cJSON_AddStringToObject(o, "scope", key_scope_name(mt->scope));
	else
		cJSON_AddNullToObject(o, "scope");
	return o;
}

static void
m_methods(struct srv_call *c)
{
	cJSON *r = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(r, "methods");

	for (size_t i = 0; i < ARRAY_SIZE(methods); i++) {
		if (!(methods[i].flags & M_MCP))
			cJSON_AddItemToArray(a, method_json(methods[i].name, &methods[i]));
		for (size_t k = 0; (methods[i].flags & M_MCP) && mcp_method_name(k) != NULL; k++)
			cJSON_AddItemToArray(a, method_json(mcp_method_name(k), &methods[i]));
	}
	cJSON_AddItemToObject(r, "kinds", srv_kinds_json(~0u));
	/* The listener's routes, with the scope each asks of an API key. */
	cJSON_AddItemToObject(r, "routes", rest_routes_json());
	mcp_session_reply(c->s, c->id, r);
}

int
server_admit(struct core *c, struct mcp_session *s, unsigned kind, unsigned scopes,
    const cJSON *id, const char *method)
{
	const struct method *mt = method_find(method);

	if (id == NULL)
		return 1;	/* no sbxtop/... notification is defined */
	if (mt == NULL)
		return 0;	/* the session's own "method not found" */
	if (!(mt->kinds & kind)) {
		const char *mc = mcp_session_client(s);
		char who[200];
		snprintf(who, sizeof who, "an HTTP session (%s)", mc ? mc : "not initialized");
		srv_refuse(c, s, id, method, mt->kinds, kind, who);
		return 1;
	}
	if (mt->scope != 0 && !(mt->scope & scopes)) {
		/* The listener asks the scope of every /mcp request: only a table
		 * that said otherwise gets here. */
		char msg[80];
		cJSON *data = cJSON_CreateObject();
		snprintf(msg, sizeof msg, "Missing required scope: %s", key_scope_name(mt->scope));
		cJSON_AddStringToObject(data, "scope", key_scope_name(mt->scope));
		mcp_session_reply_error(s, id, CLIENT_ERR_KIND, msg, data);
		return 1;
	}
	if (mt->fn != NULL) {
		/* sbxtop/hello: what a connection to the socket says first. */
		mcp_session_reply_error(s, id, JSONRPC_INVALID_REQUEST, "Invalid Request: "
		    "an HTTP session has no sbxtop/hello: it is an MCP client's (kind mcp)",
		    NULL);
		return 1;
	}
	return 0;
}

/* Every request of a connection, before its session sees it: the table's
 * handler answers it, or the session does (an MCP method). */
static int
extension(void *arg, struct mcp_session *s, const cJSON *id, const char *method,
    const cJSON *params)
{
	struct conn *cn = arg;
	struct srv *srv = cn->srv;
	const struct method *mt = method_find(method);
	struct srv_call c;
	struct listen *l = NULL;

	if (id == NULL)
		return 1;	/* no sbxtop/... notification is defined */
	if (mt == NULL) {
		char msg[200];
		snprintf(msg, sizeof msg, "Method not found: '%.100s'", method);
		mcp_session_reply_error(s, id, JSONRPC_METHOD_NOT_FOUND, msg, NULL);
		return 1;
	}
	if (!cn->hello && !(mt->flags & M_BEFORE_HELLO)) {
		mcp_session_reply_error(s, id, CLIENT_ERR_HELLO, "sbxtop/hello first: the "
		    "server checks the client's version before anything else", NULL);
		return 1;
	}
	if (cn->hello && !(mt->kinds & cn->kind_bit)) {
		const char *mc = mcp_session_client(s);
		char who[200];
		snprintf(who, sizeof who, "client %u (%s%s%s)", cn->id, cn->name, mc ? ", " : "",
		    mc ? mc : "");
		srv_refuse(srv->core, s, id, method, mt->kinds, cn->kind_bit, who);
		return 1;
	}
	if (mt->fn == NULL)
		return 0;
	c = (struct srv_call){ srv->core, srv->ap, s, id, params, cn->name, cn->fd,
	    cn->admin, &l, cn };
	if (mt->flags & M_LISTENER) {
		/* The listener is out of the connection while it changes, so
		 * sbxtop/clients never sees one being freed. */
		pthread_mutex_lock(&srv->mu);
		l = cn->listen;
		cn->listen = NULL;
		pthread_mutex_unlock(&srv->mu);
	}
	mt->fn(&c);
	if (mt->flags & M_LISTENER) {
		pthread_mutex_lock(&srv->mu);
		cn->listen = l;
		pthread_mutex_unlock(&srv->mu);
	}
	return 1;
}

/* --- connections --------------------------------------------------------- */

static void *
conn_main(void *arg)
{
	struct conn *cn = arg;
	struct srv *srv = cn->srv;
	int consoles;

	(void)mcp_session_read_fd(cn->s, cn->fd);
	/* The client is gone: its calls are cancelled (an exec is killed).  Its
	 * session is freed while the connection is still listed, so
	 * sbxtop/clients stops looking at it first. */
	pthread_mutex_lock(&srv->mu);
	cn->leaving = 1;
	pthread_mutex_unlock(&srv->mu);
	mcp_session_close(cn->s);
	unsubscribe(cn);
	core_watch_free(cn->watch);
	cn->watch = NULL;
	logs_stop(cn->logs);
	cn->logs = NULL;
	/* Its HTTP listener closes with it (its sessions' calls are cancelled). */
	pthread_mutex_lock(&srv->mu);
	struct listen *l = cn->listen;
	cn->listen = NULL;
	pthread_mutex_unlock(&srv->mu);
	listen_free(l);

	pthread_mutex_lock(&srv->mu);
	for (struct conn **pp = &srv->conns; *pp != NULL; pp = &(*pp)->next)
		if (*pp == cn) {
			*pp = cn->next;
			break;
		}
	srv->nconns--;
	consoles = count_consoles(srv);
	cn->next = srv->dead;
	srv->dead = cn;
	pthread_mutex_unlock(&srv->mu);
	approvals_set_consoles(srv->ap, consoles);
	log_info("client %u (%s %s) left", cn->id, cn->hello ? cn->kind : "unknown",
	    cn->hello ? cn->name : "");
	poke(srv);
	return NULL;
}

static void
conn_free(struct conn *cn)
{
	admin_free(cn->admin);
	close(cn->fd);
	pthread_mutex_destroy(&cn->wmu);
	pthread_mutex_destroy(&cn->qmu);
	pthread_cond_destroy(&cn->qcv);
	free(cn);
}

/* Join and free the connections that ended. */
static void
reap_conns(struct srv *srv)
{
	struct conn *d;

	pthread_mutex_lock(&srv->mu);
	d = srv->dead;
	srv->dead = NULL;
	pthread_mutex_unlock(&srv->mu);
	while (d != NULL) {
		struct conn *next = d->next;
		pthread_join(d->th, NULL);
		conn_free(d);
		d = next;
	}
}

static void
accept_one(struct srv *srv)
{
	struct ucred cred;
	socklen_t cl = sizeof cred;
	struct conn *cn;
	int fd = accept4(srv->lfd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0) {
		if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
			log_warn("accept");
		return;
	}
	/* The directory is 0700 already; the peer's uid is checked anyway (a
	 * descriptor passed on, a directory made by someone careless). */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0 || cred.uid != getuid()) {
		log_warnx("refused a connection from uid %d (pid %d): only uid %u may use this "
		    "server", cl == sizeof cred ? (int)cred.uid : -1,
		    cl == sizeof cred ? (int)cred.pid : -1, (unsigned)getuid());
		close(fd);
		return;
	}
	cn = xcalloc(1, sizeof *cn);
	cn->srv = srv;
	cn->fd = fd;
	cn->peer_pid = cred.pid;
	cn->since_ms = wall_ms();
	pthread_mutex_init(&cn->wmu, NULL);
	pthread_mutex_init(&cn->qmu, NULL);
	pthread_cond_init(&cn->qcv, NULL);
	cn->s = mcp_session_new(srv->core, "socket", session_send, cn);
	mcp_session_set_extension(cn->s, extension, cn);
	cn->admin = admin_new(srv->core, cn->s, fd);
	mcp_session_set_gate(cn->s, approvals_gate, srv->ap);

	pthread_mutex_lock(&srv->mu);
	cn->id = ++srv->next_id;
	if (pthread_create(&cn->th, NULL, conn_main, cn) != 0) {
		pthread_mutex_unlock(&srv->mu);
		log_warnx("cannot start a thread for a client");
		mcp_session_close(cn->s);
		conn_free(cn);
		return;
	}
	cn->next = srv->conns;
	srv->conns = cn;
	srv->nconns++;
	pthread_mutex_unlock(&srv->mu);
}

/* --- start and stop ------------------------------------------------------ */

/* The server lock, held for the whole life of the server: one server per
 * runtime directory.  A server on its way out may hold it a moment more. */
static int
take_lock(const char *dir, struct sbx_err *e)
{
	_cleanup_free_ char *path = xasprintf("%s/server.lock", dir);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	char pid[32];

	if (fd < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot open %s", path);
	for (int64_t end = now_ms() + LOCK_WAIT_MS; flock(fd, LOCK_EX | LOCK_NB) < 0;) {
		if (errno != EWOULDBLOCK && errno != EINTR) {
			close(fd);
			return sbx_error_errno(e, SBX_EIO, NULL, "cannot lock %s", path);
		}
		if (now_ms() >= end) {
			close(fd);
			return sbx_error(e, SBX_ESTATE, "`sbxtop serve --stop` stops it",
			    "a core server is already running (it holds %s)", path);
		}
		poll(NULL, 0, 20);
	}
	snprintf(pid, sizeof pid, "%d\n", (int)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, strlen(pid), 0) < 0)
		log_warn("cannot write %s", path);
	return fd;
}

static int
listen_on(struct srv *srv, struct sbx_err *e)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd;

	if (strlen(srv->sock_path) >= sizeof sa.sun_path)
		return sbx_error(e, SBX_EINVAL, "set XDG_RUNTIME_DIR to a shorter directory",
		    "socket path %s is too long", srv->sock_path);
	strcpy(sa.sun_path, srv->sock_path);
	/* With the lock held, whatever socket is there has no server: stale. */
	if (unlink(srv->sock_path) == 0)
		log_info("removed a stale socket %s", srv->sock_path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "socket");
	/* In its 0700 directory; the mode is set after bind rather than through the
	 * umask, which is process-wide and would race with other threads. */
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || chmod(srv->sock_path, 0600) < 0) {
		close(fd);
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot bind %s", srv->sock_path);
	}
	if (listen(fd, 64) < 0 || stat(srv->sock_path, &st) < 0) {
		close(fd);
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot listen on %s", srv->sock_path);
	}
	srv->sock_dev = st.st_dev;
	srv->sock_ino = st.st_ino;
	srv->lfd = fd;
	return 0;
}

/* Remove the socket only when it is still ours. */
static void
unlink_socket(struct srv *srv)
{
	struct stat st;

	if (stat(srv->sock_path, &st) == 0 && st.st_dev == srv->sock_dev &&
	    st.st_ino == srv->sock_ino)
		unlink(srv->sock_path);
}

static void
restore_again(struct srv *srv, int64_t now)
{
	struct sbx_err e;
	int last = now >= srv->restore_until, n;

	if (srv->restore_left == 0)
		return;
	if ((n = core_forward_restore(srv->core, last, &srv->restore_left, &e)) < 0)
		log_warnx("cannot restore the recorded forwards: %s", e.msg);
	else if (n > 0)
		log_info("restored %d forward%s", n, n == 1 ? "" : "s");
	if (last)
		srv->restore_left = 0;
}

static void
serve_loop(struct srv *srv)
{
	const struct config *cfg = core_config(srv->core);
	int64_t grace_ms = config_int(cfg, "serve_grace") * 1000, idle_since = now_ms();
	int64_t last_reap = 0;

	while (!__atomic_load_n(&srv->stop, __ATOMIC_RELAXED)) {
		struct pollfd p[2] = { { srv->lfd, POLLIN, 0 }, { srv->wake[0], POLLIN, 0 } };
		int64_t now;
		int n;

		n = poll(p, 2, 500);
		if (n < 0 && errno != EINTR) {
			log_warn("poll");
			break;
		}
		if (n > 0 && (p[1].revents & POLLIN)) {
			char buf[64];
			ssize_t k = read(srv->wake[0], buf, sizeof buf);
			for (ssize_t i = 0; i < k; i++)
				if (buf[i] == SIGTERM || buf[i] == SIGINT || buf[i] == SIGHUP) {
					log_info("signal %d: stopping", buf[i]);
					__atomic_store_n(&srv->stop, 1, __ATOMIC_RELAXED);
				}
		}
		if (n > 0 && (p[0].revents & POLLIN))
			accept_one(srv);
		reap_conns(srv);
		now = now_ms();
		if (now - last_reap >= REAP_EVERY_MS) {
			core_reap(srv->core);
			restore_again(srv, now);
			last_reap = now;
		}
		pthread_mutex_lock(&srv->mu);
		n = srv->nconns;
		pthread_mutex_unlock(&srv->mu);
		if (n > 0 || core_forward_running(srv->core) > 0 ||
		    core_idle_watching(srv->core) > 0) {
			idle_since = now;
		} else if (now - idle_since >= grace_ms) {
			log_info("no clients, forwards or idle-suspend sandboxes for %lld s: stopping",
			    (long long)(grace_ms / 1000));
			break;
		}
	}
}

static void
shutdown_all(struct srv *srv)
{
	/* New clients first: they find no socket and start a server of their own. */
	unlink_socket(srv);
	close(srv->lfd);
	srv->lfd = -1;
	pthread_mutex_lock(&srv->mu);
	for (struct conn *c = srv->conns; c != NULL; c = c->next)
		shutdown(c->fd, SHUT_RDWR);
	pthread_mutex_unlock(&srv->mu);
	for (;;) {
		reap_conns(srv);
		pthread_mutex_lock(&srv->mu);
		int n = srv->nconns;
		pthread_mutex_unlock(&srv->mu);
		if (n == 0)
			break;
		poll(NULL, 0, 10);
	}
	reap_conns(srv);
}

int
server_run(struct core *c, struct sbx_err *e)
{
	const struct config *cfg = core_config(c);
	struct srv srv = { .core = c, .lfd = -1, .wake = { -1, -1 }, .restore_left = -1 };
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };
	_cleanup_free_ char *dir = NULL;
	int lock_fd = -1, rc = -1, mode;

	if ((dir = paths_ensure(PATHS_RUNTIME, e)) == NULL)
		return -1;
	if ((lock_fd = take_lock(dir, e)) < 0)
		return -1;
	/* Started through /proc/self/exe, a server would be "exe" to ps and
	 * pgrep; its threads, made from here on, take the name too. */
	prctl(PR_SET_NAME, "sbxtop-core");
	srv.sock_path = xasprintf("%s/core.sock", dir);
	srv.started_ms = wall_ms();
	snprintf(srv.env_digest, sizeof srv.env_digest, "%016llx",
	    (unsigned long long)config_env_digest(cfg));
	pthread_mutex_init(&srv.mu, NULL);
	if (pipe2(srv.wake, O_CLOEXEC | O_NONBLOCK) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "pipe");
		goto out;
	}
	if (listen_on(&srv, e) < 0)
		goto out;
	mode = approve_mode_parse(config_str(cfg, "approve"));
	srv.ap = approvals_new(c, mode < 0 ? APPROVE_NONE : (enum approve_mode)mode,
	    config_int(cfg, "approval_timeout"),
	    strcmp(config_str(cfg, "approval_default"), "allow") == 0);

	wake_fd = srv.wake[1];
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	log_info("core server %s (pid %d) listening on %s, approve %s", SBX_VERSION,
	    (int)getpid(), srv.sock_path, config_str(cfg, "approve"));
	/* A core that died left its forwards recorded: this one runs them again,
	 * now and then once a second while their old owner may still hold the
	 * ports. */
	srv.restore_until = now_ms() + RESTORE_TRY_MS;
	restore_again(&srv, now_ms());
	core_reap(c);
	/* A core killed during creates left sandboxes no record names. */
	core_sweep_start(c, RESTORE_TRY_MS);
	/* Sandboxes with an idle-suspend policy are watched from here. */
	if (core_idle_start(c, e) < 0)
		log_warnx("%s: idle sandboxes will not be suspended", e->msg);
	/* Warm pools (the `pool` option); a dead server's members go first. */
	if (core_pool_start(c, e) < 0)
		log_warnx("%s: every create is a cold one", e->msg);

	serve_loop(&srv);
	shutdown_all(&srv);
	core_pool_stop(c);
	rc = 0;
	log_info("core server stopped");
out:
	wake_fd = -1;
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	if (srv.lfd >= 0) {
		unlink_socket(&srv);
		close(srv.lfd);
	}
	approvals_free(srv.ap);
	for (int i = 0; i < 2; i++)
		if (srv.wake[i] >= 0)
			close(srv.wake[i]);
	pthread_mutex_destroy(&srv.mu);
	free(srv.sock_path);
	/* The lock stays with the process (it is close-on-exec): the caller
	 * frees the core, which lets go of the forwards' ports, and only then
	 * may a new server take over and restore them from the registry. */
	if (rc < 0)
		close(lock_fd);
	return rc;
}
