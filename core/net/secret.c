/* Secrets that never enter a sandbox (net.h): the store beside the
 * configuration, each sandbox's CA, and the proxy's TLS termination for the
 * hosts a secret is bound to, where the value goes into the secret's header
 * on the way out, and is scrubbed from the answer on the way back
 * (net/scrub.h).  OpenSSL. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "core/net.h"
#include "core/net/scrub.h"
#include "core/paths.h"
#include "lib/util.h"

#define HEAD_MAX (16 * 1024)

/* --- the store: CONFIG/sbxtop/secrets/NAME.json, 0600 in a 0700 directory -- */

static int
name_ok(const char *n)
{
	size_t l = strlen(n);

	return l > 0 && l <= 64 && !(n[0] >= '0' && n[0] <= '9') &&
	    strspn(n, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == l;
}

static char *
secret_path(const char *name, int mk, struct sbx_err *e)
{
	_cleanup_free_ char *cfg = NULL;
	char *d;

	if (!name_ok(name)) {
		sbx_error(e, SBX_EINVAL, "a secret's name is an environment variable's: letters, "
		    "digits and '_', not starting with a digit, up to 64", "bad secret name '%s'",
		    name);
		return NULL;
	}
	if ((cfg = mk ? paths_ensure(PATHS_CONFIG, e) : paths_dir(PATHS_CONFIG, e)) == NULL)
		return NULL;
	d = xasprintf("%s/secrets", cfg);
	if (mk && mkdir_p(d, 0700) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", d);
		free(d);
		return NULL;
	}
	{
		char *p = xasprintf("%s/%s.json", d, name);
		free(d);
		return p;
	}
}

int
net_secret_set(const char *name, const char *host, const char *header, const char *value,
    struct sbx_err *e)
{
	_cleanup_free_ char *path = secret_path(name, 1, e), *tmp = NULL, *text = NULL;
	cJSON *o;
	int fd;

	if (path == NULL)
		return -1;
	if (host == NULL || strchr(host, '/') || strchr(host, ':') || strchr(host, '*') ||
	    *host == '\0' || strlen(host) > 253)
		return sbx_error(e, SBX_EINVAL, "give --host a name such as api.github.com",
		    "a secret is bound to one host name, not '%s'", host ? host : "");
	if (header == NULL)
		header = NET_SECRET_HEADER;
	if (strchr(header, ':') == NULL || strstr(header, "{}") == NULL ||
	    strpbrk(header, "\r\n") != NULL)
		return sbx_error(e, SBX_EINVAL, "for example --header 'Authorization: Bearer {}'",
		    "--header is 'Name: value' with {} where the secret goes");
	if (value == NULL || *value == '\0' || strpbrk(value, "\r\n") != NULL)
		return sbx_error(e, SBX_EINVAL, "give the value on standard input, one line",
		    "a secret's value is one non-empty line");
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", name);
	cJSON_AddStringToObject(o, "host", host);
	cJSON_AddStringToObject(o, "header", header);
	cJSON_AddStringToObject(o, "value", value);
	text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	tmp = xasprintf("%s.tmp", path);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot write %s", tmp);
	if (fchmod(fd, 0600) < 0 || write_all(fd, text, strlen(text)) < 0 || close(fd) < 0 ||
	    rename(tmp, path) < 0) {
		unlink(tmp);
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot write %s", path);
	}
	return 0;
}

cJSON *
net_secret_get(const char *name, int with_value, struct sbx_err *e)
{
	_cleanup_free_ char *path = secret_path(name, 0, e), *text = NULL;
	cJSON *o;

	if (path == NULL)
		return NULL;
	if ((text = read_file(path, 1 << 16, NULL)) == NULL || (o = cJSON_Parse(text)) == NULL) {
		sbx_error(e, SBX_ENOTFOUND, "`sbxtop secret set NAME --host HOST` stores one",
		    "no secret '%s'", name);
		return NULL;
	}
	if (!with_value)
		cJSON_DeleteItemFromObjectCaseSensitive(o, "value");
	return o;
}

int
net_secret_list(cJSON **out, struct sbx_err *e)
{
	_cleanup_free_ char *cfg = paths_dir(PATHS_CONFIG, e), *d = NULL;
	DIR *dd;
	struct dirent *de;

	*out = cJSON_CreateArray();
	if (cfg == NULL)
		return -1;
	d = xasprintf("%s/secrets", cfg);
	if ((dd = opendir(d)) == NULL)
		return 0;
	while ((de = readdir(dd)) != NULL) {
		size_t l = strlen(de->d_name);
		char name[80];
		cJSON *o;
		if (l < 6 || l - 5 >= sizeof name || strcmp(de->d_name + l - 5, ".json") != 0)
			continue;
		memcpy(name, de->d_name, l - 5);
		name[l - 5] = '\0';
		if ((o = net_secret_get(name, 0, e)) != NULL)
			cJSON_AddItemToArray(*out, o);
	}
	closedir(dd);
	return 0;
}

int
net_secret_rm(const char *name, struct sbx_err *e)
{
	_cleanup_free_ char *path = secret_path(name, 0, e);

	if (path == NULL)
		return -1;
	if (unlink(path) < 0)
		return sbx_error_errno(e, errno == ENOENT ? SBX_ENOTFOUND : SBX_EIO, NULL,
		    "cannot remove secret '%s'", name);
	return 0;
}

/* --- certificates ----------------------------------------------------------- */

static EVP_PKEY *
new_key(void)
{
	return EVP_EC_gen("P-256");
}

static int
add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *ex;

	X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
	if ((ex = X509V3_EXT_conf_nid(NULL, &ctx, nid, value)) == NULL)
		return -1;
	X509_add_ext(cert, ex, -1);
	X509_EXTENSION_free(ex);
	return 0;
}

