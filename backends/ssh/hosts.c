/* Remote hosts: the list (CONFIG/hosts.json, 0600, written whole and renamed),
 * the launcher runs on them, their agent bundle cache, and --host auto. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/jspec.h"
#include "lib/buf.h"
#include "backends/ssh/hosts.h"
#include "lib/log.h"
#include "core/paths.h"
#include "core/registry.h"
#include "lib/util.h"

#define HOSTS_FILE_MAX	(1 << 20)
#define HOST_NAME_MAX_LEN 32

void
host_free(struct host *h)
{
	if (h == NULL)
		return;
	free(h->name);
	free(h->user);
	free(h->addr);
	free(h->identity);
	free(h);
}

static void
host_clear(struct host *h)
{
	free(h->name);
	free(h->user);
	free(h->addr);
	free(h->identity);
	memset(h, 0, sizeof *h);
}

void
hosts_free(struct host *v, size_t n)
{
	for (size_t i = 0; v != NULL && i < n; i++)
		host_clear(&v[i]);
	free(v);
}

static int
name_ok(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= HOST_NAME_MAX_LEN && s[0] != '-' && strcmp(s, "auto") != 0 &&
	    strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

int
hosts_parse_url(const char *url, struct host *h, struct sbx_err *e)
{
	const char *p, *at, *colon, *end;
	static const char hint[] = "write it as ssh://USER@HOST or ssh://USER@HOST:PORT";

	if (strncmp(url, "ssh://", 6) != 0)
		return sbx_error(e, SBX_EINVAL, hint, "'%s' is not an ssh:// URL", url);
	p = url + 6;
	if ((at = strchr(p, '@')) == NULL || at == p)
		return sbx_error(e, SBX_EINVAL, hint, "'%s' names no user", url);
	end = p + strlen(p);
	if (end > at + 1 && end[-1] == '/')
		end--;
	if (at[1] == '[') {		/* [IPv6]:port */
		const char *rb = memchr(at, ']', (size_t)(end - at));
		if (rb == NULL)
			return sbx_error(e, SBX_EINVAL, hint, "'%s': unclosed '['", url);
		h->addr = xstrndup(at + 2, (size_t)(rb - at - 2));
		colon = rb[1] == ':' ? rb + 1 : NULL;
	} else {
		colon = memchr(at + 1, ':', (size_t)(end - at - 1));
		h->addr = xstrndup(at + 1, (size_t)((colon ? colon : end) - at - 1));
	}
	h->user = xstrndup(p, (size_t)(at - p));
	h->port = 22;
	if (colon != NULL) {
		char *ep;
		long port = strtol(colon + 1, &ep, 10);
		if (ep != end || port < 1 || port > 65535)
			return sbx_error(e, SBX_EINVAL, hint, "'%s': the port is not 1 to 65535", url);
		h->port = (int)port;
	}
	if (h->addr[0] == '\0' || strpbrk(h->addr, "/@ ") != NULL ||
	    strspn(h->user, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
	    strlen(h->user))
		return sbx_error(e, SBX_EINVAL, hint, "'%s' is not a valid ssh:// URL", url);
	return 0;
}

/* --- the file -------------------------------------------------------------------- */

static cJSON *
load(struct sbx_err *e)
{
	_cleanup_free_ char *path = paths_file(PATHS_CONFIG, "hosts.json", 0, e), *text = NULL;
	cJSON *o, *arr;

	if (path == NULL)
		return NULL;
	if ((text = read_file(path, HOSTS_FILE_MAX, NULL)) == NULL) {
		if (errno == ENOENT)
			return cJSON_CreateArray();
		sbx_error_errno(e, SBX_EIO, NULL, "cannot read %s", path);
		return NULL;
	}
	o = cJSON_Parse(text);
	arr = cJSON_DetachItemFromObjectCaseSensitive(o, "hosts");
	cJSON_Delete(o);
	if (!cJSON_IsArray(arr)) {
		cJSON_Delete(arr);
		sbx_error(e, SBX_EIO, "fix or remove the file", "%s is not a hosts file", path);
		return NULL;
	}
	return arr;
}

