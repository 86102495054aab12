/* The OCI distribution API, as a client (libcurl): manifests and blobs of one
 * repository, with the auth flows registries use: a 401 names a Bearer realm
 * (Docker Hub, GHCR, the distribution project's token auth), from which a
 * token for "repository:NAME:pull" is fetched (with the user's credentials
 * when the auth files have some), or Basic (htpasswd), answered with them.
 *
 * HTTPS always; plain HTTP only to a loopback registry or when the caller
 * allows it (`image pull --plain-http`, image_http in sbxtop.conf), and then
 * only after HTTPS failed, as docker does for an insecure registry.  Every
 * byte of a blob goes through sha256 on its way to tmp/HEX.partial, which a
 * later pull resumes with a Range request; the blob gets its name only when
 * its digest and size are the manifest's. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <curl/curl.h>

#include "core/image/image-int.h"
#include "lib/b64.h"
#include "lib/buf.h"
#include "lib/log.h"
#include "lib/util.h"

#define TOKEN_MAX	16384
#define CHALLENGE_MAX	2048

static const char ACCEPT_MANIFESTS[] =
	"application/vnd.oci.image.index.v1+json, "
	"application/vnd.docker.distribution.manifest.list.v2+json, "
	"application/vnd.oci.image.manifest.v1+json, "
	"application/vnd.docker.distribution.manifest.v2+json";

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void
curl_init(void)
{
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
		fatal("cannot initialise libcurl");
}

struct dist {
	struct image_ref	 ref;
	char			 canon[600];
	const char		*host;
	char			 scheme[8];	/* "https", "http" */
	int			 scheme_known;	/* the first answer settled it */
	int			 plain_ok;
	char			 creds[512];	/* user:password, or "" */
	char			 cred_note[300];
	char			*auth;		/* "Bearer T" / "Basic B64", or NULL */
	int			 tried_auth;
	CURL			*h;
	const struct image_pull_opts *o;
	uint64_t		 done, total;	/* progress over the layers */
	char			 what[160];
};

/* One answer's head: the last response of a chain of redirects. */
struct resp {
	long	status;
	char	challenge[CHALLENGE_MAX];
	char	content_type[160];
	char	content_range[96];
};

/* Where a body goes: into a bounded buffer, or into a file through sha256. */
struct sink {
	struct buf		*mem;
	int			 fd;
	struct sha256_ctx	*ctx;
	int64_t			 written, max;
	int			 overflow, werr;
	struct dist		*d;
	int64_t			 from;		/* a range asked for from here */
	int			 unranged;	/* ...and the whole blob came instead */
};

static size_t
on_header(char *p, size_t sz, size_t n, void *arg)
{
	struct resp *r = arg;
	size_t len = sz * n, k;
	char line[CHALLENGE_MAX + 64];

	k = len < sizeof line - 1 ? len : sizeof line - 1;
	memcpy(line, p, k);
	line[k] = '\0';
	while (k > 0 && (line[k - 1] == '\r' || line[k - 1] == '\n'))
		line[--k] = '\0';
	if (strncmp(line, "HTTP/", 5) == 0) {
		/* A new response (after a redirect or a 100): forget the last. */
		r->challenge[0] = r->content_type[0] = r->content_range[0] = '\0';
		return len;
	}
	if (strncasecmp(line, "www-authenticate:", 17) == 0)
		snprintf(r->challenge, sizeof r->challenge, "%s", line + 17 + strspn(line + 17, " \t"));
	else if (strncasecmp(line, "content-type:", 13) == 0)
		snprintf(r->content_type, sizeof r->content_type, "%s", line + 13 + strspn(line + 13, " \t"));
	else if (strncasecmp(line, "content-range:", 14) == 0)
		snprintf(r->content_range, sizeof r->content_range, "%s",
		    line + 14 + strspn(line + 14, " \t"));
	return len;
}

