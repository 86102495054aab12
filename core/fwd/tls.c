/* A forward connection's way to the agent (see fwd/fwd.h): the upgrade request
 * that opens a tunnel and the agent's answer, and for an agent behind an HTTPS
 * endpoint (lambda: the AWS proxy) the TLS session under them.  Such an agent
 * cannot be spliced: the bytes are TLS records.  The connection runs TLS
 * (OpenSSL, non-blocking, the certificate verified against AWS_CA_BUNDLE or the
 * system's store) and copies through two bounded buffers of ours instead.  Two
 * kinds go that way: a tunnel (the agent's /v1/tunnel with a WebSocket
 * handshake carrying the lambda-microvms subprotocols, raw bytes after the
 * 101), and a direct HTTP forward (`--http`: each request gets X-aws-proxy-auth
 * and X-aws-proxy-port and goes straight to the port, see fwd/http.h).  Their
 * token is re-read from the registry every tick and renewed through the backend
 * every minute or after a 403, since a forward outlives the token it started
 * with. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "core/client/agentc.h"
#include "core/fwd/http.h"
#include "core/fwd/fwd.h"
#include "lib/b64.h"
#include "lib/buf.h"
#include "lib/util.h"

/* After an OpenSSL call returned r <= 0: 0 when it waits for the socket (what
 * for is noted in k->tls_want), 1 at the endpoint's EOF, -1 when broken. */
static int
tls_status(struct conn *k, int r)
{
	switch (SSL_get_error(k->ssl, r)) {
	case SSL_ERROR_WANT_READ:
		k->tls_want |= EPOLLIN;
		return 0;
	case SSL_ERROR_WANT_WRITE:
		k->tls_want |= EPOLLOUT;
		return 0;
	case SSL_ERROR_ZERO_RETURN:
		return 1;
	case SSL_ERROR_SYSCALL:
		return errno == EAGAIN || errno == EINTR ? 0 : errno == 0 ? 1 : -1;
	default:
		return -1;
	}
}

/* Move what can be moved both ways between the client and the TLS session,
 * until nothing moves; then wait for what the last round waited for. */
void
fwd_tls_relay(struct conn *k)
{
	struct fwd *f = k->f;
	char tmp[16384], why[128];

	for (int round = 0; round < 64; round++) {
		int moved = 0, r;
		k->tls_want = 0;
		if (!k->c_eof && k->tcu.len < FWD_TLS_BUF) {
			size_t room = FWD_TLS_BUF - k->tcu.len;
			ssize_t n = recv(k->cfd, tmp, room < sizeof tmp ? room : sizeof tmp, 0);
			if (n > 0) {
				atomic_fetch_add_explicit(&f->bytes_in, (uint64_t)n,
				    memory_order_relaxed);
				if (k->fh != NULL) {
					if (fwd_http_feed(k->fh, tmp, (size_t)n, &k->tcu, why,
					    sizeof why) < 0) {
						fwd_conn_fail(k, "%s", why);
						return;
					}
				} else {
					buf_append(&k->tcu, tmp, (size_t)n);
				}
				moved = 1;
			} else if (n == 0) {
				k->c_eof = moved = 1;
			} else if (errno != EAGAIN && errno != EINTR) {
				fwd_conn_close(k);
				return;
			}
		}
		if (k->tcu.len > 0) {
			ERR_clear_error();
			r = SSL_write(k->ssl, k->tcu.data, k->tcu.len > INT32_MAX ? INT32_MAX :
			    (int)k->tcu.len);
			if (r > 0) {
				buf_consume(&k->tcu, (size_t)r);
				moved = 1;
			} else if (tls_status(k, r) != 0) {
				fwd_conn_close(k);
				return;
			}
		} else if (k->c_eof && !k->u_done) {
			/* TLS has no half-close of its own: close_notify says EOF, and
			 * the other direction goes on. */
			ERR_clear_error();
			(void)SSL_shutdown(k->ssl);
			k->u_done = moved = 1;
		}
		if (!k->u_eof && k->tuc.len < FWD_TLS_BUF) {
			size_t room = FWD_TLS_BUF - k->tuc.len;
			ERR_clear_error();
			r = SSL_read(k->ssl, tmp, (int)(room < sizeof tmp ? room : sizeof tmp));
			if (r > 0) {
				buf_append(&k->tuc, tmp, (size_t)r);
				moved = 1;
			} else {
				int st = tls_status(k, r);
				if (st < 0) {
					fwd_conn_close(k);
					return;
				}
				if (st > 0)
					k->u_eof = moved = 1;
			}
		}
		if (k->tuc.len > 0) {
			ssize_t n = send(k->cfd, k->tuc.data, k->tuc.len, MSG_NOSIGNAL);
			if (n > 0) {
				buf_consume(&k->tuc, (size_t)n);
				atomic_fetch_add_explicit(&f->bytes_out, (uint64_t)n,
				    memory_order_relaxed);
				moved = 1;
			} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
				fwd_conn_close(k);
				return;
			}
		} else if (k->u_eof && !k->c_done) {
			shutdown(k->cfd, SHUT_WR);
			k->c_done = moved = 1;
		}
		if (!moved)
			break;
	}
	if (k->c_done && (k->u_done || k->c_eof)) {
		fwd_conn_close(k);
		return;
	}
	fwd_conn_rewatch(k);
}

