/* The agent's HTTP layer: listeners on unix sockets and TCP, routing, auth, bounded
 * bodies, JSON and chunked responses, and upgrades (tunnels, PTYs). */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <nettle/sha1.h>

#include "agent/agent.h"
#include "agent/http.h"
#include "lib/b64.h"
#include "lib/log.h"
#include "lib/util.h"

#define MAX_LISTENERS 8

struct listener {
	struct MHD_Daemon	*daemon;
	int			 hooks_only;
	char			*unix_path;
};

static struct listener listeners[MAX_LISTENERS];
static int nlisteners;

static enum MHD_Result health(struct req *r);

static const struct route core_routes[] = {
	{ "GET", "/health", ROUTE_NOAUTH, health, NULL, 0 },
	{ NULL, NULL, 0, NULL, NULL, 0 }
};

/* Every table the API serves; the hooks listener serves only hooks_routes. */
static const struct route *const api_tables[] = {
	core_routes, exec_routes, files_routes, archive_routes, tunnel_routes,
	pty_routes, events_routes, seed_routes,
};

static enum MHD_Result
health(struct req *r)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "ok", 1);
	cJSON_AddBoolToObject(o, "ready", agent_ready());
	cJSON_AddStringToObject(o, "version", SBX_VERSION);
	cJSON_AddNumberToObject(o, "uptime_s", (double)((now_ms() - agent.started_ms) / 1000));
	cJSON_AddItemToObject(o, "archive_formats", archive_formats());
	return http_json(r, MHD_HTTP_OK, o);
}

/* Match url against pattern; '*' matches one non-empty segment, copied (and
 * percent-decoded by MHD already) into params. */
static int
route_match(const char *pattern, const char *url, char **params)
{
	int np = 0;
	const char *p = pattern, *u = url;

	while (*p != '\0' && *u != '\0') {
		if (*p == '*') {
			const char *end = strchr(u, '/');
			size_t n = end ? (size_t)(end - u) : strlen(u);
			if (n == 0 || np >= HTTP_MAX_PARAMS)
				goto fail;
			params[np++] = xstrndup(u, n);
			u += n;
			p++;
			continue;
		}
		if (*p != *u)
			goto fail;
		p++;
		u++;
	}
	if (*p == '\0' && *u == '\0')
		return 1;
fail:
	for (int i = 0; i < np; i++) {
		free(params[i]);
		params[i] = NULL;
	}
	return 0;
}

/* The route for method+url: 1 found, 0 no such path, -1 path exists but not for
 * this method (405). */
static int
route_find(const struct listener *l, const char *method, const char *url,
    const struct route **out, char **params)
{
	int path_seen = 0;
	const struct route *const *tables = api_tables;
	size_t ntables = ARRAY_SIZE(api_tables);
	static const struct route *const hooks_tables[] = { hooks_routes };

	if (l->hooks_only) {
		tables = hooks_tables;
		ntables = 1;
	}
	for (size_t t = 0; t < ntables; t++) {
		for (const struct route *rt = tables[t]; rt->pattern != NULL; rt++) {
			if (!route_match(rt->pattern, url, params))
				continue;
			if (strcmp(rt->method, method) == 0) {
				*out = rt;
				return 1;
			}
			path_seen = 1;
			for (int i = 0; i < HTTP_MAX_PARAMS; i++) {
				free(params[i]);
				params[i] = NULL;
			}
		}
	}
	return path_seen ? -1 : 0;
}

static void
req_free(struct req *r, int completed)
{
	if (r->ctx_free != NULL)
		r->ctx_free(r->ctx, completed);
	for (int i = 0; i < HTTP_MAX_PARAMS; i++)
		free(r->params[i]);
	buf_free(&r->body);
	cJSON_Delete(r->json);
	free(r);
}

static void
completed(void *cls, struct MHD_Connection *c, void **con_cls,
    enum MHD_RequestTerminationCode toe)
{
	struct req *r = *con_cls;

