/* The agent client over libcurl (see agentc.h).  One easy handle per request:
 * requests are few and short next to what they run, and a handle per request
 * keeps the client usable from any thread. */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/client/agentc.h"
#include "lib/buf.h"
#include "lib/line-reader.h"
#include "lib/util.h"

#define RETRIES		3
#define BACKOFF_MS	100

struct agentc {
	char			 id[32];
	char			*base;		/* "http://sbx-x" or the URL */
	char			*unix_path;	/* NULL for URLs */
	struct curl_slist	*headers;	/* secret + extra headers */
	agentc_progress_fn	 progress;	/* or NULL */
	void			*progress_arg;
};

struct xfer {
	struct agentc	*a;
	CURL		*h;
	struct buf	 body;		/* JSON answer, or an error body */
	agentc_line_fn	 line_fn;
	agentc_data_fn	 data_fn;
	void		*arg;
	struct line_reader lines;	/* line_fn's stream */
	struct sbx_err	*e;
	int		 cb_failed;	/* a callback filled e */
	char		 sha256[65];
	int		 fd;		/* upload source */
	uint64_t	 left;
	int		 chunked;	/* read fd to its end; size unknown */
	agentc_trailer_fn trailer;
	void		*targ;
	char		 sock_why[256];	/* why the agent's socket was refused */
	int		 sock_fd;	/* O_PATH: the socket curl connects to */
};

#define AGENTC_STREAM_BUF	(512 * 1024)

/* libcurl connects to the agent's unix socket through /proc/self/fd/N, an
 * O_PATH descriptor of the socket checked not to be a link the sandbox put in
 * its place (core/client/agentc.h): the name is never looked up again. */
