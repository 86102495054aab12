/* Shells on lambda sandboxes: the agent's GET /v1/pty through the MicroVM's
 * HTTPS endpoint.  The endpoint's proxy carries WebSocket upgrades, so the
 * request is a WebSocket handshake naming the agent's port in the
 * lambda-microvms subprotocols (as forwards' tunnels are), authorised by a
 * CreateMicrovmShellAuthToken token when the MicroVM runs with the SHELL_INGRESS
 * connector, else by the endpoint token the sandbox already has.  After the 101
 * the TLS stream carries the agent's PTY frames; a thread relays them to one end
 * of a socket pair, whose other end is what the core gets: the same frames, in
 * the clear, as on every other backend. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "backends/lambda/aws-microvms.h"
#include "backends/lambda/lambda-pty.h"
#include "core/client/agentc.h"
#include "lib/b64.h"
#include "lib/log.h"
#include "lib/util.h"

#define HEAD_MAX	8192
#define TIMEOUT_MS	15000
#define RELAY_BUF	(64 * 1024)

struct relay {
	SSL	*ssl;
	int	 net;		/* the TCP socket under ssl */
	int	 local;		/* our end of the socket pair */
};

static void
relay_free(struct relay *r)
{
	if (r->ssl) {
		(void)SSL_shutdown(r->ssl);
		SSL_free(r->ssl);
	}
	if (r->net >= 0)
		close(r->net);
	if (r->local >= 0)
		close(r->local);
	free(r);
}

/* Both ways until either side ends. */
static void *
relay_run(void *arg)
{
	struct relay *r = arg;
	char *buf = xmalloc(RELAY_BUF);

	for (;;) {
		struct pollfd p[2] = { { r->net, POLLIN, 0 }, { r->local, POLLIN, 0 } };
		int n;
		if (SSL_pending(r->ssl) == 0 && poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (SSL_pending(r->ssl) > 0 || (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			if ((n = SSL_read(r->ssl, buf, RELAY_BUF)) <= 0)
				break;
			if (write_all(r->local, buf, (size_t)n) < 0)
				break;
		}
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t m = read(r->local, buf, RELAY_BUF);
			if (m < 0 && errno == EINTR)
				continue;
			if (m <= 0 || SSL_write(r->ssl, buf, (int)m) <= 0)
				break;
		}
	}
	free(buf);
	relay_free(r);
	return NULL;
}

/* host and port of an https:// (or, for tests, http://) URL; *tls says which. */
static int
url_split(const char *url, char *host, size_t hostlen, char *port, size_t portlen, int *tls)
{
	const char *h, *end, *colon;

	*tls = strncmp(url, "https://", 8) == 0;
	if (!*tls && strncmp(url, "http://", 7) != 0)
		return -1;
	h = url + (*tls ? 8 : 7);
	end = h + strcspn(h, "/?#");
	if (end == h)
		return -1;
	if (*h == '[') {
		const char *rb = memchr(h, ']', (size_t)(end - h));
		if (rb == NULL)
			return -1;
		snprintf(host, hostlen, "%.*s", (int)(rb - h - 1), h + 1);
		colon = rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
	} else {
		colon = memchr(h, ':', (size_t)(end - h));
		snprintf(host, hostlen, "%.*s", (int)((colon ? colon : end) - h), h);
	}
	if (colon)
		snprintf(port, portlen, "%.*s", (int)(end - colon - 1), colon + 1);
	else
		snprintf(port, portlen, "%s", *tls ? "443" : "80");
	return 0;
}

static int
tcp_connect(const char *host, const char *port, struct sbx_err *e)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai, *p;
	int fd = -1, rc;

	if ((rc = getaddrinfo(host, port, &hints, &ai)) != 0)
		return sbx_error(e, SBX_EAGENT, "check the network", "cannot resolve the MicroVM "
		    "endpoint %s: %s", host, gai_strerror(rc));
	for (p = ai; p != NULL && fd < 0; p = p->ai_next) {
		fd = socket(p->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, p->ai_addr, p->ai_addrlen) < 0) {
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(ai);
	if (fd < 0)
		return sbx_error_errno(e, SBX_EAGENT, "run `sbxtop status ID`", "cannot reach the "
		    "MicroVM endpoint %s:%s", host, port);
	return fd;
}

static SSL *
tls_open(int fd, const char *host, struct sbx_err *e)
{
	static SSL_CTX *ctx;
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	const char *ca = agentc_ca_file();
	struct in6_addr a6;
	struct in_addr a4;
	int ip = inet_pton(AF_INET, host, &a4) == 1 || inet_pton(AF_INET6, host, &a6) == 1;
	SSL *ssl;

	pthread_mutex_lock(&lock);
	if (ctx == NULL && (ctx = SSL_CTX_new(TLS_client_method())) != NULL) {
		SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
		SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
		if (ca != NULL ? SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1 :
		    SSL_CTX_set_default_verify_paths(ctx) != 1) {
			SSL_CTX_free(ctx);
			ctx = NULL;
			pthread_mutex_unlock(&lock);
			sbx_error(e, SBX_EAGENT, "check AWS_CA_BUNDLE", "cannot load the CA "
			    "certificates%s%s", ca ? " from " : "", ca ? ca : "");
			return NULL;
		}
	}
	pthread_mutex_unlock(&lock);
	if (ctx == NULL || (ssl = SSL_new(ctx)) == NULL || SSL_set_fd(ssl, fd) != 1) {
		sbx_error(e, SBX_EINTERNAL, NULL, "cannot set up TLS");
		return NULL;
	}
	if (ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) != 1 :
	    (SSL_set_tlsext_host_name(ssl, host) != 1 || SSL_set1_host(ssl, host) != 1)) {
		SSL_free(ssl);
		sbx_error(e, SBX_EINTERNAL, NULL, "cannot verify TLS for %s", host);
		return NULL;
	}
	if (SSL_connect(ssl) != 1) {
		long v = SSL_get_verify_result(ssl);
		SSL_free(ssl);
		if (v != X509_V_OK)
			sbx_error(e, SBX_EDENIED, agentc_untrusted_hint, "the TLS certificate of the "
			    "MicroVM endpoint %s is not trusted: %s", host,
			    X509_verify_cert_error_string(v));
		else
			sbx_error(e, SBX_EAGENT, NULL, "TLS with the MicroVM endpoint %s failed",
			    host);
		return NULL;
	}
	return ssl;
}

