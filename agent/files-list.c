/* The breadth-first listing of /v1/files/list (order "breadth"): a tree level by
 * level, each directory's names sorted, with every directory's number of
 * entries; the workspace's part first when the listing holds it; directories
 * that are big, named for folding or of a pseudo filesystem (/proc, /sys) listed
 * with their count but not entered; a page from an offset, and the total.
 *
 * Directories are opened below the listing's descriptor with openat2 and
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, so a symlink is listed, never entered,
 * and nothing outside the listed directory is reached.  The walk is bounded:
 * after LIST_SCAN_MAX entries it stops, and the total is then a lower bound. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/files.h"
#include "lib/util.h"

#define LIST_SCAN_MAX	200000	/* entries looked at, at most, for one listing */

struct qdir {
	char	*rel;		/* below the listed directory; "" is itself */
	int	 depth;
};

struct bfs {
	const struct files_list_opts *o;
	int		 base;		/* the listed directory */
	const char	*ws_rel;	/* the workspace below it, or NULL */
	struct qdir	*q;
	size_t		 qhead, qlen, qcap;
	cJSON		*entries;
	int64_t		 seen;		/* entries in listing order so far */
	int64_t		 shown;
	int		 capped;
};

static int
open_below(int base, const char *rel)
{
	struct open_how how = {
		.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};

	if (rel[0] == '\0')
		return fcntl(base, F_DUPFD_CLOEXEC, 0);
	return (int)syscall(SYS_openat2, base, rel, &how, sizeof how);
}

/* Filesystems whose trees are the kernel's, not files: never entered. */
static int
pseudo_fs(int fd)
{
	static const long kinds[] = { PROC_SUPER_MAGIC, SYSFS_MAGIC, CGROUP_SUPER_MAGIC,
		CGROUP2_SUPER_MAGIC, DEBUGFS_MAGIC, TRACEFS_MAGIC, SECURITYFS_MAGIC,
		BPF_FS_MAGIC, DEVPTS_SUPER_MAGIC, PSTOREFS_MAGIC };
	struct statfs sf;

	if (fstatfs(fd, &sf) < 0)
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		if ((long)sf.f_type == kinds[i])
			return 1;
	return 0;
}

/* How many names the directory on fd holds (as files_names would list them), or
 * -1 with errno. */
static int64_t
count_of(int fd, int hidden)
{
	int dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	DIR *d;
	struct dirent *de;
	int64_t n = 0;

	if (dfd < 0)
		return -1;
	if ((d = fdopendir(dfd)) == NULL) {
		close(dfd);
		return -1;
	}
	while ((de = readdir(d)) != NULL)
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
		    (hidden || de->d_name[0] != '.');
	closedir(d);
	return n;
}

static int
fold_name(const struct files_list_opts *o, const char *name)
{
	for (size_t i = 0; o->fold_names != NULL && o->fold_names[i] != NULL; i++)
		if (strcmp(o->fold_names[i], name) == 0)
			return 1;
	return 0;
}

static void
push(struct bfs *b, char *rel, int depth)
{
	if (b->qhead + b->qlen == b->qcap) {
		if (b->qhead > 0) {
			memmove(b->q, b->q + b->qhead, b->qlen * sizeof *b->q);
			b->qhead = 0;
		} else {
			b->qcap = b->qcap ? b->qcap * 2 : 64;
			b->q = xrealloc(b->q, b->qcap * sizeof *b->q);
		}
	}
	b->q[b->qhead + b->qlen++] = (struct qdir){ rel, depth };
}

/* One entry, name in the directory dfd at rel, in listing order: shown when it
 * is on the page; a directory is counted and queued unless folded (by size
 * only when big may fold it: the workspace never is). */
