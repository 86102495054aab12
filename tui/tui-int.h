/* What the console's parts share: the state of the one thread that owns the
 * terminal (struct tui), the layout, and the keymap table.  tui.c runs the
 * loop, draw.c draws, keys.c maps keys and the command palette to actions,
 * prompt.c edits the prompt line; under them list.c keeps the list and its
 * selection, layout.c where the panes and tabs go, paint.c the tools every pane
 * writes with. */
#ifndef SBX_TUI_INT_H
#define SBX_TUI_INT_H

#include <stddef.h>
#include <stdint.h>
#include <wchar.h>
#include <cjson/cJSON.h>

#include "tui/filter.h"
#include "tui/model.h"
#include "tui/source.h"

#define FRAME_MS	30	/* the least time between two redraws */
#define PROMPT_MAX	1024

/* Network is shown for a sandbox with network rules only (tab_shown). */
enum tab { TAB_EXEC, TAB_LOGS, TAB_PORTS, TAB_NET, TAB_FILES, TAB_ACTIVITY, TAB_DIFF,
	TAB_INFO, TAB_N };
extern const char *const tab_names[TAB_N];

enum mode { M_NORMAL, M_PROMPT, M_CONFIRM, M_HELP, M_APPROVALS };

enum prompt_kind { P_FILTER, P_PALETTE, P_EXEC, P_FORWARD, P_CREATE, P_DENY, P_SEARCH };

struct tui;

/* An action: arg NULL from a key; from the palette the words after the
 * command ("" when none), from a prompt its line. */
typedef int (*key_fn)(struct tui *t, const char *arg);

/* The list's columns, in the order drawn (draw.c) and sorted by (list.c). */
enum { C_ID, C_NAME, C_BACKEND, C_STATE, C_AGE, C_LEFT, C_CPU, C_MEM, C_PIDS, C_DISK, C_FWD, C_N };
/* Each column's heading, width (the space after it counted) and rank (the
 * ones that fit are shown, 0 first; list.c). */
struct list_col {
	const char	*head;
	int		 w, rank;
};
extern const struct list_col list_cols[C_N];

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
	size_t		 sel_row;	/* the cursor's row when last known: a selection
					 * that goes (a destroy) moves to the row there */
	char		 select_next[32];	/* made by c: selected once it is listed */

	/* The right pane. */
	struct filter	*rfilter;
	size_t		 scroll;	/* lines up from the bottom; 0 follows */
	int		 wrap;		/* Exec and Logs: wrap long lines */
	int		 stamps;	/* ... show when each line came */
	int		 follow;	/* ... keep the newest in view */
	int		 hoff;		/* ... columns scrolled right */
	struct filter	*search;	/* ... what n and N find */
	size_t		 search_n, search_at;	/* matches, and the one shown (1..n) */

	/* The list's order. */
	int		 sort_col, sort_desc;

	/* Activity: the row under the cursor (0 the newest), its details, the client shown. */
	int		 adetail;
	char		 aclient[48];

	/* Diff. */
	struct lines	 dview;
	int		 dstate;	/* 0 not asked, 1 asked, 2 here */
	unsigned	 dgen;		/* of the latest load: older pages are dropped */
	int		 dpages;	/* pages of it here */
	char		 dhead[160];	/* its totals */
	size_t		 seen_total;	/* the pane's lines before the latest messages */

	/* Ports: the forward under the cursor (of the selected sandbox's). */
	size_t		 pcur;

	/* Files. */
	char		 fpath[1024];
	cJSON		*fentries;
	size_t		 fcur;
	struct lines	 fview;
	int		 fviewing;
	char		 fview_name[1024];

	/* The prompt line. */
	enum prompt_kind pkind;
	key_fn		 pdone;		/* what Enter runs with the line */
	int		(*pcomplete)(struct tui *t);	/* what Tab runs, or NULL */
	char		 plabel[128];
	wchar_t		 pbuf[PROMPT_MAX];
	size_t		 plen;
	char		 pcands[512];	/* the palette's Tab: what fits, on the key bar */
	enum confirm { C_DESTROY, C_QUIT, C_UNFORWARD } confirm;	/* M_CONFIRM */
	char		 confirm_q[200];	/* its question */
	char		 confirm_id[32];
	int		 confirm_port;
	char		 deny_id[64];
	char		*filter_before;	/* P_FILTER: the filter when it opened (Esc puts
					 * it back; each key filters as it is typed) */

	size_t		 help_top;
	size_t		 acur;			/* approvals cursor */

	/* Redraw latency: from the first message not yet drawn to the redraw. */
	int64_t		 pending_since;
	uint64_t	 lat_n, lat_sum, lat_max, lat_hist[64];
};

