/* What a registry's documents say: indexes (OCI image index, Docker manifest
 * list), manifests (OCI, Docker schema 2), configs, and the WWW-Authenticate
 * challenge.  All of it is a stranger's input: sizes and counts are bounded,
 * every digest is checked for form, and what we cannot unpack is refused by
 * name. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "core/image/image-int.h"
#include "lib/jspec.h"
#include "lib/util.h"

#define MAX_LAYERS	256	/* overlay takes 500 lower layers; docker builds 127 */
#define MAX_ENV		1024
#define MAX_PLATFORMS	64

static const char MT_OCI_INDEX[] = "application/vnd.oci.image.index.v1+json";
static const char MT_DOCKER_LIST[] = "application/vnd.docker.distribution.manifest.list.v2+json";
static const char MT_OCI_MANIFEST[] = "application/vnd.oci.image.manifest.v1+json";
static const char MT_DOCKER_MANIFEST[] = "application/vnd.docker.distribution.manifest.v2+json";

/* The layer media types we unpack (the compression is found by libarchive). */
static const char *const layer_types[] = {
	"application/vnd.oci.image.layer.v1.tar",
	"application/vnd.oci.image.layer.v1.tar+gzip",
	"application/vnd.oci.image.layer.v1.tar+zstd",
	"application/vnd.docker.image.rootfs.diff.tar.gzip",
	"application/vnd.docker.image.rootfs.diff.tar",
};
static const char *const config_types[] = {
	"application/vnd.oci.image.config.v1+json",
	"application/vnd.docker.container.image.v1+json",
};

void
image_sha256_finish(struct sha256_ctx *ctx, char out[IMAGE_DIGEST_LEN])
{
	unsigned char d[SHA256_DIGEST_SIZE];

	sha256_digest(ctx, sizeof d, d);
	memcpy(out, "sha256:", 7);
	hex_encode(out + 7, d, sizeof d);
}

void
image_sha256_buf(const void *p, size_t n, char out[IMAGE_DIGEST_LEN])
{
	struct sha256_ctx ctx;

	sha256_init(&ctx);
	sha256_update(&ctx, n, p);
	image_sha256_finish(&ctx, out);
}

int
image_sha256_fd(int fd, char out[IMAGE_DIGEST_LEN], int64_t *size)
{
	struct sha256_ctx ctx;
	_cleanup_free_ unsigned char *buf = xmalloc(IO_BUF);
	ssize_t n;
	int64_t total = 0;

	if (lseek(fd, 0, SEEK_SET) < 0)
		return -1;
	sha256_init(&ctx);
	while ((n = read(fd, buf, IO_BUF)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		sha256_update(&ctx, (size_t)n, buf);
		total += n;
	}
	image_sha256_finish(&ctx, out);
	if (size != NULL)
		*size = total;
	return 0;
}

void
image_info_free(struct image_info *img)
{
	if (img == NULL)
		return;
	free(img->ref);
	free(img->layers);
	if (img->env != NULL)
		for (char **p = img->env; *p != NULL; p++)
			free(*p);
	free(img->env);
	free(img->user);
	free(img->workdir);
	free(img);
}

void
image_platform_here(char os[16], char arch[16], char variant[16])
{
	struct utsname u;
	const char *m = uname(&u) == 0 ? u.machine : "x86_64";

	snprintf(os, 16, "linux");
	variant[0] = '\0';
	if (strcmp(m, "x86_64") == 0)
		snprintf(arch, 16, "amd64");
	else if (strcmp(m, "aarch64") == 0) {
		snprintf(arch, 16, "arm64");
		snprintf(variant, 16, "v8");
	} else if (strncmp(m, "armv7", 5) == 0) {
		snprintf(arch, 16, "arm");
		snprintf(variant, 16, "v7");
	} else if (strcmp(m, "i686") == 0 || strcmp(m, "i386") == 0)
		snprintf(arch, 16, "386");
	else if (strcmp(m, "ppc64le") == 0 || strcmp(m, "s390x") == 0 || strcmp(m, "riscv64") == 0)
		snprintf(arch, 16, "%.15s", m);
	else
		snprintf(arch, 16, "%.15s", m);
}

enum image_kind
image_kind_of(const char *ct, const char *body, size_t len)
{
	char mt[128] = "";
	cJSON *o;

	if (ct != NULL) {
		size_t n = strcspn(ct, "; \t");
		snprintf(mt, sizeof mt, "%.*s", (int)(n < sizeof mt ? n : sizeof mt - 1), ct);
	}
	/* A vague or missing header: the document's own mediaType, else its shape. */
	if (mt[0] == '\0' || strcmp(mt, "application/json") == 0 ||
	    strcmp(mt, "application/octet-stream") == 0) {
		if ((o = cJSON_ParseWithLength(body, len)) != NULL) {
			const char *m = jstr(o, "mediaType", NULL);
			if (m != NULL)
				snprintf(mt, sizeof mt, "%s", m);
			else if (cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(o, "manifests")))
				snprintf(mt, sizeof mt, "%s", MT_OCI_INDEX);
			else if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(o, "config")))
				snprintf(mt, sizeof mt, "%s", MT_OCI_MANIFEST);
			else if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o, "schemaVersion")) &&
			    cJSON_GetObjectItemCaseSensitive(o, "schemaVersion")->valueint == 1)
				snprintf(mt, sizeof mt, "application/vnd.docker.distribution.manifest.v1+json");
			cJSON_Delete(o);
		}
	}
	if (strcmp(mt, MT_OCI_INDEX) == 0 || strcmp(mt, MT_DOCKER_LIST) == 0)
		return IMAGE_KIND_INDEX;
	if (strcmp(mt, MT_OCI_MANIFEST) == 0 || strcmp(mt, MT_DOCKER_MANIFEST) == 0)
		return IMAGE_KIND_MANIFEST;
	if (strncmp(mt, "application/vnd.docker.distribution.manifest.v1", 47) == 0)
		return IMAGE_KIND_SCHEMA1;
	return IMAGE_KIND_UNKNOWN;
}