static void
tls_relay_start(struct conn *k, const char *early, size_t n)
{
	buf_init(&k->tcu, FWD_TLS_BUF + FWD_HTTP_HEAD_MAX + 8192);
	buf_init(&k->tuc, FWD_TLS_BUF + FWD_HEAD_MAX);
	if (n > 0)
		buf_append(&k->tuc, early, n);
	if (k->f->http)
		k->fh = fwd_http_new(k->f->inject, k->f->hosthdr);
	k->st = C_RELAY;
	fwd_tls_relay(k);
}

/* The agent's answer head is in k->uc: 101 starts the relay, anything else is
 * a failure the agent explains in its JSON body. */
static void
handshake_answer(struct conn *k, size_t head_len)
{
	int status = 0;
	char *body, *end;

	if ((status = fwd_head_status(k->head, head_len)) < 0) {
		fwd_conn_fail(k, "the agent sent something that is not HTTP");
		return;
	}
	if (status == 101 && k->ssl != NULL) {
		/* A 101 that does not answer our key (RFC 6455 4.1) did not come
		 * from a WebSocket peer that read this request: no relay. */
		char got[64];
		if (fwd_head_field(k->head, head_len, "Sec-WebSocket-Accept", got, sizeof got) < 0 ||
		    !ct_streq(got, k->f->ws_accept)) {
			fwd_conn_fail(k, "the endpoint's 101 has %s Sec-WebSocket-Accept",
			    got[0] ? "a wrong" : "no");
			return;
		}
		char *early = k->head;
		size_t n = k->head_len - head_len;
		k->head = NULL;
		tls_relay_start(k, early + head_len, n);
		free(early);
		return;
	}
	if (status == 403 && k->ssl != NULL)
		k->f->renew = 1;	/* the endpoint refused the token: the tick renews it */
	if (status == 101) {
		if (fwd_dir_open(&k->cu) < 0 || fwd_dir_open(&k->uc) < 0) {
			fwd_conn_fail(k, "cannot relay: %s", strerror(errno));
			return;
		}
		/* Bytes after the head are the port's: they go first. */
		if (k->head_len > head_len) {
			ssize_t n = write(k->uc.p[1], k->head + head_len, k->head_len - head_len);
			if (n != (ssize_t)(k->head_len - head_len)) {
				fwd_conn_fail(k, "cannot relay: %s", n < 0 ? strerror(errno) : "short write");
				return;
			}
			k->uc.held = (size_t)n;
		}
		free(k->head);
		k->head = NULL;
		k->st = C_RELAY;
		if (k->uc.held > 0 && fwd_pump(&k->uc, k->ufd, k->cfd, 0, 1, &k->f->bytes_out) < 0) {
			fwd_conn_close(k);
			return;
		}
		fwd_conn_rewatch(k);
		return;
	}
	body = k->head + head_len;
	cJSON *j = cJSON_Parse(body);
	const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "message"));
	if (msg != NULL) {
		fwd_conn_fail(k, "%s", msg);
	} else {
		if ((end = strstr(k->head, "\r\n")) != NULL)
			*end = '\0';
		fwd_conn_fail(k, "the agent answered %d", status);
	}
	cJSON_Delete(j);
}

/* The TLS session with the endpoint: its handshake, then the upgrade request
 * and the answer head as for a plain agent (a direct HTTP forward relays at
 * once).  Each step goes on until OpenSSL waits for the socket. */
