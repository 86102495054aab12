/* The operator console: the main loop, the keymap table, and drawing.
 *
 * One thread owns the terminal and the model.  It sleeps in poll() on the
 * terminal and the source's wake descriptor, so a new sandbox, an exec line or
 * a tool call shows without a keypress and an idle console costs nothing.  Key
 * handlers change the model and return what changed (DIRTY_*); only those parts
 * of the screen are drawn again, at most about 30 times a second. */
#include <errno.h>
#include <curses.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wchar.h>
#include <wctype.h>

#include "lib/log.h"
#include "core/paths.h"
#include "lib/util.h"
#include "tui/filter.h"
#include "tui/model.h"
#include "tui/source.h"
#include "tui/theme.h"
#include "tui/tui.h"

#define FRAME_MS	30	/* the least time between two redraws */
#define PROMPT_MAX	1024

enum tab { TAB_EXEC, TAB_LOGS, TAB_PORTS, TAB_FILES, TAB_ACTIVITY, TAB_INFO, TAB_N };
static const char *const tab_names[TAB_N] = { "Exec", "Logs", "Ports", "Files",
	"Activity", "Info" };

enum mode { M_NORMAL, M_PROMPT, M_CONFIRM, M_HELP, M_APPROVALS };

enum prompt_kind { P_FILTER, P_PALETTE, P_EXEC, P_FORWARD, P_CREATE, P_DENY };

struct tui {
	struct source	*src;
	struct model	 m;
	int		 readonly;
	int		 rows, cols;
	int		 focus;		/* 0 the list, 1 the right pane */
	enum tab	 tab;
	enum mode	 mode;
	int		 dirty;
	int		 quit;

	/* The list: the filtered view and its cursor (kept by id). */
	struct filter	*lfilter;
	size_t		*view;
	size_t		 nview;
	size_t		 top;

	/* The right pane. */
	struct filter	*rfilter;
	size_t		 scroll;	/* lines up from the bottom; 0 follows */
	int		 wrap;

	/* Files. */
	char		 fpath[1024];
	cJSON		*fentries;
	size_t		 fcur;
	struct lines	 fview;
	int		 fviewing;
	char		 fview_name[1024];

	/* The prompt line. */
	enum prompt_kind pkind;
	char		 plabel[128];
	wchar_t		 pbuf[PROMPT_MAX];
	size_t		 plen;
	char		 confirm_what[32];	/* M_CONFIRM: "destroy" */
	char		 confirm_id[32];
	char		 deny_id[64];

	size_t		 help_top;
	size_t		 acur;			/* approvals cursor */
	int		 geom[8];		/* the layout last drawn */

	/* Redraw latency: from the first message not yet drawn to the redraw. */
	int64_t		 pending_since;
	uint64_t	 lat_n, lat_sum, lat_max, lat_hist[64];
};

static volatile sig_atomic_t got_signal;

/* --- text ---------------------------------------------------------------- */

/* Put UTF-8 text at y,x in at most w columns.  Control characters (escape
 * sequences in a command's output included) are shown as '?', never sent to
 * the terminal.  Returns the columns used. */
static int
put(int y, int x, int w, const char *s, int attr)
{
	mbstate_t st;
	int used = 0;
	size_t len = strlen(s);

	if (w <= 0)
		return 0;
	memset(&st, 0, sizeof st);
	attron(attr);
	move(y, x);
	while (len > 0 && used < w) {
		wchar_t wc;
		size_t n = mbrtowc(&wc, s, len, &st);
		int cw;
		if (n == (size_t)-1 || n == (size_t)-2) {
			memset(&st, 0, sizeof st);
			wc = L'?';
			n = 1;
		} else if (n == 0) {
			break;
		}
		if (wc == L'\t')
			wc = L' ';
		if (iswcntrl((wint_t)wc) || wc == 0x7f)
			wc = L'?';
		cw = wcwidth(wc);
		if (cw < 0) {
			wc = L'?';
			cw = 1;
		}
		if (used + cw > w)
			break;
		addnwstr(&wc, 1);
		used += cw;
		s += n;
		len -= n;
	}
	attroff(attr);
	return used;
}

static void
fill(int y, int x, int w, int attr)
{
	attron(attr);
	mvhline(y, x, ' ', w);
	attroff(attr);
}

/* printf into a fixed line. */
static const char *
fmt(char *buf, size_t len, const char *f, ...) __attribute__((format(printf, 3, 4)));
static const char *
fmt(char *buf, size_t len, const char *f, ...)
{
	va_list ap;

	va_start(ap, f);
	vsnprintf(buf, len, f, ap);
	va_end(ap);
	return buf;
}

static void
human_dur(char *buf, size_t len, int64_t ms)
{
	int64_t s = ms / 1000;
	char tmp[64];

	if (ms < 0)
		snprintf(tmp, sizeof tmp, "-");
	else if (ms < 10000)
		snprintf(tmp, sizeof tmp, "%.1fs", (double)ms / 1000);
	else if (s < 60)
		snprintf(tmp, sizeof tmp, "%llds", (long long)s);
	else if (s < 3600)
		snprintf(tmp, sizeof tmp, "%lldm%02llds", (long long)(s / 60),
		    (long long)(s % 60));
	else
		snprintf(tmp, sizeof tmp, "%lldh%02lldm", (long long)(s / 3600),
		    (long long)(s % 3600 / 60));
	/* Bounded copy: a duration fits any caller's 16 bytes but days. */
	size_t n = strnlen(tmp, len - 1);
	memcpy(buf, tmp, n);
	buf[n] = '\0';
}

static void
human_bytes(char *buf, size_t len, uint64_t b)
{
	if (b < 1024)
		snprintf(buf, len, "%llu B", (unsigned long long)b);
	else if (b < 1024 * 1024)
		snprintf(buf, len, "%.1f KB", (double)b / 1024);
	else
		snprintf(buf, len, "%.1f MB", (double)b / (1024 * 1024));
}

static void
clock_of(char *buf, size_t len, int64_t wall)
{
	time_t t = (time_t)(wall / 1000);
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(buf, len, "%H:%M:%S", &tm);
}

static void
frame(int y, int x, int h, int w, const char *title, int focused)
{
	int a = theme_attr(TH_BORDER) | (focused ? A_BOLD : 0);

	if (h < 2 || w < 2)
		return;
	attron(a);
	mvaddch(y, x, ACS_ULCORNER);
	mvhline(y, x + 1, ACS_HLINE, w - 2);
	mvaddch(y, x + w - 1, ACS_URCORNER);
	mvvline(y + 1, x, ACS_VLINE, h - 2);
	mvvline(y + 1, x + w - 1, ACS_VLINE, h - 2);
	mvaddch(y + h - 1, x, ACS_LLCORNER);
	mvhline(y + h - 1, x + 1, ACS_HLINE, w - 2);
	mvaddch(y + h - 1, x + w - 1, ACS_LRCORNER);
	attroff(a);
	if (title) {
		put(y, x + 1, 1, " ", a);
		int n = put(y, x + 2, w - 4, title, theme_attr(TH_HEADER) |
		    (focused ? A_BOLD : 0));
		put(y, x + 2 + n, 1, " ", a);
	}
}

/* --- the layout ---------------------------------------------------------- */

struct layout {
	int	top, h;			/* the panes' rows */
	int	lw;			/* left width */
	int	list_h, fwd_h;		/* boxes on the left */
	int	rx, rw;			/* the right box */
};

static void
layout(const struct tui *t, struct layout *L)
{
	L->top = 1;
	L->h = t->rows - 3;
	if (L->h < 4)
		L->h = 4;
	L->lw = t->cols * 48 / 100;
	if (L->lw < 36)
		L->lw = t->cols < 72 ? t->cols / 2 : 36;
	L->fwd_h = L->h >= 18 ? 6 : L->h >= 10 ? 4 : 0;
	L->list_h = L->h - L->fwd_h;
	L->rx = L->lw;
	L->rw = t->cols - L->lw;
}

/* --- the list view ------------------------------------------------------- */

static void
sandbox_line(const struct m_sandbox *s, char *buf, size_t len)
{
	snprintf(buf, len, "%s %s %s %s %s", s->id, s->name, s->backend, s->state, s->now);
}

static void
rebuild_view(struct tui *t)
{
	char line[512];

	free(t->view);
	t->view = xcalloc(t->m.nsb ? t->m.nsb : 1, sizeof *t->view);
	t->nview = 0;
	for (size_t i = 0; i < t->m.nsb; i++) {
		sandbox_line(&t->m.sb[i], line, sizeof line);
		if (filter_pass(t->lfilter, line, strlen(line)))
			t->view[t->nview++] = i;
	}
}

static struct m_sandbox *
selected(struct tui *t)
{
	return t->m.sel[0] ? model_sandbox(&t->m, t->m.sel) : NULL;
}

static size_t
cursor(struct tui *t)
{
	for (size_t i = 0; i < t->nview; i++)
		if (strcmp(t->m.sb[t->view[i]].id, t->m.sel) == 0)
			return i;
	return 0;
}

static char *
log_path_of(struct tui *t, const char *id)
{
	return source_log_path(t->src, id);
}

static int
select_id(struct tui *t, const char *id)
{
	int d = model_select(&t->m, id);

	if (d == 0)
		return 0;
	source_select(t->src, id);
	t->scroll = 0;
	t->fpath[0] = '\0';
	cJSON_Delete(t->fentries);
	t->fentries = NULL;
	t->fviewing = 0;
	lines_clear(&t->fview);
	if (id && *id)
		t->m.log_path = log_path_of(t, id);
	return d | DIRTY_KEYS | model_poll_logs(&t->m);
}

/* Keep a selection: the first row when the selected one went away. */
static int
fix_selection(struct tui *t)
{
	if (t->nview == 0)
		return t->m.sel[0] ? select_id(t, NULL) : 0;
	for (size_t i = 0; i < t->nview; i++)
		if (strcmp(t->m.sb[t->view[i]].id, t->m.sel) == 0)
			return 0;
	return select_id(t, t->m.sb[t->view[0]].id);
}

/* --- drawing ------------------------------------------------------------- */