	if (r != NULL)
		req_free(r, toe == MHD_REQUEST_TERMINATED_COMPLETED_OK);
	*con_cls = NULL;
}

/* First call for a request: find the route and check auth.  Returns the request
 * state; an answer may already be queued (r->answered). */
static struct req *
req_begin(struct listener *l, struct MHD_Connection *c, const char *url,
    const char *method)
{
	struct req *r = xcalloc(1, sizeof *r);
	int found;

	r->conn = c;
	r->url = url;
	r->method = method;
	buf_init(&r->body, HTTP_BODY_MAX_DEFAULT);

	found = route_find(l, method, url, &r->route, r->params);
	if (found == 0) {
		http_error(r, MHD_HTTP_NOT_FOUND, "not_found", "no route %s %s", method, url);
		return r;
	}
	if (found < 0) {
		http_error(r, MHD_HTTP_METHOD_NOT_ALLOWED, "method_not_allowed",
		    "%s is not allowed on %s", method, url);
		return r;
	}
	if (r->route->body_max)
		r->body.max = r->route->body_max;
	if (!(r->route->flags & ROUTE_NOAUTH)) {
		const char *secret = http_header(r, "X-Sandbox-Secret");
		int ok = agent_check_secret(secret ? secret : "");
		if (ok < 0) {
			http_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, "not_ready",
			    "the sandbox secret is not known yet; retry once /health says ready");
			return r;
		}
		if (!ok || secret == NULL) {
			http_error(r, MHD_HTTP_UNAUTHORIZED, "unauthorized",
			    "missing or wrong X-Sandbox-Secret header");
			return r;
		}
		/* A watcher's look (the console's RUN column) is no activity: it
		 * must not keep an idle sandbox up. */
		if (http_header(r, "X-Sbx-Watch") == NULL)
			agent_touch();
	}
	return r;
}

static enum MHD_Result
dispatch(void *cls, struct MHD_Connection *c, const char *url, const char *method,
    const char *version, const char *upload_data, size_t *upload_size, void **con_cls)
{
	struct listener *l = cls;
	struct req *r = *con_cls;

	if (r == NULL) {
		*con_cls = req_begin(l, c, url, method);
		return MHD_YES;
	}
	if (*upload_size > 0) {
		size_t n = *upload_size;
		*upload_size = 0;
		if (r->answered || r->overflow || r->body_stopped)
			return MHD_YES;		/* drain what we no longer want */
		if (r->route->flags & ROUTE_STREAM_BODY) {
			if (r->route->on_body(r, upload_data, n) < 0)
				r->body_stopped = 1;
			return MHD_YES;
		}
		if (buf_append(&r->body, upload_data, n) < 0) {
			r->overflow = 1;
			buf_free(&r->body);
		}
		return MHD_YES;
	}
	if (r->answered)
		return MHD_YES;
	if (r->overflow)
		return http_error(r, MHD_HTTP_CONTENT_TOO_LARGE, "too_large",
		    "request body is over the %zu byte limit", r->body.max);
	if (r->route->flags & ROUTE_JSON) {
		if (r->body.len == 0)
			r->json = cJSON_CreateObject();
		else if ((r->json = cJSON_ParseWithLength(r->body.data, r->body.len)) == NULL)
			return http_bad_request(r, "malformed JSON body");
		else if (!cJSON_IsObject(r->json))
			return http_bad_request(r, "the body must be a JSON object");
	}
	return r->route->run(r);
}

