/* The theme loader and colour table (see theme.h).  A theme file is data: one
 * line per element, "#" comments. */
#include <ctype.h>
#include <curses.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/paths.h"
#include "lib/util.h"
#include "tui/theme.h"

struct th_entry {
	short	fg, bg;		/* -1: the terminal's default */
	int	attrs;
};

static const char *const el_names[TH_COUNT] = {
	"normal", "title", "border", "header", "selected", "dim", "running",
	"suspended", "error", "ok", "fail", "tab", "tab_active", "prompt",
	"keybar", "key", "human", "agent", "approval", "exec_head",
	"stderr",
};

/* Without colour each element keeps these, so a selection still shows. */
static const int mono[TH_COUNT] = {
	[TH_TITLE] = A_REVERSE, [TH_HEADER] = A_BOLD, [TH_SELECTED] = A_REVERSE,
	[TH_DIM] = A_DIM, [TH_ERROR] = A_BOLD, [TH_FAIL] = A_BOLD,
	[TH_TAB_ACTIVE] = A_REVERSE, [TH_KEY] = A_BOLD, [TH_APPROVAL] = A_REVERSE | A_BOLD,
	[TH_EXEC_HEAD] = A_BOLD, [TH_PROMPT] = A_BOLD, [TH_STDERR] = A_BOLD,
};

/* The built-in dark theme, used when no theme file can be found. */
static const struct th_entry builtin[TH_COUNT] = {
	[TH_NORMAL] = { -1, -1, 0 }, [TH_TITLE] = { COLOR_BLACK, COLOR_CYAN, A_BOLD },
	[TH_BORDER] = { COLOR_BLUE, -1, 0 }, [TH_HEADER] = { COLOR_CYAN, -1, A_BOLD },
	[TH_SELECTED] = { COLOR_BLACK, COLOR_CYAN, 0 }, [TH_DIM] = { -1, -1, A_DIM },
	[TH_RUNNING] = { COLOR_GREEN, -1, 0 }, [TH_SUSPENDED] = { COLOR_YELLOW, -1, 0 },
	[TH_ERROR] = { COLOR_RED, -1, A_BOLD }, [TH_OK] = { COLOR_GREEN, -1, 0 },
	[TH_FAIL] = { COLOR_RED, -1, 0 }, [TH_TAB] = { -1, -1, 0 },
	[TH_TAB_ACTIVE] = { COLOR_BLACK, COLOR_CYAN, A_BOLD },
	[TH_PROMPT] = { COLOR_YELLOW, -1, A_BOLD }, [TH_KEYBAR] = { -1, -1, 0 },
	[TH_KEY] = { COLOR_BLACK, COLOR_CYAN, 0 }, [TH_HUMAN] = { COLOR_MAGENTA, -1, 0 },
	[TH_AGENT] = { COLOR_CYAN, -1, 0 }, [TH_APPROVAL] = { COLOR_WHITE, COLOR_RED, A_BOLD },
	[TH_EXEC_HEAD] = { -1, -1, A_BOLD }, [TH_STDERR] = { COLOR_YELLOW, -1, 0 },
};

static struct th_entry table[TH_COUNT];
static char loaded[64] = "default";
static int use_colour;
/* The pairs theme_attr_over made since the last theme_apply (0: none yet),
 * numbered after the elements' own: COLOR_PAIR() holds 8 bits, so pairs are
 * given out as combinations are used rather than one for each there could be. */
static unsigned char mixed[TH_COUNT][TH_COUNT];
static int mixed_next;

const char *
theme_el_name(enum theme_el el)
{
	return el_names[el];
}

const char *
theme_name(void)
{
	return loaded;
}

