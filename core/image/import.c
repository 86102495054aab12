/* Images from elsewhere than a registry: an OCI image layout (a directory, as
 * `skopeo copy ... oci:DIR` and `umoci` write), the same packed in a tar (an
 * OCI archive, `podman save --format oci-archive`), a `docker save` archive
 * (manifest.json, a config and uncompressed layer tars), and the local stores
 * of podman and docker through their own save commands.  Every blob is
 * hashed on its way into the store; a docker-save image gets an OCI manifest
 * written here, whose digest is its id. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/image/image-int.h"
#include "lib/log.h"
#include "lib/util.h"

#define REF_NAME	"org.opencontainers.image.ref.name"
#define CTR_NAME	"io.containerd.image.name"

extern char **environ;

/* Copy file src into the store as blob digest (checked on the way). */
static int
blob_in(struct image_store *st, const char *src, const char *digest, int64_t want_size,
    struct sbx_err *e)
{
	_cleanup_close_ int in = -1, out = -1;
	_cleanup_free_ char *tmp = NULL;
	struct sha256_ctx ctx;
	char got[IMAGE_DIGEST_LEN];
	_cleanup_free_ unsigned char *buf = xmalloc(IO_BUF);
	int64_t total = 0;
	ssize_t n;

	if (image_store_has_blob(st, digest))
		return 0;
	if ((in = open(src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return sbx_error_errno(e, SBX_ENOTFOUND, "the layout is incomplete", "cannot read %s",
		    src);
	tmp = xasprintf("%s/tmp/%s.import.%d", image_store_root(st), digest + 7, (int)getpid());
	if ((out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot write %s", tmp);
	sha256_init(&ctx);
	while ((n = read(in, buf, IO_BUF)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			unlink(tmp);
			return sbx_error_errno(e, SBX_EIO, NULL, "cannot read %s", src);
		}
		sha256_update(&ctx, (size_t)n, buf);
		if (write_all(out, buf, (size_t)n) < 0) {
			unlink(tmp);
			return sbx_error_errno(e, SBX_EIO, NULL, "cannot write %s", tmp);
		}
		total += n;
	}
	image_sha256_finish(&ctx, got);
	if (strcmp(got, digest) != 0 || (want_size >= 0 && total != want_size)) {
		unlink(tmp);
		return sbx_error(e, SBX_EINVAL, "the source is damaged", "%s: its content (%lld bytes, "
		    "%.19s...) is not the blob %.19s... it should be", src, (long long)total, got, digest);
	}
	if (fsync(out) < 0 || image_store_commit_blob(st, tmp, digest, e) < 0) {
		unlink(tmp);
		return e->msg[0] ? -1 : sbx_error_errno(e, SBX_EIO, NULL, "cannot write %s", tmp);
	}
	return 0;
}

static char *
read_small(const char *path, size_t *len, struct sbx_err *e)
{
	char *t = read_file(path, IMAGE_META_MAX, len);

	if (t == NULL)
		sbx_error_errno(e, errno == ENOENT ? SBX_ENOTFOUND : SBX_EIO, NULL, "cannot read %s", path);
	return t;
}

/* The reference an import is recorded as: the one given, else the name the
 * source gives (a whole reference, or a tag alone, as `skopeo copy ...
 * oci:DIR:TAG` writes: then localhost/DIR:TAG), else localhost/imported. */
static char *
name_for(const char *ref, const char *given, const char *dir, const char *id)
{
	struct image_ref r;
	char canon[600], base[64] = "imported";
	const char *b = strrchr(dir, '/');

	if (ref != NULL && image_ref_parse(ref, &r, NULL) == 0)
		goto done;
	if (given != NULL && strpbrk(given, ":/") != NULL && image_ref_parse(given, &r, NULL) == 0)
		goto done;
	b = b ? b + 1 : dir;
	if (strlen(b) < sizeof base && b[0] != '\0') {
		snprintf(base, sizeof base, "%.*s", (int)strcspn(b, "."), b);
		for (char *p = base; *p; p++)
			*p = (*p >= 'A' && *p <= 'Z') ? (char)(*p - 'A' + 'a') :
			    ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9')) ? *p : '-';
	}
	snprintf(canon, sizeof canon, "localhost/%s:%s", base, given != NULL ? given : id + 7);
	if (image_ref_parse(canon, &r, NULL) < 0) {
		snprintf(canon, sizeof canon, "localhost/imported:%.12s", id + 7);
		if (image_ref_parse(canon, &r, NULL) < 0)
			return xstrdup(canon);
	}
done:
	r.digest[0] = '\0';
	image_ref_format(&r, canon, sizeof canon);
	return xstrdup(canon);
}

/* *img under name (taken) in the store's index, then *out: 0, or -1 with e. */
static int
record(struct image_store *st, struct image_info **img, char *name, struct image_info **out,
    struct sbx_err *e)
{
	(*img)->ref = name;
	(*img)->pulled_ms = wall_ms();
	if (image_store_record(st, *img, e) < 0)
		return -1;
	*out = steal_pointer(img);
	return 0;
}

/* Copy blob digest of layout dir into the store and return its content (small). */
static char *
layout_meta(struct image_store *st, const char *dir, const char *digest, size_t *len,
    struct sbx_err *e)
{
	_cleanup_free_ char *p = xasprintf("%s/blobs/sha256/%s", dir, digest + 7);

	if (blob_in(st, p, digest, -1, e) < 0)
		return NULL;
	return image_store_read_blob(st, digest, IMAGE_META_MAX, len, e);
}

static int
from_layout(struct image_store *st, const char *dir, const char *label, const char *name,
    const char *ref, struct image_info **out, struct sbx_err *e)
{
	_cleanup_free_ char *ip = xasprintf("%s/index.json", dir), *idx = NULL, *body = NULL,
	    *cfg = NULL, *picked_name = NULL;
	cJSON *o = NULL;
	const cJSON *m, *hit = NULL;
	char digest[IMAGE_DIGEST_LEN], mt[128], os[16], arch[16], variant[16];
	size_t len, n = 0;
	struct image_info *img = NULL;
	int rc = -1;

	if ((idx = read_small(ip, &len, e)) == NULL)
		return -1;
	if ((o = cJSON_ParseWithLength(idx, len)) == NULL) {
		sbx_error(e, SBX_EINVAL, NULL, "%s is not JSON", ip);
		goto out;
	}
	cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(o, "manifests")) {
		const cJSON *a = cJSON_GetObjectItemCaseSensitive(m, "annotations");
		const char *rn = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, REF_NAME));
		const char *cn = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, CTR_NAME));
		n++;
		if (name == NULL || (rn != NULL && strcmp(rn, name) == 0) ||
		    (cn != NULL && strcmp(cn, name) == 0)) {
			if (hit != NULL && name == NULL) {
				sbx_error(e, SBX_EINVAL, "name one: SOURCE:NAME", "%s holds several "
				    "images", dir);
				goto out;
			}
			hit = m;
			free(picked_name);
			picked_name = cn ? xstrdup(cn) : rn ? xstrdup(rn) : NULL;
			if (name != NULL)
				break;
		}
	}
	if (hit == NULL) {
		sbx_error(e, SBX_ENOTFOUND, NULL, name ? "%s has no image named %s" : "%s holds no "
		    "image%s", dir, name ? name : "");
		goto out;
	}
	snprintf(digest, sizeof digest, "%s",
	    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(hit, "digest")) ?: "");
	if (!image_digest_valid(digest)) {
		sbx_error(e, SBX_EINVAL, NULL, "%s names a manifest without a sha256 digest", ip);
		goto out;
	}
	if ((body = layout_meta(st, dir, digest, &len, e)) == NULL)
		goto out;
	if (image_kind_of(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(hit, "mediaType")),
	    body, len) == IMAGE_KIND_INDEX) {
		image_platform_here(os, arch, variant);
		if (image_index_pick(body, len, os, arch, variant, digest, mt, sizeof mt, e) < 0)
			goto out;
		free(body);
		if ((body = layout_meta(st, dir, digest, &len, e)) == NULL)
			goto out;
	}
	img = xcalloc(1, sizeof *img);
	snprintf(img->id, sizeof img->id, "%s", digest);
	if (image_manifest_parse(body, len, img, e) < 0 ||
	    (cfg = layout_meta(st, dir, img->config, &len, e)) == NULL ||
	    image_config_apply(cfg, len, img, e) < 0)
		goto out;
	for (size_t i = 0; i < img->nlayers; i++) {
		_cleanup_free_ char *p = xasprintf("%s/blobs/sha256/%s", dir, img->layers[i].digest + 7);
		if (blob_in(st, p, img->layers[i].digest, img->layers[i].size, e) < 0)
			goto out;
	}
	rc = record(st, &img, name_for(ref, picked_name, label, img->id), out, e);
