/* The order, folding and cursors of a sandbox's changes (diff-order.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/diff/order.h"

#define WORKSPACE	"/workspace"

/* 0 for /workspace and what is under it, 1 for the rest. */
static int
rank(const char *p)
{
	size_t n = sizeof WORKSPACE - 1;

	return !(strncmp(p, WORKSPACE, n) == 0 && (p[n] == '\0' || p[n] == '/'));
}

int
diff_order_cmp(const char *a, const char *b)
{
	const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
	int ra = rank(a), rb = rank(b);

	if (ra != rb)
		return ra - rb;
	/* '/' below every byte of a name, the end below '/': component order. */
	for (;; x++, y++) {
		int cx = *x == '\0' ? -1 : *x == '/' ? 0 : *x + 1;
		int cy = *y == '\0' ? -1 : *y == '/' ? 0 : *y + 1;
		if (cx != cy)
			return cx - cy;
		if (cx == -1)
			return 0;
	}
}

/* Whether path ends with the components of tail ("/.cargo/registry"). */
static int
ends_with(const char *path, const char *tail)
{
	size_t n = strlen(path), k = strlen(tail);

	return n >= k && strcmp(path + n - k, tail) == 0;
}

const char *
diff_fold_known(const char *path)
{
	/* By the directory's own name, wherever it is. */
	static const struct { const char *name, *why; } names[] = {
		{ ".npm", "cache" }, { ".cache", "cache" }, { "__pycache__", "cache" },
		{ ".pytest_cache", "cache" }, { ".mypy_cache", "cache" },
		{ ".ruff_cache", "cache" }, { ".pnpm-store", "cache" }, { ".gradle", "cache" },
		{ ".m2", "cache" }, { ".rustup", "cache" }, { ".node-gyp", "cache" },
		{ "node_modules", "packages" }, { "site-packages", "packages" },
		{ "dist-packages", "packages" }, { ".git", "git" },
	};
	/* By its last components, or whole. */
	static const struct { const char *tail, *why; } tails[] = {
		{ "/.cargo/registry", "cache" }, { "/.cargo/git", "cache" },
		{ "/go/pkg/mod", "cache" }, { "/.yarn/cache", "cache" },
		{ "/.local/share/pnpm", "cache" },
	};
	static const char *const whole[] = { "/var/cache", "/var/lib/apt/lists", NULL };
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(base, names[i].name) == 0)
			return names[i].why;
	for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++)
		if (ends_with(path, tails[i].tail))
			return tails[i].why;
	for (size_t i = 0; whole[i]; i++)
		if (strcmp(path, whole[i]) == 0)
			return "cache";
	return NULL;
}

/* FNV-1a. */
uint32_t
diff_cursor_hash(const char *path)
{
	uint32_t h = 2166136261u;

	for (const unsigned char *p = (const unsigned char *)path; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h;
}

void
diff_cursor_make(char *buf, size_t len, uint64_t index, uint64_t line, const char *path)
{
	snprintf(buf, len, "d1.%llu.%llu.%08x", (unsigned long long)index,
	    (unsigned long long)line, diff_cursor_hash(path));
}

/* Decimal digits (at most 12) at *s, moved past. */
static int
number(const char **s, uint64_t *v)
{
	const char *p = *s;
	uint64_t n = 0;

	if (*p < '0' || *p > '9')
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (p - *s >= 12)
			return -1;
		n = n * 10 + (uint64_t)(*p - '0');
	}
	*v = n;
	*s = p;
	return 0;
}

int
diff_cursor_parse(const char *s, uint64_t *index, uint64_t *line, uint32_t *hash)
{
	uint32_t h = 0;

	if (s == NULL || strncmp(s, "d1.", 3) != 0)
		return -1;
	s += 3;
	if (number(&s, index) < 0 || *s++ != '.' || number(&s, line) < 0 || *s++ != '.')
		return -1;
	for (int i = 0; i < 8; i++, s++) {
		int d = *s >= '0' && *s <= '9' ? *s - '0' : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10 : -1;
		if (d < 0)
			return -1;
		h = h << 4 | (uint32_t)d;
	}
	if (*s != '\0')
		return -1;
	*hash = h;
	return 0;
}
