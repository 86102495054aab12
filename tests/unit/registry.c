/* Unit tests for the registry and the sandbox record: JSON round trip, lookups,
 * a corrupt file set aside (never dropped), and 20 processes adding records at
 * once without losing one.  TAP lines; exits non-zero when a check fails. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "lib/log.h"
#include "core/paths.h"
#include "core/registry.h"
#include "lib/util.h"

static char tmpdir[] = "/tmp/sbxunit.XXXXXX";

static struct sandbox *
sample(const char *id, const char *name)
{
	struct sandbox *s = sandbox_new();

	snprintf(s->id, sizeof s->id, "%s", id);
	s->name = name ? xstrdup(name) : NULL;
	s->backend = xstrdup("ns");
	s->image = xstrdup("/srv/img");
	s->state = SBX_SUSPENDED;
	s->state_reason = xstrdup("frozen by the operator");
	s->created_at = 1700000000123;
	s->expires_at = 1700014400123;
	s->max_duration_s = 14400;
	s->idle_s = 600;
	s->limits.memory_mib = 512;
	s->limits.cpus = 1.5;
	s->limits.pids = 4096;
	s->limits.disk_mib = 2048;
	s->limits_note = xstrdup("no cgroup delegation");
	s->network = xstrdup("egress");
	s->owner = xstrdup("claude-code");
	s->agent_endpoint = xstrdup("unix:/run/x/agent.sock");
	s->agent_secret = xstrdup("00112233445566778899aabbccddeeff");
	s->agent_headers = cJSON_CreateObject();
	cJSON_AddStringToObject(s->agent_headers, "X-aws-proxy-auth", "tok");
	s->env = cJSON_CreateObject();
	cJSON_AddStringToObject(s->env, "LANG", "C.UTF-8");
	s->backend_data = cJSON_CreateObject();
	cJSON_AddNumberToObject(s->backend_data, "pid", 4242);
	return s;
}

static void
test_record(void)
{
	struct sandbox *s = sample("sbx-abc123", "api"), *d;
	cJSON *o, *pub, *bad;
	struct sbx_err e;
	char id[32];

	sandbox_new_id(id, sizeof id);
	check(strncmp(id, "sbx-", 4) == 0 && strlen(id) == 10 &&
	    strspn(id + 4, "0123456789abcdef") == 6, "new ids are sbx- and 6 hex digits (%s)", id);

	o = sandbox_to_json(s, 1);
	d = sandbox_from_json(o, &e);
	check(d != NULL, "record parses back");
	if (d != NULL) {
		cJSON *o2 = sandbox_to_json(d, 1);
		check(cJSON_Compare(o, o2, 1), "round trip keeps every field");
		check(d->limits.cpus == 1.5 && d->limits.disk_mib == 2048 && d->idle_s == 600 &&
		    d->state == SBX_SUSPENDED && d->created_at == 1700000000123,
		    "numbers and state survive exactly");
		check(strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(d->agent_headers,
		    "X-aws-proxy-auth")), "tok") == 0, "agent headers survive");
		cJSON_Delete(o2);
		sandbox_free(d);
	}
	pub = sandbox_to_json(s, 0);
	check(cJSON_GetObjectItem(pub, "agent_secret") == NULL &&
	    cJSON_GetObjectItem(pub, "agent_headers") == NULL,
	    "the public form carries no secret and no headers");
	check(cJSON_GetObjectItem(pub, "state_reason") && cJSON_GetObjectItem(pub, "expires_at"),
	    "the public form has state_reason and expires_at");

	bad = cJSON_Duplicate(o, 1);
	cJSON_ReplaceItemInObject(bad, "id", cJSON_CreateString("../../etc"));
	check(sandbox_from_json(bad, &e) == NULL, "an id with '/' is refused");
	cJSON_Delete(bad);
	bad = cJSON_Duplicate(o, 1);
	cJSON_ReplaceItemInObject(bad, "state", cJSON_CreateString("dancing"));
	check(sandbox_from_json(bad, &e) == NULL && strstr(e.msg, "state"),
	    "an unknown state is refused: %s", e.msg);
	cJSON_Delete(bad);
	bad = cJSON_Duplicate(o, 1);
	cJSON_ReplaceItemInObject(bad, "created_at", cJSON_CreateString("yesterday"));
	check(sandbox_from_json(bad, &e) == NULL, "a mistyped field is refused");
	cJSON_Delete(bad);

	cJSON_Delete(pub);
	cJSON_Delete(o);
	sandbox_free(s);
}

static int
txn_add3(struct registry *r, void *arg, struct sbx_err *e)
{
	registry_put(r, sample("sbx-aaaa01", "alpha"));
	registry_put(r, sample("sbx-aaaa02", "beta"));
	registry_put(r, sample("sbx-bbbb01", NULL));
	return 0;
}

static int
txn_fail(struct registry *r, void *arg, struct sbx_err *e)
{
	registry_remove(r, "sbx-aaaa01");
	return sbx_error(e, SBX_EINVAL, NULL, "changed my mind");
}

static void
test_lookup(void)
{
	struct registry *r;
	struct sbx_err e;
	struct sandbox *s;
	_cleanup_free_ char *path = registry_path(&e);
	struct stat st;

	check(registry_update(txn_add3, NULL, &e) == 0, "a transaction writes");
	check(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "registry file is 0600");
	{
		_cleanup_free_ char *dir = paths_dir(PATHS_STATE, &e);
		check(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700,
		    "state directory is 0700");
	}
	check(registry_update(txn_fail, NULL, &e) < 0, "a failing transaction reports");
	r = registry_load(&e);
	check(r != NULL && registry_count(r) == 3, "a failing transaction changes nothing");
	if (r == NULL)
		return;
	s = registry_find(r, "sbx-aaaa02", &e);
	check(s && strcmp(s->id, "sbx-aaaa02") == 0, "find by id");
	s = registry_find(r, "sbx-b", &e);
	check(s && strcmp(s->id, "sbx-bbbb01") == 0, "find by unique prefix");
	s = registry_find(r, "bbbb", &e);
	check(s && strcmp(s->id, "sbx-bbbb01") == 0, "find by prefix without sbx-");
	s = registry_find(r, "beta", &e);
	check(s && strcmp(s->id, "sbx-aaaa02") == 0, "find by name");
	s = registry_find(r, "sbx-aaaa", &e);
	check(s == NULL && e.code == SBX_EINVAL && strstr(e.msg, "matches 2"),
	    "an ambiguous prefix says so: %s", e.msg);
	s = registry_find(r, "nope", &e);
	check(s == NULL && e.code == SBX_ENOTFOUND &&
	    strcmp(e.msg, "unknown sandbox 'nope'") == 0 && strcmp(e.hint, "run `sbxtop ls`") == 0,
	    "unknown: \"%s\" (%s)", e.msg, e.hint);
	s = registry_find(r, "", &e);
	check(s == NULL && e.code == SBX_ENOTFOUND, "the empty key matches nothing");
	registry_free(r);

	check(registry_delete("sbx-aaaa01", &e) == 0, "delete");
	r = registry_load(&e);
	check(r && registry_count(r) == 2 && registry_find(r, "alpha", &e) == NULL,
	    "deleted record is gone");
	registry_free(r);
}

static size_t
count_corrupt(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	while (d && (de = readdir(d)) != NULL)
		n += strstr(de->d_name, "sandboxes.json.corrupt-") != NULL;
	if (d)
		closedir(d);
	return n;
}

static void
test_corrupt(void)
{
	struct sbx_err e;
	_cleanup_free_ char *path = registry_path(&e);
	_cleanup_free_ char *dir = paths_dir(PATHS_STATE, &e);
	_cleanup_free_ char *logp = xasprintf("%s/log", tmpdir);
	_cleanup_free_ char *logtext = NULL;
	struct registry *r;
	FILE *f;
	size_t len;

	f = fopen(path, "w");
	fputs("{\"version\":1,\"sandboxes\":[{\"id\":\"sbx-1\",", f);
	fclose(f);
	log_open("test", logp);
	r = registry_load(&e);
	log_open("test", "/dev/stderr");
	check(r != NULL && registry_count(r) == 0, "a corrupt registry reads as empty");
	registry_free(r);
	check(access(path, F_OK) < 0, "the corrupt file is no longer in place");
	check(count_corrupt(dir) == 1, "it is kept as sandboxes.json.corrupt-*");
	logtext = read_file(logp, 1 << 20, &len);
	check(logtext && strstr(logtext, path) && strstr(logtext, ".corrupt-"),
	    "the warning names both paths");

	/* Valid JSON, wrong shape: also set aside, not overwritten. */
	f = fopen(path, "w");
	fputs("[1,2,3]\n", f);
	fclose(f);
	{
		struct sandbox *c1 = sample("sbx-cccc01", NULL);
		check(registry_store(c1, &e) == 0, "a transaction over a corrupt file succeeds");
		sandbox_free(c1);
	}
	r = registry_load(&e);
	check(r && registry_count(r) == 1, "a transaction over a corrupt file starts empty");
	registry_free(r);
	check(count_corrupt(dir) == 2, "and the second corrupt file is kept too");
}

