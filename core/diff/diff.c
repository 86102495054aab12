/* What changed in a sandbox since it was created (`sbxtop diff`, sandbox_diff,
 * the console's Diff tab): the files in its backend's writable layers (an
 * overlay's upper directory: a 0:0 character device there is a removal),
 * each compared with the layer below, with a unified diff of text files.
 *
 * The upper directories belong to the sandbox: every name is opened relative
 * to its parent with O_NOFOLLOW, nothing is read that is not a regular file,
 * and the lower layer is read the same way, so a link in an image never leads
 * to a host file either.  Whatever the sandbox holds, a diff is bounded: the
 * entries looked at, the entries kept (in blocks, never copied), the bytes of
 * their names, the bytes of a file compared and read in one call, the memory
 * of one comparison; and at most DIFF_RUNNING diffs run at once in a process,
 * so the sum is bounded too.  A path walks only that subtree.
 *
 * The walk builds a tree of what it found; caches, packages and .git (and
 * what no longer fits) are counted, not kept.  The tree is then handed out
 * item by item in a stable order (/workspace first, then by path), with
 * directories of many entries folded into one item. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "core/core-int.h"
#include "core/diff/order.h"
#include "core/diff/run.h"
#include "core/diff/text.h"
#include "lib/buf.h"
#include "lib/utf8.h"
#include "lib/util.h"

#define DIFF_WALK_MAX	200000		/* entries looked at */
#define DIFF_NODES_MAX	100000		/* entries kept */
#define DIFF_DIRS_SPARE	2000		/* of them, for directories only: past the
					 * rest, a directory still counts what it holds */
#define DIFF_NAMES_MAX	(4u << 20)	/* bytes of their names */
#define DIFF_DEPTH	64
#define DIFF_TEXT_MAX	(256 * 1024)	/* bytes of a file compared */
#define DIFF_READ_MAX	(32u << 20)	/* bytes read for the contents of one call */
#define DIFF_RUNNING	2		/* diffs at once in this process */
/* A directory with more changed entries than this is one item (more in the
 * agent's own /workspace, whose files it wants to see). */
#define DIFF_FOLD_WORK	64
#define DIFF_FOLD_ELSE	16

#define NODE_BLOCK	4096
#define NAME_BLOCK	(64 * 1024)
#define NONE		UINT32_MAX

/* Mount points the ns root holds for other mounts: not changes of its own. */
static const char *const skip_root[] = { "proc", "dev", "tmp", "run/sbxtop", "opt/sbxtop",
	NULL };

enum { T_FILE, T_DIR, T_LINK, T_OTHER };
const char *const diff_type_names[DIFF_TYPES] = { "file", "dir", "symlink", "other" };

/* Why a directory is one item. */
enum { F_NONE, F_CACHE, F_PACKAGES, F_GIT, F_MANY, F_CUT };
const char *const diff_fold_names[DIFF_FOLDS] = { NULL, "cache", "packages", "git",
	"many entries", "too many to list" };

struct node {
	const char	*name;
	uint32_t	 parent, first, next;	/* children: first, then each's next */
	uint32_t	 add, chg, del;		/* changes here and below */
	uint32_t	 kids;			/* children with changes */
	int64_t		 bytes;			/* of files added and changed here and below */
	int64_t		 size, lower_size;
	uint8_t		 layer;
	char		 kind;			/* 0: a directory walked through; 'A', 'M', 'D' */
	uint8_t		 type, fold;
	uint8_t		 keep;			/* the path asked for, or above it: never folded */
	uint8_t		 cut;			/* entries below were counted, not kept */
};

struct tree {
	struct node	**blocks;
	uint32_t	  n;
	char		**names;	/* blocks of NAME_BLOCK */
	size_t		  nnames, used, name_bytes;
};

struct walk {
	const struct core_diff_opts	*o;
	const struct backend_layer	*L;
	size_t				 nl, cur;
	struct tree			 t;
	struct core_diff_info		*info;
	char				 path[DIFF_PATH_MAX + 256];	/* being looked at */
	size_t				 plen;
	long				 left;
	uint32_t			 ticks;
	int				 stop;
};