out:
	cJSON_Delete(o);
	image_info_free(img);
	return rc;
}

/* A docker-save directory: manifest.json names the config and the layers. */
static int
from_docker_save(struct image_store *st, const char *dir, const char *label, const char *name,
    const char *ref, struct image_info **out, struct sbx_err *e)
{
	_cleanup_free_ char *mp = xasprintf("%s/manifest.json", dir), *mtext = NULL,
	    *cfgpath = NULL, *cfg = NULL, *manifest = NULL;
	cJSON *o = NULL, *m, *man = NULL, *ls;
	const cJSON *hit = NULL, *tag = NULL, *l;
	char cdig[IMAGE_DIGEST_LEN], mdig[IMAGE_DIGEST_LEN];
	size_t len, clen;
	struct image_info *img = NULL;
	int rc = -1;

	if ((mtext = read_small(mp, &len, e)) == NULL)
		return -1;
	if ((o = cJSON_ParseWithLength(mtext, len)) == NULL || !cJSON_IsArray(o)) {
		sbx_error(e, SBX_EINVAL, NULL, "%s is not a docker-save manifest", mp);
		goto out;
	}
	cJSON_ArrayForEach(m, o) {
		const cJSON *t;
		cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(m, "RepoTags"))
			if (name != NULL && cJSON_IsString(t) && strcmp(t->valuestring, name) == 0)
				hit = m, tag = t;
		if (name == NULL) {
			if (hit != NULL) {
				sbx_error(e, SBX_EINVAL, "name one: ARCHIVE:NAME", "the archive holds "
				    "several images");
				goto out;
			}
			hit = m;
			tag = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(m, "RepoTags"), 0);
		}
	}
	if (hit == NULL) {
		sbx_error(e, SBX_ENOTFOUND, NULL, "the archive has no image %s", name ? name : "");
		goto out;
	}
	{
		const char *c = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(hit, "Config"));
		if (c == NULL || strstr(c, "..") != NULL || c[0] == '/') {
			sbx_error(e, SBX_EINVAL, NULL, "the archive's manifest names no usable Config");
			goto out;
		}
		cfgpath = xasprintf("%s/%s", dir, c);
	}
	if ((cfg = read_small(cfgpath, &clen, e)) == NULL)
		goto out;
	image_sha256_buf(cfg, clen, cdig);
	if (image_store_put_blob(st, cdig, cfg, clen, e) < 0)
		goto out;
	/* An OCI manifest for it: uncompressed layers, as the archive has them. */
	man = cJSON_CreateObject();
	cJSON_AddNumberToObject(man, "schemaVersion", 2);
	cJSON_AddStringToObject(man, "mediaType", "application/vnd.oci.image.manifest.v1+json");
	{
		cJSON *c = cJSON_AddObjectToObject(man, "config");
		cJSON_AddStringToObject(c, "mediaType", "application/vnd.oci.image.config.v1+json");
		cJSON_AddStringToObject(c, "digest", cdig);
		cJSON_AddNumberToObject(c, "size", (double)clen);
	}
	ls = cJSON_AddArrayToObject(man, "layers");
	cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(hit, "Layers")) {
		const char *lp = cJSON_GetStringValue(l);
		char ldig[IMAGE_DIGEST_LEN];
		int64_t size;
		if (lp == NULL || strstr(lp, "..") != NULL || lp[0] == '/') {
			sbx_error(e, SBX_EINVAL, NULL, "the archive's manifest names a layer outside it");
			goto out;
		}
		_cleanup_free_ char *p = xasprintf("%s/%s", dir, lp);
		_cleanup_close_ int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || image_sha256_fd(fd, ldig, &size) < 0) {
			sbx_error_errno(e, SBX_EIO, NULL, "cannot read layer %s", lp);
			goto out;
		}
		if (blob_in(st, p, ldig, size, e) < 0)
			goto out;
		cJSON *d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "mediaType", "application/vnd.oci.image.layer.v1.tar");
		cJSON_AddStringToObject(d, "digest", ldig);
		cJSON_AddNumberToObject(d, "size", (double)size);
		cJSON_AddItemToArray(ls, d);
	}
	manifest = cJSON_PrintUnformatted(man);
	image_sha256_buf(manifest, strlen(manifest), mdig);
	if (image_store_put_blob(st, mdig, manifest, strlen(manifest), e) < 0)
		goto out;
	img = xcalloc(1, sizeof *img);
	snprintf(img->id, sizeof img->id, "%s", mdig);
	if (image_manifest_parse(manifest, strlen(manifest), img, e) < 0 ||
	    image_config_apply(cfg, clen, img, e) < 0)
		goto out;
	rc = record(st, &img, name_for(ref, cJSON_GetStringValue(tag), label, img->id), out, e);