struct layout {
	int	top, h;			/* the panes' rows */
	int	lw;			/* left width */
	int	list_h, fwd_h;		/* boxes on the left */
	int	rx, rw;			/* the right box */
};

/* --- the keymap (keys.c) --------------------------------------------------- */

enum {
	K_MUTATES	= 1 << 0,	/* changes something: not in a read-only console */
	K_BAR		= 1 << 1,	/* in the key bar */
	K_KEEP		= 1 << 2,	/* in the key bar however narrow the terminal */
	K_HIDDEN	= 1 << 3,	/* not in the help */
};

/* One action: the keys that run it, the palette command that runs it (":NAME
 * USAGE"), and how the key bar and the help show it. */
struct keybind {
	int		 keys[4];	/* 0-terminated; none: the palette only */
	const char	*label;		/* the keys as help shows them */
	const char	*cmd;		/* the palette's name, or NULL */
	const char	*usage;		/* the palette's arguments, as help shows them */
	const char	*bar;		/* as the key bar shows it, or NULL */
	const char	*help;
	unsigned	 flags;
	key_fn		 fn;
};

extern const struct keybind keymap[];

/* One key (is_key: a KEY_* code) in the current mode; returns DIRTY_*. */
int tui_key(struct tui *t, int is_key, wint_t ch);
/* The rows a page key moves. */
int page(const struct tui *t);
/* Ask for the Files tab's directory (t->fpath) to be listed. */
void files_load(struct tui *t);

/* --- the prompt line (prompt.c) ------------------------------------------- */

/* Open the prompt line for kind k, label first, with the cursor shown; Enter
 * ends it in done with its line (keys.c's actions: the prompt calls nothing
 * above it). */
int prompt_open(struct tui *t, enum prompt_kind k, const char *label, key_fn done);
/* One key while the prompt is open: edit, Enter ends it, Esc cancels. */
int prompt_key(struct tui *t, int is_key, wint_t ch);
/* Filter the list, or the right pane's output when it has the focus. */
int set_filter(struct tui *t, const char *text);
/* Approve (or ask why not, then deny) the i-th pending approval. */
int approve_first(struct tui *t, size_t i, int allow);

/* --- the viewers (viewer.c) --------------------------------------------- */

/* A line of the right pane, produced bottom up. */
struct rline {
	const char	*text;
	int		 attr;
	int		 match;		/* the search finds it */
	int		 skip;		/* the columns of text before this piece (wrap) */
	int		 indent;
	int		 cols;		/* at most this many columns of text (0: the pane's) */
	char		 stamp[12];	/* "12:00:01 " or "" */
	char		 own[320];	/* headers are made here */
};
/* The Exec tab's (exec 1) or the Logs tab's lines, bottom first, skip lines
 * from the bottom, w columns wide; returns how many of n are filled. */
size_t viewer_lines(struct tui *t, int exec, struct rline *out, size_t n, size_t skip, int w);
/* Every line the pane would show, for counting and searching. */
size_t viewer_total(struct tui *t, int exec, int w);
/* Recount the search's matches; with jump, move the view to match search_at. */
void viewer_search(struct tui *t, int exec, int w, int jump);
/* Copy the line at the top of the view (all 0) or the whole output (1): OSC 52
 * when the terminal takes it, else a file; returns DIRTY_* after saying where. */
