/* sbxtop diff: what changed in a sandbox since it was created, for a person:
 * the patch of the paths asked for, as git diff gives it, item by item as the
 * core hands them out (caches, packages and big directories one line each),
 * up to --max-bytes of output, then what was left out and how to go on.
 * Every name and line comes from the sandbox: none reaches the terminal with
 * a control character in it. */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "lib/utf8.h"
#include "lib/util.h"

#define MAX_BYTES_DEFAULT	(1u << 20)
#define MAX_BYTES_MAX		(1ull << 30)

static int cmd_diff(struct cli *cli, int argc, char **argv);

static const struct option options[] = {
	{ "json", no_argument, NULL, 'j' }, { "stat", no_argument, NULL, 's' },
	{ "max-bytes", required_argument, NULL, 'm' },
	{ "cursor", required_argument, NULL, 'c' },
	{ NULL, 0, NULL, 0 },
};

const struct cmd_entry cmd_diff_entry = {
	"diff", "ID [PATH] [--stat] [--json] [--max-bytes N] [--cursor C]",
	"show what changed in a sandbox",
	"  ID         an id, a unique prefix of one, or a name\n"
	"  PATH       only changes at or under this sandbox path, and only it is walked\n"
	"             (relative: under /workspace)\n"
	"  --stat     one line per file (A added, M changed, D removed) with its size, and\n"
	"             the totals\n"
	"  --json     {sandbox_id, totals, changes: [{path, change, type, size, lower_size,\n"
	"             folded, files, binary, diff}], truncated, next_cursor}\n"
	"  --max-bytes N\n"
	"             stop after about N bytes of output (K, M, G suffixes; default 1M),\n"
	"             saying how to go on\n"
	"  --cursor C continue where an earlier diff stopped (it prints C)\n"
	"  Text files get a unified diff against the layer below; binary files their sizes.\n"
	"  Caches (~/.npm, ~/.cache, __pycache__, ...), packages (node_modules, site-packages),\n"
	"  .git and directories with many changed entries are one line with a count: give\n"
	"  one as PATH to see what is in it.  Names and lines are printed with control\n"
	"  characters escaped (\\xNN).  ns sandboxes only: the changes are read from the\n"
	"  overlay's upper layers.\n",
	cmd_diff,
	.options = options,
	.words = "sandbox",
};

struct out {
	int		 stat, json;
	uint64_t	 max, written;
	cJSON		*changes;
	uint64_t	 n, first, last;
	char		 next[64];
	int		 unread;
};

/* printf to stdout, counted. */
static void __attribute__((format(printf, 2, 3)))
put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vprintf(fmt, ap);
	va_end(ap);
	o->written += n > 0 ? (uint64_t)n : 0;
}

/* s (n bytes, from the sandbox) with its control characters escaped; tabs kept
 * when tabs. */
static void
put_safe(struct out *o, const char *s, size_t n, int tabs)
{
	char buf[4 * 1024 + 8];

	while (n > 0) {
		size_t k = n < 1024 ? n : 1024;
		if (k < n)
			k = utf8_complete_prefix(s, k);
		if (k == 0)
			k = n < 4 ? n : 4;
		o->written += utf8_escape_controls(s, k, buf, sizeof buf, tabs);
		fputs(buf, stdout);
		s += k;
		n -= k;
	}
}

/* "A /etc/hosts  174 -> 200 bytes", "A /workspace/node_modules/  887 files,
 * 3412340 bytes (packages)". */
static void
put_line(struct out *o, const struct core_diff_item *it)
{
	put(o, "%c ", it->change);
	put_safe(o, it->path, strlen(it->path), 0);
	if (it->folded) {
		uint64_t files = it->added + it->changed + it->removed;
		put(o, "  %llu file%s", (unsigned long long)files, files == 1 ? "" : "s");
		if (it->added != files && it->changed != files && it->removed != files)
			put(o, " (%llu added, %llu changed, %llu removed)",
			    (unsigned long long)it->added, (unsigned long long)it->changed,
			    (unsigned long long)it->removed);
		put(o, ", %lld bytes (%s)\n", (long long)it->bytes, it->folded);
		return;
	}
	if (strcmp(it->type, "file") != 0)
		put(o, " (%s)", it->type);
	if (it->size >= 0 && it->lower_size >= 0)
		put(o, "  %lld -> %lld bytes", (long long)it->lower_size, (long long)it->size);
	else if (it->size >= 0 || it->lower_size >= 0)
		put(o, "  %lld bytes", (long long)(it->size >= 0 ? it->size : it->lower_size));
	put(o, "\n");
}

