/* sandbox_diff: what changed in a sandbox since it was created, written for a
 * model's budget (DESIGN.md section 14).  By default a summary: the totals,
 * then the paths in a stable order, /workspace first, caches, packages and
 * directories of many entries folded into one line with a count; with content,
 * the unified diffs of what a path names.  Each page's text, and its
 * structuredContent, keeps within the budget; next_cursor continues it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/utf8.h"
#include "lib/util.h"
#include "mcp/tool-util.h"

/* Characters of a result's text (and of its structuredContent as JSON): the
 * default of the shared result budget, which feeds diff_page's budget. */
/* Kept for the totals, the notes and the cursor around the items. */
#define DIFF_RESERVE		2200
#define DIFF_PATH_SHOWN		1024	/* bytes of a path a line shows */

struct page {
	size_t			 room;		/* for the items: text and JSON each */
	size_t			 max_items;
	struct buf		 text;
	size_t			 json;		/* the items' JSON so far */
	cJSON			*changes;
	uint64_t		 n, first, last;	/* items taken; first and last index */
	char			 next[64];	/* where the next page starts, or "" */
	int			 unread;	/* stopped at the bytes one call reads */
	int			 line_cut;	/* a line longer than the page was cut */
};

/* Bytes of s as a JSON string's contents (cJSON's escapes). */
static size_t
json_len(const char *s, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		k += c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' ||
		    c == '\t' ? 2 : c < 0x20 ? 6 : 1;
	}
	return k;
}

/* "1.2 MB" */
static void
human(char *buf, size_t len, int64_t n)
{
	if (n < 1000)
		snprintf(buf, len, "%lld B", (long long)n);
	else if (n < 1000000)
		snprintf(buf, len, "%.1f KB", (double)n / 1e3);
	else if (n < 1000000000)
		snprintf(buf, len, "%.1f MB", (double)n / 1e6);
	else
		snprintf(buf, len, "%.1f GB", (double)n / 1e9);
}

/* The line that names item it: "A /workspace/src/a.c  1.2 KB", "A
 * /workspace/node_modules/  887 files, 3.4 MB (packages)"; control characters
 * and bytes that are not UTF-8 in the path escaped, a long path cut. */
static void
item_line(struct buf *b, const struct core_diff_item *it, int content)
{
	char p[4 * DIFF_PATH_SHOWN + 8], a[32], c[32];
	size_t n = strlen(it->path);

	utf8_escape_controls(it->path, n < DIFF_PATH_SHOWN ? n : DIFF_PATH_SHOWN, p, sizeof p, 0);
	buf_printf(b, "%c %s%s", it->change, p, n > DIFF_PATH_SHOWN ? "\xe2\x80\xa6" : "");
	if (it->folded) {
		uint64_t files = it->added + it->changed + it->removed;
		human(a, sizeof a, it->bytes);
		buf_printf(b, "  %llu file%s", (unsigned long long)files, files == 1 ? "" : "s");
		if (it->added != files && it->changed != files && it->removed != files)
			buf_printf(b, " (%llu added, %llu changed, %llu removed)",
			    (unsigned long long)it->added, (unsigned long long)it->changed,
			    (unsigned long long)it->removed);
		buf_printf(b, ", %s (%s)\n", a, it->folded);
		return;
	}
	if (strcmp(it->type, "file") != 0)
		buf_printf(b, " (%s)", it->type);
	if (it->size >= 0 && it->lower_size >= 0) {
		human(a, sizeof a, it->lower_size);
		human(c, sizeof c, it->size);
		buf_printf(b, "  %s -> %s", a, c);
	} else if (it->size >= 0 || it->lower_size >= 0) {
		human(a, sizeof a, it->size >= 0 ? it->size : it->lower_size);
		buf_printf(b, "  %s", a);
	}
	if (content && it->binary)
		buf_printf(b, "  binary: sizes only");
	else if (content && it->diff && *it->diff == '\0' && it->lines == 0)
		buf_printf(b, "  the same bytes: only its metadata changed");
	else if (content && it->diff && it->line > 0)
		buf_printf(b, "  (its diff from line %llu of %llu)", (unsigned long long)it->line + 1,
		    (unsigned long long)it->lines);
	buf_printf(b, "\n");
}

