/* Copies between the host and a sandbox (core_copy_in, core_copy_out) and the
 * transfers the MCP tools make (core_upload, core_download).
 *
 * Both directions go through the agent's archive routes (copy/io.c), so a file
 * and a directory take the same path, modes survive, and binary data needs no
 * encoding.  Archives stream: plain tar to a sandbox on this machine, tar.zst
 * (tar.gz for older agents) where the link is slow, a sha256 checked end to end
 * either way.  A single
 * file coming out of an agent older than its file archives uses files/read.
 *
 * What comes out of a sandbox is untrusted: see copy/io.c for how extraction
 * keeps it inside the destination. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "lib/b64.h"
#include "lib/buf.h"
#include "core/copy/guard.h"
#include "core/copy/io.h"
#include "core/core-int.h"
#include "lib/log.h"
#include "core/paths.h"
#include "lib/util.h"

#define FILE_READ_MAX	(64 << 20)	/* the agent's files/read limit */

/* ---- helpers ----------------------------------------------------------- */

/* The sandbox's view of path: {exists, type, mode, ...}. */
static cJSON *
remote_stat(struct agentc *a, const char *path, struct sbx_err *e)
{
	cJSON *req = cJSON_CreateObject(), *ans = NULL;

	cJSON_AddStringToObject(req, "path", path);
	if (agentc_call(a, "POST", "/v1/files/stat", req, 30000, &ans, e) < 0)
		ans = NULL;
	cJSON_Delete(req);
	return ans;
}

static int
is_type(const cJSON *st, const char *type)
{
	const char *t = cJSON_GetStringValue(cJSON_GetObjectItem(st, "type"));
	return cJSON_IsTrue(cJSON_GetObjectItem(st, "exists")) && t && strcmp(t, type) == 0;
}

static char *
base_of(const char *path)
{
	_cleanup_free_ char *p = xstrdup(path);
	size_t n = strlen(p);

	while (n > 1 && p[n - 1] == '/')
		p[--n] = '\0';
	return xstrdup(basename(p));
}

static char *
dir_of(const char *path)
{
	_cleanup_free_ char *p = xstrdup(path);
	size_t n = strlen(p);

	while (n > 1 && p[n - 1] == '/')
		p[--n] = '\0';
	return xstrdup(dirname(p));
}

static char *
join(const char *dir, const char *name)
{
	size_t n = strlen(dir);
	return xasprintf("%s%s%s", dir, n > 0 && dir[n - 1] == '/' ? "" : "/", name);
}

/* ---- into the sandbox -------------------------------------------------- */

/* Send local (a directory's contents, or the file as arch) into the sandbox
 * directory dir. */