static void
visit(struct bfs *b, int dfd, const char *rel, const char *name, int depth, int big)
{
	const struct files_list_opts *o = b->o;
	_cleanup_free_ char *crel = rel[0] ? xasprintf("%s/%s", rel, name) : xstrdup(name);
	const char *fold = NULL;
	int64_t count = -1;
	struct stat st;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return;		/* gone while we walked */
	if (S_ISDIR(st.st_mode)) {
		_cleanup_close_ int cfd = openat(dfd, name, O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC);

		if (cfd < 0 || (count = count_of(cfd, o->hidden)) < 0)
			fold = "unreadable";
		if (fold == NULL && pseudo_fs(cfd))
			fold = "filesystem";
		else if (fold == NULL && fold_name(o, name))
			fold = "name";
		else if (fold == NULL && big && o->fold > 0 && count > o->fold)
			fold = "big";
		else if (fold == NULL && o->recursive && depth + 1 >= WALK_MAX_DEPTH)
			fold = "depth";
		if (fold == NULL && o->recursive)
			push(b, xstrdup(crel), depth + 1);
	}
	b->seen++;
	if (b->seen > o->offset && b->shown < o->max) {
		_cleanup_free_ char *path = o->base[1] ? xasprintf("%s/%s", o->base, crel) :
		    xasprintf("/%s", crel);
		cJSON *e = files_entry_json(path, name, &st, dfd);
		if (count >= 0)
			cJSON_AddNumberToObject(e, "entries", (double)count);
		/* Not entered by a recursive listing: say why. */
		if (fold != NULL && (o->recursive || strcmp(fold, "unreadable") == 0))
			cJSON_AddStringToObject(e, "folded", fold);
		cJSON_AddItemToArray(b->entries, e);
		b->shown++;
	}
}

/* Walk the queue level by level; skip (may be NULL) is a directory left out
 * (the workspace, listed first).  -1 with errno when the listed directory
 * itself cannot be read. */
static int
drain(struct bfs *b, const char *skip)
{
	while (b->qlen > 0 && !b->capped) {
		struct qdir d = b->q[b->qhead++];
		int fd = open_below(b->base, d.rel);
		size_t n = 0;
		char **v = fd >= 0 ? files_names(fd, b->o->hidden, &n) : NULL;

		b->qlen--;
		if (v == NULL && d.rel[0] == '\0') {
			int err = errno;
			if (fd >= 0)
				close(fd);
			free(d.rel);
			errno = err;
			return -1;
		}
		for (size_t i = 0; v != NULL && i < n; i++) {
			if (skip != NULL) {
				_cleanup_free_ char *c = d.rel[0] ? xasprintf("%s/%s", d.rel, v[i]) :
				    xstrdup(v[i]);
				if (strcmp(c, skip) == 0)
					continue;
			}
			if (b->seen >= LIST_SCAN_MAX) {
				b->capped = 1;
				break;
			}
			visit(b, fd, d.rel, v[i], d.depth, 1);
		}
		files_names_free(v, n);
		if (fd >= 0)
			close(fd);
		free(d.rel);
	}
	return 0;
}

/* The workspace below the listed directory base (sandbox-absolute), relative
 * to it, or NULL when it is not below it. */
static char *
workspace_below(const char *base)
{
	const char *ws = agent.workspace;
	size_t n = strlen(base);

	if (strcmp(base, "/") == 0)
		return ws[0] == '/' && ws[1] != '\0' ? xstrdup(ws + 1) : NULL;
	if (strncmp(ws, base, n) == 0 && ws[n] == '/' && ws[n + 1] != '\0')
		return xstrdup(ws + n + 1);
	return NULL;
}

int
files_list_breadth(int fd, const struct files_list_opts *o, cJSON **out)
{
	struct bfs b = { .o = o, .base = fd };
	_cleanup_free_ char *ws = o->recursive ? workspace_below(o->base) : NULL;
	int rc = 0;

	b.entries = cJSON_CreateArray();
	/* The agent's own work first: the workspace's entry and its tree. */
	if (ws != NULL) {
		_cleanup_close_ int wfd = open_below(fd, ws);
		_cleanup_free_ char *parent = xstrdup(ws);
		char *sl = strrchr(parent, '/');
		_cleanup_close_ int pfd = -1;

		if (sl != NULL)
			*sl = '\0';
		pfd = sl != NULL ? open_below(fd, parent) : fcntl(fd, F_DUPFD_CLOEXEC, 0);
		if (wfd < 0 || pfd < 0) {
			free(ws);
			ws = NULL;
		} else {
			visit(&b, pfd, sl != NULL ? parent : "", sl != NULL ? sl + 1 : ws, 0, 0);
			rc = drain(&b, NULL);
		}
	}
	push(&b, xstrdup(""), 0);
	if (rc == 0)
		rc = drain(&b, ws);
	while (b.qlen > 0)
		free(b.q[b.qhead + --b.qlen].rel);
	free(b.q);
	if (rc < 0) {
		cJSON_Delete(b.entries);
		return -1;
	}
	*out = cJSON_CreateObject();
	cJSON_AddItemToObject(*out, "entries", b.entries);
	cJSON_AddNumberToObject(*out, "total", (double)b.seen);
	cJSON_AddBoolToObject(*out, "total_capped", b.capped);
	cJSON_AddBoolToObject(*out, "truncated", b.seen > o->offset + b.shown || b.capped);
	return 0;
}
