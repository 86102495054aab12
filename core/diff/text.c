/* Reading and comparing one file of a diff: opens relative to a directory
 * that never follow a link, a text sniff, and a unified diff (common ends,
 * then a longest common subsequence of the middle while it is small, else all
 * removed then all added). */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/diff/text.h"
#include "lib/buf.h"
#include "lib/utf8.h"
#include "lib/util.h"

int
diff_open_beneath(const char *root, const char *rel)
{
	int fd = open(root, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	while (fd >= 0 && *rel) {
		const char *s = strchrnul(rel, '/');
		char name[256];
		size_t k = (size_t)(s - rel);
		int nfd = -1;
		if (k > 0 && k < sizeof name) {
			memcpy(name, rel, k);
			name[k] = '\0';
			if (strcmp(name, "..") != 0)
				nfd = openat(fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		close(fd);
		fd = nfd;
		rel = *s ? s + 1 : s;
	}
	return fd;
}

char *
diff_read_at(int dir, const char *name, size_t max, size_t *len, int *whole, int *binary)
{
	int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat st;
	char *b = NULL;
	size_t n = 0;
	ssize_t k;

	*binary = 0;
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		size_t want = (uint64_t)st.st_size < max ? (size_t)st.st_size : max;
		b = xmalloc(want + 1);
		while (n < want && (k = read(fd, b + n, want - n)) > 0) {
			n += (size_t)k;
			if (n >= (DIFF_SNIFF < want ? DIFF_SNIFF : want) &&
			    memchr(b, '\0', n < DIFF_SNIFF ? n : DIFF_SNIFF) != NULL) {
				*binary = 1;
				break;
			}
		}
		b[n] = '\0';
		*len = n;
		*whole = (uint64_t)st.st_size <= n;
	}
	close(fd);
	return b;
}

int
diff_is_text(const char *b, size_t n)
{
	size_t ctl = 0, k = utf8_complete_prefix(b, n);

	if (memchr(b, '\0', n) != NULL || !utf8_valid(b, k) || n - k > 3)
		return 0;
	for (size_t i = 0; i < n; i++)
		ctl += (unsigned char)b[i] < 0x20 && b[i] != '\n' && b[i] != '\t' &&
		    b[i] != '\r' && b[i] != '\f' && b[i] != 0x1b;
	return ctl * 20 <= n;
}

struct lines_v {
	const char	*b;
	uint32_t	*off, *len;	/* 8 bytes a line: a file of empty lines stays small */
	size_t		 n;
};

static void
split(const char *b, size_t n, struct lines_v *l)
{
	size_t cap = 16;

	l->b = b;
	l->off = xcalloc(cap, sizeof *l->off);
	l->len = xcalloc(cap, sizeof *l->len);
	l->n = 0;
	for (size_t i = 0; i < n;) {
		const char *nl = memchr(b + i, '\n', n - i);
		size_t e = nl ? (size_t)(nl - b) : n;
		if (l->n == cap) {
			cap *= 2;
			l->off = xrealloc(l->off, cap * sizeof *l->off);
			l->len = xrealloc(l->len, cap * sizeof *l->len);
		}
		l->off[l->n] = (uint32_t)i;
		l->len[l->n++] = (uint32_t)(e - i);
		i = e + 1;
	}
}

static void
lines_free(struct lines_v *l)
{
	free(l->off);
	free(l->len);
}

static int
line_eq(const struct lines_v *a, size_t i, const struct lines_v *b, size_t j)
{
	return a->len[i] == b->len[j] && memcmp(a->b + a->off[i], b->b + b->off[j], a->len[i]) == 0;
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

char *
diff_unified(const char *path, const char *ab, size_t an, const char *bb, size_t bn, int cut)
{
	struct lines_v a, b;
	char *ops;
	size_t n;
	struct buf out;

	split(ab, an, &a);
	split(bb, bn, &b);
	n = diff_ops(&a, &b, &ops);
	/* The name as text: a newline or an escape in it stays in its line. */
	char *name = xmalloc(4 * strlen(path) + 1);
	utf8_escape_controls(path, strlen(path), name, 4 * strlen(path) + 1, 0);
	buf_init(&out, DIFF_OUT_MAX);
	buf_printf(&out, "--- a%s\n+++ b%s\n", name, name);
	free(name);
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
		full = buf_printf(&out, "@@ -%s +%s @@\n", ra, rb) < 0;
		size_t pa = sa, pb = sb;
		for (size_t q = start; q < end && !full; q++) {
			const struct lines_v *l = ops[q] == '+' ? &b : &a;
			size_t at = ops[q] == '+' ? pb : pa;
			full = buf_printf(&out, "%c%.*s\n", ops[q], (int)l->len[at],
			    l->b + l->off[at]) < 0;
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
	lines_free(&a);
	lines_free(&b);
	return buf_steal(&out);
}