static void
draw_title(struct tui *t)
{
	char buf[512], clk[16], appr[96], core[64];
	int n = t->m.approvals ? cJSON_GetArraySize(t->m.approvals) : 0;

	clock_of(clk, sizeof clk, wall_ms());
	if (strcmp(source_kind(t->src), "standalone") == 0)
		snprintf(appr, sizeof appr, "approvals: n/a (standalone)");
	else
		snprintf(appr, sizeof appr, "approvals: %s (%d pending)", t->m.approve_mode, n);
	/* A core server that died is replaced at once; the title says so. */
	if (t->m.core_lost)
		snprintf(core, sizeof core, "lost, reconnecting");
	else if (t->m.core_reconnects > 0)
		snprintf(core, sizeof core, "%s (reconnected, pid %d)", source_kind(t->src),
		    t->m.core_pid);
	else
		snprintf(core, sizeof core, "%s", source_kind(t->src));
	fill(0, 0, t->cols, theme_attr(TH_TITLE));
	fmt(buf, sizeof buf, " sbxtop %s \xe2\x94\x80 core: %s \xe2\x94\x80 %s MCP session%s "
	    "\xe2\x94\x80 %s%s \xe2\x94\x80 %s", SBX_VERSION, core,
	    t->m.sessions < 0 ? "no" : fmt((char[16]){ 0 }, 16, "%d", t->m.sessions),
	    t->m.sessions == 1 ? "" : "s", appr, t->readonly ? " \xe2\x94\x80 read-only" : "",
	    clk);
	put(0, 0, t->cols, buf, theme_attr(TH_TITLE));
}

static int
state_attr(const char *st)
{
	if (strcmp(st, "running") == 0)
		return theme_attr(TH_RUNNING);
	if (strcmp(st, "suspended") == 0)
		return theme_attr(TH_SUSPENDED);
	if (strcmp(st, "error") == 0 || strcmp(st, "terminated") == 0 ||
	    strcmp(st, "unreachable") == 0)
		return theme_attr(TH_ERROR);
	return theme_attr(TH_NORMAL);
}

static void
draw_list(struct tui *t, const struct layout *L)
{
	char title[128], row[512], age[16], left[16], lim[24], run[128];
	int x = 1, y0 = L->top, w = L->lw - 2, rows = L->list_h - 3;
	int64_t now = wall_ms();
	size_t cur = cursor(t);
	/* Columns that fit, left to right by importance. */
	int show_fwd = w >= 50, show_age = w >= 58, show_lim = w >= 72;

	for (int y = y0; y < y0 + L->list_h; y++)
		mvhline(y, 0, ' ', L->lw);
	if (t->lfilter)
		fmt(title, sizeof title, "Sandboxes (%zu of %zu) /%s", t->nview, t->m.nsb,
		    filter_text(t->lfilter));
	else
		fmt(title, sizeof title, "Sandboxes (%zu)", t->m.nsb);
	frame(y0, 0, L->list_h, L->lw, title, t->focus == 0);
	snprintf(row, sizeof row, " %-10s %-10s %-6s %-9s %s%-6s %s%s%s", "ID", "NAME",
	    "BACKEND", "STATE", show_age ? "AGE    " : "", "LEFT", show_lim ? "CPU/MEM    " : "",
	    show_fwd ? "FWD " : "", "RUN");
	put(y0 + 1, x, w, row, theme_attr(TH_HEADER));
	if (rows <= 0)
		return;
	if (cur < t->top)
		t->top = cur;
	if (cur >= t->top + (size_t)rows)
		t->top = cur - (size_t)rows + 1;
	if (t->nview == 0) {
		put(y0 + 2, x + 1, w - 1, t->m.nsb ? "(nothing matches the filter)" :
		    "no sandboxes yet \xe2\x80\x94 press c to create one", theme_attr(TH_DIM));
		return;
	}
	for (int r = 0; r < rows && t->top + (size_t)r < t->nview; r++) {
		const struct m_sandbox *s = &t->m.sb[t->view[t->top + (size_t)r]];
		int sel = t->top + (size_t)r == cur && strcmp(s->id, t->m.sel) == 0;
		int a = sel ? theme_attr(TH_SELECTED) : theme_attr(TH_NORMAL);
		int y = y0 + 2 + r, cx = x;

		human_dur(age, sizeof age, now - s->created_ms);
		if (s->expires_ms > 0)
			human_dur(left, sizeof left, s->expires_ms > now ? s->expires_ms - now : 0);
		else
			snprintf(left, sizeof left, "-");
		if (s->cpus > 0 || s->memory_mib > 0)
			snprintf(lim, sizeof lim, "%.3g/%lldM", s->cpus, (long long)s->memory_mib);
		else
			snprintf(lim, sizeof lim, "-");
		if (strcmp(s->id, t->m.sel) == 0) {
			/* The selected sandbox's journal says exactly what runs. */
			int n = 0;
			const char *last = "";
			for (size_t i = 0; i < t->m.nexecs; i++)
				if (t->m.execs[i]->running) {
					n++;
					last = t->m.execs[i]->command ? t->m.execs[i]->command : "";
				}
			snprintf(run, sizeof run, n ? "\xe2\x97\x8f%d %s" : "", n, last);
		} else if (s->running > 0) {
			snprintf(run, sizeof run, "\xe2\x97\x8f%d %s", s->running, s->now);
		} else {
			run[0] = '\0';
		}
		fill(y, x, w, a);
		cx += put(y, cx, 1, sel ? "\xe2\x96\xb6" : " ", a);
		cx += put(y, cx, 11, fmt(row, sizeof row, "%-10s ", s->id), a);
		cx += put(y, cx, 11, fmt(row, sizeof row, "%-10.10s ", s->name[0] ? s->name : "-"),
		    a);
		cx += put(y, cx, 7, fmt(row, sizeof row, "%-6.6s ", s->backend), a);
		cx += put(y, cx, 10, fmt(row, sizeof row, "%-9.9s ", s->state),
		    sel ? a : state_attr(s->state));
		if (show_age)
			cx += put(y, cx, 7, fmt(row, sizeof row, "%-6s ", age), a);
		cx += put(y, cx, 7, fmt(row, sizeof row, "%-6s ", left), a);
		if (show_lim)
			cx += put(y, cx, 11, fmt(row, sizeof row, "%-10.10s ", lim), a);
		if (show_fwd)
			cx += put(y, cx, 4, fmt(row, sizeof row, "%-3d ", s->nfwd), a);
		put(y, cx, x + w - cx, run, sel ? a : theme_attr(TH_RUNNING));
	}
}

static void
draw_forwards(struct tui *t, const struct layout *L)
{
	int y0 = L->top + L->list_h, w = L->lw - 2;
	char title[64], row[256], in[24], out[24];

	if (L->fwd_h == 0)
		return;
	for (int y = y0; y < y0 + L->fwd_h; y++)
		mvhline(y, 0, ' ', L->lw);
	frame(y0, 0, L->fwd_h, L->lw, fmt(title, sizeof title, "Forwards (%zu)", t->m.nfwd), 0);
	if (t->m.nfwd == 0)
		put(y0 + 1, 2, w - 1, "none \xe2\x80\x94 p forwards a port", theme_attr(TH_DIM));
	for (size_t i = 0; i < t->m.nfwd && (int)i < L->fwd_h - 2; i++) {
		const struct m_forward *f = &t->m.fwd[i];
		human_bytes(in, sizeof in, f->bytes_in);
		human_bytes(out, sizeof out, f->bytes_out);
		put(y0 + 1 + (int)i, 2, w - 1, fmt(row, sizeof row, "%s:%d \xe2\x86\x92 %s:%d  "
		    "%llu conns  %s/%s%s", f->bind, f->local, f->sandbox, f->remote,
		    (unsigned long long)f->conns, in, out, f->live ? "" : "  (stopped)"),
		    f->live ? theme_attr(TH_NORMAL) : theme_attr(TH_DIM));
	}
}

static const char *
origin_label(const char *o)
{
	/* The agent keeps origins to [A-Za-z0-9._-]: "mcp:x" arrives as "mcp.x". */
	if (strcmp(o, "mcp:console") == 0 || strcmp(o, "mcp.console") == 0 ||
	    strcmp(o, "console") == 0 || strcmp(o, "human") == 0)
		return "human";
	if (strncmp(o, "mcp:", 4) == 0 || strncmp(o, "mcp.", 4) == 0)
		return o[4] ? o + 4 : "agent";
	return *o ? o : "?";
}

/* A line of the right pane, produced bottom up. */
struct rline {
	const char	*text;
	int		 attr;
	char		 own[320];	/* headers are made here */
};

static void
exec_header(const struct m_exec *x, struct rline *r)
{
	char clk[16], dur[16], st[48];
	const char *org = origin_label(x->origin);
	int64_t d = x->running ? (x->started_ms ? wall_ms() - x->started_ms : -1) :
	    x->duration_ms;

	clock_of(clk, sizeof clk, x->started_ms ? x->started_ms : wall_ms());
	human_dur(dur, sizeof dur, d);
	if (x->running)
		snprintf(st, sizeof st, "running %s", dur);
	else if (x->signal[0])
		snprintf(st, sizeof st, "killed %s %s", x->signal, dur);
	else
		snprintf(st, sizeof st, "exit %d %s", x->exit_code, dur);
	snprintf(r->own, sizeof r->own, "%s %-10.10s %s %-4s %-16s %s",
	    x->running ? "\xe2\x96\xb8" : x->exit_code == 0 ? "\xe2\x9c\x93" : "\xe2\x9c\x97",
	    org, clk, x->id, st, x->command ? x->command : "");
	r->text = r->own;
	r->attr = theme_attr(TH_EXEC_HEAD) | (x->running ? theme_attr(TH_RUNNING) :
	    x->exit_code == 0 && !x->signal[0] ? theme_attr(TH_OK) : theme_attr(TH_FAIL));
}

/* Fill out[0..n) with the last lines of the Exec tab (bottom first), skipping
 * skip lines from the bottom; returns how many. */