static void
tls_handshake(struct conn *k)
{
	struct fwd *f = k->f;
	int r;

	k->tls_want = 0;
	if (k->st == C_TLS) {
		ERR_clear_error();
		if ((r = SSL_connect(k->ssl)) != 1) {
			long v = SSL_get_verify_result(k->ssl);
			if (tls_status(k, r) == 0) {
				fwd_conn_rewatch(k);
				return;
			}
			if (v != X509_V_OK)
				fwd_conn_fail(k, "the TLS certificate of %.100s is not trusted (%s): if it "
				    "comes from a private CA, set AWS_CA_BUNDLE to its PEM file",
				    f->host, X509_verify_cert_error_string(v));
			else
				fwd_conn_fail(k, "TLS with %.100s failed: %s", f->host,
				    ERR_peek_error() ? ERR_reason_error_string(ERR_peek_error()) :
				    "the connection closed");
			return;
		}
		if (f->http) {
			tls_relay_start(k, NULL, 0);
			return;
		}
		k->st = C_SEND;
	}
	while (k->st == C_SEND) {
		ERR_clear_error();
		r = SSL_write(k->ssl, f->req + k->req_off, (int)(f->reqlen - k->req_off));
		if (r <= 0) {
			if (tls_status(k, r) != 0) {
				fwd_conn_fail(k, "cannot talk to the endpoint %.100s", f->host);
				return;
			}
			fwd_conn_rewatch(k);
			return;
		}
		k->req_off += (size_t)r;
		if (k->req_off == f->reqlen)
			k->st = C_HEAD;
	}
	while (k->st == C_HEAD) {
		char *end;
		ERR_clear_error();
		r = SSL_read(k->ssl, k->head + k->head_len, (int)(FWD_HEAD_MAX - k->head_len));
		if (r <= 0) {
			int st = tls_status(k, r);
			if (st == 0) {
				fwd_conn_rewatch(k);
				return;
			}
			fwd_conn_fail(k, "the endpoint closed the tunnel before answering");
			return;
		}
		k->head_len += (size_t)r;
		k->head[k->head_len] = '\0';
		if ((end = strstr(k->head, "\r\n\r\n")) != NULL) {
			handshake_answer(k, (size_t)(end - k->head) + 4);
			return;
		}
		if (k->head_len >= FWD_HEAD_MAX) {
			fwd_conn_fail(k, "the agent's answer head is too long");
			return;
		}
	}
}

void
fwd_handshake(struct conn *k, uint32_t ev)
{
	struct fwd *f = k->f;

	if (k->st == C_CONNECT) {
		int err = 0;
		socklen_t len = sizeof err;
		if (getsockopt(k->ufd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			err = errno;
		if (err != 0) {
			fwd_conn_fail(k, "cannot reach the agent: %s", strerror(err));
			return;
		}
		k->st = f->tls ? C_TLS : C_SEND;
	}
	if (f->tls) {
		tls_handshake(k);
		return;
	}
	if (k->st == C_SEND) {
		ssize_t n = send(k->ufd, f->req + k->req_off, f->reqlen - k->req_off,
		    MSG_NOSIGNAL);
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			fwd_conn_fail(k, "cannot talk to the agent: %s", strerror(errno));
			return;
		}
		if (n > 0)
			k->req_off += (size_t)n;
		if (k->req_off == f->reqlen)
			k->st = C_HEAD;
		fwd_conn_rewatch(k);
		return;
	}
	if (k->st == C_HEAD && (ev & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
		ssize_t n = read(k->ufd, k->head + k->head_len, FWD_HEAD_MAX - k->head_len);
		char *end;
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			fwd_conn_fail(k, "the agent closed the tunnel before answering%s%s",
			    n < 0 ? ": " : "", n < 0 ? strerror(errno) : "");
			return;
		}
		k->head_len += (size_t)n;
		k->head[k->head_len] = '\0';
		if ((end = strstr(k->head, "\r\n\r\n")) != NULL)
			handshake_answer(k, (size_t)(end - k->head) + 4);
		else if (k->head_len >= FWD_HEAD_MAX)
			fwd_conn_fail(k, "the agent's answer head is too long");
	}
}

/* The client context for HTTPS endpoints: peer verification always on, against
 * the CA file the backend named (AWS_CA_BUNDLE) or the system's store. */
static SSL_CTX *
tls_ctx(struct fwd_mgr *m, char *why, size_t len)
{
	const char *ca = agentc_ca_file();
	SSL_CTX *ctx;

	if (m->tls != NULL)
		return m->tls;
	if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL) {
		snprintf(why, len, "cannot set up TLS");
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	/* A peer that closes without close_notify has still ended its stream. */
	SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
	    SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	if (ca != NULL ? SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1 :
	    SSL_CTX_set_default_verify_paths(ctx) != 1) {
		snprintf(why, len, "cannot load the CA certificates%s%s: check AWS_CA_BUNDLE",
		    ca ? " from " : "", ca ? ca : "");
		SSL_CTX_free(ctx);
		return NULL;
	}
	return m->tls = ctx;
}

/* A TLS session on k->ufd for the endpoint f names, verifying that name. */
int
fwd_tls_open(struct conn *k, char *why, size_t len)
{
	struct fwd *f = k->f;
	SSL_CTX *ctx = tls_ctx(f->m, why, len);
	struct in6_addr a6;
	struct in_addr a4;
	int ip = inet_pton(AF_INET, f->host, &a4) == 1 || inet_pton(AF_INET6, f->host, &a6) == 1;

	if (ctx == NULL)
		return -1;
	if ((k->ssl = SSL_new(ctx)) == NULL || SSL_set_fd(k->ssl, k->ufd) != 1) {
		snprintf(why, len, "cannot set up TLS");
		return -1;
	}
	/* An address is checked against the certificate's IP names; a host name is
	 * sent as SNI and checked against its DNS names. */
	if (ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(k->ssl), f->host) != 1 :
	    (SSL_set_tlsext_host_name(k->ssl, f->host) != 1 || SSL_set1_host(k->ssl, f->host) != 1)) {
		snprintf(why, len, "cannot verify TLS for %.100s", f->host);
		return -1;
	}
	return 0;
}

