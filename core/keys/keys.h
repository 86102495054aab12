/* API keys for the HTTP listener (`sbxtop serve --listen`), as Agent Sandbox
 * issues them: each key a random secret shown once, kept only as its SHA-256
 * in STATE/sbxtop/keys.json (0600), with a name, scopes (exec, admin,
 * metrics), a rate limit per window, an expiry and a revocation.
 *
 * SHA-256 and not a slow password hash: a key is 256 bits from the kernel's
 * CSPRNG, so no guess of it is ever cheaper than guessing the bits, with any
 * hash; a slow KDF (bcrypt, argon2) only helps secrets people choose, and it
 * would make every request pay its cost.
 *
 * spec.c is pure (what a request or a command line says: names, scopes,
 * times, the credential of a request); store.c keeps the file, read by the
 * CLI (`sbxtop key`) and the core server alike, each change under a lock and
 * renamed in whole. */
#ifndef SBX_KEYS_H
#define SBX_KEYS_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "lib/err.h"

/* Scopes, as bits. */
#define KEY_EXEC	0x1u	/* the sandbox tools: MCP, /v1/, /exec/ */
#define KEY_ADMIN	0x2u	/* /admin/keys, and every key's sandboxes */
#define KEY_METRICS	0x4u	/* /metrics */
#define KEY_SCOPES_ALL	(KEY_EXEC | KEY_ADMIN | KEY_METRICS)

#define KEY_NAME_MAX	64		/* bytes of a key's name */
#define KEY_RATE_DEFAULT 100		/* requests per window when none is given */
#define KEY_RATE_MAX	1000000
#define KEY_PREFIX	"sbxk_"
#define KEY_SECRET_LEN	(5 + 64)	/* "sbxk_" and 256 bits in hex */
#define KEY_ID_LEN	12		/* "key-" and 32 bits in hex */

/* --- spec.c: pure -------------------------------------------------------- */

/* "exec", "admin", "metrics" for one bit; NULL for another. */
const char *key_scope_name(unsigned bit);
/* The bit of a scope's name; 0 for another. */
unsigned key_scope_bit(const char *name);
/* The names of bits, as an array. */
cJSON *key_scopes_json(unsigned bits);
/* "exec,metrics" (a command line's) into *bits; -1 with e. */
int key_scopes_parse(const char *list, unsigned *bits, struct sbx_err *e);

/* 1 when name may name a key: 1 to KEY_NAME_MAX bytes of UTF-8, no control
 * character (it goes into logs, terminals and metric labels). */
int key_name_ok(const char *name);

/* An ISO 8601 time ("2026-01-31", "2026-01-31T12:00:00Z", with a fraction or
 * an offset "+02:00") as milliseconds since the epoch; -1 when it is not one. */
int key_time_parse(const char *s, int64_t *ms);
/* ms as "2026-01-31T12:00:00.000Z" (JavaScript's toISOString) in buf. */
void key_time_format(int64_t ms, char *buf, size_t len);

/* What a new key is to be. */
struct key_spec {
	char		 name[KEY_NAME_MAX + 1];
	unsigned	 scopes;
	int64_t		 rate_limit;	/* requests per window */
	int64_t		 expires_ms;	/* wall clock; 0: never */
};

/* POST /admin/keys's body {name, scopes?, rateLimit?, expiresAt?} into s:
 * scopes default to exec, rateLimit to KEY_RATE_DEFAULT, expiresAt (ISO 8601,
 * or null) to never and must be after now (wall ms).  -1 with e saying which
 * field is wrong and what it takes. */
int key_spec_from_json(const cJSON *body, int64_t now, struct key_spec *s,
    struct sbx_err *e);

/* Where a request's credential came from. */
enum key_from { KEY_FROM_NONE, KEY_FROM_BEARER, KEY_FROM_HEADER, KEY_FROM_QUERY };
/* The credential a request carries, from "Authorization: Bearer X", then
 * "X-API-Key: X", then "?api_key=X" (each may be NULL); NULL when none does,
 * or an Authorization of another scheme only.  *from says which. */
const char *key_credential(const char *authorization, const char *x_api_key,
    const char *query, enum key_from *from);

/* --- store.c: STATE/sbxtop/keys.json ------------------------------------ */

/* Add key s: *key is the secret (caller frees; shown once, never stored),
 * *record its public record (see keys_list).  -1 with e (a name taken). */
int keys_add(const struct key_spec *s, char **key, cJSON **record, struct sbx_err *e);
/* Every key's public record: {id, name, prefix, scopes, rateLimit, createdAt,
 * expiresAt, revoked, revokedAt, status: "active"|"revoked"|"expired"}, the
 * times ISO 8601 (or null). */
int keys_list(cJSON **out, struct sbx_err *e);
/* The key that which names: its id, or with by_name its name too.  -1 with e
 * (not_found) when none. */
int keys_revoke(const char *which, int by_name, cJSON **record, struct sbx_err *e);
/* A new secret for the key (same id, name, scopes, limit and expiry); the old
 * one stops working at once.  A revoked key is not rotated (state). */
int keys_rotate(const char *which, int by_name, char **key, cJSON **record,
    struct sbx_err *e);
int keys_rm(const char *which, int by_name, struct sbx_err *e);

/* What a request's key turned out to be. */
enum key_verdict { KEY_VALID, KEY_UNKNOWN, KEY_REVOKED, KEY_EXPIRED };
struct key_auth {
	char		 id[KEY_ID_LEN + 1];
	char		 name[KEY_NAME_MAX + 1];
	unsigned	 scopes;
	int64_t		 rate_limit;
};
/* The file as last parsed, kept while its bytes stay the same: checking a
 * key reads it (every change renames a whole new one in) and hashes once. */
struct keys_cache;
struct keys_cache *keys_cache_new(void);
void keys_cache_free(struct keys_cache *k);
/* Check key against the store at wall time now: KEY_VALID with *out filled,
 * or why not (an unreadable store is KEY_UNKNOWN, and logged). */
enum key_verdict keys_check(struct keys_cache *k, const char *key, int64_t now,
    struct key_auth *out);

#endif