static size_t
exec_lines(struct tui *t, struct rline *out, size_t n, size_t skip)
{
	size_t got = 0, seen = 0;

	for (size_t k = t->m.nexecs; k-- > 0 && got < n;) {
		const struct m_exec *x = t->m.execs[k];
		int any = t->rfilter == NULL;
		for (size_t i = x->out.n; i-- > 0 && got < n;) {
			const char *s = lines_at(&x->out, i);
			if (!filter_pass(t->rfilter, s, strlen(s)))
				continue;
			any = 1;
			if (seen++ < skip)
				continue;
			out[got].text = s;
			out[got++].attr = theme_attr(TH_NORMAL);
		}
		if (got < n && (any || filter_pass(t->rfilter, x->command ? x->command : "",
		    x->command ? strlen(x->command) : 0))) {
			if (seen++ < skip)
				continue;
			exec_header(x, &out[got++]);
		}
	}
	return got;
}

static size_t
log_lines(struct tui *t, struct rline *out, size_t n, size_t skip, int w)
{
	size_t got = 0, seen = 0;

	for (size_t i = t->m.logs.n; i-- > 0 && got < n;) {
		const char *s = lines_at(&t->m.logs, i);
		size_t len = strlen(s);
		if (!filter_pass(t->rfilter, s, len))
			continue;
		if (t->wrap && (int)len > w && w > 0) {
			/* Wrapped pieces, last first (byte-wise: logs are ASCII). */
			size_t pieces = (len + (size_t)w - 1) / (size_t)w;
			for (size_t p = pieces; p-- > 0 && got < n;) {
				if (seen++ < skip)
					continue;
				snprintf(out[got].own, sizeof out[got].own, "%.*s", w,
				    s + p * (size_t)w);
				out[got].text = out[got].own;
				out[got++].attr = theme_attr(TH_NORMAL);
			}
			continue;
		}
		if (seen++ < skip)
			continue;
		out[got].text = s;
		out[got++].attr = theme_attr(TH_NORMAL);
	}
	return got;
}

static void
draw_bottom_up(int y0, int x, int w, int h, struct rline *v, size_t n)
{
	/* What fits starts at the top, as a terminal does. */
	if ((int)n < h)
		h = (int)n;
	for (size_t i = 0; i < n && (int)i < h; i++) {
		int y = y0 + h - 1 - (int)i;
		int indent = v[i].text != v[i].own || v[i].attr == theme_attr(TH_NORMAL) ? 2 : 0;
		put(y, x + indent, w - indent, v[i].text, v[i].attr);
	}
}

static void
draw_files(struct tui *t, int y0, int x, int w, int h)
{
	char row[1200], sz[24];

	if (t->fviewing) {
		put(y0, x, w, fmt(row, sizeof row, "%s  (Esc: back)", t->fview_name),
		    theme_attr(TH_HEADER));
		size_t first = t->scroll < t->fview.n ? t->scroll : 0;
		for (int r = 1; r < h && first + (size_t)r - 1 < t->fview.n; r++)
			put(y0 + r, x, w, lines_at(&t->fview, first + (size_t)r - 1),
			    theme_attr(TH_NORMAL));
		return;
	}
	put(y0, x, w, fmt(row, sizeof row, "%s  (Enter: open, Backspace: up)",
	    t->fpath[0] ? t->fpath : "/workspace"), theme_attr(TH_HEADER));
	if (t->fentries == NULL) {
		put(y0 + 1, x, w, "loading\xe2\x80\xa6", theme_attr(TH_DIM));
		return;
	}
	size_t n = (size_t)cJSON_GetArraySize(t->fentries), top = 0;
	if (n == 0)
		put(y0 + 1, x, w, "(empty)", theme_attr(TH_DIM));
	if (t->fcur >= (size_t)(h - 1))
		top = t->fcur - (size_t)(h - 2);
	for (int r = 1; r < h && top + (size_t)r - 1 < n; r++) {
		size_t i = top + (size_t)r - 1;
		const cJSON *en = cJSON_GetArrayItem(t->fentries, (int)i);
		const char *p = cJSON_GetStringValue(cJSON_GetObjectItem(en, "path"));
		const char *ty = cJSON_GetStringValue(cJSON_GetObjectItem(en, "type"));
		const char *base = p ? strrchr(p, '/') : NULL;
		int dir = ty && strcmp(ty, "dir") == 0;
		human_bytes(sz, sizeof sz, (uint64_t)cJSON_GetNumberValue(
		    cJSON_GetObjectItem(en, "size")));
		fmt(row, sizeof row, "%-40s %10s", fmt((char[256]){ 0 }, 256, "%s%s",
		    base ? base + 1 : (p ? p : "?"), dir ? "/" : ""), dir ? "" : sz);
		int a = i == t->fcur && t->focus ? theme_attr(TH_SELECTED) :
		    theme_attr(dir ? TH_HEADER : TH_NORMAL);
		fill(y0 + r, x, w, i == t->fcur && t->focus ? a : theme_attr(TH_NORMAL));
		put(y0 + r, x, w, row, a);
	}
}

static void
draw_right(struct tui *t, const struct layout *L)
{
	struct m_sandbox *s = selected(t);
	char title[256], left[16], row[512];
	int y0 = L->top, x = L->rx + 1, w = L->rw - 2, ch = L->h - 3;
	int64_t now = wall_ms();

	for (int y = y0; y < y0 + L->h; y++)
		mvhline(y, L->rx, ' ', L->rw);
	if (s == NULL) {
		frame(y0, L->rx, L->h, L->rw, "no sandbox selected", t->focus == 1);
		put(y0 + 2, x + 1, w - 1, "Select a sandbox on the left (j/k), or press c to "
		    "create one.", theme_attr(TH_DIM));
		return;
	}
	human_dur(left, sizeof left, s->expires_ms > now ? s->expires_ms - now : 0);
	fmt(title, sizeof title, "%s  %s \xe2\x94\x80 %s \xe2\x94\x80 %s%s%s", s->id,
	    s->name[0] ? s->name : "-", s->backend, s->state,
	    s->expires_ms ? " \xe2\x94\x80 " : "", s->expires_ms ? fmt((char[32]){ 0 }, 32,
	    "%s left", left) : "");
	frame(y0, L->rx, L->h, L->rw, title, t->focus == 1);
	/* The tabs. */
	int cx = x;
	for (int i = 0; i < TAB_N; i++) {
		const char *nm = fmt(row, sizeof row, i == (int)t->tab ? "[%s]" : " %s ",
		    tab_names[i]);
		cx += put(y0 + 1, cx, x + w - cx, nm, theme_attr(i == (int)t->tab ?
		    TH_TAB_ACTIVE : TH_TAB));
		cx += put(y0 + 1, cx, x + w - cx, " ", theme_attr(TH_TAB));
	}
	if (t->rfilter && (t->tab == TAB_EXEC || t->tab == TAB_LOGS))
		put(y0 + 1, cx, x + w - cx, fmt(row, sizeof row, " /%s", filter_text(t->rfilter)),
		    theme_attr(TH_PROMPT));
	if (t->scroll > 0 && (t->tab == TAB_EXEC || t->tab == TAB_LOGS))
		put(y0 + 1, x + w - 12, 12, fmt(row, sizeof row, " \xe2\x86\x91%zu", t->scroll),
		    theme_attr(TH_DIM));
	int cy = y0 + 2;
	if (ch <= 0)
		return;
	switch (t->tab) {
	case TAB_EXEC:
	case TAB_LOGS: {
		struct rline *v = xcalloc((size_t)ch, sizeof *v);
		size_t n = t->tab == TAB_EXEC ? exec_lines(t, v, (size_t)ch, t->scroll) :
		    log_lines(t, v, (size_t)ch, t->scroll, w - 2);
		if (n == 0)
			put(cy, x + 1, w - 1, t->tab == TAB_EXEC ? "no commands yet \xe2\x80\x94 "
			    "x runs one; an agent's appear here live" : t->m.log_path ||
			    t->m.log_state > 0 ? "(the log is empty)" : t->m.log_state < 0 ?
			    "(no log yet)" : "(no log here)", theme_attr(TH_DIM));
		draw_bottom_up(cy, x, w, ch, v, n);
		free(v);
		break;
	}
	case TAB_PORTS: {
		int r = 0;
		for (size_t i = 0; i < t->m.nfwd && r < ch; i++) {
			const struct m_forward *f = &t->m.fwd[i];
			char in[24], out[24];
			if (strcmp(f->sandbox, s->id) != 0)
				continue;
			human_bytes(in, sizeof in, f->bytes_in);
			human_bytes(out, sizeof out, f->bytes_out);
			put(cy + r++, x + 1, w - 1, fmt(row, sizeof row, "%s:%d \xe2\x86\x92 port %d "
			    "in the sandbox  %s  %llu conns  in %s  out %s", f->bind, f->local,
			    f->remote, f->live ? "live" : "stopped", (unsigned long long)f->conns,
			    in, out), theme_attr(TH_NORMAL));
		}
		if (r == 0)
			put(cy, x + 1, w - 1, "no forwards \xe2\x80\x94 p forwards a port",
			    theme_attr(TH_DIM));
		break;
	}
	case TAB_FILES:
		draw_files(t, cy, x + 1, w - 1, ch);
		break;
	case TAB_ACTIVITY: {
		struct rline *v = xcalloc((size_t)ch, sizeof *v);
		size_t n = 0, seen = 0;
		for (size_t i = t->m.nact; i-- > 0 && n < (size_t)ch;) {
			const struct m_activity *a = model_activity(&t->m, i);
			char clk[16], dur[16];
			if (a->sandbox[0] && strcmp(a->sandbox, s->id) != 0)
				continue;
			if (seen++ < t->scroll)
				continue;
			clock_of(clk, sizeof clk, a->time_ms);
			human_dur(dur, sizeof dur, a->duration_ms);
			snprintf(v[n].own, sizeof v[n].own, "%s %-12.12s %-22s %-7s %-8s %s%s%s",
			    clk, a->client, a->tool, dur, a->outcome, a->args ? a->args : "",
			    a->message ? "  \xe2\x80\x94 " : "", a->message ? a->message : "");
			v[n].text = v[n].own;
			v[n++].attr = strcmp(a->outcome, "ok") == 0 ? theme_attr(TH_NORMAL) :
			    strcmp(a->outcome, "running") == 0 ? theme_attr(TH_RUNNING) :
			    theme_attr(TH_FAIL);
		}
		if (n == 0)
			put(cy, x + 1, w - 1, "no tool calls yet", theme_attr(TH_DIM));
		for (size_t i = 0; i < n; i++)
			put(cy + ch - 1 - (int)i, x + 1, w - 1, v[i].text, v[i].attr);
		free(v);
		break;
	}
	case TAB_INFO: {
		char *txt = s->rec ? cJSON_Print(s->rec) : NULL;
		int r = 0;
		size_t skip = t->scroll;
		for (char *p = txt, *nl; p && *p && r < ch; p = nl ? nl + 1 : NULL) {
			nl = strchr(p, '\n');
			if (nl)
				*nl = '\0';
			if (skip > 0) {
				skip--;
				continue;
			}
			put(cy + r++, x + 1, w - 1, p, theme_attr(TH_NORMAL));
			if (!nl)
				break;
		}
		free(txt);
		break;
	}
	default:
		break;
	}
}