static int
take(void *arg, const struct core_diff_info *info, const struct core_diff_item *it)
{
	struct out *o = arg;
	const char *d = it->diff;
	uint64_t lines = 0;

	(void)info;
	if (it->unread || (o->n > 0 && o->written >= o->max)) {
		core_diff_cursor(it, it->line, o->next, sizeof o->next);
		o->unread = it->unread;
		return 1;
	}
	if (o->n++ == 0)
		o->first = it->index;
	o->last = it->index;
	if (o->json) {
		size_t n = d ? strlen(d) : 0, k = n;
		if (o->written + n > o->max && o->n > 1) {
			/* Whole lines up to the limit; the rest on the next call. */
			k = 0;
			for (const char *q = d; *q && o->written + (uint64_t)(q - d) < o->max; q++)
				if (*q == '\n') {
					k = (size_t)(q - d) + 1;
					lines++;
				}
			if (k == 0) {
				o->n--;
				core_diff_cursor(it, it->line, o->next, sizeof o->next);
				return 1;
			}
			core_diff_cursor(it, it->line + lines, o->next, sizeof o->next);
		}
		cJSON_AddItemToArray(o->changes, core_diff_item_json(it, k));
		o->written += k + 200;
		return o->next[0] != '\0';
	}
	if (o->stat || d == NULL || *d == '\0' || it->binary) {
		put_line(o, it);
		if (!o->stat && it->binary)
			put(o, "  binary file: not shown\n");
		return 0;
	}
	if (it->line > 0) {
		put(o, "%c ", it->change);
		put_safe(o, it->path, strlen(it->path), 0);
		put(o, "  (its diff from line %llu of %llu)\n", (unsigned long long)it->line + 1,
		    (unsigned long long)it->lines);
	}
	/* Line by line, up to the limit (at least one line of the first item). */
	while (*d) {
		const char *nl = strchr(d, '\n');
		size_t k = nl ? (size_t)(nl - d) : strlen(d);
		if (o->written >= o->max && (o->n > 1 || lines > 0)) {
			core_diff_cursor(it, it->line + lines, o->next, sizeof o->next);
			return 1;
		}
		put_safe(o, d, k, 1);
		put(o, "\n");
		lines++;
		d += nl ? k + 1 : k;
	}
	return 0;
}

/* "1M" and the like; 0 on a bad one. */
static uint64_t
parse_size(const char *s)
{
	char *end;
	unsigned long long n = strtoull(s, &end, 10);

	if (end == s || *s == '-')
		return 0;
	if (*end == 'K' || *end == 'k')
		n <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		n <<= 20, end++;
	else if (*end == 'G' || *end == 'g')
		n <<= 30, end++;
	return *end || n > MAX_BYTES_MAX ? 0 : n;
}

static int
cmd_diff(struct cli *cli, int argc, char **argv)
{
	struct core_diff_opts o = { 0 };
	struct core_diff_info info;
	struct out out = { .max = MAX_BYTES_DEFAULT };
	struct sbx_err e;
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", options, NULL)) != -1) {
		if (c == 'j')
			out.json = 1;
		else if (c == 's')
			out.stat = 1;
		else if (c == 'c')
			o.cursor = optarg;
		else if (c == 'm' && (out.max = parse_size(optarg)) == 0)
			return cli_usage(&cmd_diff_entry, "--max-bytes wants a size from 1 to 1G "
			    "(512K, 4M), not %s", optarg);
		else if (c != 'm')
			return cli_bad_option(&cmd_diff_entry, c, argv);
	}
	if (argc - optind < 1 || argc - optind > 2)
		return cli_usage(&cmd_diff_entry, "expected a sandbox and at most one path");
	o.path = argc - optind == 2 ? argv[optind + 1] : NULL;
	o.content = !out.stat;
	if (out.json)
		out.changes = cJSON_CreateArray();
	if (core_diff(cli->core, argv[optind], &o, take, &out, &info, &e) < 0) {
		cJSON_Delete(out.changes);
		return cli_error(&e);
	}
	if (out.json) {
		cJSON *r = core_diff_result_json(&info, out.changes, out.next);

		cli_print_json(stdout, r, 1);
		cJSON_Delete(r);
	} else if (out.stat) {
		printf("%llu added, %llu changed, %llu removed; %lld bytes in files added or "
		    "changed", (unsigned long long)info.added, (unsigned long long)info.changed,
		    (unsigned long long)info.removed, (long long)info.bytes);
		if (info.folded)
			printf("; %llu director%s folded", (unsigned long long)info.folded,
			    info.folded == 1 ? "y" : "ies");
		printf("\n");
	}
	fflush(stdout);
	/* What was left out, and how to get it. */
	if (out.next[0]) {
		char key[256], path[4 * 4096 + 8];
		fprintf(stderr, "sbxtop: stopped after %s (items %llu-%llu of %llu); the rest: "
		    "sbxtop diff %s%s%s%s --cursor %s\n", out.unread ? "as many bytes of files "
		    "as one diff reads" : "--max-bytes of output",
		    (unsigned long long)out.first + 1, (unsigned long long)out.last + 1,
		    (unsigned long long)info.items, cli_safe(argv[optind], key, sizeof key),
		    o.path ? " '" : "", o.path ? cli_safe(o.path, path, sizeof path) : "",
		    o.path ? "'" : "", out.next);
	}
	if (info.folded && !out.json)
		fprintf(stderr, "sbxtop: %llu director%s folded into one line (caches, packages, "
		    "many entries): give one as PATH to see what is in it\n",
		    (unsigned long long)info.folded, info.folded == 1 ? "y is" : "ies are");
	if (info.walk_cut)
		fprintf(stderr, "sbxtop: the walk stopped at its limit of entries: the counts "
		    "are of what it looked at (give a PATH to look at less)\n");
	if (info.unlisted)
		fprintf(stderr, "sbxtop: %llu changes are counted but not listed (more than one "
		    "diff keeps): give a PATH below to list them\n",
		    (unsigned long long)info.unlisted);
	if (info.unreadable)
		fprintf(stderr, "sbxtop: %llu directories could not be read as this user\n",
		    (unsigned long long)info.unreadable);
	if (info.cursor_stale)
		fprintf(stderr, "sbxtop: the sandbox changed since the cursor was made: items "
		    "may repeat or be missed (run again without --cursor to be sure)\n");
	return 0;
}
