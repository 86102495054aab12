/* Unit tests for the API key store (core/keys/): what a new key's request may
 * say, ISO 8601 times, where a request's key is taken from, and the store:
 * hashes only, 0600, a check's verdicts (valid, unknown, revoked, expired,
 * rotated), names kept apart, a store that does not parse left alone, and 16
 * processes adding keys at once without losing one.  TAP lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "core/keys/keys.h"
#include "core/paths.h"
#include "lib/util.h"

#define NPROC	16

static void
test_times(void)
{
	static const struct { const char *in; int64_t ms; } good[] = {
		{ "2030-01-31", 1896048000000 },
		{ "2030-01-31T12:00:00Z", 1896091200000 },
		{ "2030-01-31T12:00:00.250Z", 1896091200250 },
		{ "2030-01-31T14:00:00+02:00", 1896091200000 },
		{ "2030-01-31T07:30-04:30", 1896091200000 },
		{ "2028-02-29T00:00:00Z", 1835395200000 },
	};
	static const char *const bad[] = {
		"", "2030", "2030-1-31", "2030-02-30", "2029-02-29", "2030-01-31T25:00:00Z",
		"2030-01-31T12:00:00Q", "1969-12-31", "2030-01-31T12:00:00.Z", "yesterday",
		"2030-01-31T12", "2030-01-31T12:00:00+2:00", "2030-01-31 ",
	};
	char buf[40];
	int64_t ms;

	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
		check(key_time_parse(good[i].in, &ms) == 0 && ms == good[i].ms, "time '%s' is "
		    "%lld ms", good[i].in, (long long)good[i].ms);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		check(key_time_parse(bad[i], &ms) < 0, "'%s' is not a time", bad[i]);
	key_time_format(1896091200250, buf, sizeof buf);
	check(strcmp(buf, "2030-01-31T12:00:00.250Z") == 0, "formatted as toISOString does: %s",
	    buf);
}

static int
spec(const char *json, struct key_spec *s, struct sbx_err *e)
{
	cJSON *o = cJSON_Parse(json);
	int rc = key_spec_from_json(o, 1800000000000, s, e);

	cJSON_Delete(o);
	return rc;
}

static void
test_spec(void)
{
	struct key_spec s;
	struct sbx_err e;
	unsigned bits;

	check(spec("{\"name\":\"ci\"}", &s, &e) == 0 && s.scopes == KEY_EXEC &&
	    s.rate_limit == KEY_RATE_DEFAULT && s.expires_ms == 0 && strcmp(s.name, "ci") == 0,
	    "a name alone: exec, %d a window, never expires", KEY_RATE_DEFAULT);
	check(spec("{\"name\":\"m\",\"scopes\":[\"metrics\",\"admin\"],\"rateLimit\":7,"
	    "\"expiresAt\":\"2030-01-31T12:00:00Z\"}", &s, &e) == 0 &&
	    s.scopes == (KEY_METRICS | KEY_ADMIN) && s.rate_limit == 7 &&
	    s.expires_ms == 1896091200000, "every field");
	check(spec("{\"name\":\"n\",\"scopes\":null,\"rateLimit\":null,\"expiresAt\":null}", &s,
	    &e) == 0 && s.scopes == KEY_EXEC, "nulls are the defaults");
	static const struct { const char *json, *says; } bad[] = {
		{ "[]", "object" },
		{ "{}", "name" },
		{ "{\"name\":\"\"}", "name" },
		{ "{\"name\":\"a\\u0007b\"}", "name" },
		{ "{\"name\":\"a\\u0085b\"}", "name" },
		{ "{\"name\":\"x\",\"scopes\":[]}", "at least one scope" },
		{ "{\"name\":\"x\",\"scopes\":[\"root\"]}", "unknown scope 'root'" },
		{ "{\"name\":\"x\",\"scopes\":\"exec\"}", "array" },
		{ "{\"name\":\"x\",\"rateLimit\":0}", "rateLimit" },
		{ "{\"name\":\"x\",\"rateLimit\":1.5}", "rateLimit" },
		{ "{\"name\":\"x\",\"rateLimit\":3.3e67}", "rateLimit" },
		{ "{\"name\":\"x\",\"rateLimit\":-1e300}", "rateLimit" },
		{ "{\"name\":\"x\",\"rateLimit\":\"9\"}", "rateLimit" },
		{ "{\"name\":\"x\",\"expiresAt\":\"2020-01-01\"}", "in the past" },
		{ "{\"name\":\"x\",\"expiresAt\":12}", "ISO 8601" },
		{ "{\"name\":\"x\",\"admin\":true}", "unknown field 'admin'" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		check(spec(bad[i].json, &s, &e) < 0 && e.code == SBX_EINVAL &&
		    strstr(e.msg, bad[i].says) != NULL, "%s refused: %s", bad[i].json, e.msg);
	check(key_scopes_parse("exec, metrics", &bits, &e) == 0 &&
	    bits == (KEY_EXEC | KEY_METRICS), "a command line's scopes");
	check(key_scopes_parse("exec,sudo", &bits, &e) < 0 && strstr(e.msg, "sudo"),
	    "an unknown one named: %s", e.msg);
}

static void
test_credential(void)
{
	enum key_from f;

	check(strcmp(key_credential("Bearer abc", "def", "ghi", &f), "abc") == 0 &&
	    f == KEY_FROM_BEARER, "Authorization: Bearer first");
	check(strcmp(key_credential("bearer   abc", NULL, NULL, &f), "abc") == 0,
	    "the scheme in any case, spaces after it");
	check(strcmp(key_credential("Basic eHg6eXk=", "def", "ghi", &f), "def") == 0 &&
	    f == KEY_FROM_HEADER, "another scheme: X-API-Key");
	check(strcmp(key_credential(NULL, "", "ghi", &f), "ghi") == 0 && f == KEY_FROM_QUERY,
	    "then ?api_key");
	check(key_credential("Bearer ", NULL, "", &f) == NULL && f == KEY_FROM_NONE,
	    "nothing given: none");
}

static void
test_store(void)
{
	struct key_spec s = { "ci", KEY_EXEC | KEY_METRICS, 5, 0 };
	struct keys_cache *k = keys_cache_new();
	struct key_auth a;
	struct sbx_err e;
	struct stat st;
	cJSON *rec = NULL, *list = NULL;
	char *key = NULL, *key2 = NULL, *text;
	const char *id;

	check(keys_check(k, "sbxk_nothing", wall_ms(), &a) == KEY_UNKNOWN, "no store: no key");
	check(keys_add(&s, &key, &rec, &e) == 0 && strncmp(key, "sbxk_", 5) == 0 &&
	    strlen(key) == KEY_SECRET_LEN, "a key is made: sbxk_ and 64 hex digits");
	id = cJSON_GetStringValue(cJSON_GetObjectItem(rec, "id"));
	check(id != NULL && strncmp(id, "key-", 4) == 0 && strlen(id) == KEY_ID_LEN,
	    "with an id (%s)", id ? id : "");
	_cleanup_free_ char *path = paths_file(PATHS_STATE, "keys.json", 0, &e);
	text = read_file(path, 1 << 20, NULL);
	check(text != NULL && strstr(text, key + 5) == NULL && strstr(text, "\"hash\""),
	    "the store holds its hash, not the key");
	free(text);
	check(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "keys.json is 0600");
	check(keys_check(k, key, wall_ms(), &a) == KEY_VALID && strcmp(a.id, id) == 0 &&
	    strcmp(a.name, "ci") == 0 && a.scopes == (KEY_EXEC | KEY_METRICS) &&
	    a.rate_limit == 5, "the key is valid, with its name, scopes and limit");
	check(keys_check(k, "sbxk_0000", wall_ms(), &a) == KEY_UNKNOWN, "another is unknown");
	check(keys_add(&s, &key2, NULL, &e) < 0 && e.code == SBX_ESTATE &&
	    strstr(e.msg, "'ci' exists"), "a name is one key's: %s", e.msg);

	char *rid = xstrdup(id);
	cJSON_Delete(rec);
	check(keys_rotate("ci", 1, &key2, &rec, &e) == 0 && strcmp(key2, key) != 0,
	    "rotate by name: a new key");
	check(keys_check(k, key, wall_ms(), &a) == KEY_UNKNOWN &&
	    keys_check(k, key2, wall_ms(), &a) == KEY_VALID && strcmp(a.id, rid) == 0,
	    "the old one is refused at once, the new one has the same id");
	cJSON_Delete(rec);
	check(keys_rotate("ci", 0, &key, &rec, &e) < 0 && e.code == SBX_ENOTFOUND,
	    "without by_name only an id names a key (404 for the routes)");
	free(key);
	check(keys_revoke(rid, 0, &rec, &e) == 0 && cJSON_IsTrue(cJSON_GetObjectItem(rec,
	    "revoked")), "revoked by id");
	cJSON_Delete(rec);
	check(keys_check(k, key2, wall_ms(), &a) == KEY_REVOKED && strcmp(a.id, rid) == 0,
	    "a revoked key is refused, and known for what it was");
	check(keys_rotate(rid, 0, &key, &rec, &e) < 0 && e.code == SBX_ESTATE,
	    "a revoked key is not rotated back to life");
	check(keys_list(&list, &e) == 0 && cJSON_GetArraySize(list) == 1 &&
	    strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 0),
	    "status")), "revoked") == 0 && !cJSON_GetObjectItem(cJSON_GetArrayItem(list, 0),
	    "hash"), "the list says so, and has no hash");
	cJSON_Delete(list);
	check(keys_rm(rid, 0, &e) == 0 && keys_rm(rid, 0, &e) < 0 && e.code == SBX_ENOTFOUND &&
	    strcmp(e.msg, "API key not found") == 0, "removed; again: API key not found");
	free(key2);
	free(rid);

	struct key_spec x = { "soon", KEY_EXEC, 1, wall_ms() + 60000 };
	check(keys_add(&x, &key, NULL, &e) == 0, "a key that expires in a minute");
	check(keys_check(k, key, wall_ms(), &a) == KEY_VALID &&
	    keys_check(k, key, wall_ms() + 61000, &a) == KEY_EXPIRED, "valid now, expired then");
	free(key);

	/* A store that does not parse: left alone, no key valid. */
	FILE *f = fopen(path, "w");
	fputs("{\"keys\": [oops", f);
	fclose(f);
	check(keys_add(&s, &key, NULL, &e) < 0 && e.code == SBX_EIO && strstr(e.msg,
	    "not a key store"), "a store that does not parse is not written over: %s", e.msg);
	text = read_file(path, 1 << 20, NULL);
	check(text != NULL && strcmp(text, "{\"keys\": [oops") == 0, "  and kept as it was");
	free(text);
	check(keys_check(k, "sbxk_anything", wall_ms(), &a) == KEY_UNKNOWN, "  no key is valid");
	unlink(path);
	keys_cache_free(k);
}