static curl_socket_t
opensocket_cb(void *arg, curlsocktype purpose, struct curl_sockaddr *addr)
{
	struct xfer *x = arg;
	struct sockaddr_un *un = (struct sockaddr_un *)&addr->addr;

	(void)purpose;
	if (addr->family != AF_UNIX)
		return CURL_SOCKET_BAD;
	if (x->sock_fd >= 0)
		close(x->sock_fd);
	if ((x->sock_fd = agent_sock_open(x->a->unix_path, x->sock_why, sizeof x->sock_why)) < 0)
		return CURL_SOCKET_BAD;
	/* addr is curl's own storage (a sockaddr_storage), sized for this. */
	memset(un->sun_path, 0, sizeof un->sun_path);
	snprintf(un->sun_path, sizeof un->sun_path, "/proc/self/fd/%d", x->sock_fd);
	addr->addrlen = (unsigned)(offsetof(struct sockaddr_un, sun_path) + strlen(un->sun_path) + 1);
	return socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t ca_mu = PTHREAD_MUTEX_INITIALIZER;
static char *ca_file;		/* agentc_set_ca_file */

const char agentc_untrusted_hint[] = "the endpoint's TLS certificate is not trusted: if it "
    "comes from a private CA (a test fake, a corporate proxy), point AWS_CA_BUNDLE at that "
    "CA's PEM file; otherwise check the host's clock and CA store";

void
agentc_set_ca_file(const char *path)
{
	pthread_mutex_lock(&ca_mu);
	/* Set once per process in practice (by a backend's configure); an old
	 * string is kept, not freed, as a caller may still hold it. */
	if (path != NULL && *path != '\0' && (ca_file == NULL || strcmp(ca_file, path) != 0))
		ca_file = xstrdup(path);
	else if (path == NULL || *path == '\0')
		ca_file = NULL;
	pthread_mutex_unlock(&ca_mu);
}

const char *
agentc_ca_file(void)
{
	const char *p;

	pthread_mutex_lock(&ca_mu);
	p = ca_file;
	pthread_mutex_unlock(&ca_mu);
	return p;
}

static void
curl_init_once(void)
{
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
		fatal("cannot initialise libcurl");
}

struct agentc *
agentc_new(const struct sandbox *s, struct sbx_err *e)
{
	struct agentc *a;
	_cleanup_free_ char *sec = NULL;
	const cJSON *h;

	pthread_once(&curl_once, curl_init_once);
	if (s->agent_endpoint == NULL || s->agent_endpoint[0] == '\0') {
		sbx_error(e, SBX_ESTATE, "run `sbxtop status ID`",
		    "sandbox %s has no agent endpoint (it may not have started)", s->id);
		return NULL;
	}
	a = xcalloc(1, sizeof *a);
	snprintf(a->id, sizeof a->id, "%s", s->id);
	if (strncmp(s->agent_endpoint, "unix:", 5) == 0) {
		a->unix_path = xstrdup(s->agent_endpoint + 5);
		/* The host part is a label only; the socket decides where it goes. */
		a->base = xstrdup("http://sbxtop-agent");
	} else if (strncmp(s->agent_endpoint, "http://", 7) == 0 ||
	    strncmp(s->agent_endpoint, "https://", 8) == 0) {
		a->base = xstrdup(s->agent_endpoint);
		size_t n = strlen(a->base);
		if (n > 0 && a->base[n - 1] == '/')
			a->base[n - 1] = '\0';
	} else {
		sbx_error(e, SBX_EINTERNAL, NULL, "sandbox %s has an agent endpoint of an "
		    "unknown kind: %s", s->id, s->agent_endpoint);
		free(a);
		return NULL;
	}
	sec = xasprintf("X-Sandbox-Secret: %s", s->agent_secret ? s->agent_secret : "");
	a->headers = curl_slist_append(a->headers, sec);
	explicit_bzero(sec, strlen(sec));
	cJSON_ArrayForEach(h, s->agent_headers) {
		if (!cJSON_IsString(h) || strpbrk(h->string, ":\r\n") != NULL ||
		    strpbrk(h->valuestring, "\r\n") != NULL)
			continue;
		_cleanup_free_ char *line = xasprintf("%s: %s", h->string, h->valuestring);
		a->headers = curl_slist_append(a->headers, line);
	}
	if (a->headers == NULL)
		fatal("out of memory");
	return a;
}

void
agentc_free(struct agentc *a)
{
	if (a == NULL)
		return;
	free(a->base);
	free(a->unix_path);
	curl_slist_free_all(a->headers);
	free(a);
}

void
agentc_set_origin(struct agentc *a, const char *origin)
{
	static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789._-";
	char v[33];
	size_t n = 0;

	/* The agent takes 1-32 of [A-Za-z0-9._-]: "mcp:claude code" goes as
	 * "mcp.claude.code", so any client name is accepted rather than refused. */
	for (; origin[n] != '\0' && n < sizeof v - 1; n++)
		v[n] = strchr(ok, origin[n]) != NULL ? origin[n] : '.';
	v[n] = '\0';
	if (n == 0)
		return;
	_cleanup_free_ char *h = xasprintf("X-Sbx-Origin: %s", v);
	a->headers = curl_slist_append(a->headers, h);
}

void
agentc_set_watch(struct agentc *a)
{
	a->headers = curl_slist_append(a->headers, "X-Sbx-Watch: 1");
}

void
agentc_set_progress(struct agentc *a, agentc_progress_fn fn, void *arg)
{
	a->progress = fn;
	a->progress_arg = arg;
}

static int
xferinfo_cb(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
    curl_off_t ulnow)
{
	struct xfer *x = arg;

	(void)dltotal;
	(void)ultotal;
	return x->a->progress(x->a->progress_arg, (uint64_t)dlnow, (uint64_t)ulnow) != 0;
}

char *
agentc_escape(const char *s)
{
	char *c, *r;

	pthread_once(&curl_once, curl_init_once);
	if ((c = curl_easy_escape(NULL, s, 0)) == NULL)
		fatal("out of memory");
	r = xstrdup(c);
	curl_free(c);
	return r;
}

static long
xfer_status(struct xfer *x)
{
	long st = 0;

	curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &st);
	return st;
}

/* One NDJSON line of a stream to line_fn, until one fails (cb_failed). */
static void
stream_line(void *arg, const char *p, size_t n)
{
	struct xfer *x = arg;
	cJSON *o;

	if (x->cb_failed || n == 0)
		return;
	if ((o = cJSON_ParseWithLength(p, n)) == NULL) {
		sbx_error(x->e, SBX_EAGENT, NULL, "sandbox %s: the agent sent a line that is "
		    "not JSON", x->a->id);
		x->cb_failed = 1;
		return;
	}
	if (x->line_fn(o, x->arg, x->e) < 0)
		x->cb_failed = 1;
	cJSON_Delete(o);
}