/* --- at most DIFF_RUNNING at once ---------------------------------------- */

static pthread_mutex_t run_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t run_cv = PTHREAD_COND_INITIALIZER;
static int running;

void
diff_run_enter(void)
{
	pthread_mutex_lock(&run_mu);
	while (running >= DIFF_RUNNING)
		pthread_cond_wait(&run_cv, &run_mu);
	running++;
	pthread_mutex_unlock(&run_mu);
}

void
diff_run_leave(void)
{
	pthread_mutex_lock(&run_mu);
	running--;
	pthread_cond_signal(&run_cv);
	pthread_mutex_unlock(&run_mu);
}

/* --- the tree -------------------------------------------------------------- */

static struct node *
N(struct tree *t, uint32_t i)
{
	return &t->blocks[i / NODE_BLOCK][i % NODE_BLOCK];
}

/* A name kept in the blocks, or NULL when they are full. */
static const char *
name_keep(struct tree *t, const char *s, size_t k)
{
	char *p;

	if (t->nnames == 0 || t->used + k + 1 > NAME_BLOCK) {
		if ((t->nnames + 1) * NAME_BLOCK > DIFF_NAMES_MAX)
			return NULL;
		t->names = xrealloc(t->names, (t->nnames + 1) * sizeof *t->names);
		t->names[t->nnames++] = xmalloc(NAME_BLOCK);
		t->used = 0;
	}
	p = t->names[t->nnames - 1] + t->used;
	memcpy(p, s, k);
	p[k] = '\0';
	t->used += k + 1;
	t->name_bytes += k + 1;
	return p;
}

/* A new child of parent (NONE for the root), or NONE when the tree is full
 * (for a file, when only the directories' spare is left). */
static uint32_t
node_new(struct tree *t, uint32_t parent, const char *name, size_t k, size_t layer, int dir)
{
	struct node *x;
	const char *nm;

	if (t->n >= DIFF_NODES_MAX - (dir ? 0 : DIFF_DIRS_SPARE) ||
	    (nm = name_keep(t, name, k)) == NULL)
		return NONE;
	if (t->n % NODE_BLOCK == 0) {
		t->blocks = xrealloc(t->blocks, (t->n / NODE_BLOCK + 1) * sizeof *t->blocks);
		t->blocks[t->n / NODE_BLOCK] = xmalloc(NODE_BLOCK * sizeof(struct node));
	}
	x = N(t, t->n);
	memset(x, 0, sizeof *x);
	x->name = nm;
	x->parent = parent;
	x->first = x->next = NONE;
	x->size = x->lower_size = -1;
	x->layer = (uint8_t)layer;
	if (parent != NONE) {
		x->next = N(t, parent)->first;
		N(t, parent)->first = t->n;
	}
	return t->n++;
}

static void
tree_free(struct tree *t)
{
	for (uint32_t i = 0; i * NODE_BLOCK < t->n; i++)
		free(t->blocks[i]);
	free(t->blocks);
	for (size_t i = 0; i < t->nnames; i++)
		free(t->names[i]);
	free(t->names);
}

/* The child of parent named name, made when missing (the path asked for and
 * the layers' mount points); kept whole. */
static uint32_t
node_child(struct walk *w, uint32_t parent, const char *name, size_t k)
{
	uint32_t c;

	for (c = N(&w->t, parent)->first; c != NONE; c = N(&w->t, c)->next)
		if (strlen(N(&w->t, c)->name) == k && memcmp(N(&w->t, c)->name, name, k) == 0)
			break;
	if (c == NONE && (c = node_new(&w->t, parent, name, k, w->cur, 1)) == NONE)
		return NONE;
	N(&w->t, c)->keep = 1;
	return c;
}

static uint8_t
type_of(mode_t m)
{
	return S_ISREG(m) ? T_FILE : S_ISDIR(m) ? T_DIR : S_ISLNK(m) ? T_LINK : T_OTHER;
}