const char *
http_header(struct req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *
http_query(struct req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

int
http_conn_fd(struct req *r)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	return ci ? ci->connect_fd : -1;
}

int
http_peer_gone(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLRDHUP };

	if (fd < 0)
		return 0;
	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static enum MHD_Result
queue(struct req *r, unsigned status, struct MHD_Response *resp)
{
	enum MHD_Result rc;

	if (r->answered)
		fatal("request %s %s answered twice", r->method, r->url);
	r->answered = 1;
	rc = MHD_queue_response(r->conn, status, resp);
	MHD_destroy_response(resp);
	return rc;
}

enum MHD_Result
http_json(struct req *r, unsigned status, cJSON *body)
{
	char *s = cJSON_PrintUnformatted(body);
	struct MHD_Response *resp;

	cJSON_Delete(body);
	if (s == NULL)
		fatal("out of memory");
	size_t n = strlen(s);
	s[n] = '\0';
	/* A trailing newline makes curl output and NDJSON tools happier. */
	s = xrealloc(s, n + 2);
	s[n] = '\n';
	s[n + 1] = '\0';
	resp = MHD_create_response_from_buffer(n + 1, s, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(resp, "Content-Type", "application/json");
	return queue(r, status, resp);
}

static enum MHD_Result __attribute__((format(printf, 4, 0)))
http_verror(struct req *r, unsigned status, const char *code, const char *fmt, va_list ap)
{
	char msg[1024];
	cJSON *o = cJSON_CreateObject();

	vsnprintf(msg, sizeof msg, fmt, ap);
	cJSON_AddStringToObject(o, "error", code);
	cJSON_AddStringToObject(o, "message", msg);
	return http_json(r, status, o);
}

enum MHD_Result
http_error(struct req *r, unsigned status, const char *code, const char *fmt, ...)
{
	va_list ap;
	enum MHD_Result rc;

	va_start(ap, fmt);
	rc = http_verror(r, status, code, fmt, ap);
	va_end(ap);
	return rc;
}

enum MHD_Result
http_bad_request(struct req *r, const char *fmt, ...)
{
	va_list ap;
	enum MHD_Result rc;

	va_start(ap, fmt);
	rc = http_verror(r, MHD_HTTP_BAD_REQUEST, "bad_request", fmt, ap);
	va_end(ap);
	return rc;
}

enum MHD_Result
http_stream(struct req *r, unsigned status, const char *content_type,
    http_reader_fn read, void *cls, void (*free_cls)(void *cls))
{
	struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN,
	    64 * 1024, read, cls, free_cls);

	if (resp == NULL)
		fatal("out of memory");
	MHD_add_response_header(resp, "Content-Type", content_type);
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	r->stream_resp = resp;	/* the connection keeps a reference until it is done */
	return queue(r, status, resp);
}

void
http_stream_trailer(struct req *r, const char *name, const char *value)
{
	if (r->stream_resp != NULL)
		MHD_add_response_footer(r->stream_resp, name, value);
}

struct upgrade {
	http_upgrade_fn		 fn;
	void			*extra;
	char			*early;
	size_t			 early_len;
	int			 sock;
	struct MHD_UpgradeResponseHandle *urh;
};

static void *
upgrade_thread(void *arg)
{
	struct upgrade *u = arg;

	set_nonblock(u->sock, 0);
	u->fn(u->sock, u->early, u->early_len, u->extra);
	MHD_upgrade_action(u->urh, MHD_UPGRADE_ACTION_CLOSE);
	free(u->early);
	free(u);
	return NULL;
}

static void
upgrade_cb(void *cls, struct MHD_Connection *c, void *con_cls, const char *extra_in,
    size_t extra_in_size, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
	struct upgrade *u = cls;
	pthread_t t;

	u->sock = sock;
	u->urh = urh;
	u->early_len = extra_in_size;
	if (extra_in_size > 0) {	/* binary: may hold NULs */
		u->early = xmalloc(extra_in_size);
		memcpy(u->early, extra_in, extra_in_size);
	}
	if (pthread_create(&t, NULL, upgrade_thread, u) != 0) {
		log_warnx("cannot start upgrade thread");
		MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
		free(u->early);
		free(u);
		return;
	}
	pthread_detach(t);
}

/* 1 if the comma-separated header value list holds token (case-insensitive). */
static int
header_has_token(const char *list, const char *token)
{
	size_t tlen = strlen(token);

	for (const char *p = list; p != NULL && *p != '\0';) {
		p += strspn(p, " \t,");
		size_t n = strcspn(p, ",");
		size_t m = n;
		while (m > 0 && (p[m - 1] == ' ' || p[m - 1] == '\t'))
			m--;
		if (m == tlen && strncasecmp(p, token, tlen) == 0)
			return 1;
		p += n;
	}
	return 0;
}

int
http_upgrade_check(struct req *r)
{
	const char *conn = http_header(r, MHD_HTTP_HEADER_CONNECTION);
	const char *up = http_header(r, MHD_HTTP_HEADER_UPGRADE);

	if (conn == NULL || !header_has_token(conn, "upgrade")) {
		http_error(r, MHD_HTTP_BAD_REQUEST, "upgrade_required",
		    "this route needs the headers 'Connection: Upgrade' and 'Upgrade: <protocol>' "
		    "(e.g. websocket); 'Connection: Upgrade' is missing");
		return -1;
	}
	if (up == NULL || up[strspn(up, " \t,")] == '\0') {
		http_error(r, MHD_HTTP_BAD_REQUEST, "upgrade_required",
		    "this route needs the headers 'Connection: Upgrade' and 'Upgrade: <protocol>' "
		    "(e.g. websocket); 'Upgrade' is missing");
		return -1;
	}
	return 0;
}

/* Sec-WebSocket-Accept for a Sec-WebSocket-Key (RFC 6455 section 4.2.2): base64 of
 * the SHA-1 of the key and the protocol's GUID.  Caller frees; NULL on failure. */
static char *
websocket_accept(const char *key)
{
	static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
	_cleanup_free_ char *s = xasprintf("%s%s", key, guid);
	struct sha1_ctx ctx;
	uint8_t md[SHA1_DIGEST_SIZE];

	sha1_init(&ctx);
	sha1_update(&ctx, strlen(s), (const uint8_t *)s);
	sha1_digest(&ctx, sizeof md, md);
	return b64_encode(md, sizeof md);
}

enum MHD_Result
http_upgrade(struct req *r, const char *proto, http_upgrade_fn fn, void *extra)
{
	struct upgrade *u = xcalloc(1, sizeof *u);
	struct MHD_Response *resp;
	const char *key = http_header(r, "Sec-WebSocket-Key");
	char token[128];

	if (proto == NULL) {
		/* Echo the first protocol the client offered, as proxies expect. */
		const char *up = http_header(r, MHD_HTTP_HEADER_UPGRADE);
		up = up ? up + strspn(up, " \t,") : "";
		size_t n = strcspn(up, " \t,");
		if (n == 0 || n >= sizeof token)
			n = 0;
		memcpy(token, up, n);
		token[n] = '\0';
		proto = n ? token : "websocket";
	}
	u->fn = fn;
	u->extra = extra;
	resp = MHD_create_response_for_upgrade(upgrade_cb, u);
	if (resp == NULL)
		fatal("out of memory");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, proto);
	if (key != NULL && *key != '\0') {
		_cleanup_free_ char *accept = websocket_accept(key);
		if (accept != NULL)
			MHD_add_response_header(resp, "Sec-WebSocket-Accept", accept);
	}
	return queue(r, MHD_HTTP_SWITCHING_PROTOCOLS, resp);
}

