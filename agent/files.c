/* The file routes: read, write (atomic), list, stat, delete.  Every path is
 * resolved through agent/path.h, so nothing outside the sandbox root is reached;
 * walks below a directory use *at calls on descriptors and never follow symlinks. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/events.h"
#include "agent/files.h"
#include "agent/http.h"
#include "lib/b64.h"
#include "lib/err.h"
#include "lib/jspec.h"
#include "lib/utf8.h"
#include "lib/util.h"

#define READ_DEFAULT	(10 << 20)
#define READ_MAX	(64 << 20)
#define WRITE_BODY_MAX	(96u << 20)
#define LIST_DEFAULT	1000
#define LIST_MAX	100000
#define SYMLINK_HOPS	40

/* ---- shared helpers ---------------------------------------------------- */

int
files_mkdirs(const char *path, int include_self)
{
	_cleanup_free_ char *norm = path_normalize(agent.workspace, path);
	size_t len;

	if (norm == NULL)
		return -1;
	len = strlen(norm);
	for (size_t i = 1; i <= len; i++) {
		if (i < len ? norm[i] != '/' : !include_self)
			continue;
		char save = norm[i];
		norm[i] = '\0';
		int fd = path_open(norm, O_PATH | O_DIRECTORY, 0);
		if (fd >= 0) {
			close(fd);
		} else if (errno == ENOENT) {
			_cleanup_free_ char *name = NULL;
			_cleanup_close_ int pfd = path_open_parent(norm, &name);
			if (pfd < 0)
				return -1;
			if (mkdirat(pfd, name, 0755) == 0) {
				/* No link followed: a name swapped meanwhile is not chmod'ed. */
				_cleanup_close_ int dfd = openat(pfd, name, O_RDONLY | O_DIRECTORY |
				    O_NOFOLLOW | O_CLOEXEC);
				if (dfd < 0 || fchmod(dfd, 0755) < 0)
					return -1;
			} else if (errno != EEXIST) {
				return -1;
			}
		} else {
			return -1;
		}
		norm[i] = save;
	}
	return 0;
}

struct walk {
	walk_fn		 pre, post;
	void		*arg;
	char		 path[PATH_MAX_LEN + 1];
	size_t		 len;
};

const char *
files_walk_path(const struct walk *w)
{
	return w->path;
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char **
files_names(int fd, int hidden, size_t *count)
{
	int dfd = dup(fd);
	DIR *d;
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, cap = 0;

	if (dfd < 0)
		return NULL;
	if ((d = fdopendir(dfd)) == NULL) {
		close(dfd);
		return NULL;
	}
	rewinddir(d);
	errno = 0;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    (!hidden && de->d_name[0] == '.'))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 32;
			names = xrealloc(names, cap * sizeof *names);
		}
		names[n++] = xstrdup(de->d_name);
	}
	closedir(d);
	if (n > 1)
		qsort(names, n, sizeof *names, name_cmp);
	*count = n;
	return names ? names : xcalloc(1, sizeof *names);
}

void
files_names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* Returns 0, WALK_STOP, or -1 (w->path then names the failing entry). */
static int
walk_dir(struct walk *w, int fd, int depth)
{
	size_t n = 0, base = w->len;
	char **names = files_names(fd, 1, &n);
	int rc = 0;

	if (names == NULL)
		return -1;
	for (size_t i = 0; i < n && rc == 0; i++) {
		const char *name = names[i];
		size_t nl = strlen(name);
		struct stat st;

		if (base + 1 + nl > PATH_MAX_LEN) {
			errno = ENAMETOOLONG;
			rc = -1;
			break;
		}
		w->len = base;
		if (base > 0)
			w->path[w->len++] = '/';
		memcpy(w->path + w->len, name, nl + 1);
		w->len += nl;
		if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)	/* gone while we walked */
				continue;
			rc = -1;
			break;
		}
		int act = w->pre(w, fd, name, &st, depth, w->arg);
		if (act < 0 || act == WALK_STOP) {
			rc = act;
			break;
		}
		if (act != WALK_GO || !S_ISDIR(st.st_mode))
			continue;
		if (depth + 1 >= WALK_MAX_DEPTH) {
			errno = ELOOP;
			rc = -1;
			break;
		}
		int cfd = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0) {
			rc = -1;
			break;
		}
		rc = walk_dir(w, cfd, depth + 1);
		close(cfd);
		if (rc != 0)
			break;
		/* walk_dir moved w->path on; point it back at this directory */
		w->len = base + (base > 0) + nl;
		w->path[w->len] = '\0';
		if (w->post != NULL && (rc = w->post(w, fd, name, &st, depth, w->arg)) > 0)
			rc = rc == WALK_STOP ? WALK_STOP : 0;
	}
	if (rc == 0) {
		w->len = base;
		w->path[base] = '\0';
	}
	files_names_free(names, n);
	return rc;
}

