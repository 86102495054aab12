/* What changed in a sandbox since it was created (`sbxtop diff`, sandbox_diff,
 * the console's Diff tab): the files in its backend's writable layers (an
 * overlay's upper directory: a 0:0 character device there is a removal),
 * each compared with the layer below, with a unified diff of text files.
 *
 * The upper directories belong to the sandbox: every name is opened relative
 * to its parent with O_NOFOLLOW, nothing is read that is not a regular file,
 * and the walk, the number of changes and the bytes diffed are bounded.  The
 * lower layer is read the same way, so a link in an image never leads to a
 * host file either. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "core/core-int.h"
#include "lib/buf.h"
#include "lib/utf8.h"
#include "lib/util.h"

#define DIFF_WALK_MAX	200000	/* entries looked at */
#define DIFF_DEPTH	64
#define DIFF_CONTEXT	3
#define DIFF_LCS_CELLS	(4u << 20)	/* the middle part compared line by line */
#define DIFF_OUT_MAX	(256 * 1024)

/* Mount points the ns root holds for other mounts: not changes of its own. */
static const char *const skip_root[] = { "proc", "dev", "tmp", "run/sbxtop", "opt/sbxtop",
	NULL };

struct change {
	char	*path;		/* in the sandbox */
	char	 kind;		/* 'A', 'C', 'D' */
	char	 type[8];
	int64_t	 size, lower_size;
	int	 binary;
	char	*diff;
};

struct walk {
	const struct core_diff_opts *o;
	const struct backend_layer *layers;
	size_t		 nlayers, cur;
	struct change	*v;
	size_t		 n, cap;
	long		 left;
	int		 truncated;
};

static const char *
type_of(mode_t m)
{
	return S_ISREG(m) ? "file" : S_ISDIR(m) ? "dir" : S_ISLNK(m) ? "symlink" : "other";
}

/* rel (a/b/c) under root, never through a link: an O_PATH fd, or -1. */
static int
open_beneath(const char *root, const char *rel)
{
	char *copy, *save = NULL;
	int fd = open(root, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0 || *rel == '\0')
		return fd;
	copy = xstrdup(rel);
	for (char *p = strtok_r(copy, "/", &save); p && fd >= 0; p = strtok_r(NULL, "/", &save)) {
		int nfd = strcmp(p, "..") == 0 ? -1 :
		    openat(fd, p, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		fd = nfd;
	}
	free(copy);
	return fd;
}

/* A regular file's first max bytes (*len; *whole 0 when there is more). */
static char *
read_reg(int fd, size_t max, size_t *len, int *whole)
{
	struct stat st;
	char *b;
	size_t n = 0;
	ssize_t k;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return NULL;
	b = xmalloc(max + 1);
	while (n < max && (k = read(fd, b + n, max - n)) > 0)
		n += (size_t)k;
	b[n] = '\0';
	*len = n;
	*whole = (uint64_t)st.st_size <= n;
	return b;
}

static char *
read_at(int dirfd, const char *name, size_t max, size_t *len, int *whole)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	char *b;

	if (fd < 0)
		return NULL;
	b = read_reg(fd, max, len, whole);
	close(fd);
	return b;
}

/* Text: UTF-8 (a character cut at the end of what was read is fine) with no
 * NUL and few control characters. */
static int
is_text(const char *b, size_t n)
{
	size_t ctl = 0, k = utf8_complete_prefix(b, n);

	if (memchr(b, '\0', n) != NULL || !utf8_valid(b, k) || n - k > 3)
		return 0;
	for (size_t i = 0; i < n; i++)
		ctl += (unsigned char)b[i] < 0x20 && b[i] != '\n' && b[i] != '\t' &&
		    b[i] != '\r' && b[i] != '\f' && b[i] != 0x1b;
	return ctl * 20 <= n;
}

/* --- line diffs ------------------------------------------------------------ */

struct lines_v {
	const char	**s;
	size_t		 *len;
	size_t		  n;
};

static void
split(char *b, size_t n, struct lines_v *l)
{
	size_t cap = 16;

	l->s = xcalloc(cap, sizeof *l->s);
	l->len = xcalloc(cap, sizeof *l->len);
	l->n = 0;
	for (size_t i = 0; i < n;) {
		char *nl = memchr(b + i, '\n', n - i);
		size_t e = nl ? (size_t)(nl - b) : n;
		if (l->n == cap) {
			cap *= 2;
			l->s = xrealloc(l->s, cap * sizeof *l->s);
			l->len = xrealloc(l->len, cap * sizeof *l->len);
		}
		l->s[l->n] = b + i;
		l->len[l->n++] = e - i;
		i = e + 1;
	}
}