/* Take item it onto the page, or as much of its diff as fits; nonzero stops. */
static int
take(void *arg, const struct core_diff_info *info, const struct core_diff_item *it)
{
	struct page *pg = arg;
	struct buf line;
	cJSON *x;
	char *js;
	size_t jn, tn, ntake = 0, dn = it->diff ? strlen(it->diff) : 0, used = 0, ju = 0;
	uint64_t lines = 0;

	(void)info;
	if (pg->n >= pg->max_items || it->unread) {
		core_diff_cursor(it, it->line, pg->next, sizeof pg->next);
		pg->unread = it->unread;
		return 1;
	}
	buf_init(&line, 8 * DIFF_PATH_SHOWN);
	item_line(&line, it, it->diff != NULL || it->binary);
	x = core_diff_item_json(it, 0);
	js = cJSON_PrintUnformatted(x);
	jn = strlen(js) + 1 + (it->diff ? 64 : 0);	/* a comma; the diff's keys */
	free(js);
	tn = line.len;
	if ((pg->text.len + tn > pg->room || pg->json + jn > pg->room) && pg->n > 0) {
		core_diff_cursor(it, it->line, pg->next, sizeof pg->next);
		cJSON_Delete(x);
		buf_free(&line);
		return 1;
	}
	/* The diff's lines that fit, whole; a line longer than a whole page is
	 * cut, and the next page starts at the line after it. */
	while (used < dn) {
		const char *s = it->diff + used, *nl = strchr(s, '\n');
		size_t k = nl ? (size_t)(nl - s) + 1 : strlen(s), jk = json_len(s, k);
		if (pg->text.len + tn + ntake + k > pg->room || pg->json + jn + ju + jk > pg->room) {
			if (lines == 0 && pg->n == 0) {
				size_t t = pg->room - pg->text.len - tn, j = pg->room - pg->json - jn;
				size_t fit = t < j / 6 ? t : j / 6;
				fit = fit > 8 ? fit - 8 : 0;
				fit = utf8_complete_prefix(s, fit < k ? fit : k);
				ntake = fit;
				ju = json_len(s, fit);
				lines = 1;
				pg->line_cut = 1;
			}
			break;
		}
		used += k;
		ntake += k;
		ju += jk;
		lines++;
	}
	cJSON_Delete(x);
	if (used < dn && pg->n > 0) {
		/* Its diff does not fit whole: it starts the next page, and is cut
		 * only when it is longer than a page. */
		core_diff_cursor(it, it->line, pg->next, sizeof pg->next);
		buf_free(&line);
		return 1;
	}
	/* The rest from the next line on (a line cut goes on no page). */
	if (used < dn)
		core_diff_cursor(it, it->line + lines, pg->next, sizeof pg->next);
	x = core_diff_item_json(it, ntake);
	buf_append(&pg->text, line.data, line.len);
	if (ntake > 0) {
		buf_append(&pg->text, it->diff, ntake);
		if (it->diff[ntake - 1] != '\n')
			buf_printf(&pg->text, "\xe2\x80\xa6 (the line goes on)\n");
	}
	js = cJSON_PrintUnformatted(x);
	pg->json += strlen(js) + 1;
	free(js);
	cJSON_AddItemToArray(pg->changes, x);
	if (pg->n++ == 0)
		pg->first = it->index;
	pg->last = it->index;
	buf_free(&line);
	return pg->next[0] != '\0';
}

/* The page of sandbox id's changes that o asks for, within budget characters:
 * *result the structuredContent, *text what the model reads. */