#define NPROC 20
#define NEACH 10

struct addarg {
	int	proc, i;
};

static int
txn_add_one(struct registry *r, void *arg, struct sbx_err *e)
{
	struct addarg *a = arg;
	char id[32];

	snprintf(id, sizeof id, "sbx-p%02di%02d", a->proc, a->i);
	registry_put(r, sample(id, NULL));
	return 0;
}

static void
test_concurrent(void)
{
	struct sbx_err e;
	pid_t pids[NPROC];
	int bad = 0;
	struct registry *r;
	_cleanup_free_ char *path = registry_path(&e);
	_cleanup_free_ char *text = NULL;
	size_t len;

	unlink(path);
	fflush(stdout);
	for (int p = 0; p < NPROC; p++) {
		if ((pids[p] = fork()) == 0) {
			for (int i = 0; i < NEACH; i++) {
				struct addarg a = { p, i };
				struct sbx_err ce;
				if (registry_update(txn_add_one, &a, &ce) < 0)
					_exit(1);
				/* Readers at the same time must never see a torn file. */
				struct registry *rr = registry_load(&ce);
				if (rr == NULL)
					_exit(2);
				registry_free(rr);
			}
			_exit(0);
		}
	}
	for (int p = 0; p < NPROC; p++) {
		int st;
		waitpid(pids[p], &st, 0);
		bad += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	check(bad == 0, "%d processes each added %d records without an error", NPROC, NEACH);
	r = registry_load(&e);
	check(r && registry_count(r) == NPROC * NEACH, "all %d records are there (%zu)",
	    NPROC * NEACH, r ? registry_count(r) : 0);
	registry_free(r);
	text = read_file(path, 64 << 20, &len);
	cJSON *o = text ? cJSON_Parse(text) : NULL;
	check(o != NULL && cJSON_GetArraySize(cJSON_GetObjectItem(o, "sandboxes")) ==
	    NPROC * NEACH, "the file is valid JSON with every record");
	cJSON_Delete(o);
	_cleanup_free_ char *dir = paths_dir(PATHS_STATE, &e);
	check(count_corrupt(dir) == 2, "no file was set aside as corrupt meanwhile");
}

/* The file cut at every byte (a disk that filled, a copy cut short): each
 * version either still holds every record, or is reported and kept aside
 * byte for byte, never dropped. */
static void
test_truncated(void)
{
	struct sbx_err e;
	_cleanup_free_ char *path = registry_path(&e);
	_cleanup_free_ char *dir = paths_dir(PATHS_STATE, &e);
	_cleanup_free_ char *logp = xasprintf("%s/log", tmpdir);
	_cleanup_free_ char *whole = NULL;
	size_t len, kept = 0, aside = 0, bad = 0;

	unlink(path);
	for (int i = 0; i < 3; i++) {
		char id[32];
		snprintf(id, sizeof id, "sbx-trunc%d", i);
		struct sandbox *s = sample(id, NULL);
		(void)registry_store(s, &e);
		sandbox_free(s);
	}
	if (!check((whole = read_file(path, 1 << 20, &len)) != NULL && len > 100,
	    "a registry of 3 records to cut"))
		return;
	log_open("test", logp);
	for (size_t cut = 0; cut < len; cut++) {
		struct registry *r;
		struct dirent *de;
		DIR *d;
		int found = 0;
		FILE *f = fopen(path, "w");

		if (f == NULL || fwrite(whole, 1, cut, f) != cut || fclose(f) != 0) {
			bad++;
			continue;
		}
		r = registry_load(&e);
		if (r != NULL && registry_count(r) == 3) {
			kept++;
			registry_free(r);
			continue;
		}
		registry_free(r);
		/* Set aside: the one .corrupt-* file newer than the old two. */
		if ((d = opendir(dir)) != NULL) {
			while ((de = readdir(d)) != NULL) {
				_cleanup_free_ char *p = NULL, *text = NULL;
				size_t n = 0;
				if (strstr(de->d_name, ".corrupt-") == NULL)
					continue;
				p = xasprintf("%s/%s", dir, de->d_name);
				text = read_file(p, 1 << 20, &n);
				if (text != NULL && n == cut && memcmp(text, whole, cut) == 0) {
					found = 1;
					unlink(p);
				}
			}
			closedir(d);
		}
		if (found && access(path, F_OK) < 0)
			aside++;
		else
			bad++;
	}
	log_open("test", "/dev/stderr");
	{
		_cleanup_free_ char *logtext = read_file(logp, 4 << 20, NULL);
		check(logtext != NULL && strstr(logtext, "was corrupt (empty)") != NULL,
		    "a file cut to nothing is reported as empty");
	}
	check(bad == 0 && kept + aside == len, "cut at each of its %zu bytes: %zu read whole, "
	    "%zu set aside byte for byte and reported, %zu lost", len, kept, aside, bad);
}

int
main(void)
{
	if (mkdtemp(tmpdir) == NULL)
		return 1;
	setenv("XDG_STATE_HOME", tmpdir, 1);
	test_record();
	test_lookup();
	test_corrupt();
	test_concurrent();
	test_truncated();
	{
		_cleanup_free_ char *cmd = xasprintf("rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			printf("# could not remove %s\n", tmpdir);
	}
	return tap_end();
}