static int
save(cJSON *arr, struct sbx_err *e)
{
	_cleanup_free_ char *path = paths_file(PATHS_CONFIG, "hosts.json", 1, e);
	_cleanup_free_ char *tmp = NULL, *text = NULL;
	_cleanup_close_ int fd = -1;
	cJSON *o;

	if (path == NULL)
		return -1;
	o = cJSON_CreateObject();
	cJSON_AddItemReferenceToObject(o, "hosts", arr);
	text = cJSON_Print(o);
	cJSON_Delete(o);
	tmp = xasprintf("%s.tmp", path);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0 ||
	    write_all(fd, text, strlen(text)) < 0 || write_all(fd, "\n", 1) < 0 ||
	    fsync(fd) < 0 || rename(tmp, path) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot write %s", path);
	return 0;
}

static int
from_json(const cJSON *o, struct host *h)
{
	const cJSON *v;

	memset(h, 0, sizeof *h);
	if (!cJSON_IsString(v = cJSON_GetObjectItemCaseSensitive(o, "name")))
		return -1;
	h->name = xstrdup(v->valuestring);
	if (!cJSON_IsString(v = cJSON_GetObjectItemCaseSensitive(o, "user")))
		return -1;
	h->user = xstrdup(v->valuestring);
	if (!cJSON_IsString(v = cJSON_GetObjectItemCaseSensitive(o, "addr")))
		return -1;
	h->addr = xstrdup(v->valuestring);
	v = cJSON_GetObjectItemCaseSensitive(o, "port");
	h->port = (int)jint_of(v, 22, 0, 65535);
	if (cJSON_IsString(v = cJSON_GetObjectItemCaseSensitive(o, "identity")))
		h->identity = xstrdup(v->valuestring);
	v = cJSON_GetObjectItemCaseSensitive(o, "max_sandboxes");
	h->max_sandboxes = (int)jint_of(v, 0, 0, INT_MAX);
	return 0;
}

int
hosts_list(struct host **out, size_t *n, struct sbx_err *e)
{
	cJSON *arr = load(e), *it;
	size_t k = 0;

	*out = NULL;
	*n = 0;
	if (arr == NULL)
		return -1;
	*out = xcalloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof **out);
	cJSON_ArrayForEach(it, arr) {
		if (from_json(it, &(*out)[k]) < 0) {
			host_clear(&(*out)[k]);
			continue;
		}
		k++;
	}
	*n = k;
	cJSON_Delete(arr);
	return 0;
}

struct host *
hosts_get(const char *name, struct sbx_err *e)
{
	struct host *v, *h = NULL;
	size_t n;

	if (hosts_list(&v, &n, e) < 0)
		return NULL;
	for (size_t i = 0; i < n && h == NULL; i++)
		if (strcmp(v[i].name, name) == 0) {
			h = xcalloc(1, sizeof *h);
			*h = v[i];
			memset(&v[i], 0, sizeof v[i]);
		}
	hosts_free(v, n);
	if (h == NULL)
		sbx_error(e, SBX_ENOTFOUND, "`sbxtop host ls` lists the hosts; `sbxtop host add` "
		    "adds one", "unknown host '%s'", name);
	return h;
}

struct ssh_conn *
hosts_connect(const struct host *h, int accept_new, struct sbx_err *e)
{
	struct ssh_target t = { h->name, h->user, h->addr, h->port, h->identity, accept_new };

	return ssh_get(&t, e);
}