void
fwd_ws_accept(const char *key, char *out, size_t len)
{
	static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
	unsigned char md[SHA_DIGEST_LENGTH];
	char buf[128];
	char *b;

	snprintf(buf, sizeof buf, "%s%s", key, guid);
	SHA1((const unsigned char *)buf, strlen(buf), md);
	b = b64_encode(md, sizeof md);
	snprintf(out, len, "%s", b);
	free(b);
}

/* The request that opens a tunnel through the agent (or, for a direct HTTP
 * forward, the header lines each request gets), from s's secret and headers. */
int
fwd_build_req(struct fwd *f, const struct sandbox *s, struct sbx_err *e)
{
	char extra[4096], key[32];
	unsigned char rnd[16];

	if (sandbox_agent_header_lines(s, extra, sizeof extra, e) < 0)
		return -1;
	if (RAND_bytes(rnd, sizeof rnd) != 1)
		return sbx_error(e, SBX_EINTERNAL, NULL, "no random bytes for a key");
	if (f->req != NULL)
		explicit_bzero(f->req, f->reqlen);
	free(f->req);
	f->req = NULL;
	if (f->inject != NULL)
		explicit_bzero(f->inject, strlen(f->inject));
	free(f->inject);
	f->inject = NULL;
	free(f->hdrs_seen);
	f->hdrs_seen = s->agent_headers ? cJSON_PrintUnformatted(s->agent_headers) : xstrdup("");
	if (f->http) {
		/* Straight to the port: the endpoint's token and port, never the
		 * sandbox secret (the server there is not the agent). */
		f->inject = xasprintf("%sX-aws-proxy-port: %d\r\n", extra, f->remote);
		return 0;
	}
	if (f->tls) {
		/* The AWS proxy passes WebSocket upgrades; the port behind the
		 * endpoint is named in the subprotocols (the agent's).  The agent
		 * answers 101 with the matching Sec-WebSocket-Accept and then relays
		 * raw bytes. */
		char *k64 = b64_encode(rnd, sizeof rnd);
		snprintf(key, sizeof key, "%s", k64);
		free(k64);
		fwd_ws_accept(key, f->ws_accept, sizeof f->ws_accept);
		f->req = xasprintf("GET /v1/tunnel?port=%d HTTP/1.1\r\nHost: %s\r\n"
		    "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
		    "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Protocol: lambda-microvms, "
		    "lambda-microvms.port.%d\r\nX-Sbx-Origin: forward\r\n"
		    "X-Sandbox-Secret: %s\r\n%s\r\n", f->remote, f->hosthdr, key,
		    FWD_AWS_AGENT_PORT, s->agent_secret ? s->agent_secret : "", extra);
	} else {
		f->req = xasprintf("GET /v1/tunnel?port=%d HTTP/1.1\r\nHost: %s\r\n"
		    "Connection: Upgrade\r\nUpgrade: tcp\r\nX-Sbx-Origin: forward\r\n"
		    "X-Sandbox-Secret: %s\r\n%s\r\n", f->remote, f->hosthdr,
		    s->agent_secret ? s->agent_secret : "", extra);
	}
	f->reqlen = strlen(f->req);
	return 0;
}