/* A certificate for cn with key, signed by ca_key (self-signed when ca is NULL). */
static X509 *
make_cert(const char *cn, EVP_PKEY *key, X509 *ca, EVP_PKEY *ca_key, int is_ca, long days)
{
	X509 *x = X509_new();
	X509_NAME *n;
	unsigned char serial[16];
	BIGNUM *bn;
	char san[300];

	if (x == NULL)
		return NULL;
	X509_set_version(x, 2);
	RAND_bytes(serial, sizeof serial);
	serial[0] &= 0x7f;
	bn = BN_bin2bn(serial, sizeof serial, NULL);
	BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x));
	BN_free(bn);
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), days * 86400);
	X509_set_pubkey(x, key);
	n = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(x, ca ? X509_get_subject_name(ca) : n);
	if (is_ca) {
		add_ext(x, ca ? ca : x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0");
		add_ext(x, ca ? ca : x, NID_key_usage, "critical,keyCertSign,cRLSign");
		add_ext(x, ca ? ca : x, NID_subject_key_identifier, "hash");
	} else {
		snprintf(san, sizeof san, "DNS:%s", cn);
		add_ext(x, ca, NID_subject_alt_name, san);
		add_ext(x, ca, NID_basic_constraints, "critical,CA:FALSE");
		add_ext(x, ca, NID_ext_key_usage, "serverAuth");
		add_ext(x, ca, NID_authority_key_identifier, "keyid:always");
	}
	if (X509_sign(x, ca_key ? ca_key : key, EVP_sha256()) == 0) {
		X509_free(x);
		return NULL;
	}
	return x;
}