int
image_index_pick(const char *body, size_t len, const char *os, const char *arch,
    const char *variant, char digest[IMAGE_DIGEST_LEN], char *mt, size_t mtlen,
    struct sbx_err *e)
{
	cJSON *o = cJSON_ParseWithLength(body, len);
	const cJSON *m, *list;
	char seen[512] = "";
	size_t sn = 0;
	int count = 0, best = -1, rc = -1;

	if (o == NULL || !cJSON_IsArray(list = cJSON_GetObjectItemCaseSensitive(o, "manifests"))) {
		sbx_error(e, SBX_EINVAL, "check the reference; the registry sent something else",
		    "the image index is not valid JSON with a manifests array");
		goto out;
	}
	cJSON_ArrayForEach(m, list) {
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(m, "platform");
		const char *d = jstr(m, "digest", NULL), *pos = jstr(p, "os", NULL), *par = jstr(p, "architecture", NULL);
		const char *pv = jstr(p, "variant", NULL);
		if (++count > MAX_PLATFORMS * 4)
			break;
		if (d == NULL || !image_digest_valid(d) || pos == NULL || par == NULL)
			continue;
		if (sn < sizeof seen - 1)
			sn += (size_t)snprintf(seen + sn, sizeof seen - sn, "%s%.15s/%.15s%s%.15s",
			    sn ? ", " : "", pos, par, pv ? "/" : "", pv ? pv : "");
		if (sn >= sizeof seen)
			sn = sizeof seen - 1;
		if (strcmp(pos, os) != 0 || strcmp(par, arch) != 0)
			continue;
		/* The variant asked for, else the first of the architecture. */
		int exact = variant[0] == '\0' || (pv != NULL && strcmp(pv, variant) == 0) ||
		    (pv == NULL && strcmp(arch, "arm64") == 0 && strcmp(variant, "v8") == 0);
		if (best < 0 || exact) {
			snprintf(digest, IMAGE_DIGEST_LEN, "%s", d);
			snprintf(mt, mtlen, "%s", jstr(m, "mediaType", NULL) ? jstr(m, "mediaType", NULL) : "");
			best = exact;
			if (exact)
				break;
		}
	}
	if (best < 0) {
		sbx_error(e, SBX_ENOTFOUND, "pull one of those with --platform OS/ARCH, or an image "
		    "built for this machine", "the image has no %s/%s%s%s build; it has: %s", os, arch,
		    variant[0] ? "/" : "", variant, seen[0] ? seen : "none");
		goto out;
	}
	rc = 0;
out:
	cJSON_Delete(o);
	return rc;
}

static int
in_list(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, list[i]) == 0)
			return 1;
	return 0;
}

