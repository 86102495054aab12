/* Between the agent's HTTP layer's two halves: http.c (routes, auth, what a handler
 * answers) and http-conn.c (listeners, connections, putting answers on the wire). */
#ifndef AGENT_HTTP_INT_H
#define AGENT_HTTP_INT_H

#include "agent/http.h"
#include "agent/http-parse.h"

/* One client connection, served by a thread of its own. */
struct http_conn {
	int		 fd;
	struct listener	*listener;	/* http-conn.c's */
	int		 hooks_only;	/* the AWS lifecycle hooks listener */
	struct http_msg	 msg;		/* the request being read */
	struct req	*req;		/* its state, from its head on */
};

/* The answer a handler made, put on the wire by the connection once the
 * handler returned (and the request's body is in). */
struct http_out {
	unsigned	 status;
	struct buf	 fields;	/* "Name: value\r\n" lines */
	char		*body;		/* a whole answer ... */
	size_t		 body_len;
	http_reader_fn	 read;		/* ... or a stream */
	void		*cls;
	void		(*free_cls)(void *cls);
	struct buf	 trailers;	/* after a stream's last chunk */
	http_upgrade_fn	 upgrade;	/* ... or 101 and the socket to this */
	void		*upgrade_extra;
};

/* The head is in: the request's route, checked against the secret.  An answer
 * may already be made (404, 405, 401, 503). */
struct req *http_req_begin(struct http_conn *c);
/* A piece of the body. */
void http_req_body(struct req *r, const char *data, size_t len);
/* The whole request is in: answer it (the handler runs here, unless answered).
 * HTTP_DROP: close the connection without an answer. */
enum http_rc http_req_run(struct req *r);
/* Done with it; completed when the whole answer went out. */
void http_req_free(struct req *r, int completed);

#endif