int
files_walk(int dirfd, walk_fn pre, walk_fn post, void *arg, char *failed_at,
    size_t failed_len)
{
	struct walk *w = xcalloc(1, sizeof *w);
	int rc, saved;

	w->pre = pre;
	w->post = post;
	w->arg = arg;
	rc = walk_dir(w, dirfd, 0);
	saved = errno;
	if (rc < 0 && failed_at != NULL)
		snprintf(failed_at, failed_len, "%s", w->path);
	free(w);
	errno = saved;
	return rc < 0 ? -1 : 0;
}

/* ---- route helpers ----------------------------------------------------- */

/* Answer a failed system call on path with the status that fits errno. */
static enum http_rc
reply_errno(struct req *r, const char *path, const char *what, int err)
{
	switch (err) {
	case ENOENT:
		return http_error(r, HTTP_STATUS_NOT_FOUND, "not_found", "%s does not exist", path);
	case ENOTDIR:
		return http_error(r, HTTP_STATUS_NOT_FOUND, "not_found",
		    "%s does not exist (a component on the way is not a directory)", path);
	case EACCES:
	case EPERM:
		return http_error(r, HTTP_STATUS_FORBIDDEN, "forbidden",
		    "cannot %s %s: permission denied", what, path);
	case ELOOP:
		return http_bad_request(r, "cannot %s %s: too many levels of symbolic links "
		    "(or too deep a tree)", what, path);
	case ENAMETOOLONG:
	case EINVAL:
		return http_bad_request(r, "field 'path' is not usable: %s (non-empty, at most "
		    "%d bytes, names at most 255)", path, PATH_MAX_LEN);
	case EISDIR:
		return http_error(r, HTTP_STATUS_BAD_REQUEST, sbx_reason_name(SBX_R_IS_DIR),
		    "%s is a directory", path);
	case EROFS:
		return http_error(r, HTTP_STATUS_FORBIDDEN, "read_only",
		    "cannot %s %s: read-only file system", what, path);
	case ENOSPC:
	case EDQUOT:
		return http_error(r, HTTP_STATUS_INSUFFICIENT_STORAGE, "no_space",
		    "cannot %s %s: no space left; free some and retry", what, path);
	default:
		return http_error(r, HTTP_STATUS_INTERNAL_SERVER_ERROR, "internal",
		    "cannot %s %s: %s", what, path, strerror(err));
	}
}

/* Validate the body against spec and normalize its 'path' (def when absent).
 * NULL after answering 400. */
static char *
body_path(struct req *r, const struct jfield *spec, const char *def)
{
	char msg[256];
	const char *p;
	char *norm;

	if (jspec_check(r->json, spec, msg, sizeof msg) < 0) {
		http_bad_request(r, "%s", msg);
		return NULL;
	}
	p = jstr(r->json, "path", def);
	if ((norm = path_normalize(agent.workspace, p)) == NULL)
		http_bad_request(r, "field 'path' must be a non-empty path of at most %d bytes",
		    PATH_MAX_LEN);
	return norm;
}

static char *
join_path(const char *dir, const char *rel)
{
	if (rel[0] == '\0')
		return xstrdup(dir);
	return xasprintf("%s/%s", strcmp(dir, "/") == 0 ? "" : dir, rel);
}

static const char *
type_name(mode_t m)
{
	if (S_ISREG(m))
		return "file";
	if (S_ISDIR(m))
		return "dir";
	if (S_ISLNK(m))
		return "symlink";
	return "other";
}

cJSON *
files_entry_json(const char *path, const char *name, const struct stat *st, int dfd)
{
	cJSON *o = cJSON_CreateObject();

	jadd_name(o, "path", path);
	jadd_name(o, "name", name);
	cJSON_AddStringToObject(o, "type", type_name(st->st_mode));
	cJSON_AddNumberToObject(o, "size", (double)st->st_size);
	cJSON_AddNumberToObject(o, "mode", (double)(st->st_mode & 07777));
	cJSON_AddNumberToObject(o, "mtime_ms",
	    (double)st->st_mtim.tv_sec * 1000 + (double)(st->st_mtim.tv_nsec / 1000000));
	if (S_ISLNK(st->st_mode)) {
		char target[PATH_MAX_LEN + 1];
		ssize_t n = readlinkat(dfd, name, target, sizeof target - 1);
		target[n > 0 ? n : 0] = '\0';
		jadd_name(o, "target", target);
	}
	return o;
}

