/* The content-addressed image store (see image.h for its layout).  A blob gets
 * its name only after its digest was checked, by rename, so a blob that is
 * there is whole; a layer directory gets its name the same way once it is
 * unpacked whole; images.json is replaced whole under the store's lock. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/image/image-int.h"
#include "core/paths.h"
#include "lib/util.h"

#define INDEX_MAX	(64u << 20)

struct image_store {
	char	*root;
	int	 lock_fd;
	int	 locked;
};

struct image_store *
image_store_open(int create, struct sbx_err *e)
{
	_cleanup_free_ char *data = paths_dir(PATHS_DATA, e);
	struct image_store *st;
	static const char *const sub[] = { "", "/blobs", "/blobs/sha256", "/tmp", "/layers" };
	struct stat sb;

	if (data == NULL)
		return NULL;
	st = xcalloc(1, sizeof *st);
	st->root = xasprintf("%s/images/oci", data);
	st->lock_fd = -1;
	if (!create && stat(st->root, &sb) < 0) {
		sbx_error_reason(e, SBX_ENOTFOUND, SBX_R_NOT_FOUND, "pull an image first (`sbxtop "
		    "image pull REF`)", "the image store %s is empty", st->root);
		image_store_close(st);
		return NULL;
	}
	for (size_t i = 0; i < ARRAY_SIZE(sub); i++) {
		_cleanup_free_ char *p = xasprintf("%s%s", st->root, sub[i]);
		if (mkdir_p(p, 0700) < 0) {
			sbx_error_errno(e, SBX_EIO, "check the permissions of XDG_DATA_HOME",
			    "cannot create the image store %s", p);
			image_store_close(st);
			return NULL;
		}
	}
	return st;
}

void
image_store_close(struct image_store *st)
{
	if (st == NULL)
		return;
	if (st->lock_fd >= 0)
		close(st->lock_fd);
	free(st->root);
	free(st);
}

const char *
image_store_root(const struct image_store *st)
{
	return st->root;
}

int
image_store_lock(struct image_store *st, struct sbx_err *e)
{
	if (st->lock_fd < 0) {
		_cleanup_free_ char *p = xasprintf("%s/lock", st->root);
		if ((st->lock_fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0)
			return sbx_error_errno(e, SBX_EIO, NULL, "cannot open %s", p);
	}
	while (flock(st->lock_fd, LOCK_EX) < 0)
		if (errno != EINTR)
			return sbx_error_errno(e, SBX_EIO, NULL, "cannot lock the image store");
	st->locked = 1;
	return 0;
}

void
image_store_unlock(struct image_store *st)
{
	if (st->locked && st->lock_fd >= 0)
		(void)flock(st->lock_fd, LOCK_UN);
	st->locked = 0;
}

char *
image_store_blob_path(const struct image_store *st, const char *digest)
{
	return xasprintf("%s/blobs/sha256/%s", st->root, digest + 7);
}

char *
image_store_partial_path(const struct image_store *st, const char *digest)
{
	return xasprintf("%s/tmp/%s.partial", st->root, digest + 7);
}

int
image_store_has_blob(const struct image_store *st, const char *digest)
{
	_cleanup_free_ char *p = image_store_blob_path(st, digest);
	struct stat sb;

	return lstat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

char *
image_store_read_blob(const struct image_store *st, const char *digest, size_t max, size_t *len,
    struct sbx_err *e)
{
	_cleanup_free_ char *p = image_store_blob_path(st, digest);
	char got[IMAGE_DIGEST_LEN];
	size_t n = 0;
	char *text = read_file(p, max, &n);

	if (text == NULL) {
		sbx_error_errno(e, errno == ENOENT ? SBX_ENOTFOUND : SBX_EIO,
		    "pull the image again", "cannot read blob %.19s of the image store", digest);
		return NULL;
	}
	image_sha256_buf(text, n, got);
	if (strcmp(got, digest) != 0) {
		free(text);
		sbx_error(e, SBX_EIO, "run `sbxtop image gc` and pull the image again",
		    "blob %.19s of the image store is damaged (its content has digest %.19s)",
		    digest, got);
		return NULL;
	}
	if (len != NULL)
		*len = n;
	return text;
}

int
image_store_commit_blob(const struct image_store *st, const char *tmp, const char *digest,
    struct sbx_err *e)
{
	_cleanup_free_ char *p = image_store_blob_path(st, digest);

	if (chmod(tmp, 0400) < 0 || rename(tmp, p) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot store blob %.19s", digest);
	return 0;
}

int
image_store_put_blob(const struct image_store *st, const char *digest, const void *data,
    size_t len, struct sbx_err *e)
{
	char got[IMAGE_DIGEST_LEN];
	_cleanup_free_ char *tmp = NULL;
	_cleanup_close_ int fd = -1;

	image_sha256_buf(data, len, got);
	if (strcmp(got, digest) != 0)
		return sbx_error(e, SBX_EINVAL, "the source sent something else than it named; "
		    "try again, or ask its owner", "content of %.19s... has digest %.19s...", digest,
		    got);
	if (image_store_has_blob(st, digest))
		return 0;
	tmp = xasprintf("%s/tmp/%s.put.%d", st->root, digest + 7, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write_all(fd, data, len) < 0 || fsync(fd) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot write %s", tmp);
		unlink(tmp);
		return -1;
	}
	if (image_store_commit_blob(st, tmp, digest, e) < 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* --- images.json ----------------------------------------------------------- */

