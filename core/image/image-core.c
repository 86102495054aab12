/* What core_create and the front ends call for OCI images: resolve (and pull)
 * a reference, unpack its layers for the backend that runs it, bound what an
 * agent may use by images_allowed, and list, remove and collect what the
 * store holds.
 *
 * A layer is unpacked once per id mapping (the backend's image_ids key), in a
 * child that is root of a user namespace mapped as the backend's sandboxes
 * are (its image_run), so the image's root is the sandbox's root for an
 * ordinary user as for root; the layers/KEY directory belongs to the
 * sandboxes' root, so that child may write it. */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/backend.h"
#include "core/core.h"
#include "core/image/image-int.h"
#include "core/registry.h"
#include "lib/buf.h"
#include "lib/log.h"
#include "lib/util.h"

/* --- images_allowed --------------------------------------------------------- */

/* An entry's canonical form: "DOMAIN/REPO:TAG" exact, "DOMAIN/REPO:*" any tag,
 * "DOMAIN/PATH/" and a star: anything below; "*" anything; a path as it is. */
static int
pattern_canon(const char *p, char *out, size_t len)
{
	struct image_ref r;
	char base[600];
	size_t n = strlen(p);

	if (strcmp(p, "*") == 0 || image_is_path(p)) {
		snprintf(out, len, "%s", p);
		return 0;
	}
	if (n >= 2 && p[n - 1] == '*' && (p[n - 2] == ':' || p[n - 2] == '/') && n - 2 < sizeof base) {
		memcpy(base, p, n - 2);
		base[n - 2] = '\0';
		if (image_ref_parse(base, &r, NULL) < 0 || r.digest[0])
			return -1;
		snprintf(out, len, "%s/%s%c*", r.domain, r.repo, p[n - 2]);
		return 0;
	}
	if (image_ref_parse(p, &r, NULL) < 0)
		return -1;
	image_ref_format(&r, out, len);
	return 0;
}

/* ref canonical ("DOMAIN/REPO:TAG" or "...@DIGEST"), or a path. */
static int
allowed_by(const char *list, const char *ref, char *matched, size_t mlen)
{
	_cleanup_free_ char *copy = xstrdup(list ? list : "");
	char *save = NULL;

	for (char *t = strtok_r(copy, ", \t", &save); t != NULL; t = strtok_r(NULL, ", \t", &save)) {
		char pat[700];
		if (pattern_canon(t, pat, sizeof pat) < 0)
			continue;
		if (strcmp(pat, "*") == 0 ? !image_is_path(ref) : image_is_path(pat) ?
		    strcmp(pat, ref) == 0 : fnmatch(pat, ref, FNM_PATHNAME) == 0 ||
		    (pat[strlen(pat) - 1] == '*' && pat[strlen(pat) - 2] == '/' &&
		    strncmp(pat, ref, strlen(pat) - 1) == 0)) {
			if (matched)
				snprintf(matched, mlen, "%s", t);
			return 1;
		}
	}
	return 0;
}

char *
image_canonical(const char *image)
{
	struct image_ref r;
	char out[600];

	if (image == NULL || image[0] == '\0' || image_is_path(image) ||
	    image_ref_parse(image, &r, NULL) < 0)
		return image ? xstrdup(image) : NULL;
	image_ref_format(&r, out, sizeof out);
	return xstrdup(out);
}

/* images_allowed, and the images of the templates the operator named for
 * the REST sessions (NAME=IMAGE). */
static int
agent_may(struct core *c, const char *canon, char *matched, size_t mlen)
{
	_cleanup_free_ char *t = xstrdup(config_str(core_config(c), "templates"));
	char *save = NULL;

	if (allowed_by(config_str(core_config(c), "images_allowed"), canon, matched, mlen))
		return 1;
	for (char *p = strtok_r(t, ", \t", &save); p; p = strtok_r(NULL, ", \t", &save)) {
		char *eq = strchr(p, '=');
		if (eq != NULL && allowed_by(eq + 1, canon, matched, mlen))
			return 1;
	}
	return 0;
}

