/* The console's drawing: the title, the sandbox list, the forwards, the right
 * pane and its tabs, the prompt line, the key bar, help and approvals.  It
 * reads struct tui and the model and changes nothing but the screen (and the
 * list's first row, which follows the cursor). */
#include <curses.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wchar.h>
#include <wctype.h>

#include "core/sandbox.h"
#include "lib/buf.h"
#include "lib/util.h"
#include "tui/theme.h"
#include "tui/tui-int.h"

/* --- text ---------------------------------------------------------------- */

static int
put(int y, int x, int w, const char *s, int attr)
{
	return put_from(y, x, w, s, attr, 0);
}

/* The columns put() would use for s, with no limit. */
static int
text_cols(const char *s)
{
	mbstate_t st;
	int used = 0;
	size_t len = strlen(s);

	memset(&st, 0, sizeof st);
	while (len > 0) {
		wchar_t wc;
		size_t n = mbrtowc(&wc, s, len, &st);
		int cw;
		if (n == (size_t)-1 || n == (size_t)-2) {
			memset(&st, 0, sizeof st);
			n = 1;
			cw = 1;
		} else if (n == 0) {
			break;
		} else {
			cw = iswcntrl((wint_t)wc) || wc == 0x7f ? 1 : wcwidth(wc);
			if (cw < 0)
				cw = 1;
		}
		used += cw;
		s += n;
		len -= n;
	}
	return used;
}

/* s padded with spaces to cols display columns (never cut). */
static const char *
pad(char *buf, size_t len, const char *s, int cols)
{
	size_t n = (size_t)snprintf(buf, len, "%s", s);

	for (int c = text_cols(s); c < cols && n + 1 < len; c++)
		buf[n++] = ' ';
	buf[n < len ? n : len - 1] = '\0';
	return buf;
}