static cJSON *
index_load(const struct image_store *st, struct sbx_err *e)
{
	_cleanup_free_ char *p = xasprintf("%s/images.json", st->root);
	_cleanup_free_ char *text = read_file(p, INDEX_MAX, NULL);
	cJSON *o;

	if (text == NULL) {
		if (errno == ENOENT) {
			o = cJSON_CreateObject();
			cJSON_AddArrayToObject(o, "images");
			return o;
		}
		sbx_error_errno(e, SBX_EIO, NULL, "cannot read %s", p);
		return NULL;
	}
	if ((o = cJSON_Parse(text)) == NULL ||
	    !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(o, "images"))) {
		cJSON_Delete(o);
		sbx_error(e, SBX_EIO, "move it aside and pull the images again",
		    "the image store's index %s is damaged", p);
		return NULL;
	}
	return o;
}

static int
index_save(const struct image_store *st, const cJSON *o, struct sbx_err *e)
{
	_cleanup_free_ char *p = xasprintf("%s/images.json", st->root);
	_cleanup_free_ char *tmp = xasprintf("%s.tmp", p);
	_cleanup_free_ char *text = cJSON_Print(o);
	_cleanup_close_ int fd = -1;

	if (text == NULL)
		fatal("out of memory");
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write_all(fd, text, strlen(text)) < 0 || fsync(fd) < 0 ||
	    rename(tmp, p) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot write %s", p);
	return 0;
}

int
image_store_record(struct image_store *st, const struct image_info *img, struct sbx_err *e)
{
	cJSON *idx, *arr, *it;
	int i = 0, rc, locked = st->locked;

	if (img->ref == NULL)
		return sbx_error(e, SBX_EINTERNAL, NULL, "an image without a reference");
	if (!locked && image_store_lock(st, e) < 0)
		return -1;
	if ((idx = index_load(st, e)) == NULL) {
		if (!locked)
			image_store_unlock(st);
		return -1;
	}
	arr = cJSON_GetObjectItemCaseSensitive(idx, "images");
	cJSON_ArrayForEach(it, arr) {
		const char *r = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "ref"));
		if (r != NULL && strcmp(r, img->ref) == 0)
			break;
		i++;
	}
	if (it != NULL)
		cJSON_ReplaceItemInArray(arr, i, image_info_to_json(img));
	else
		cJSON_AddItemToArray(arr, image_info_to_json(img));
	rc = index_save(st, idx, e);
	cJSON_Delete(idx);
	if (!locked)
		image_store_unlock(st);
	return rc;
}

/* What ref_or_id names, as a test of one record. */
static int
names(const cJSON *it, const char *canon, const char *id_prefix)
{
	const char *r = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "ref"));
	const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "id"));

	if (canon != NULL && r != NULL && strcmp(r, canon) == 0)
		return 1;
	return id_prefix != NULL && id != NULL && strncmp(id, id_prefix, strlen(id_prefix)) == 0;
}

/* canon: the canonical reference (without a digest, or with one when ref_or_id
 * gives both); id_prefix: "sha256:HEX..." when ref_or_id is an id or prefix. */