/* The answer head, read a byte at a time: the frames start right after it.
 * Over TLS when ssl, else straight from fd. */
static int
read_head(SSL *ssl, int fd, char *head, size_t max, struct sbx_err *e)
{
	size_t n = 0;

	while (n + 1 < max) {
		if (ssl ? SSL_read(ssl, head + n, 1) != 1 : read(fd, head + n, 1) != 1)
			return sbx_error(e, SBX_EAGENT, NULL, "the MicroVM endpoint closed the shell "
			    "connection before answering");
		head[++n] = '\0';
		if (n >= 4 && memcmp(head + n - 4, "\r\n\r\n", 4) == 0)
			return 0;
	}
	return sbx_error(e, SBX_EAGENT, NULL, "the MicroVM endpoint's answer head is too long");
}

/* The header lines of a token map ({"X-aws-proxy-auth": ...}) into out. */
static int
token_lines(const cJSON *map, char *out, size_t len)
{
	const cJSON *h;
	size_t n = 0;

	out[0] = '\0';
	cJSON_ArrayForEach(h, map) {
		if (!cJSON_IsString(h) || strpbrk(h->string, ": \t\r\n") != NULL ||
		    strpbrk(h->valuestring, "\r\n") != NULL)
			return -1;
		n += (size_t)snprintf(out + n, len - n, "%s: %s\r\n", h->string, h->valuestring);
		if (n >= len)
			return -1;
	}
	return 0;
}

/* The headers that authorise the shell: a shell token when the MicroVM runs
 * with SHELL_INGRESS (and AWS gives one), else the sandbox's endpoint token.
 * *how says which. */
static int
shell_auth(struct sandbox *s, int minutes, int want_shell, char *out, size_t len,
    const char **how, struct sbx_err *e)
{
	const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(s->backend_data, "microvmId"));
	const char *region = cJSON_GetStringValue(cJSON_GetObjectItem(s->backend_data, "region"));
	const char *api = cJSON_GetStringValue(cJSON_GetObjectItem(s->backend_data,
	    "apiEndpoint"));
	cJSON *map = NULL;
	struct awsmv *c;
	int rc;

	*how = "the endpoint token";
	if (want_shell && cJSON_IsTrue(cJSON_GetObjectItem(s->backend_data, "shellIngress")) &&
	    id != NULL) {
		if ((c = awsmv_new(region, NULL, api, e)) == NULL)
			return -1;
		rc = awsmv_shell_token(c, id, minutes, &map, e);
		if (rc < 0 && strcmp(awsmv_last_error(c), "ValidationException") != 0) {
			awsmv_free(c);
			return -1;
		}
		if (rc < 0)
			log_debug("sandbox %s: no shell token (%s); the endpoint token instead",
			    s->id, e->msg);
		awsmv_free(c);
	}
	if (map != NULL) {
		rc = token_lines(map, out, len);
		cJSON_Delete(map);
		*how = "a shell token";
	} else {
		rc = sandbox_agent_header_lines(s, out, len, e) < 0 ? -1 : 0;
	}
	if (rc < 0)
		return sbx_error(e, SBX_EBACKEND, NULL, "sandbox %s: unusable token headers for "
		    "the shell", s->id);
	return 0;
}

/* One attempt with the header lines auth; *status gets the endpoint's answer
 * (0: none). */