static int
line_eq(const struct lines_v *a, size_t i, const struct lines_v *b, size_t j)
{
	return a->len[i] == b->len[j] && memcmp(a->s[i], b->s[j], a->len[i]) == 0;
}

/* ops: ' ' same, '-' only in a, '+' only in b, in order; returns how many.
 * Common ends are matched first; the middle by longest common subsequence
 * when it is small enough, else as all removed then all added. */
static size_t
diff_ops(const struct lines_v *a, const struct lines_v *b, char **ops_out)
{
	size_t pre = 0, suf = 0, n = 0;
	char *ops = xmalloc(a->n + b->n + 1);

	while (pre < a->n && pre < b->n && line_eq(a, pre, b, pre))
		pre++;
	while (suf < a->n - pre && suf < b->n - pre &&
	    line_eq(a, a->n - 1 - suf, b, b->n - 1 - suf))
		suf++;
	memset(ops, ' ', pre);
	n = pre;
	size_t ma = a->n - pre - suf, mb = b->n - pre - suf;
	if (ma > 0 && mb > 0 && (ma + 1) * (mb + 1) <= DIFF_LCS_CELLS) {
		/* L[i][j]: the LCS of a's middle from i and b's from j (16 bits a cell). */
		uint16_t *L = xcalloc((ma + 1) * (mb + 1), sizeof *L);
#define AT(i, j) L[(i) * (mb + 1) + (j)]
		for (size_t i = ma; i-- > 0;)
			for (size_t j = mb; j-- > 0;)
				AT(i, j) = line_eq(a, pre + i, b, pre + j) ? (uint16_t)(AT(i + 1, j + 1) + 1) :
				    AT(i + 1, j) > AT(i, j + 1) ? AT(i + 1, j) : AT(i, j + 1);
		size_t i = 0, j = 0;
		while (i < ma && j < mb) {
			if (line_eq(a, pre + i, b, pre + j)) {
				ops[n++] = ' ';
				i++, j++;
			} else if (AT(i + 1, j) >= AT(i, j + 1)) {
				ops[n++] = '-';
				i++;
			} else {
				ops[n++] = '+';
				j++;
			}
		}
#undef AT
		for (; i < ma; i++)
			ops[n++] = '-';
		for (; j < mb; j++)
			ops[n++] = '+';
		free(L);
	} else {
		memset(ops + n, '-', ma);
		n += ma;
		memset(ops + n, '+', mb);
		n += mb;
	}
	memset(ops + n, ' ', suf);
	n += suf;
	*ops_out = ops;
	return n;
}

/* A unified diff (3 lines of context) of a and b, under the name path. */
static char *
unified(const char *path, char *ab, size_t an, char *bb, size_t bn, int cut)
{
	struct lines_v a, b;
	char *ops;
	size_t n;
	struct buf out;

	split(ab, an, &a);
	split(bb, bn, &b);
	n = diff_ops(&a, &b, &ops);
	buf_init(&out, DIFF_OUT_MAX);
	buf_printf(&out, "--- a%s\n+++ b%s\n", path, path);
	/* Hunks: runs of changes with their context, joined when close. */
	size_t k = 0, ia = 0, ib = 0;
	int full = 0;
	while (k < n && !full) {
		if (ops[k] == ' ') {
			k++, ia++, ib++;
			continue;
		}
		size_t start = k > DIFF_CONTEXT ? k - DIFF_CONTEXT : 0, end = k;
		for (;;) {
			while (end < n && ops[end] != ' ')
				end++;
			size_t same = 0;
			while (end + same < n && ops[end + same] == ' ')
				same++;
			if (end + same < n && same <= 2 * DIFF_CONTEXT)
				end += same;
			else {
				end += same < DIFF_CONTEXT ? same : DIFF_CONTEXT;
				break;
			}
		}
		size_t back = k - start, sa = ia - back, sb = ib - back, ca = 0, cb = 0;
		for (size_t q = start; q < end; q++) {
			ca += ops[q] != '+';
			cb += ops[q] != '-';
		}
		/* As diff -u writes them: a range of one line is its number alone. */
		char ra[48], rb[48];
		snprintf(ra, sizeof ra, ca == 1 ? "%zu" : "%zu,%zu", ca ? sa + 1 : sa, ca);
		snprintf(rb, sizeof rb, cb == 1 ? "%zu" : "%zu,%zu", cb ? sb + 1 : sb, cb);
		buf_printf(&out, "@@ -%s +%s @@\n", ra, rb);
		size_t pa = sa, pb = sb;
		for (size_t q = start; q < end && !full; q++) {
			const char *s = ops[q] == '+' ? b.s[pb] : a.s[pa];
			size_t l = ops[q] == '+' ? b.len[pb] : a.len[pa];
			full = buf_printf(&out, "%c%.*s\n", ops[q], (int)l, s) < 0;
			pa += ops[q] != '+';
			pb += ops[q] != '-';
		}
		ia = pa;
		ib = pb;
		k = end;
	}
	if (full) {
		out.max += 256;	/* room for the two notes */
		buf_printf(&out, "\\ the diff goes on: only its first %d KiB are shown\n",
		    DIFF_OUT_MAX / 1024);
	}
	if (cut)
		buf_printf(&out, "\\ cut: only the first bytes of the file were compared\n");
	free(ops);
	free(a.s);
	free(a.len);
	free(b.s);
	free(b.len);
	return buf_steal(&out);
}

