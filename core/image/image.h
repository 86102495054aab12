/* OCI images: references, the distribution API client, the content-addressed
 * store under $XDG_DATA_HOME/sbxtop/images/oci, and the layer reader that
 * unpacks a layer into a directory an overlay can take as a lower layer.
 *
 * The store (store.c):
 *   blobs/sha256/HEX     every blob, its digest checked before it got its name
 *   tmp/                 downloads on their way (HEX.partial: resumed)
 *   layers/KEY/HEX/      a layer unpacked (HEX its diff_id) for one id mapping
 *                        KEY (a backend's: whose ids the files carry)
 *   images.json          reference -> manifest, with what create needs
 *   lock                 flock'ed by every change
 *
 * Files: ref.c (references), meta.c (manifests, indexes, configs, challenges),
 * auth.c (credentials), dist.c (the registry client), store.c, layer.c (the
 * layer reader), import.c (OCI layouts, docker-save archives), core/core-image.c
 * (what core_create and the front ends call). */
#ifndef SBX_CORE_IMAGE_H
#define SBX_CORE_IMAGE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <cjson/cJSON.h>

#include "lib/err.h"

struct core;
struct sandbox;
struct core_create_opts;

#define IMAGE_DIGEST_LEN	72	/* "sha256:" + 64 hex + NUL, rounded */

/* --- references (ref.c) ------------------------------------------------- */

struct image_ref {
	char	domain[256];	/* as named: "docker.io", "127.0.0.1:5000" */
	char	repo[256];	/* "library/busybox" */
	char	tag[129];	/* "latest", or "" with only a digest */
	char	digest[IMAGE_DIGEST_LEN];	/* "sha256:...", or "" */
};

/* Parse a reference the way docker and podman do: [DOMAIN/]PATH[:TAG][@DIGEST];
 * no domain is docker.io, a one-component path there is library/PATH, no tag
 * and no digest is :latest.  -1 with e saying what is wrong with it. */
int image_ref_parse(const char *s, struct image_ref *r, struct sbx_err *e);
/* "DOMAIN/REPO:TAG" (and "@DIGEST" when there is one) into out. */
void image_ref_format(const struct image_ref *r, char *out, size_t len);
/* The host to connect to: registry-1.docker.io for docker.io, else the domain. */
const char *image_ref_host(const struct image_ref *r);
/* 1 when the domain is a loopback address or name (plain HTTP allowed). */
int image_ref_loopback(const struct image_ref *r);
/* 1 when s looks like a path rather than a reference (starts with / or .). */
int image_is_path(const char *s);
/* image's canonical reference when it is one, else a copy of it as it is (a
 * path, or something image_ref_parse will refuse later); NULL for NULL. */
char *image_canonical(const char *image);
/* 1 when s is "sha256:" and 64 lowercase hex digits. */
int image_digest_valid(const char *s);

/* --- what manifests, indexes and configs say (meta.c) ------------------- */

struct image_layer {
	char	 digest[IMAGE_DIGEST_LEN];	/* of the blob, as stored */
	char	 diff_id[IMAGE_DIGEST_LEN];	/* of the uncompressed tar */
	char	 media_type[128];
	int64_t	 size;				/* of the blob */
};

/* An image as the store keeps it: the manifest's digest is its id. */
struct image_info {
	char			*ref;		/* canonical reference, NULL for an id alone */
	char			 id[IMAGE_DIGEST_LEN];		/* the manifest's digest */
	char			 config[IMAGE_DIGEST_LEN];	/* the config blob's */
	char			 platform[64];	/* "linux/amd64" */
	size_t			 nlayers;
	struct image_layer	*layers;	/* bottom first */
	/* The config's, applied to commands. */
	char			**env;		/* "K=V", NULL-terminated */
	char			*user;		/* "" or NULL: root */
	char			*workdir;	/* NULL: /workspace */
	int64_t			 pulled_ms;
	int64_t			 created_s;	/* the config's created, 0 unknown */
};
void image_info_free(struct image_info *img);
cJSON *image_info_to_json(const struct image_info *img);
struct image_info *image_info_from_json(const cJSON *o, struct sbx_err *e);

/* This machine's platform, "linux/amd64" or "linux/arm64/v8" style, and its
 * parts. */
void image_platform_here(char os[16], char arch[16], char variant[16]);

/* The kind of a manifest or index by its media type (or its mediaType field
 * when the header is vague). */
enum image_kind { IMAGE_KIND_UNKNOWN, IMAGE_KIND_INDEX, IMAGE_KIND_MANIFEST,
    IMAGE_KIND_SCHEMA1 };
enum image_kind image_kind_of(const char *content_type, const char *body, size_t len);
/* From an index: the digest of the manifest for os/arch/variant (variant may be
 * "" to take any), its media type into mt.  -1 with e listing the platforms
 * the index has. */
int image_index_pick(const char *body, size_t len, const char *os, const char *arch,
    const char *variant, char digest[IMAGE_DIGEST_LEN], char *mt, size_t mtlen,
    struct sbx_err *e);