static void
fill(int y, int x, int w, int attr)
{
	attron(attr);
	mvhline(y, x, ' ', w);
	attroff(attr);
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

/* --- drawing ------------------------------------------------------------- */

/* The title's text, long (short 0) or short (1) for a narrow terminal. */
static void
title_text(struct tui *t, int short_, char *buf, size_t len)
{
	char appr[96], core[64], sess[16], orph[40] = "";
	int n = (int)model_queue_n(&t->m);

	if (strcmp(source_kind(t->src), "standalone") == 0 && n > 0)
		snprintf(appr, sizeof appr, short_ ? "net asks: %d" : "network asks: %d pending", n);
	else if (strcmp(source_kind(t->src), "standalone") == 0)
		snprintf(appr, sizeof appr, short_ ? "approvals: n/a" :
		    "approvals: n/a (standalone)");
	else
		snprintf(appr, sizeof appr, short_ ? "approvals: %s (%d)" :
		    "approvals: %s (%d pending)", t->m.approve_mode, n);
	/* A core server that died is replaced at once; the title says so. */
	if (t->m.core_lost)
		snprintf(core, sizeof core, "lost, reconnecting");
	else if (t->m.core_reconnects > 0)
		snprintf(core, sizeof core, short_ ? "%s (new, pid %d)" :
		    "%s (reconnected, pid %d)", source_kind(t->src), t->m.core_pid);
	else
		snprintf(core, sizeof core, "%s", source_kind(t->src));
	if (t->m.sessions < 0)
		snprintf(sess, sizeof sess, "no");
	else
		snprintf(sess, sizeof sess, "%d", t->m.sessions);
	/* Sandboxes no record names: `sbxtop gc` removes them. */
	if (t->m.orphans > 0)
		snprintf(orph, sizeof orph, " \xe2\x94\x80 orphans: %d", t->m.orphans);
	if (short_)
		snprintf(buf, len, " sbxtop \xe2\x94\x80 core: %s \xe2\x94\x80 %s MCP \xe2\x94\x80 "
		    "%s%s%s", core, sess, appr, orph, t->readonly ? " \xe2\x94\x80 read-only" : "");
	else
		snprintf(buf, len, " sbxtop %s \xe2\x94\x80 core: %s \xe2\x94\x80 %s MCP session%s "
		    "\xe2\x94\x80 %s%s%s", SBX_VERSION, core, sess, t->m.sessions == 1 ? "" : "s",
		    appr, orph, t->readonly ? " \xe2\x94\x80 read-only" : "");
}

static void
draw_title(struct tui *t)
{
	char buf[512], clk[16];
	int cw;

	clock_of(clk, sizeof clk, wall_ms());
	/* The clock keeps the right end, however narrow: it shows the console is
	 * alive.  The rest is said shorter when it would not fit. */
	cw = text_cols(clk) + 2;
	title_text(t, 0, buf, sizeof buf);
	if (text_cols(buf) > t->cols - cw)
		title_text(t, 1, buf, sizeof buf);
	fill(0, 0, t->cols, theme_attr(TH_TITLE));
	put(0, 0, t->cols - cw, buf, theme_attr(TH_TITLE));
	if (t->cols > cw)
		put(0, t->cols - cw + 1, cw - 1, clk, theme_attr(TH_TITLE));
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

/* Which columns fit in w display columns (after the one of the marker),
 * leaving RUN its few columns once the first four are in. */
#define RUN_MIN 9
static void
list_fit(int w, int shown[C_N])
{
	int used = 1;

	if (w > 1 + 11 + 11 + 10 + 6 + RUN_MIN)
		w -= RUN_MIN;
	memset(shown, 0, C_N * sizeof *shown);
	for (int rank = 0; rank < C_N; rank++)
		for (int c = 0; c < C_N; c++)
			if (list_cols[c].rank == rank && used + list_cols[c].w <= w) {
				shown[c] = 1;
				used += list_cols[c].w;
			}
}

/* Text in a cell of width cols at *cx (one column left blank after it), cut at
 * xend, the pane's inner edge; *cx moves on by the whole width. */
static void
cell(int y, int *cx, int xend, int cols, const char *text, int attr)
{
	int room = xend - *cx;

	if (room > cols - 1)
		room = cols - 1;
	/* Cut with an ellipsis, so a cut name does not pass for a whole one. */
	if (room > 1 && text_cols(text) > room) {
		int n = put(y, *cx, room - 1, text, attr);
		put(y, *cx + n, 1, "\xe2\x80\xa6", attr);
	} else {
		put(y, *cx, room, text, attr);
	}
	*cx += cols;
}

/* The list's frame, its title (the filter's count) and the headings of the
 * columns shown, the sort column marked with its direction. */
static void
list_header(struct tui *t, const struct layout *L, const int shown[C_N])
{
	char title[128];
	int x = 1, y0 = L->top, xend = x + L->lw - 2, cx = x + 1;

	if (t->lfilter)
		fmt(title, sizeof title, "Sandboxes (%zu of %zu) /%s", t->nview, t->m.nsb,
		    filter_text(t->lfilter));
	else
		fmt(title, sizeof title, "Sandboxes (%zu)", t->m.nsb);
	frame(y0, 0, L->list_h, L->lw, title, t->focus == 0);
	for (int c = 0; c < C_N; c++)
		if (shown[c]) {
			char h[32];
			/* The sort column wears its direction (< and > move it, o turns it). */
			snprintf(h, sizeof h, "%s%s", list_cols[c].head, c != t->sort_col ? "" :
			    t->sort_desc ? "\xe2\x96\xbc" : "\xe2\x96\xb2");
			cell(y0 + 1, &cx, xend, list_cols[c].w, h, theme_attr(TH_HEADER) |
			    (c == t->sort_col ? A_UNDERLINE : 0));
		}
	if (cx < xend)
		put(y0 + 1, cx, xend - cx, "RUN", theme_attr(TH_HEADER));
}

/* What runs in s, for the RUN column: the selected sandbox's journal says
 * exactly; the others' count and latest command. */
static void
list_run(const struct tui *t, const struct m_sandbox *s, char *run, size_t len)
{
	int n = 0;
	const char *last = "";

	run[0] = '\0';
	if (strcmp(s->id, t->m.sel) != 0) {
		if (s->running > 0)
			snprintf(run, len, "\xe2\x97\x8f%d %s", s->running, s->now);
		return;
	}
	for (size_t i = 0; i < t->m.nexecs; i++)
		if (t->m.execs[i]->running) {
			n++;
			last = t->m.execs[i]->command ? t->m.execs[i]->command : "";
		}
	if (n)
		snprintf(run, len, "\xe2\x97\x8f%d %s", n, last);
}

/* One row of the list: s at y, the cursor's marker, the columns shown. */
static void
list_row(struct tui *t, const struct m_sandbox *s, int y, int x, int w, const int shown[C_N],
    int sel, int64_t now)
{
	char age[16], left[16], cpu[24], mem[24], pids[24], run[128], fwd[16], disk[48], lim[24];
	int a = sel ? theme_attr(TH_SELECTED) : theme_attr(TH_NORMAL), xend = x + w, cx;

	human_dur(age, sizeof age, now - s->created_ms);
	if (s->expires_ms > 0)
		human_dur(left, sizeof left, s->expires_ms > now ? s->expires_ms - now : 0);
	else
		snprintf(left, sizeof left, "-");
	if (s->cpu_pct >= 0)
		snprintf(cpu, sizeof cpu, "%.1f", s->cpu_pct);
	else
		snprintf(cpu, sizeof cpu, "-");
	if (s->mem_bytes >= 0)
		snprintf(mem, sizeof mem, s->mem_bytes >= 1000 << 20 ? "%.1fG" : "%.1fM",
		    (double)s->mem_bytes / (s->mem_bytes >= 1000 << 20 ? 1 << 30 : 1 << 20));
	else
		snprintf(mem, sizeof mem, "-");
	if (s->pids >= 0)
		snprintf(pids, sizeof pids, "%lld", (long long)s->pids);
	else
		snprintf(pids, sizeof pids, "-");
	snprintf(fwd, sizeof fwd, "%d", s->nfwd);
	lim[0] = '\0';
	if (s->disk_mib > 0)
		snprintf(lim, sizeof lim, s->disk_mib >= 1000 ? "/%.1fG" : "/%.0fM",
		    (double)s->disk_mib / (s->disk_mib >= 1000 ? 1024 : 1));
	if (s->disk_bytes >= 0)
		snprintf(disk, sizeof disk, s->disk_bytes >= 1000 << 20 ? "%.1fG%s" : "%.0fM%s",
		    (double)s->disk_bytes / (s->disk_bytes >= 1000 << 20 ? 1 << 30 : 1 << 20), lim);
	else
		snprintf(disk, sizeof disk, "-%s", lim);
	list_run(t, s, run, sizeof run);
	const char *text[C_N] = {
		[C_ID] = s->id, [C_NAME] = s->name[0] ? s->name : "-",
		[C_BACKEND] = s->backend, [C_STATE] = s->state, [C_AGE] = age,
		[C_LEFT] = left, [C_CPU] = cpu, [C_MEM] = mem, [C_PIDS] = pids, [C_DISK] = disk,
		[C_FWD] = fwd,
	};
	fill(y, x, w, a);
	cx = x + put(y, x, 1, sel ? "\xe2\x96\xb6" : " ", a);
	for (int c = 0; c < C_N; c++)
		if (shown[c])
			cell(y, &cx, xend, list_cols[c].w, text[c],
			    c == C_STATE && !sel ? state_attr(s->state) : a);
	if (cx < xend)
		put(y, cx, xend - cx, run, sel ? a : theme_attr(TH_RUNNING));
}

static void
draw_list(struct tui *t, const struct layout *L)
{
	int x = 1, y0 = L->top, w = L->lw - 2, rows = L->list_h - 3;
	int64_t now = wall_ms();
	size_t cur = cursor(t);
	int shown[C_N];

	list_fit(w, shown);
	for (int y = y0; y < y0 + L->list_h; y++)
		mvhline(y, 0, ' ', L->lw);
	list_header(t, L, shown);
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
		list_row(t, s, y0 + 2 + r, x, w, shown, sel, now);
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
		/* Failures as `forward --list` shows them: FAILED and the last error. */
		if (f->failures > 0)
			fmt(row, sizeof row, "%s:%d \xe2\x86\x92 %s:%d  FAILED %llu: %s", f->bind,
			    f->local, f->sandbox, f->remote, (unsigned long long)f->failures,
			    f->last_error[0] ? f->last_error : "no tunnel");
		else
			fmt(row, sizeof row, "%s:%d \xe2\x86\x92 %s:%d  %llu conns  %s/%s%s", f->bind,
			    f->local, f->sandbox, f->remote, (unsigned long long)f->conns, in, out,
			    f->live ? "" : "  (stopped)");
		put(y0 + 1 + (int)i, 2, w - 1, row, f->failures > 0 ? theme_attr(TH_FAIL) :
		    f->live ? theme_attr(TH_NORMAL) : theme_attr(TH_DIM));
	}
}

static void
draw_bottom_up(int y0, int x, int w, int h, struct rline *v, size_t n)
{
	/* What fits starts at the top, as a terminal does. */
	if ((int)n < h)
		h = (int)n;
	for (size_t i = 0; i < n && (int)i < h; i++) {
		int y = y0 + h - 1 - (int)i, c = x + v[i].indent;
		if (v[i].stamp[0])
			c += put(y, c, x + w - c, v[i].stamp, theme_attr(TH_DIM)) + 1;
		int room = x + w - c;
		if (v[i].cols > 0 && v[i].cols < room)
			room = v[i].cols;
		put_from(y, c, room, v[i].text, v[i].attr | (v[i].match ? A_REVERSE : 0),
		    v[i].skip);
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

/* The right pane's frame and title: the sandbox, its image, state and time left. */
static void
draw_pane_title(struct tui *t, const struct layout *L, const struct m_sandbox *s, int64_t now)
{
	char title[256], left[16];

	human_dur(left, sizeof left, s->expires_ms > now ? s->expires_ms - now : 0);
	/* An OCI image by its last part (debian:12), a directory as it is. */
	const char *img = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s->rec, "image"));
	if (img != NULL && img[0] != '/' && strrchr(img, '/') != NULL)
		img = strrchr(img, '/') + 1;
	fmt(title, sizeof title, "%s  %s \xe2\x94\x80 %s%s%s \xe2\x94\x80 %s%s%s", s->id,
	    s->name[0] ? s->name : "-", s->backend, img ? " \xe2\x94\x80 " : "", img ? img : "",
	    s->state, s->expires_ms ? " \xe2\x94\x80 " : "", s->expires_ms ?
	    fmt((char[32]){ 0 }, 32, "%s left", left) : "");
	frame(L->top, L->rx, L->h, L->rw, title, t->focus == 1);
}

/* The tab row: the tabs, the active one always in view, then the pane's
 * filter and, in Exec and Logs, the pager's state at the right. */
static void
draw_tab_row(struct tui *t, const struct layout *L)
{
	int y = L->top + 1, x = L->rx + 1, w = L->rw - 2;
	int cx = x, tx[TAB_N], tw[TAB_N], lmark, rmark;
	const char *tn[TAB_N];
	char row[512];

	tabs_place(t, L, tx, tw, tn, &lmark, &rmark);
	if (lmark)
		put(y, x, 1, "\xe2\x80\xb9", theme_attr(TH_DIM));
	for (int i = 0; i < TAB_N; i++) {
		if (tw[i] == 0)
			continue;
		const char *nm = tw[i] == (int)strlen(tn[i]) ? tn[i] : fmt(row, sizeof row,
		    i == (int)t->tab ? "[%s]" : " %s ", tn[i]);
		put(y, tx[i], x + w - tx[i], nm, theme_attr(i == (int)t->tab ?
		    TH_TAB_ACTIVE : TH_TAB));
		cx = tx[i] + tw[i];
	}
	if (rmark) {
		put(y, cx + 1, 1, "\xe2\x80\xba", theme_attr(TH_DIM));
		cx += 2;
	}
	if (t->rfilter && (t->tab == TAB_EXEC || t->tab == TAB_LOGS))
		put(y, cx, x + w - cx, fmt(row, sizeof row, " /%s", filter_text(t->rfilter)),
		    theme_attr(TH_PROMPT));
	if (t->tab == TAB_EXEC || t->tab == TAB_LOGS) {
		char st[96];
		snprintf(st, sizeof st, "%s%s%s%s%s%s", t->search ? fmt((char[48]){ 0 }, 48,
		    " %zu/%zu", t->search_n ? t->search_at : 0, t->search_n) : "",
		    t->wrap ? " wrap" : "", t->stamps ? " time" : "", t->follow ? "" : " paused",
		    t->hoff > 0 && !t->wrap ? fmt((char[24]){ 0 }, 24, " \xe2\x86\x92%d", t->hoff) : "",
		    t->scroll > 0 ? fmt((char[24]){ 0 }, 24, " \xe2\x86\x91%zu", t->scroll) : "");
		/* Right-aligned; where the tabs leave too little room, the search's
		 * count (first) still shows. */
		int sw = text_cols(st), at = x + w - sw;
		if (at < cx + 1)
			at = cx + 1;
		if (sw > 0 && at < x + w)
			put(y, at, x + w - at, st, theme_attr(TH_DIM));
	}
}

/* Exec or Logs: the pager's lines, the newest at the bottom. */
static void
draw_pager(struct tui *t, int cy, int x, int w, int ch)
{
	struct rline *v = xcalloc((size_t)ch, sizeof *v);
	size_t n = viewer_lines(t, t->tab == TAB_EXEC, v, (size_t)ch, t->scroll, w);

	if (n == 0)
		put(cy, x + 1, w - 1, t->tab == TAB_EXEC ? "no commands yet \xe2\x80\x94 "
		    "x runs one; an agent's appear here live" : t->m.log_path ||
		    t->m.log_state > 0 ? "(the log is empty)" : t->m.log_state < 0 ?
		    "(no log yet)" : "(no log here)", theme_attr(TH_DIM));
	draw_bottom_up(cy, x, w, ch, v, n);
	free(v);
}

/* Ports: s's forwards, the one under the cursor marked. */
static void
draw_ports(struct tui *t, const struct m_sandbox *s, int cy, int x, int w, int ch)
{
	char row[512];
	int r = 0;

	for (size_t i = 0; i < t->m.nfwd && r < ch - 1; i++) {
		const struct m_forward *f = &t->m.fwd[i];
		char in[24], out[24];
		int a = (size_t)r == t->pcur && t->focus ? theme_attr(TH_SELECTED) :
		    theme_attr(TH_NORMAL);
		if (strcmp(f->sandbox, s->id) != 0)
			continue;
		human_bytes(in, sizeof in, f->bytes_in);
		human_bytes(out, sizeof out, f->bytes_out);
		if (a != theme_attr(TH_NORMAL))
			fill(cy + r, x + 1, w - 1, a);
		put(cy + r++, x + 1, w - 1, fmt(row, sizeof row, "%s:%d->%d  %s  %llu conns  "
		    "in %s  out %s", f->bind, f->local, f->remote, f->live ? "live" : "stopped",
		    (unsigned long long)f->conns, in, out), a);
	}
	if (r == 0)
		put(cy, x + 1, w - 1, "no forwards \xe2\x80\x94 p forwards a port",
		    theme_attr(TH_DIM));
	else
		put(cy + r + 1 < cy + ch ? cy + r + 1 : cy + r, x + 1, w - 1, t->focus ?
		    "j/k choose, d stops the forward" : "Enter, then d stops a forward",
		    theme_attr(TH_DIM));
}

/* Info: s's record as `sbxtop status` shows it, the labels in the header's
 * colour, the values plain. */
static void
draw_info(struct tui *t, const struct m_sandbox *s, int64_t now, int cy, int x, int w, int ch)
{
	struct sbx_err e;
	struct sandbox *sb = s->rec ? sandbox_from_json(s->rec, &e) : NULL;
	struct buf b;
	char row[512];
	int r = 0;
	size_t skip = t->scroll;

	buf_init(&b, 1 << 20);
	if (sb != NULL)
		sandbox_describe(sb, 0, NULL, now, &b);
	buf_append(&b, "", 1);
	for (char *p = b.data, *nl; p && *p && r < ch; p = nl ? nl + 1 : NULL) {
		nl = strchr(p, '\n');
		if (nl)
			*nl = '\0';
		if (skip > 0) {
			skip--;
			continue;
		}
		size_t lab = p[0] != ' ' && strchr(p, ':') ? (size_t)(strchr(p, ':') - p) + 1 : 0;
		int lw = put(cy + r, x + 1, w - 1, fmt(row, sizeof row, "%.*s", (int)lab, p),
		    theme_attr(TH_HEADER));
		put(cy + r++, x + 1 + lw, w - 1 - lw, p + lab, theme_attr(TH_NORMAL));
		if (!nl)
			break;
	}
	buf_free(&b);
	sandbox_free(sb);
}

static void
draw_right(struct tui *t, const struct layout *L)
{
	struct m_sandbox *s = selected(t);
	int y0 = L->top, x = L->rx + 1, w = L->rw - 2, ch = L->h - 3, cy = y0 + 2;
	int64_t now = wall_ms();

	for (int y = y0; y < y0 + L->h; y++)
		mvhline(y, L->rx, ' ', L->rw);
	if (s == NULL) {
		frame(y0, L->rx, L->h, L->rw, "no sandbox selected", t->focus == 1);
		put(y0 + 2, x + 1, w - 1, "Select a sandbox on the left (j/k), or press c to "
		    "create one.", theme_attr(TH_DIM));
		return;
	}
	draw_pane_title(t, L, s, now);
	draw_tab_row(t, L);
	if (ch <= 0)
		return;
	switch (t->tab) {
	case TAB_EXEC:
	case TAB_LOGS:
		draw_pager(t, cy, x, w, ch);
		break;
	case TAB_PORTS:
		draw_ports(t, s, cy, x, w, ch);
		break;
	case TAB_NET:
		draw_network(t, cy, x + 1, w - 1, ch);
		break;
	case TAB_FILES:
		draw_files(t, cy, x + 1, w - 1, ch);
		break;
	case TAB_ACTIVITY:
		draw_activity(t, cy, x + 1, w - 1, ch);
		break;
	case TAB_DIFF:
		draw_diff(t, cy, x + 1, w - 1, ch);
		break;
	case TAB_INFO:
		draw_info(t, s, now, cy, x, w, ch);
		break;
	default:
		break;
	}
}

static void
draw_prompt(struct tui *t)
{
	int y = t->rows - 2, n = (int)model_queue_n(&t->m), isnet = 0;
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
		fill(y, 0, t->cols, theme_attr(TH_APPROVAL));
		put(y, 0, t->cols, fmt(buf, sizeof buf, " %s [y] yes  [n/Esc] no", t->confirm_q),
		    theme_attr(TH_APPROVAL));
		return;
	}
	if (n > 0 && !t->readonly && model_queue_at(&t->m, 0, &isnet) != NULL && isnet) {
		char what[512];
		model_net_ask_what(&t->m, model_queue_at(&t->m, 0, &isnet), what, sizeof what);
		fill(y, 0, t->cols, theme_attr(TH_APPROVAL));
		put(y, 0, t->cols, fmt(buf, sizeof buf, " ! %s \xe2\x80\x94 [y] once  [a] always  "
		    "[n] deny%s", what, n > 1 ? fmt((char[40]){ 0 }, 40, "  (+%d more: Enter)",
		    n - 1) : ""), theme_attr(TH_APPROVAL));
		return;
	}
	if (n > 0 && !t->readonly) {
		const cJSON *a = cJSON_GetArrayItem(t->m.approvals, 0);
		char what[256];
		model_approval_what(&t->m, a, what, sizeof what);
		fill(y, 0, t->cols, theme_attr(TH_APPROVAL));
		put(y, 0, t->cols, fmt(buf, sizeof buf, " ! %s wants %s \xe2\x80\x94 [y] approve  "
		    "[n] deny  [Enter] details%s",
		    cJSON_GetStringValue(cJSON_GetObjectItem(a, "client")) ?: "a client", what,
		    n > 1 ? fmt((char[32]){ 0 }, 32, "  (+%d more: a)", n - 1) : ""),
		    theme_attr(TH_APPROVAL));
		return;
	}
	if (t->m.message[0] && now_ms() - t->m.message_ms < 15000)
		put(y, 0, t->cols, fmt(buf, sizeof buf, " %s", t->m.message),
		    t->m.message_err ? theme_attr(TH_ERROR) : theme_attr(TH_OK));
}