static int
open_with(struct sandbox *s, const char *query, const char *origin, const char *auth,
    const char *how, int *statusp, struct sbx_err *e)
{
	char host[256], port[16], head[HEAD_MAX];
	int tls;
	unsigned char nonce[16];
	_cleanup_free_ char *key = NULL, *req = NULL;
	_cleanup_close_ int net = -1;
	int pair[2], status = 0;
	struct relay *r;
	pthread_t t;
	SSL *ssl = NULL;

	if (s->agent_endpoint == NULL || url_split(s->agent_endpoint, host, sizeof host, port,
	    sizeof port, &tls) < 0)
		return sbx_error(e, SBX_ESTATE, "run `sbxtop status ID`", "sandbox %s has no "
		    "MicroVM endpoint", s->id);
	if ((net = tcp_connect(host, port, e)) < 0)
		return -1;
	{
		struct timeval tv = { TIMEOUT_MS / 1000, 0 };
		setsockopt(net, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	}
	if (tls && (ssl = tls_open(net, host, e)) == NULL)
		return -1;
	if (RAND_bytes(nonce, sizeof nonce) != 1)
		fatal("no random bytes");
	key = b64_encode(nonce, sizeof nonce);
	req = xasprintf("GET /v1/pty?%s HTTP/1.1\r\nHost: %s%s%s\r\nConnection: Upgrade\r\n"
	    "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\n"
	    "Sec-WebSocket-Protocol: lambda-microvms, lambda-microvms.port.8080\r\n"
	    "X-Sbx-Origin: %s\r\nX-Sandbox-Secret: %s\r\n%s\r\n", query, host,
	    strcmp(port, tls ? "443" : "80") ? ":" : "", strcmp(port, tls ? "443" : "80") ?
	    port : "", key,
	    origin ? origin : "console", s->agent_secret ? s->agent_secret : "", auth);
	if ((ssl ? SSL_write(ssl, req, (int)strlen(req)) <= 0 : write_all(net, req,
	    strlen(req)) < 0) || read_head(ssl, net, head, sizeof head, e) < 0) {
		explicit_bzero(req, strlen(req));
		if (e->msg[0] == '\0')
			sbx_error(e, SBX_EAGENT, NULL, "cannot talk to the MicroVM endpoint of %s",
			    s->id);
		if (ssl)
			SSL_free(ssl);
		return -1;
	}
	explicit_bzero(req, strlen(req));
	if (sscanf(head, "HTTP/1.%*d %d", &status) != 1 || status != 101) {
		*statusp = status;
		char *eol = strstr(head, "\r\n");
		if (eol)
			*eol = '\0';
		if (ssl)
			SSL_free(ssl);
		return sbx_error(e, status == 403 ? SBX_EDENIED : SBX_EAGENT, status == 403 ?
		    "`sbxtop doctor --backend lambda` checks the credentials and the image" : NULL,
		    "sandbox %s: the shell was refused (with %s): %s", s->id, how, head);
	}
	{
		struct timeval tv = { 0, 0 };
		setsockopt(net, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	}
	log_debug("sandbox %s: shell through %s, authorised by %s", s->id, s->agent_endpoint,
	    how);
	if (ssl == NULL)
		return steal_fd(&net);	/* plain HTTP (a test's endpoint): no relay */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0) {
		SSL_free(ssl);
		return sbx_error_errno(e, SBX_EINTERNAL, NULL, "socketpair");
	}
	r = xcalloc(1, sizeof *r);
	r->ssl = ssl;
	r->net = steal_fd(&net);
	r->local = pair[1];
	if (pthread_create(&t, NULL, relay_run, r) != 0) {
		close(pair[0]);
		relay_free(r);
		return sbx_error(e, SBX_EINTERNAL, NULL, "cannot start the shell relay");
	}
	pthread_detach(t);
	return pair[0];
}

int
lambda_pty_open(struct sandbox *s, const char *query, const char *origin, int minutes,
    struct sbx_err *e)
{
	char auth[12288];
	const char *how;
	int status = 0, fd;

	if (shell_auth(s, minutes, 1, auth, sizeof auth, &how, e) < 0)
		return -1;
	fd = open_with(s, query, origin, auth, how, &status, e);
	explicit_bzero(auth, sizeof auth);
	if (fd >= 0 || status == 0 || strcmp(how, "a shell token") != 0)
		return fd;
	/* The endpoint answered a shell token with something else than the agent's
	 * shell: the endpoint token is the one documented to reach port 8080. */
	log_debug("sandbox %s: %s; again with the endpoint token", s->id, e->msg);
	if (shell_auth(s, minutes, 0, auth, sizeof auth, &how, e) < 0)
		return -1;
	fd = open_with(s, query, origin, auth, how, &status, e);
	explicit_bzero(auth, sizeof auth);
	return fd;
}
