/* Unit tests for core/diff/diff.c and core/diff/order.c: the order, folding,
 * totals, paging and contents of a sandbox's changes, on layers made here (an
 * image, a root upper layer over it, a /workspace over nothing), and the
 * cursor and order functions themselves.  Whiteouts need root (mknod); the
 * rest runs as anyone.  TAP lines. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "tap.h"
#include "core/core.h"
#include "core/diff/order.h"
#include "lib/util.h"

static char top[64];

static void put(const char *rel, const char *text);

/* n files named before, a number (00, 01, ...) and after, each holding text. */
static void
many(const char *before, int n, const char *after, const char *text)
{
	char r[128];

	for (int i = 0; i < n; i++) {
		snprintf(r, sizeof r, "%s%02d%s", before, i, after);
		put(r, text);
	}
}

static void
put(const char *rel, const char *text)
{
	char p[1024], *s;

	snprintf(p, sizeof p, "%s/%s", top, rel);
	for (s = strchr(p + strlen(top) + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		mkdir(p, 0755);
		*s = '/';
	}
	FILE *f = fopen(p, "w");
	if (f == NULL) {
		perror(p);
		exit(1);
	}
	fputs(text, f);
	fclose(f);
}

/* What the listing handed out: each item's line, and where it stopped. */
struct got {
	char		 lines[8192];
	size_t		 n, stop_after;		/* stop after this many (0: never) */
	char		 next[64];
	uint64_t	 next_line;		/* lines to take of a diff (0: all) */
	struct core_diff_info info;
};

static int
take(void *arg, const struct core_diff_info *info, const struct core_diff_item *it)
{
	struct got *g = arg;
	size_t l = strlen(g->lines);

	g->info = *info;
	if (g->stop_after && g->n == g->stop_after) {
		core_diff_cursor(it, it->line, g->next, sizeof g->next);
		return 1;
	}
	g->n++;
	snprintf(g->lines + l, sizeof g->lines - l, "%c %s%s%s%s\n", it->change, it->path,
	    it->folded ? " " : "", it->folded ? it->folded : "", it->binary ? " binary" : "");
	if (it->diff && g->next_line) {
		/* The first next_line lines, then a cursor for the rest. */
		const char *d = it->diff;
		uint64_t k = 0;
		for (; *d && k < g->next_line; d++)
			if (*d == '\n')
				k++;
		l = strlen(g->lines);
		snprintf(g->lines + l, sizeof g->lines - l, "%.*s", (int)(d - it->diff), it->diff);
		if (*d) {
			core_diff_cursor(it, it->line + k, g->next, sizeof g->next);
			return 1;
		}
	} else if (it->diff) {
		l = strlen(g->lines);
		snprintf(g->lines + l, sizeof g->lines - l, "%s", it->diff);
	}
	return 0;
}

static struct backend_layer layers[2];

static int
run(struct got *g, const char *path, int content, const char *cursor)
{
	struct core_diff_opts o = { .path = path, .content = content, .cursor = cursor };
	struct sbx_err e;
	size_t keep = g->stop_after;
	uint64_t nl = g->next_line;
	int rc;

	memset(g, 0, sizeof *g);
	g->stop_after = keep;
	g->next_line = nl;
	rc = core_diff_layers(layers, 2, "sbx-test", &o, take, g, &g->info, &e);
	if (rc < 0)
		printf("# %s\n", e.msg);
	return rc;
}

static void
order_and_cursors(void)
{
	uint64_t i, l;
	uint32_t h;
	char c[64];

	check(diff_order_cmp("/workspace/z", "/etc/a") < 0, "/workspace comes before the rest");
	check(diff_order_cmp("/workspacex", "/workspace/a") > 0 &&
	    diff_order_cmp("/workspacex", "/etc") > 0, "/workspacex is not /workspace");
	check(diff_order_cmp("/a/b", "/a.txt") < 0, "a directory's contents come before a.txt");
	check(diff_order_cmp("/a", "/a/b") < 0 && diff_order_cmp("/a/", "/a/b") < 0,
	    "a directory, and its folded line, before what is in it");
	check(diff_order_cmp("/x", "/x") == 0, "a path is equal to itself");
	check(diff_fold_known("/home/sandbox/.npm") && strcmp(diff_fold_known(
	    "/home/sandbox/.npm"), "cache") == 0, "~/.npm is a cache");
	check(diff_fold_known("/root/.cache") && diff_fold_known("/w/a/__pycache__") &&
	    diff_fold_known("/root/.cargo/registry") && diff_fold_known("/root/go/pkg/mod") &&
	    diff_fold_known("/var/cache"), ".cache, __pycache__, cargo's and go's caches, /var/cache");
	check(diff_fold_known("/workspace/node_modules") && strcmp(diff_fold_known(
	    "/workspace/node_modules"), "packages") == 0, "node_modules is packages");
	check(diff_fold_known("/workspace/.git") && !diff_fold_known("/workspace/src") &&
	    !diff_fold_known("/workspace/cache") && !diff_fold_known("/var/cachex"),
	    ".git folds; src, cache and /var/cachex do not");
	diff_cursor_make(c, sizeof c, 12, 34, "/workspace/a");
	check(diff_cursor_parse(c, &i, &l, &h) == 0 && i == 12 && l == 34 &&
	    h == diff_cursor_hash("/workspace/a"), "a cursor reads back (%s)", c);
	check(diff_cursor_parse("d1.1.2.0000000g", &i, &l, &h) < 0 &&
	    diff_cursor_parse("d1.1.2.00000000x", &i, &l, &h) < 0 &&
	    diff_cursor_parse("d1.1234567890123.2.00000000", &i, &l, &h) < 0 &&
	    diff_cursor_parse("d1..2.00000000", &i, &l, &h) < 0 &&
	    diff_cursor_parse("", &i, &l, &h) < 0, "what is not a cursor is refused");
}

int
main(void)
{
	char lower[96], upper[96], ws[96], p[256];
	struct got g, g2;
	int root = geteuid() == 0;

	order_and_cursors();
	/* In memory where there is a tmpfs: the last check makes 100,000 files. */
	snprintf(top, sizeof top, "%s/diff-unit-XXXXXX", access("/dev/shm", W_OK) == 0 ?
	    "/dev/shm" : "/tmp");
	if (mkdtemp(top) == NULL)
		return 1;
	snprintf(lower, sizeof lower, "%s/lower", top);
	snprintf(upper, sizeof upper, "%s/upper", top);
	snprintf(ws, sizeof ws, "%s/ws", top);
	layers[0] = (struct backend_layer){ "/", upper, lower };
	layers[1] = (struct backend_layer){ "/workspace", ws, NULL };

	/* The image, and what the sandbox did over it. */
	put("lower/etc/hosts", "127.0.0.1 localhost\n::1 localhost\n");
	put("lower/etc/motd", "hello\n");
	put("lower/etc/same", "same\n");
	put("lower/secret", "root:x:0:0\n");
	put("upper/etc/hosts", "127.0.0.1 localhost\n10.0.0.1 box\n::1 localhost\n");
	put("upper/etc/same", "same\n");
	put("upper/etc/new.bin", "");
	{
		int fd = open(strcat(strcpy(p, top), "/upper/etc/new.bin"), O_WRONLY);
		(void)!write(fd, "\x7f" "ELF\0\0\1", 7);
		close(fd);
	}
	many("upper/var/lib/dpkg/info/p", 20, ".list", "x\n");
	many("upper/home/sandbox/.npm/_cacache/", 30, "", "cached\n");
	put("ws/src/main.c", "int main(void) { return 0; }\n");
	put("ws/src/util.c", "int x;\n");
	many("ws/node_modules/p", 40, "/index.js", "module.exports = 1;\n");
	many("ws/gen/f", 20, "", "g\n");
	/* Links are never followed: not a link in the upper layer, and not a link
	 * in the image that a name in the upper layer matches. */
	snprintf(p, sizeof p, "%s/upper/etc/link", top);
	check(symlink("/etc/shadow", p) == 0, "a link to a host file in the upper layer");
	snprintf(p, sizeof p, "%s/lower/opt", top);
	check(symlink(lower, p) == 0, "a link in the image where the sandbox has a directory");
	put("upper/opt/secret", "mine\n");
	if (root) {
		snprintf(p, sizeof p, "%s/upper/etc/motd", top);
		check(mknod(p, S_IFCHR | 0600, makedev(0, 0)) == 0, "a whiteout for /etc/motd");
	} else {
		skip("whiteouts need root (mknod)");
	}

	memset(&g, 0, sizeof g);
	check(run(&g, NULL, 0, NULL) == 0, "the summary of the whole sandbox");
	for (char *l = g.lines; *l; l = strchr(l, '\n') + 1)
		printf("# %.*s\n", (int)(strchr(l, '\n') - l), l);
	/* /workspace first, then by path; caches, packages and a directory of many
	 * entries folded (not one in /workspace: its own work is listed). */
	char want[4096] = "";
	for (int i = 0; i < 20; i++)
		snprintf(want + strlen(want), sizeof want - strlen(want), "A /workspace/gen/f%02d\n", i);
	snprintf(want + strlen(want), sizeof want - strlen(want),
	    "A /workspace/node_modules/ packages\n"
	    "A /workspace/src/main.c\n"
	    "A /workspace/src/util.c\n"
	    "M /etc/hosts\n"
	    "A /etc/link\n"
	    "%s"
	    "A /etc/new.bin\n"
	    "M /etc/same\n"
	    "A /home/sandbox/.npm/ cache\n"
	    "A /opt/secret\n"
	    "A /var/lib/dpkg/info/ many entries\n", root ? "D /etc/motd\n" : "");
	check(strcmp(g.lines, want) == 0, "the listing's order and folding");
	check(g.info.added == 20 + 40 + 2 + 1 + 1 + 30 + 1 + 20 && g.info.changed == 2 &&
	    g.info.removed == (uint64_t)root, "totals: %llu added, %llu changed, %llu removed",
	    (unsigned long long)g.info.added, (unsigned long long)g.info.changed,
	    (unsigned long long)g.info.removed);
	check(g.info.folded == 3 && g.info.items == g.n && !g.info.walk_cut,
	    "%llu items, 3 folded, the walk whole", (unsigned long long)g.info.items);

	/* Paging: two items at a time, each page from the last one's cursor, make
	 * the same listing. */
	{
		char all[8192] = "", cur[64] = "";
		int pages = 0;
		do {
			memset(&g2, 0, sizeof g2);
			g2.stop_after = 2;
			run(&g2, NULL, 0, cur[0] ? cur : NULL);
			strcat(all, g2.lines);
			snprintf(cur, sizeof cur, "%s", g2.next);
			pages++;
		} while (cur[0] && pages < 100);
		check(strcmp(all, g.lines) == 0 && pages == (int)(g.n + 1) / 2,
		    "pages of 2 from each cursor make the listing (%d pages)", pages);
	}

	/* A path walks that subtree only; a folded directory asked for is listed. */
	memset(&g2, 0, sizeof g2);
	run(&g2, "src", 0, NULL);
	check(strcmp(g2.lines, "A /workspace/src/main.c\nA /workspace/src/util.c\n") == 0 &&
	    g2.info.added == 2, "a relative path is under /workspace, and only it counts");
	memset(&g2, 0, sizeof g2);
	run(&g2, "/home/sandbox/.npm", 0, NULL);
	check(g2.info.added == 30 && g2.info.folded == 1 &&
	    strstr(g2.lines, "A /home/sandbox/.npm/_cacache/ many entries") != NULL,
	    "the cache asked for is walked (its directory of 30 then folds)");
	memset(&g2, 0, sizeof g2);
	run(&g2, "/etc/hosts", 1, NULL);
	check(strcmp(g2.lines, "M /etc/hosts\n--- a/etc/hosts\n+++ b/etc/hosts\n@@ -1,2 +1,3 @@\n"
	    " 127.0.0.1 localhost\n+10.0.0.1 box\n ::1 localhost\n") == 0,
	    "a file asked for by path, with its unified diff");
	memset(&g2, 0, sizeof g2);
	check(run(&g2, "/workspace/../etc", 0, NULL) < 0, "a path that climbs is refused");

	/* Contents: a binary file is said to be, the same bytes are an empty diff,
	 * a link has none, and nothing is read through the image's link. */
	memset(&g2, 0, sizeof g2);
	run(&g2, "/etc", 1, NULL);
	check(strstr(g2.lines, "A /etc/new.bin binary\n") != NULL, "a binary file is said to be");
	check(strstr(g2.lines, "M /etc/same\n") != NULL &&
	    strstr(g2.lines, "--- a/etc/same") == NULL, "the same bytes: an empty diff");
	check(strstr(g2.lines, "A /etc/link\n--") == NULL, "a link has no contents");
	memset(&g2, 0, sizeof g2);
	run(&g2, "/opt", 1, NULL);
	check(strstr(g2.lines, "A /opt/secret\n") != NULL && strstr(g2.lines, "root:x") == NULL,
	    "a name under a link in the image is new, and the host file is not read");

	/* A diff paged by its lines: the cursor names a line of it. */
	memset(&g2, 0, sizeof g2);
	g2.next_line = 3;
	run(&g2, "/etc/hosts", 1, NULL);
	{
		char first[8192], cur[64];
		snprintf(first, sizeof first, "%s", g2.lines);
		snprintf(cur, sizeof cur, "%s", g2.next);
		memset(&g2, 0, sizeof g2);
		run(&g2, "/etc/hosts", 1, cur);
		check(strcmp(first, "M /etc/hosts\n--- a/etc/hosts\n+++ b/etc/hosts\n@@ -1,2 +1,3 @@\n")
		    == 0 && strcmp(g2.lines, "M /etc/hosts\n 127.0.0.1 localhost\n+10.0.0.1 box\n"
		    " ::1 localhost\n") == 0, "a diff's second part starts at the cursor's line");
		/* The sandbox changed: the item at the cursor is another one. */
		put("upper/etc/aaa", "new\n");
		memset(&g2, 0, sizeof g2);
		run(&g2, "/etc", 1, cur);
		check(g2.info.cursor_stale, "a cursor whose item moved is said to be stale");
		memset(&g2, 0, sizeof g2);
		check(run(&g2, NULL, 0, "d2.x") < 0, "a cursor no diff made is refused");
	}

	/* More entries than are kept: counted, and the directory says so. */
	{
		char d[128];
		int n = 100200;
		snprintf(d, sizeof d, "%s/ws/big", top);
		mkdir(d, 0755);
		for (int i = 0; i < n; i++) {
			snprintf(p, sizeof p, "%s/%d", d, i);
			int fd = open(p, O_WRONLY | O_CREAT, 0644);
			if (fd >= 0)
				close(fd);
		}
		memset(&g2, 0, sizeof g2);
		run(&g2, "/workspace", 0, NULL);
		check(g2.info.added == (uint64_t)n + 20 + 40 + 2 &&
		    strstr(g2.lines, "A /workspace/big/ too many to list\n") != NULL,
		    "%d files: counted whole (%llu added), the rest folded as too many to list", n,
		    (unsigned long long)g2.info.added);
	}
	snprintf(p, sizeof p, "rm -rf '%s'", top);
	(void)!system(p);
	printf("1..%d\n", ntests);
	return nfailed != 0;
}
