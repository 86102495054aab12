/* The agent's HTTP layer: listeners, the route table, auth, bounded request
 * bodies, JSON and streamed responses, and connection upgrades.  Requests are
 * read by Node's http-parser (agent/http-parse.c); the connections are ours
 * (agent/http-conn.c).
 *
 * Threading: every connection has its own thread, so a handler may block (an exec
 * waiting for its process, a stream waiting for output) without holding up others. */
#ifndef AGENT_HTTP_H
#define AGENT_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <http_parser.h>	/* enum http_status: HTTP_STATUS_OK, ... */
#include <cjson/cJSON.h>

#include "lib/buf.h"

#define HTTP_MAX_PARAMS 2
#define HTTP_BODY_MAX_DEFAULT (1u << 20)	/* 1 MiB for JSON bodies */

struct req;
struct http_conn;
struct http_out;

/* What a handler returns: HTTP_DONE once it answered (through exactly one of the
 * http_* responders below, whose result it returns), HTTP_DROP to close the
 * connection without an answer (the client went away). */
enum http_rc { HTTP_DROP = -1, HTTP_DONE = 0 };

typedef enum http_rc (*route_fn)(struct req *r);
/* For ROUTE_STREAM_BODY: called per chunk of the body as it arrives; return 0 to go
 * on, or -1 to take no more (the rest of the body is read and dropped).  It never
 * answers: run() does, once the whole body is in, from whatever on_body recorded. */
typedef int (*route_body_fn)(struct req *r, const char *data, size_t len);

enum {
	ROUTE_NOAUTH      = 1 << 0,	/* no X-Sandbox-Secret needed (health, hooks) */
	ROUTE_STREAM_BODY = 1 << 1,	/* body goes to on_body, not into r->body */
	ROUTE_JSON        = 1 << 2,	/* body must parse as JSON: r->json (may be {}) */
};

struct route {
	const char	*method;
	const char	*pattern;	/* "/v1/execs/ * /stream": '*' is one segment */
	int		 flags;
	route_fn	 run;		/* called once the whole body is in */
	route_body_fn	 on_body;	/* ROUTE_STREAM_BODY only */
	size_t		 body_max;	/* 0: HTTP_BODY_MAX_DEFAULT */
};

struct req {
	struct http_conn	*conn;
	const struct route	*route;
	const char		*method;
	const char		*url;		/* the path, percent-decoded */
	char			*params[HTTP_MAX_PARAMS];	/* '*' segments, decoded */
	struct buf		 body;
	cJSON			*json;		/* parsed body for ROUTE_JSON */
	int			 answered;	/* a response was queued */
	int			 overflow;	/* body went over its cap */
	int			 body_stopped;	/* on_body wanted no more */
	void			*ctx;		/* the handler's own state */
	void			(*ctx_free)(void *ctx, int completed);	/* at request end */
	struct http_out		*out;		/* the answer, once made */
};

/* Route tables, one per area, each ending with a NULL pattern. */
extern const struct route exec_routes[], files_routes[], archive_routes[],
    tunnel_routes[], pty_routes[], events_routes[], hooks_routes[], seed_routes[];

/* The archive formats this agent reads and writes (a JSON array), for /health. */
cJSON *archive_formats(void);

/* Listeners: "unix:PATH" or "tcp:HOST:PORT".  hooks is a listener serving only the
 * AWS lifecycle hook routes.  0 or -1 with a message on stderr. */
int http_listen(const char *spec, int hooks_only);
void http_stop_all(void);

/* Request helpers: the first header, query argument or trailer (a field after a
 * chunked body, read once the body is in) of that name, or NULL. */
const char *http_header(struct req *r, const char *name);
const char *http_query(struct req *r, const char *name);
const char *http_trailer(struct req *r, const char *name);
/* The connection's socket, to notice a client that went away (POLLRDHUP). */
int http_conn_fd(struct req *r);
/* 1 if the peer on fd has closed or reset its end (polled without waiting). */
int http_peer_gone(int fd);

/* Responders. */
enum http_rc http_json(struct req *r, unsigned status, cJSON *body);	/* takes body */
enum http_rc http_error(struct req *r, unsigned status, const char *code,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
enum http_rc http_bad_request(struct req *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* What a stream's read callback returns besides a byte count. */
#define HTTP_STREAM_END		((ssize_t)-1)	/* the last chunk went out */
#define HTTP_STREAM_ERROR	((ssize_t)-2)	/* cut short: the client sees no end */

/* A streamed (chunked) response: read is called whenever the client can take more;
 * it may block; it returns bytes written to buf (>0), 0 for "nothing yet, call
 * again", or HTTP_STREAM_END / HTTP_STREAM_ERROR.  free is called once, when the
 * response is done or the client went away. */
typedef ssize_t (*http_reader_fn)(void *cls, uint64_t pos, char *buf, size_t max);
enum http_rc http_stream(struct req *r, unsigned status, const char *content_type,
    http_reader_fn read, void *cls, void (*free_cls)(void *cls));
/* Add a header to r's answer, made by http_stream in the same handler. */
void http_stream_header(struct req *r, const char *name, const char *value);
/* Add a trailer (a header after the last chunk) to r's streamed response.  Call it
 * from the read callback, which runs on the connection's thread, before returning
 * HTTP_STREAM_END.  HTTP/1.1 clients only (no chunks in 1.0). */
void http_stream_trailer(struct req *r, const char *name, const char *value);

/* 0 when the request asks for an upgrade ("Connection: Upgrade" and an "Upgrade"
 * token); otherwise answers 400 naming the missing header and returns -1. */
int http_upgrade_check(struct req *r);

/* Upgrade the connection (101 Switching Protocols, "Upgrade: proto", or the
 * client's first Upgrade token when proto is NULL; Sec-WebSocket-Accept when the
 * client sent Sec-WebSocket-Key) and hand the raw socket to fn, which runs on the
 * connection's own thread once the handler returned and owns sock until it returns (the socket is closed after; fn may
 * shutdown() it but must not close it); early holds the bytes the client sent
 * after the request head; extra is passed through. */
typedef void (*http_upgrade_fn)(int sock, const char *early, size_t early_len, void *extra);
enum http_rc http_upgrade(struct req *r, const char *proto, http_upgrade_fn fn,
    void *extra);

#endif
