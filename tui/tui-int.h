/* What the console's parts share: the state of the one thread that owns the
 * terminal (struct tui), the layout, and the keymap table.  tui.c runs the
 * loop, draw.c draws, keys.c maps keys and the command palette to actions,
 * prompt.c edits the prompt line. */
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

enum tab { TAB_EXEC, TAB_LOGS, TAB_PORTS, TAB_FILES, TAB_ACTIVITY, TAB_INFO, TAB_N };
extern const char *const tab_names[TAB_N];

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

extern const struct keybind keymap[];

/* One key (is_key: a KEY_* code) in the current mode; returns DIRTY_*. */
int tui_key(struct tui *t, int is_key, wint_t ch);
/* The palette's command line (":theme light"). */
int palette(struct tui *t, char *line);
int need_sandbox(struct tui *t);
int do_kill(struct tui *t);
int do_destroy(struct tui *t);
int do_shell(struct tui *t);
int do_help(struct tui *t);
int do_quit(struct tui *t);
int run_tool(struct tui *t, const char *tool, const char *what, const char *key,
    const char *v);
int page(const struct tui *t);

/* --- the prompt line (prompt.c) ------------------------------------------- */

int prompt_open(struct tui *t, enum prompt_kind k, const char *label);
int prompt_key(struct tui *t, int is_key, wint_t ch);
/* Filter the list, or the right pane's output when it has the focus. */
int set_filter(struct tui *t, const char *text);
/* Approve (or ask why not, then deny) the i-th pending approval. */
int approve_first(struct tui *t, size_t i, int allow);

/* --- drawing (draw.c) ------------------------------------------------------ */

void layout(const struct tui *t, struct layout *L);
/* Redraw what t->dirty names. */
void draw(struct tui *t);
/* printf into a fixed line. */
const char *fmt(char *buf, size_t len, const char *f, ...)
	__attribute__((format(printf, 3, 4)));

/* --- the list view (tui.c) ------------------------------------------------- */

void rebuild_view(struct tui *t);
struct m_sandbox *selected(struct tui *t);
size_t cursor(struct tui *t);
int select_id(struct tui *t, const char *id);
/* Keep a selection: the first row when the selected one went away. */
int fix_selection(struct tui *t);
void files_load(struct tui *t);

#endif
