/* What the forward files share (core-forward.c, fwd/relay.c, fwd/tls.c, fwd/store.c):
 * the forward, its connections and the manager that runs them.  Nothing here
 * knows struct core: the relay reaches the core through struct fwd_hooks. */
#ifndef SBX_FWD_INT_H
#define SBX_FWD_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>

#include <cjson/cJSON.h>
#include <openssl/ssl.h>

#include "core/fwd/http.h"
#include "core/fwd/relay.h"
#include "core/sandbox.h"
#include "lib/buf.h"
#include "lib/err.h"

#define FWD_BUF		(256 * 1024)	/* per direction: the back-pressure bound */
#define FWD_HEAD_MAX	(16 * 1024)	/* the agent's answer head */
#define FWD_CONNS_MAX	4096		/* per manager; more are refused */
#define FWD_HANDSHAKE_MS 10000		/* the agent connects within 5 s */
#define FWD_TICK_MS	250
#define FWD_FLUSH_MS	1000		/* counters to the registry, at most this often */
#define FWD_RELEASE_MS	5000		/* another process letting go of a port */
#define FWD_EVENTS	256
#define FWD_TLS_BUF	(64 * 1024)	/* per direction, TLS relays */
#define FWD_RENEW_MS	60000		/* an HTTPS endpoint's token is checked this often */
/* The port of an AWS MicroVM endpoint where the image runs the agent: the
 * endpoint's default, named in the tunnel's WebSocket subprotocol. */
#define FWD_AWS_AGENT_PORT 8080

enum tag_kind { TAG_WAKE, TAG_LISTEN, TAG_CLIENT, TAG_UP };
struct tag {
	enum tag_kind	 kind;
	void		*p;
};

/* One direction: bytes spliced from the source wait in a pipe until the
 * destination takes them (no copy through our memory); the source is read only
 * while the pipe has room. */
struct dir {
	int		 p[2];		/* -1 until the relay starts */
	size_t		 cap;		/* the pipe's size */
	size_t		 held;		/* bytes in it */
	int		 full;		/* it took nothing more: wait for a drain */
	int		 eof;		/* the source said EOF */
	int		 done;		/* EOF passed on as shutdown(SHUT_WR) */
};

enum conn_state { C_CONNECT, C_TLS, C_SEND, C_HEAD, C_RELAY };

struct fwd;

struct conn {
	struct conn	*prev, *next;	/* in the forward's list */
	struct conn	*dead_next;
	struct fwd	*f;
	int		 cfd, ufd;	/* the local client, the agent */
	struct tag	 ctag, utag;
	uint32_t	 cmask, umask;	/* what epoll watches now (0: not registered) */
	enum conn_state	 st;
	size_t		 req_off;
	struct dir	 cu, uc;	/* client to agent, agent to client */
	char		*head;		/* the agent's answer, while it comes */
	size_t		 head_len;
	int64_t		 deadline;	/* of the handshake */
	int		 dead;
	/* HTTPS endpoints only: */
	SSL		*ssl;
	uint32_t	 tls_want;	/* what OpenSSL waits for on ufd to go on */
	struct buf	 tcu, tuc;	/* client to endpoint, endpoint to client */
	struct fwd_http	*fh;		/* a direct HTTP forward's request rewriter */
	int		 c_eof, u_eof;	/* the client, the endpoint said EOF */
	int		 c_done, u_done; /* that EOF was passed on */
};

struct fwd {
	struct fwd	*next;
	struct fwd_mgr	*m;
	uint64_t	 seq;		/* unique in this manager */
	char		 id[32];
	char		 addr[64];
	int		 local, remote;
	int		 lfd;
	struct tag	 ltag;
	int64_t		 since;		/* wall ms */
	struct sockaddr_storage ep;	/* the agent */
	socklen_t	 eplen;
	char		*req;		/* the upgrade request (holds the secret) */
	size_t		 reqlen;
	char		 ws_accept[32];	/* the Sec-WebSocket-Accept the key asks for */
	int		 tls;		/* the endpoint is https */
	int		 http;		/* a direct HTTP forward (tls only) */
	char		 host[256];	/* the endpoint's name (TLS SNI and verification) */
	char		*hosthdr;	/* its host[:port], for Host */
	char		*inject;	/* direct HTTP: the header lines each request gets */
	char		*hdrs_seen;	/* the agent headers req was built from */
	int		 renew;		/* the endpoint refused the token: renew it */
	int64_t		 next_renew;
	enum sbx_state	 state;		/* as last read from the registry */
	struct conn	*conns;
	_Atomic uint64_t conns_now, conns_total, bytes_in, bytes_out, failures;
	uint64_t	 flushed[5];	/* the counters last written to the registry */
	char		 last_error[160];
	int64_t		 last_log;
	int		 stop;
};

