/* The console's viewers: Exec and Logs as a pager (wrap, timestamps, follow,
 * horizontal scroll, search with a match count, stderr in its own colour,
 * copy through OSC 52 or to a file), the Activity tab with each call's
 * details, and the Diff tab.  The toggles live in a small state file,
 * $XDG_STATE_HOME/sbxtop/console.state, as k9s keeps its log settings. */
#include <curses.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/jspec.h"
#include "core/paths.h"
#include "lib/b64.h"
#include "lib/buf.h"
#include "lib/util.h"
#include "tui/theme.h"
#include "tui/tui-int.h"

/* path replaced by len bytes of data, mode 0600, through a rename. */
static int
write_atomic(const char *path, const char *data, size_t len)
{
	_cleanup_free_ char *tmp = xasprintf("%s.tmp.%d", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0)
		return -1;
	ssize_t w = write(fd, data, len);
	if (close(fd) < 0 || w != (ssize_t)len || rename(tmp, path) < 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* --- settings ---------------------------------------------------------------- */

void
viewer_settings_load(struct tui *t)
{
	struct sbx_err e;
	_cleanup_free_ char *p = paths_file(PATHS_STATE, "console.state", 0, &e);
	_cleanup_free_ char *s = p ? read_file(p, 4096, NULL) : NULL;

	t->wrap = 0;
	t->stamps = 0;
	t->follow = 1;
	for (char *l = s; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		int v = 0;
		if (sscanf(l, "wrap=%d", &v) == 1)
			t->wrap = v != 0;
		else if (sscanf(l, "timestamps=%d", &v) == 1)
			t->stamps = v != 0;
		else if (sscanf(l, "follow=%d", &v) == 1)
			t->follow = v != 0;
	}
}

void
viewer_settings_save(struct tui *t)
{
	struct sbx_err e;
	_cleanup_free_ char *p = paths_file(PATHS_STATE, "console.state", 1, &e);
	char buf[128];

	if (p == NULL)
		return;
	snprintf(buf, sizeof buf, "# sbxtop console: the Exec and Logs toggles\n"
	    "wrap=%d\ntimestamps=%d\nfollow=%d\n", t->wrap, t->stamps, t->follow);
	if (write_atomic(p, buf, strlen(buf)) < 0)
		model_say(&t->m, 1, "cannot save the console's settings in %s", p);
}

/* --- lines ----------------------------------------------------------------- */

static int
cols_of(const char *s)
{
	/* put_from with no room left counts what it would use. */
	int n = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		n += (*p & 0xc0) != 0x80;
	return n;
}

/* Emit one source line as rows (wrapped pieces last first). */
struct emit {
	struct tui	*t;
	struct rline	*out;
	size_t		 n, got, seen, skip;
	int		 w;
	int		 counting;
};

static void
emit(struct emit *E, const char *s, int attr, int64_t ts, int header, const char *own)
{
	struct tui *t = E->t;
	int stampw = t->stamps && !header ? 9 : 0, room = E->w - 2 - stampw;
	int len = cols_of(s), pieces = 1;
	int match = !header && t->search && filter_pass(t->search, s, strlen(s));

	if (t->wrap && room > 0 && len > room)
		pieces = (len + room - 1) / room;
	for (int p = pieces; p-- > 0;) {
		if (E->counting) {
			E->seen++;
			continue;
		}
		if (E->got >= E->n)
			return;
		if (E->seen++ < E->skip)
			continue;
		struct rline *r = &E->out[E->got++];
		memset(r, 0, offsetof(struct rline, own));
		if (own) {
			snprintf(r->own, sizeof r->own, "%s", own);
			r->text = r->own;
		} else {
			r->text = s;
		}
		r->attr = attr;
		r->match = match;
		/* Wrapped pieces line up under the first one's text. */
		r->indent = header ? 0 : p > 0 ? 2 + stampw : 2;
		r->skip = t->wrap ? p * room : header ? 0 : t->hoff;
		r->cols = t->wrap && pieces > 1 ? room : 0;
		if (stampw && p == 0)
			clock_of(r->stamp, sizeof r->stamp, ts > 0 ? ts : wall_ms());
	}
}

/* The exec's header: who ran what, how it ended (oom when the agent says so,
 * or, from an agent that does not, when the sandbox's OOM-kill counter rose
 * since it started). */
static void
exec_header(struct tui *t, const struct m_exec *x, char *buf, size_t len, int *attr)
{
	char clk[16], dur[16], st[48];
	const struct m_sandbox *s = model_sandbox(&t->m, t->m.sel);
	const char *o = x->origin;
	int64_t d = x->running ? (x->started_ms ? wall_ms() - x->started_ms : -1) :
	    x->duration_ms;

	/* The agent keeps origins to [A-Za-z0-9._-]: "mcp:x" arrives as "mcp.x".
	 * The operator's own are "console" (the core names them by the
	 * session's kind, which no MCP client can choose) or "human" (a shell). */
	if (strcmp(o, "console") == 0 || strcmp(o, "human") == 0)
		o = "human";
	else if (strncmp(o, "mcp:", 4) == 0 || strncmp(o, "mcp.", 4) == 0)
		o = o[4] ? o + 4 : "agent";
	else if (*o == '\0')
		o = "?";
	clock_of(clk, sizeof clk, x->started_ms ? x->started_ms : wall_ms());
	human_dur(dur, sizeof dur, d);
	if (x->running)
		snprintf(st, sizeof st, "running %s", dur);
	else if (x->oom || (x->signal[0] && strcmp(x->signal, "KILL") == 0 && s &&
	    s->oom_kills > 0 && x->oom_base >= 0 && s->oom_kills > x->oom_base))
		snprintf(st, sizeof st, "oom (killed %s) %s", x->signal[0] ? x->signal : "137", dur);
	else if (x->signal[0])
		snprintf(st, sizeof st, "killed %s %s", x->signal, dur);
	else
		snprintf(st, sizeof st, "exit %d %s", x->exit_code, dur);
	snprintf(buf, len, "%s %-10.10s %s %-4s %-16s %s",
	    x->running ? "\xe2\x96\xb8" : x->exit_code == 0 ? "\xe2\x9c\x93" : "\xe2\x9c\x97",
	    o, clk, x->id, st, x->command ? x->command : "");
	*attr = theme_attr_over(TH_EXEC_HEAD, x->running ? TH_RUNNING :
	    x->exit_code == 0 && !x->signal[0] ? TH_OK : TH_FAIL);
}

static void
produce(struct tui *t, int exec, struct emit *E)
{
	if (!exec) {
		for (size_t i = t->m.logs.n; i-- > 0 && (E->counting || E->got < E->n);) {
			const char *s = lines_at(&t->m.logs, i);
			if (filter_pass(t->rfilter, s, strlen(s)))
				emit(E, s, theme_attr(TH_NORMAL), lines_ts(&t->m.logs, i), 0, NULL);
		}
		return;
	}
	for (size_t k = t->m.nexecs; k-- > 0 && (E->counting || E->got < E->n);) {
		const struct m_exec *x = t->m.execs[k];
		int any = t->rfilter == NULL, attr;
		char head[320];
		for (size_t i = x->out.n; i-- > 0 && (E->counting || E->got < E->n);) {
			const char *s = lines_at(&x->out, i);
			if (!filter_pass(t->rfilter, s, strlen(s)))
				continue;
			any = 1;
			emit(E, s, lines_err(&x->out, i) ? theme_attr(TH_STDERR) :
			    theme_attr(TH_NORMAL), lines_ts(&x->out, i), 0, NULL);
		}
		if (any || filter_pass(t->rfilter, x->command ? x->command : "",
		    x->command ? strlen(x->command) : 0)) {
			exec_header(t, x, head, sizeof head, &attr);
			emit(E, head, attr, 0, 1, head);
		}
	}
}

size_t
viewer_lines(struct tui *t, int exec, struct rline *out, size_t n, size_t skip, int w)
{
	struct emit E = { t, out, n, 0, 0, skip, w, 0 };

	produce(t, exec, &E);
	return E.got;
}

size_t
viewer_total(struct tui *t, int exec, int w)
{
	struct emit E = { t, NULL, 0, 0, 0, 0, w, 1 };

	produce(t, exec, &E);
	return E.seen;
}

void
viewer_search(struct tui *t, int exec, int w, int jump)
{
	size_t total = viewer_total(t, exec, w), n = 0;
	struct rline *v;

	t->search_n = 0;
	if (t->search == NULL || total == 0)
		return;
	v = xcalloc(total, sizeof *v);
	total = viewer_lines(t, exec, v, total, 0, w);
	/* Matches counted from the top, as a pager does: 1 is the oldest. */
	for (size_t i = total; i-- > 0;)
		if (v[i].match && (v[i].skip == 0 || t->wrap == 0 ||
		    i + 1 == total || !v[i + 1].match || v[i + 1].text != v[i].text))
			n++;
	t->search_n = n;
	if (n == 0) {
		free(v);
		return;
	}
	if (t->search_at < 1)
		t->search_at = 1;
	if (t->search_at > n)
		t->search_at = n;
	if (jump) {
		size_t k = 0;
		for (size_t i = total; i-- > 0;) {
			if (!v[i].match || (t->wrap && i + 1 < total && v[i + 1].match &&
			    v[i + 1].text == v[i].text))
				continue;
			if (++k == t->search_at) {
				/* That line a few rows below the top of the pane. */
				size_t h = t->rows > 9 ? (size_t)t->rows - 6 : 3;
				t->scroll = i + 3 >= h ? i + 3 - h : 0;
				break;
			}
		}
	}
	free(v);
}

/* --- copy ---------------------------------------------------------------- */

#define OSC52_MAX	(74 * 1024)	/* what terminals take in one OSC 52 (xterm, tmux) */

/* 1 when the terminal takes OSC 52: SBXTOP_OSC52=1 or 0 says so, else its
 * terminfo entry's Ms. */
static int
osc52_ok(void)
{
	const char *v = getenv("SBXTOP_OSC52"), *ms;

	if (v != NULL && *v)
		return strcmp(v, "0") != 0;
	ms = tigetstr("Ms");
	return ms != NULL && ms != (char *)-1;
}

/* A line goes to the clipboard where the terminal takes it, else to the file;
 * a whole output to the file always (and to the clipboard when it fits). */
static int
copy_out(struct tui *t, const char *text, size_t len, size_t nlines, int all)
{
	struct sbx_err e;
	int clip = osc52_ok() && (len + 2) / 3 * 4 <= OSC52_MAX;
	_cleanup_free_ char *p = NULL;

	if (clip) {
		char *b = b64_encode(text, len);
		printf("\033]52;c;%s\007", b);
		fflush(stdout);
		free(b);
		if (!all)
			return model_say(&t->m, 0, "copied 1 line to the clipboard");
	}
	p = paths_file(PATHS_STATE, "console-copy.txt", 1, &e);
	if (p == NULL || write_atomic(p, text, len) < 0)
		return model_say(&t->m, 1, "copy: cannot write %s", p ? p : "the state directory");
	return model_say(&t->m, 0, "copied %zu line%s to %s%s", nlines, nlines == 1 ? "" : "s",
	    clip ? "the clipboard and " : "", p);
}

int
viewer_copy(struct tui *t, int all)
{
	int exec = t->tab == TAB_EXEC;
	struct buf b;
	size_t n = 0;

	if (t->tab != TAB_EXEC && t->tab != TAB_LOGS)
		return model_say(&t->m, 1, "copy: in Exec or Logs");
	buf_init(&b, 16u << 20);
	if (!all) {
		struct rline *v = xcalloc((size_t)t->rows, sizeof *v);
		int h = t->rows - 6;
		size_t got = viewer_lines(t, exec, v, (size_t)(h > 0 ? h : 1), t->scroll, t->cols);
		/* The top line of the pane (the search's match when one is shown). */
		size_t pick = got ? got - 1 : 0;
		for (size_t i = 0; i < got && t->search; i++)
			if (v[i].match)
				pick = i;
		if (got) {
			buf_printf(&b, "%s\n", v[pick].text);
			n = 1;
		}
		free(v);
	} else if (exec) {
		const struct m_exec *x = t->m.nexecs ? t->m.execs[t->m.nexecs - 1] : NULL;
		for (size_t i = 0; x && i < x->out.n; i++, n++)
			buf_printf(&b, "%s\n", lines_at(&x->out, i));
	} else {
		for (size_t i = 0; i < t->m.logs.n; i++, n++)
			buf_printf(&b, "%s\n", lines_at(&t->m.logs, i));
	}
	if (n == 0) {
		buf_free(&b);
		return model_say(&t->m, 1, "copy: nothing to copy");
	}
	int d = copy_out(t, b.data, b.len, n, all);
	buf_free(&b);
	return d;
}

/* --- Activity ------------------------------------------------------------- */

const struct m_activity *
activity_row(struct tui *t, size_t want)
{
	size_t seen = 0;

	for (size_t i = t->m.nact; i-- > 0;) {
		const struct m_activity *a = model_activity(&t->m, i);
		if (a->sandbox[0] && strcmp(a->sandbox, t->m.sel) != 0)
			continue;
		if (t->aclient[0] && strcmp(a->client, t->aclient) != 0 &&
		    !(a->key[0] && strncmp(t->aclient, "key:", 4) == 0 &&
		    strcmp(a->key, t->aclient + 4) == 0))
			continue;
		if (seen++ == want)
			return a;
	}
	return NULL;
}

void
draw_activity(struct tui *t, int y0, int x, int w, int h)
{
	char row[512], clk[16], dur[16];
	const struct m_activity *a;

	if (t->adetail) {
		if ((a = activity_row(t, t->scroll)) == NULL) {
			put_from(y0, x, w, "(gone from the journal)", theme_attr(TH_DIM), 0);
			return;
		}
		clock_of(clk, sizeof clk, a->time_ms);
		human_dur(dur, sizeof dur, a->duration_ms);
		int r = 0;
		put_from(y0 + r++, x, w, fmt(row, sizeof row, "%s  %s by %s%s%s%s  %s  %s  (Esc: "
		    "back)", clk, a->tool, a->client, a->key[0] ? " (API key " : "", a->key,
		    a->key[0] ? ")" : "", a->outcome, dur), theme_attr(TH_HEADER), 0);
		const char *parts[3] = { a->args, a->message, a->result };
		const char *names[3] = { "arguments:", "message:", "result:" };
		for (int p = 0; p < 3 && r < h; p++) {
			cJSON *j = parts[p] && p == 0 ? cJSON_Parse(parts[p]) : NULL;
			char *pretty = j ? cJSON_Print(j) : NULL;
			const char *txt = pretty ? pretty : parts[p];
			cJSON_Delete(j);
			if (txt == NULL || *txt == '\0') {
				free(pretty);
				continue;
			}
			put_from(y0 + r++, x, w, names[p], theme_attr(TH_DIM), 0);
			for (const char *l = txt; l && *l && r < h;) {
				const char *nl = strchr(l, '\n');
				size_t n = nl ? (size_t)(nl - l) : strlen(l);
				/* Long lines are wrapped: the details show every argument whole. */
				for (size_t off = 0; (off < n || off == 0) && r < h; off += (size_t)w - 2) {
					snprintf(row, sizeof row, "%.*s", (int)(n - off < (size_t)w - 2 ?
					    n - off : (size_t)w - 2), l + off);
					put_from(y0 + r++, x + 2, w - 2, row, theme_attr(TH_NORMAL), 0);
					if (n == 0)
						break;
				}
				l = nl ? nl + 1 : NULL;
			}
			free(pretty);
		}
		return;
	}
	if (t->aclient[0])
		put_from(y0 + h - 1, x, w, fmt(row, sizeof row, "client %s only (:client clears)",
		    t->aclient), theme_attr(TH_DIM), 0);
	int rows = t->aclient[0] ? h - 1 : h, n = 0, shown = 0;
	/* The cursor row stays in view, the newest below the older ones, from
	 * the top of the pane (as a log reads) until it is full. */
	size_t first = t->scroll >= (size_t)rows ? t->scroll - (size_t)rows + 1 : 0;
	while (shown < rows && activity_row(t, first + (size_t)shown) != NULL)
		shown++;
	for (size_t i = first; n < rows && (a = activity_row(t, i)) != NULL; i++, n++) {
		int attr = strcmp(a->outcome, "ok") == 0 ? theme_attr(TH_NORMAL) :
		    strcmp(a->outcome, "running") == 0 ? theme_attr(TH_RUNNING) : theme_attr(TH_FAIL);
		char who[80];
		/* A call made with an API key: the key, by its name. */
		if (a->key[0])
			snprintf(who, sizeof who, "key:%s", a->key);
		else
			snprintf(who, sizeof who, "%s", a->client);
		clock_of(clk, sizeof clk, a->time_ms);
		human_dur(dur, sizeof dur, a->duration_ms);
		/* A narrow pane (80 columns) keeps who, what and how it went: the
		 * tools without their common "sandbox_", no duration. */
		if (w < 60)
			snprintf(row, sizeof row, "%s %-9.9s %-12.12s %-6s %s%s%s", clk, who,
			    strncmp(a->tool, "sandbox_", 8) == 0 ? a->tool + 8 : a->tool, a->outcome,
			    a->args ? a->args : "", a->message ? "  \xe2\x80\x94 " : "",
			    a->message ? a->message : "");
		else
			snprintf(row, sizeof row, "%s %-12.12s %-22s %-7s %-8s %s%s%s", clk, who,
			    a->tool, dur, a->outcome, a->args ? a->args : "", a->message ?
			    "  \xe2\x80\x94 " : "", a->message ? a->message : "");
		if (i == t->scroll && t->focus)
			attr = theme_attr(TH_SELECTED);
		put_from(y0 + shown - 1 - n, x, w, row, attr, 0);
	}
	if (n == 0)
		put_from(y0, x, w, t->aclient[0] ? "no calls from that client" : "no tool calls yet",
		    theme_attr(TH_DIM), 0);
}

/* --- Diff ------------------------------------------------------------------ */

/* The console reads at most this much of a diff, a page at a time. */
#define DIFF_PAGES_MAX	60
#define DIFF_LINES_MAX	40000

int
diff_page_of(const struct tui *t, const char *what, int *current)
{
	if (strncmp(what, "diff:", 5) != 0)
		return 0;
	*current = strtoul(what + 5, NULL, 10) == t->dgen;
	return 1;
}

void
diff_loaded(struct tui *t, const char *what, const cJSON *d)
{
	const cJSON *x, *tot = cJSON_GetObjectItem(d, "totals");
	const char *next = cJSON_GetStringValue(cJSON_GetObjectItem(d, "next_cursor"));
	char line[1200];

	(void)what;
	if (t->dpages++ == 0) {
		char b[24];
		lines_clear(&t->dview);
		human_bytes(b, sizeof b, (uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(tot,
		    "bytes")));
		snprintf(t->dhead, sizeof t->dhead, "%.0f added, %.0f changed, %.0f removed (%s)",
		    cJSON_GetNumberValue(cJSON_GetObjectItem(tot, "added")),
		    cJSON_GetNumberValue(cJSON_GetObjectItem(tot, "changed")),
		    cJSON_GetNumberValue(cJSON_GetObjectItem(tot, "removed")), b);
	}
	t->dstate = 2;
	cJSON_ArrayForEach(x, cJSON_GetObjectItem(d, "changes")) {
		const char *ch = cJSON_GetStringValue(cJSON_GetObjectItem(x, "change"));
		const char *p = cJSON_GetStringValue(cJSON_GetObjectItem(x, "path"));
		const char *ty = cJSON_GetStringValue(cJSON_GetObjectItem(x, "type"));
		const char *df = cJSON_GetStringValue(cJSON_GetObjectItem(x, "diff"));
		const char *fo = cJSON_GetStringValue(cJSON_GetObjectItem(x, "folded"));
		const cJSON *sz = cJSON_GetObjectItem(x, "size"), *lz = cJSON_GetObjectItem(x,
		    "lower_size");
		char a[24] = "", b[24] = "";
		if (cJSON_IsNumber(lz))
			human_bytes(a, sizeof a, (uint64_t)jint_of(lz, 0, 0, INT64_MAX));
		if (cJSON_IsNumber(sz))
			human_bytes(b, sizeof b, (uint64_t)jint_of(sz, 0, 0, INT64_MAX));
		if (fo != NULL) {
			human_bytes(b, sizeof b, (uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(x,
			    "bytes")));
			snprintf(line, sizeof line, "%c %s  %.0f files, %s (%s)\n", ch && *ch == 'a' ?
			    'A' : ch && *ch == 'r' ? 'D' : 'M', p ? p : "?",
			    cJSON_GetNumberValue(cJSON_GetObjectItem(x, "files")), b, fo);
		} else {
			snprintf(line, sizeof line, "%c %s%s%s  %s%s%s%s%s\n", ch && *ch == 'a' ? 'A' :
			    ch && *ch == 'r' ? 'D' : 'M', p ? p : "?", ty && strcmp(ty, "file") ? "  " : "",
			    ty && strcmp(ty, "file") ? ty : "", a, *a && *b ? " \xe2\x86\x92 " : "", b,
			    cJSON_IsTrue(cJSON_GetObjectItem(x, "binary")) ? "  (binary)" : "",
			    cJSON_GetNumberValue(cJSON_GetObjectItem(x, "diff_line")) > 0 ?
			    "  (continued)" : "");
		}
		lines_append(&t->dview, line, strlen(line));
		/* The file's own diff without its ---/+++ lines: the header says it. */
		for (const char *l = df; l && *l;) {
			const char *nl = strchr(l, '\n');
			size_t n = nl ? (size_t)(nl - l) + 1 : strlen(l);
			if (strncmp(l, "--- ", 4) != 0 && strncmp(l, "+++ ", 4) != 0)
				lines_append(&t->dview, l, n);
			l += n;
		}
	}
	/* The next page while there is room; then say what was left out. */
	if (next && t->dpages < DIFF_PAGES_MAX && t->dview.n < DIFF_LINES_MAX) {
		diff_load_page(t, next);
		return;
	}
	if (next) {
		snprintf(line, sizeof line, "\xe2\x80\xa6 more changes than shown: `sbxtop diff %s "
		    "PATH` shows a part\n", t->m.sel);
		lines_append(&t->dview, line, strlen(line));
	}
	if (cJSON_GetNumberValue(cJSON_GetObjectItem(tot, "folded")) > 0) {
		snprintf(line, sizeof line, "\\ folded directories are counted, not listed: "
		    "`sbxtop diff %s PATH` lists one\n", t->m.sel);
		lines_append(&t->dview, line, strlen(line));
	}
}

void
draw_diff(struct tui *t, int y0, int x, int w, int h)
{
	char row[128];

	if (t->dstate < 2) {
		put_from(y0, x, w, "reading the sandbox's changes\xe2\x80\xa6", theme_attr(TH_DIM), 0);
		return;
	}
	put_from(y0, x, w, fmt(row, sizeof row, "%s \xc2\xb7 %zu lines \xc2\xb7 r: again",
	    t->dhead, t->dview.n), theme_attr(TH_HEADER), 0);
	if (t->dview.n == 0)
		put_from(y0 + 1, x, w, "(nothing changed)", theme_attr(TH_DIM), 0);
	size_t first = t->scroll < t->dview.n ? t->scroll : 0;
	for (int r = 1; r < h && first + (size_t)r - 1 < t->dview.n; r++) {
		const char *s = lines_at(&t->dview, first + (size_t)r - 1);
		int a = *s == '+' ? theme_attr(TH_OK) : *s == '-' ? theme_attr(TH_FAIL) :
		    *s == '@' ? theme_attr(TH_DIM) : *s == '\\' ? theme_attr(TH_DIM) :
		    theme_attr(TH_HEADER);
		put_from(y0 + r, x, w, s, a, t->hoff);
	}
}

void
diff_load_page(struct tui *t, const char *cursor)
{
	cJSON *a = cJSON_CreateObject();
	char what[32];

	cJSON_AddStringToObject(a, "sandbox_id", t->m.sel);
	cJSON_AddBoolToObject(a, "content", 1);
	if (cursor)
		cJSON_AddStringToObject(a, "cursor", cursor);
	snprintf(what, sizeof what, "diff:%u", t->dgen);
	source_call_async(t->src, "sandbox_diff", a, what);
}

void
diff_load(struct tui *t)
{
	t->dgen++;
	t->dpages = 0;
	t->dstate = 1;
	diff_load_page(t, NULL);
}
