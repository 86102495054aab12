/* The registry on disk (see registry.h). */
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

#include "backends/backend.h"
#include "lib/fault.h"
#include "lib/log.h"
#include "core/paths.h"
#include "core/registry.h"
#include "lib/util.h"

#define REGISTRY_MAX	(64u << 20)	/* bytes: far beyond any real registry */
#define REGISTRY_VERSION 1

struct registry {
	struct sandbox	**v;
	size_t		  n, cap;
};

char *
registry_path(struct sbx_err *e)
{
	return paths_file(PATHS_STATE, "sandboxes.json", 0, e);
}

static struct registry *
registry_empty(void)
{
	return xcalloc(1, sizeof(struct registry));
}

void
registry_free(struct registry *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->n; i++)
		sandbox_free(r->v[i]);
	free(r->v);
	free(r);
}

size_t registry_count(const struct registry *r) { return r->n; }
struct sandbox *registry_at(const struct registry *r, size_t i) { return r->v[i]; }

void
registry_put(struct registry *r, struct sandbox *s)
{
	for (size_t i = 0; i < r->n; i++)
		if (strcmp(r->v[i]->id, s->id) == 0) {
			sandbox_free(r->v[i]);
			r->v[i] = s;
			return;
		}
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 16;
		r->v = xrealloc(r->v, r->cap * sizeof *r->v);
	}
	r->v[r->n++] = s;
}

struct sandbox *
registry_get(const struct registry *r, const char *id)
{
	for (size_t i = 0; i < r->n; i++)
		if (strcmp(r->v[i]->id, id) == 0)
			return r->v[i];
	return NULL;
}

int
registry_remove(struct registry *r, const char *id)
{
	for (size_t i = 0; i < r->n; i++)
		if (strcmp(r->v[i]->id, id) == 0) {
			sandbox_free(r->v[i]);
			memmove(&r->v[i], &r->v[i + 1], (r->n - i - 1) * sizeof *r->v);
			r->n--;
			return 1;
		}
	return 0;
}

struct sandbox *
registry_find(const struct registry *r, const char *key, struct sbx_err *e)
{
	struct sandbox *found = NULL;
	size_t klen = strlen(key), nfound = 0;

	if (klen == 0)
		goto unknown;
	/* A warm pool's members are nobody's yet: no key names them. */
	if ((found = registry_get(r, key)) != NULL && found->pool == NULL)
		return found;
	found = NULL;
	/* A prefix of an id ("sbx-7f", or "7f3" without the "sbx-"), else a name. */
	for (size_t i = 0; i < r->n; i++) {
		const char *id = r->v[i]->id, *bare = strchr(id, '-');
		if (r->v[i]->pool != NULL)
			continue;
		if (strncmp(id, key, klen) == 0 ||
		    (bare != NULL && strncmp(bare + 1, key, klen) == 0)) {
			found = r->v[i];
			nfound++;
		}
	}
	if (nfound == 0)
		for (size_t i = 0; i < r->n; i++)
			if (r->v[i]->pool == NULL && r->v[i]->name != NULL &&
			    strcmp(r->v[i]->name, key) == 0) {
				found = r->v[i];
				nfound++;
			}
	if (nfound == 1)
		return found;
	if (nfound > 1) {
		sbx_error_reason(e, SBX_EINVAL, SBX_R_AMBIGUOUS,
		    "give more of the id (`sbxtop ls` lists them)",
		    "'%s' matches %zu sandboxes", key, nfound);
		return NULL;
	}
unknown:
	sbx_error_reason(e, SBX_ENOTFOUND, SBX_R_UNKNOWN_SANDBOX, "run `sbxtop ls`",
	    "unknown sandbox '%s'", key);
	return NULL;
}

/* Parse the file's text; -1 with a reason in e when it is not a registry. */
static struct registry *
registry_parse(const char *text, struct sbx_err *e)
{
	cJSON *o = cJSON_Parse(text), *arr, *it;
	struct registry *r;

	if (o == NULL) {
		sbx_error(e, SBX_EIO, NULL, "not valid JSON");
		return NULL;
	}
	arr = cJSON_GetObjectItemCaseSensitive(o, "sandboxes");
	if (!cJSON_IsObject(o) || !cJSON_IsArray(arr)) {
		cJSON_Delete(o);
		sbx_error(e, SBX_EIO, NULL, "no \"sandboxes\" array");
		return NULL;
	}
	r = registry_empty();
	cJSON_ArrayForEach(it, arr) {
		struct sandbox *s = sandbox_from_json(it, e);
		if (s == NULL) {
			registry_free(r);
			cJSON_Delete(o);
			return NULL;
		}
		registry_put(r, s);
	}
	cJSON_Delete(o);
	return r;
}