static void
stream_over(void *arg, const char *piece, size_t n, int first, int end)
{
	struct xfer *x = arg;

	if (first && !x->cb_failed) {
		sbx_error(x->e, SBX_EAGENT, NULL, "sandbox %s: the agent sent a line of more "
		    "than %u bytes", x->a->id, AGENTC_LINE_MAX);
		x->cb_failed = 1;
	}
}

static size_t
write_cb(char *p, size_t size, size_t nmemb, void *arg)
{
	struct xfer *x = arg;
	size_t n = size * nmemb;
	long st = xfer_status(x);

	if (st < 200 || st >= 300 || (x->line_fn == NULL && x->data_fn == NULL)) {
		if (buf_append(&x->body, p, n) < 0) {
			sbx_error(x->e, SBX_EAGENT, NULL, "sandbox %s: the agent's answer is over "
			    "%zu bytes", x->a->id, x->body.max);
			x->cb_failed = 1;
			return 0;
		}
		return n;
	}
	if (x->line_fn != NULL)
		line_reader_feed(&x->lines, p, n);
	else if (x->data_fn(p, n, x->arg, x->e) < 0)
		x->cb_failed = 1;
	return x->cb_failed ? 0 : n;
}

/* Headers and trailers alike: the archive download sends its sha256 as a trailer. */
static size_t
header_cb(char *p, size_t size, size_t nmemb, void *arg)
{
	struct xfer *x = arg;
	size_t n = size * nmemb;
	static const char name[] = "x-content-sha256:";

	if (n > sizeof name - 1 && strncasecmp(p, name, sizeof name - 1) == 0) {
		const char *v = p + sizeof name - 1;
		size_t k = n - (sizeof name - 1);
		while (k > 0 && (*v == ' ' || *v == '\t'))
			v++, k--;
		while (k > 0 && (v[k - 1] == '\r' || v[k - 1] == '\n' || v[k - 1] == ' '))
			k--;
		if (k == 64)
			snprintf(x->sha256, sizeof x->sha256, "%.64s", v);
	}
	return n;
}

static size_t
read_cb(char *p, size_t size, size_t nmemb, void *arg)
{
	struct xfer *x = arg;
	size_t n = size * nmemb;
	ssize_t k;

	if (!x->chunked && n > x->left)
		n = (size_t)x->left;
	if (n == 0)
		return 0;
	do
		k = read(x->fd, p, n);
	while (k < 0 && errno == EINTR);
	if (k == 0 && x->chunked)
		return 0;
	if (k <= 0) {
		if (k < 0)
			sbx_error_errno(x->e, SBX_EIO, NULL, "cannot read what is being uploaded");
		else
			sbx_error(x->e, SBX_EIO, NULL, "what is being uploaded ended early");
		x->cb_failed = 1;
		return CURL_READFUNC_ABORT;
	}
	x->left -= (uint64_t)k;
	return (size_t)k;
}

/* The chunked body's trailer: the caller's "Name: value" line, asked for once the
 * body has ended. */
static int
trailer_cb(struct curl_slist **list, void *arg)
{
	struct xfer *x = arg;
	const char *line = x->trailer(x->targ);

	if (line == NULL)
		return CURL_TRAILERFUNC_ABORT;
	*list = curl_slist_append(*list, line);
	return CURL_TRAILERFUNC_OK;
}

static void
xfer_init(struct xfer *x, struct agentc *a, struct sbx_err *e)
{
	memset(x, 0, sizeof *x);
	x->a = a;
	x->e = e;
	x->fd = -1;
	x->sock_fd = -1;
	buf_init(&x->body, AGENTC_JSON_MAX);
	line_reader_init(&x->lines, AGENTC_LINE_MAX, stream_line, stream_over, x);
}

static void
xfer_done(struct xfer *x)
{
	buf_free(&x->body);
	line_reader_free(&x->lines);
	if (x->sock_fd >= 0)
		close(x->sock_fd);
}

static enum sbx_errcode
code_of(long st, const char *err)
{
	if (st == 400 || st == 413 || st == 422)
		return SBX_EINVAL;
	if (st == 404 && err != NULL && strcmp(err, "not_found") == 0)
		return SBX_ENOTFOUND;
	if (st == 401 || st == 403)
		return SBX_EDENIED;
	if (st == 409)
		return SBX_ESTATE;
	return SBX_EAGENT;
}