static size_t
on_body(char *p, size_t sz, size_t n, void *arg)
{
	struct sink *s = arg;
	size_t len = sz * n;
	long status = 0;

	/* Only a 2xx body is ours: an error page is read for its message and
	 * never goes into a blob. */
	curl_easy_getinfo(s->d->h, CURLINFO_RESPONSE_CODE, &status);
	if (status < 200 || status > 299) {
		if (s->mem == NULL)
			return len;
	}
	if (s->mem == NULL && s->from > 0 && status == 200) {
		s->unranged = 1;
		return 0;
	}
	if (s->max > 0 && s->written + (int64_t)len > s->max) {
		s->overflow = 1;
		return 0;
	}
	if (s->mem != NULL) {
		if (buf_append(s->mem, p, len) < 0) {
			s->overflow = 1;
			return 0;
		}
	} else if (status >= 200 && status <= 299) {
		if (write_all(s->fd, p, len) < 0) {
			s->werr = errno;
			return 0;
		}
		sha256_update(s->ctx, len, (const uint8_t *)p);
	}
	s->written += (int64_t)len;
	return len;
}

static int
on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
	struct sink *s = arg;
	struct dist *d = s->d;

	(void)dltotal; (void)ultotal; (void)ulnow;
	if (d->o->progress == NULL || s->mem != NULL)
		return 0;
	return d->o->progress(d->done + (uint64_t)s->written, d->total, d->what, d->o->arg) != 0;
}

static int
dist_fail(struct dist *d, long status, const char *what, const struct buf *body,
    struct sbx_err *e)
{
	char detail[200] = "";
	cJSON *o;

	/* The registry's own error message: {"errors":[{"code","message"}]}. */
	if (body != NULL && body->data != NULL && (o = cJSON_Parse(body->data)) != NULL) {
		const cJSON *er = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "errors"), 0);
		const char *c = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(er, "code"));
		const char *m = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(er, "message"));
		if (c != NULL || m != NULL) {
			char raw[160];
			snprintf(raw, sizeof raw, "%s%s%s", c ? c : "", c && m ? ": " : "", m ? m : "");
			for (char *p = raw; *p; p++)
				if ((unsigned char)*p < ' ' || *p == 0x7f)
					*p = '?';
			snprintf(detail, sizeof detail, " (%s)", raw);
		}
		cJSON_Delete(o);
	}
	if (status == 401)
		return sbx_error(e, SBX_EDENIED, d->creds[0] ? "check the password: log in again with "
		    "`skopeo login HOST` (or podman or docker login)" :
		    "log in first: `skopeo login HOST` (or podman or docker login) writes the "
		    "credentials sbxtop reads", "%s: the registry %s wants credentials%s%s%s%s",
		    what, d->ref.domain, d->creds[0] ? " and refused the ones in the auth file" :
		    " and none were found", detail, d->cred_note[0] ? "; " : "", d->cred_note);
	if (status == 403)
		return sbx_error(e, SBX_EDENIED, "ask the registry's owner for pull access",
		    "%s: the registry %s refused access%s", what, d->ref.domain, detail);
	if (status == 404)
		return sbx_error_reason(e, SBX_ENOTFOUND, SBX_R_NOT_FOUND, "check the name and the tag",
		    "%s: %s has no %s%s", what, d->ref.domain, d->canon, detail);
	if (status == 429)
		return sbx_error(e, SBX_EBACKEND, "wait and pull again (Docker Hub limits anonymous "
		    "pulls; logging in raises the limit)", "%s: the registry %s says too many "
		    "requests%s", what, d->ref.domain, detail);
	return sbx_error(e, SBX_EBACKEND, "try again later", "%s: the registry %s answered HTTP "
	    "%ld%s", what, d->ref.domain, status, detail);
}

/* The handle made ready for a GET of url: redirects (to redir's schemes, at
 * most 8), timeouts, the answer's head into r and its body into s. */