int
hosts_add(const struct host *h, int accept_new, struct sbx_err *e)
{
	cJSON *arr, *it, *o;
	int rc;

	if (!name_ok(h->name))
		return sbx_error(e, SBX_EINVAL, NULL, "host name '%s' is not valid: expected 1 to %d "
		    "letters, digits, '.', '_' or '-', not \"auto\"", h->name, HOST_NAME_MAX_LEN);
	if (h->identity != NULL && h->identity[0] != '/')
		return sbx_error(e, SBX_EINVAL, "give --identity an absolute path",
		    "identity '%s' is not an absolute path", h->identity);
	if ((arr = load(e)) == NULL)
		return -1;
	cJSON_ArrayForEach(it, arr) {
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(it, "name");
		if (cJSON_IsString(n) && strcmp(n->valuestring, h->name) == 0) {
			cJSON_Delete(arr);
			return sbx_error(e, SBX_EINVAL, "pick another name, or `sbxtop host rm` it "
			    "first", "a host named '%s' exists", h->name);
		}
	}
	/* A host is only stored once we have reached it and trust its key. */
	ssh_drop(h->name);
	if (hosts_connect(h, accept_new, e) == NULL) {
		cJSON_Delete(arr);
		return -1;
	}
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", h->name);
	cJSON_AddStringToObject(o, "user", h->user);
	cJSON_AddStringToObject(o, "addr", h->addr);
	cJSON_AddNumberToObject(o, "port", h->port);
	if (h->identity != NULL)
		cJSON_AddStringToObject(o, "identity", h->identity);
	cJSON_AddNumberToObject(o, "max_sandboxes", h->max_sandboxes);
	cJSON_AddItemToArray(arr, o);
	rc = save(arr, e);
	cJSON_Delete(arr);
	return rc;
}

int
hosts_rm(const struct registry *r, const char *name, struct sbx_err *e)
{
	cJSON *arr = load(e);
	int i = 0, found = -1, n, rc;

	if (arr == NULL)
		return -1;
	n = cJSON_GetArraySize(arr);
	for (i = 0; i < n && found < 0; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(arr, i), "name");
		if (cJSON_IsString(v) && strcmp(v->valuestring, name) == 0)
			found = i;
	}
	if (found < 0) {
		cJSON_Delete(arr);
		return sbx_error(e, SBX_ENOTFOUND, "`sbxtop host ls` lists the hosts",
		    "unknown host '%s'", name);
	}
	if ((n = hosts_sandbox_count(r, name)) > 0) {
		cJSON_Delete(arr);
		return sbx_error(e, SBX_ESTATE, "destroy them first (`sbxtop ls` shows them)",
		    "host %s still has %d sandbox%s", name, n, n == 1 ? "" : "es");
	}
	cJSON_DeleteItemFromArray(arr, found);
	rc = save(arr, e);
	cJSON_Delete(arr);
	ssh_drop(name);
	return rc;
}

int
hosts_sandbox_count(const struct registry *r, const char *name)
{
	int n = 0;

	for (size_t i = 0; r != NULL && i < registry_count(r); i++) {
		const struct sandbox *s = registry_at(r, i);
		n += s->host != NULL && strcmp(s->host, name) == 0 && s->state != SBX_TERMINATED;
	}
	return n;
}

/* --- the bundle ---------------------------------------------------------------------- */

/* The bundle's fingerprint: every file's path, mode, size and modification
 * time.  Content hashing would read tens of MiB (the libraries) in every
 * process; a rebuilt bundle has new times, so it is copied again all the same. */
