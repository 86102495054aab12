/* OCI images on the ns backend: the core unpacks an image's layers (core/image/)
 * in a user namespace mapped as this backend's sandboxes are, so the files
 * carry the ids the sandbox sees: as root, the range's; as an ordinary user
 * with a subordinate range, the caller's for the image's root and the range's
 * for the rest; without one, the caller's for every file (the image's other
 * ids become root's).  The layers are the root overlay's lower layers
 * (ns-rootfs.c); the image's Env, User and WorkingDir become the agent's
 * --env, --user and --cwd. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/ns/ns-idmap.h"
#include "backends/ns/ns-rootfs.h"
#include "backends/ns/ns.h"
#include "lib/util.h"

int
ns_image_ids(struct backend_image_ids *out, struct sbx_err *e)
{
	struct ns_idmap m;

	memset(out, 0, sizeof *out);
	if (ns_idmap_choose(&m, e) < 0)
		return -1;
	out->count = m.count;
	out->owner = m.uid_base;
	out->group = m.gid_base;
	switch (m.mode) {
	case NS_MAP_ROOT:
		snprintf(out->key, sizeof out->key, "r%u-%u-%u", (unsigned)m.uid_base,
		    (unsigned)m.gid_base, m.count);
		break;
	case NS_MAP_HELPER:
		/* setuid files of the range would be the caller's to run as those ids. */
		out->strip_setid = 1;
		snprintf(out->key, sizeof out->key, "u%u-%u-%u-%u", (unsigned)m.uid_base,
		    (unsigned)m.sub_uid, (unsigned)m.sub_gid, m.count);
		break;
	case NS_MAP_SINGLE:
		out->strip_setid = 1;
		snprintf(out->key, sizeof out->key, "s%u-%u", (unsigned)m.uid_base, (unsigned)m.gid_base);
		break;
	}
	return 0;
}

int
ns_image_run(int (*pre)(void *arg, void *report), int (*fn)(void *arg, void *report), void *arg,
    void *report, size_t rlen, struct sbx_err *e)
{
	struct ns_idmap m;
	int st = 0, r;

	if (ns_idmap_choose(&m, e) < 0)
		return -1;
	if ((r = ns_idmap_run2(&m, pre, fn, arg, report, rlen, &st, "work on an image", e)) <= 0)
		return r;
	return sbx_error(e, SBX_EBACKEND, NULL, "work on an image failed (status %d)", st);
}

int
ns_image_rmtree(const char *path, struct sbx_err *e)
{
	struct ns_idmap m;

	if (ns_idmap_choose(&m, e) < 0)
		return -1;
	return ns_rmtree(&m, path, e);
}

int
ns_oci_layers(const cJSON *spec, struct ns_rootfs *r, struct sbx_err *e)
{
	const cJSON *ls = cJSON_GetObjectItemCaseSensitive(spec, "layers"), *l;
	char **v;
	int n = 0;

	if (!cJSON_IsArray(ls) || cJSON_GetArraySize(ls) < 1)
		return sbx_error(e, SBX_EINTERNAL, NULL, "an OCI image without layers");
	if (cJSON_GetArraySize(ls) > NS_MAX_LAYERS)
		return sbx_error(e, SBX_EUNSUPPORTED, "squash the image into fewer layers",
		    "the image has %d layers; the ns backend mounts at most %d",
		    cJSON_GetArraySize(ls), NS_MAX_LAYERS);
	v = xcalloc((size_t)cJSON_GetArraySize(ls) + 1, sizeof *v);
	cJSON_ArrayForEach(l, ls) {
		if (!cJSON_IsString(l) || l->valuestring[0] != '/') {
			free(v);
			return sbx_error(e, SBX_EINTERNAL, NULL, "an OCI image layer without a path");
		}
		v[n++] = l->valuestring;
	}
	for (int i = 0; i < n; i++)
		r->layer_fds[i] = -1;
	r->layer_paths = v;
	r->nlayers = n;
	return 0;
}

void
ns_oci_free(struct ns_rootfs *r)
{
	for (int i = 0; i < r->nlayers; i++)
		if (r->layer_fds[i] >= 0)
			close(r->layer_fds[i]);
	free((void *)r->layer_paths);
	r->layer_paths = NULL;
	r->nlayers = 0;
}

size_t
ns_oci_argc(const cJSON *spec)
{
	return spec == NULL ? 0 :
	    2 * (size_t)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(spec, "env")) + 6;
}

void
ns_oci_args(const cJSON *spec, const struct ns_idmap *m, char **argv, int *argc)
{
	const cJSON *v;
	const char *user = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(spec, "user"));
	const char *wd = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(spec, "workdir"));

	cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(spec, "env")) {
		if (!cJSON_IsString(v))
			continue;
		argv[(*argc)++] = "--env";
		argv[(*argc)++] = v->valuestring;
	}
	/* With one id there is nobody but root to be. */
	if (user != NULL && user[0] != '\0' && m->mode != NS_MAP_SINGLE) {
		argv[(*argc)++] = "--user";
		argv[(*argc)++] = (char *)user;
		argv[(*argc)++] = "--own-workspace";
	}
	if (wd != NULL && wd[0] == '/') {
		argv[(*argc)++] = "--cwd";
		argv[(*argc)++] = (char *)wd;
	}
}