/* ---- read -------------------------------------------------------------- */

static const struct jfield read_spec[] = {
	{ "path", J_STRING, 1, 0, 0 },
	{ "encoding", J_STRING, 0, 0, 0 },
	{ "max_bytes", J_INT, 0, 0, READ_MAX },
	{ "offset", J_INT, 0, 0, INT64_MAX },
	{ NULL, 0, 0, 0, 0 }
};

static enum http_rc
files_read(struct req *r)
{
	_cleanup_free_ char *norm = body_path(r, read_spec, NULL);
	_cleanup_free_ char *data = NULL;
	_cleanup_close_ int fd = -1;
	const char *enc;
	size_t max, len = 0, cap, skip = 0;
	struct stat st;
	int64_t offset;
	int truncated = 0;
	cJSON *o;

	if (norm == NULL)
		return HTTP_DONE;
	enc = jstr(r->json, "encoding", NULL);
	if (enc != NULL && strcmp(enc, "utf-8") != 0 && strcmp(enc, "base64") != 0)
		return http_bad_request(r, "field 'encoding' must be \"utf-8\" or \"base64\"");
	max = (size_t)jint(r->json, "max_bytes", READ_DEFAULT);
	offset = jint(r->json, "offset", 0);
	/* O_NONBLOCK: a FIFO must not hang the open; it is refused below anyway. */
	if ((fd = path_open(norm, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0)) < 0)
		return reply_errno(r, norm, "read", errno);
	if (fstat(fd, &st) < 0)
		return reply_errno(r, norm, "read", errno);
	if (S_ISDIR(st.st_mode))
		return http_error(r, HTTP_STATUS_BAD_REQUEST, sbx_reason_name(SBX_R_IS_DIR),
		    "%s is a directory (use /v1/files/list)", norm);
	if (!S_ISREG(st.st_mode))
		return http_bad_request(r, "%s is not a regular file", norm);

	if (offset > 0 && lseek(fd, (off_t)offset, SEEK_SET) < 0)
		return reply_errno(r, norm, "read", errno);
	/* Files in /proc say size 0: read until EOF or max, whatever st_size says. */
	cap = st.st_size > offset && (size_t)(st.st_size - offset) < max ?
	    (size_t)(st.st_size - offset) : max;
	data = xmalloc(cap + 1);
	for (;;) {
		if (len == cap) {
			if (cap >= max) {
				char c;
				ssize_t k = read(fd, &c, 1);
				truncated = k > 0;
				break;
			}
			cap = cap * 2 + 4096 < max ? cap * 2 + 4096 : max;
			data = xrealloc(data, cap + 1);
		}
		ssize_t k = read(fd, data + len, cap - len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return reply_errno(r, norm, "read", errno);
		if (k == 0)
			break;
		len += (size_t)k;
	}
	data[len] = '\0';

	/* Text goes out as a JSON string, which cannot hold NUL: text means valid UTF-8
	 * without NUL.  A cut at max_bytes may split a character: drop its start; an
	 * offset inside a character starts at the next one, unless base64 was asked. */
	if (offset > 0 && (enc == NULL || strcmp(enc, "utf-8") == 0))
		while (skip < len && skip < 3 && ((unsigned char)data[skip] & 0xc0) == 0x80)
			skip++;
	size_t tlen = truncated ? utf8_complete_prefix(data + skip, len - skip) + skip : len;
	int text = utf8_valid(data + skip, tlen - skip) &&
	    memchr(data + skip, '\0', tlen - skip) == NULL;
	if (enc == NULL)
		enc = text ? "utf-8" : "base64";
	if (strcmp(enc, "utf-8") == 0 && !text)
		return http_error(r, HTTP_STATUS_BAD_REQUEST, sbx_reason_name(SBX_R_NOT_TEXT),
		    "%s is not valid UTF-8 text (or holds NUL bytes): "
		    "ask for \"encoding\": \"base64\"", norm);

	if (strcmp(enc, "utf-8") != 0) {
		skip = 0;
		tlen = len;
	}
	o = cJSON_CreateObject();
	jadd_name(o, "path", norm);
	if (strcmp(enc, "utf-8") == 0) {
		data[tlen] = '\0';
		cJSON_AddStringToObject(o, "content", data + skip);
	} else {
		_cleanup_free_ char *b = b64_encode(data, len);
		cJSON_AddStringToObject(o, "content", b);
	}
	cJSON_AddStringToObject(o, "encoding", enc);
	cJSON_AddNumberToObject(o, "size", (double)st.st_size);
	cJSON_AddBoolToObject(o, "truncated", truncated || tlen < len);
	/* Which bytes of the file the content is. */
	cJSON_AddNumberToObject(o, "offset", (double)(offset + (int64_t)skip));
	cJSON_AddNumberToObject(o, "length", (double)(tlen - skip));
	return http_json(r, HTTP_STATUS_OK, o);
}

/* ---- write ------------------------------------------------------------- */

static const struct jfield write_spec[] = {
	{ "path", J_STRING, 1, 0, 0 },
	{ "content", J_STRING, 1, 0, 0 },
	{ "encoding", J_STRING, 0, 0, 0 },
	{ "mode", J_INT, 0, 0, 07777 },
	{ "create_parents", J_BOOL, 0, 0, 0 },
	{ "append", J_BOOL, 0, 0, 0 },
	{ "as_root", J_BOOL, 0, 0, 0 },
	{ NULL, 0, 0, 0, 0 }
};

/* The sandbox path of the directory open on dfd, found through /proc and the
 * root's real path; the lexical parent of fallback when that fails. */
static char *
dir_sandbox_path(int dfd, const char *fallback)
{
	char link[64], host[PATH_MAX + 1];
	_cleanup_free_ char *root = realpath(agent.root, NULL);
	ssize_t n;

	snprintf(link, sizeof link, "/proc/self/fd/%d", dfd);
	n = readlink(link, host, sizeof host - 1);
	if (root != NULL && n > 0) {
		size_t rl = strcmp(root, "/") == 0 ? 0 : strlen(root);
		host[n] = '\0';
		if (strncmp(host, root, rl) == 0 && (host[rl] == '/' || host[rl] == '\0'))
			return xstrdup(host[rl] ? host + rl : "/");
	}
	char *d = xstrdup(fallback), *s = strrchr(d, '/');
	if (s == d)
		s[1] = '\0';
	else if (s != NULL)
		*s = '\0';
	return d;
}

/* The directory holding the file a write to norm replaces, and that file's name in
 * *name.  A symlink in the last component is followed (inside the root), so that
 * writing through a link changes its target, as for any program in the sandbox. */
static int
open_write_target(const char *norm, char **name, int create_parents)
{
	_cleanup_free_ char *cur = xstrdup(norm);

	for (int hop = 0; hop <= SYMLINK_HOPS; hop++) {
		_cleanup_free_ char *nm = NULL, *next = NULL;
		char target[PATH_MAX_LEN + 1];
		struct stat st;
		int dfd = path_open_parent(cur, &nm);

		if (dfd < 0 && errno == ENOENT && hop > 0 && create_parents) {
			if (files_mkdirs(cur, 0) < 0)
				return -1;
			dfd = path_open_parent(cur, &nm);
		}
		if (dfd < 0)
			return -1;
		if (fstatat(dfd, nm, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISLNK(st.st_mode)) {
			*name = steal_pointer(&nm);
			return dfd;
		}
		ssize_t n = readlinkat(dfd, nm, target, sizeof target - 1);
		if (n <= 0) {
			close(dfd);
			errno = n == 0 ? ENOENT : errno;
			return -1;
		}
		target[n] = '\0';
		if (target[0] == '/') {
			next = xstrdup(target);
		} else {
			_cleanup_free_ char *dir = dir_sandbox_path(dfd, cur);
			next = join_path(dir, target);
		}
		close(dfd);
		free(cur);
		if ((cur = path_normalize("/", next)) == NULL)
			return -1;
	}
	errno = ELOOP;
	return -1;
}

/* Write data to a new temporary file beside name, then rename it over name: a
 * reader sees the old content or the new, never a part. */
static int
write_atomic(int dfd, const char *name, const void *data, size_t n, mode_t mode)
{
	static unsigned counter;
	char tmp[NAME_MAX + 1];
	int fd = -1, saved;

	for (int i = 0; i < 100 && fd < 0; i++) {
		snprintf(tmp, sizeof tmp, ".%.200s.sbx-%d-%u", name, (int)getpid(),
		    __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED));
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 && errno != EEXIST)
			return -1;
	}
	if (fd < 0)
		return -1;
	if (write_all(fd, data, n) < 0 || fchmod(fd, mode) < 0 || close(fd) < 0) {
		saved = errno;
		close(fd);
		goto fail;
	}
	if (renameat(dfd, tmp, dfd, name) < 0) {
		saved = errno;
		goto fail;
	}
	return 0;
fail:
	unlinkat(dfd, tmp, 0);
	errno = saved;
	return -1;
}