static void
key_of(const char *ref_or_id, char canon[600], char id_prefix[IMAGE_DIGEST_LEN], int *by_digest)
{
	struct image_ref r;
	size_t hn;

	canon[0] = id_prefix[0] = '\0';
	*by_digest = 0;
	if (strncmp(ref_or_id, "sha256:", 7) == 0) {
		snprintf(id_prefix, IMAGE_DIGEST_LEN, "%s", ref_or_id);
		return;
	}
	hn = strspn(ref_or_id, "0123456789abcdef");
	if (hn >= 12 && hn <= 64 && ref_or_id[hn] == '\0') {
		snprintf(id_prefix, IMAGE_DIGEST_LEN, "sha256:%s", ref_or_id);
		/* A name of hex digits may be a repository too: keep both. */
	}
	if (image_ref_parse(ref_or_id, &r, NULL) == 0) {
		if (r.digest[0] != '\0') {
			/* NAME@DIGEST names the manifest: found by its id. */
			snprintf(id_prefix, IMAGE_DIGEST_LEN, "%s", r.digest);
			*by_digest = 1;
			r.digest[0] = '\0';
			if (r.tag[0] == '\0')
				return;
		}
		image_ref_format(&r, canon, 600);
	}
}

struct image_info *
image_store_find(struct image_store *st, const char *ref_or_id, struct sbx_err *e)
{
	cJSON *idx = index_load(st, e), *it, *hit = NULL;
	char canon[600], idp[IMAGE_DIGEST_LEN];
	int by_digest, count = 0;
	struct image_info *img;

	if (idx == NULL)
		return NULL;
	key_of(ref_or_id, canon, idp, &by_digest);
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(idx, "images")) {
		if (by_digest) {
			if (names(it, NULL, idp)) {
				hit = it;
				count = 1;
				break;
			}
		} else if (names(it, canon[0] ? canon : NULL, NULL)) {
			hit = it;
			count = 1;
			break;
		} else if (idp[0] && names(it, NULL, idp)) {
			const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "id"));
			const char *hid = hit ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(hit,
			    "id")) : NULL;
			if (hid == NULL || strcmp(hid, id) != 0)
				count++;
			hit = it;
		}
	}
	if (hit == NULL || count != 1) {
		cJSON_Delete(idx);
		if (count > 1)
			sbx_error(e, SBX_EINVAL, "give more of the id, or the reference",
			    "image id '%.80s' is ambiguous", ref_or_id);
		else
			sbx_error_reason(e, SBX_ENOTFOUND, SBX_R_NOT_FOUND,
			    "pull it with `sbxtop image pull REF`; `sbxtop image ls` lists the store",
			    "no image '%.200s' in the image store", canon[0] ? canon : ref_or_id);
		return NULL;
	}
	img = image_info_from_json(hit, e);
	if (img != NULL && by_digest) {
		/* The id asked for, under the reference as given. */
		free(img->ref);
		img->ref = xstrdup(ref_or_id);
	}
	cJSON_Delete(idx);
	return img;
}

int
image_store_list(struct image_store *st, struct image_info ***out, size_t *n, struct sbx_err *e)
{
	cJSON *idx = index_load(st, e), *it;
	size_t cap;

	*out = NULL;
	*n = 0;
	if (idx == NULL)
		return -1;
	cap = (size_t)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(idx, "images"));
	*out = xcalloc(cap + 1, sizeof **out);
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(idx, "images")) {
		struct image_info *img = image_info_from_json(it, e);
		if (img == NULL) {
			for (size_t i = 0; i < *n; i++)
				image_info_free((*out)[i]);
			free(*out);
			*out = NULL;
			*n = 0;
			cJSON_Delete(idx);
			return -1;
		}
		(*out)[(*n)++] = img;
	}
	cJSON_Delete(idx);
	return 0;
}

int
image_store_untag(struct image_store *st, const char *ref_or_id, char ***gone, size_t *ngone,
    struct sbx_err *e)
{
	cJSON *idx, *arr;
	char canon[600], idp[IMAGE_DIGEST_LEN];
	int by_digest, rc = -1;