static int
diff_page(struct core *c, const char *id, const struct core_diff_opts *o, size_t budget,
    size_t max_items, cJSON **result, char **text, struct sbx_err *e)
{
	struct core_diff_info info;
	struct page pg;
	struct buf t, note;
	cJSON *r;
	char a[32];
	const char *under = o->path && *o->path ? o->path : NULL;

	/* The notes at the end take what they need of a small budget, at most
	 * a third of it. */
	size_t reserve = DIFF_RESERVE < budget / 3 ? DIFF_RESERVE : budget / 3;

	memset(&pg, 0, sizeof pg);
	pg.room = budget - reserve;
	pg.max_items = max_items ? max_items : (size_t)-1;
	buf_init(&pg.text, budget);
	pg.changes = cJSON_CreateArray();
	if (core_diff(c, id, o, take, &pg, &info, e) < 0) {
		buf_free(&pg.text);
		cJSON_Delete(pg.changes);
		return -1;
	}
	/* The notes: what was left out, and how to get it. */
	buf_init(&note, reserve);
	if (pg.next[0]) {
		buf_printf(&note, "More: items %llu-%llu of %llu are shown; call sandbox_diff again "
		    "with cursor \"%s\" (and the same path and content) for the rest.",
		    (unsigned long long)pg.first + 1, (unsigned long long)pg.last + 1,
		    (unsigned long long)info.items, pg.next);
		if (pg.unread)
			buf_printf(&note, " (This call read as many bytes of files as one may.)");
		if (pg.line_cut)
			buf_printf(&note, " A line longer than a page was cut.");
	}
	if (info.folded > 0)
		buf_printf(&note, "%sFolded directories are counted, not listed: pass one as path "
		    "to list it.", note.len ? " " : "");
	if (!o->content && info.items > 0)
		buf_printf(&note, "%sFor diffs, call again with content: true and a path (a file "
		    "or a directory, e.g. \"/workspace/src\").", note.len ? " " : "");
	if (info.walk_cut)
		buf_printf(&note, "%sThe walk stopped at its limit of entries: the counts are of "
		    "what it looked at; pass a path to look at less.", note.len ? " " : "");
	if (info.unlisted > 0)
		buf_printf(&note, "%s%llu changes are counted but not listed (more than one diff "
		    "keeps): pass a path below to list them.", note.len ? " " : "",
		    (unsigned long long)info.unlisted);
	if (info.unreadable > 0)
		buf_printf(&note, "%s%llu directories could not be read here.", note.len ? " " : "",
		    (unsigned long long)info.unreadable);
	if (info.cursor_stale)
		buf_printf(&note, "%sThe sandbox changed since the cursor was made: items may "
		    "repeat or be missed; call without a cursor to start again.", note.len ? " " : "");

	/* The text: the totals first, then the items, then the notes. */
	buf_init(&t, budget + 64);
	human(a, sizeof a, info.bytes);
	buf_printf(&t, "Sandbox %s%s%.200s%s: %llu added, %llu changed, %llu removed since it was "
	    "created (%s in files added or changed)", info.sandbox_id, under ? ", under " : "",
	    under ? under : "", under && strlen(under) > 200 ? "\xe2\x80\xa6" : "",
	    (unsigned long long)info.added, (unsigned long long)info.changed,
	    (unsigned long long)info.removed, a);
	if (info.items == 0)
		buf_printf(&t, ": nothing to list.\n");
	else
		buf_printf(&t, "; %llu item%s, %llu folded%s:\n",
		    (unsigned long long)info.items, info.items == 1 ? "" : "s",
		    (unsigned long long)info.folded, under ? "" : ", /workspace first");
	buf_append(&t, pg.text.data ? pg.text.data : "", pg.text.len);
	if (note.len)
		buf_printf(&t, "%s\n", note.data);
	if (!utf8_valid(t.data, t.len)) {
		char *v = xmalloc(3 * t.len + 1);
		utf8_lossy(t.data, t.len, v, 3 * t.len + 1);
		free(buf_steal(&t));
		*text = v;
	} else {
		*text = buf_steal(&t);
	}

	r = core_diff_result_json(&info, pg.changes, pg.next);
	if (note.len)
		cJSON_AddStringToObject(r, "note", note.data);
	buf_free(&note);
	buf_free(&pg.text);
	*result = r;
	return 0;
}