/* Append to name (created when missing); *size is the file's size after. */
static int
write_append(int dfd, const char *name, const void *data, size_t n, int mode,
    off_t *size)
{
	_cleanup_close_ int fd = openat(dfd, name, O_WRONLY | O_APPEND | O_NOFOLLOW |
	    O_NONBLOCK | O_CLOEXEC);
	struct stat st;

	if (fd < 0 && errno == ENOENT) {
		fd = openat(dfd, name, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
		if (fd < 0)
			return -1;
		if (mode < 0)
			mode = 0644;
	}
	if (fd < 0)
		return -1;
	if (mode >= 0 && fchmod(fd, (mode_t)mode) < 0)
		return -1;
	if (write_all(fd, data, n) < 0 || fstat(fd, &st) < 0)
		return -1;
	*size = st.st_size;
	return 0;
}

static enum http_rc
files_write(struct req *r)
{
	_cleanup_free_ char *norm = body_path(r, write_spec, NULL);
	_cleanup_free_ unsigned char *decoded = NULL;
	_cleanup_free_ char *name = NULL;
	_cleanup_close_ int dfd = -1;
	_cleanup_act_ struct agent_act act = { 0 };
	const char *enc, *content;
	const void *data;
	size_t n;
	int mode, create_parents, append, exists;
	off_t size;
	struct stat st;

	if (norm == NULL)
		return HTTP_DONE;
	content = jstr(r->json, "content", "");
	enc = jstr(r->json, "encoding", "utf-8");
	if (strcmp(enc, "utf-8") == 0) {
		data = content;
		n = strlen(content);
	} else if (strcmp(enc, "base64") == 0) {
		if ((decoded = b64_decode(content, strlen(content), &n)) == NULL)
			return http_error(r, HTTP_STATUS_BAD_REQUEST, sbx_reason_name(SBX_R_BAD_BASE64),
			    "field 'content' is not valid base64 "
			    "(standard alphabet, padded, no whitespace)");
		data = decoded;
	} else {
		return http_bad_request(r, "field 'encoding' must be \"utf-8\" or \"base64\"");
	}
	mode = (int)jint(r->json, "mode", -1);
	create_parents = jbool(r->json, "create_parents", 1);
	append = jbool(r->json, "append", 0);
	if (strcmp(norm, "/") == 0)
		return http_error(r, HTTP_STATUS_BAD_REQUEST, sbx_reason_name(SBX_R_IS_DIR),
		    "/ is a directory");
	/* From here on, as whoever the call is. */
	if (agent_act_as(jbool(r->json, "as_root", 0), &act) < 0)
		return reply_errno(r, norm, "act as the sandbox's user for", errno);

	if (create_parents && files_mkdirs(norm, 0) < 0) {
		if (errno == ENOTDIR || errno == EEXIST)
			return http_error(r, HTTP_STATUS_CONFLICT, "conflict",
			    "cannot create the directories leading to %s: one of them is a file", norm);
		return reply_errno(r, norm, "create the parents of", errno);
	}
	if ((dfd = open_write_target(norm, &name, create_parents)) < 0) {
		if (errno == ENOENT && !create_parents)
			return http_error(r, HTTP_STATUS_NOT_FOUND, "not_found",
			    "the directory holding %s does not exist (pass create_parents: true)", norm);
		return reply_errno(r, norm, "write", errno);
	}
	exists = fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (exists && S_ISDIR(st.st_mode))
		return http_error(r, HTTP_STATUS_BAD_REQUEST, sbx_reason_name(SBX_R_IS_DIR),
		    "%s is a directory", norm);
	if (exists && !S_ISREG(st.st_mode))
		return http_bad_request(r, "%s is not a regular file", norm);

	if (append) {
		if (write_append(dfd, name, data, n, mode, &size) < 0)
			return reply_errno(r, norm, "append to", errno);
	} else {
		/* A replaced file keeps its mode unless one is given. */
		mode_t m = mode >= 0 ? (mode_t)mode : exists ? st.st_mode & 07777 : 0644;
		if (write_atomic(dfd, name, data, n, m) < 0)
			return reply_errno(r, norm, "write", errno);
		size = (off_t)n;
	}

	cJSON *ev = cJSON_CreateObject();
	jadd_name(ev, "path", norm);
	cJSON_AddNumberToObject(ev, "size", (double)size);
	events_emit("file.written", ev);

	cJSON *o = cJSON_CreateObject();
	jadd_name(o, "path", norm);
	cJSON_AddNumberToObject(o, "size", (double)size);
	return http_json(r, HTTP_STATUS_OK, o);
}

/* ---- list -------------------------------------------------------------- */

static const struct jfield list_spec[] = {
	{ "path", J_STRING, 0, 0, 0 },
	{ "recursive", J_BOOL, 0, 0, 0 },
	{ "hidden", J_BOOL, 0, 0, 0 },
	{ "max_entries", J_INT, 0, 0, LIST_MAX },
	{ "order", J_STRING, 0, 0, 0 },
	{ "offset", J_INT, 0, 0, INT64_MAX },
	{ "fold", J_INT, 0, 0, INT64_MAX },
	{ "fold_names", J_STRLIST, 0, 0, 0 },
	{ NULL, 0, 0, 0, 0 }
};

struct list_ctx {
	const char	*base;
	cJSON		*entries;
	int		 recursive, hidden, truncated;
	int64_t		 count, max;
};

static int
list_entry(struct walk *w, int dfd, const char *name, const struct stat *st, int depth,
    void *arg)
{
	struct list_ctx *lc = arg;

	if (!lc->hidden && name[0] == '.')
		return WALK_PRUNE;
	if (lc->count >= lc->max) {
		lc->truncated = 1;
		return WALK_STOP;
	}
	_cleanup_free_ char *p = join_path(lc->base, files_walk_path(w));
	cJSON_AddItemToArray(lc->entries, files_entry_json(p, name, st, dfd));
	lc->count++;
	if (!lc->recursive)
		return WALK_PRUNE;
	if (S_ISDIR(st->st_mode) && depth + 1 >= WALK_MAX_DEPTH) {
		lc->truncated = 1;
		return WALK_PRUNE;
	}
	return WALK_GO;
}

static enum http_rc
files_list(struct req *r)
{
	_cleanup_free_ char *norm = body_path(r, list_spec, ".");
	_cleanup_close_ int fd = -1;
	struct list_ctx lc = { 0 };
	char failed[PATH_MAX_LEN + 1];
	const char *order;

	if (norm == NULL)
		return HTTP_DONE;
	if ((fd = path_open(norm, O_RDONLY | O_DIRECTORY, 0)) < 0) {
		if (errno == ENOTDIR) {
			struct stat st;
			int f = path_open(norm, O_PATH, 0);
			int isdir = f >= 0 && fstat(f, &st) == 0 && S_ISDIR(st.st_mode);
			if (f >= 0)
				close(f);
			if (f >= 0 && !isdir)
				return http_error(r, HTTP_STATUS_BAD_REQUEST,
				    sbx_reason_name(SBX_R_NOT_DIR),
				    "%s is not a directory (use /v1/files/stat)", norm);
		}
		return reply_errno(r, norm, "list", errno);
	}
	order = jstr(r->json, "order", "depth");
	if (strcmp(order, "breadth") == 0) {
		const cJSON *fn = cJSON_GetObjectItemCaseSensitive(r->json, "fold_names"), *it;
		size_t n = 0;
		_cleanup_free_ const char **names = xcalloc((size_t)cJSON_GetArraySize(fn) + 1,
		    sizeof *names);
		struct files_list_opts o = {
			.base = norm, .recursive = jbool(r->json, "recursive", 0),
			.hidden = jbool(r->json, "hidden", 0), .offset = jint(r->json, "offset", 0),
			.max = jint(r->json, "max_entries", LIST_DEFAULT),
			.fold = jint(r->json, "fold", 0), .fold_names = names,
		};
		cJSON *o_json;

		cJSON_ArrayForEach(it, fn)
			names[n++] = it->valuestring;
		if (files_list_breadth(fd, &o, &o_json) < 0)
			return reply_errno(r, norm, "list", errno);
		jadd_name(o_json, "path", norm);
		return http_json(r, HTTP_STATUS_OK, o_json);
	}
	if (strcmp(order, "depth") != 0)
		return http_bad_request(r, "field 'order' must be \"depth\" or \"breadth\"");
	if (jint(r->json, "offset", 0) != 0 || cJSON_HasObjectItem(r->json, "fold") ||
	    cJSON_HasObjectItem(r->json, "fold_names"))
		return http_bad_request(r, "fields 'offset', 'fold' and 'fold_names' go with "
		    "\"order\": \"breadth\"");
	lc.base = norm;
	lc.entries = cJSON_CreateArray();
	lc.recursive = jbool(r->json, "recursive", 0);
	lc.hidden = jbool(r->json, "hidden", 0);
	lc.max = jint(r->json, "max_entries", LIST_DEFAULT);
	if (files_walk(fd, list_entry, NULL, &lc, failed, sizeof failed) < 0) {
		int err = errno;
		_cleanup_free_ char *p = join_path(norm, failed);
		cJSON_Delete(lc.entries);
		return reply_errno(r, p, "list", err);
	}
	cJSON *o = cJSON_CreateObject();
	jadd_name(o, "path", norm);
	cJSON_AddItemToObject(o, "entries", lc.entries);
	cJSON_AddBoolToObject(o, "truncated", lc.truncated);
	return http_json(r, HTTP_STATUS_OK, o);
}

/* ---- stat -------------------------------------------------------------- */

static const struct jfield stat_spec[] = {
	{ "path", J_STRING, 1, 0, 0 },
	{ NULL, 0, 0, 0, 0 }
};

static enum http_rc
files_stat(struct req *r)
{
	_cleanup_free_ char *norm = body_path(r, stat_spec, NULL);
	_cleanup_free_ char *name = NULL;
	_cleanup_close_ int dfd = -1;
	struct stat st;
	cJSON *o;

	if (norm == NULL)
		return HTTP_DONE;
	if (strcmp(norm, "/") == 0) {
		if ((dfd = path_open("/", O_PATH | O_DIRECTORY, 0)) < 0 || fstat(dfd, &st) < 0)
			return reply_errno(r, norm, "stat", errno);
		o = files_entry_json("/", "/", &st, dfd);
	} else {
		dfd = path_open_parent(norm, &name);
		if (dfd < 0 && errno != ENOENT && errno != ENOTDIR)
			return reply_errno(r, norm, "stat", errno);
		if (dfd < 0 || fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (dfd >= 0 && errno != ENOENT && errno != ENOTDIR)
				return reply_errno(r, norm, "stat", errno);
			o = cJSON_CreateObject();
			jadd_name(o, "path", norm);
			cJSON_AddBoolToObject(o, "exists", 0);
			return http_json(r, HTTP_STATUS_OK, o);
		}
		o = files_entry_json(norm, name, &st, dfd);
	}
	cJSON_AddBoolToObject(o, "exists", 1);
	return http_json(r, HTTP_STATUS_OK, o);
}

/* ---- delete ------------------------------------------------------------ */

static const struct jfield delete_spec[] = {
	{ "path", J_STRING, 1, 0, 0 },
	{ "recursive", J_BOOL, 0, 0, 0 },
	{ "as_root", J_BOOL, 0, 0, 0 },
	{ NULL, 0, 0, 0, 0 }
};

static int
same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Why st must not be deleted: it is the root, the workspace, or a directory that
 * holds the workspace (found by walking up from the workspace with ".."); NULL
 * when it may go. */
static const char *
protected_reason(const struct stat *st)
{
	struct stat root, cur, prev = { 0 };
	int fd = path_open("/", O_PATH | O_DIRECTORY, 0);

	if (fd < 0 || fstat(fd, &root) < 0) {
		if (fd >= 0)
			close(fd);
		return "the sandbox root cannot be examined";
	}
	close(fd);
	if (same_file(st, &root))
		return "it is the sandbox root";
	if (!S_ISDIR(st->st_mode))
		return NULL;
	if ((fd = path_open(agent.workspace, O_PATH | O_DIRECTORY, 0)) < 0)
		return NULL;			/* no workspace to protect */
	const char *why = NULL;
	for (int i = 0; i < PATH_MAX_LEN / 2 && fstat(fd, &cur) == 0; i++) {
		if (same_file(&cur, st)) {
			why = i == 0 ? "it is the workspace" : "it holds the workspace";
			break;
		}
		if (same_file(&cur, &root) || (i > 0 && same_file(&cur, &prev)))
			break;
		prev = cur;
		int up = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		close(fd);
		if ((fd = up) < 0)
			break;
	}
	if (fd >= 0)
		close(fd);
	return why;
}

struct delete_ctx {
	dev_t	dev;
	long	count;
};

static int
delete_entry(struct walk *w, int dfd, const char *name, const struct stat *st, int depth,
    void *arg)
{
	struct delete_ctx *dc = arg;

	if (S_ISDIR(st->st_mode)) {
		if (st->st_dev != dc->dev) {
			errno = EXDEV;		/* a mount point: not ours to empty */
			return -1;
		}
		return WALK_GO;
	}
	if (unlinkat(dfd, name, 0) < 0)
		return errno == ENOENT ? WALK_PRUNE : -1;
	dc->count++;
	return WALK_PRUNE;
}

static int
delete_dir_after(struct walk *w, int dfd, const char *name, const struct stat *st,
    int depth, void *arg)
{
	struct delete_ctx *dc = arg;

	if (unlinkat(dfd, name, AT_REMOVEDIR) < 0)
		return errno == ENOENT ? 0 : -1;
	dc->count++;
	return 0;
}

static enum http_rc
files_delete(struct req *r)
{
	_cleanup_free_ char *norm = body_path(r, delete_spec, NULL);
	_cleanup_free_ char *name = NULL;
	_cleanup_close_ int dfd = -1;
	_cleanup_act_ struct agent_act act = { 0 };
	struct delete_ctx dc = { 0 };
	struct stat st;
	const char *why;

	if (norm == NULL)
		return HTTP_DONE;
	if (strcmp(norm, "/") == 0)
		return http_bad_request(r, "refusing to delete /: it is the sandbox root");
	if (agent_act_as(jbool(r->json, "as_root", 0), &act) < 0)
		return reply_errno(r, norm, "act as the sandbox's user for", errno);
	if ((dfd = path_open_parent(norm, &name)) < 0)
		return reply_errno(r, norm, "delete", errno);
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return reply_errno(r, norm, "delete", errno);
	if ((why = protected_reason(&st)) != NULL)
		return http_bad_request(r, "refusing to delete %s: %s", norm, why);

	if (!S_ISDIR(st.st_mode)) {
		if (unlinkat(dfd, name, 0) < 0)
			return reply_errno(r, norm, "delete", errno);
		dc.count = 1;
	} else if (!jbool(r->json, "recursive", 0)) {
		if (unlinkat(dfd, name, AT_REMOVEDIR) < 0) {
			if (errno == ENOTEMPTY || errno == EEXIST)
				return http_error(r, HTTP_STATUS_CONFLICT, "not_empty",
				    "%s is a directory that is not empty: pass \"recursive\": true "
				    "to delete it with its contents", norm);
			return reply_errno(r, norm, "delete", errno);
		}
		dc.count = 1;
	} else {
		char failed[PATH_MAX_LEN + 1];
		_cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		if (fd < 0)
			return reply_errno(r, norm, "delete", errno);
		dc.dev = st.st_dev;
		if (files_walk(fd, delete_entry, delete_dir_after, &dc, failed, sizeof failed) < 0) {
			int err = errno;
			_cleanup_free_ char *p = join_path(norm, failed);
			if (err == EXDEV)
				return http_error(r, HTTP_STATUS_CONFLICT, "mount_point",
				    "stopped at %s: it is a mount point (%ld entries deleted before)",
				    p, dc.count);
			return reply_errno(r, p, "delete", err);
		}
		if (unlinkat(dfd, name, AT_REMOVEDIR) < 0)
			return reply_errno(r, norm, "delete", errno);
		dc.count++;
	}

	cJSON *ev = cJSON_CreateObject();
	jadd_name(ev, "path", norm);
	events_emit("file.deleted", ev);

	cJSON *o = cJSON_CreateObject();
	jadd_name(o, "path", norm);
	cJSON_AddNumberToObject(o, "deleted", (double)dc.count);
	return http_json(r, HTTP_STATUS_OK, o);
}

const struct route files_routes[] = {
	{ "POST", "/v1/files/read", ROUTE_JSON, files_read, NULL, 0 },
	{ "POST", "/v1/files/write", ROUTE_JSON, files_write, NULL, WRITE_BODY_MAX },
	{ "POST", "/v1/files/list", ROUTE_JSON, files_list, NULL, 0 },
	{ "POST", "/v1/files/stat", ROUTE_JSON, files_stat, NULL, 0 },
	{ "POST", "/v1/files/delete", ROUTE_JSON, files_delete, NULL, 0 },
	{ NULL, NULL, 0, NULL, NULL, 0 }
};