	*gone = NULL;
	*ngone = 0;
	if (image_store_lock(st, e) < 0)
		return -1;
	if ((idx = index_load(st, e)) == NULL)
		goto out;
	key_of(ref_or_id, canon, idp, &by_digest);
	arr = cJSON_GetObjectItemCaseSensitive(idx, "images");
	/* An exact reference first; an id (or its prefix) takes all its references. */
	for (int pass = 0; pass < 2 && *ngone == 0; pass++) {
		for (int i = cJSON_GetArraySize(arr) - 1; i >= 0; i--) {
			cJSON *it = cJSON_GetArrayItem(arr, i);
			if (pass == 0 ? (by_digest || !canon[0] || !names(it, canon, NULL)) :
			    (!idp[0] || !names(it, NULL, idp)))
				continue;
			*gone = xrealloc(*gone, (*ngone + 2) * sizeof **gone);
			(*gone)[(*ngone)++] = xstrdup(cJSON_GetStringValue(
			    cJSON_GetObjectItemCaseSensitive(it, "ref")) ?: "");
			(*gone)[*ngone] = NULL;
			cJSON_DeleteItemFromArray(arr, i);
		}
	}
	if (*ngone == 0) {
		sbx_error_reason(e, SBX_ENOTFOUND, SBX_R_NOT_FOUND, "`sbxtop image ls` lists the store",
		    "no image '%.200s' in the image store", canon[0] ? canon : ref_or_id);
		goto out;
	}
	rc = index_save(st, idx, e);
out:
	cJSON_Delete(idx);
	image_store_unlock(st);
	return rc;
}

char *
image_store_layer_path(const struct image_store *st, const char *key, const char *diff_id)
{
	return xasprintf("%s/layers/%s/%s", st->root, key, diff_id + 7);
}

char **
image_store_layer_keys(const struct image_store *st)
{
	_cleanup_free_ char *p = xasprintf("%s/layers", st->root);
	DIR *d = opendir(p);
	struct dirent *de;
	char **v = xcalloc(1, sizeof *v);
	size_t n = 0;

	if (d == NULL)
		return v;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		v = xrealloc(v, (n + 2) * sizeof *v);
		v[n++] = xstrdup(de->d_name);
		v[n] = NULL;
	}
	closedir(d);
	return v;
}

/* --- gc ----------------------------------------------------------------------- */

struct keep {
	char	**v;
	size_t	  n;
};

static void
keep_add(struct keep *k, const char *hex)
{
	k->v = xrealloc(k->v, (k->n + 1) * sizeof *k->v);
	k->v[k->n++] = xstrdup(hex);
}

static int
kept(const struct keep *k, const char *name)
{
	for (size_t i = 0; i < k->n; i++)
		if (strcmp(k->v[i], name) == 0)
			return 1;
	return 0;
}

static void
keep_image(struct keep *blobs, struct keep *layers, const struct image_info *img)
{
	keep_add(blobs, img->id + 7);
	keep_add(blobs, img->config + 7);
	for (size_t i = 0; i < img->nlayers; i++) {
		keep_add(blobs, img->layers[i].digest + 7);
		keep_add(layers, img->layers[i].diff_id + 7);
	}
}

static int64_t
file_bytes(int dfd, const char *name)
{
	struct stat sb;

	return fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 ? (int64_t)sb.st_blocks * 512 : 0;
}