static void
hash_tree(EVP_MD_CTX *md, const char *dir, const char *rel, int depth)
{
	struct dirent **names;
	int n = scandir(dir, &names, NULL, alphasort);

	for (int i = 0; i < n; i++) {
		_cleanup_free_ char *p = xasprintf("%s/%s", dir, names[i]->d_name);
		_cleanup_free_ char *r = xasprintf("%s/%s", rel, names[i]->d_name);
		struct stat st;
		if (names[i]->d_name[0] != '.' && stat(p, &st) == 0) {
			EVP_DigestUpdate(md, r, strlen(r) + 1);
			if (S_ISDIR(st.st_mode) && depth < 8) {
				hash_tree(md, p, r, depth + 1);
			} else if (S_ISREG(st.st_mode)) {
				long long f[4] = { st.st_mode & 0777, (long long)st.st_size,
				    (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec };
				EVP_DigestUpdate(md, f, sizeof f);
			}
		}
		free(names[i]);
	}
	free(names);
}

/* The local bundle's fingerprint, computed once per process. */
static const char *
bundle_hash(const char *dir)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	static char hex[17];
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned len = 0;

	pthread_mutex_lock(&mu);
	if (hex[0] == '\0') {
		EVP_MD_CTX *md = EVP_MD_CTX_new();
		EVP_DigestInit_ex(md, EVP_sha256(), NULL);
		hash_tree(md, dir, "", 0);
		EVP_DigestFinal_ex(md, d, &len);
		EVP_MD_CTX_free(md);
		hex_encode(hex, d, 8);
	}
	pthread_mutex_unlock(&mu);
	return hex;
}

/* s in single quotes for a POSIX shell. */
static char *
shq(const char *s)
{
	struct buf b;

	buf_init(&b, 1 << 16);
	buf_append(&b, "'", 1);
	for (; *s; s++)
		if (*s == '\'')
			buf_append(&b, "'\\''", 4);
		else
			buf_append(&b, s, 1);
	buf_append(&b, "'", 1);
	return b.data;
}

int
hosts_bundle(struct ssh_conn *c, const struct host *h, char **remote, struct sbx_err *e)
{
	_cleanup_free_ char *local = paths_agent_bundle(e), *cmd = NULL, *out = NULL;
	_cleanup_free_ char *tmp = NULL, *qd = NULL, *qt = NULL;
	char errtail[300];
	const char *hash;
	char *nl;
	int st;

	*remote = NULL;
	if (local == NULL)
		return -1;
	{
		_cleanup_free_ char *launch = xasprintf("%s/sbxtop-launch", local);
		if (access(launch, X_OK) < 0)
			return sbx_error(e, SBX_ENOTFOUND, "run `make agent-bundle`",
			    "the agent bundle %s has no sbxtop-launch", local);
	}
	hash = bundle_hash(local);
	cmd = xasprintf("c=\"${XDG_CACHE_HOME:-$HOME/.cache}/sbxtop\"; d=\"$c/bundle-%s\"; "
	    "mkdir -p \"$c\" && chmod 700 \"$c\" || exit 3; echo \"$d\"; "
	    "if [ -x \"$d/sbxtop-launch\" ]; then echo have; else echo need; fi", hash);
	if (ssh_run(c, cmd, NULL, 0, &out, &st, errtail, sizeof errtail, e) < 0)
		return -1;
	if (st != 0 || (nl = strchr(out, '\n')) == NULL || out[0] != '/')
		return sbx_error(e, SBX_EBACKEND, "check the disk and home directory there "
		    "(`sbxtop host check NAME`)", "host %s: cannot make the cache directory: %s",
		    h->name, errtail[0] ? errtail : "no answer");
	*nl = '\0';
	if (strncmp(nl + 1, "have", 4) == 0) {
		*remote = xstrdup(out);
		return 0;
	}
	/* Copy into a directory of our own, then rename it in place: a bundle that
	 * is there is always whole. */
	tmp = xasprintf("%s.tmp-%d-%lld", out, (int)getpid(), (long long)now_ms());
	if (ssh_upload_dir(c, local, tmp, e) < 0) {
		qt = shq(tmp);
		free(cmd);
		cmd = xasprintf("rm -rf %s", qt);
		free(out);
		out = NULL;
		(void)ssh_run(c, cmd, NULL, 0, &out, &st, NULL, 0, &(struct sbx_err){ 0 });
		return -1;
	}
	qd = shq(out);
	qt = shq(tmp);
	free(cmd);
	cmd = xasprintf("mv -T %s %s 2>/dev/null || rm -rf %s; [ -x %s/sbxtop-launch ]", qt, qd,
	    qt, qd);
	{
		_cleanup_free_ char *o2 = NULL;
		if (ssh_run(c, cmd, NULL, 0, &o2, &st, errtail, sizeof errtail, e) < 0)
			return -1;
		if (st != 0)
			return sbx_error(e, SBX_EBACKEND, NULL, "host %s: cannot install the agent "
			    "bundle in %s: %s", h->name, out, errtail);
	}
	log_info("host %s: agent bundle copied to %s", h->name, out);
	*remote = steal_pointer(&out);
	return 0;
}