/* --- the walk -------------------------------------------------------------- */

static int
wanted(const struct walk *w, const char *path)
{
	const char *f = w->o->path;
	size_t n;

	if (f == NULL || *f == '\0' || strcmp(f, "/") == 0)
		return 1;
	n = strlen(f);
	while (n > 1 && f[n - 1] == '/')
		n--;
	/* A change below the filter, or the filter below a removed directory. */
	return strncmp(path, f, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static int
other_mount(const struct walk *w, const char *path)
{
	for (size_t i = 0; i < w->nlayers; i++)
		if (i != w->cur && strcmp(w->layers[i].mount, "/") != 0 &&
		    strcmp(w->layers[i].mount, path) == 0)
			return 1;
	if (strcmp(w->layers[w->cur].mount, "/") == 0)
		for (size_t i = 0; skip_root[i]; i++)
			if (strcmp(path + 1, skip_root[i]) == 0)
				return 1;
	return 0;
}

static struct change *
add(struct walk *w, const char *path, char kind, const char *type)
{
	struct change *c;

	if (w->n >= (w->o->max_files ? w->o->max_files : 5000)) {
		w->truncated = 1;
		return NULL;
	}
	if (w->n == w->cap) {
		w->cap = w->cap ? w->cap * 2 : 64;
		w->v = xrealloc(w->v, w->cap * sizeof *w->v);
	}
	c = &w->v[w->n++];
	memset(c, 0, sizeof *c);
	c->path = xstrdup(path);
	c->kind = kind;
	snprintf(c->type, sizeof c->type, "%s", type);
	c->size = c->lower_size = -1;
	return c;
}

static void
compare(struct walk *w, int dirfd, const char *name, const char *path, const char *rel,
    const struct stat *st)
{
	const struct backend_layer *L = &w->layers[w->cur];
	int lfd = L->lower ? open_beneath(L->lower, rel) : -1;
	struct stat lst;
	int in_lower = lfd >= 0 && fstatat(lfd, "", &lst, AT_EMPTY_PATH) == 0;
	size_t max = w->o->max_text ? w->o->max_text : 256 * 1024;
	struct change *c;

	if (S_ISCHR(st->st_mode) && major(st->st_rdev) == 0 && minor(st->st_rdev) == 0) {
		/* A whiteout: gone from the layer below. */
		if (in_lower && (c = add(w, path, 'D', type_of(lst.st_mode))) != NULL)
			c->lower_size = S_ISREG(lst.st_mode) ? (int64_t)lst.st_size : -1;
		goto out;
	}
	if ((c = add(w, path, in_lower ? 'C' : 'A', type_of(st->st_mode))) == NULL)
		goto out;
	if (S_ISREG(st->st_mode))
		c->size = (int64_t)st->st_size;
	if (in_lower && S_ISREG(lst.st_mode))
		c->lower_size = (int64_t)lst.st_size;
	if (!S_ISREG(st->st_mode) || (in_lower && !S_ISREG(lst.st_mode)))
		goto out;
	size_t un = 0, ln = 0;
	int uw = 1, lw = 1;
	char *ub = read_at(dirfd, name, max, &un, &uw), *lb = NULL;
	if (ub == NULL)
		goto out;
	if (in_lower) {
		char proc[64];
		snprintf(proc, sizeof proc, "/proc/self/fd/%d", lfd);
		/* The O_PATH fd names the file itself: reopening it follows no link. */
		int rfd = open(proc, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		lb = rfd >= 0 ? read_reg(rfd, max, &ln, &lw) : NULL;
		if (rfd >= 0)
			close(rfd);
	}
	if (!is_text(ub, un) || (lb && !is_text(lb, ln))) {
		c->binary = 1;
	} else if (w->o->content) {
		if (lb && ln == un && memcmp(lb, ub, un) == 0 && uw && lw)
			c->diff = xstrdup("");	/* the same bytes: only its metadata changed */
		else
			c->diff = unified(path, lb ? lb : "", lb ? ln : 0, ub, un, !uw || !lw);
	}
	free(ub);
	free(lb);
out:
	if (lfd >= 0)
		close(lfd);
}

static void
walk_dir(struct walk *w, int dirfd, const char *rel, int depth)
{
	DIR *d = fdopendir(dirfd);
	struct dirent *de;
	const char *mount = w->layers[w->cur].mount;

	if (d == NULL) {
		close(dirfd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		struct stat st;
		char r[4096], path[4200];
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (--w->left <= 0) {
			w->truncated = 1;
			break;
		}
		if ((size_t)snprintf(r, sizeof r, "%s%s%s", rel, *rel ? "/" : "", de->d_name) >=
		    sizeof r)
			continue;
		snprintf(path, sizeof path, "%s%s%s", strcmp(mount, "/") == 0 ? "" : mount, "/", r);
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || other_mount(w, path))
			continue;
		if (S_ISDIR(st.st_mode)) {
			int fd;
			if (depth < DIFF_DEPTH && (fd = openat(dirfd, de->d_name, O_RDONLY |
			    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0)
				walk_dir(w, fd, r, depth + 1);
			continue;
		}
		if (wanted(w, path))
			compare(w, dirfd, de->d_name, path, r, &st);
	}
	closedir(d);
}

static int
change_cmp(const void *a, const void *b)
{
	return strcmp(((const struct change *)a)->path, ((const struct change *)b)->path);
}

int
core_diff(struct core *c, const char *key, const struct core_diff_opts *o, cJSON **out,
    struct sbx_err *e)
{
	struct sandbox *s = core_get(c, key, e);
	const struct backend *b;
	struct backend_layer *L = NULL;
	size_t nl = 0;
	struct walk w;
	char filter[4096];
	struct core_diff_opts oo = *o;
	cJSON *r, *arr;

	*out = NULL;
	if (s == NULL)
		return -1;
	b = backend_find(s->backend);
	if (b == NULL || b->layers == NULL) {
		sbx_error(e, SBX_EUNSUPPORTED, "look at its files with sandbox_list_files or "
		    "`sbxtop cp ID:/workspace DIR`",
		    "diff reads a sandbox's writable layers on this host: the %s backend "
		    "keeps none here", s->backend);
		sandbox_free(s);
		return -1;
	}
	if (b->layers(s, &L, &nl, e) < 0) {
		sandbox_free(s);
		return -1;
	}
	/* A relative path is under /workspace, as everywhere else. */
	if (o->path && *o->path && o->path[0] != '/') {
		snprintf(filter, sizeof filter, "/workspace/%s", o->path);
		oo.path = filter;
	}
	memset(&w, 0, sizeof w);
	w.o = &oo;
	w.layers = L;
	w.nlayers = nl;
	w.left = DIFF_WALK_MAX;
	for (w.cur = 0; w.cur < nl; w.cur++) {
		int fd = open(L[w.cur].upper, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0)
			walk_dir(&w, fd, "", 0);
	}
	if (w.n > 1)
		qsort(w.v, w.n, sizeof *w.v, change_cmp);
	r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "sandbox_id", s->id);
	arr = cJSON_AddArrayToObject(r, "changes");
	for (size_t i = 0; i < w.n; i++) {
		struct change *ch = &w.v[i];
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "path", ch->path);
		cJSON_AddStringToObject(x, "change", ch->kind == 'A' ? "added" : ch->kind == 'C' ?
		    "changed" : "removed");
		cJSON_AddStringToObject(x, "type", ch->type);
		if (ch->size >= 0)
			cJSON_AddNumberToObject(x, "size", (double)ch->size);
		if (ch->lower_size >= 0)
			cJSON_AddNumberToObject(x, "lower_size", (double)ch->lower_size);
		if (ch->binary)
			cJSON_AddBoolToObject(x, "binary", 1);
		if (ch->diff)
			cJSON_AddStringToObject(x, "diff", ch->diff);
		cJSON_AddItemToArray(arr, x);
		free(ch->path);
		free(ch->diff);
	}
	cJSON_AddBoolToObject(r, "truncated", w.truncated);
	free(w.v);
	for (size_t i = 0; i < nl; i++) {
		free(L[i].mount);
		free(L[i].upper);
		free(L[i].lower);
	}
	free(L);
	sandbox_free(s);
	*out = r;
	return 0;
}