int
image_manifest_parse(const char *body, size_t len, struct image_info *img, struct sbx_err *e)
{
	cJSON *o = cJSON_ParseWithLength(body, len);
	const cJSON *cfg, *layers, *l;
	const char *ct;
	int n, rc = -1;

	if (o == NULL || !cJSON_IsObject(cfg = cJSON_GetObjectItemCaseSensitive(o, "config")) ||
	    !cJSON_IsArray(layers = cJSON_GetObjectItemCaseSensitive(o, "layers"))) {
		sbx_error(e, SBX_EINVAL, NULL, "the manifest is not valid JSON with a config and layers");
		goto out;
	}
	ct = jstr(cfg, "mediaType", NULL);
	if (ct == NULL || !in_list(ct, config_types, ARRAY_SIZE(config_types))) {
		sbx_error(e, SBX_EUNSUPPORTED, "pull a container image (OCI or Docker)",
		    "not a container image: its config is of type %.100s", ct ? ct : "(none)");
		goto out;
	}
	if (!image_digest_valid(jstr(cfg, "digest", NULL))) {
		sbx_error(e, SBX_EINVAL, NULL, "the manifest's config has no sha256 digest");
		goto out;
	}
	snprintf(img->config, sizeof img->config, "%s", jstr(cfg, "digest", NULL));
	n = cJSON_GetArraySize(layers);
	if (n > MAX_LAYERS) {
		sbx_error(e, SBX_EUNSUPPORTED, "squash the image into fewer layers",
		    "the image has %d layers, more than the %d an overlay here takes", n, MAX_LAYERS);
		goto out;
	}
	free(img->layers);
	img->layers = xcalloc((size_t)n + 1, sizeof *img->layers);
	img->nlayers = 0;
	cJSON_ArrayForEach(l, layers) {
		struct image_layer *L = &img->layers[img->nlayers];
		const char *mt = jstr(l, "mediaType", NULL), *d = jstr(l, "digest", NULL);
		const cJSON *sz = cJSON_GetObjectItemCaseSensitive(l, "size");
		if (mt != NULL && strstr(mt, "foreign") != NULL) {
			sbx_error(e, SBX_EUNSUPPORTED, "use an image without foreign (Windows) layers",
			    "layer %zu is a foreign layer (%.100s), which registries do not serve",
			    img->nlayers + 1, mt);
			goto out;
		}
		if (mt == NULL || !in_list(mt, layer_types, ARRAY_SIZE(layer_types))) {
			sbx_error(e, SBX_EUNSUPPORTED, "pull an image whose layers are tar, tar+gzip "
			    "or tar+zstd", "layer %zu has media type %.100s, which is not a layer "
			    "sbxtop unpacks", img->nlayers + 1, mt ? mt : "(none)");
			goto out;
		}
		if (!image_digest_valid(d) || !cJSON_IsNumber(sz) || sz->valuedouble < 0 ||
		    sz->valuedouble > 1e15) {
			sbx_error(e, SBX_EINVAL, NULL, "layer %zu has no sha256 digest or size",
			    img->nlayers + 1);
			goto out;
		}
		snprintf(L->digest, sizeof L->digest, "%s", d);
		snprintf(L->media_type, sizeof L->media_type, "%s", mt);
		L->size = (int64_t)sz->valuedouble;
		img->nlayers++;
	}
	rc = 0;
out:
	cJSON_Delete(o);
	return rc;
}

