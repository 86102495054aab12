/* The key store (keys.h): STATE/sbxtop/keys.json, 0600, one object
 * {"keys": [...]} whose records hold the SHA-256 of each key, never the key.
 * A change takes STATE/sbxtop/keys.lock, reads the file, and renames a whole
 * new one in; a reader needs no lock.  A file that does not parse is left as
 * it is: changes are refused and no key is valid until it is mended. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nettle/sha2.h>

#include "core/keys/keys.h"
#include "core/paths.h"
#include "lib/jspec.h"
#include "lib/log.h"
#include "lib/util.h"

#define STORE_MAX	(4u << 20)	/* the file; thousands of keys */

/* --- the file ------------------------------------------------------------- */

static void
hash_hex(const char *key, char out[2 * SHA256_DIGEST_SIZE + 1])
{
	struct sha256_ctx ctx;
	uint8_t d[SHA256_DIGEST_SIZE];

	sha256_init(&ctx);
	sha256_update(&ctx, strlen(key), (const uint8_t *)key);
	sha256_digest(&ctx, sizeof d, d);
	hex_encode(out, d, sizeof d);
}

/* The store's text parsed, {"keys": []} when there is none yet; NULL with e
 * when it does not parse. */
static cJSON *
load(const char *path, struct sbx_err *e)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	cJSON *o;

	if ((text = read_file(path, STORE_MAX, &len)) == NULL) {
		if (errno == ENOENT) {
			o = cJSON_CreateObject();
			cJSON_AddArrayToObject(o, "keys");
			return o;
		}
		sbx_error_errno(e, SBX_EIO, NULL, "cannot read %s", path);
		return NULL;
	}
	o = cJSON_ParseWithLength(text, len);
	if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(o, "keys"))) {
		cJSON_Delete(o);
		sbx_error(e, SBX_EIO, "mend it, or move it aside to start again (every key in "
		    "it stops working)", "%s is not a key store ({\"keys\": [...]})", path);
		return NULL;
	}
	return o;
}