/* Where theme files are looked for, in order. */
static size_t
theme_dirs(char dirs[][PATH_MAX], size_t max)
{
	size_t n = 0;
	const char *env = getenv("SBXTOP_THEME_DIR");
	char exe[PATH_MAX - 64];
	ssize_t len;
	struct sbx_err e;
	char *cfg;

	if (env && *env && n < max)
		snprintf(dirs[n++], PATH_MAX, "%s", env);
	if ((cfg = paths_dir(PATHS_CONFIG, &e)) != NULL) {
		snprintf(dirs[n++], PATH_MAX, "%s/themes", cfg);
		free(cfg);
	}
	/* Next to the binary: build/sbxtop (or build/san/sbxtop) in the source
	 * tree, PREFIX/bin when installed. */
	if ((len = readlink("/proc/self/exe", exe, sizeof exe - 1)) > 0) {
		exe[len] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			snprintf(dirs[n++], PATH_MAX, "%s/../themes", exe);
			snprintf(dirs[n++], PATH_MAX, "%s/../../themes", exe);
			snprintf(dirs[n++], PATH_MAX, "%s/../share/sbxtop/themes", exe);
			/* PREFIX/lib/sbxtop/sbxtop-core, which the thin sbxtop runs. */
			snprintf(dirs[n++], PATH_MAX, "%s/../../share/sbxtop/themes", exe);
		}
	}
	snprintf(dirs[n++], PATH_MAX, "/usr/local/share/sbxtop/themes");
	snprintf(dirs[n++], PATH_MAX, "/usr/share/sbxtop/themes");
	return n;
}

static int
colour_of(const char *w, short *out)
{
	static const char *const names[] = { "black", "red", "green", "yellow", "blue",
		"magenta", "cyan", "white" };
	char *end;
	long v;

	if (strcmp(w, "default") == 0 || strcmp(w, "-") == 0) {
		*out = -1;
		return 0;
	}
	for (int i = 0; i < 8; i++) {
		if (strcmp(w, names[i]) == 0) {
			*out = (short)i;
			return 0;
		}
		if (strncmp(w, "bright-", 7) == 0 && strcmp(w + 7, names[i]) == 0) {
			*out = (short)(8 + i);
			return 0;
		}
	}
	v = strtol(w, &end, 10);
	if (*w && *end == '\0' && v >= 0 && v <= 255) {
		*out = (short)v;
		return 0;
	}
	return -1;
}