static void
draw_prompt(struct tui *t)
{
	int y = t->rows - 2, n = t->m.approvals ? cJSON_GetArraySize(t->m.approvals) : 0;
	char buf[1024];

	fill(y, 0, t->cols, theme_attr(TH_NORMAL));
	if (t->mode == M_PROMPT) {
		char mb[PROMPT_MAX * 4];
		size_t o = 0;
		for (size_t i = 0; i < t->plen && o + MB_CUR_MAX < sizeof mb; i++) {
			size_t k = wcrtomb(mb + o, t->pbuf[i], NULL);
			if (k != (size_t)-1)
				o += k;
		}
		mb[o] = '\0';
		int c = put(y, 0, t->cols, t->plabel, theme_attr(TH_PROMPT));
		/* The end of a long line stays visible. */
		const char *shown = mb;
		while ((int)strlen(shown) > t->cols - c - 2)
			shown++;
		c += put(y, c, t->cols - c, shown, theme_attr(TH_NORMAL));
		move(y, c);
		return;
	}
	if (t->mode == M_CONFIRM) {
		put(y, 0, t->cols, fmt(buf, sizeof buf, " %s %s? [y] yes  [n/Esc] no",
		    t->confirm_what, t->confirm_id), theme_attr(TH_APPROVAL));
		return;
	}
	if (n > 0 && !t->readonly) {
		const cJSON *a = cJSON_GetArrayItem(t->m.approvals, 0);
		fill(y, 0, t->cols, theme_attr(TH_APPROVAL));
		put(y, 0, t->cols, fmt(buf, sizeof buf, " ! %s wants %s %s \xe2\x80\x94 [y] approve  "
		    "[n] deny  [Enter] details%s",
		    cJSON_GetStringValue(cJSON_GetObjectItem(a, "client")) ?: "a client",
		    cJSON_GetStringValue(cJSON_GetObjectItem(a, "tool")) ?: "a tool",
		    cJSON_GetStringValue(cJSON_GetObjectItem(a, "sandbox")) ?: "",
		    n > 1 ? fmt((char[32]){ 0 }, 32, "  (+%d more: a)", n - 1) : ""),
		    theme_attr(TH_APPROVAL));
		return;
	}
	if (t->m.message[0] && now_ms() - t->m.message_ms < 15000)
		put(y, 0, t->cols, fmt(buf, sizeof buf, " %s", t->m.message),
		    t->m.message_err ? theme_attr(TH_ERROR) : theme_attr(TH_OK));
}

/* --- the keymap ---------------------------------------------------------- */

typedef int (*key_fn)(struct tui *t);

enum { K_MUTATES = 1, K_BAR = 2 };

struct keybind {
	int		 keys[4];	/* 0-terminated */
	const char	*label;		/* as help shows it */
	const char	*bar;		/* as the key bar shows it, or NULL */
	const char	*help;
	unsigned	 flags;
	key_fn		 fn;
};

static const struct keybind keymap[];

static int do_down(struct tui *t);
static int do_up(struct tui *t);

static int
move_list(struct tui *t, long d)
{
	size_t cur = cursor(t);
	long to = (long)cur + d;

	if (t->nview == 0)
		return 0;
	if (to < 0)
		to = 0;
	if (to >= (long)t->nview)
		to = (long)t->nview - 1;
	return select_id(t, t->m.sb[t->view[to]].id) | DIRTY_LIST;
}

static int
scroll_right(struct tui *t, long d)
{
	if (t->tab == TAB_FILES && !t->fviewing) {
		long n = t->fentries ? cJSON_GetArraySize(t->fentries) : 0, to = (long)t->fcur + d;
		t->fcur = to < 0 ? 0 : to >= n ? (size_t)(n > 0 ? n - 1 : 0) : (size_t)to;
		return DIRTY_RIGHT;
	}
	/* Exec and logs scroll up from the bottom; the others down from the top. */
	if (t->tab == TAB_EXEC || t->tab == TAB_LOGS || t->tab == TAB_ACTIVITY)
		d = -d;
	long to = (long)t->scroll + d;
	t->scroll = to < 0 ? 0 : (size_t)to;
	return DIRTY_RIGHT;
}

static int
page(const struct tui *t)
{
	return t->rows > 10 ? t->rows - 8 : 1;
}

static int do_down(struct tui *t) { return t->focus ? scroll_right(t, 1) : move_list(t, 1); }
static int do_up(struct tui *t) { return t->focus ? scroll_right(t, -1) : move_list(t, -1); }
static int do_pgdn(struct tui *t) { return t->focus ? scroll_right(t, page(t)) : move_list(t, page(t)); }
static int do_pgup(struct tui *t) { return t->focus ? scroll_right(t, -page(t)) : move_list(t, -page(t)); }

static int
do_top(struct tui *t)
{
	if (!t->focus)
		return move_list(t, -(long)t->nview);
	if (t->tab == TAB_EXEC || t->tab == TAB_LOGS || t->tab == TAB_ACTIVITY)
		t->scroll = 1000000;
	else
		t->scroll = t->fcur = 0;
	return DIRTY_RIGHT;
}

static int
do_bottom(struct tui *t)
{
	if (!t->focus)
		return move_list(t, (long)t->nview);
	t->scroll = 0;
	if (t->fentries)
		t->fcur = (size_t)cJSON_GetArraySize(t->fentries) - 1;
	return DIRTY_RIGHT;
}

static void
files_load(struct tui *t)
{
	cJSON *a = cJSON_CreateObject();

	cJSON_AddStringToObject(a, "sandbox_id", t->m.sel);
	cJSON_AddStringToObject(a, "path", t->fpath[0] ? t->fpath : "/workspace");
	cJSON_AddBoolToObject(a, "include_hidden", 1);
	cJSON_AddNumberToObject(a, "max_entries", 2000);
	cJSON_Delete(t->fentries);
	t->fentries = NULL;
	t->fcur = 0;
	source_call_async(t->src, "sandbox_list_files", a, "files");
}

static int
set_tab(struct tui *t, int tab)
{
	t->tab = (enum tab)((tab + TAB_N) % TAB_N);
	t->scroll = 0;
	if (t->tab == TAB_FILES && t->fentries == NULL && t->m.sel[0])
		files_load(t);
	return DIRTY_RIGHT | DIRTY_KEYS;
}

static int do_tab_next(struct tui *t) { return set_tab(t, (int)t->tab + 1); }
static int do_tab_prev(struct tui *t) { return set_tab(t, (int)t->tab - 1); }

static int
do_enter(struct tui *t)
{
	if (t->m.approvals && cJSON_GetArraySize(t->m.approvals) > 0 && !t->readonly) {
		t->mode = M_APPROVALS;
		t->acur = 0;
		return DIRTY_ALL;
	}
	if (t->focus && t->tab == TAB_FILES && !t->fviewing && t->fentries) {
		const cJSON *en = cJSON_GetArrayItem(t->fentries, (int)t->fcur);
		const char *p = cJSON_GetStringValue(cJSON_GetObjectItem(en, "path"));
		const char *ty = cJSON_GetStringValue(cJSON_GetObjectItem(en, "type"));
		if (p == NULL)
			return 0;
		if (ty && strcmp(ty, "dir") == 0) {
			snprintf(t->fpath, sizeof t->fpath, "%s", p);
			files_load(t);
		} else {
			cJSON *a = cJSON_CreateObject();
			cJSON_AddStringToObject(a, "sandbox_id", t->m.sel);
			cJSON_AddStringToObject(a, "path", p);
			cJSON_AddNumberToObject(a, "max_bytes", 1 << 20);
			snprintf(t->fview_name, sizeof t->fview_name, "%s", p);
			source_call_async(t->src, "sandbox_read_file", a, "read");
		}
		return DIRTY_RIGHT;
	}
	t->focus = 1;
	return DIRTY_LIST | DIRTY_RIGHT | DIRTY_KEYS;
}

static int
do_back(struct tui *t)
{
	if (t->focus && t->tab == TAB_FILES && t->fviewing) {
		t->fviewing = 0;
		t->scroll = 0;
		return DIRTY_RIGHT;
	}
	if (t->focus && t->tab == TAB_FILES && t->fpath[0] && strcmp(t->fpath, "/") != 0) {
		char *sl = strrchr(t->fpath, '/');
		if (sl == t->fpath)
			sl[1] = '\0';
		else if (sl)
			*sl = '\0';
		files_load(t);
		return DIRTY_RIGHT;
	}
	return 0;
}

static int
do_escape(struct tui *t)
{
	int d = do_back(t);

	if (d)
		return d;
	if (t->focus && t->rfilter) {
		filter_free(t->rfilter);
		t->rfilter = NULL;
		return DIRTY_RIGHT;
	}
	if (t->focus) {
		t->focus = 0;
		return DIRTY_LIST | DIRTY_RIGHT | DIRTY_KEYS;
	}
	if (t->lfilter) {
		filter_free(t->lfilter);
		t->lfilter = NULL;
		rebuild_view(t);
		return DIRTY_LIST | fix_selection(t);
	}
	return 0;
}

static int
prompt_open(struct tui *t, enum prompt_kind k, const char *label)
{
	t->mode = M_PROMPT;
	t->pkind = k;
	snprintf(t->plabel, sizeof t->plabel, "%s", label);
	t->plen = 0;
	curs_set(1);
	return DIRTY_PROMPT;
}

static int
need_sandbox(struct tui *t)
{
	if (selected(t) == NULL) {
		model_say(&t->m, 1, "select a sandbox first (or c to create one)");
		return 0;
	}
	return 1;
}