/* From a manifest: the config digest and the layers (bottom first; diff_ids
 * empty until image_config_apply).  -1 with e for what is not a container
 * image, a foreign layer, a media type we cannot unpack, or over max_layers. */
int image_manifest_parse(const char *body, size_t len, struct image_info *img,
    struct sbx_err *e);
/* From the config blob: each layer's diff_id (their count must match), the
 * platform, Env, User, WorkingDir, created. */
int image_config_apply(const char *body, size_t len, struct image_info *img,
    struct sbx_err *e);
/* A WWW-Authenticate header's scheme ("Bearer", "Basic") into scheme, and its
 * realm, service and scope parameters (empty when absent).  -1 when it cannot be
 * read. */
int image_challenge_parse(const char *h, char *scheme, size_t slen, char *realm, size_t rlen,
    char *service, size_t svlen, char *scope, size_t sclen);

/* --- credentials (auth.c) ------------------------------------------------ */

/* user:password for domain from $REGISTRY_AUTH_FILE, then
 * $XDG_RUNTIME_DIR/containers/auth.json, ~/.config/containers/auth.json,
 * ~/.docker/config.json ("auths" entries, "auth" base64); *out "" when none.
 * A file that names a credential helper for the domain says so in *note. */
int image_auth_lookup(const char *domain, char *out, size_t len, char *note, size_t nlen);

/* --- the store (store.c) ------------------------------------------------- */

struct image_store;

/* Open the store, made (0700) when create is set; NULL with e (SBX_ENOTFOUND:
 * there is none and create is not set). */
struct image_store *image_store_open(int create, struct sbx_err *e);
void image_store_close(struct image_store *st);
const char *image_store_root(const struct image_store *st);
/* The path of blob digest (which must be valid), caller frees. */
char *image_store_blob_path(const struct image_store *st, const char *digest);
/* 1 when the blob is there. */
int image_store_has_blob(const struct image_store *st, const char *digest);
/* Read a small blob (manifests, configs: at most max bytes) whose digest is
 * checked again on the way; NULL with e. */
char *image_store_read_blob(const struct image_store *st, const char *digest, size_t max,
    size_t *len, struct sbx_err *e);
/* Put len bytes whose sha256 must be digest. */
int image_store_put_blob(const struct image_store *st, const char *digest, const void *data,
    size_t len, struct sbx_err *e);
/* Move the file tmp (its digest already checked) in as blob digest. */
int image_store_commit_blob(const struct image_store *st, const char *tmp, const char *digest,
    struct sbx_err *e);
/* A path for a download of digest on its way (resumed when it is there). */
char *image_store_partial_path(const struct image_store *st, const char *digest);
/* Record img under its ref (replacing what the ref named); img->ref NULL is an
 * error. */
int image_store_record(struct image_store *st, const struct image_info *img,
    struct sbx_err *e);
/* The image a reference or an id (sha256:..., or a unique prefix of its hex
 * of at least 12) names; NULL with e (SBX_ENOTFOUND: not in the store). */
struct image_info *image_store_find(struct image_store *st, const char *ref_or_id,
    struct sbx_err *e);
/* Every recorded image (caller frees each with image_info_free, then *out). */
int image_store_list(struct image_store *st, struct image_info ***out, size_t *n,
    struct sbx_err *e);
/* Drop the reference (or every reference of an id); the blobs stay for gc. */
int image_store_untag(struct image_store *st, const char *ref_or_id, char ***gone,
    size_t *ngone, struct sbx_err *e);
/* The directory of layer diff_id unpacked for key (whether or not it is there),
 * caller frees. */
char *image_store_layer_path(const struct image_store *st, const char *key,
    const char *diff_id);
/* Every layers/KEY directory's key, NULL-terminated (caller frees each). */
char **image_store_layer_keys(const struct image_store *st);
/* Remove blobs no recorded image and no id in keep_ids needs, and unpacked
 * layers (under every key) no recorded image and no kept id needs, the
 * latter through rm (a tree whose files may belong to a sandbox's ids), each
 * measured first by tree_bytes (the core's core_tree_bytes: the room calls
 * no core function itself).  Counts and bytes freed into the out arguments. */
int image_store_gc(struct image_store *st, char *const *keep_ids, size_t nkeep,
    int (*rm)(const char *path, void *arg, struct sbx_err *e), void *rm_arg,
    int64_t (*tree_bytes)(const char *path, long max_entries, int *cut),
    int *blobs, int *layers, int64_t *bytes, struct sbx_err *e);
/* flock the store's lock (exclusive) for the caller's changes; -1 with e. */
int image_store_lock(struct image_store *st, struct sbx_err *e);
void image_store_unlock(struct image_store *st);

/* --- the registry client (dist.c) ---------------------------------------- */

typedef int (*image_progress_fn)(uint64_t done, uint64_t total, const char *what, void *arg);

struct image_pull_opts {
	int			 plain_http;	/* plain HTTP allowed to this registry */
	const char		*platform;	/* "os/arch[/variant]"; NULL: this machine */
	image_progress_fn	 progress;	/* may be NULL */
	void			*arg;
};

/* Fetch ref's manifest (through an index for the platform), config and layers
 * into the store, every digest checked, and record it; *out the image. */