int
image_config_apply(const char *body, size_t len, struct image_info *img, struct sbx_err *e)
{
	cJSON *o = cJSON_ParseWithLength(body, len);
	const cJSON *rootfs, *ids, *id, *cfg, *env, *v;
	const char *os, *arch, *variant;
	size_t i = 0;
	int rc = -1;

	if (o == NULL || !cJSON_IsObject(rootfs = cJSON_GetObjectItemCaseSensitive(o, "rootfs")) ||
	    !cJSON_IsArray(ids = cJSON_GetObjectItemCaseSensitive(rootfs, "diff_ids"))) {
		sbx_error(e, SBX_EINVAL, NULL, "the image config is not valid JSON with rootfs.diff_ids");
		goto out;
	}
	if ((size_t)cJSON_GetArraySize(ids) != img->nlayers) {
		sbx_error(e, SBX_EINVAL, NULL, "the image config names %d layers, its manifest %zu",
		    cJSON_GetArraySize(ids), img->nlayers);
		goto out;
	}
	cJSON_ArrayForEach(id, ids) {
		if (!image_digest_valid(cJSON_GetStringValue(id))) {
			sbx_error(e, SBX_EINVAL, NULL, "the image config's diff_id %zu is not a sha256 "
			    "digest", i + 1);
			goto out;
		}
		snprintf(img->layers[i++].diff_id, IMAGE_DIGEST_LEN, "%s", id->valuestring);
	}
	os = jstr(o, "os", NULL);
	arch = jstr(o, "architecture", NULL);
	variant = jstr(o, "variant", NULL);
	if (os != NULL && strcmp(os, "linux") != 0) {
		sbx_error(e, SBX_EUNSUPPORTED, "pull a Linux image", "the image is for %.30s, not Linux",
		    os);
		goto out;
	}
	snprintf(img->platform, sizeof img->platform, "%.15s/%.15s%s%.15s", os ? os : "linux",
	    arch ? arch : "unknown", variant ? "/" : "", variant ? variant : "");
	v = cJSON_GetObjectItemCaseSensitive(o, "created");
	if (cJSON_IsString(v)) {
		struct tm tm = { 0 };
		if (strptime(v->valuestring, "%Y-%m-%dT%H:%M:%S", &tm) != NULL)
			img->created_s = (int64_t)timegm(&tm);
	}
	cfg = cJSON_GetObjectItemCaseSensitive(o, "config");
	env = cJSON_GetObjectItemCaseSensitive(cfg, "Env");
	if (img->env != NULL) {
		for (char **p = img->env; *p != NULL; p++)
			free(*p);
		free(img->env);
	}
	img->env = xcalloc(MAX_ENV + 1, sizeof *img->env);
	i = 0;
	cJSON_ArrayForEach(v, env) {
		const char *s = cJSON_GetStringValue(v);
		/* KEY=VALUE with a name a shell takes; anything else is left out. */
		if (s == NULL || i == MAX_ENV || strlen(s) > 32768 || s[0] == '=' ||
		    strchr(s, '=') == NULL || strcspn(s, "=") > 256)
			continue;
		img->env[i++] = xstrdup(s);
	}
	free(img->user);
	free(img->workdir);
	img->user = jstr(cfg, "User", NULL) && strlen(jstr(cfg, "User", NULL)) < 256 ?
	    xstrdup(jstr(cfg, "User", NULL)) : NULL;
	img->workdir = jstr(cfg, "WorkingDir", NULL) && jstr(cfg, "WorkingDir", NULL)[0] == '/' &&
	    strlen(jstr(cfg, "WorkingDir", NULL)) < 1024 ? xstrdup(jstr(cfg, "WorkingDir", NULL)) : NULL;
	rc = 0;
out:
	cJSON_Delete(o);
	return rc;
}

/* auth-param = token "=" ( token / quoted-string ), comma-separated. */
int
image_challenge_parse(const char *h, char *scheme, size_t slen, char *realm, size_t rlen,
    char *service, size_t svlen, char *scope, size_t sclen)
{
	const char *p = h;
	size_t n;

	scheme[0] = realm[0] = service[0] = scope[0] = '\0';
	while (*p == ' ' || *p == '\t')
		p++;
	n = strcspn(p, " \t");
	if (n == 0 || n >= slen)
		return -1;
	memcpy(scheme, p, n);
	scheme[n] = '\0';
	p += n;
	while (*p) {
		char key[32], val[1024];
		size_t k = 0, vlen = 0;
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (*p == '\0')
			break;
		while (*p && *p != '=' && *p != ',' && k < sizeof key - 1)
			key[k++] = *p++;
		key[k] = '\0';
		if (*p != '=')
			return -1;
		p++;
		if (*p == '"') {
			p++;
			while (*p && *p != '"') {
				if (*p == '\\' && p[1] != '\0')
					p++;
				if (vlen < sizeof val - 1)
					val[vlen++] = *p;
				p++;
			}
			if (*p != '"')
				return -1;
			p++;
		} else {
			while (*p && *p != ',' && *p != ' ' && vlen < sizeof val - 1)
				val[vlen++] = *p++;
		}
		val[vlen] = '\0';
		if (strcasecmp(key, "realm") == 0)
			snprintf(realm, rlen, "%s", val);
		else if (strcasecmp(key, "service") == 0)
			snprintf(service, svlen, "%s", val);
		else if (strcasecmp(key, "scope") == 0)
			snprintf(scope, sclen, "%s", val);
	}
	return 0;
}

/* --- the store's record of an image --------------------------------------- */