/* A person's next step for what the agent said, when the route names no other. */
static const char *
human_hint(enum sbx_reason r, const char *id, char *buf, size_t len)
{
	switch (r) {
	case SBX_R_IS_DIR:
		snprintf(buf, len, "it is a directory: `sbxtop exec %s -- ls -la PATH` lists it, "
		    "`sbxtop cp %s:PATH .` copies it out", id, id);
		return buf;
	case SBX_R_NOT_DIR:
		snprintf(buf, len, "it is a file: `sbxtop cp %s:PATH .` copies it out", id);
		return buf;
	case SBX_R_NOT_TEXT:
		snprintf(buf, len, "it is binary: `sbxtop cp %s:PATH .` copies it out as it is",
		    id);
		return buf;
	case SBX_R_NO_SPACE:
		snprintf(buf, len, "the sandbox's disk is full: free some with `sbxtop exec %s "
		    "-- rm ...`", id);
		return buf;
	default:
		return NULL;
	}
}

/* A non-2xx answer: the agent's {"error", "message"} becomes e.  Its "error" names
 * the reason when it is one of ours (is_a_directory, not_empty, no_seed, ...). */
static int
answer_error(struct xfer *x, long st)
{
	cJSON *o = x->body.data ? cJSON_ParseWithLength(x->body.data, x->body.len) : NULL;
	const char *err = cJSON_GetStringValue(cJSON_GetObjectItem(o, "error"));
	const char *msg = cJSON_GetStringValue(cJSON_GetObjectItem(o, "message"));
	enum sbx_reason reason = sbx_reason_by_name(err);
	const char *hint = NULL;
	char hbuf[192];

	if (st == 401) {
		hint = "the registry's secret for it does not match the agent's; destroy and "
		    "recreate it";
	} else if (st == 503) {
		snprintf(hbuf, sizeof hbuf, "it may still be starting: retry, or run `sbxtop "
		    "status %s`", x->a->id);
		hint = hbuf;
	} else if (st == 404 && (err == NULL || strcmp(err, "not_found") != 0)) {
		hint = "the agent in this sandbox may be older than sbxtop";
	}
	if (st == 404 && err != NULL && strcmp(err, "not_found") == 0 && msg != NULL &&
	    strncmp(msg, "no route", 8) == 0)
		hint = "the agent in this sandbox may be older than sbxtop";
	if (hint == NULL)
		hint = human_hint(reason, x->a->id, hbuf, sizeof hbuf);
	sbx_error_reason(x->e, code_of(st, err), reason, hint, "sandbox %s: %s", x->a->id,
	    msg ? msg : (err ? err : "the agent answered an error"));
	/* An agent older than its route answers "no route" (the agent's own words,
	 * from agents of every version). */
	if (st == 404 && msg != NULL && strncmp(msg, "no route", 8) == 0) {
		x->e->code = SBX_EUNSUPPORTED;
		x->e->reason = SBX_R_NONE;
	}
	cJSON_Delete(o);
	return -1;
}

/* Run the request; with retry (idempotent requests only), connection failures are
 * tried again with a growing pause. */