out:
	cJSON_Delete(o);
	cJSON_Delete(man);
	image_info_free(img);
	return rc;
}

/* Unpack the tar at path into the new directory dir: regular files and
 * directories only, names checked by libarchive's secure flags. */
static int
untar(const char *path, const char *dir, struct sbx_err *e)
{
	struct archive *a = archive_read_new(), *w = archive_write_disk_new();
	struct archive_entry *ent;
	int r, rc = -1;
	_cleanup_close_ int cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (a == NULL || w == NULL || cwd < 0)
		fatal("out of memory");
	archive_read_support_format_tar(a);
	archive_read_support_filter_none(a);
	archive_read_support_filter_gzip(a);
	archive_write_disk_set_options(w, ARCHIVE_EXTRACT_SECURE_NODOTDOT |
	    ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS);
	if (archive_read_open_filename(a, path, 1 << 16) != ARCHIVE_OK) {
		sbx_error(e, SBX_EINVAL, "give an OCI layout directory, an OCI archive or a "
		    "docker-save archive", "cannot read %s: %s", path, archive_error_string(a));
		goto out;
	}
	if (chdir(dir) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot enter %s", dir);
		goto out;
	}
	while ((r = archive_read_next_header(a, &ent)) == ARCHIVE_OK) {
		mode_t t = archive_entry_filetype(ent);
		if ((t != AE_IFREG && t != AE_IFDIR) || archive_entry_hardlink(ent) != NULL)
			continue;
		archive_entry_set_perm(ent, t == AE_IFDIR ? 0700 : 0600);
		if (archive_write_header(w, ent) != ARCHIVE_OK) {
			sbx_error(e, SBX_EINVAL, NULL, "%s: %s", path, archive_error_string(w));
			goto back;
		}
		const void *blk;
		size_t sz;
		la_int64_t off;
		while ((r = archive_read_data_block(a, &blk, &sz, &off)) == ARCHIVE_OK)
			if (archive_write_data_block(w, blk, sz, off) != ARCHIVE_OK)
				break;
		if (r != ARCHIVE_EOF || archive_write_finish_entry(w) != ARCHIVE_OK) {
			sbx_error(e, SBX_EIO, NULL, "%s: %s", path, archive_error_string(a) ?
			    archive_error_string(a) : archive_error_string(w));
			goto back;
		}
	}
	if (r != ARCHIVE_EOF) {
		sbx_error(e, SBX_EINVAL, NULL, "%s: %s", path, archive_error_string(a));
		goto back;
	}
	rc = 0;
back:
	if (fchdir(cwd) < 0)
		log_warn("cannot return to the working directory");
out:
	archive_read_free(a);
	archive_write_free(w);
	return rc;
}