static int
listen_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof sa.sun_path) {
		fprintf(stderr, "sbxtop-agent: socket path too long: %s\n", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -1;
	unlink(path);
	/* chmod after bind, not the umask: that is process-wide, and listeners start
	 * while earlier ones already serve on their threads. */
	int rc = bind(fd, (struct sockaddr *)&sa, sizeof sa);
	if (rc < 0 || chmod(path, 0600) < 0 || listen(fd, 128) < 0) {
		fprintf(stderr, "sbxtop-agent: cannot listen on unix:%s: %s\n", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static int
listen_tcp(const char *hostport)
{
	_cleanup_free_ char *host = xstrdup(hostport);
	char *colon = strrchr(host, ':');
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct addrinfo *ai;
	int fd = -1, one = 1, rc;

	if (colon == NULL) {
		fprintf(stderr, "sbxtop-agent: tcp listener needs HOST:PORT, got '%s'\n", hostport);
		return -1;
	}
	*colon = '\0';
	if (host[0] == '[' && colon[-1] == ']') {	/* [::1]:port */
		colon[-1] = '\0';
		memmove(host, host + 1, strlen(host));
	}
	if ((rc = getaddrinfo(host, colon + 1, &hints, &ai)) != 0) {
		fprintf(stderr, "sbxtop-agent: cannot resolve '%s': %s\n", hostport, gai_strerror(rc));
		return -1;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 128) < 0) {
			fprintf(stderr, "sbxtop-agent: cannot listen on tcp:%s: %s\n", hostport,
			    strerror(errno));
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(ai);
	return fd;
}

/* Print the address actually bound (useful with port 0) for whoever started us. */
static void
report_tcp_port(int fd, const char *spec)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	char host[64];
	int port;

	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
		return;
	if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof host);
		port = ntohs(s6->sin6_port);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		inet_ntop(AF_INET, &s4->sin_addr, host, sizeof host);
		port = ntohs(s4->sin_port);
	}
	log_info("listening on tcp:%s:%d (%s)", host, port, spec);
}

int
http_listen(const char *spec, int hooks_only)
{
	struct listener *l;
	int fd;

	if (nlisteners == MAX_LISTENERS) {
		fprintf(stderr, "sbxtop-agent: at most %d listeners\n", MAX_LISTENERS);
		return -1;
	}
	l = &listeners[nlisteners];
	if (strncmp(spec, "unix:", 5) == 0) {
		if ((fd = listen_unix(spec + 5)) < 0)
			return -1;
		l->unix_path = xstrdup(spec + 5);
	} else if (strncmp(spec, "tcp:", 4) == 0) {
		if ((fd = listen_tcp(spec + 4)) < 0)
			return -1;
		report_tcp_port(fd, spec);
	} else {
		fprintf(stderr, "sbxtop-agent: listener must be unix:PATH or tcp:HOST:PORT, got '%s'\n",
		    spec);
		return -1;
	}
	l->hooks_only = hooks_only;
	l->daemon = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION |
	    MHD_USE_INTERNAL_POLLING_THREAD | MHD_ALLOW_UPGRADE | MHD_USE_POLL,
	    0, NULL, NULL, dispatch, l,
	    MHD_OPTION_LISTEN_SOCKET, fd,
	    MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
	    MHD_OPTION_CONNECTION_LIMIT, 512,
	    MHD_OPTION_CONNECTION_TIMEOUT, 0,
	    MHD_OPTION_THREAD_STACK_SIZE, (size_t)(256 * 1024),
	    /* Archives move in larger pieces (the default 32 KiB pool made a
	     * copy mostly system calls); the pool is mapped, and touched only as
	     * far as a connection's data goes. */
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(256 * 1024),
	    MHD_OPTION_END);
	if (l->daemon == NULL) {
		fprintf(stderr, "sbxtop-agent: cannot start HTTP server on %s\n", spec);
		close(fd);
		free(l->unix_path);
		l->unix_path = NULL;
		return -1;
	}
	nlisteners++;
	return 0;
}

void
http_stop_all(void)
{
	for (int i = 0; i < nlisteners; i++) {
		MHD_stop_daemon(listeners[i].daemon);
		if (listeners[i].unix_path != NULL)
			unlink(listeners[i].unix_path);
		free(listeners[i].unix_path);
	}
	nlisteners = 0;
}