struct fwd_mgr {
	struct fwd_hooks hooks;
	pthread_t	 th;
	int		 ep, wakefd;
	struct tag	 wtag;
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;		/* a forward was torn down */
	struct fwd	*fwds;
	SSL_CTX		*tls;		/* made for the first HTTPS endpoint */
	struct conn	*dead;		/* closed in this batch, freed after it */
	size_t		 nconns;
	uint64_t	 next_seq;
	int		 quit;
	int64_t		 next_tick, last_flush;
};

/* ---- fwd/relay.c: the loop --------------------------------------------- */

/* Hand f (its listening socket open, its request built) to the loop. */
void fwd_mgr_add(struct fwd_mgr *m, struct fwd *f);
/* Mark the forwards of id (NULL: all) to remote (<= 0: any) for stopping and
 * wait until the loop has torn them down.  m may be NULL.  Returns how many. */
int fwd_mgr_stop(struct fwd_mgr *m, const char *id, int remote);
/* Free f and the secrets it holds. */
void fwd_free(struct fwd *f);
/* Watch k's sockets for what its state waits for. */
void fwd_conn_rewatch(struct conn *k);
/* Close k (freed after the loop's batch). */
void fwd_conn_close(struct conn *k);
/* Count a failed connection, note and log why, close it. */
void fwd_conn_fail(struct conn *k, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The two pipes of a plain relay; -1 with errno set. */
int fwd_dir_open(struct dir *d);
/* Move what can be moved in direction d without blocking; -1 when broken. */
int fwd_pump(struct dir *d, int src, int dst, int can_read, int can_write,
    _Atomic uint64_t *count);

/* ---- fwd/tls.c: the tunnel's handshake and the TLS relay --------------- */

/* The request that opens a tunnel through the agent (or, for a direct HTTP
 * forward, the header lines each request gets), from s's secret and headers. */
int fwd_build_req(struct fwd *f, const struct sandbox *s, struct sbx_err *e);
/* Sec-WebSocket-Accept for key (RFC 6455 4.2.2: base64 of SHA-1 of key and the GUID). */
void fwd_ws_accept(const char *key, char *out, size_t len);
/* A TLS session on k->ufd for the endpoint k's forward names; -1 with why. */
int fwd_tls_open(struct conn *k, char *why, size_t len);
/* Drive k's handshake on ev (the upgrade request, the agent's answer; TLS first
 * for an HTTPS endpoint), starting the relay on a 101. */
void fwd_handshake(struct conn *k, uint32_t ev);
/* Move what can be moved both ways between k's client and its TLS session. */
void fwd_tls_relay(struct conn *k);

/* ---- fwd/store.c: the forwards in the registry ------------------------- */

int fwd_entry_int(const cJSON *en, const char *k);
uint64_t fwd_entry_u64(const cJSON *en, const char *k);
/* The entry was written by this process. */
int fwd_entry_is_own(const cJSON *en);
/* The process that wrote the entry still runs. */
int fwd_entry_live(const cJSON *en);
/* The entry is f's. */
int fwd_entry_is(const cJSON *en, const struct fwd *f);
/* f's counters now: conns, conns_total, bytes_in, bytes_out, failures. */
void fwd_counters(struct fwd *f, uint64_t v[5]);
/* Add the entry of f (started by this process) to its sandbox's record. */
int fwd_store_add(const struct fwd *f, struct sbx_err *e);
/* Drop the entry of f (started by this process) after a failed start. */
void fwd_store_forget(const struct fwd *f);
/* Drop the entries of sandbox id on addr:local written by process pid. */
int fwd_store_drop(const char *id, int local, int pid, const char *addr, struct sbx_err *e);
/* Take out the entries of sandbox id (NULL: all) to remote (0: any), only this
 * process's when own_only; each goes to the array removed with its "sandbox". */
int fwd_store_remove(const char *id, int remote, int own_only, cJSON *removed,
    struct sbx_err *e);
/* The loop's look at the registry, under m->mu: forwards whose sandbox or
 * entry went away are marked to stop, renewed tokens picked up, counters
 * written when they changed. */
void fwd_store_sync(struct fwd_mgr *m, int64_t now);

#endif