static int
rm_rf(const char *dir)
{
	char *argv[] = { "rm", "-rf", "--one-file-system", (char *)dir, NULL };
	pid_t pid;
	int st;

	if (posix_spawnp(&pid, "rm", NULL, NULL, argv, environ) != 0)
		return -1;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* podman or docker save REF into the archive at path. */
static int
tool_save(const char *tool, const char *ref, const char *path, struct sbx_err *e)
{
	char *argv[8];
	int n = 0, st;
	pid_t pid;
	posix_spawn_file_actions_t fa;

	argv[n++] = (char *)tool;
	argv[n++] = "save";
	if (strcmp(tool, "podman") == 0) {
		argv[n++] = "--format";
		argv[n++] = "oci-archive";
	}
	argv[n++] = "-o";
	argv[n++] = (char *)path;
	argv[n++] = (char *)ref;
	argv[n] = NULL;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, 2, 1);
	if (posix_spawnp(&pid, tool, &fa, NULL, argv, environ) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		return sbx_error(e, SBX_EUNSUPPORTED, "install it, or save the image to a file and "
		    "import that", "%s is not installed here", tool);
	}
	posix_spawn_file_actions_destroy(&fa);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return sbx_error(e, SBX_ENOTFOUND, "check the name with `%s images`", "%s save %s failed "
		    "(status %d)", tool, ref, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return 0;
}

int
image_import(struct image_store *st, const char *src, const char *ref,
    image_progress_fn progress, void *arg, struct image_info **out, struct sbx_err *e)
{
	_cleanup_free_ char *path = NULL, *name = NULL, *work = NULL, *saved = NULL;
	struct stat sb;
	int rc = -1;

	*out = NULL;
	if (ref != NULL) {
		struct image_ref r;
		if (image_ref_parse(ref, &r, e) < 0)
			return -1;
	}
	if (strncmp(src, "podman:", 7) == 0 || strncmp(src, "docker:", 7) == 0) {
		const char *tool = strncmp(src, "podman:", 7) == 0 ? "podman" : "docker";
		work = xasprintf("%s/tmp/import.XXXXXX", image_store_root(st));
		if (mkdtemp(work) == NULL)
			return sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", work);
		saved = xasprintf("%s/saved.tar", work);
		if (progress)
			(void)progress(0, 0, "saving from the local store", arg);
		if (tool_save(tool, src + 7, saved, e) < 0)
			goto out;
		path = xstrdup(saved);
		if (ref == NULL)
			ref = src + 7;
	} else {
		path = xstrdup(src);
		/* PATH:NAME picks one image of several. */
		if (stat(path, &sb) < 0) {
			char *colon = strrchr(path, ':');
			if (colon != NULL) {
				*colon = '\0';
				name = xstrdup(colon + 1);
			}
		}
		if (stat(path, &sb) < 0) {
			sbx_error_errno(e, SBX_ENOTFOUND, "give an OCI layout directory, an OCI "
			    "archive or a docker-save archive", "cannot read %s", path);
			goto out;
		}
	}
	if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
		_cleanup_free_ char *ix = xasprintf("%s/index.json", path);
		rc = access(ix, F_OK) == 0 ? from_layout(st, path, path, name, ref, out, e) :
		    from_docker_save(st, path, path, name, ref, out, e);
		goto out;
	}
	if (work == NULL) {
		work = xasprintf("%s/tmp/import.XXXXXX", image_store_root(st));
		if (mkdtemp(work) == NULL) {
			sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", work);
			goto out;
		}
	}
	{
		_cleanup_free_ char *x = xasprintf("%s/x", work), *ix = NULL, *mj = NULL;
		if (mkdir(x, 0700) < 0) {
			sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", x);
			goto out;
		}
		if (progress)
			(void)progress(0, 0, "reading the archive", arg);
		if (untar(path, x, e) < 0)
			goto out;
		ix = xasprintf("%s/index.json", x);
		mj = xasprintf("%s/manifest.json", x);
		if (access(ix, F_OK) == 0)
			rc = from_layout(st, x, path, name, ref, out, e);
		else if (access(mj, F_OK) == 0)
			rc = from_docker_save(st, x, path, name, ref, out, e);
		else
			sbx_error(e, SBX_EINVAL, "give an OCI layout directory, an OCI archive or a "
			    "docker-save archive", "%s has neither index.json nor manifest.json", src);
	}
out:
	if (work != NULL && rm_rf(work) < 0)
		log_warnx("cannot remove %s", work);
	return rc;
}