static int do_filter(struct tui *t)
{
	return prompt_open(t, P_FILTER, t->focus ? " / filter output (PCRE2, !inverts): " :
	    " / filter sandboxes (PCRE2, !inverts): ");
}
static int do_palette(struct tui *t) { return prompt_open(t, P_PALETTE, " :"); }
static int do_create(struct tui *t) { return prompt_open(t, P_CREATE, " create sandbox, name (Enter: none): "); }

static int
do_exec(struct tui *t)
{
	char l[96];

	if (!need_sandbox(t))
		return DIRTY_PROMPT;
	return prompt_open(t, P_EXEC, fmt(l, sizeof l, " run in %s: ", t->m.sel));
}

static int
do_forward(struct tui *t)
{
	char l[96];

	if (!need_sandbox(t))
		return DIRTY_PROMPT;
	return prompt_open(t, P_FORWARD, fmt(l, sizeof l, " forward a port of %s "
	    "(PORT or PORT:LOCAL): ", t->m.sel));
}

static int
do_help(struct tui *t)
{
	t->mode = M_HELP;
	t->help_top = 0;
	return DIRTY_ALL;
}

static int
do_quit(struct tui *t)
{
	t->quit = 1;
	return 0;
}

static int
run_tool(struct tui *t, const char *tool, const char *what, const char *key, const char *v)
{
	cJSON *a = cJSON_CreateObject();

	cJSON_AddStringToObject(a, "sandbox_id", t->m.sel);
	if (key)
		cJSON_AddStringToObject(a, key, v);
	source_call_async(t->src, tool, a, what);
	return model_say(&t->m, 0, "%s %s\xe2\x80\xa6", what, t->m.sel);
}

static int
do_kill(struct tui *t)
{
	struct m_exec *x = NULL;

	if (!need_sandbox(t))
		return DIRTY_PROMPT;
	for (size_t i = t->m.nexecs; i-- > 0;)
		if (t->m.execs[i]->running) {
			x = t->m.execs[i];
			break;
		}
	if (x == NULL)
		return model_say(&t->m, 1, "nothing runs in %s", t->m.sel);
	/* TERM first; K again on the same exec sends KILL. */
	const char *sig = x->kill_sent ? "KILL" : "TERM";
	x->kill_sent++;
	cJSON *a = cJSON_CreateObject();
	cJSON_AddStringToObject(a, "sandbox_id", t->m.sel);
	cJSON_AddStringToObject(a, "exec_id", x->id);
	cJSON_AddStringToObject(a, "signal", sig);
	source_call_async(t->src, "sandbox_process_kill", a, "kill");
	return model_say(&t->m, 0, "%s sent to %s (%s)%s", sig, x->id,
	    x->command ? x->command : "", x->kill_sent == 1 ? " \xe2\x80\x94 K again to KILL" : "");
}

static int
do_suspend(struct tui *t)
{
	struct m_sandbox *s = selected(t);

	if (!need_sandbox(t))
		return DIRTY_PROMPT;
	if (strcmp(s->state, "suspended") == 0)
		return run_tool(t, "sandbox_resume", "resume", NULL, NULL);
	return run_tool(t, "sandbox_suspend", "suspend", NULL, NULL);
}

static int
do_destroy(struct tui *t)
{
	if (!need_sandbox(t))
		return DIRTY_PROMPT;
	t->mode = M_CONFIRM;
	snprintf(t->confirm_what, sizeof t->confirm_what, "destroy");
	snprintf(t->confirm_id, sizeof t->confirm_id, "%s", t->m.sel);
	return DIRTY_PROMPT;
}

static int
do_shell(struct tui *t)
{
	struct sbx_err e;
	int rc;

	if (!need_sandbox(t))
		return DIRTY_PROMPT;
	/* Leave curses for the shell, as a shell escape in vi does. */
	def_prog_mode();
	endwin();
	printf("\r\n[sbxtop] shell in %s \xe2\x80\x94 exit it to come back to the console\r\n",
	    t->m.sel);
	fflush(stdout);
	rc = shell_run(t->src, t->m.sel, &e);
	reset_prog_mode();
	clearok(stdscr, TRUE);
	if (rc < 0)
		model_say(&t->m, 1, "shell: %s", e.msg);
	else
		model_say(&t->m, 0, "back from the shell in %s", t->m.sel);
	return DIRTY_ALL;
}

static int
do_approvals(struct tui *t)
{
	struct sbx_err e;
	cJSON *list = NULL;

	if (source_approvals(t->src, &list, &e) < 0)
		return model_say(&t->m, 1, "%s%s%s", e.msg, e.hint[0] ? " \xe2\x80\x94 " : "",
		    e.hint);
	cJSON_Delete(t->m.approvals);
	t->m.approvals = cJSON_Duplicate(cJSON_IsArray(list) ? list :
	    cJSON_GetObjectItem(list, "approvals"), 1);
	const char *mode = cJSON_GetStringValue(cJSON_GetObjectItem(list, "mode"));
	if (mode)
		snprintf(t->m.approve_mode, sizeof t->m.approve_mode, "%s", mode);
	cJSON_Delete(list);
	t->mode = M_APPROVALS;
	t->acur = 0;
	return DIRTY_ALL;
}

static int
do_wrap(struct tui *t)
{
	t->wrap = !t->wrap;
	return model_say(&t->m, 0, "wrap %s", t->wrap ? "on" : "off") | DIRTY_RIGHT;
}

static int
do_follow(struct tui *t)
{
	t->scroll = 0;
	return DIRTY_RIGHT;
}

static int do_backspace(struct tui *t) { return do_back(t); }

static const struct keybind keymap[] = {
	{ { 'j', KEY_DOWN }, "j \xe2\x86\x93", NULL, "move down (scroll in the right pane)", 0, do_down },
	{ { 'k', KEY_UP }, "k \xe2\x86\x91", NULL, "move up", 0, do_up },
	{ { KEY_NPAGE, ' ' }, "PgDn Space", NULL, "page down", 0, do_pgdn },
	{ { KEY_PPAGE }, "PgUp", NULL, "page up", 0, do_pgup },
	{ { 'g', KEY_HOME }, "g Home", NULL, "first row / oldest output", 0, do_top },
	{ { 'G', KEY_END }, "G End", NULL, "last row / follow the newest output", 0, do_bottom },
	{ { '\n', KEY_ENTER, '\r' }, "Enter", NULL, "focus the right pane; open a directory or file; approval details", 0, do_enter },
	{ { 27 }, "Esc", NULL, "back: close the file, clear the filter, focus the list", 0, do_escape },
	{ { KEY_BACKSPACE, 127, 8 }, "Backspace", NULL, "Files: the parent directory", 0, do_backspace },
	{ { '\t', ']' }, "Tab ]", NULL, "next tab", 0, do_tab_next },
	{ { KEY_BTAB, '[' }, "S-Tab [", NULL, "previous tab", 0, do_tab_prev },
	{ { '/', KEY_F(3) }, "/ F3", "filter", "filter with a PCRE2 regex (! inverts) the list, or the output", K_BAR, do_filter },
	{ { ':' }, ":", "command", "command palette", K_BAR, do_palette },
	{ { 'f' }, "f", NULL, "Exec/Logs: follow the newest output", 0, do_follow },
	{ { 'w' }, "w", NULL, "Logs: wrap long lines", 0, do_wrap },
	{ { 'c' }, "c", "create", "create a sandbox (asks for a name)", K_MUTATES | K_BAR, do_create },
	{ { 'x' }, "x", "exec", "run a command in the sandbox; its output shows in Exec", K_MUTATES | K_BAR, do_exec },
	{ { 's' }, "s", "shell", "open a shell in the sandbox (full screen; exit to return)", K_MUTATES | K_BAR, do_shell },
	{ { 'p' }, "p", "forward", "forward a port of the sandbox to this machine", K_MUTATES | K_BAR, do_forward },
	{ { 'K', KEY_F(9) }, "K F9", "kill", "kill the newest running command (TERM; again: KILL)", K_MUTATES | K_BAR, do_kill },
	{ { 'z' }, "z", "suspend", "suspend or resume the sandbox", K_MUTATES | K_BAR, do_suspend },
	{ { 'd', KEY_F(8) }, "d F8", "destroy", "destroy the sandbox (asks to confirm)", K_MUTATES | K_BAR, do_destroy },
	{ { 'a' }, "a", "approvals", "pending approvals: y approve, n deny", K_MUTATES, do_approvals },
	{ { '?', KEY_F(1), 'h' }, "? F1 h", "help", "this help", K_BAR, do_help },
	{ { 'q', KEY_F(10) }, "q F10", "quit", "quit", K_BAR, do_quit },
	{ { 0 }, NULL, NULL, NULL, 0, NULL },
};

static const struct keybind *
key_find(int key)
{
	for (const struct keybind *k = keymap; k->fn; k++)
		for (int i = 0; i < 4 && k->keys[i]; i++)
			if (k->keys[i] == key)
				return k;
	return NULL;
}

static void
draw_keys(struct tui *t)
{
	int y = t->rows - 1, x = 0;
	char buf[64];

	fill(y, 0, t->cols, theme_attr(TH_KEYBAR));
	for (const struct keybind *k = keymap; k->fn && x < t->cols; k++) {
		if (!(k->flags & K_BAR) || (t->readonly && (k->flags & K_MUTATES)))
			continue;
		const char *first = k->label;
		char key[16];
		snprintf(key, sizeof key, "%.*s", (int)strcspn(first, " "), first);
		x += put(y, x, t->cols - x, " ", theme_attr(TH_KEYBAR));
		x += put(y, x, t->cols - x, key, theme_attr(TH_KEY));
		x += put(y, x, t->cols - x, fmt(buf, sizeof buf, " %s", k->bar),
		    theme_attr(TH_KEYBAR));
	}
}

/* The help: every key of the table, then the palette's commands. */
static const char *const palette_help[] = {
	":create [NAME] [K=V]  create a sandbox (backend= host= image= snapshot= network=)",
	":exec CMD             run CMD in the selected sandbox",
	":forward PORT[:LOCAL] forward a port of the selected sandbox",
	":kill  :suspend  :resume  :destroy  :shell   as the keys",
	":theme NAME           switch theme (default, light, high-contrast, monochrome)",
	":approve none|destructive|all   which agent calls wait for the operator",
	":filter REGEX         as /",
	":help  :q             help, quit",
};

