/* The Streamable HTTP transport's streams and sessions (mcp/http.c serves
 * them, mcp/http-sess.c keeps them): private to the two. */
#ifndef MCP_HTTP_SESS_H
#define MCP_HTTP_SESS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "mcp/http.h"

struct MHD_Connection;
struct MHD_Daemon;
struct http_door;
struct mcp_metrics;
struct mcp_session;

#define SESSIONS_MAX	64		/* MCP sessions at once on one listener */
#define SESSION_IDLE_MS	(60 * 60 * 1000) /* unused this long: ended for a new one */
#define QUEUE_MAX	(8u << 20)	/* notifications waiting for a slow client */

struct item {
	struct item	*next;
	char		*text;
	size_t		 len;
	int		 response;
	int		 endpoint;	/* an HTTP+SSE session's endpoint event */
};

struct sess;

/* A POST waiting for its answer (id set), the session's GET stream (get set),
 * or a sink for what a notification's POST provokes (neither). */
struct stream {
	struct sess	*hs;
	struct stream	*next;		/* in hs->posts */
	cJSON		*id;
	int		 get;
	struct item	*head, **tail;
	size_t		 bytes;		/* notifications queued */
	unsigned	 dropped;
	int		 answered;	/* the response is queued */
	int		 cancelled;	/* notifications/cancelled for it arrived */
	/* The SSE reader's current event. */
	char		*out;
	size_t		 outlen, outoff;
	struct MHD_Connection *conn;	/* a GET stream's, to notice its client left */
};

struct sess {
	struct mcp_http		*h;
	struct sess		*next;		/* in h->sessions */
	char			 id[65];
	struct mcp_session	*ms;
	pthread_mutex_t		 feed_mu;	/* one message into ms at a time */
	int			 refs;		/* under h->mu */
	int64_t			 used_ms;	/* under h->mu */
	int64_t			 since_ms;	/* wall clock, for mcp_http_sessions */
	pthread_mutex_t		 mu;		/* everything below */
	pthread_cond_t		 cv;
	int			 ended;
	int			 ephemeral;	/* one 2026-07-28 POST's: not listed */
	int			 sse;		/* HTTP+SSE (2024-11-05): everything it
						 * says goes to its GET stream */
	struct mcp_http_caller	 who;		/* the credential that opened it */
	struct stream		*posts;
	struct stream		*get;
};

struct mcp_http {
	struct core		*core;
	struct MHD_Daemon	*d;
	struct http_door	*door;		/* between the socket and d */
	struct mcp_metrics	*metrics;
	char			*token;		/* NULL: no auth (test-only) */
	char			 host[64];	/* as bound, for Origin and Host */
	int			 loopback;
	int			 port;
	char			 url[128];
	int			 stopping;	/* atomic */
	pthread_mutex_t		 mu;
	struct sess		*sessions;
	unsigned		 nsessions;
	mcp_http_session_fn	 on_session;	/* set at the start, then read-only */
	void			*on_session_arg;
	struct mcp_http_router	 router;	/* other paths (fn NULL: none) */
};

/* The stream of the POST whose thread is feeding its session right now. */
extern __thread struct stream *http_feeding;

struct stream	*hstream_new(struct sess *, const cJSON *);
void		 hstream_free(struct stream *);
void		 hstream_push(struct stream *, const char *, size_t, int);
struct item	*hstream_pop(struct stream *);
struct stream	*hsess_find_post(struct sess *, const cJSON *);
void		 hsess_unlink_post(struct sess *, struct stream *);
struct sess	*hsess_new(struct mcp_http *, const struct mcp_http_caller *);
void		 hsess_end(struct sess *);
void		 hsess_unref(struct sess *);
struct sess	*hsess_find(struct mcp_http *, const char *, const struct mcp_http_caller *);
int		 hsess_remove(struct mcp_http *, struct sess *);
int		 hsess_make_room(struct mcp_http *);

#endif