#define NEED_BUNDLE 97	/* the launch command's status when the bundle is missing */

int
hosts_launch(const struct host *h, const char *verb, const cJSON *in, cJSON **out,
    struct sbx_err *e)
{
	struct ssh_conn *c;
	_cleanup_free_ char *local = NULL, *cmd = NULL, *text = NULL, *res = NULL;
	char errtail[400];
	int st;
	cJSON *o, *err;

	*out = NULL;
	if ((c = hosts_connect(h, 0, e)) == NULL || (local = paths_agent_bundle(e)) == NULL)
		return -1;
	/* One round trip when the bundle is there already (the usual case); the
	 * copy and a second try when it is not. */
	cmd = xasprintf("d=\"${XDG_CACHE_HOME:-$HOME/.cache}/sbxtop/bundle-%s\"; "
	    "[ -x \"$d/sbxtop-launch\" ] || exit %d; "
	    "SBXTOP_AGENT_BUNDLE=\"$d\" exec \"$d/sbxtop-launch\" %s", bundle_hash(local),
	    NEED_BUNDLE, verb);
	if (in != NULL && (text = cJSON_PrintUnformatted(in)) == NULL)
		fatal("out of memory");
	for (int round = 0; round < 2; round++) {
		free(res);
		res = NULL;
		if (ssh_run(c, cmd, text, text ? strlen(text) : 0, &res, &st, errtail,
		    sizeof errtail, e) < 0)
			return -1;
		if (st != NEED_BUNDLE)
			break;
		_cleanup_free_ char *dir = NULL;
		if (round > 0 || hosts_bundle(c, h, &dir, e) < 0)
			return round > 0 ? sbx_error(e, SBX_EBACKEND, NULL, "host %s: the agent "
			    "bundle is still missing after copying it", h->name) : -1;
	}
	if ((o = cJSON_Parse(res)) == NULL)
		return sbx_error(e, SBX_EBACKEND, "run `sbxtop host check NAME`", "host %s: the "
		    "launcher gave no answer (exit %d): %s", h->name, st,
		    errtail[0] ? errtail : "no output");
	if ((err = cJSON_GetObjectItemCaseSensitive(o, "error")) != NULL) {
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(err, "message");
		const cJSON *hi = cJSON_GetObjectItemCaseSensitive(err, "hint");
		const cJSON *code = cJSON_GetObjectItemCaseSensitive(err, "code");
		enum sbx_errcode ec = SBX_EBACKEND;
		for (int k = 0; k <= SBX_EINTERNAL; k++)
			if (cJSON_IsString(code) &&
			    strcmp(sbx_errcode_name((enum sbx_errcode)k), code->valuestring) == 0)
				ec = (enum sbx_errcode)k;
		sbx_error(e, ec, cJSON_IsString(hi) ? hi->valuestring : NULL, "host %s: %s", h->name,
		    cJSON_IsString(m) ? m->valuestring : "the launcher failed");
		cJSON_Delete(o);
		return -1;
	}
	*out = o;
	return 0;
}

cJSON *
hosts_probe(const struct host *h)
{
	struct sbx_err e;
	cJSON *o = NULL;

	if (hosts_launch(h, "probe", NULL, &o, &e) < 0) {
		o = cJSON_CreateObject();
		cJSON_AddBoolToObject(o, "reachable", 0);
		cJSON_AddStringToObject(o, "error", e.msg);
		return o;
	}
	cJSON_AddBoolToObject(o, "reachable", 1);
	return o;
}