int
core_image_agent_may(struct core *c, const char *ref)
{
	_cleanup_free_ char *canon = image_canonical(ref);

	return canon != NULL && agent_may(c, canon, NULL, 0);
}

static int
is_agent(const struct core_create_opts *o, const char *owner)
{
	if (o->agent)
		return o->agent > 0;
	return owner != NULL && strcmp(owner, "cli") != 0 && strcmp(owner, "console") != 0 &&
	    strcmp(owner, "pool") != 0;
}

/* Plain HTTP to this registry: loopback, or named in image_http. */
static int
plain_http_ok(struct core *c, const char *ref)
{
	struct image_ref r;
	_cleanup_free_ char *copy = xstrdup(config_str(core_config(c), "image_http"));
	char *save = NULL;

	if (image_ref_parse(ref, &r, NULL) < 0)
		return 0;
	for (char *t = strtok_r(copy, ", \t", &save); t; t = strtok_r(NULL, ", \t", &save))
		if (strcmp(t, r.domain) == 0)
			return 1;
	return 0;
}

/* --- unpacking for a backend ------------------------------------------------ */

struct unpack_job {
	int			 blob_fd, key_fd;
	int			 lower[256];
	int			 nlower;
	char			 tmp[96], final[80];
	const char		*diff_id;
	struct image_ids	 ids;
	struct image_unpack_limits lim;
};

struct unpack_report {
	struct sbx_err			e;
	struct image_unpack_stats	st;
};