static int
save(const char *path, const cJSON *o, struct sbx_err *e)
{
	_cleanup_free_ char *tmp = xasprintf("%s.tmp", path), *text = cJSON_Print(o);
	int fd;

	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot write %s", tmp);
	if (fchmod(fd, 0600) < 0 || write_all(fd, text, strlen(text)) < 0 ||
	    write_all(fd, "\n", 1) < 0 || fsync(fd) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot write %s", tmp);
		close(fd);
		unlink(tmp);
		return -1;
	}
	if (close(fd) < 0 || rename(tmp, path) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot write %s", path);
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* A change: fn(keys array, arg, e) under the lock, the file written when it
 * returns 1 (0: nothing to write, -1: refused with e). */
static int
change(int (*fn)(cJSON *keys, void *arg, struct sbx_err *e), void *arg, struct sbx_err *e)
{
	_cleanup_free_ char *path = paths_file(PATHS_STATE, "keys.json", 1, e);
	_cleanup_free_ char *lock = paths_file(PATHS_STATE, "keys.lock", 1, e);
	_cleanup_close_ int fd = -1;
	cJSON *o;
	int rc;

	if (path == NULL || lock == NULL)
		return -1;
	if ((fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot open %s", lock);
	while (flock(fd, LOCK_EX) < 0)
		if (errno != EINTR)
			return sbx_error_errno(e, SBX_EIO, NULL, "cannot lock %s", lock);
	if ((o = load(path, e)) == NULL)
		return -1;
	rc = fn(cJSON_GetObjectItemCaseSensitive(o, "keys"), arg, e);
	if (rc > 0)
		rc = save(path, o, e);
	cJSON_Delete(o);
	return rc;
}

/* --- records ------------------------------------------------------------ */

static unsigned
scopes_of(const cJSON *o)
{
	const cJSON *x;
	unsigned bits = 0;

	cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(o, "scopes"))
		bits |= key_scope_bit(cJSON_GetStringValue(x));
	return bits;
}

static void
add_time(cJSON *o, const char *name, int64_t ms)
{
	char t[40];

	if (ms <= 0) {
		cJSON_AddNullToObject(o, name);
		return;
	}
	key_time_format(ms, t, sizeof t);
	cJSON_AddStringToObject(o, name, t);
}

/* The public record of stored record r. */
static cJSON *
public_record(const cJSON *r, int64_t now)
{
	cJSON *o = cJSON_CreateObject();
	int64_t ex = jint(r, "expiresAt", 0), rv = jint(r, "revokedAt", 0);

	cJSON_AddStringToObject(o, "id", jstr(r, "id", ""));
	cJSON_AddStringToObject(o, "name", jstr(r, "name", ""));
	cJSON_AddStringToObject(o, "prefix", jstr(r, "prefix", ""));
	cJSON_AddItemToObject(o, "scopes", key_scopes_json(scopes_of(r)));
	cJSON_AddNumberToObject(o, "rateLimit", (double)jint(r, "rateLimit", 0));
	add_time(o, "createdAt", jint(r, "createdAt", 0));
	add_time(o, "expiresAt", ex);
	cJSON_AddBoolToObject(o, "revoked", rv > 0);
	add_time(o, "revokedAt", rv);
	cJSON_AddStringToObject(o, "status", rv > 0 ? "revoked" : ex > 0 && ex <= now ?
	    "expired" : "active");
	return o;
}

/* The record which names (its id, or with by_name its name), or NULL with e. */
static cJSON *
find(cJSON *keys, const char *which, int by_name, struct sbx_err *e)
{
	cJSON *r;

	cJSON_ArrayForEach(r, keys)
		if (strcmp(jstr(r, "id", ""), which) == 0)
			return r;
	cJSON_ArrayForEach(r, keys)
		if (by_name && strcmp(jstr(r, "name", ""), which) == 0)
			return r;
	sbx_error(e, SBX_ENOTFOUND, by_name ? "`sbxtop key ls` lists them" :
	    "GET /admin/keys lists them", "API key not found");
	return NULL;
}

/* A new secret into r (its hash and prefix); the secret in *key. */
static void
new_secret(cJSON *r, char **key)
{
	char *k = xmalloc(KEY_SECRET_LEN + 1), h[2 * SHA256_DIGEST_SIZE + 1], pre[16];

	memcpy(k, KEY_PREFIX, 5);
	random_hex(k + 5, 32);
	hash_hex(k, h);
	snprintf(pre, sizeof pre, "%.13s", k);
	cJSON_DeleteItemFromObjectCaseSensitive(r, "prefix");
	cJSON_DeleteItemFromObjectCaseSensitive(r, "hash");
	cJSON_AddStringToObject(r, "prefix", pre);
	cJSON_AddStringToObject(r, "hash", h);
	*key = k;
}

/* --- changes -------------------------------------------------------------- */

struct op {
	const struct key_spec	*spec;
	const char		*which;
	int			 by_name;
	char			*key;
	cJSON			*record;
};

static int
do_add(cJSON *keys, void *arg, struct sbx_err *e)
{
	struct op *op = arg;
	const struct key_spec *s = op->spec;
	char id[KEY_ID_LEN + 1];
	cJSON *r;

	cJSON_ArrayForEach(r, keys)
		if (strcmp(jstr(r, "name", ""), s->name) == 0)
			return sbx_error(e, SBX_ESTATE, "choose another name, or rotate that key",
			    "an API key named '%s' exists (%s)", s->name, jstr(r, "id", "?"));
	for (int tries = 0;; tries++) {
		memcpy(id, "key-", 4);
		random_hex(id + 4, 4);
		cJSON_ArrayForEach(r, keys)
			if (strcmp(jstr(r, "id", ""), id) == 0)
				break;
		if (r == NULL)
			break;
		if (tries == 100)
			return sbx_error(e, SBX_EINTERNAL, NULL, "no free key id found");
	}
	r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "id", id);
	cJSON_AddStringToObject(r, "name", s->name);
	new_secret(r, &op->key);
	cJSON_AddItemToObject(r, "scopes", key_scopes_json(s->scopes));
	cJSON_AddNumberToObject(r, "rateLimit", (double)s->rate_limit);
	cJSON_AddNumberToObject(r, "createdAt", (double)wall_ms());
	if (s->expires_ms > 0)
		cJSON_AddNumberToObject(r, "expiresAt", (double)s->expires_ms);
	cJSON_AddItemToArray(keys, r);
	op->record = public_record(r, wall_ms());
	return 1;
}

static int
do_revoke(cJSON *keys, void *arg, struct sbx_err *e)
{
	struct op *op = arg;
	cJSON *r = find(keys, op->which, op->by_name, e);
	int changed = 0;

	if (r == NULL)
		return -1;
	if (jint(r, "revokedAt", 0) <= 0) {
		cJSON_DeleteItemFromObjectCaseSensitive(r, "revokedAt");
		cJSON_AddNumberToObject(r, "revokedAt", (double)wall_ms());
		changed = 1;
	}
	op->record = public_record(r, wall_ms());
	return changed;
}

static int
do_rotate(cJSON *keys, void *arg, struct sbx_err *e)
{
	struct op *op = arg;
	cJSON *r = find(keys, op->which, op->by_name, e);

	if (r == NULL)
		return -1;
	if (jint(r, "revokedAt", 0) > 0)
		return sbx_error(e, SBX_ESTATE, "add a new key instead", "API key %s is revoked",
		    jstr(r, "id", "?"));
	new_secret(r, &op->key);
	op->record = public_record(r, wall_ms());
	return 1;
}

static int
do_rm(cJSON *keys, void *arg, struct sbx_err *e)
{
	struct op *op = arg;
	cJSON *r = find(keys, op->which, op->by_name, e);

	if (r == NULL)
		return -1;
	cJSON_Delete(cJSON_DetachItemViaPointer(keys, r));
	return 1;
}

/* Run a change; the secret and the record to the caller's pointers. */
static int
run(int (*fn)(cJSON *, void *, struct sbx_err *), struct op *op, char **key, cJSON **record,
    struct sbx_err *e)
{
	int rc = change(fn, op, e);

	if (rc < 0) {
		free(op->key);
		cJSON_Delete(op->record);
		return -1;
	}
	if (key != NULL)
		*key = op->key;
	else
		free(op->key);
	if (record != NULL)
		*record = op->record;
	else
		cJSON_Delete(op->record);
	return 0;
}

int
keys_add(const struct key_spec *s, char **key, cJSON **record, struct sbx_err *e)
{
	struct op op = { .spec = s };

	if (!key_name_ok(s->name) || s->scopes == 0 || (s->scopes & ~KEY_SCOPES_ALL) ||
	    s->rate_limit < 1 || s->rate_limit > KEY_RATE_MAX)
		return sbx_error(e, SBX_EINVAL, NULL, "not a key to add");
	return run(do_add, &op, key, record, e);
}

int
keys_revoke(const char *which, int by_name, cJSON **record, struct sbx_err *e)
{
	struct op op = { .which = which, .by_name = by_name };

	return run(do_revoke, &op, NULL, record, e);
}

int
keys_rotate(const char *which, int by_name, char **key, cJSON **record, struct sbx_err *e)
{
	struct op op = { .which = which, .by_name = by_name };

	return run(do_rotate, &op, key, record, e);
}

int
keys_rm(const char *which, int by_name, struct sbx_err *e)
{
	struct op op = { .which = which, .by_name = by_name };

	return run(do_rm, &op, NULL, NULL, e);
}

int
keys_list(cJSON **out, struct sbx_err *e)
{
	_cleanup_free_ char *path = paths_file(PATHS_STATE, "keys.json", 0, e);
	cJSON *o, *r;
	int64_t now = wall_ms();

	*out = NULL;
	if (path == NULL || (o = load(path, e)) == NULL)
		return -1;
	*out = cJSON_CreateArray();
	cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(o, "keys"))
		cJSON_AddItemToArray(*out, public_record(r, now));
	cJSON_Delete(o);
	return 0;
}

/* --- checking ------------------------------------------------------------- */

struct keys_cache {
	pthread_mutex_t	 mu;
	cJSON		*keys;		/* the file as last parsed (NULL: none yet) */
	char		*bytes;
	size_t		 len;
	int		 warned;	/* an unreadable store was logged */
};

struct keys_cache *
keys_cache_new(void)
{
	struct keys_cache *k = xcalloc(1, sizeof *k);

	pthread_mutex_init(&k->mu, NULL);
	return k;
}

void
keys_cache_free(struct keys_cache *k)
{
	if (k == NULL)
		return;
	cJSON_Delete(k->keys);
	free(k->bytes);
	pthread_mutex_destroy(&k->mu);
	free(k);
}

enum key_verdict
keys_check(struct keys_cache *k, const char *key, int64_t now, struct key_auth *out)
{
	struct sbx_err e;
	_cleanup_free_ char *path = paths_file(PATHS_STATE, "keys.json", 0, &e);
	_cleanup_free_ char *bytes = NULL;
	char h[2 * SHA256_DIGEST_SIZE + 1];
	const cJSON *r, *hit = NULL;
	enum key_verdict v = KEY_UNKNOWN;
	size_t n = 0;

	memset(out, 0, sizeof *out);
	if (path == NULL)
		return KEY_UNKNOWN;
	hash_hex(key, h);
	bytes = read_file(path, STORE_MAX, &n);
	pthread_mutex_lock(&k->mu);
	if (bytes == NULL) {
		/* No store: no keys. */
		cJSON_Delete(k->keys);
		k->keys = NULL;
		free(k->bytes);
		k->bytes = NULL;
	} else if (k->bytes == NULL || n != k->len || memcmp(bytes, k->bytes, n) != 0) {
		cJSON *o = cJSON_ParseWithLength(bytes, n);
		cJSON *a = cJSON_DetachItemFromObjectCaseSensitive(o, "keys");
		cJSON_Delete(o);
		cJSON_Delete(k->keys);
		k->keys = cJSON_IsArray(a) ? a : NULL;
		if (!cJSON_IsArray(a)) {
			cJSON_Delete(a);
			if (!k->warned)
				log_warnx("%s is not a key store: no API key is valid until it "
				    "is mended", path);
			k->warned = 1;
		} else {
			k->warned = 0;
		}
		free(k->bytes);
		k->bytes = steal_pointer(&bytes);
		k->len = n;
	}
	/* Every record is compared, whatever matched: how long it takes says
	 * nothing of which. */
	cJSON_ArrayForEach(r, k->keys)
		if (ct_streq(jstr(r, "hash", ""), h) && hit == NULL)
			hit = r;
	if (hit != NULL) {
		int64_t ex = jint(hit, "expiresAt", 0);
		v = jint(hit, "revokedAt", 0) > 0 ? KEY_REVOKED : ex > 0 && ex <= now ? KEY_EXPIRED :
		    KEY_VALID;
		snprintf(out->id, sizeof out->id, "%s", jstr(hit, "id", ""));
		snprintf(out->name, sizeof out->name, "%s", jstr(hit, "name", ""));
		out->scopes = scopes_of(hit);
		out->rate_limit = jint(hit, "rateLimit", 0);
	}
	pthread_mutex_unlock(&k->mu);
	return v;
}