/* NPROC processes add a key each at once: every one is there. */
static void
test_concurrent(void)
{
	cJSON *list;
	struct sbx_err e;
	int ok = 1;

	for (int i = 0; i < NPROC; i++) {
		pid_t p = fork();
		if (p == 0) {
			struct key_spec s = { "", KEY_EXEC, 10, 0 };
			char *key;
			snprintf(s.name, sizeof s.name, "p%d", i);
			_exit(keys_add(&s, &key, NULL, &e) == 0 ? 0 : 1);
		}
	}
	for (int i = 0; i < NPROC; i++) {
		int st;
		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			ok = 0;
	}
	check(ok, "%d processes added a key each", NPROC);
	check(keys_list(&list, &e) == 0 && cJSON_GetArraySize(list) == NPROC,
	    "all %d are in the store", NPROC);
	cJSON_Delete(list);
}

int
main(void)
{
	char tmpdir[] = "/tmp/sbxkeys.XXXXXX";

	if (mkdtemp(tmpdir) == NULL)
		return 1;
	setenv("XDG_STATE_HOME", tmpdir, 1);
	test_times();
	test_spec();
	test_credential();
	test_store();
	test_concurrent();
	{
		_cleanup_free_ char *cmd = xasprintf("rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			printf("# could not remove %s\n", tmpdir);
	}
	return tap_end();
}