/* --- the walk -------------------------------------------------------------- */

/* Whether path is dir or below it ("" is the root, above everything). */
static int
under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static const char *
mount_of(const struct backend_layer *L)
{
	return strcmp(L->mount, "/") == 0 ? "" : L->mount;
}

/* Another layer's mount point, or one of the ns root's own mounts: what is
 * there is not this layer's. */
static int
other_mount(const struct walk *w, const char *path)
{
	for (size_t i = 0; i < w->nl; i++)
		if (i != w->cur && *mount_of(&w->L[i]) && strcmp(w->L[i].mount, path) == 0)
			return 1;
	if (*mount_of(&w->L[w->cur]) == '\0')
		for (size_t i = 0; skip_root[i]; i++)
			if (strcmp(path + 1, skip_root[i]) == 0)
				return 1;
	return 0;
}

/* Count a change of kind into node x (itself, or the directory that holds
 * what is not kept). */
static void
count(struct node *x, char kind, int64_t size)
{
	if (kind == 'A')
		x->add++;
	else if (kind == 'M')
		x->chg++;
	else
		x->del++;
	if (kind != 'D' && size > 0)
		x->bytes += size;
}

/* The entry name (not a directory, st its stat) of an upper directory whose
 * lower directory is low (-1: none): a change, kept under node or counted into agg. */
static void
entry(struct walk *w, int low, const char *name, const struct stat *st, uint32_t node,
    uint32_t agg)
{
	struct stat lst;
	int in_lower = low >= 0 && fstatat(low, name, &lst, AT_SYMLINK_NOFOLLOW) == 0;
	int64_t size = -1, lsize = -1;
	uint8_t type;
	char kind;
	uint32_t into = agg;

	if (S_ISCHR(st->st_mode) && major(st->st_rdev) == 0 && minor(st->st_rdev) == 0) {
		/* A whiteout: gone from the layer below (nothing, when it was not there). */
		if (!in_lower)
			return;
		kind = 'D';
		type = type_of(lst.st_mode);
		lsize = S_ISREG(lst.st_mode) ? (int64_t)lst.st_size : -1;
	} else {
		kind = in_lower ? 'M' : 'A';
		type = type_of(st->st_mode);
		size = S_ISREG(st->st_mode) ? (int64_t)st->st_size : -1;
		lsize = in_lower && S_ISREG(lst.st_mode) ? (int64_t)lst.st_size : -1;
	}
	if (into == NONE) {
		uint32_t x = node_new(&w->t, node, name, strlen(name), w->cur, 0);
		if (x == NONE) {
			into = node;
			N(&w->t, node)->cut = 1;
		} else {
			struct node *n = N(&w->t, x);
			n->kind = kind;
			n->type = type;
			n->size = size;
			n->lower_size = lsize;
			into = x;
		}
	}
	count(N(&w->t, into), kind, size);
}

static void walk_dir(struct walk *w, int up, int low, uint32_t node, int depth, uint32_t agg);