static void
draw_help(struct tui *t)
{
	char buf[512];
	int y = 1, h = t->rows - 2;
	size_t line = 0;

	for (int r = 1; r < t->rows - 1; r++)
		mvhline(r, 0, ' ', t->cols);
	frame(1, 0, h, t->cols, "Help \xe2\x80\x94 keys (Esc or q closes)", 1);
	y = 2;
#define HLINE(text, attr) do { if (line++ >= t->help_top && y < h) \
	put(y++, 2, t->cols - 4, (text), (attr)); } while (0)
	for (const struct keybind *k = keymap; k->fn; k++) {
		if (t->readonly && (k->flags & K_MUTATES))
			continue;
		HLINE(fmt(buf, sizeof buf, "%-14s %s", k->label, k->help), theme_attr(TH_NORMAL));
	}
	HLINE("", 0);
	HLINE("Mouse: a click selects a row or a tab; the wheel scrolls.", theme_attr(TH_DIM));
	if (!t->readonly) {
		HLINE("", 0);
		HLINE("Command palette (:)", theme_attr(TH_HEADER));
		for (size_t i = 0; i < ARRAY_SIZE(palette_help); i++)
			HLINE(palette_help[i], theme_attr(TH_NORMAL));
	}
	HLINE("", 0);
	HLINE(fmt(buf, sizeof buf, "Theme: %s", theme_name()), theme_attr(TH_DIM));
#undef HLINE
}

static void
draw_approvals(struct tui *t)
{
	char buf[1024];
	int h = t->rows - 2, n = t->m.approvals ? cJSON_GetArraySize(t->m.approvals) : 0;

	for (int r = 1; r < t->rows - 1; r++)
		mvhline(r, 0, ' ', t->cols);
	frame(1, 0, h, t->cols, fmt(buf, sizeof buf, "Approvals (%d pending, mode %s) \xe2\x80\x94 "
	    "y approve, n deny, Esc back", n, t->m.approve_mode), 1);
	if (n == 0)
		put(3, 2, t->cols - 4, "nothing waits for approval", theme_attr(TH_DIM));
	for (int i = 0; i < n && 2 + i * 2 < h - 1; i++) {
		const cJSON *a = cJSON_GetArrayItem(t->m.approvals, i);
		char *args = cJSON_PrintUnformatted(cJSON_GetObjectItem(a, "arguments"));
		int at = (size_t)i == t->acur ? theme_attr(TH_SELECTED) : theme_attr(TH_NORMAL);
		fill(2 + i * 2, 1, t->cols - 2, at);
		put(2 + i * 2, 2, t->cols - 4, fmt(buf, sizeof buf, "%s  %s wants %s %s",
		    cJSON_GetStringValue(cJSON_GetObjectItem(a, "id")) ?: "?",
		    cJSON_GetStringValue(cJSON_GetObjectItem(a, "client")) ?: "?",
		    cJSON_GetStringValue(cJSON_GetObjectItem(a, "tool")) ?: "?",
		    cJSON_GetStringValue(cJSON_GetObjectItem(a, "sandbox")) ?: ""), at);
		put(3 + i * 2, 4, t->cols - 6, args ? args : "", theme_attr(TH_DIM));
		free(args);
	}
}

static void
draw(struct tui *t)
{
	struct layout L;
	int d = t->dirty;

	layout(t, &L);
	if (t->mode == M_HELP || t->mode == M_APPROVALS) {
		if (d & DIRTY_TITLE)
			draw_title(t);
		if (t->mode == M_HELP)
			draw_help(t);
		else
			draw_approvals(t);
		draw_prompt(t);
		draw_keys(t);
	} else {
		if (d & DIRTY_TITLE)
			draw_title(t);
		if (d & DIRTY_LIST)
			draw_list(t, &L);
		if (d & DIRTY_FWD)
			draw_forwards(t, &L);
		if (d & DIRTY_RIGHT)
			draw_right(t, &L);
		if (d & (DIRTY_PROMPT | DIRTY_ALL))
			draw_prompt(t);
		if (d & DIRTY_KEYS)
			draw_keys(t);
		if (t->mode == M_PROMPT)
			draw_prompt(t);
	}
	refresh();
	t->dirty = 0;
}

/* --- the palette and prompts --------------------------------------------- */

static int set_filter(struct tui *t, const char *text);

static int
palette(struct tui *t, char *line)
{
	char *cmd = line, *arg;
	struct sbx_err e;

	while (*cmd == ' ' || *cmd == ':')
		cmd++;
	arg = cmd + strcspn(cmd, " ");
	if (*arg) {
		*arg++ = '\0';
		while (*arg == ' ')
			arg++;
	}
	if (strcmp(cmd, "q") == 0 || strcmp(cmd, "quit") == 0)
		return do_quit(t);
	if (strcmp(cmd, "help") == 0)
		return do_help(t);
	if (strcmp(cmd, "filter") == 0)
		return set_filter(t, arg);
	if (strcmp(cmd, "theme") == 0) {
		if (theme_load(*arg ? arg : "default", &e) < 0)
			return model_say(&t->m, 1, "%s%s%s", e.msg, e.hint[0] ? ": " : "", e.hint);
		theme_apply();
		clearok(stdscr, TRUE);
		return model_say(&t->m, 0, "theme %s", theme_name()) | DIRTY_ALL;
	}
	if (strcmp(cmd, "fatal-test") == 0 && getenv("SBXTOP_TEST_HOOKS"))
		fatal("a fatal error asked for by :fatal-test");
	/* Everything below changes something. */
	if (t->readonly)
		return model_say(&t->m, 1, "read-only console: '%s' is not available", cmd);
	if (strcmp(cmd, "create") == 0) {
		/* [NAME] [backend=B] [host=H|auto] [image=I] [snapshot=S]: the words
		 * of sandbox_create an operator reaches for; the tool checks them. */
		static const struct { const char *word, *field; } keys[] = {
			{ "backend", "backend" }, { "host", "host" }, { "image", "image" },
			{ "snapshot", "from_snapshot" }, { "network", "network" },
		};
		cJSON *a = cJSON_CreateObject();
		char words[PROMPT_MAX * 4], *save = NULL;
		snprintf(words, sizeof words, "%s", arg);
		for (char *w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
			char *eq = strchr(w, '=');
			size_t k;
			if (eq == NULL) {
				cJSON_DeleteItemFromObjectCaseSensitive(a, "name");
				cJSON_AddStringToObject(a, "name", w);
				continue;
			}
			*eq = '\0';
			for (k = 0; k < ARRAY_SIZE(keys) && strcmp(w, keys[k].word) != 0; k++)
				;
			if (k == ARRAY_SIZE(keys)) {
				cJSON_Delete(a);
				return model_say(&t->m, 1, ":create takes [NAME] backend= host= "
				    "image= snapshot= network=, not '%s='", w);
			}
			cJSON_DeleteItemFromObjectCaseSensitive(a, keys[k].field);
			cJSON_AddStringToObject(a, keys[k].field, eq + 1);
		}
		source_call_async(t->src, "sandbox_create", a, "create");
		return model_say(&t->m, 0, "creating a sandbox\xe2\x80\xa6");
	}
	if (strcmp(cmd, "approve") == 0) {
		if (source_approve_mode(t->src, arg, &e) < 0)
			return model_say(&t->m, 1, "%s%s%s", e.msg, e.hint[0] ? " \xe2\x80\x94 " : "",
			    e.hint);
		snprintf(t->m.approve_mode, sizeof t->m.approve_mode, "%s", arg);
		return model_say(&t->m, 0, "approvals: %s", arg) | DIRTY_TITLE;
	}
	if (!need_sandbox(t))
		return DIRTY_PROMPT;
	if (strcmp(cmd, "exec") == 0 && *arg) {
		cJSON *a = cJSON_CreateObject();
		cJSON_AddStringToObject(a, "sandbox_id", t->m.sel);
		cJSON_AddStringToObject(a, "command", arg);
		cJSON_AddNumberToObject(a, "timeout_s", 3600);
		source_call_async(t->src, "sandbox_exec", a, "exec");
		t->tab = TAB_EXEC;
		t->scroll = 0;
		return model_say(&t->m, 0, "running: %s", arg) | DIRTY_RIGHT | DIRTY_KEYS;
	}
	if (strcmp(cmd, "forward") == 0 && *arg) {
		int rp = 0, lp = 0;
		if (sscanf(arg, "%d:%d", &rp, &lp) < 1 || rp < 1 || rp > 65535 || lp < 0 ||
		    lp > 65535)
			return model_say(&t->m, 1, "forward: PORT or PORT:LOCAL, 1 to 65535");
		cJSON *a = cJSON_CreateObject();
		cJSON_AddStringToObject(a, "sandbox_id", t->m.sel);
		cJSON_AddNumberToObject(a, "remote_port", rp);
		if (lp)
			cJSON_AddNumberToObject(a, "local_port", lp);
		source_call_async(t->src, "sandbox_port_forward", a, "forward");
		return model_say(&t->m, 0, "forwarding port %d\xe2\x80\xa6", rp);
	}
	if (strcmp(cmd, "kill") == 0)
		return do_kill(t);
	if (strcmp(cmd, "suspend") == 0)
		return run_tool(t, "sandbox_suspend", "suspend", NULL, NULL);
	if (strcmp(cmd, "resume") == 0)
		return run_tool(t, "sandbox_resume", "resume", NULL, NULL);
	if (strcmp(cmd, "destroy") == 0)
		return do_destroy(t);
	if (strcmp(cmd, "shell") == 0)
		return do_shell(t);
	return model_say(&t->m, 1, "unknown command ':%s' (? lists them)", cmd);
}

static int
set_filter(struct tui *t, const char *text)
{
	char err[200];
	struct filter *f = NULL;

	if (*text && (f = filter_new(text, err, sizeof err)) == NULL)
		return model_say(&t->m, 1, "filter: %s", err);
	if (t->focus) {
		filter_free(t->rfilter);
		t->rfilter = f;
		t->scroll = 0;
		return DIRTY_RIGHT;
	}
	filter_free(t->lfilter);
	t->lfilter = f;
	t->top = 0;
	rebuild_view(t);
	return DIRTY_LIST | fix_selection(t);
}