static int
bar_shown(const struct tui *t, const struct keybind *k)
{
	return (k->flags & K_BAR) && !(t->readonly && (k->flags & K_MUTATES));
}

/* " KEY bar": the first of the keys, then the bar's word. */
static int
bar_entry(int y, int x, int w, const struct keybind *k, int draw)
{
	char key[16], word[64];
	int n;

	snprintf(key, sizeof key, "%.*s", (int)strcspn(k->label, " "), k->label);
	snprintf(word, sizeof word, " %s", k->bar);
	n = 1 + text_cols(key) + text_cols(word);
	if (!draw || n > w)
		return n;
	x += put(y, x, 1, " ", theme_attr(TH_KEYBAR));
	x += put(y, x, w - 1, key, theme_attr(TH_KEY));
	put(y, x, w - 1 - text_cols(key), word, theme_attr(TH_KEYBAR));
	return n;
}

/* The key bar, from the keymap: the entries marked K_KEEP (help, quit) always,
 * the others from the left while whole ones fit. */
static void
draw_keys(struct tui *t)
{
	int y = t->rows - 1, x = 0, keep = 0;

	fill(y, 0, t->cols, theme_attr(TH_KEYBAR));
	/* The palette's Tab found several: they take the bar while it is open. */
	if (t->mode == M_PROMPT && t->pcands[0]) {
		put(y, 0, t->cols, fmt((char[600]){ 0 }, 600, " Tab: %s", t->pcands),
		    theme_attr(TH_KEYBAR));
		return;
	}
	for (const struct keybind *k = keymap; k->fn; k++)
		if (bar_shown(t, k) && (k->flags & K_KEEP))
			keep += bar_entry(y, 0, 0, k, 0);
	for (const struct keybind *k = keymap; k->fn; k++) {
		if (!bar_shown(t, k) || (k->flags & K_KEEP))
			continue;
		int n = bar_entry(y, x, 0, k, 0);
		if (x + n > t->cols - keep)
			break;
		x += bar_entry(y, x, n, k, 1);
	}
	for (const struct keybind *k = keymap; k->fn; k++)
		if (bar_shown(t, k) && (k->flags & K_KEEP))
			x += bar_entry(y, x, t->cols - x, k, 1);
}