static void
subdir(struct walk *w, int dfd, int low, const char *name, uint32_t node, int depth,
    uint32_t agg)
{
	uint32_t child = agg, cagg = agg;
	const char *why;
	int up, nlow;

	if (depth >= DIFF_DEPTH) {
		w->info->walk_cut = 1;
		return;
	}
	if (agg == NONE) {
		child = node_new(&w->t, node, name, strlen(name), w->cur, 1);
		if (child == NONE) {
			child = cagg = node;
			N(&w->t, node)->cut = 1;
		} else if ((why = diff_fold_known(w->path)) != NULL) {
			N(&w->t, child)->fold = strcmp(why, "git") == 0 ? F_GIT :
			    strcmp(why, "packages") == 0 ? F_PACKAGES : F_CACHE;
			cagg = child;
		}
	}
	if ((up = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		w->info->unreadable++;
		return;
	}
	nlow = low >= 0 ? openat(low, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
	walk_dir(w, up, nlow, child, depth + 1, cagg);
}

/* The upper directory up (taken) whose lower one is low (taken; -1: none),
 * kept as node, or counted into agg when agg is not NONE. */
static void
walk_dir(struct walk *w, int up, int low, uint32_t node, int depth, uint32_t agg)
{
	DIR *d = fdopendir(up);
	struct dirent *de;
	size_t base = w->plen;

	if (d == NULL) {
		w->info->unreadable++;
		close(up);
		if (low >= 0)
			close(low);
		return;
	}
	while (!w->stop && (de = readdir(d)) != NULL) {
		struct stat st;
		size_t k = strlen(de->d_name);
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (--w->left < 0) {
			w->info->walk_cut = 1;
			w->stop = 1;
			break;
		}
		if ((++w->ticks & 1023) == 0 && w->o->cancelled && w->o->cancelled(w->o->cancel_arg)) {
			w->stop = 1;
			break;
		}
		if (base + 1 + k > DIFF_PATH_MAX) {
			w->info->walk_cut = 1;
			continue;
		}
		w->path[base] = '/';
		memcpy(w->path + base + 1, de->d_name, k + 1);
		w->plen = base + 1 + k;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    other_mount(w, w->path))
			continue;
		if (S_ISDIR(st.st_mode))
			subdir(w, dirfd(d), low, de->d_name, node, depth, agg);
		else
			entry(w, low, de->d_name, &st, node, agg);
	}
	w->plen = base;
	w->path[base] = '\0';
	closedir(d);
	if (low >= 0)
		close(low);
}

/* The layer holding path: the one with the deepest mount at or above it. */
static size_t
layer_of(const struct walk *w, const char *path)
{
	size_t best = w->nl, bl = 0;

	for (size_t i = 0; i < w->nl; i++) {
		const char *m = mount_of(&w->L[i]);
		if (under(path, m) && (best == w->nl || strlen(m) > bl)) {
			best = i;
			bl = strlen(m);
		}
	}
	return best;
}

/* Walk layer w->cur: whole when its mount is at or under filter, else from
 * filter down when it is the layer that holds filter. */
static void
walk_layer(struct walk *w, const char *filter)
{
	const struct backend_layer *L = &w->L[w->cur];
	const char *m = mount_of(L), *rel;
	uint32_t node = 0;
	int up, low;
	int depth = 0;

	if (*filter == '\0' || under(m, filter))
		rel = "";
	else if (under(filter, m) && layer_of(w, filter) == w->cur)
		rel = filter + strlen(m) + 1;
	else
		return;
	if ((up = open(L->upper, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return;
	low = L->lower ? open(L->lower, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
	/* The mount point's own nodes, kept whole. */
	w->plen = 0;
	w->path[0] = '\0';
	for (const char *p = m; *p && node != NONE;) {
		const char *s = strchrnul(p + 1, '/');
		node = node_child(w, node, p + 1, (size_t)(s - p - 1));
		p = s;
	}
	snprintf(w->path, sizeof w->path, "%s", m);
	w->plen = strlen(w->path);
	/* Down to the path asked for, a component at a time, as the walk goes. */
	while (*rel && node != NONE) {
		const char *s = strchrnul(rel, '/');
		size_t k = (size_t)(s - rel);
		char name[256];
		struct stat st;
		int nup, nlow;
		if (k == 0 || k >= sizeof name || w->plen + 1 + k > DIFF_PATH_MAX)
			goto out;
		memcpy(name, rel, k);
		name[k] = '\0';
		w->path[w->plen] = '/';
		memcpy(w->path + w->plen + 1, name, k + 1);
		w->plen += 1 + k;
		rel = *s ? s + 1 : s;
		if (other_mount(w, w->path) || fstatat(up, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			goto out;
		if (!S_ISDIR(st.st_mode)) {
			/* The file asked for, or a directory above it that was removed
			 * (a whiteout); anything else above it hides nothing of it. */
			if (*rel == '\0' || (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)))
				entry(w, low, name, &st, node, NONE);
			goto out;
		}
		if ((node = node_child(w, node, name, k)) == NONE ||
		    (nup = openat(up, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
			goto out;
		nlow = low >= 0 ? openat(low, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
		close(up);
		if (low >= 0)
			close(low);
		up = nup;
		low = nlow;
		depth++;
	}
	if (node != NONE) {
		walk_dir(w, up, low, node, depth, NONE);
		return;
	}
out:
	close(up);
	if (low >= 0)
		close(low);
}

/* --- the tree in order ----------------------------------------------------- */

struct sort_ctx {
	struct tree	*t;
	int		 root;
};

static int
kid_cmp(const void *a, const void *b, void *arg)
{
	const struct sort_ctx *c = arg;
	const char *x = N(c->t, *(const uint32_t *)a)->name;
	const char *y = N(c->t, *(const uint32_t *)b)->name;

	/* At the root, /workspace first (diff_order_cmp's order). */
	if (c->root && (strcmp(x, "workspace") == 0) != (strcmp(y, "workspace") == 0))
		return strcmp(x, "workspace") == 0 ? -1 : 1;
	return strcmp(x, y);
}

/* Sum each node's changes into its parents (children come after their
 * parents), and put every directory's children in name order.  What a
 * directory that is never folded (the path asked for, and above) counted of
 * its own is in no item: *unlisted. */
static void
tree_finish(struct tree *t, uint64_t *unlisted)
{
	uint32_t *kids = NULL;
	size_t cap = 0;

	for (uint32_t i = 0; i < t->n; i++)
		if (N(t, i)->keep && N(t, i)->cut && N(t, i)->kind == 0)
			*unlisted += N(t, i)->add + N(t, i)->chg + N(t, i)->del;
	for (uint32_t i = t->n; i-- > 1;) {
		struct node *x = N(t, i), *p = N(t, x->parent);
		if (x->add + x->chg + x->del == 0)
			continue;
		p->add += x->add;
		p->chg += x->chg;
		p->del += x->del;
		p->bytes += x->bytes;
		p->kids++;
	}
	for (uint32_t i = 0; i < t->n; i++) {
		struct node *x = N(t, i);
		size_t k = 0;
		if (x->first == NONE)
			continue;
		for (uint32_t c = x->first; c != NONE; c = N(t, c)->next) {
			if (k == cap) {
				cap = cap ? cap * 2 : 64;
				kids = xrealloc(kids, cap * sizeof *kids);
			}
			kids[k++] = c;
		}
		struct sort_ctx sc = { t, i == 0 };
		qsort_r(kids, k, sizeof *kids, kid_cmp, &sc);
		x->first = kids[0];
		for (size_t j = 0; j < k; j++)
			N(t, kids[j])->next = j + 1 < k ? kids[j + 1] : NONE;
	}
	free(kids);
}

/* --- handing the items out -------------------------------------------------- */

struct emit {
	struct walk	*w;
	core_diff_fn	 fn;
	void		*arg;
	int		 dry;		/* only count the items */
	int		 stop;
	uint64_t	 index;		/* of the next item */
	int		 has_cursor;
	uint64_t	 from, from_line;
	uint32_t	 from_hash;
	size_t		 read;		/* bytes read for contents */
	char		 path[DIFF_PATH_MAX + 256];
};

/* Read and compare the file of node x at e->path into it (which owns *diff). */
static void
content(struct emit *e, const struct node *x, struct core_diff_item *it, char **diff)
{
	const struct backend_layer *L = &e->w->L[x->layer];
	const char *m = mount_of(L), *rel = e->path + strlen(m) + 1;
	const char *slash = strrchr(rel, '/');
	char dir[DIFF_PATH_MAX + 1];
	size_t max = e->w->o->max_text ? e->w->o->max_text : DIFF_TEXT_MAX;
	size_t un = 0, ln = 0;
	int uw = 1, lw = 1, ubin = 0, lbin = 0, ufd, lfd = -1;
	char *ub, *lb = NULL;

	snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - rel) : 0, rel);
	if ((ufd = diff_open_beneath(L->upper, dir)) < 0)
		return;
	ub = diff_read_at(ufd, x->name, max, &un, &uw, &ubin);
	close(ufd);
	if (ub == NULL)
		return;
	if (x->kind == 'M' && L->lower && (lfd = diff_open_beneath(L->lower, dir)) >= 0) {
		lb = diff_read_at(lfd, x->name, max, &ln, &lw, &lbin);
		close(lfd);
	}
	e->read += un + ln;
	if (ubin || lbin || !diff_is_text(ub, un) || (lb && !diff_is_text(lb, ln))) {
		it->binary = 1;
	} else if (lb && ln == un && memcmp(lb, ub, un) == 0 && uw && lw) {
		*diff = xstrdup("");	/* the same bytes: only its metadata changed */
	} else {
		*diff = diff_unified(e->path, lb ? lb : "", lb ? ln : 0, ub, un, !uw || !lw);
		it->cut = !uw || !lw;
	}
	free(ub);
	free(lb);
}

static void
item(struct emit *e, const struct node *x, const char *folded)
{
	struct core_diff_info *info = e->w->info;
	struct core_diff_item it;
	uint64_t idx = e->index++;
	char *diff = NULL;
	size_t plen = strlen(e->path);

	if (e->dry) {
		info->items++;
		info->folded += folded != NULL;
		return;
	}
	if (e->has_cursor && idx < e->from)
		return;
	memset(&it, 0, sizeof it);
	if (folded)
		snprintf(e->path + plen, sizeof e->path - plen, "/");
	it.path = e->path;
	it.index = idx;
	/* The cursor names its item by index and by a hash of its path: when the
	 * two disagree, the sandbox changed since, and the item's lines start again. */
	if (e->has_cursor && idx == e->from) {
		if (diff_cursor_hash(e->path) == e->from_hash)
			it.line = e->from_line;
		else
			info->cursor_stale = 1;
	}
	if (folded) {
		it.change = x->add + x->chg + x->del == x->add ? 'A' :
		    x->add + x->chg + x->del == x->del ? 'D' : 'M';
		it.type = "dir";
		it.size = it.lower_size = -1;
		it.folded = folded;
		it.added = x->add;
		it.changed = x->chg;
		it.removed = x->del;
		it.bytes = x->bytes;
	} else {
		it.change = x->kind;
		it.type = diff_type_names[x->type];
		it.size = x->size;
		it.lower_size = x->lower_size;
		if (e->w->o->content && x->kind != 'D' && x->type == T_FILE) {
			if (e->read >= DIFF_READ_MAX) {
				it.unread = 1;
				e->stop = 1;
			} else if (!(e->w->o->cancelled && e->w->o->cancelled(e->w->o->cancel_arg))) {
				content(e, x, &it, &diff);
			}
		}
	}
	if (diff != NULL) {
		/* Its lines, and where line it.line starts. */
		const char *p = diff;
		uint64_t k = 0;
		for (const char *q = diff; *q; q++)
			if (*q == '\n' && ++k == it.line)
				p = q + 1;
		it.lines = k;
		if (it.line > k)
			it.line = k;
		it.diff = it.line == 0 ? diff : it.line == k ? diff + strlen(diff) : p;
	}
	if (e->fn(e->arg, info, &it) != 0)
		e->stop = 1;
	free(diff);
	e->path[plen] = '\0';
}

static void
emit_node(struct emit *e, uint32_t i)
{
	struct tree *t = &e->w->t;
	size_t plen = strlen(e->path);

	for (uint32_t c = N(t, i)->first; c != NONE && !e->stop; c = N(t, c)->next) {
		const struct node *x = N(t, c);
		if (x->add + x->chg + x->del == 0)
			continue;
		snprintf(e->path + plen, sizeof e->path - plen, "/%s", x->name);
		if (x->kind != 0) {
			item(e, x, NULL);
		} else {
			uint8_t f = x->fold;
			if (f == F_NONE && x->cut && !x->keep)
				f = F_CUT;
			if (f == F_NONE && !x->keep && x->kids > (under(e->path, "/workspace") ?
			    DIFF_FOLD_WORK : DIFF_FOLD_ELSE))
				f = F_MANY;
			if (f != F_NONE)
				item(e, x, diff_fold_names[f]);
			else
				emit_node(e, c);
		}
		e->path[plen] = '\0';
	}
}

/* core_diff_layers without the limit of diffs at once. */
int
diff_run(const struct backend_layer *layers, size_t n, const char *id,
    const struct core_diff_opts *o, core_diff_fn fn, void *arg,
    struct core_diff_info *info, struct sbx_err *e)
{
	struct walk *w;
	struct emit *em;
	char filter[DIFF_PATH_MAX + 16];
	uint64_t idx = 0, line = 0;
	uint32_t hash = 0;
	int has_cursor = 0;

	memset(info, 0, sizeof *info);
	snprintf(info->sandbox_id, sizeof info->sandbox_id, "%s", id);
	if (o->cursor && *o->cursor) {
		if (diff_cursor_parse(o->cursor, &idx, &line, &hash) < 0)
			return sbx_error(e, SBX_EINVAL, "start again without a cursor, or pass the "
			    "next_cursor a diff gave, unchanged", "not a cursor a diff gave: %.80s",
			    o->cursor);
		has_cursor = 1;
	}
	/* The path asked for, absolute (relative: under /workspace, as everywhere
	 * else), without "." parts or a trailing '/'; "" for all. */
	{
		const char *p = o->path ? o->path : "";
		size_t k = 0;
		if (*p && *p != '/')
			k = (size_t)snprintf(filter, sizeof filter, "/workspace");
		filter[k] = '\0';
		for (const char *s = p; *s;) {
			const char *t = strchrnul(s, '/');
			size_t c = (size_t)(t - s);
			if (c == 2 && s[0] == '.' && s[1] == '.')
				return sbx_error(e, SBX_EINVAL, "give the path without \"..\"",
				    "a diff path may not climb with \"..\": %.200s", p);
			if (c > 0 && !(c == 1 && s[0] == '.')) {
				if (k + 1 + c >= DIFF_PATH_MAX)
					return sbx_error(e, SBX_EINVAL, "give a shorter path",
					    "the diff path is longer than %d bytes", DIFF_PATH_MAX);
				filter[k++] = '/';
				memcpy(filter + k, s, c);
				k += c;
				filter[k] = '\0';
			}
			s = *t ? t + 1 : t;
		}
	}
	w = xcalloc(1, sizeof *w);
	w->o = o;
	w->L = layers;
	w->nl = n;
	w->info = info;
	w->left = DIFF_WALK_MAX;
	if (node_new(&w->t, NONE, "", 0, 0, 1) != NONE) {
		/* /workspace first: what the agent made counts before what lies elsewhere
		 * when the walk meets its limit. */
		for (int pass = 0; pass < 2; pass++)
			for (w->cur = 0; w->cur < n && !w->stop; w->cur++)
				if ((strcmp(layers[w->cur].mount, "/workspace") == 0) == (pass == 0))
					walk_layer(w, filter);
		N(&w->t, 0)->keep = 1;
		tree_finish(&w->t, &info->unlisted);
		struct node *root = N(&w->t, 0);
		info->added = root->add;
		info->changed = root->chg;
		info->removed = root->del;
		info->bytes = root->bytes;
	}
	em = xcalloc(1, sizeof *em);
	em->w = w;
	em->fn = fn;
	em->arg = arg;
	em->dry = 1;
	if (w->t.n > 0)
		emit_node(em, 0);
	em->dry = 0;
	em->index = 0;
	em->has_cursor = has_cursor;
	em->from = idx;
	em->from_line = line;
	em->from_hash = hash;
	if (has_cursor && idx >= info->items)
		info->cursor_stale = 1;
	if (w->t.n > 0 && !(o->cancelled && o->cancelled(o->cancel_arg)))
		emit_node(em, 0);
	free(em);
	tree_free(&w->t);
	free(w);
	return 0;
}

int
core_diff_layers(const struct backend_layer *layers, size_t n, const char *id,
    const struct core_diff_opts *o, core_diff_fn fn, void *arg,
    struct core_diff_info *info, struct sbx_err *e)
{
	int rc;

	diff_run_enter();
	rc = diff_run(layers, n, id, o, fn, arg, info, e);
	diff_run_leave();
	return rc;
}

void
core_diff_cursor(const struct core_diff_item *it, uint64_t line, char *buf, size_t len)
{
	diff_cursor_make(buf, len, it->index, line, it->path);
}

/* s as valid UTF-8 (a name a sandbox made need not be). */
static void
add_text(cJSON *o, const char *key, const char *s, size_t n)
{
	if (utf8_valid(s, n) && memchr(s, '\0', n) == NULL) {
		char *t = xstrndup(s, n);
		cJSON_AddStringToObject(o, key, t);
		free(t);
	} else {
		char *t = xmalloc(3 * n + 1);
		utf8_lossy(s, n, t, 3 * n + 1);
		cJSON_AddStringToObject(o, key, t);
		free(t);
	}
}

cJSON *
core_diff_item_json(const struct core_diff_item *it, size_t diff_len)
{
	cJSON *x = cJSON_CreateObject();

	add_text(x, "path", it->path, strlen(it->path));
	cJSON_AddStringToObject(x, "change", it->change == 'A' ? "added" : it->change == 'D' ?
	    "removed" : "changed");
	cJSON_AddStringToObject(x, "type", it->type);
	if (it->size >= 0)
		cJSON_AddNumberToObject(x, "size", (double)it->size);
	if (it->lower_size >= 0)
		cJSON_AddNumberToObject(x, "lower_size", (double)it->lower_size);
	if (it->folded) {
		cJSON_AddStringToObject(x, "folded", it->folded);
		cJSON_AddNumberToObject(x, "files", (double)(it->added + it->changed + it->removed));
		cJSON_AddNumberToObject(x, "added", (double)it->added);
		cJSON_AddNumberToObject(x, "changed", (double)it->changed);
		cJSON_AddNumberToObject(x, "removed", (double)it->removed);
		cJSON_AddNumberToObject(x, "bytes", (double)it->bytes);
	}
	if (it->binary)
		cJSON_AddBoolToObject(x, "binary", 1);
	if (it->cut)
		cJSON_AddBoolToObject(x, "cut", 1);
	if (it->diff) {
		size_t n = strlen(it->diff);
		add_text(x, "diff", it->diff, diff_len < n ? diff_len : n);
		if (it->line > 0 || diff_len < n) {
			cJSON_AddNumberToObject(x, "diff_line", (double)it->line);
			cJSON_AddNumberToObject(x, "diff_lines", (double)it->lines);
		}
	}
	return x;
}

cJSON *
core_diff_result_json(const struct core_diff_info *info, cJSON *changes, const char *next)
{
	cJSON *r = cJSON_CreateObject(), *t = cJSON_CreateObject();

	cJSON_AddNumberToObject(t, "added", (double)info->added);
	cJSON_AddNumberToObject(t, "changed", (double)info->changed);
	cJSON_AddNumberToObject(t, "removed", (double)info->removed);
	cJSON_AddNumberToObject(t, "bytes", (double)info->bytes);
	cJSON_AddNumberToObject(t, "items", (double)info->items);
	cJSON_AddNumberToObject(t, "folded", (double)info->folded);
	cJSON_AddStringToObject(r, "sandbox_id", info->sandbox_id);
	cJSON_AddItemToObject(r, "totals", t);
	cJSON_AddItemToObject(r, "changes", changes);
	cJSON_AddBoolToObject(r, "truncated", (next && *next) || info->walk_cut);
	if (next && *next)
		cJSON_AddStringToObject(r, "next_cursor", next);
	return r;
}