/* Unlock, then close: a copy of the descriptor that a fork elsewhere in
 * this process made would otherwise keep the lock until that child ends. */
static void
lock_release(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		flock(*fd, LOCK_UN);
		close(*fd);
		*fd = -1;
		errno = saved;
	}
}
#define _cleanup_lock_ __attribute__((cleanup(lock_release)))

/* Open (creating) the lock file and take the lock. */
static int
lock_open(int how, struct sbx_err *e)
{
	_cleanup_free_ char *dir = paths_ensure(PATHS_STATE, e);
	_cleanup_free_ char *p = NULL;
	int fd;

	if (dir == NULL)
		return -1;
	p = xasprintf("%s/sandboxes.lock", dir);
	if ((fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot open %s", p);
	while (flock(fd, how) < 0) {
		if (errno != EINTR) {
			sbx_error_errno(e, SBX_EIO, NULL, "cannot lock %s", p);
			close(fd);
			return -1;
		}
	}
	return fd;
}

/* Read the file.  *corrupt is set (and NULL returned) when it exists but does not
 * parse; reason in e. */
static struct registry *
registry_read(const char *path, int *corrupt, struct sbx_err *e)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	struct registry *r;

	*corrupt = 0;
	if ((text = read_file(path, REGISTRY_MAX, &len)) == NULL) {
		if (errno == ENOENT)
			return registry_empty();
		if (errno == EFBIG) {
			*corrupt = 1;
			sbx_error(e, SBX_EIO, NULL, "larger than %u bytes", REGISTRY_MAX);
			return NULL;
		}
		sbx_error_errno(e, SBX_EIO, NULL, "cannot read %s", path);
		return NULL;
	}
	/* Every write renames a whole file in: an empty one was cut short. */
	if (len == 0) {
		*corrupt = 1;
		sbx_error(e, SBX_EIO, NULL, "empty");
		return NULL;
	}
	if (strlen(text) != len) {
		*corrupt = 1;
		sbx_error(e, SBX_EIO, NULL, "holds a NUL byte");
		return NULL;
	}
	if ((r = registry_parse(text, e)) == NULL)
		*corrupt = 1;
	return r;
}

/* Under the exclusive lock: move a corrupt file aside, loudly. */
static int
set_aside(const char *path, const char *why, struct sbx_err *e)
{
	_cleanup_free_ char *aside = NULL;
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	aside = xasprintf("%s.corrupt-%lld.%09ld", path, (long long)ts.tv_sec, ts.tv_nsec);
	if (rename(path, aside) < 0)
		return sbx_error_errno(e, SBX_EIO, "move it away by hand",
		    "the registry %s is corrupt (%s) and cannot be set aside", path, why);
	log_warnx("the registry %s was corrupt (%s): it is kept as %s and sbxtop starts "
	    "with an empty registry; sandboxes it listed may still run (`sbxtop gc` "
	    "cleans up after them)", path, why, aside);
	return 0;
}

/* Read under the exclusive lock, setting a corrupt file aside. */
static struct registry *
read_locked(const char *path, struct sbx_err *e)
{
	struct registry *r;
	int corrupt;

	r = registry_read(path, &corrupt, e);
	if (r == NULL && corrupt) {
		char why[sizeof e->msg];
		snprintf(why, sizeof why, "%s", e->msg);
		if (set_aside(path, why, e) < 0)
			return NULL;
		r = registry_empty();
	}
	return r;
}

struct registry *
registry_load(struct sbx_err *e)
{
	_cleanup_free_ char *path = registry_path(e);
	_cleanup_lock_ int fd = -1;
	struct registry *r;
	int corrupt;

	if (path == NULL || (fd = lock_open(LOCK_SH, e)) < 0)
		return NULL;
	r = registry_read(path, &corrupt, e);
	if (r != NULL || !corrupt)
		return r;
	/* Corrupt: only an exclusive holder may move it, and it may have been fixed
	 * by a writer between our locks. */
	lock_release(&fd);
	if ((fd = lock_open(LOCK_EX, e)) < 0)
		return NULL;
	return read_locked(path, e);
}

static int
registry_write(const struct registry *r, const char *path, struct sbx_err *e)
{
	_cleanup_free_ char *tmp = xasprintf("%s.tmp-%d", path, (int)getpid());
	_cleanup_free_ char *dir = xstrdup(path);
	_cleanup_free_ char *text = NULL;
	_cleanup_close_ int fd = -1, dfd = -1;
	cJSON *o = cJSON_CreateObject(), *arr;
	int durable = 0;

	cJSON_AddNumberToObject(o, "version", REGISTRY_VERSION);
	arr = cJSON_AddArrayToObject(o, "sandboxes");
	for (size_t i = 0; i < r->n; i++) {
		const struct backend *b = backend_find(r->v[i]->backend ? r->v[i]->backend : "");
		cJSON_AddItemToArray(arr, sandbox_to_json(r->v[i], 1));
		durable |= b == NULL || !b->host_bound;
	}
	text = cJSON_Print(o);
	cJSON_Delete(o);
	if (text == NULL)
		fatal("out of memory");

	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", tmp);
	/* A crash takes every sandbox of this machine with it: a registry of
	 * only those is not worth an fsync (3 to 8 ms of a create), since the
	 * version a crash might lose names nothing still running.  One with a
	 * sandbox elsewhere (ssh, lambda) is synced before the rename, and the
	 * rename after it. */
	if (write_line(fd, text, strlen(text)) < 0 ||
	    (durable && fsync(fd) < 0) || fault_point("registry.written", NULL) < 0) {
		sbx_error_errno(e, SBX_EIO, "check the free space of the state directory",
		    "cannot write %s", tmp);
		unlink(tmp);
		return -1;
	}
	/* A rename over the old file has ext4 allocate and start writing the
	 * new one's blocks first (auto_da_alloc: 0.7-0.9 ms a write, 4 at the
	 * 90th percentile); swapping the two names and removing the old one is
	 * as atomic for a reader and costs 0.2.  Synced, the plain rename. */
	if (!durable && renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_EXCHANGE) == 0) {
		(void)unlink(tmp);	/* the old version now */
		return 0;
	}
	if (rename(tmp, path) < 0) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot rename %s to %s", tmp, path);
		unlink(tmp);
		return -1;
	}
	/* The rename itself must survive a crash too. */
	*strrchr(dir, '/') = '\0';
	if (durable && (dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0)
		(void)fsync(dfd);
	return 0;
}

