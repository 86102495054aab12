/* Registry credentials from the files podman, skopeo, buildah and docker write
 * (`podman login`, `skopeo login`, `docker login`): an "auths" object keyed by
 * registry, each with "auth", base64 of user:password.  Credential helpers
 * (credHelpers, credsStore) run programs of the user's choosing; they are not
 * run here, and the caller is told so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "core/image/image.h"
#include "lib/b64.h"
#include "lib/util.h"

#define AUTH_FILE_MAX	(1u << 20)

/* The keys an auths object may use for domain: the bare domain, with a
 * scheme, and docker.io's legacy names. */
static int
key_matches(const char *key, const char *domain)
{
	const char *k = key;
	size_t n;

	if (strncmp(k, "https://", 8) == 0)
		k += 8;
	else if (strncmp(k, "http://", 7) == 0)
		k += 7;
	n = strcspn(k, "/");
	if (strcmp(domain, "docker.io") == 0 &&
	    ((n == 15 && strncmp(k, "index.docker.io", 15) == 0) ||
	    (n == 20 && strncmp(k, "registry-1.docker.io", 20) == 0)))
		return 1;
	return strlen(domain) == n && strncmp(k, domain, n) == 0;
}

/* 1 with out filled, 0 when the file has nothing for domain, -1 when it is
 * unreadable or the entry broken (note says so). */
static int
from_file(const char *path, const char *domain, char *out, size_t len, char *note,
    size_t nlen)
{
	_cleanup_free_ char *text = read_file(path, AUTH_FILE_MAX, NULL);
	cJSON *o, *auths, *it, *helpers;
	int rc = 0;

	if (text == NULL || (o = cJSON_Parse(text)) == NULL)
		return 0;
	auths = cJSON_GetObjectItemCaseSensitive(o, "auths");
	cJSON_ArrayForEach(it, auths) {
		const char *a = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "auth"));
		size_t dlen = 0;
		unsigned char *dec;
		if (it->string == NULL || !key_matches(it->string, domain) || a == NULL || !*a)
			continue;
		dec = b64_decode(a, strlen(a), &dlen);
		if (dec == NULL || memchr(dec, ':', dlen) == NULL || dlen >= len ||
		    memchr(dec, '\0', dlen) != NULL) {
			snprintf(note, nlen, "the entry for %s in %s is not base64 of user:password",
			    domain, path);
			free(dec);
			rc = -1;
			break;
		}
		memcpy(out, dec, dlen);
		out[dlen] = '\0';
		free(dec);
		rc = 1;
		break;
	}
	if (rc == 0 && note[0] == '\0') {
		helpers = cJSON_GetObjectItemCaseSensitive(o, "credHelpers");
		cJSON_ArrayForEach(it, helpers)
			if (it->string != NULL && key_matches(it->string, domain))
				snprintf(note, nlen, "%s names a credential helper for %s, which sbxtop "
				    "does not run: log in with `skopeo login %s` instead", path, domain,
				    domain);
		if (note[0] == '\0' && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "credsStore")))
			snprintf(note, nlen, "%s keeps credentials in a store (credsStore), which "
			    "sbxtop does not run: log in with `skopeo login %s` instead", path, domain);
	}
	cJSON_Delete(o);
	return rc;
}

int
image_auth_lookup(const char *domain, char *out, size_t len, char *note, size_t nlen)
{
	const char *home = getenv("HOME"), *run = getenv("XDG_RUNTIME_DIR");
	const char *conf = getenv("XDG_CONFIG_HOME"), *dcfg = getenv("DOCKER_CONFIG");
	char *paths[6] = { NULL };
	int n = 0, rc = 0;

	out[0] = note[0] = '\0';
	if (getenv("REGISTRY_AUTH_FILE") && *getenv("REGISTRY_AUTH_FILE"))
		paths[n++] = xstrdup(getenv("REGISTRY_AUTH_FILE"));
	if (run != NULL && run[0] == '/')
		paths[n++] = xasprintf("%s/containers/auth.json", run);
	if (conf != NULL && conf[0] == '/')
		paths[n++] = xasprintf("%s/containers/auth.json", conf);
	else if (home != NULL && home[0] == '/')
		paths[n++] = xasprintf("%s/.config/containers/auth.json", home);
	if (dcfg != NULL && dcfg[0] == '/')
		paths[n++] = xasprintf("%s/config.json", dcfg);
	else if (home != NULL && home[0] == '/')
		paths[n++] = xasprintf("%s/.docker/config.json", home);
	for (int i = 0; i < n && rc == 0; i++)
		rc = from_file(paths[i], domain, out, len, note, nlen);
	for (int i = 0; i < n; i++)
		free(paths[i]);
	if (rc != 1)
		out[0] = '\0';
	return rc < 0 ? -1 : 0;
}