static void
request_setup(struct dist *d, const char *url, const char *redir, struct resp *r, struct sink *s)
{
	curl_easy_reset(d->h);
	curl_easy_setopt(d->h, CURLOPT_URL, url);
	curl_easy_setopt(d->h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(d->h, CURLOPT_REDIR_PROTOCOLS_STR, redir);
	curl_easy_setopt(d->h, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(d->h, CURLOPT_MAXREDIRS, 8L);
	curl_easy_setopt(d->h, CURLOPT_CONNECTTIMEOUT, 30L);
	curl_easy_setopt(d->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(d->h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(d->h, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(d->h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(d->h, CURLOPT_WRITEDATA, s);
	curl_easy_setopt(d->h, CURLOPT_USERAGENT, "sbxtop/" SBX_VERSION);
}

/* Fetch a token for the challenge (Bearer), or answer with the credentials
 * (Basic).  0 with d->auth set, -1 with e. */
static int
dist_authenticate(struct dist *d, const char *challenge, struct sbx_err *e)
{
	char scheme[32], realm[1024], service[256], scope[512];
	struct buf body;
	struct resp r = { 0 };
	struct sink s = { 0 };
	struct curl_slist *hdr = NULL;
	CURLcode cc;
	char *url = NULL, *esc_service = NULL, *esc_scope = NULL;
	int rc = -1;

	if (image_challenge_parse(challenge, scheme, sizeof scheme, realm, sizeof realm, service,
	    sizeof service, scope, sizeof scope) < 0)
		return sbx_error(e, SBX_EBACKEND, NULL, "the registry %s sent an authentication "
		    "challenge that cannot be read", d->ref.domain);
	free(d->auth);
	d->auth = NULL;
	if (strcasecmp(scheme, "Basic") == 0) {
		if (d->creds[0] == '\0')
			return dist_fail(d, 401, "pull", NULL, e);
		_cleanup_free_ char *b = b64_encode(d->creds, strlen(d->creds));
		d->auth = xasprintf("Basic %s", b);
		return 0;
	}
	if (strcasecmp(scheme, "Bearer") != 0 || realm[0] == '\0')
		return sbx_error(e, SBX_EUNSUPPORTED, NULL, "the registry %s asks for %.30s "
		    "authentication, which sbxtop does not speak", d->ref.domain, scheme);
	/* The token service: HTTPS, or plain HTTP where the registry itself may be. */
	if (strncmp(realm, "https://", 8) != 0 &&
	    !(strncmp(realm, "http://", 7) == 0 && d->plain_ok))
		return sbx_error(e, SBX_EDENIED, "use a registry whose token service is HTTPS",
		    "the registry %s sends for tokens to %.200s, which is not HTTPS", d->ref.domain,
		    realm);
	if (scope[0] == '\0')
		snprintf(scope, sizeof scope, "repository:%s:pull", d->ref.repo);
	esc_service = curl_easy_escape(d->h, service, 0);
	esc_scope = curl_easy_escape(d->h, scope, 0);
	url = xasprintf("%s%sservice=%s&scope=%s", realm, strchr(realm, '?') ? "&" : "?",
	    esc_service ? esc_service : "", esc_scope ? esc_scope : "");
	buf_init(&body, 1u << 20);
	s.mem = &body;
	s.d = d;
	request_setup(d, url, "https", &r, &s);
	curl_easy_setopt(d->h, CURLOPT_TIMEOUT, 120L);
	if (d->creds[0] != '\0') {
		_cleanup_free_ char *b = b64_encode(d->creds, strlen(d->creds));
		_cleanup_free_ char *h = xasprintf("Authorization: Basic %s", b);
		hdr = curl_slist_append(hdr, h);
		curl_easy_setopt(d->h, CURLOPT_HTTPHEADER, hdr);
	}
	cc = curl_easy_perform(d->h);
	curl_easy_getinfo(d->h, CURLINFO_RESPONSE_CODE, &r.status);
	if (cc != CURLE_OK) {
		sbx_error(e, SBX_EBACKEND, "check the network, and try again",
		    "cannot reach the token service of %s: %s", d->ref.domain, curl_easy_strerror(cc));
		goto out;
	}
	if (r.status != 200) {
		dist_fail(d, r.status == 401 ? 401 : r.status, "token", &body, e);
		goto out;
	}
	{
		cJSON *o = cJSON_Parse(body.data ? body.data : "");
		const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "token"));
		if (t == NULL || !*t)
			t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "access_token"));
		if (t == NULL || !*t || strlen(t) > TOKEN_MAX || strpbrk(t, "\r\n") != NULL) {
			cJSON_Delete(o);
			sbx_error(e, SBX_EBACKEND, NULL, "the token service of %s answered without a "
			    "usable token", d->ref.domain);
			goto out;
		}
		d->auth = xasprintf("Bearer %s", t);
		cJSON_Delete(o);
	}
	rc = 0;
out:
	curl_slist_free_all(hdr);
	curl_free(esc_service);
	curl_free(esc_scope);
	free(url);
	buf_free(&body);
	return rc;
}

/* GET /v2/REPO/PATH into s, with authentication as the registry asks (once)
 * and the scheme settled on the first request.  from > 0 asks for the bytes
 * from there on.  The status in r->status; -1 with e for a transport error. */
static int
dist_get(struct dist *d, const char *path, const char *accept, int64_t from, struct sink *s,
    struct resp *r, struct sbx_err *e)
{
	for (int attempt = 0; attempt < 3; attempt++) {
		_cleanup_free_ char *url = xasprintf("%s://%s/v2/%s/%s", d->scheme, d->host,
		    d->ref.repo, path);
		struct curl_slist *hdr = NULL;
		char range[48];
		CURLcode cc;

		memset(r, 0, sizeof *r);
		/* Blobs redirect to storage (S3, a CDN): HTTPS only, and the
		 * Authorization header is not sent to another host (libcurl's
		 * rule for custom headers since 7.58). */
		request_setup(d, url, d->plain_ok ? "http,https" : "https", r, s);
		curl_easy_setopt(d->h, CURLOPT_LOW_SPEED_LIMIT, 1L);
		curl_easy_setopt(d->h, CURLOPT_LOW_SPEED_TIME, 60L);
		curl_easy_setopt(d->h, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(d->h, CURLOPT_XFERINFODATA, s);
		curl_easy_setopt(d->h, CURLOPT_NOPROGRESS, 0L);
		if (accept != NULL) {
			_cleanup_free_ char *a = xasprintf("Accept: %s", accept);
			hdr = curl_slist_append(hdr, a);
		}
		if (d->auth != NULL) {
			_cleanup_free_ char *a = xasprintf("Authorization: %s", d->auth);
			hdr = curl_slist_append(hdr, a);
		}
		curl_easy_setopt(d->h, CURLOPT_HTTPHEADER, hdr);
		if (from > 0) {
			snprintf(range, sizeof range, "%lld-", (long long)from);
			curl_easy_setopt(d->h, CURLOPT_RANGE, range);
		}
		cc = curl_easy_perform(d->h);
		curl_slist_free_all(hdr);
		curl_easy_getinfo(d->h, CURLINFO_RESPONSE_CODE, &r->status);
		if (cc != CURLE_OK && !s->overflow && s->werr == 0 && !d->scheme_known &&
		    strcmp(d->scheme, "https") == 0 && d->plain_ok && r->status == 0) {
			/* No TLS there: a loopback or allowed registry may speak HTTP. */
			log_info("image: %s does not answer HTTPS (%s): trying plain HTTP",
			    d->ref.domain, curl_easy_strerror(cc));
			snprintf(d->scheme, sizeof d->scheme, "http");
			d->scheme_known = 1;
			continue;
		}
		if (s->unranged)
			return 0;
		if (cc == CURLE_ABORTED_BY_CALLBACK)
			return sbx_error(e, SBX_EINVAL, NULL, "the pull was cancelled");
		if (s->overflow)
			return sbx_error(e, SBX_EINVAL, "the registry sent more than the manifest "
			    "said: try again, or ask its owner", "%s: more than %lld bytes came",
			    path, (long long)s->max);
		if (s->werr != 0) {
			errno = s->werr;
			return sbx_error_errno(e, SBX_EIO, "free some disk space",
			    "cannot write what the registry sent");
		}
		if (cc != CURLE_OK) {
			return sbx_error(e, SBX_EBACKEND, strcmp(d->scheme, "https") == 0 &&
			    !d->plain_ok ? "check the address; a registry without TLS needs "
			    "`sbxtop image pull --plain-http` (or image_http in sbxtop.conf)" :
			    "check the address and the network", "cannot reach the registry %s: %s",
			    d->ref.domain, curl_easy_strerror(cc));
		}
		d->scheme_known = 1;
		if (r->status == 401 && !d->tried_auth && r->challenge[0] != '\0') {
			d->tried_auth = 1;
			if (s->mem != NULL)
				buf_reset(s->mem);
			s->written = 0;
			if (dist_authenticate(d, r->challenge, e) < 0)
				return -1;
			continue;
		}
		return 0;
	}
	return 0;
}

/* A manifest or index by tag or digest into body; its content type in ct. */
static int
get_manifest(struct dist *d, const char *tag_or_digest, struct buf *body, char *ct, size_t ctlen,
    struct sbx_err *e)
{
	struct sink s = { .mem = body, .d = d, .max = IMAGE_META_MAX };
	struct resp r;
	_cleanup_free_ char *path = xasprintf("manifests/%s", tag_or_digest);

	buf_reset(body);
	if (dist_get(d, path, ACCEPT_MANIFESTS, 0, &s, &r, e) < 0)
		return -1;
	if (r.status != 200)
		return dist_fail(d, r.status, "manifest", body, e);
	snprintf(ct, ctlen, "%s", r.content_type);
	return 0;
}

/* Blob digest (size bytes as the manifest says) into the store, resuming a
 * partial download; progress as it comes. */
static int
get_blob(struct dist *d, struct image_store *st, const char *digest, int64_t size,
    struct sbx_err *e)
{
	_cleanup_free_ char *part = image_store_partial_path(st, digest);
	_cleanup_close_ int fd = -1;
	struct sha256_ctx ctx;
	struct sink s = { .d = d, .ctx = &ctx };
	struct resp r;
	char got[IMAGE_DIGEST_LEN];
	_cleanup_free_ char *path = xasprintf("blobs/%s", digest);
	int64_t have = 0;
	struct stat sb;

	if (image_store_has_blob(st, digest))
		return 0;
	fd = open(part, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot open %s", part);
	/* Another pull of the same blob: wait for it, then take its result. */
	while (flock(fd, LOCK_EX) < 0)
		if (errno != EINTR)
			return sbx_error_errno(e, SBX_EIO, NULL, "cannot lock %s", part);
	if (image_store_has_blob(st, digest)) {
		(void)unlink(part);
		return 0;
	}
	sha256_init(&ctx);
	if (fstat(fd, &sb) == 0 && sb.st_size > 0 && sb.st_size < size) {
		/* What an earlier pull got: hashed again, then the rest asked for. */
		_cleanup_free_ unsigned char *buf = xmalloc(IO_BUF);
		ssize_t n;
		while ((n = read(fd, buf, IO_BUF)) > 0) {
			sha256_update(&ctx, (size_t)n, buf);
			have += n;
		}
		if (n < 0 || have != sb.st_size) {
			have = 0;
			sha256_init(&ctx);
		}
	}
	for (int tries = 0;; tries++) {
		if (have == 0 && (ftruncate(fd, 0) < 0 || lseek(fd, 0, SEEK_SET) < 0))
			return sbx_error_errno(e, SBX_EIO, NULL, "cannot write %s", part);
		s.fd = fd;
		s.max = size - have;
		s.written = 0;
		s.from = have;
		s.unranged = 0;
		if (dist_get(d, path, NULL, have, &s, &r, e) < 0)
			return -1;
		if (have > 0 && r.status == 206) {
			char want[48];
			snprintf(want, sizeof want, "bytes %lld-", (long long)have);
			if (strncmp(r.content_range, want, strlen(want)) != 0)
				return sbx_error(e, SBX_EBACKEND, "pull again", "%.19s: the registry "
				    "resumed at the wrong place (%.60s)", digest, r.content_range);
			break;
		}
		if (have > 0 && (r.status == 200 || r.status == 416) && tries == 0) {
			/* No ranges there (what came went after what we had), or
			 * ours was wrong: from the start. */
			have = 0;
			sha256_init(&ctx);
			continue;
		}
		if (r.status != 200)
			return dist_fail(d, r.status, "blob", NULL, e);
		break;
	}
	if (have + s.written != size)
		return sbx_error(e, SBX_EBACKEND, "pull again: the download resumes",
		    "%.19s: %lld of %lld bytes came", digest, (long long)(have + s.written),
		    (long long)size);
	image_sha256_finish(&ctx, got);
	if (strcmp(got, digest) != 0) {
		(void)unlink(part);
		return sbx_error(e, SBX_EBACKEND, "pull again; if it happens again, the registry "
		    "holds a damaged blob", "blob %.19s... arrived with digest %.19s...: discarded",
		    digest, got);
	}
	if (fsync(fd) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot write %s", part);
	return image_store_commit_blob(st, part, digest, e);
}

static void
dist_free(struct dist *d)
{
	if (d->h)
		curl_easy_cleanup(d->h);
	free(d->auth);
}

int
image_pull(struct image_store *st, const char *refstr, const struct image_pull_opts *o,
    struct image_info **out, struct sbx_err *e)
{
	struct dist d;
	struct buf body;
	char ct[160], digest[IMAGE_DIGEST_LEN], mt[128], os[16], arch[16], variant[16];
	struct image_info *img = NULL;
	_cleanup_free_ char *cfg = NULL;
	size_t cfglen;
	int rc = -1;

	*out = NULL;
	memset(&d, 0, sizeof d);
	if (image_ref_parse(refstr, &d.ref, e) < 0)
		return -1;
	pthread_once(&curl_once, curl_init);
	d.o = o;
	d.host = image_ref_host(&d.ref);
	d.plain_ok = o->plain_http || image_ref_loopback(&d.ref);
	snprintf(d.scheme, sizeof d.scheme, "https");
	image_ref_format(&d.ref, d.canon, sizeof d.canon);
	if (image_auth_lookup(d.ref.domain, d.creds, sizeof d.creds, d.cred_note,
	    sizeof d.cred_note) < 0)
		log_warnx("image: %s", d.cred_note);
	if ((d.h = curl_easy_init()) == NULL)
		fatal("cannot make a libcurl handle");
	buf_init(&body, IMAGE_META_MAX);

	if (o->platform != NULL && o->platform[0] != '\0') {
		char p[64];
		snprintf(p, sizeof p, "%s", o->platform);
		char *a = strchr(p, '/'), *v = a ? strchr(a + 1, '/') : NULL;
		if (a == NULL) {
			sbx_error(e, SBX_EINVAL, "give --platform as OS/ARCH[/VARIANT], e.g. linux/arm64",
			    "platform '%.60s' is not OS/ARCH", o->platform);
			goto out;
		}
		*a++ = '\0';
		if (v != NULL)
			*v++ = '\0';
		snprintf(os, sizeof os, "%.15s", p);
		snprintf(arch, sizeof arch, "%.15s", a);
		snprintf(variant, sizeof variant, "%.15s", v ? v : "");
	} else {
		image_platform_here(os, arch, variant);
	}
	if (get_manifest(&d, d.ref.digest[0] ? d.ref.digest : d.ref.tag, &body, ct, sizeof ct, e) < 0)
		goto out;
	if (d.ref.digest[0]) {
		char got[IMAGE_DIGEST_LEN];
		image_sha256_buf(body.data, body.len, got);
		if (strcmp(got, d.ref.digest) != 0) {
			sbx_error(e, SBX_EBACKEND, "the registry is not to be trusted with this name",
			    "%s: the registry sent a manifest with digest %.19s...", d.canon, got);
			goto out;
		}
	}
	switch (image_kind_of(ct, body.data, body.len)) {
	case IMAGE_KIND_INDEX: {
		char idx_digest[IMAGE_DIGEST_LEN];
		image_sha256_buf(body.data, body.len, idx_digest);
		if (image_index_pick(body.data, body.len, os, arch, variant, digest, mt, sizeof mt,
		    e) < 0)
			goto out;
		/* The index too, so the store holds what the name pointed to. */
		if (image_store_put_blob(st, idx_digest, body.data, body.len, e) < 0)
			goto out;
		if (get_manifest(&d, digest, &body, ct, sizeof ct, e) < 0)
			goto out;
		char got[IMAGE_DIGEST_LEN];
		image_sha256_buf(body.data, body.len, got);
		if (strcmp(got, digest) != 0) {
			sbx_error(e, SBX_EBACKEND, "pull again; the registry may be damaged",
			    "%s: the manifest for %s/%s came with digest %.19s... instead of %.19s...",
			    d.canon, os, arch, got, digest);
			goto out;
		}
		if (image_kind_of(ct, body.data, body.len) != IMAGE_KIND_MANIFEST) {
			sbx_error(e, SBX_EUNSUPPORTED, NULL, "%s: the index names something that is "
			    "not an image manifest for %s/%s", d.canon, os, arch);
			goto out;
		}
		break;
	}
	case IMAGE_KIND_MANIFEST:
		image_sha256_buf(body.data, body.len, digest);
		break;
	case IMAGE_KIND_SCHEMA1:
		sbx_error(e, SBX_EUNSUPPORTED, "push the image again with a current tool (it "
		    "writes schema 2 or OCI)", "%s: a Docker schema 1 manifest, which registries "
		    "and sbxtop no longer take", d.canon);
		goto out;
	default:
		sbx_error(e, SBX_EUNSUPPORTED, "pull a container image", "%s: the registry sent "
		    "something that is not an image manifest or index (%.100s)", d.canon,
		    ct[0] ? ct : "no content type");
		goto out;
	}
	img = xcalloc(1, sizeof *img);
	snprintf(img->id, sizeof img->id, "%s", digest);
	if (image_manifest_parse(body.data, body.len, img, e) < 0 ||
	    image_store_put_blob(st, digest, body.data, body.len, e) < 0)
		goto out;
	/* The config: small, read whole, its digest checked on the way in. */
	if (!image_store_has_blob(st, img->config)) {
		struct sink s = { .mem = &body, .d = &d, .max = IMAGE_META_MAX };
		struct resp r;
		_cleanup_free_ char *path = xasprintf("blobs/%s", img->config);
		buf_reset(&body);
		if (dist_get(&d, path, NULL, 0, &s, &r, e) < 0)
			goto out;
		if (r.status != 200) {
			dist_fail(&d, r.status, "config", &body, e);
			goto out;
		}
		if (image_store_put_blob(st, img->config, body.data ? body.data : "", body.len, e) < 0)
			goto out;
	}
	if ((cfg = image_store_read_blob(st, img->config, IMAGE_META_MAX, &cfglen, e)) == NULL ||
	    image_config_apply(cfg, cfglen, img, e) < 0)
		goto out;
	for (size_t i = 0; i < img->nlayers; i++)
		d.total += (uint64_t)img->layers[i].size;
	for (size_t i = 0; i < img->nlayers; i++) {
		snprintf(d.what, sizeof d.what, "layer %zu/%zu %.19s", i + 1, img->nlayers,
		    img->layers[i].digest);
		if (o->progress != NULL && o->progress(d.done, d.total, d.what, o->arg) != 0) {
			sbx_error(e, SBX_EINVAL, NULL, "the pull was cancelled");
			goto out;
		}
		if (get_blob(&d, st, img->layers[i].digest, img->layers[i].size, e) < 0)
			goto out;
		d.done += (uint64_t)img->layers[i].size;
	}
	if (o->progress != NULL)
		(void)o->progress(d.total, d.total, "done", o->arg);
	{
		struct image_ref named = d.ref;
		char canon[600];
		/* Recorded under NAME:TAG (a digest-only reference under its digest). */
		if (named.tag[0])
			named.digest[0] = '\0';
		image_ref_format(&named, canon, sizeof canon);
		img->ref = xstrdup(canon);
	}
	img->pulled_ms = wall_ms();
	if (image_store_record(st, img, e) < 0)
		goto out;
	*out = steal_pointer(&img);
	rc = 0;
out:
	image_info_free(img);
	buf_free(&body);
	dist_free(&d);
	return rc;
}