static int
send_local(struct agentc *a, const struct sandbox *s, const char *local, int isdir,
    const char *arch, const char *dir, const char *const *exclude, struct copy_stats *st,
    cJSON **ans, struct sbx_err *e)
{
	_cleanup_free_ char *ldir = isdir ? xstrdup(local) : dir_of(local);
	_cleanup_free_ char *lbase = base_of(local), *q = agentc_escape(dir), *url = NULL;
	_cleanup_close_ int dfd = open(ldir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot open %s", ldir);
	url = xasprintf("/v1/archive/upload?path=%s", q);
	return copy_send(a, url, copy_format(a, s), dfd, isdir ? "." : lbase,
	    isdir ? "" : arch, exclude, st, ans, e);
}

int
core_copy_in(struct core *c, const char *key, const char *local, const char *remote,
    struct sbx_err *e)
{
	struct sandbox *s = NULL;
	struct agentc *a = NULL;
	struct copy_stats cs;
	cJSON *rst = NULL, *ans = NULL;
	_cleanup_free_ char *target = NULL, *upload_dir = NULL, *tbase = NULL;
	_cleanup_free_ char *lbase = base_of(local);
	struct stat st;
	int rc = -1, isdir;

	if (copy_guard_source(local, &st, e) < 0)
		return -1;
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return sbx_error(e, SBX_EINVAL, NULL, "%s is not a file or a directory", local);
	isdir = S_ISDIR(st.st_mode);
	if (core_agent_for(c, key, &s, &a, e) < 0)
		return -1;
	agentc_set_origin(a, "cli");

	/* cp semantics: into an existing directory, under the source's own name. */
	if ((rst = remote_stat(a, remote, e)) == NULL)
		goto out;
	if (is_type(rst, "dir") || (remote[strlen(remote) - 1] == '/' &&
	    !cJSON_IsTrue(cJSON_GetObjectItem(rst, "exists"))))
		target = join(remote, lbase);
	else if (isdir && cJSON_IsTrue(cJSON_GetObjectItem(rst, "exists"))) {
		sbx_error(e, SBX_EINVAL, NULL, "cannot copy the directory %s over %s:%s, which is "
		    "not a directory", local, s->id, remote);
		goto out;
	} else
		target = xstrdup(remote);

	upload_dir = isdir ? xstrdup(target) : dir_of(target);
	tbase = base_of(target);
	if (send_local(a, s, local, isdir, tbase, upload_dir, NULL, &cs, &ans, e) < 0) {
		core_agent_broke(c, s, "the copy", e);
		goto out;
	}
	{
		cJSON *ev = cJSON_CreateObject();
		cJSON_AddStringToObject(ev, "from", local);
		cJSON_AddStringToObject(ev, "to", target);
		core_events_emit(c, "copy.in", s->id, ev);
	}
	rc = 0;
out:
	cJSON_Delete(rst);
	cJSON_Delete(ans);
	agentc_free(a);
	sandbox_free(s);
	return rc;
}

/* ---- out of the sandbox ------------------------------------------------ */

/* The file through files/read, for agents without file archives. */
static int
copy_out_file_json(struct agentc *a, const char *remote, const char *dest, mode_t mode,
    struct core_xfer_result *res, struct sbx_err *e)
{
	cJSON *req = cJSON_CreateObject(), *ans = NULL;
	_cleanup_free_ unsigned char *data = NULL;
	_cleanup_free_ char *tmp = NULL;
	_cleanup_close_ int fd = -1;
	const char *b64;
	size_t len;

	cJSON_AddStringToObject(req, "path", remote);
	cJSON_AddStringToObject(req, "encoding", "base64");
	cJSON_AddNumberToObject(req, "max_bytes", FILE_READ_MAX);
	if (agentc_call(a, "POST", "/v1/files/read", req, 0, &ans, e) < 0) {
		cJSON_Delete(req);
		return -1;
	}
	cJSON_Delete(req);
	if (cJSON_IsTrue(cJSON_GetObjectItem(ans, "truncated"))) {
		cJSON_Delete(ans);
		return sbx_error(e, SBX_EINVAL, "copy the directory that holds it instead",
		    "%s is larger than %d MiB, the most a single file copy takes", remote,
		    FILE_READ_MAX >> 20);
	}
	b64 = cJSON_GetStringValue(cJSON_GetObjectItem(ans, "content"));
	data = b64 ? b64_decode(b64, strlen(b64), &len) : NULL;
	cJSON_Delete(ans);
	if (data == NULL)
		return sbx_error(e, SBX_EAGENT, NULL, "the agent sent a file that is not base64");
	/* Write beside the destination and rename, so a failure leaves the old file. */
	tmp = xasprintf("%s.sbxtop-XXXXXX", dest);
	if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot write %s", dest);
	if (write_all(fd, data, len) < 0 || fchmod(fd, mode & 0777) < 0 ||
	    rename(tmp, dest) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot write %s", dest);
		unlink(tmp);
		return -1;
	}
	if (res != NULL) {
		unsigned char h[32];
		EVP_Digest(data, len, h, NULL, EVP_sha256(), NULL);
		hex_encode(res->sha256, h, sizeof h);
		res->bytes = len;
		res->files = 1;
	}
	return 0;
}

/* The sandbox file remote becomes the host file dest: streamed as a one-file
 * archive, or through files/read from an agent that has no file archives. */
static int
copy_out_file(struct agentc *a, const struct sandbox *s, const char *remote,
    const char *dest, mode_t mode, core_progress_fn progress, void *parg,
    struct core_xfer_result *res, struct sbx_err *e)
{
	_cleanup_free_ char *q = agentc_escape(remote);
	_cleanup_free_ char *what = xasprintf("%s:%s", s->id, remote);
	_cleanup_free_ char *url = xasprintf("/v1/archive/download?path=%s&format=%s", q,
	    copy_format_name(copy_format(a, s)));
	struct copy_stats cs;

	if (copy_fetch(a, url, what, dest, FETCH_FILE, progress, parg, &cs, e) < 0) {
		/* Agents before file archives: "... is not a directory (use /v1/files/read". */
		if (e->code != SBX_EINVAL || strstr(e->msg, "/v1/files/read") == NULL)
			return -1;
		return copy_out_file_json(a, remote, dest, mode, res, e);
	}
	if (res != NULL) {
		memcpy(res->sha256, cs.sha256, sizeof res->sha256);
		res->bytes = cs.bytes;
		res->files = cs.files;
	}
	return 0;
}

/* The archive url of a sandbox directory. */
static char *
tree_url(struct agentc *a, const struct sandbox *s, const char *from, const char *xq)
{
	_cleanup_free_ char *q = agentc_escape(from);

	return xasprintf("/v1/archive/download?path=%s&exclude=%s&format=%s", q, xq,
	    copy_format_name(copy_format(a, s)));
}

int
core_copy_out(struct core *c, const char *key, const char *remote, const char *local,
    struct sbx_err *e)
{
	struct sandbox *s = NULL;
	struct agentc *a = NULL;
	struct copy_stats cs;
	cJSON *rst = NULL;
	_cleanup_free_ char *dest = NULL, *rbase = base_of(remote), *url = NULL, *what = NULL;
	struct stat st;
	int rc = -1, local_dir;

	if (core_agent_for(c, key, &s, &a, e) < 0)
		return -1;
	agentc_set_origin(a, "cli");
	if ((rst = remote_stat(a, remote, e)) == NULL)
		goto out;
	if (!cJSON_IsTrue(cJSON_GetObjectItem(rst, "exists"))) {
		sbx_error(e, SBX_ENOTFOUND, NULL, "%s:%s does not exist", s->id, remote);
		goto out;
	}
	local_dir = stat(local, &st) == 0 && S_ISDIR(st.st_mode);
	if (local_dir)
		dest = join(local, rbase);
	else if (local[strlen(local) - 1] == '/') {
		sbx_error(e, SBX_ENOTFOUND, NULL, "no such directory: %s", local);
		goto out;
	} else
		dest = xstrdup(local);

	if (!is_type(rst, "dir")) {
		double m = cJSON_GetNumberValue(cJSON_GetObjectItem(rst, "mode"));
		rc = copy_out_file(a, s, remote, dest, isnan(m) ? 0644 : (mode_t)m, NULL, NULL,
		    NULL, e);
		goto done;
	}
	if (stat(dest, &st) == 0 && !S_ISDIR(st.st_mode)) {
		sbx_error(e, SBX_EINVAL, NULL, "cannot copy the directory %s:%s over %s, which is "
		    "not a directory", s->id, remote, dest);
		goto out;
	}
	/* exclude= (empty): a copy takes everything, unlike the agent's default. */
	url = tree_url(a, s, remote, "");
	what = xasprintf("%s:%s", s->id, remote);
	rc = copy_fetch(a, url, what, dest, FETCH_TREE, NULL, NULL, &cs, e);
done:
	if (rc < 0)
		core_agent_broke(c, s, "the copy", e);
	if (rc == 0) {
		cJSON *ev = cJSON_CreateObject();
		cJSON_AddStringToObject(ev, "from", remote);
		cJSON_AddStringToObject(ev, "to", dest);
		core_events_emit(c, "copy.out", s->id, ev);
	}
out:
	cJSON_Delete(rst);
	agentc_free(a);
	sandbox_free(s);
	return rc;
}

/* ---- transfers: contents of a directory, with excludes and a digest ------ */

const char *const core_exclude_default[] = {
	".git", "node_modules", ".venv", "__pycache__", "dist", "target", NULL,
};

#define EXCLUDE_MAX 64

static int
exclude_check(const char *const *x, struct sbx_err *e)
{
	size_t n = 0;

	for (; x != NULL && *x != NULL; x++, n++) {
		if (n >= EXCLUDE_MAX)
			return sbx_error(e, SBX_EINVAL, NULL, "exclude: at most %d names",
			    EXCLUDE_MAX);
		if ((*x)[0] == '\0' || strpbrk(*x, "/,") != NULL || strlen(*x) > 255)
			return sbx_error(e, SBX_EINVAL, "give file or directory names such as "
			    "\"node_modules\", not paths", "exclude: '%s' is not a name", *x);
	}
	return 0;
}

struct xfer_prog {
	const struct core_xfer_opts	*o;
	uint64_t			 total;
	const char			*what;
};

static int
xfer_prog(void *arg, uint64_t down, uint64_t up)
{
	struct xfer_prog *p = arg;

	return p->o->progress(up > down ? up : down, p->total, p->what, p->o->arg);
}

void
core_xfer_result_free(struct core_xfer_result *res)
{
	free(res->path);
	res->path = NULL;
}

int
core_upload(struct core *c, const char *key, const char *local, const char *remote,
    const struct core_xfer_opts *o, struct core_xfer_result *res, struct sbx_err *e)
{
	struct sandbox *s = NULL;
	struct agentc *a = NULL;
	struct xfer_prog xp = { o, 0, "uploading" };
	struct copy_stats cs;
	cJSON *ans = NULL;
	_cleanup_free_ char *lbase = base_of(local);
	const char *where = remote ? remote : "/workspace";
	struct stat st;
	int rc = -1;

	memset(res, 0, sizeof *res);
	if (exclude_check(o->exclude, e) < 0)
		return -1;
	if (copy_guard_source(local, &st, e) < 0)
		return -1;
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return sbx_error(e, SBX_EINVAL, NULL, "%s is not a file or a directory", local);
	if (core_agent_for(c, key, &s, &a, e) < 0)
		return -1;
	agentc_set_origin(a, o->origin ? o->origin : "cli");
	/* The archive's size is known only once it is sent: progress counts bytes. */
	if (o->progress)
		agentc_set_progress(a, xfer_prog, &xp);
	if (send_local(a, s, local, S_ISDIR(st.st_mode), lbase, where,
	    o->exclude ? o->exclude : core_exclude_default, &cs, &ans, e) < 0)
		goto out;
	memcpy(res->sha256, cs.sha256, sizeof res->sha256);
	{
		const char *p = cJSON_GetStringValue(cJSON_GetObjectItem(ans, "path"));
		double f = cJSON_GetNumberValue(cJSON_GetObjectItem(ans, "files"));
		double b = cJSON_GetNumberValue(cJSON_GetObjectItem(ans, "bytes"));
		cJSON *ev = cJSON_CreateObject();
		res->path = xstrdup(p ? p : where);
		res->files = isnan(f) ? cs.files : (uint64_t)f;
		res->bytes = isnan(b) ? cs.bytes : (uint64_t)b;
		cJSON_AddStringToObject(ev, "from", local);
		cJSON_AddStringToObject(ev, "to", res->path);
		cJSON_AddNumberToObject(ev, "files", (double)res->files);
		cJSON_AddNumberToObject(ev, "bytes", (double)res->bytes);
		core_events_emit(c, "copy.in", s->id, ev);
	}
	rc = 0;
out:
	cJSON_Delete(ans);
	agentc_free(a);
	sandbox_free(s);
	if (rc < 0)
		core_xfer_result_free(res);
	return rc;
}

/* "a,b,c" for the agent's exclude query (names are checked: no ',' in them). */
static char *
exclude_query(const char *const *x)
{
	struct buf b;

	buf_init(&b, 64 * 1024);
	buf_append(&b, "", 0);
	for (size_t i = 0; x[i] != NULL; i++) {
		_cleanup_free_ char *q = agentc_escape(x[i]);
		if (i > 0)
			buf_append(&b, ",", 1);
		buf_append(&b, q, strlen(q));
	}
	return buf_steal(&b);
}

int
core_download(struct core *c, const char *key, const char *remote, const char *local,
    const struct core_xfer_opts *o, struct core_xfer_result *res, struct sbx_err *e)
{
	struct sandbox *s = NULL;
	struct agentc *a = NULL;
	struct copy_stats cs;
	cJSON *rst = NULL;
	const char *from = remote ? remote : "/workspace";
	_cleanup_free_ char *dest = NULL, *parent = NULL, *xq = NULL, *url = NULL, *what = NULL;
	struct stat st;
	int rc = -1;

	memset(res, 0, sizeof *res);
	if (exclude_check(o->exclude, e) < 0)
		return -1;
	if (local[0] != '/')
		return sbx_error(e, SBX_EINVAL, "give an absolute host path",
		    "%s is not an absolute path", local);
	parent = dir_of(local);
	if (stat(parent, &st) < 0 || !S_ISDIR(st.st_mode))
		return sbx_error(e, SBX_ENOTFOUND, "create the directory first, or choose "
		    "another local_path", "the host directory %s does not exist", parent);
	if (core_agent_for(c, key, &s, &a, e) < 0)
		return -1;
	agentc_set_origin(a, o->origin ? o->origin : "cli");
	if ((rst = remote_stat(a, from, e)) == NULL)
		goto out;
	if (!cJSON_IsTrue(cJSON_GetObjectItem(rst, "exists"))) {
		sbx_error(e, SBX_ENOTFOUND, "sandbox_list_files shows what is there",
		    "%s does not exist in sandbox %s", from, s->id);
		goto out;
	}
	if (!is_type(rst, "dir")) {
		double m = cJSON_GetNumberValue(cJSON_GetObjectItem(rst, "mode"));
		if (is_type(rst, "symlink") || !is_type(rst, "file")) {
			sbx_error(e, SBX_EINVAL, NULL, "%s in sandbox %s is not a file or a directory",
			    from, s->id);
			goto out;
		}
		if (stat(local, &st) == 0 && S_ISDIR(st.st_mode)) {
			_cleanup_free_ char *b = base_of(from);
			dest = join(local, b);
		} else {
			dest = xstrdup(local);
		}
		if (stat(dest, &st) == 0 && S_ISDIR(st.st_mode)) {
			sbx_error(e, SBX_EINVAL, "choose another local_path", "%s is a directory",
			    dest);
			goto out;
		}
		rc = copy_out_file(a, s, from, dest, isnan(m) ? 0644 : (mode_t)m, o->progress,
		    o->arg, res, e);
		goto done;
	}
	dest = xstrdup(local);
	if (lstat(dest, &st) == 0 && !S_ISDIR(st.st_mode)) {
		/* Never through a symlink, never over a file: only the target is written. */
		sbx_error(e, SBX_EINVAL, "choose a new path or an existing directory",
		    "%s exists and is not a directory", dest);
		goto out;
	}
	xq = exclude_query(o->exclude ? o->exclude : core_exclude_default);
	url = tree_url(a, s, from, xq);
	what = xasprintf("%s:%s", s->id, from);
	rc = copy_fetch(a, url, what, dest, FETCH_TREE, o->progress, o->arg, &cs, e);
	if (rc == 0) {
		memcpy(res->sha256, cs.sha256, sizeof res->sha256);
		res->files = cs.files;
		res->bytes = cs.bytes;
	}
done:
	if (rc == 0) {
		cJSON *ev = cJSON_CreateObject();
		res->path = xstrdup(dest);
		cJSON_AddStringToObject(ev, "from", from);
		cJSON_AddStringToObject(ev, "to", dest);
		cJSON_AddNumberToObject(ev, "files", (double)res->files);
		cJSON_AddNumberToObject(ev, "bytes", (double)res->bytes);
		core_events_emit(c, "copy.out", s->id, ev);
	}
out:
	cJSON_Delete(rst);
	agentc_free(a);
	sandbox_free(s);
	if (rc < 0)
		core_xfer_result_free(res);
	return rc;
}