int image_pull(struct image_store *st, const char *ref, const struct image_pull_opts *o,
    struct image_info **out, struct sbx_err *e);

/* --- the layer reader (layer.c) ------------------------------------------ */

struct image_unpack_limits {
	int64_t	max_bytes;	/* uncompressed tar bytes of one layer */
	int64_t	max_entries;	/* entries of one layer */
};

/* How a layer's ids become ids of the files made: an id below count is kept
 * as it is (the unpacker runs as root of a user namespace mapped as the
 * sandbox's, where chown to it gives the sandbox's id), one at or above it
 * becomes 0; chown at all only when chown is set. */
struct image_ids {
	uint32_t	count;
	int		chown;
	int		strip_setid;	/* drop setuid and setgid bits (an ordinary user) */
};

struct image_unpack_stats {
	int64_t	entries, bytes, whiteouts, opaque, hardlinks, copied_links;
	int64_t	skipped_devices, squashed_ids, stripped_setid;
};

/* Unpack the layer blob open at blob_fd (tar, or tar compressed with gzip,
 * zstd, xz or bzip2) into the empty directory dest_fd, as an overlay lower
 * layer: ".wh.NAME" becomes a whiteout (a 0/0 character device), ".wh..wh..opq"
 * makes its directory opaque (user.overlay.opaque); hard links are made inside
 * the layer, or copied from a lower layer (lower_fds, the layers below, top
 * first) when their target is there.  Names are made relative; a name with a
 * ".." component, one that would pass through a link, a link whose target is
 * outside the layer, or more than limits is refused (-1 with e, and dest holds
 * a part: the caller removes it).  Device nodes are skipped.  When diff_id is
 * not NULL the uncompressed stream's sha256 must be it. */
int image_layer_unpack(int blob_fd, int dest_fd, const int *lower_fds, int nlower,
    const char *diff_id, const struct image_ids *ids, const struct image_unpack_limits *limits,
    struct image_unpack_stats *stats, struct sbx_err *e);

/* --- imports (import.c) -------------------------------------------------- */

/* Import into the store, recorded as ref (NULL: the name the source gives):
 * src is an OCI layout directory, an OCI archive or a docker-save archive
 * (a tar file, optionally "PATH:NAME" to pick one image of several), or
 * "podman:REF" / "docker:REF" for the local store of that tool (its save
 * command, run here).  Every digest is checked; *out the image. */
int image_import(struct image_store *st, const char *src, const char *ref,
    image_progress_fn progress, void *arg, struct image_info **out, struct sbx_err *e);

/* --- what the core and front ends call (core/core-image.c) ------------- */

/* For core_create: when o's image (s->image) is a reference rather than a
 * directory, find it in the store (pulling it when it is missing and, for an
 * agent, allowed by images_allowed), unpack its layers for the backend, and
 * set s->image (canonical), s->image_id and s->image_spec.  An agent's image
 * must be allowed in any case.  0 when there is nothing to do. */
int core_image_prepare(struct core *c, const struct core_create_opts *o, struct sandbox *s,
    struct sbx_err *e);

struct core_image_pull_opts {
	int			 plain_http;
	const char		*platform;
	int			 agent;		/* 1: only what images_allowed allows */
	image_progress_fn	 progress;
	void			*arg;
};
/* How a create of image on backend names it: an OCI image's canonical
 * reference, or image as it is (a directory, a backend's own image name:
 * qemu's VM images and lambda's ARNs, whose names have no ':', '/' or '@'
 * there); caller frees.  Pools match profiles by it. */
char *core_image_key(const char *backend, const char *image);
/* Pull ref and unpack it for the default backend; *out {ref, id, platform,
 * layers, size, ...} (caller frees). */
int core_image_pull(struct core *c, const char *ref, const struct core_image_pull_opts *o,
    cJSON **out, struct sbx_err *e);
/* Import src (see image_import) as ref; *out as core_image_pull. */
int core_image_import(struct core *c, const char *src, const char *ref,
    image_progress_fn progress, void *arg, cJSON **out, struct sbx_err *e);
/* The images in the store: {images: [{ref, id, platform, layers, size,
 * unpacked, pulled_ms, in_use, allowed}], total: {blobs, unpacked}} with shared
 * layers counted once in the totals. */
int core_image_list(struct core *c, cJSON **out, struct sbx_err *e);
/* Drop a reference; *out {removed: [refs]}.  Blobs go at gc. */
int core_image_rm(struct core *c, const char *ref, cJSON **out, struct sbx_err *e);
/* Remove what no image and no live sandbox needs; *out {blobs, layers, bytes}. */
int core_image_gc(struct core *c, cJSON **out, struct sbx_err *e);
/* The images an agent may use (images_allowed), each with whether it is in the
 * store: {allowed: [{pattern, ref?, id?, pulled}], any: bool}. */
int core_image_allowed(struct core *c, cJSON **out, struct sbx_err *e);
/* 1 when images_allowed lets an agent use ref (canonical or as given). */
int core_image_agent_may(struct core *c, const char *ref);

#endif