/* In the backend's user namespace, as the sandboxes' root. */
static int
unpack_in_ns(void *arg, void *report)
{
	struct unpack_job *j = arg;
	struct unpack_report *rep = report;
	int dest;

	memset(rep, 0, sizeof *rep);
	if (mkdirat(j->key_fd, j->tmp, 0755) < 0 ||
	    (dest = openat(j->key_fd, j->tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		sbx_error_errno(&rep->e, SBX_EIO, NULL, "cannot make a layer directory");
		return -1;
	}
	if (image_layer_unpack(j->blob_fd, dest, j->lower, j->nlower, j->diff_id, &j->ids, &j->lim,
	    &rep->st, &rep->e) < 0) {
		close(dest);
		return -1;
	}
	(void)fsync(dest);
	close(dest);
	if (renameat(j->key_fd, j->tmp, j->key_fd, j->final) < 0 && errno != EEXIST &&
	    errno != ENOTEMPTY) {
		sbx_error_errno(&rep->e, SBX_EIO, NULL, "cannot put the layer in place");
		return -1;
	}
	return 0;
}

static int
rm_tree(const char *path, void *arg, struct sbx_err *e)
{
	const struct backend *b = arg;

	if (b != NULL && b->image_rmtree != NULL)
		return b->image_rmtree(path, e);
	return sbx_error(e, SBX_EUNSUPPORTED, NULL, "no backend removes %s", path);
}

/* The layers/KEY directory for b's mapping, made and owned by its root. */
static int
key_dir(struct image_store *st, const struct backend *b, struct backend_image_ids *ids,
    char **path, struct sbx_err *e)
{
	struct stat sb;

	if (b->image_ids(ids, e) < 0)
		return -1;
	*path = xasprintf("%s/layers/%s", image_store_root(st), ids->key);
	if (mkdir(*path, 0711) < 0 && errno != EEXIST)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", *path);
	if (lstat(*path, &sb) < 0 || !S_ISDIR(sb.st_mode))
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot use %s", *path);
	if ((sb.st_uid != ids->owner || sb.st_gid != ids->group) &&
	    chown(*path, ids->owner, ids->group) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot hand %s to the sandboxes' root", *path);
	return 0;
}

/* Unpack every layer of img for backend b that is not there yet; *dirs (may be
 * NULL) gets their paths, top first, NULL-terminated. */
static int
unpack_for(struct core *c, const struct backend *b, struct image_store *st,
    const struct image_info *img, image_progress_fn progress, void *parg, char ***dirs,
    struct sbx_err *e)
{
	struct backend_image_ids ids;
	_cleanup_free_ char *kd = NULL;
	_cleanup_close_ int key_fd = -1;
	char **v = xcalloc(img->nlayers + 1, sizeof *v);
	int rc = -1;
	const struct config *cfg = core_config(c);

	if (dirs)
		*dirs = NULL;
	if (b->image_ids == NULL || b->image_run == NULL) {
		free(v);
		return sbx_error(e, SBX_EUNSUPPORTED, "use --backend ns", "the %s backend does not "
		    "run OCI images", b->name);
	}
	if (key_dir(st, b, &ids, &kd, e) < 0 ||
	    (key_fd = open(kd, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
		if (key_fd < 0 && kd != NULL && e->msg[0] == '\0')
			sbx_error_errno(e, SBX_EIO, NULL, "cannot open %s", kd);
		free(v);
		return -1;
	}
	for (size_t i = 0; i < img->nlayers; i++) {
		const struct image_layer *L = &img->layers[i];
		char *dir = image_store_layer_path(st, ids.key, L->diff_id);
		struct stat sb;
		v[img->nlayers - 1 - i] = dir;
		if (lstat(dir, &sb) == 0 && S_ISDIR(sb.st_mode))
			continue;
		/* One unpacker per layer: the others wait and find it made. */
		_cleanup_free_ char *lp = xasprintf("%s/.%s.lock", kd, L->diff_id + 7);
		_cleanup_close_ int lk = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (lk < 0 || flock(lk, LOCK_EX) < 0) {
			sbx_error_errno(e, SBX_EIO, NULL, "cannot lock %s", lp);
			goto out;
		}
		if (lstat(dir, &sb) == 0 && S_ISDIR(sb.st_mode)) {
			(void)unlink(lp);
			continue;
		}
		if (progress != NULL) {
			char what[96];
			snprintf(what, sizeof what, "unpacking layer %zu/%zu", i + 1, img->nlayers);
			(void)progress(i, img->nlayers, what, parg);
		}
		struct unpack_job j;
		struct unpack_report rep;
		struct sbx_err sub;
		_cleanup_free_ char *blob = image_store_blob_path(st, L->digest);
		memset(&j, 0, sizeof j);
		j.key_fd = key_fd;
		j.diff_id = L->diff_id;
		j.ids = (struct image_ids){ ids.count, 1, ids.strip_setid };
		j.lim.max_bytes = config_int(cfg, "image_max_layer") << 20;
		j.lim.max_entries = config_int(cfg, "image_max_entries");
		snprintf(j.tmp, sizeof j.tmp, ".%s.tmp.%d", L->diff_id + 7, (int)getpid());
		snprintf(j.final, sizeof j.final, "%s", L->diff_id + 7);
		if ((j.blob_fd = open(blob, O_RDONLY | O_CLOEXEC)) < 0) {
			sbx_error_errno(e, SBX_EIO, "pull the image again", "cannot read layer %.19s",
			    L->digest);
			goto out;
		}
		/* The layers below it, top first, for hard links into them. */
		for (size_t k = i; k > 0 && j.nlower < (int)ARRAY_SIZE(j.lower); k--)
			if ((j.lower[j.nlower] = open(v[img->nlayers - k], O_PATH | O_DIRECTORY |
			    O_CLOEXEC)) >= 0)
				j.nlower++;
		memset(&rep, 0, sizeof rep);
		int r = b->image_run(unpack_in_ns, &j, &rep, sizeof rep, &sub);
		close(j.blob_fd);
		while (j.nlower > 0)
			close(j.lower[--j.nlower]);
		if (r < 0) {
			_cleanup_free_ char *tmp = xasprintf("%s/%s", kd, j.tmp);
			struct sbx_err scratch;
			if (rep.e.code != SBX_OK) {
				rep.e.msg[sizeof rep.e.msg - 1] = rep.e.hint[sizeof rep.e.hint - 1] = '\0';
				sbx_error(e, rep.e.code, rep.e.hint[0] ? rep.e.hint : NULL,
				    "%s: layer %zu (%.19s): %s", img->ref ? img->ref : img->id, i + 1,
				    L->digest, rep.e.msg);
			} else {
				*e = sub;
			}
			if (b->image_rmtree(tmp, &scratch) < 0)
				log_warnx("cannot remove %s: %s", tmp, scratch.msg);
			goto out;
		}
		if (rep.st.skipped_devices > 0 || rep.st.stripped_setid > 0 || rep.st.squashed_ids > 0)
			log_info("image %s layer %zu: %lld device nodes left out, %lld setuid/setgid "
			    "bits dropped, %lld files of ids this user cannot map made root's",
			    img->ref ? img->ref : img->id, i + 1, (long long)rep.st.skipped_devices,
			    (long long)rep.st.stripped_setid, (long long)rep.st.squashed_ids);
		(void)unlink(lp);
	}
	rc = 0;
out:
	if (rc == 0 && dirs != NULL)
		*dirs = v;
	else {
		for (size_t i = 0; i < img->nlayers; i++)
			free(v[i]);
		free(v);
	}
	return rc;
}

/* The image's config and layers as the backend reads them at create. */
static cJSON *
spec_of(const struct image_info *img, char **dirs)
{
	cJSON *o = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(o, "layers");

	for (char **d = dirs; d != NULL && *d != NULL; d++)
		cJSON_AddItemToArray(a, cJSON_CreateString(*d));
	a = cJSON_AddArrayToObject(o, "env");
	for (char **p = img->env; p != NULL && *p != NULL; p++)
		cJSON_AddItemToArray(a, cJSON_CreateString(*p));
	if (img->user != NULL && img->user[0] != '\0')
		cJSON_AddStringToObject(o, "user", img->user);
	if (img->workdir != NULL)
		cJSON_AddStringToObject(o, "workdir", img->workdir);
	return o;
}

static struct image_info *
find_or_pull(struct core *c, struct image_store *st, const char *ref, int agent,
    struct sbx_err *e)
{
	struct image_info *img = image_store_find(st, ref, e);
	struct image_pull_opts po = { 0 };

	if (img != NULL || e->code != SBX_ENOTFOUND || image_digest_valid(ref))
		return img;
	/* Not in the store: pulled, as docker run does. */
	log_info("image %s is not in the store: pulling it", ref);
	po.plain_http = plain_http_ok(c, ref);
	(void)agent;
	if (image_pull(st, ref, &po, &img, e) < 0)
		return NULL;
	return img;
}

int
core_image_prepare(struct core *c, const struct core_create_opts *o, struct sandbox *s,
    struct sbx_err *e)
{
	const struct backend *b = backend_find(s->backend);
	struct image_store *st = NULL;
	struct image_info *img = NULL;
	char **dirs = NULL, matched[256];
	int agent = is_agent(o, s->owner), rc = -1;

	if (s->image == NULL || image_is_path(s->image)) {
		/* A directory of the host's as the root: the operator's to give. */
		if (agent && s->image != NULL && !agent_may(c, s->image, NULL, 0))
			return sbx_error(e, SBX_EDENIED, "leave out image, or use one the operator "
			    "allows (the sbx://images resource lists them)", "image '%.200s' is a "
			    "directory of the host, which the operator has not allowed agents "
			    "(images_allowed)", s->image);
		return 0;
	}
	if (agent && !agent_may(c, s->image, matched, sizeof matched))
		return sbx_error(e, SBX_EDENIED, "leave out image, or use one the operator allows "
		    "(the sbx://images resource lists them)", "image '%.200s' is not among the "
		    "images the operator allows agents (images_allowed)", s->image);
	if (b == NULL || b->image_ids == NULL)
		return sbx_error(e, SBX_EUNSUPPORTED, "use --backend ns, or leave out --image",
		    "the %s backend does not start sandboxes from OCI images", s->backend);
	if ((st = image_store_open(e)) == NULL)
		return -1;
	img = o->image_id != NULL ? image_store_find(st, o->image_id, e) :
	    find_or_pull(c, st, s->image, agent, e);
	if (img == NULL)
		goto out;
	if (unpack_for(c, b, st, img, NULL, NULL, &dirs, e) < 0)
		goto out;
	free(s->image_id);
	s->image_id = xstrdup(img->id);
	cJSON_Delete(s->image_spec);
	s->image_spec = spec_of(img, dirs);
	rc = 0;
out:
	for (char **d = dirs; d != NULL && *d != NULL; d++)
		free(*d);
	free(dirs);
	image_info_free(img);
	image_store_close(st);
	return rc;
}

/* --- front ends --------------------------------------------------------------- */

static int64_t
layers_bytes(const struct image_info *img)
{
	int64_t n = 0;

	for (size_t i = 0; i < img->nlayers; i++)
		n += img->layers[i].size;
	return n;
}

static cJSON *
summary(const struct image_info *img)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "ref", img->ref ? img->ref : img->id);
	cJSON_AddStringToObject(o, "id", img->id);
	cJSON_AddStringToObject(o, "platform", img->platform);
	cJSON_AddNumberToObject(o, "layers", (double)img->nlayers);
	cJSON_AddNumberToObject(o, "size", (double)layers_bytes(img));
	if (img->user && img->user[0])
		cJSON_AddStringToObject(o, "user", img->user);
	if (img->workdir)
		cJSON_AddStringToObject(o, "workdir", img->workdir);
	cJSON_AddNumberToObject(o, "pulled_ms", (double)img->pulled_ms);
	return o;
}

/* Unpack for the default backend, so the first create is quick. */
static int
unpack_default(struct core *c, struct image_store *st, const struct image_info *img,
    image_progress_fn progress, void *arg, cJSON *out, struct sbx_err *e)
{
	const struct backend *b = backend_find(config_str(core_config(c), "backend"));

	if (b == NULL || b->image_ids == NULL)
		return 0;
	if (unpack_for(c, b, st, img, progress, arg, NULL, e) < 0)
		return -1;
	cJSON_AddStringToObject(out, "unpacked_for", b->name);
	return 0;
}

int
core_image_pull(struct core *c, const char *ref, const struct core_image_pull_opts *o,
    cJSON **out, struct sbx_err *e)
{
	struct image_store *st;
	struct image_info *img = NULL;
	struct image_pull_opts po = { o->plain_http || plain_http_ok(c, ref), o->platform,
	    o->progress, o->arg };
	int rc = -1;

	*out = NULL;
	if (o->agent && !core_image_agent_may(c, ref))
		return sbx_error(e, SBX_EDENIED, "pull one the operator allows (images_allowed)",
		    "image '%.200s' is not among the images the operator allows agents", ref);
	if ((st = image_store_open(e)) == NULL)
		return -1;
	if (image_pull(st, ref, &po, &img, e) < 0)
		goto out;
	*out = summary(img);
	if (o->platform == NULL && unpack_default(c, st, img, o->progress, o->arg, *out, e) < 0) {
		cJSON_Delete(*out);
		*out = NULL;
		goto out;
	}
	core_events_emit(c, "image.pulled", NULL, summary(img));
	rc = 0;
out:
	image_info_free(img);
	image_store_close(st);
	return rc;
}

int
core_image_import(struct core *c, const char *src, const char *ref, image_progress_fn progress,
    void *arg, cJSON **out, struct sbx_err *e)
{
	struct image_store *st;
	struct image_info *img = NULL;
	int rc = -1;

	*out = NULL;
	if ((st = image_store_open(e)) == NULL)
		return -1;
	if (image_import(st, src, ref, progress, arg, &img, e) < 0)
		goto out;
	*out = summary(img);
	if (unpack_default(c, st, img, progress, arg, *out, e) < 0) {
		cJSON_Delete(*out);
		*out = NULL;
		goto out;
	}
	core_events_emit(c, "image.pulled", NULL, summary(img));
	rc = 0;
out:
	image_info_free(img);
	image_store_close(st);
	return rc;
}

/* The image ids live sandboxes use (caller frees). */
static char **
ids_in_use(size_t *n)
{
	struct sbx_err e;
	struct registry *r = registry_load(&e);
	char **v = NULL;

	*n = 0;
	if (r == NULL)
		return NULL;
	v = xcalloc(registry_count(r) + 1, sizeof *v);
	for (size_t i = 0; i < registry_count(r); i++) {
		const struct sandbox *s = registry_at(r, i);
		if (s->image_id != NULL && s->state != SBX_TERMINATED)
			v[(*n)++] = xstrdup(s->image_id);
	}
	registry_free(r);
	return v;
}

static int
in_list(char *const *v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return 1;
	return 0;
}

int
core_image_list(struct core *c, cJSON **out, struct sbx_err *e)
{
	struct image_store *st;
	struct image_info **imgs = NULL;
	size_t n = 0, nuse = 0;
	char **use = NULL, **keys = NULL;
	cJSON *arr, *seen = cJSON_CreateObject(), *seen_u = cJSON_CreateObject();
	int64_t total_blobs = 0, total_unpacked = 0;
	*out = NULL;
	if ((st = image_store_open(e)) == NULL || image_store_list(st, &imgs, &n, e) < 0) {
		image_store_close(st);
		cJSON_Delete(seen);
		cJSON_Delete(seen_u);
		return -1;
	}
	use = ids_in_use(&nuse);
	keys = image_store_layer_keys(st);
	*out = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(*out, "images");
	for (size_t i = 0; i < n; i++) {
		cJSON *o = summary(imgs[i]);
		int64_t unpacked = 0;
		for (size_t l = 0; l < imgs[i]->nlayers; l++) {
			const struct image_layer *L = &imgs[i]->layers[l];
			if (cJSON_GetObjectItemCaseSensitive(seen, L->digest) == NULL) {
				cJSON_AddTrueToObject(seen, L->digest);
				total_blobs += L->size;
			}
			for (char **k = keys; k != NULL && *k != NULL; k++) {
				_cleanup_free_ char *p = image_store_layer_path(st, *k, L->diff_id);
				int64_t b = core_tree_bytes(p, 1000000, NULL);
				if (b < 0)
					continue;
				unpacked += b;
				if (cJSON_GetObjectItemCaseSensitive(seen_u, p) == NULL) {
					cJSON_AddTrueToObject(seen_u, p);
					total_unpacked += b;
				}
			}
		}
		cJSON_AddNumberToObject(o, "unpacked", (double)unpacked);
		cJSON_AddBoolToObject(o, "in_use", in_list(use, nuse, imgs[i]->id));
		cJSON_AddBoolToObject(o, "allowed", agent_may(c, imgs[i]->ref, NULL, 0));
		cJSON_AddItemToArray(arr, o);
	}
	{
		cJSON *t = cJSON_AddObjectToObject(*out, "total");
		cJSON_AddNumberToObject(t, "images", (double)n);
		cJSON_AddNumberToObject(t, "blobs", (double)total_blobs);
		cJSON_AddNumberToObject(t, "unpacked", (double)total_unpacked);
	}
	for (size_t i = 0; i < n; i++)
		image_info_free(imgs[i]);
	free(imgs);
	for (size_t i = 0; i < nuse; i++)
		free(use[i]);
	free(use);
	for (char **k = keys; k != NULL && *k != NULL; k++)
		free(*k);
	free(keys);
	cJSON_Delete(seen);
	cJSON_Delete(seen_u);
	image_store_close(st);
	return 0;
}

int
core_image_rm(struct core *c, const char *ref, cJSON **out, struct sbx_err *e)
{
	struct image_store *st = image_store_open(e);
	char **gone = NULL;
	size_t n = 0;
	cJSON *arr;

	(void)c;
	*out = NULL;
	if (st == NULL)
		return -1;
	if (image_store_untag(st, ref, &gone, &n, e) < 0) {
		image_store_close(st);
		return -1;
	}
	*out = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(*out, "removed");
	for (size_t i = 0; i < n; i++) {
		cJSON_AddItemToArray(arr, cJSON_CreateString(gone[i]));
		free(gone[i]);
	}
	free(gone);
	image_store_close(st);
	return 0;
}

struct gc_rm {
	const struct backend	*b;
};

static int
gc_rm(const char *path, void *arg, struct sbx_err *e)
{
	struct gc_rm *g = arg;

	return rm_tree(path, (void *)g->b, e);
}

int
core_image_gc(struct core *c, cJSON **out, struct sbx_err *e)
{
	struct image_store *st = image_store_open(e);
	struct gc_rm g = { backend_find(config_str(core_config(c), "backend")) };
	size_t nuse = 0;
	char **use;
	int blobs = 0, layers = 0, rc;
	int64_t bytes = 0;

	*out = NULL;
	if (st == NULL)
		return -1;
	/* Layers of another key are removed by the backend that made them: the
	 * ns backend, whichever is the default. */
	if (g.b == NULL || g.b->image_rmtree == NULL)
		g.b = backend_find("ns");
	use = ids_in_use(&nuse);
	rc = image_store_gc(st, use, nuse, gc_rm, &g, &blobs, &layers, &bytes, e);
	for (size_t i = 0; i < nuse; i++)
		free(use[i]);
	free(use);
	image_store_close(st);
	if (rc < 0)
		return -1;
	*out = cJSON_CreateObject();
	cJSON_AddNumberToObject(*out, "blobs", blobs);
	cJSON_AddNumberToObject(*out, "layers", layers);
	cJSON_AddNumberToObject(*out, "bytes", (double)bytes);
	return 0;
}

int
core_image_allowed(struct core *c, cJSON **out, struct sbx_err *e)
{
	_cleanup_free_ char *tpl = xstrdup(config_str(core_config(c), "templates"));
	_cleanup_free_ char *copy = NULL;
	struct buf all;
	char *ts = NULL;

	/* images_allowed's entries, then the templates' images. */
	buf_init(&all, 1u << 20);
	(void)buf_printf(&all, "%s", config_str(core_config(c), "images_allowed"));
	for (char *p = strtok_r(tpl, ", \t", &ts); p; p = strtok_r(NULL, ", \t", &ts))
		if (strchr(p, '=') != NULL)
			(void)buf_printf(&all, ",%s", strchr(p, '=') + 1);
	if ((copy = buf_steal(&all)) == NULL)
		copy = xstrdup("");
	struct image_store *st = image_store_open(e);
	struct image_info **imgs = NULL;
	size_t n = 0;
	char *save = NULL;
	cJSON *arr;

	*out = NULL;
	if (st == NULL || image_store_list(st, &imgs, &n, e) < 0) {
		image_store_close(st);
		return -1;
	}
	*out = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(*out, "images");
	for (char *t = strtok_r(copy, ", \t", &save); t; t = strtok_r(NULL, ", \t", &save)) {
		char pat[700];
		cJSON *o = cJSON_CreateObject();
		int found = 0;
		cJSON_AddStringToObject(o, "pattern", t);
		if (pattern_canon(t, pat, sizeof pat) == 0 && strchr(pat, '*') == NULL &&
		    !image_is_path(pat))
			cJSON_AddStringToObject(o, "ref", pat);
		for (size_t i = 0; i < n && !found; i++) {
			char one[700];
			snprintf(one, sizeof one, "%s", t);
			if (allowed_by(one, imgs[i]->ref, NULL, 0)) {
				cJSON_AddStringToObject(o, "id", imgs[i]->id);
				if (cJSON_GetObjectItemCaseSensitive(o, "ref") == NULL)
					cJSON_AddStringToObject(o, "ref", imgs[i]->ref);
				found = 1;
			}
		}
		cJSON_AddBoolToObject(o, "pulled", found);
		cJSON_AddItemToArray(arr, o);
	}
	for (size_t i = 0; i < n; i++)
		image_info_free(imgs[i]);
	free(imgs);
	image_store_close(st);
	return 0;
}