static int
prompt_done(struct tui *t)
{
	char line[PROMPT_MAX * 4];
	size_t o = 0;
	cJSON *a;

	for (size_t i = 0; i < t->plen && o + MB_CUR_MAX < sizeof line; i++) {
		size_t k = wcrtomb(line + o, t->pbuf[i], NULL);
		if (k != (size_t)-1)
			o += k;
	}
	line[o] = '\0';
	t->mode = M_NORMAL;
	curs_set(0);
	switch (t->pkind) {
	case P_FILTER:
		return set_filter(t, line) | DIRTY_PROMPT;
	case P_PALETTE:
		return palette(t, line) | DIRTY_PROMPT;
	case P_CREATE: {
		char cmd[PROMPT_MAX * 4 + 8];
		snprintf(cmd, sizeof cmd, "create %s", line);
		return palette(t, cmd) | DIRTY_PROMPT;
	}
	case P_EXEC:
		if (*line == '\0')
			return DIRTY_PROMPT;
		a = cJSON_CreateObject();
		cJSON_AddStringToObject(a, "sandbox_id", t->m.sel);
		cJSON_AddStringToObject(a, "command", line);
		cJSON_AddNumberToObject(a, "timeout_s", 3600);
		source_call_async(t->src, "sandbox_exec", a, "exec");
		t->tab = TAB_EXEC;
		t->scroll = 0;
		return model_say(&t->m, 0, "running: %s", line) | DIRTY_RIGHT | DIRTY_PROMPT;
	case P_FORWARD: {
		char cmd[PROMPT_MAX * 4 + 8];
		snprintf(cmd, sizeof cmd, "forward %s", line);
		return palette(t, cmd) | DIRTY_PROMPT;
	}
	case P_DENY: {
		struct sbx_err e;
		if (source_approve(t->src, t->deny_id, 0, line, &e) < 0)
			return model_say(&t->m, 1, "%s", e.msg);
		return model_say(&t->m, 0, "denied %s", t->deny_id);
	}
	}
	return DIRTY_PROMPT;
}

static int
prompt_key(struct tui *t, int is_key, wint_t ch)
{
	if (!is_key && (ch == L'\n' || ch == L'\r'))
		return prompt_done(t);
	if (is_key && ch == KEY_ENTER)
		return prompt_done(t);
	if (!is_key && ch == 27) {
		t->mode = M_NORMAL;
		curs_set(0);
		return DIRTY_PROMPT;
	}
	if ((is_key && ch == KEY_BACKSPACE) || (!is_key && (ch == 127 || ch == 8))) {
		if (t->plen > 0)
			t->plen--;
		else if (t->pkind != P_CREATE) {
			t->mode = M_NORMAL;
			curs_set(0);
		}
		return DIRTY_PROMPT;
	}
	if (!is_key && ch == 21) {	/* ^U */
		t->plen = 0;
		return DIRTY_PROMPT;
	}
	if (!is_key && !iswcntrl(ch) && t->plen < PROMPT_MAX - 1)
		t->pbuf[t->plen++] = (wchar_t)ch;
	return DIRTY_PROMPT;
}

static int
approve_first(struct tui *t, size_t i, int allow)
{
	const cJSON *a = cJSON_GetArrayItem(t->m.approvals, (int)i);
	const char *aid = cJSON_GetStringValue(cJSON_GetObjectItem(a, "id"));
	struct sbx_err e;
	char id[32];

	if (aid == NULL)
		return 0;
	/* A copy: the item goes from the list before the id is said. */
	snprintf(id, sizeof id, "%s", aid);
	if (!allow) {
		snprintf(t->deny_id, sizeof t->deny_id, "%s", id);
		t->mode = M_NORMAL;
		return prompt_open(t, P_DENY, " deny: reason (optional): ") | DIRTY_ALL;
	}
	if (source_approve(t->src, id, 1, NULL, &e) < 0)
		return model_say(&t->m, 1, "%s", e.msg);
	cJSON_DeleteItemFromArray(t->m.approvals, (int)i);
	return model_say(&t->m, 0, "approved %s", id) | DIRTY_TITLE;
}

/* --- input --------------------------------------------------------------- */

static int
mouse(struct tui *t)
{
	MEVENT me;
	struct layout L;

	if (getmouse(&me) != OK)
		return 0;
	layout(t, &L);
	if (me.bstate & (BUTTON4_PRESSED | BUTTON5_PRESSED)) {
		long d = (me.bstate & BUTTON4_PRESSED) ? -3 : 3;
		if (me.x >= L.rx) {
			t->focus = 1;
			return scroll_right(t, d) | DIRTY_LIST;
		}
		return move_list(t, d);
	}
	if (!(me.bstate & (BUTTON1_CLICKED | BUTTON1_PRESSED | BUTTON1_RELEASED)))
		return 0;
	if (me.x < L.lw && me.y >= L.top + 2 && me.y < L.top + L.list_h - 1) {
		size_t i = t->top + (size_t)(me.y - L.top - 2);
		t->focus = 0;
		if (i < t->nview)
			return select_id(t, t->m.sb[t->view[i]].id) | DIRTY_LIST | DIRTY_RIGHT;
		return DIRTY_LIST | DIRTY_RIGHT;
	}
	if (me.x >= L.rx && me.y == L.top + 1) {
		int cx = L.rx + 1;
		for (int i = 0; i < TAB_N; i++) {
			int w = (int)strlen(tab_names[i]) + 3;
			if (me.x >= cx && me.x < cx + w) {
				t->focus = 1;
				return set_tab(t, i) | DIRTY_LIST;
			}
			cx += w;
		}
	}
	if (me.x >= L.rx) {
		t->focus = 1;
		return DIRTY_LIST | DIRTY_RIGHT | DIRTY_KEYS;
	}
	return 0;
}

static int
key(struct tui *t, int is_key, wint_t ch)
{
	const struct keybind *k;
	int code = is_key ? (int)ch : (ch < 128 ? (int)ch : -1);

	if (is_key && ch == KEY_RESIZE) {
		getmaxyx(stdscr, t->rows, t->cols);
		clear();
		return DIRTY_ALL;
	}
	if (is_key && ch == KEY_MOUSE)
		return t->mode == M_NORMAL ? mouse(t) : 0;
	switch (t->mode) {
	case M_PROMPT:
		return prompt_key(t, is_key, ch);
	case M_CONFIRM:
		t->mode = M_NORMAL;
		if (code == 'y' || code == 'Y') {
			cJSON *a = cJSON_CreateObject();
			cJSON_AddStringToObject(a, "sandbox_id", t->confirm_id);
			source_call_async(t->src, "sandbox_destroy", a, "destroy");
			return model_say(&t->m, 0, "destroying %s\xe2\x80\xa6", t->confirm_id);
		}
		return model_say(&t->m, 0, "not destroyed");
	case M_HELP:
		if (code == 27 || code == 'q' || code == '?' || code == KEY_F(1) || code == 'h') {
			t->mode = M_NORMAL;
			clear();
			return DIRTY_ALL;
		}
		if (code == 'j' || code == KEY_DOWN)
			t->help_top++;
		if (code == KEY_NPAGE || code == ' ')
			t->help_top += (size_t)page(t);
		if (code == KEY_PPAGE)
			t->help_top = t->help_top > (size_t)page(t) ? t->help_top - (size_t)page(t) : 0;
		if ((code == 'k' || code == KEY_UP) && t->help_top > 0)
			t->help_top--;
		return DIRTY_ALL;
	case M_APPROVALS: {
		int n = t->m.approvals ? cJSON_GetArraySize(t->m.approvals) : 0;
		if (code == 27 || code == 'q' || code == 'a') {
			t->mode = M_NORMAL;
			clear();
			return DIRTY_ALL;
		}
		if ((code == 'j' || code == KEY_DOWN) && t->acur + 1 < (size_t)n)
			t->acur++;
		if ((code == 'k' || code == KEY_UP) && t->acur > 0)
			t->acur--;
		if ((code == 'y' || code == 'n') && (size_t)n > t->acur)
			return approve_first(t, t->acur, code == 'y') | DIRTY_ALL;
		return DIRTY_ALL;
	}
	case M_NORMAL:
		break;
	}
	/* A pending approval takes y and n. */
	if ((code == 'y' || code == 'n') && !t->readonly && t->m.approvals &&
	    cJSON_GetArraySize(t->m.approvals) > 0)
		return approve_first(t, 0, code == 'y');
	if ((k = key_find(code)) == NULL)
		return 0;
	if (t->readonly && (k->flags & K_MUTATES))
		return model_say(&t->m, 1, "read-only console");
	return k->fn(t);
}

/* --- results from the source ---------------------------------------------- */

static int
entry_cmp(const void *a, const void *b)
{
	const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
	const char *tx = cJSON_GetStringValue(cJSON_GetObjectItem(x, "type"));
	const char *ty = cJSON_GetStringValue(cJSON_GetObjectItem(y, "type"));
	const char *px = cJSON_GetStringValue(cJSON_GetObjectItem(x, "path"));
	const char *py = cJSON_GetStringValue(cJSON_GetObjectItem(y, "path"));
	int dx = tx && strcmp(tx, "dir") == 0, dy = ty && strcmp(ty, "dir") == 0;

	if (dx != dy)
		return dy - dx;
	return strcmp(px ? px : "", py ? py : "");
}

/* Directories first, then files, each by name (as ls and mc show them). */
static cJSON *
files_sorted(const cJSON *entries)
{
	size_t n = (size_t)cJSON_GetArraySize(entries), i = 0;
	const cJSON **v = xcalloc(n ? n : 1, sizeof *v);
	const cJSON *en;
	cJSON *out = cJSON_CreateArray();

	cJSON_ArrayForEach(en, entries)
		v[i++] = en;
	qsort(v, n, sizeof *v, entry_cmp);
	for (i = 0; i < n; i++)
		cJSON_AddItemToArray(out, cJSON_Duplicate(v[i], 1));
	free(v);
	return out;
}