/* How many bytes of s (len bytes) put() shows in w columns (at least one
 * character, so a wrap always moves on). */
static size_t
fit(const char *s, size_t len, int w)
{
	mbstate_t st;
	size_t off = 0;
	int used = 0;

	memset(&st, 0, sizeof st);
	while (off < len) {
		wchar_t wc;
		size_t n = mbrtowc(&wc, s + off, len - off, &st);
		int cw;
		if (n == (size_t)-1 || n == (size_t)-2 || n == 0) {
			memset(&st, 0, sizeof st);
			n = 1, cw = 1;
		} else if ((cw = wcwidth(wc)) < 0) {
			cw = 1;
		}
		if (used + cw > w && off > 0)
			break;
		used += cw;
		off += n;
	}
	return off;
}

/* The help, from the keymap: every key, then every palette command, each
 * wrapped to the terminal's width under its description's column, scrolled
 * by j/k and the page keys (help_top kept in range here). */
struct hline {
	char	*text;
	int	 attr, indent;	/* indent: of the wrapped rows */
};

static void
help_add(struct hline **v, size_t *n, const char *text, int attr, int indent, int w)
{
	size_t len = strlen(text), off = 0;

	do {
		int room = off ? w - indent : w;
		size_t k = room > 0 ? fit(text + off, len - off, room) : len - off;
		/* Break at a space where there is one in the row. */
		if (off + k < len) {
			size_t sp = k;
			while (sp > 0 && text[off + sp] != ' ')
				sp--;
			if (sp > 0)
				k = sp;
		}
		*v = xrealloc(*v, (*n + 1) * sizeof **v);
		(*v)[*n].text = xstrndup(text + off, k);
		(*v)[*n].attr = attr;
		(*v)[(*n)++].indent = off ? indent : 0;
		off += k;
		while (off < len && text[off] == ' ')
			off++;
	} while (off < len);
}