static int
perform(struct xfer *x, const char *method, const char *path, const char *body,
    size_t body_len, struct curl_slist *extra, int64_t timeout_ms, int retry, long *status)
{
	struct agentc *a = x->a;
	_cleanup_free_ char *url = xasprintf("%s%s", a->base, path);
	struct curl_slist *hdrs = NULL;
	char errbuf[CURL_ERROR_SIZE];
	CURLcode rc = CURLE_OK;

	for (const struct curl_slist *l = a->headers; l; l = l->next)
		hdrs = curl_slist_append(hdrs, l->data);
	for (const struct curl_slist *l = extra; l; l = l->next)
		hdrs = curl_slist_append(hdrs, l->data);
	/* No "Expect: 100-continue" round trip for uploads. */
	hdrs = curl_slist_append(hdrs, "Expect:");

	for (int attempt = 0; attempt < (retry ? RETRIES : 1); attempt++) {
		if (attempt > 0) {
			usleep((useconds_t)(BACKOFF_MS * (1 << (attempt - 1))) * 1000);
			buf_reset(&x->body);
		}
		if ((x->h = curl_easy_init()) == NULL)
			fatal("out of memory");
		errbuf[0] = '\0';
		curl_easy_setopt(x->h, CURLOPT_URL, url);
		if (a->unix_path) {
			curl_easy_setopt(x->h, CURLOPT_UNIX_SOCKET_PATH, a->unix_path);
			curl_easy_setopt(x->h, CURLOPT_OPENSOCKETFUNCTION, opensocket_cb);
			curl_easy_setopt(x->h, CURLOPT_OPENSOCKETDATA, x);
		}
		curl_easy_setopt(x->h, CURLOPT_HTTPHEADER, hdrs);
		curl_easy_setopt(x->h, CURLOPT_CUSTOMREQUEST, method);
		curl_easy_setopt(x->h, CURLOPT_WRITEFUNCTION, write_cb);
		curl_easy_setopt(x->h, CURLOPT_WRITEDATA, x);
		curl_easy_setopt(x->h, CURLOPT_HEADERFUNCTION, header_cb);
		curl_easy_setopt(x->h, CURLOPT_HEADERDATA, x);
		curl_easy_setopt(x->h, CURLOPT_ERRORBUFFER, errbuf);
		curl_easy_setopt(x->h, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(x->h, CURLOPT_CONNECTTIMEOUT_MS, (long)AGENTC_CONNECT_MS);
		curl_easy_setopt(x->h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
		curl_easy_setopt(x->h, CURLOPT_PROTOCOLS_STR, "http,https");
		if (agentc_ca_file() != NULL && strncmp(a->base, "https:", 6) == 0)
			curl_easy_setopt(x->h, CURLOPT_CAINFO, agentc_ca_file());
		if (a->progress != NULL) {
			/* The only way to stop a request that sends nothing for a while. */
			curl_easy_setopt(x->h, CURLOPT_XFERINFOFUNCTION, xferinfo_cb);
			curl_easy_setopt(x->h, CURLOPT_XFERINFODATA, x);
			curl_easy_setopt(x->h, CURLOPT_NOPROGRESS, 0L);
		}
		if (x->data_fn != NULL)	/* archives: fewer, larger writes */
			curl_easy_setopt(x->h, CURLOPT_BUFFERSIZE, (long)AGENTC_STREAM_BUF);
		if (body != NULL) {
			curl_easy_setopt(x->h, CURLOPT_POSTFIELDS, body);
			curl_easy_setopt(x->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
		} else if (x->fd >= 0) {
			curl_easy_setopt(x->h, CURLOPT_UPLOAD, 1L);
			curl_easy_setopt(x->h, CURLOPT_READFUNCTION, read_cb);
			curl_easy_setopt(x->h, CURLOPT_READDATA, x);
			curl_easy_setopt(x->h, CURLOPT_INFILESIZE_LARGE,
			    x->chunked ? (curl_off_t)-1 : (curl_off_t)x->left);
			if (x->chunked)
				curl_easy_setopt(x->h, CURLOPT_UPLOAD_BUFFERSIZE,
				    (long)AGENTC_STREAM_BUF);
			if (x->trailer != NULL) {
				curl_easy_setopt(x->h, CURLOPT_TRAILERFUNCTION, trailer_cb);
				curl_easy_setopt(x->h, CURLOPT_TRAILERDATA, x);
			}
		}
		rc = curl_easy_perform(x->h);
		*status = xfer_status(x);
		curl_easy_cleanup(x->h);
		x->h = NULL;
		if (rc != CURLE_COULDNT_CONNECT && rc != CURLE_COULDNT_RESOLVE_HOST &&
		    !(rc == CURLE_GOT_NOTHING && *status == 0))
			break;
	}
	curl_slist_free_all(hdrs);

	if (x->cb_failed)
		return -1;
	switch (rc) {
	case CURLE_OK:
		break;
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_GOT_NOTHING:
		if (x->sock_why[0] != '\0' && strstr(x->sock_why, "not the agent's socket"))
			return sbx_error(x->e, SBX_EDENIED, "destroy the sandbox: its root "
			    "tampered with the agent's socket", "sandbox %s: %s", a->id, x->sock_why);
		return sbx_error(x->e, SBX_EAGENT, NULL, "sandbox %s is not answering (its init "
		    "may have died): run `sbxtop status %s`", a->id, a->id);
	case CURLE_ABORTED_BY_CALLBACK:
		return sbx_error(x->e, SBX_EIO, NULL, "sandbox %s: the request was stopped", a->id);
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
		return sbx_error_reason(x->e, SBX_EDENIED, SBX_R_UNTRUSTED, agentc_untrusted_hint,
		    "sandbox %s: its "
		    "endpoint's TLS certificate is not trusted (%s)", a->id,
		    errbuf[0] ? errbuf : curl_easy_strerror(rc));
	case CURLE_OPERATION_TIMEDOUT:
		return sbx_error(x->e, SBX_ETIMEOUT, "retry with a longer timeout",
		    "sandbox %s: the agent did not answer in time (%s)", a->id, errbuf);
	default:
		return sbx_error(x->e, SBX_EAGENT, "run `sbxtop status ID`",
		    "sandbox %s: the connection to its agent failed: %s", a->id,
		    errbuf[0] ? errbuf : curl_easy_strerror(rc));
	}
	if (*status < 200 || *status >= 300)
		return answer_error(x, *status);
	return 0;
}

static cJSON *
parse_answer(struct xfer *x)
{
	cJSON *o;

	if (x->body.len == 0)
		return cJSON_CreateObject();
	if ((o = cJSON_ParseWithLength(x->body.data, x->body.len)) == NULL)
		sbx_error(x->e, SBX_EAGENT, NULL, "sandbox %s: the agent's answer is not JSON",
		    x->a->id);
	return o;
}

int
agentc_call(struct agentc *a, const char *method, const char *path, const cJSON *body,
    int64_t timeout_ms, cJSON **out, struct sbx_err *e)
{
	_cleanup_free_ char *text = body ? cJSON_PrintUnformatted(body) : NULL;
	struct curl_slist *extra = NULL;
	struct xfer x;
	long st = 0;
	int rc;

	if (out)
		*out = NULL;
	xfer_init(&x, a, e);
	if (text)
		extra = curl_slist_append(extra, "Content-Type: application/json");
	rc = perform(&x, method, path, text, text ? strlen(text) : 0, extra, timeout_ms,
	    strcmp(method, "GET") == 0, &st);
	curl_slist_free_all(extra);
	if (rc == 0 && out && (*out = parse_answer(&x)) == NULL)
		rc = -1;
	xfer_done(&x);
	return rc < 0 ? -1 : (int)st;
}

int
agentc_health(struct agentc *a, cJSON **out, struct sbx_err *e)
{
	return agentc_call(a, "GET", "/health", NULL, 5000, out, e) < 0 ? -1 : 0;
}

int
agentc_stream(struct agentc *a, const char *method, const char *path, const cJSON *body,
    agentc_line_fn fn, void *arg, struct sbx_err *e)
{
	_cleanup_free_ char *text = body ? cJSON_PrintUnformatted(body) : NULL;
	struct curl_slist *extra = NULL;
	struct xfer x;
	long st = 0;
	int rc;

	xfer_init(&x, a, e);
	x.line_fn = fn;
	x.arg = arg;
	extra = curl_slist_append(extra, "Accept: application/x-ndjson");
	if (text)
		extra = curl_slist_append(extra, "Content-Type: application/json");
	rc = perform(&x, method, path, text, text ? strlen(text) : 0, extra, 0, 0, &st);
	curl_slist_free_all(extra);
	/* A last line without its newline still counts. */
	if (rc == 0)
		line_reader_finish(&x.lines);
	if (rc == 0 && x.cb_failed)
		rc = -1;
	xfer_done(&x);
	return rc;
}

int
agentc_upload_fd(struct agentc *a, const char *path, const char *ctype, int fd,
    uint64_t size, const char *extra_header, cJSON **out, struct sbx_err *e)
{
	_cleanup_free_ char *ct = xasprintf("Content-Type: %s", ctype);
	struct curl_slist *extra = NULL;
	struct xfer x;
	long st = 0;
	int rc;

	if (out)
		*out = NULL;
	xfer_init(&x, a, e);
	x.fd = fd;
	x.left = size;
	extra = curl_slist_append(extra, ct);
	if (extra_header)
		extra = curl_slist_append(extra, extra_header);
	rc = perform(&x, "POST", path, NULL, 0, extra, 0, 0, &st);
	curl_slist_free_all(extra);
	if (rc == 0 && out && (*out = parse_answer(&x)) == NULL)
		rc = -1;
	xfer_done(&x);
	return rc;
}

int
agentc_upload_stream(struct agentc *a, const char *path, const char *ctype, int fd,
    agentc_trailer_fn trailer, void *targ, cJSON **out, struct sbx_err *e)
{
	_cleanup_free_ char *ct = xasprintf("Content-Type: %s", ctype);
	struct curl_slist *extra = NULL;
	struct xfer x;
	long st = 0;
	int rc;

	if (out)
		*out = NULL;
	xfer_init(&x, a, e);
	x.fd = fd;
	x.chunked = 1;
	x.trailer = trailer;
	x.targ = targ;
	extra = curl_slist_append(extra, ct);
	extra = curl_slist_append(extra, "Transfer-Encoding: chunked");
	if (trailer)
		extra = curl_slist_append(extra, "Trailer: X-Content-Sha256");
	rc = perform(&x, "POST", path, NULL, 0, extra, 0, 0, &st);
	curl_slist_free_all(extra);
	if (rc == 0 && out && (*out = parse_answer(&x)) == NULL)
		rc = -1;
	xfer_done(&x);
	return rc;
}

int
agentc_download(struct agentc *a, const char *path, agentc_data_fn fn, void *arg,
    char sha256[65], struct sbx_err *e)
{
	struct xfer x;
	long st = 0;
	int rc;

	xfer_init(&x, a, e);
	x.data_fn = fn;
	x.arg = arg;
	rc = perform(&x, "GET", path, NULL, 0, NULL, 0, 0, &st);
	if (sha256)
		memcpy(sha256, x.sha256, 65);
	xfer_done(&x);
	return rc;
}

/* --- the agent's unix socket, never through a link --------------------------- */

int
agent_sock_open(const char *path, char *why, size_t len)
{
	_cleanup_free_ char *dir = xstrdup(path);
	_cleanup_close_ int dfd = -1, pfd = -1;
	char *slash = strrchr(dir, '/');
	const char *base = slash ? slash + 1 : dir;
	struct stat st, dst;

	if (slash == dir)
		dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	else if (slash != NULL) {
		*slash = '\0';
		dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	} else
		dfd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fstat(dfd, &dst) < 0) {
		snprintf(why, len, "cannot open the directory of %s: %s", path, strerror(errno));
		return -1;
	}
	if ((pfd = openat(dfd, base, O_PATH | O_NOFOLLOW | O_CLOEXEC)) < 0 || fstat(pfd, &st) < 0) {
		snprintf(why, len, "cannot reach %s: %s", path, strerror(errno));
		return -1;
	}
	if (S_ISLNK(st.st_mode)) {
		snprintf(why, len, "%s is a link, not the agent's socket (the sandbox replaced it): "
		    "not followed", path);
		return -1;
	}
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(why, len, "%s is not a socket", path);
		return -1;
	}
	if (st.st_uid != dst.st_uid) {
		snprintf(why, len, "%s belongs to uid %u, not to the owner of its directory (uid %u): "
		    "not the agent's socket", path, (unsigned)st.st_uid, (unsigned)dst.st_uid);
		return -1;
	}
	return steal_fd(&pfd);
}

int
agent_sock_connect(const char *path, int flags, char *why, size_t len)
{
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	_cleanup_close_ int pfd = agent_sock_open(path, why, len), fd = -1;

	if (pfd < 0)
		return -1;
	snprintf(un.sun_path, sizeof un.sun_path, "/proc/self/fd/%d", pfd);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (flags & SOCK_NONBLOCK), 0)) < 0) {
		snprintf(why, len, "socket: %s", strerror(errno));
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&un, sizeof un) < 0 && errno != EINPROGRESS) {
		snprintf(why, len, "cannot connect to %s: %s", path, errno == EAGAIN ?
		    "it has too many connections waiting" : strerror(errno));
		return -1;
	}
	return steal_fd(&fd);
}