int
net_ca_make(const char *id, char **pem, struct sbx_err *e)
{
	_cleanup_free_ char *d = net_dir(id, 1, e), *kp = NULL, *cp = NULL, *cn = NULL;
	EVP_PKEY *key = NULL;
	X509 *ca = NULL;
	FILE *f = NULL;
	int fd, rc = -1;
	BIO *b;
	BUF_MEM *bm;

	*pem = NULL;
	if (d == NULL)
		return -1;
	kp = xasprintf("%s/ca.key", d);
	cp = xasprintf("%s/ca.pem", d);
	cn = xasprintf("sbxtop sandbox %s CA", id);
	if ((key = new_key()) == NULL || (ca = make_cert(cn, key, NULL, NULL, 1, 30)) == NULL) {
		sbx_error(e, SBX_EINTERNAL, NULL, "cannot make the sandbox's CA");
		goto out;
	}
	if ((fd = open(kp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0 ||
	    (f = fdopen(fd, "w")) == NULL || !PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL,
	    NULL) || fclose(f) != 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot write %s", kp);
		goto out;
	}
	if ((fd = open(cp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0 ||
	    (f = fdopen(fd, "w")) == NULL || !PEM_write_X509(f, ca) || fclose(f) != 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot write %s", cp);
		goto out;
	}
	b = BIO_new(BIO_s_mem());
	PEM_write_bio_X509(b, ca);
	BIO_get_mem_ptr(b, &bm);
	*pem = xstrndup(bm->data, bm->length);
	BIO_free(b);
	rc = 0;
out:
	EVP_PKEY_free(key);
	X509_free(ca);
	return rc;
}

/* --- termination ------------------------------------------------------------- */

static void
err_text(const char *what, char *err, size_t len)
{
	unsigned long c = ERR_get_error();
	char buf[256];

	ERR_error_string_n(c, buf, sizeof buf);
	snprintf(err, len, "%s: %s", what, c ? buf : "connection closed");
	ERR_clear_error();
}

/* Read a request head (to the blank line) from s into buf; its length, or -1. */
static int
tls_head(SSL *s, char *buf, size_t cap, size_t *got)
{
	*got = 0;
	while (*got < cap - 1) {
		int n = SSL_read(s, buf + *got, (int)(cap - 1 - *got));
		char *eoh;
		if (n <= 0)
			return -1;
		*got += (size_t)n;
		buf[*got] = '\0';
		if ((eoh = strstr(buf, "\r\n\r\n")) != NULL)
			return (int)(eoh + 4 - buf);
	}
	return -1;
}

static void
append(char **out, size_t *len, size_t *cap, const char *s, size_t n)
{
	if (*len + n + 1 > *cap) {
		*cap = (*len + n + 1) * 2;
		*out = xrealloc(*out, *cap);
	}
	memcpy(*out + *len, s, n);
	*len += n;
	(*out)[*len] = '\0';
}

/* The header line of secret it ("Name: ...{}..."), the default when it has
 * none. */
static const char *
bound_header(const cJSON *it)
{
	const char *h = cJSON_GetStringValue(cJSON_GetObjectItem(it, "header"));

	return h != NULL && strchr(h, ':') != NULL && strstr(h, "{}") != NULL ? h :
	    NET_SECRET_HEADER;
}

/* Whether the head line (ll bytes) is a header the proxy sets or drops for a
 * secret's host: the bound headers (the sandbox's own go), Connection and
 * Keep-Alive (one request per connection), Accept-Encoding and TE (the answer
 * must come as plain bytes to be scrubbed), Upgrade, and Range and If-Range
 * (ranges of an echo could each hold a part of a value, and none all of it). */
static int
dropped(const char *line, size_t ll, const cJSON *secrets)
{
	static const char *const own[] = { "connection:", "keep-alive:", "accept-encoding:",
		"te:", "upgrade:", "range:", "if-range:" };
	const cJSON *it;

	for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
		if (ll >= strlen(own[i]) && strncasecmp(line, own[i], strlen(own[i])) == 0)
			return 1;
	cJSON_ArrayForEach(it, secrets) {
		const char *h = bound_header(it);
		size_t nl = (size_t)(strchr(h, ':') - h) + 1;
		if (ll >= nl && strncasecmp(line, h, nl) == 0)
			return 1;
	}
	return 0;
}

int
net_tls_intercept(int cfd, int ufd, const char *host, const char *ca_dir,
    const cJSON *secrets, uint64_t *up, uint64_t *down, char *err, size_t errlen)
{
	_cleanup_free_ char *kp = xasprintf("%s/ca.key", ca_dir), *cp = xasprintf("%s/ca.pem", ca_dir);
	SSL_CTX *sctx = NULL, *cctx = NULL;
	SSL *srv = NULL, *cli = NULL;
	EVP_PKEY *cakey = NULL, *leafkey = NULL;
	X509 *ca = NULL, *leaf = NULL;
	FILE *f;
	char *head = NULL, *out = NULL, buf[16384];
	size_t got = 0, olen = 0, ocap = 0;
	struct net_scrub *sc = NULL;
	struct buf ans = { 0 };
	int hl, rc = -1;
	const char *cafile = getenv("SBXTOP_NET_CA_FILE");

	if ((f = fopen(kp, "re")) != NULL) {
		cakey = PEM_read_PrivateKey(f, NULL, NULL, NULL);
		fclose(f);
	}
	if ((f = fopen(cp, "re")) != NULL) {
		ca = PEM_read_X509(f, NULL, NULL, NULL);
		fclose(f);
	}
	if (cakey == NULL || ca == NULL) {
		snprintf(err, errlen, "the sandbox's CA is missing");
		goto out;
	}
	if ((leafkey = new_key()) == NULL ||
	    (leaf = make_cert(host, leafkey, ca, cakey, 0, 7)) == NULL) {
		err_text("leaf certificate", err, errlen);
		goto out;
	}
	/* The sandbox's side: our certificate for host, HTTP/1.1 only. */
	sctx = SSL_CTX_new(TLS_server_method());
	if (sctx == NULL || SSL_CTX_use_certificate(sctx, leaf) != 1 ||
	    SSL_CTX_use_PrivateKey(sctx, leafkey) != 1) {
		err_text("TLS server", err, errlen);
		goto out;
	}
	srv = SSL_new(sctx);
	SSL_set_fd(srv, cfd);
	if (SSL_accept(srv) != 1) {
		err_text("TLS from the sandbox", err, errlen);
		goto out;
	}
	/* The upstream's side, verified for real: the system's CAs, or
	 * SBXTOP_NET_CA_FILE (tests). */
	cctx = SSL_CTX_new(TLS_client_method());
	if (cctx == NULL || (cafile && *cafile ? SSL_CTX_load_verify_locations(cctx, cafile, NULL) :
	    SSL_CTX_set_default_verify_paths(cctx)) != 1) {
		err_text("TLS client", err, errlen);
		goto out;
	}
	SSL_CTX_set_verify(cctx, SSL_VERIFY_PEER, NULL);
	cli = SSL_new(cctx);
	SSL_set_fd(cli, ufd);
	SSL_set_tlsext_host_name(cli, host);
	SSL_set1_host(cli, host);
	if (SSL_connect(cli) != 1) {
		long v = SSL_get_verify_result(cli);
		if (v != X509_V_OK)
			snprintf(err, errlen, "upstream certificate: %s", X509_verify_cert_error_string(v));
		else
			err_text("TLS to the upstream", err, errlen);
		goto out;
	}
	/* The request head: the value goes into the bound header and nowhere
	 * else (a placeholder anywhere in the request stays a placeholder), the
	 * answer is asked for uncompressed, and the request is the connection's
	 * last, so every request's head passes here. */
	head = xmalloc(HEAD_MAX + 1);
	if ((hl = tls_head(srv, head, HEAD_MAX + 1, &got)) < 0) {
		snprintf(err, errlen, "no request head from the sandbox");
		goto out;
	}
	{
		char *line = head, *end = head + hl - 2;
		while (line < end) {
			char *eol = strstr(line, "\r\n");
			size_t ll = (size_t)(eol - line);
			const cJSON *it;
			if (line == head || !dropped(line, ll, secrets)) {
				append(&out, &olen, &ocap, line, ll);
				append(&out, &olen, &ocap, "\r\n", 2);
			}
			if (line == head) {
				/* After the request line: the bound headers. */
				cJSON_ArrayForEach(it, secrets) {
					const char *h = bound_header(it);
					const char *v = cJSON_GetStringValue(cJSON_GetObjectItem(it, "value"));
					const char *slot = strstr(h, "{}");
					if (v == NULL)
						continue;
					append(&out, &olen, &ocap, h, (size_t)(slot - h));
					append(&out, &olen, &ocap, v, strlen(v));
					append(&out, &olen, &ocap, slot + 2, strlen(slot + 2));
					append(&out, &olen, &ocap, "\r\n", 2);
				}
			}
			line = eol + 2;
		}
		static const char tail[] = "Accept-Encoding: identity\r\nConnection: close\r\n\r\n";
		append(&out, &olen, &ocap, tail, sizeof tail - 1);
	}
	if (SSL_write(cli, out, (int)olen) <= 0 ||
	    (got > (size_t)hl && SSL_write(cli, head + hl, (int)(got - (size_t)hl)) <= 0)) {
		err_text("TLS to the upstream", err, errlen);
		goto out;
	}
	*up += olen + (got - (size_t)hl);
	/* The rest both ways, as it comes: the request's body as it is; the
	 * answer scrubbed of every value (net/scrub.h), and nothing after it. */
	{
		const char *vals[16];
		size_t nv = 0;
		const cJSON *it;
		cJSON_ArrayForEach(it, secrets) {
			const char *v = cJSON_GetStringValue(cJSON_GetObjectItem(it, "value"));
			if (v != NULL && nv < sizeof vals / sizeof vals[0])
				vals[nv++] = v;
		}
		sc = net_scrub_new(vals, nv, strncmp(head, "HEAD ", 5) == 0);
	}
	buf_init(&ans, 1 << 20);
	for (int asking = 1;;) {
		struct pollfd p[2] = { { asking ? cfd : -1, POLLIN, 0 }, { ufd, POLLIN, 0 } };
		char why[256];
		int n, r;
		if (!(asking && SSL_pending(srv)) && !SSL_pending(cli) && poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (asking && (SSL_pending(srv) || (p[0].revents & (POLLIN | POLLHUP | POLLERR)))) {
			/* The sandbox done sending still gets the answer. */
			if ((n = SSL_read(srv, buf, sizeof buf)) <= 0)
				asking = 0;
			else if (SSL_write(cli, buf, n) <= 0)
				break;
			else
				*up += (uint64_t)n;
		}
		if (SSL_pending(cli) || (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
			n = SSL_read(cli, buf, sizeof buf);
			r = n > 0 ? net_scrub_feed(sc, buf, (size_t)n, &ans, why, sizeof why) :
			    net_scrub_end(sc, &ans, why, sizeof why);
			if (r < 0 && !net_scrub_started(sc)) {
				/* Nothing of it went out: the sandbox hears why. */
				char msg[512];
				int ml = snprintf(msg, sizeof msg, "sbxtop: %s: %s\n", host, why);
				buf_reset(&ans);
				buf_printf(&ans, "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\n"
				    "Content-Length: %d\r\nConnection: close\r\n\r\n%s", ml, msg);
			}
			if (ans.len > 0 && SSL_write(srv, ans.data, (int)ans.len) <= 0)
				break;
			*down += ans.len;
			explicit_bzero(ans.data, ans.len);
			buf_reset(&ans);
			if (r < 0)
				snprintf(err, errlen, "the answer: %s", why);
			if (r != 0 || n <= 0)
				break;
		}
	}
	SSL_shutdown(srv);
	rc = 0;
out:
	if (head != NULL)
		OPENSSL_cleanse(head, HEAD_MAX + 1);
	if (out != NULL)
		OPENSSL_cleanse(out, ocap);
	free(head);
	free(out);
	net_scrub_free(sc);
	if (ans.data != NULL)
		explicit_bzero(ans.data, ans.cap);
	buf_free(&ans);
	explicit_bzero(buf, sizeof buf);
	SSL_free(srv);
	SSL_free(cli);
	SSL_CTX_free(sctx);
	SSL_CTX_free(cctx);
	EVP_PKEY_free(cakey);
	EVP_PKEY_free(leafkey);
	X509_free(ca);
	X509_free(leaf);
	ERR_clear_error();
	return rc;
}