static void
draw_help(struct tui *t)
{
	char buf[512], cmd[128];
	int h = t->rows - 2, w = t->cols - 4, body = h - 2;
	struct hline *v = NULL;
	size_t n = 0;

	for (const struct keybind *k = keymap; k->fn; k++) {
		if (!k->keys[0] || (k->flags & K_HIDDEN) ||
		    (t->readonly && (k->flags & K_MUTATES)))
			continue;
		help_add(&v, &n, fmt(buf, sizeof buf, "%s %s", pad(cmd, sizeof cmd, k->label, 14),
		    k->help), theme_attr(TH_NORMAL), 15, w);
	}
	help_add(&v, &n, "", 0, 0, w);
	help_add(&v, &n, "Mouse: a click selects a row or a tab; the wheel scrolls.",
	    theme_attr(TH_DIM), 0, w);
	help_add(&v, &n, "", 0, 0, w);
	help_add(&v, &n, "Command palette (:, Tab completes)", theme_attr(TH_HEADER), 0, w);
	for (const struct keybind *k = keymap; k->fn; k++) {
		if (!k->cmd || (k->flags & K_HIDDEN) || (t->readonly && (k->flags & K_MUTATES)))
			continue;
		snprintf(cmd, sizeof cmd, ":%s%s%s", k->cmd, k->usage[0] ? " " : "", k->usage);
		help_add(&v, &n, fmt(buf, sizeof buf, "%-22s %s", cmd, k->help),
		    theme_attr(TH_NORMAL), 23, w);
	}
	help_add(&v, &n, "", 0, 0, w);
	help_add(&v, &n, fmt(buf, sizeof buf, "Theme: %s", theme_name()), theme_attr(TH_DIM), 0,
	    w);
	if (body < 1)
		body = 1;
	if (t->help_top + (size_t)body > n)
		t->help_top = n > (size_t)body ? n - (size_t)body : 0;
	for (int r = 1; r < t->rows - 1; r++)
		mvhline(r, 0, ' ', t->cols);
	frame(1, 0, h, t->cols, fmt(buf, sizeof buf, "Help \xe2\x80\x94 keys (Esc or q closes)%s",
	    t->help_top + (size_t)body < n ? fmt(cmd, sizeof cmd, " \xe2\x80\x94 %zu of %zu, "
	    "j/PgDn: more", t->help_top + (size_t)body, n) : ""), 1);
	for (size_t i = t->help_top; i < n && (int)(i - t->help_top) < body; i++)
		put(2 + (int)(i - t->help_top), 2 + v[i].indent, w - v[i].indent, v[i].text,
		    v[i].attr);
	for (size_t i = 0; i < n; i++)
		free(v[i].text);
	free(v);
}