static int
result(struct tui *t, const cJSON *r)
{
	const char *what = cJSON_GetStringValue(cJSON_GetObjectItem(r, "what"));
	const cJSON *d = cJSON_GetObjectItem(r, "data");
	int ok = cJSON_IsTrue(cJSON_GetObjectItem(r, "ok"));

	if (what == NULL)
		return 0;
	if (!ok) {
		const char *msg = cJSON_GetStringValue(cJSON_GetObjectItem(r, "message"));
		const char *hint = cJSON_GetStringValue(cJSON_GetObjectItem(r, "hint"));
		if (strcmp(what, "files") == 0 && t->fentries == NULL)
			t->fentries = cJSON_CreateArray();
		return model_say(&t->m, 1, "%s: %s%s%s", what, msg ? msg : "failed",
		    hint ? " \xe2\x80\x94 " : "", hint ? hint : "") | DIRTY_RIGHT;
	}
	if (strcmp(what, "files") == 0) {
		cJSON_Delete(t->fentries);
		t->fentries = files_sorted(cJSON_GetObjectItem(d, "entries"));
		t->fcur = 0;
		return DIRTY_RIGHT;
	}
	if (strcmp(what, "read") == 0) {
		const char *c = cJSON_GetStringValue(cJSON_GetObjectItem(d, "content"));
		const char *enc = cJSON_GetStringValue(cJSON_GetObjectItem(d, "encoding"));
		lines_clear(&t->fview);
		if (enc && strcmp(enc, "base64") == 0)
			c = "(binary file: not shown)";
		lines_append(&t->fview, c ? c : "", c ? strlen(c) : 0);
		t->fviewing = 1;
		t->scroll = 0;
		return DIRTY_RIGHT;
	}
	if (strcmp(what, "create") == 0) {
		const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(d, "sandbox_id"));
		return model_say(&t->m, 0, "created %s", id ? id : "a sandbox");
	}
	if (strcmp(what, "exec") == 0) {
		const cJSON *ec = cJSON_GetObjectItem(d, "exit_code");
		const char *sig = cJSON_GetStringValue(cJSON_GetObjectItem(d, "signal"));
		if (sig)
			return model_say(&t->m, 0, "command killed by %s", sig);
		return model_say(&t->m, 0, "command exited %d", cJSON_IsNumber(ec) ?
		    ec->valueint : -1);
	}
	if (strcmp(what, "kill") == 0) {
		const char *sig = cJSON_GetStringValue(cJSON_GetObjectItem(d, "signal"));
		const char *x = cJSON_GetStringValue(cJSON_GetObjectItem(d, "exec_id"));
		return model_say(&t->m, 0, "%s sent to %s", sig ? sig : "signal", x ? x : "it");
	}
	if (strcmp(what, "forward") == 0) {
		const char *url = cJSON_GetStringValue(cJSON_GetObjectItem(d, "url"));
		return model_say(&t->m, 0, "forwarding: %s", url ? url : "started");
	}
	return model_say(&t->m, 0, "%s: done", what);
}

/* --- the loop ------------------------------------------------------------ */

static void
restore_terminal(void)
{
	if (!isendwin())
		endwin();
}

static void
on_signal(int sig)
{
	got_signal = sig;
}

static void
lat_note(struct tui *t)
{
	if (t->pending_since == 0)
		return;
	uint64_t us = (uint64_t)(now_ms() - t->pending_since);
	t->lat_n++;
	t->lat_sum += us;
	if (us > t->lat_max)
		t->lat_max = us;
	t->lat_hist[us < 63 ? us : 63]++;
	t->pending_since = 0;
}

/* Redraw latency figures for the benchmark (SBXTOP_TUI_STATS=FILE). */
static void
lat_write(struct tui *t)
{
	const char *path = getenv("SBXTOP_TUI_STATS");
	uint64_t acc = 0, p50 = 0, p99 = 0;
	FILE *f;

	if (path == NULL || (f = fopen(path, "we")) == NULL)
		return;
	for (int i = 0; i < 64; i++) {
		acc += t->lat_hist[i];
		if (!p50 && acc * 2 >= t->lat_n)
			p50 = (uint64_t)i;
		if (!p99 && acc * 100 >= t->lat_n * 99)
			p99 = (uint64_t)i;
	}
	fprintf(f, "redraws %llu mean_ms %.1f p50_ms %llu p99_ms %llu max_ms %llu\n",
	    (unsigned long long)t->lat_n, t->lat_n ? (double)t->lat_sum / (double)t->lat_n : 0.0,
	    (unsigned long long)p50, (unsigned long long)p99, (unsigned long long)t->lat_max);
	fclose(f);
}

static void
loop(struct tui *t)
{
	int64_t last_draw = 0, last_tick = 0;

	while (!t->quit && !got_signal) {
		int64_t now = now_ms();
		int timeout = 1000 - (int)(now - last_tick);

		if (t->dirty && now - last_draw >= FRAME_MS) {
			draw(t);
			lat_note(t);
			last_draw = now_ms();
		}
		if (t->dirty) {
			int wait = FRAME_MS - (int)(now_ms() - last_draw);
			timeout = wait < 0 ? 0 : wait;
		}
		/* The log is a file: look at it often while it is shown. */
		if (t->tab == TAB_LOGS && timeout > 250)
			timeout = 250;
		if (timeout < 0)
			timeout = 0;
		struct pollfd p[2] = { { 0, POLLIN, 0 }, { source_wake_fd(t->src), POLLIN, 0 } };
		int n = poll(p, 2, timeout);
		if (n < 0 && errno != EINTR)
			break;
		if (got_signal)
			break;
		/* Keys (and KEY_RESIZE after a SIGWINCH, which interrupts poll). */
		for (;;) {
			wint_t ch;
			int r = get_wch(&ch);
			if (r == ERR)
				break;
			t->dirty |= key(t, r == KEY_CODE_YES, ch);
			if (t->quit)
				return;
		}
		if (p[1].revents & POLLIN) {
			cJSON *m;
			int d = 0, relist = 0;
			for (int k = 0; k < 5000 && (m = source_next(t->src)) != NULL; k++) {
				const char *kind = cJSON_GetStringValue(cJSON_GetObjectItem(m, "k"));
				int dd = kind && strcmp(kind, "result") == 0 ? result(t, m) :
				    model_apply(&t->m, m);
				relist |= kind && strcmp(kind, "list") == 0 && (dd & DIRTY_LIST);
				d |= dd;
				cJSON_Delete(m);
			}
			if (relist) {
				rebuild_view(t);
				d |= fix_selection(t);
			}
			if (d && t->pending_since == 0)
				t->pending_since = now_ms();
			t->dirty |= d;
		}
		now = now_ms();
		if (now - last_tick >= 1000) {
			/* The clock, ages and durations move. */
			last_tick = now;
			t->dirty |= DIRTY_TITLE | DIRTY_LIST | DIRTY_PROMPT;
			if (t->tab == TAB_EXEC)
				t->dirty |= DIRTY_RIGHT;
		}
		if (t->tab == TAB_LOGS)
			t->dirty |= model_poll_logs(&t->m);
	}
}

int
tui_main(struct config *cfg, const struct tui_opts *o)
{
	struct tui t;
	struct sbx_err e;
	struct sigaction sa;
	const char *theme = o->theme ? o->theme : config_str(cfg, "theme");
	_cleanup_free_ char *logf = NULL;
	char approve[16];

	memset(&t, 0, sizeof t);
	setlocale(LC_ALL, "");
	/* The terminal is the console's: logs go to a file. */
	if ((logf = paths_file(PATHS_STATE, "console.log", 1, &e)) != NULL)
		log_open("sbxtop", logf);
	snprintf(approve, sizeof approve, "%s", config_str(cfg, "approve"));
	if (theme_load(theme, &e) < 0) {
		fprintf(stderr, "sbxtop: %s%s%s\n", e.msg, e.hint[0] ? ": " : "", e.hint);
		config_free(cfg);
		return 2;
	}
	if (o->standalone) {
		t.src = source_standalone_new(cfg, &e);
	} else {
		t.src = source_remote_new(&e);
		if (t.src == NULL && e.code == SBX_EUNSUPPORTED) {
			/* Until the core server is merged: run the core here. */
			log_info("console: %s; running the core in this process", e.msg);
			t.src = source_standalone_new(cfg, &e);
		} else {
			config_free(cfg);
		}
	}
	if (t.src == NULL) {
		fprintf(stderr, "sbxtop: %s%s%s\n", e.msg, e.hint[0] ? " \xe2\x80\x94 " : "",
		    e.hint);
		return 1;
	}
	model_init(&t.m);
	lines_init(&t.fview, 20000);
	t.readonly = o->readonly;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: poll returns and the loop ends cleanly. */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	fatal_set_hook(restore_terminal);

	if (initscr() == NULL) {
		fprintf(stderr, "sbxtop: cannot use the terminal (TERM=%s)\n",
		    getenv("TERM") ? getenv("TERM") : "");
		source_free(t.src);
		model_free(&t.m);
		return 1;
	}
	cbreak();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	set_escdelay(25);
	curs_set(0);
	mousemask(BUTTON1_CLICKED | BUTTON1_PRESSED | BUTTON4_PRESSED | BUTTON5_PRESSED, NULL);
	mouseinterval(0);
	theme_apply();
	getmaxyx(stdscr, t.rows, t.cols);
	{
		/* The core server knows its sessions and approvals; standalone does not. */
		cJSON *list = NULL;
		if (source_approvals(t.src, &list, &e) == 0) {
			t.m.approvals = cJSON_Duplicate(cJSON_IsArray(list) ? list :
			    cJSON_GetObjectItem(list, "approvals"), 1);
			const char *mode = cJSON_GetStringValue(cJSON_GetObjectItem(list, "mode"));
			snprintf(t.m.approve_mode, sizeof t.m.approve_mode, "%s", mode ? mode :
			    approve);
		}
		cJSON_Delete(list);
	}
	rebuild_view(&t);
	t.dirty = DIRTY_ALL;
	loop(&t);

	endwin();
	fatal_set_hook(NULL);
	lat_write(&t);
	source_free(t.src);
	filter_free(t.lfilter);
	filter_free(t.rfilter);
	cJSON_Delete(t.fentries);
	lines_free(&t.fview);
	free(t.view);
	model_free(&t.m);
	return got_signal ? 128 + got_signal : 0;
}