static int
cancelled(void *call)
{
	return mcp_call_cancelled(call);
}

static int
run(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	struct core_diff_opts o = { 0 };
	const char *id = mcp_arg_need(args, "sandbox_id", e);
	char *text = NULL;

	if (id == NULL)
		return -1;
	o.path = mcp_arg_str(args, "path");
	o.content = mcp_arg_bool(args, "content", 0);
	o.cursor = mcp_arg_str(args, "cursor");
	o.cancelled = cancelled;
	o.cancel_arg = call;
	if (diff_page(mcp_call_core(call), id, &o, mcp_call_budget(call),
	    (size_t)mcp_arg_int(args, "max_files", 0), result, &text, e) < 0) {
		mcp_err_fix(e);
		return -1;
	}
	mcp_call_set_text(call, text);
	return 0;
}

const struct mcp_tool mcp_tool_diff = {
	.name = "sandbox_diff",
	.title = "What changed in a sandbox",
	.description =
	    "What changed in the sandbox since it was created (its whole filesystem). By "
	    "default a summary: totals, then paths, /workspace first, caches and big "
	    "directories folded into one line with a count. content: true gives unified "
	    "diffs, best with a path (a file or directory; relative: under /workspace). "
	    "Pages: pass next_cursor as cursor. ns sandboxes only.",
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{" MCP_SANDBOX_ID_PROP ","
	    "\"path\":{\"type\":\"string\",\"maxLength\":4096,\"description\":\"Only changes "
	    "at or under this sandbox path; only it is walked.\"},"
	    "\"content\":{\"type\":\"boolean\",\"description\":\"Unified diffs of text files "
	    "(default false: the summary).\"},"
	    "\"cursor\":{\"type\":\"string\",\"maxLength\":64,\"description\":\"A page's "
	    "next_cursor, with the same path and content.\"},"
	    "\"max_files\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":5000,"
	    "\"description\":\"At most this many items a page (default: what fits).\"}},"
	    "\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
	.output_schema =
	    "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
	    "\"totals\":{\"type\":\"object\",\"properties\":{\"added\":{\"type\":\"integer\"},"
	    "\"changed\":{\"type\":\"integer\"},\"removed\":{\"type\":\"integer\"},"
	    "\"bytes\":{\"type\":\"integer\"},\"items\":{\"type\":\"integer\"},"
	    "\"folded\":{\"type\":\"integer\"}}},"
	    "\"changes\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
	    "\"path\":{\"type\":\"string\"},\"change\":{\"enum\":[\"added\",\"changed\","
	    "\"removed\"]},\"type\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\"},"
	    "\"lower_size\":{\"type\":\"integer\"},\"folded\":{\"type\":\"string\"},"
	    "\"files\":{\"type\":\"integer\"},\"binary\":{\"type\":\"boolean\"},"
	    "\"diff\":{\"type\":\"string\"},\"diff_line\":{\"type\":\"integer\"}},"
	    "\"required\":[\"path\",\"change\",\"type\"]}},"
	    "\"truncated\":{\"type\":\"boolean\"},\"next_cursor\":{\"type\":\"string\"},"
	    "\"note\":{\"type\":\"string\"}},\"required\":[\"sandbox_id\",\"totals\","
	    "\"changes\",\"truncated\"]}",
	.hints = MCP_READONLY | MCP_IDEMPOTENT,
	.run = run,
};