int viewer_copy(struct tui *t, int all);
/* Load and save wrap, stamps and follow ($XDG_STATE_HOME/sbxtop/console.state). */
void viewer_settings_load(struct tui *t);
void viewer_settings_save(struct tui *t);
/* The Activity tab's rows for the selected sandbox and client: the i-th from
 * the newest, or NULL. */
const struct m_activity *activity_row(struct tui *t, size_t i);
/* Draw the Activity tab, its details, and the Diff tab. */
void draw_activity(struct tui *t, int y0, int x, int w, int h);
void draw_diff(struct tui *t, int y0, int x, int w, int h);
/* Ask for the selected sandbox's changes (the Diff tab): the first page, or
 * (cursor not NULL) the one after it. */
void diff_load(struct tui *t);
void diff_load_page(struct tui *t, const char *cursor);
/* Fold a page of sandbox_diff's answer into t->dview (what: "diff:GEN", the
 * load it answers), and ask for the next while the view has room. */
void diff_loaded(struct tui *t, const char *what, const cJSON *d);
/* Whether what names a diff page, and of the latest load. */
int diff_page_of(const struct tui *t, const char *what, int *current);

/* --- the network policy (net.c) ------------------------------------------- */

/* Ask for the selected sandbox's policy and recent connections. */
void net_load(struct tui *t);
/* Answer network ask a (an item of the queue): once, always or deny. */
int net_answer(struct tui *t, const cJSON *a, const char *answer);
/* ":net allow|deny|remove ENTRY" on the selected sandbox. */
int net_change(struct tui *t, const char *arg);
/* Draw the Network tab. */
void draw_network(struct tui *t, int y0, int x, int w, int h);

/* --- drawing (draw.c) ------------------------------------------------------ */

/* Redraw what t->dirty names. */
void draw(struct tui *t);

/* --- where things go (layout.c) ------------------------------------------- */

void layout(const struct tui *t, struct layout *L);
/* Where each tab goes on the tab row (the whole names, else the short ones,
 * else a window around the active tab): x[i] and w[i] (0: not shown),
 * name[i]; *lmark and *rmark set when tabs are cut off on a side. */
void tabs_place(struct tui *t, const struct layout *L, int x[TAB_N], int w[TAB_N],
    const char *name[TAB_N], int *lmark, int *rmark);
/* Where tab i is on the tab row: its first column and its width (0: not shown). */
void tab_span(struct tui *t, const struct layout *L, int i, int *x0, int *w);

/* --- what the panes write with (paint.c) ------------------------------------ */

/* Text at y,x in at most w columns (control characters as '?'), from column
 * skip of it; returns the columns used. */
int put_from(int y, int x, int w, const char *s, int attr, int skip);
/* printf into a fixed line. */
const char *fmt(char *buf, size_t len, const char *f, ...)
	__attribute__((format(printf, 3, 4)));
void clock_of(char *buf, size_t len, int64_t wall);
void human_dur(char *buf, size_t len, int64_t ms);
void human_bytes(char *buf, size_t len, uint64_t b);

/* --- the list view (list.c) ------------------------------------------------ */

/* The heading of list column c (C_*). */
const char *list_col_name(int c);

/* The rows of the list: the sandboxes the list's filter passes. */
void rebuild_view(struct tui *t);
/* The selected sandbox, or NULL. */
struct m_sandbox *selected(struct tui *t);
/* The selected sandbox's row in the view (0 when it has none). */
size_t cursor(struct tui *t);
/* Select sandbox id (NULL: none): the source follows it, the pane starts over. */
int select_id(struct tui *t, const char *id);
/* Keep a selection: the first row when the selected one went away. */
int fix_selection(struct tui *t);
/* 1 when a sandbox is selected; 0 after saying to select one. */
int need_sandbox(struct tui *t);
/* Whether the selected sandbox has network rules (the Network tab's). */
int net_tab_shown(struct tui *t);
/* Whether tab i is on the tab row for the selected sandbox. */
int tab_shown(struct tui *t, int i);

#endif