int
registry_tidy(struct sbx_err *e)
{
	_cleanup_free_ char *path = registry_path(e), *dir = NULL, *prefix = NULL;
	_cleanup_lock_ int fd = -1;
	struct dirent *de;
	DIR *d;
	int n = 0;

	/* A writer holds the exclusive lock while its temporary file exists: with
	 * the lock, any there is one a killed writer left. */
	if (path == NULL || (fd = lock_open(LOCK_EX, e)) < 0)
		return -1;
	dir = xstrdup(path);
	prefix = xasprintf("%s.tmp-", strrchr(path, '/') + 1);
	*strrchr(dir, '/') = '\0';
	if ((d = opendir(dir)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, prefix, strlen(prefix)) == 0 &&
		    unlinkat(dirfd(d), de->d_name, 0) == 0)
			n++;
	closedir(d);
	if (n > 0)
		log_info("removed %d temporary registr%s a killed writer left", n,
		    n == 1 ? "y" : "ies");
	return n;
}

int
registry_update(registry_txn_fn fn, void *arg, struct sbx_err *e)
{
	_cleanup_free_ char *path = registry_path(e);
	_cleanup_lock_ int fd = -1;
	struct registry *r;
	int rc;

	if (path == NULL || (fd = lock_open(LOCK_EX, e)) < 0)
		return -1;
	if ((r = read_locked(path, e)) == NULL)
		return -1;
	rc = fn(r, arg, e);
	if (rc >= 0 && registry_write(r, path, e) < 0)
		rc = -1;
	registry_free(r);
	return rc;
}

/* A whole-record store never changes the forwards: only core/core-forward.c's own
 * transactions do, so a resume or a reconcile that read the record earlier cannot
 * drop a forward added meanwhile (or bring back one stopped meanwhile). */
static int
txn_store(struct registry *r, void *arg, struct sbx_err *e)
{
	struct sandbox *s = sandbox_dup(arg), *old = registry_get(r, s->id);

	cJSON_Delete(s->forwards);
	s->forwards = old != NULL ? steal_pointer(&old->forwards) : NULL;
	registry_put(r, s);
	return 0;
}

int
registry_store(const struct sandbox *s, struct sbx_err *e)
{
	return registry_update(txn_store, (void *)s, e);
}

static int
txn_delete(struct registry *r, void *arg, struct sbx_err *e)
{
	registry_remove(r, arg);
	return 0;
}

int
registry_delete(const char *id, struct sbx_err *e)
{
	return registry_update(txn_delete, (void *)id, e);
}