static int
attr_of(const char *w, int *out)
{
	static const struct { const char *n; int a; } names[] = {
		{ "bold", A_BOLD }, { "dim", A_DIM }, { "underline", A_UNDERLINE },
		{ "reverse", A_REVERSE }, { "standout", A_STANDOUT }, { "italic", A_ITALIC },
		{ "blink", A_BLINK }, { "none", 0 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (strcmp(w, names[i].n) == 0) {
			*out |= names[i].a;
			return 0;
		}
	return -1;
}

static int
parse(FILE *f, const char *path, struct th_entry *t, struct sbx_err *e)
{
	char line[512];
	int ln = 0;

	while (fgets(line, sizeof line, f)) {
		char *p = line, *eq, *w, *save = NULL;
		int el = -1, k = 0;
		ln++;
		if ((w = strchr(p, '#')) != NULL)
			*w = '\0';
		while (isspace((unsigned char)*p))
			p++;
		if (*p == '\0' || *p == '\n')
			continue;
		if ((eq = strchr(p, '=')) == NULL)
			return sbx_error(e, SBX_EINVAL, "lines read `element = fg bg [attrs]`",
			    "%s:%d: no '='", path, ln);
		*eq = '\0';
		for (char *q = eq - 1; q >= p && isspace((unsigned char)*q); q--)
			*q = '\0';
		for (int i = 0; i < TH_COUNT; i++)
			if (strcmp(p, el_names[i]) == 0)
				el = i;
		if (el < 0)
			return sbx_error(e, SBX_EINVAL, "see sbxtop(1), THEMES, for the elements",
			    "%s:%d: unknown element '%s'", path, ln, p);
		t[el] = (struct th_entry){ -1, -1, 0 };
		for (w = strtok_r(eq + 1, " \t\r\n", &save); w; w = strtok_r(NULL, " \t\r\n",
		    &save), k++) {
			int bad = k == 0 ? colour_of(w, &t[el].fg) : k == 1 ?
			    colour_of(w, &t[el].bg) : attr_of(w, &t[el].attrs);
			if (bad)
				return sbx_error(e, SBX_EINVAL, "colours: default, black..white, "
				    "bright-red.., 0-255; attributes: bold dim underline reverse "
				    "italic", "%s:%d: '%s' is not a %s", path, ln, w,
				    k < 2 ? "colour" : "attribute");
		}
	}
	return 0;
}

int
theme_load(const char *name, struct sbx_err *e)
{
	char dirs[10][PATH_MAX], path[PATH_MAX + 80];
	struct th_entry t[TH_COUNT];
	size_t n;
	FILE *f = NULL;

	if (strchr(name, '/') != NULL) {
		snprintf(path, sizeof path, "%s", name);
		f = fopen(path, "re");
	} else {
		if (*name == '\0' || strspn(name, "abcdefghijklmnopqrstuvwxyz"
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") != strlen(name) || name[0] == '.')
			return sbx_error(e, SBX_EINVAL, NULL, "'%s' is not a theme name", name);
		n = theme_dirs(dirs, ARRAY_SIZE(dirs));
		for (size_t i = 0; i < n && f == NULL; i++) {
			snprintf(path, sizeof path, "%s/%s.theme", dirs[i], name);
			f = fopen(path, "re");
		}
	}
	if (f == NULL) {
		if (strcmp(name, "default") == 0) {
			memcpy(table, builtin, sizeof table);
			snprintf(loaded, sizeof loaded, "default");
			return 0;
		}
		char list[512];
		theme_list(list, sizeof list);
		return sbx_error(e, SBX_ENOTFOUND, list[0] ? list : NULL,
		    "no theme '%s'%s", name, list[0] ? " (there are: see the hint)" : "");
	}
	memcpy(t, builtin, sizeof t);
	int rc = parse(f, path, t, e);
	fclose(f);
	if (rc < 0)
		return -1;
	memcpy(table, t, sizeof table);
	snprintf(loaded, sizeof loaded, "%s", strchr(name, '/') ? strrchr(name, '/') + 1 :
	    name);
	return 0;
}

void
theme_list(char *buf, size_t len)
{
	char dirs[10][PATH_MAX];
	size_t n = theme_dirs(dirs, ARRAY_SIZE(dirs)), used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		DIR *d = opendir(dirs[i]);
		struct dirent *de;
		if (d == NULL)
			continue;
		while ((de = readdir(d)) != NULL) {
			size_t l = strlen(de->d_name);
			if (l < 7 || strcmp(de->d_name + l - 6, ".theme") != 0)
				continue;
			char nm[256];
			snprintf(nm, sizeof nm, "%.*s", (int)(l - 6), de->d_name);
			if (strstr(buf, nm) != NULL)
				continue;
			used += (size_t)snprintf(buf + used, used < len ? len - used : 0, "%s%s",
			    used ? ", " : "", nm);
			if (used >= len) {
				buf[len - 1] = '\0';
				closedir(d);
				return;
			}
		}
		closedir(d);
	}
}

/* The nearest of the eight basic colours to xterm colour c (16..255). */
static short
to8(short c)
{
	int r, g, b;

	if (c < 0 || c < COLORS)
		return c;
	if (c < 16)
		return (short)(c - 8);
	if (c >= 232) {
		int l = (c - 232) * 10 + 8;
		return l < 64 ? COLOR_BLACK : COLOR_WHITE;
	}
	c -= 16;
	r = c / 36, g = (c / 6) % 6, b = c % 6;
	return (short)((r >= 3 ? 1 : 0) | (g >= 3 ? 2 : 0) | (b >= 3 ? 4 : 0));
}

void
theme_apply(void)
{
	const char *nc = getenv("NO_COLOR");

	use_colour = has_colors() && !(nc && *nc) && strcmp(loaded, "monochrome") != 0;
	if (!use_colour)
		return;
	start_color();
	use_default_colors();
	for (int i = 0; i < TH_COUNT; i++)
		init_pair((short)(i + 1), to8(table[i].fg), to8(table[i].bg));
	memset(mixed, 0, sizeof mixed);
	mixed_next = TH_COUNT + 1;
}

int
theme_attr(enum theme_el el)
{
	if (!use_colour)
		return table[el].attrs | mono[el];
	return table[el].attrs | (int)COLOR_PAIR(el + 1);
}

int
theme_attr_over(enum theme_el base, enum theme_el over)
{
	short fg = table[over].fg >= 0 ? table[over].fg : table[base].fg;
	short bg = table[base].bg >= 0 ? table[base].bg : table[over].bg;

	if (!use_colour)
		return table[base].attrs | table[over].attrs | mono[base] | mono[over];
	if (mixed[base][over] == 0) {
		if (mixed_next > 255 || mixed_next >= COLOR_PAIRS)
			return table[base].attrs | theme_attr(over);
		init_pair((short)mixed_next, to8(fg), to8(bg));
		mixed[base][over] = (unsigned char)mixed_next++;
	}
	return table[base].attrs | table[over].attrs | (int)COLOR_PAIR(mixed[base][over]);
}