cJSON *
image_info_to_json(const struct image_info *img)
{
	cJSON *o = cJSON_CreateObject(), *ls = cJSON_AddArrayToObject(o, "layers"), *env;

	if (img->ref)
		cJSON_AddStringToObject(o, "ref", img->ref);
	cJSON_AddStringToObject(o, "id", img->id);
	cJSON_AddStringToObject(o, "config", img->config);
	cJSON_AddStringToObject(o, "platform", img->platform);
	for (size_t i = 0; i < img->nlayers; i++) {
		cJSON *l = cJSON_CreateObject();
		cJSON_AddStringToObject(l, "digest", img->layers[i].digest);
		cJSON_AddStringToObject(l, "diff_id", img->layers[i].diff_id);
		cJSON_AddStringToObject(l, "media_type", img->layers[i].media_type);
		cJSON_AddNumberToObject(l, "size", (double)img->layers[i].size);
		cJSON_AddItemToArray(ls, l);
	}
	env = cJSON_AddArrayToObject(o, "env");
	for (char **p = img->env; p != NULL && *p != NULL; p++)
		cJSON_AddItemToArray(env, cJSON_CreateString(*p));
	if (img->user != NULL && img->user[0] != '\0')
		cJSON_AddStringToObject(o, "user", img->user);
	if (img->workdir != NULL)
		cJSON_AddStringToObject(o, "workdir", img->workdir);
	cJSON_AddNumberToObject(o, "pulled_ms", (double)img->pulled_ms);
	cJSON_AddNumberToObject(o, "created_s", (double)img->created_s);
	return o;
}

struct image_info *
image_info_from_json(const cJSON *o, struct sbx_err *e)
{
	struct image_info *img = xcalloc(1, sizeof *img);
	const cJSON *ls = cJSON_GetObjectItemCaseSensitive(o, "layers"), *l, *env, *v;
	size_t n = 0;

	if (jstr(o, "ref", NULL))
		img->ref = xstrdup(jstr(o, "ref", NULL));
	if (!image_digest_valid(jstr(o, "id", NULL)) || !image_digest_valid(jstr(o, "config", NULL)) ||
	    !cJSON_IsArray(ls) || cJSON_GetArraySize(ls) > MAX_LAYERS) {
		image_info_free(img);
		sbx_error(e, SBX_EIO, "remove images.json in the store, and pull again",
		    "a record of the image store is damaged");
		return NULL;
	}
	snprintf(img->id, sizeof img->id, "%s", jstr(o, "id", NULL));
	snprintf(img->config, sizeof img->config, "%s", jstr(o, "config", NULL));
	snprintf(img->platform, sizeof img->platform, "%s", jstr(o, "platform", NULL) ?
	    jstr(o, "platform", NULL) : "");
	img->layers = xcalloc((size_t)cJSON_GetArraySize(ls) + 1, sizeof *img->layers);
	cJSON_ArrayForEach(l, ls) {
		struct image_layer *L = &img->layers[n];
		const char *d = jstr(l, "digest", NULL), *di = jstr(l, "diff_id", NULL);
		if (!image_digest_valid(d) || !image_digest_valid(di)) {
			image_info_free(img);
			sbx_error(e, SBX_EIO, "remove images.json in the store, and pull again",
			    "a record of the image store is damaged");
			return NULL;
		}
		snprintf(L->digest, sizeof L->digest, "%s", d);
		snprintf(L->diff_id, sizeof L->diff_id, "%s", di);
		snprintf(L->media_type, sizeof L->media_type, "%s", jstr(l, "media_type", NULL) ?
		    jstr(l, "media_type", NULL) : "");
		L->size = (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(l, "size"));
		n++;
	}
	img->nlayers = n;
	env = cJSON_GetObjectItemCaseSensitive(o, "env");
	img->env = xcalloc((size_t)cJSON_GetArraySize(env) + 1, sizeof *img->env);
	n = 0;
	cJSON_ArrayForEach(v, env)
		if (cJSON_IsString(v))
			img->env[n++] = xstrdup(v->valuestring);
	img->user = jstr(o, "user", NULL) ? xstrdup(jstr(o, "user", NULL)) : NULL;
	img->workdir = jstr(o, "workdir", NULL) ? xstrdup(jstr(o, "workdir", NULL)) : NULL;
	v = cJSON_GetObjectItemCaseSensitive(o, "pulled_ms");
	img->pulled_ms = jint_of(v, 0, INT64_MIN, INT64_MAX);
	v = cJSON_GetObjectItemCaseSensitive(o, "created_s");
	img->created_s = jint_of(v, 0, INT64_MIN, INT64_MAX);
	return img;
}
