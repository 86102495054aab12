/* The agent's request reader: bytes from a connection in; one request's head, body
 * and trailers out.  Node's http-parser (libhttp-parser) does the parsing; this
 * adds the limits, the decoding of the target and the query, and the checks
 * RFC 9112 asks of a server (Host, the version).  No I/O, so the fuzzer drives it
 * as a connection does. */
#ifndef AGENT_HTTP_PARSE_H
#define AGENT_HTTP_PARSE_H

#include <stddef.h>
#include <http_parser.h>

#include "lib/buf.h"

/* The request line and the header fields together (and the trailers). */
#define HTTP_HEAD_MAX (64 * 1024)
/* Header fields (or trailer fields, or query arguments) in one request. */
#define HTTP_FIELDS_MAX 128

struct http_field {
	char	*name;
	char	*value;		/* NULL: a query argument without '=' */
};

struct http_fields {
	struct http_field *v;
	size_t		   n;
};

enum http_ev {
	HTTP_EV_MORE,		/* all of the input was taken: read more */
	HTTP_EV_HEAD,		/* the head is in: method, path, query and headers are set */
	HTTP_EV_DONE,		/* the request is whole: body delivered, trailers set */
	HTTP_EV_ERROR,		/* answer status with why, then close the connection */
};

struct http_msg {
	http_parser	 p;
	/* The body, piece by piece as it arrives (chunked encoding undone). */
	void		(*on_body)(void *cls, const char *data, size_t len);
	void		*cls;

	/* Set from HTTP_EV_HEAD on. */
	const char	*method;
	char		*path;		/* percent-decoded, never holding a NUL */
	struct http_fields query;	/* '+' and percent-decoded, in order */
	struct http_fields headers;	/* values without surrounding blanks */
	int		 http_minor;	/* HTTP/1.x */
	int		 keep_alive;	/* the client keeps the connection after this one */
	int		 upgrade;	/* Connection: upgrade with an Upgrade field */
	int		 has_body;	/* a body follows the head */
	int		 expect_continue; /* "Expect: 100-continue" */
	/* Set from HTTP_EV_DONE on. */
	struct http_fields trailers;

	/* Set with HTTP_EV_ERROR. */
	unsigned	 err_status;
	char		 err[160];

	/* The reader's own. */
	struct buf	 url;
	int		 phase;
	int		 in_value;	/* the last piece was a field's value */
	int		 fields_over;	/* a field past HTTP_FIELDS_MAX was dropped */
	struct buf	 field, value;
};

/* A reader for requests on one connection. */
void http_msg_init(struct http_msg *m, void (*on_body)(void *, const char *, size_t),
    void *cls);
/* Forget the request read; the next bytes start a new one. */
void http_msg_reset(struct http_msg *m);
void http_msg_free(struct http_msg *m);

/* Read from data; *used is what was taken.  Stops at each event: feed the rest
 * again after acting on it.  After HTTP_EV_DONE of an upgrade (m->upgrade), what
 * follows is not HTTP. */
enum http_ev http_msg_feed(struct http_msg *m, const char *data, size_t len, size_t *used);

/* The first field of that name (case-insensitive), or NULL. */
const char *http_fields_get(const struct http_fields *f, const char *name);
/* 1 if the comma-separated list holds token (case-insensitive). */
int http_list_has(const char *list, const char *token);
/* The reason phrase of a status code ("Not Found"), "Unknown" for others. */
const char *http_reason(unsigned status);

#endif