int
hosts_doctor(const struct host *h, check_fn report, void *arg, struct sbx_err *e)
{
	struct ssh_conn *c;
	_cleanup_free_ char *dir = NULL, *qd = NULL, *cmd = NULL, *res = NULL;
	char *line, *save = NULL;
	int st;

	if ((c = hosts_connect(h, 0, e)) == NULL)
		return -1;
	report(arg, CHECK_OK, "ssh", "connected, host key verified, authenticated", NULL);
	if (hosts_bundle(c, h, &dir, e) < 0)
		return -1;
	report(arg, CHECK_OK, "agent bundle", dir, NULL);
	qd = shq(dir);
	cmd = xasprintf("SBXTOP_AGENT_BUNDLE=%s exec %s/sbxtop-launch doctor", qd, qd);
	if (ssh_run(c, cmd, NULL, 0, &res, &st, NULL, 0, e) < 0)
		return -1;
	for (line = strtok_r(res, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		cJSON *o = cJSON_Parse(line);
		const cJSON *lv = cJSON_GetObjectItemCaseSensitive(o, "level");
		const cJSON *w = cJSON_GetObjectItemCaseSensitive(o, "what");
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(o, "detail");
		const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, "fix");
		if (cJSON_IsString(lv) && cJSON_IsString(w))
			report(arg, strcmp(lv->valuestring, "ok") == 0 ? CHECK_OK :
			    strcmp(lv->valuestring, "warn") == 0 ? CHECK_WARN : CHECK_FAIL,
			    w->valuestring, cJSON_IsString(d) ? d->valuestring : NULL,
			    cJSON_IsString(f) ? f->valuestring : NULL);
		cJSON_Delete(o);
	}
	return 0;
}

int
hosts_pick(const struct registry *r, char **name, struct sbx_err *e)
{
	struct host *v;
	size_t n;
	double best = -1;
	char why[512] = "";
	size_t wn = 0;

	*name = NULL;
	if (hosts_list(&v, &n, e) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		int count = hosts_sandbox_count(r, v[i].name);
		cJSON *p;
		const cJSON *mem;
		double score;
		if (v[i].max_sandboxes > 0 && count >= v[i].max_sandboxes) {
			if (wn < sizeof why)
				wn += (size_t)snprintf(why + wn, sizeof why - wn, "%s%s: full (%d of %d)",
				    wn ? "; " : "", v[i].name, count, v[i].max_sandboxes);
			continue;
		}
		p = hosts_probe(&v[i]);
		mem = cJSON_GetObjectItemCaseSensitive(p, "mem_free_mib");
		if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "reachable")) ||
		    !cJSON_IsNumber(mem)) {
			const cJSON *er = cJSON_GetObjectItemCaseSensitive(p, "error");
			if (wn < sizeof why)
				wn += (size_t)snprintf(why + wn, sizeof why - wn, "%s%s", wn ? "; " : "",
				    cJSON_IsString(er) ? er->valuestring : v[i].name);
			cJSON_Delete(p);
			continue;
		}
		/* Free memory per sandbox it would then hold: the emptier host wins
		 * between hosts of equal memory, the bigger between equally busy ones. */
		score = mem->valuedouble / (double)(count + 1);
		cJSON_Delete(p);
		if (score > best) {
			best = score;
			free(*name);
			*name = xstrdup(v[i].name);
		}
	}
	hosts_free(v, n);
	if (*name == NULL)
		return sbx_error(e, SBX_EUNSUPPORTED, n ? "`sbxtop host ls` shows each host's state"
		    : "add one with `sbxtop host add NAME ssh://USER@HOST`",
		    n ? "no host can take a sandbox: %s" : "no hosts%s", n ? why : "");
	return 0;
}