int
image_store_gc(struct image_store *st, char *const *keep_ids, size_t nkeep,
    int (*rm)(const char *path, void *arg, struct sbx_err *e), void *rm_arg,
    int64_t (*tree_bytes)(const char *path, long max_entries, int *cut),
    int *nblobs, int *nlayers, int64_t *bytes, struct sbx_err *e)
{
	struct keep kb = { 0 }, kl = { 0 };
	struct image_info **imgs = NULL;
	size_t n = 0;
	char **keys = NULL;
	int rc = -1;
	DIR *d;
	struct dirent *de;

	*nblobs = *nlayers = 0;
	*bytes = 0;
	if (image_store_lock(st, e) < 0)
		return -1;
	if (image_store_list(st, &imgs, &n, e) < 0)
		goto out;
	for (size_t i = 0; i < n; i++)
		keep_image(&kb, &kl, imgs[i]);
	/* A sandbox's image whose reference is gone: its manifest tells its layers. */
	for (size_t i = 0; i < nkeep; i++) {
		size_t len;
		_cleanup_free_ char *m = NULL, *c = NULL;
		struct image_info tmp = { 0 };
		if (!image_digest_valid(keep_ids[i]) ||
		    (m = image_store_read_blob(st, keep_ids[i], IMAGE_META_MAX, &len, NULL)) == NULL)
			continue;
		snprintf(tmp.id, sizeof tmp.id, "%s", keep_ids[i]);
		if (image_manifest_parse(m, len, &tmp, NULL) == 0 &&
		    (c = image_store_read_blob(st, tmp.config, IMAGE_META_MAX, &len, NULL)) != NULL &&
		    image_config_apply(c, len, &tmp, NULL) == 0)
			keep_image(&kb, &kl, &tmp);
		free(tmp.layers);
		for (char **p = tmp.env; p != NULL && *p != NULL; p++)
			free(*p);
		free(tmp.env);
		free(tmp.user);
		free(tmp.workdir);
	}
	{
		_cleanup_free_ char *bd = xasprintf("%s/blobs/sha256", st->root);
		if ((d = opendir(bd)) != NULL) {
			while ((de = readdir(d)) != NULL) {
				if (de->d_name[0] == '.' || kept(&kb, de->d_name))
					continue;
				*bytes += file_bytes(dirfd(d), de->d_name);
				if (unlinkat(dirfd(d), de->d_name, 0) == 0)
					(*nblobs)++;
			}
			closedir(d);
		}
	}
	{
		/* Downloads left on their way: a pull that died.  Resumable, but only
		 * for a day. */
		_cleanup_free_ char *td = xasprintf("%s/tmp", st->root);
		if ((d = opendir(td)) != NULL) {
			while ((de = readdir(d)) != NULL) {
				struct stat sb;
				if (de->d_name[0] == '.' || fstatat(dirfd(d), de->d_name, &sb,
				    AT_SYMLINK_NOFOLLOW) < 0 || sb.st_mtime > time(NULL) - 86400)
					continue;
				*bytes += (int64_t)sb.st_blocks * 512;
				(void)unlinkat(dirfd(d), de->d_name, 0);
			}
			closedir(d);
		}
	}
	{
		/* Disks made of images (a backend that boots one): ID12-INJECT.ext4. */
		_cleanup_free_ char *dd = xasprintf("%s/disks", st->root);
		DIR *kdir = opendir(dd);
		struct dirent *kde;
		while (kdir != NULL && (kde = readdir(kdir)) != NULL) {
			if (kde->d_name[0] == '.')
				continue;
			_cleanup_free_ char *sub = xasprintf("%s/%s", dd, kde->d_name);
			if ((d = opendir(sub)) == NULL)
				continue;
			while ((de = readdir(d)) != NULL) {
				int keep = 0;
				if (de->d_name[0] == '.')
					continue;
				for (size_t i = 0; i < kb.n && !keep; i++)
					keep = strncmp(kb.v[i], de->d_name, 12) == 0 && de->d_name[12] == '-';
				if (keep)
					continue;
				*bytes += file_bytes(dirfd(d), de->d_name);
				(void)unlinkat(dirfd(d), de->d_name, 0);
			}
			closedir(d);
		}
		if (kdir != NULL)
			closedir(kdir);
	}
	keys = image_store_layer_keys(st);
	for (char **k = keys; *k != NULL; k++) {
		_cleanup_free_ char *ld = xasprintf("%s/layers/%s", st->root, *k);
		if ((d = opendir(ld)) == NULL)
			continue;
		while ((de = readdir(d)) != NULL) {
			/* Left-overs of an unpack that died start with '.'. */
			if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
			    (de->d_name[0] != '.' && kept(&kl, de->d_name)))
				continue;
			_cleanup_free_ char *p = xasprintf("%s/%s", ld, de->d_name);
			int64_t b = tree_bytes(p, 1000000, NULL);
			if (rm(p, rm_arg, e) < 0) {
				closedir(d);
				goto out;
			}
			*bytes += b;
			*nlayers += de->d_name[0] != '.';
		}
		closedir(d);
	}
	rc = 0;
out:
	image_store_unlock(st);
	for (size_t i = 0; i < n; i++)
		image_info_free(imgs[i]);
	free(imgs);
	for (size_t i = 0; i < kb.n; i++)
		free(kb.v[i]);
	for (size_t i = 0; i < kl.n; i++)
		free(kl.v[i]);
	free(kb.v);
	free(kl.v);
	for (char **k = keys; k != NULL && *k != NULL; k++)
		free(*k);
	free(keys);
	return rc;
}
