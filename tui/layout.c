/* Where things go on the screen: the panes (layout) and the tab row's tabs
 * (tabs_place), for drawing (draw.c) and for the mouse (keys.c).  It reads
 * struct tui and which tabs the selection shows (list.c), and changes nothing. */
#include <string.h>

#include "tui/tui-int.h"

const char *const tab_names[TAB_N] = { "Exec", "Logs", "Ports", "Network", "Files",
	"Activity", "Diff", "Info" };

/* --- the layout ---------------------------------------------------------- */

void
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

/* --- the tabs ----------------------------------------------------------- */

/* The names on the tab row when the whole ones do not fit (80 columns). */
static const char *const tab_short[TAB_N] = { "Exec", "Logs", "Ports", "Net", "Files",
	"Act", "Diff", "Info" };

/* Where each tab goes on the tab row, in the first of these that fits the
 * right pane: "[Exec]  Logs  Ports ...", the names one column apart, the
 * short names; else the short names from a first one chosen so the active
 * tab is in view, with a mark at the cut side.  x[i] and w[i] (0: not
 * shown), name[i]; *lmark and *rmark set when tabs are cut off on a side. */
void
tabs_place(struct tui *t, const struct layout *L, int x[TAB_N], int w[TAB_N],
    const char *name[TAB_N], int *lmark, int *rmark)
{
	int room = L->rw - 2, left = L->rx + 1, first = 0;

	*lmark = *rmark = 0;
	for (int style = 0; style < 4; style++) {
		const char *const *names = style < 2 ? tab_names : tab_short;
		int at = left + (first > 0 ? 2 : 0), end = left;
		if (style == 3) {
			/* The window: the first tab stepped on until the active one
			 * fits, a mark on each side cut. */
			for (first = 0; first < (int)t->tab; first++) {
				int need = 4;
				for (int i = first; i <= (int)t->tab; i++)
					need += tab_shown(t, i) ? (int)strlen(tab_short[i]) + 1 : 0;
				if (need <= room)
					break;
			}
			*lmark = first > 0;
			at = left + (first > 0 ? 2 : 0);
		}
		for (int i = 0; i < TAB_N; i++) {
			int cw = (int)strlen(names[i]) + (style == 0 ? 2 : 0);
			w[i] = 0;
			name[i] = names[i];
			if (!tab_shown(t, i) || i < first)
				continue;
			if (style == 3 && at + cw > left + room - 2) {
				*rmark = 1;
				for (; i < TAB_N; i++)
					w[i] = 0;
				break;
			}
			x[i] = at;
			w[i] = cw;
			end = at + cw;
			at += cw + 1;
		}
		if (style == 3 || end - left <= room)
			return;
	}
}

void
tab_span(struct tui *t, const struct layout *L, int i, int *x0, int *w)
{
	int x[TAB_N], ws[TAB_N], lm, rm;
	const char *name[TAB_N];

	tabs_place(t, L, x, ws, name, &lm, &rm);
	*x0 = x[i];
	*w = ws[i];
}