/* Rows the arguments text takes at width w. */
static int
wrapped_rows(const char *text, int w)
{
	int rows = 0;

	for (const char *l = text; *l;) {
		size_t ll = strcspn(l, "\n"), off = 0;
		do {
			off += fit(l + off, ll - off, off ? w - 2 : w);
			rows++;
		} while (off < ll);
		l += ll + (l[ll] == '\n');
	}
	return rows;
}

/* Each held call: who wants what, then every argument on rows of its own and
 * wrapped, never cut, the host's paths first (model_approval_args): what a call
 * would write on the host is always in sight.  When they do not all fit, the
 * list starts at the selected one. */
static void
draw_approvals(struct tui *t)
{
	char buf[1024];
	int h = t->rows - 2, n = (int)model_queue_n(&t->m), isnet;
	int w = t->cols - 8, y = 2, first = 0, need = 0;

	for (int r = 1; r < t->rows - 1; r++)
		mvhline(r, 0, ' ', t->cols);
	frame(1, 0, h, t->cols, fmt(buf, sizeof buf, "Approvals (%d pending, mode %s) \xe2\x80\x94 "
	    "y approve (a network ask: once), a always, n deny, Esc back", n, t->m.approve_mode), 1);
	if (n == 0)
		put(3, 2, t->cols - 4, "nothing waits for approval", theme_attr(TH_DIM));
	if (w < 8)
		w = 8;
	for (int i = 0; i < n && (size_t)i <= t->acur; i++) {
		const cJSON *a = model_queue_at(&t->m, (size_t)i, &isnet);
		char *args = isnet ? xstrdup("") : model_approval_args(a);
		need += 1 + wrapped_rows(args, w);
		free(args);
	}
	if (2 + need > h)
		first = (int)t->acur;
	for (int i = first; i < n && y < h; i++) {
		const cJSON *a = model_queue_at(&t->m, (size_t)i, &isnet);
		char *args = isnet ? xstrdup("") : model_approval_args(a);
		int at = (size_t)i == t->acur ? theme_attr(TH_SELECTED) : theme_attr(TH_NORMAL);
		char what[512];
		fill(y, 1, t->cols - 2, at);
		if (isnet) {
			model_net_ask_what(&t->m, a, what, sizeof what);
			put(y++, 2, t->cols - 4, fmt(buf, sizeof buf, "net  %s  \xe2\x80\x94 y once, a "
			    "always, n deny", what), at);
			free(args);
			continue;
		}
		model_approval_what(&t->m, a, what, sizeof what);
		put(y++, 2, t->cols - 4, fmt(buf, sizeof buf, "%s  %s wants %s",
		    cJSON_GetStringValue(cJSON_GetObjectItem(a, "id")) ?: "?",
		    cJSON_GetStringValue(cJSON_GetObjectItem(a, "client")) ?: "?", what), at);
		for (const char *l = args; *l && y < h; ) {
			size_t ll = strcspn(l, "\n"), off = 0;
			do {
				int cont = off > 0;
				size_t k = fit(l + off, ll - off, cont ? w - 2 : w);
				if (y == h - 1 && (off + k < ll || l[ll] != '\0')) {
					put(y++, 4, t->cols - 6, "\xe2\x80\xa6 (more: a taller terminal "
					    "shows every argument)", theme_attr(TH_DIM));
					break;
				}
				snprintf(buf, sizeof buf, "%.*s", (int)k, l + off);
				put(y++, cont ? 6 : 4, cont ? w - 2 : w, buf, theme_attr(TH_DIM));
				off += k;
			} while (off < ll && y < h);
			l += ll + (l[ll] == '\n');
		}
		free(args);
	}
}

void
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

