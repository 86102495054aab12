/* The console's list of sandboxes and its selection: the rows the list's
 * filter passes in the sort column's order, the cursor (kept by id), what a
 * new selection starts over in the right pane, and the tabs shown for it.
 * Keys (keys.c, prompt.c), drawing (draw.c, layout.c, net.c) and the loop
 * (tui.c) all ask it; it asks the model, the source and the Diff tab's load. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"
#include "tui/tui-int.h"

/* The list's columns in the order drawn; each width counts the space after
 * it.  The ones that fit are shown, by rank (0 first); RUN takes what is
 * left.  Header and rows go through cell(), so they line up in columns. */
const struct list_col list_cols[C_N] = {
	[C_ID]      = { "ID", 11, 0 },
	[C_NAME]    = { "NAME", 11, 1 },
	[C_BACKEND] = { "BACKEND", 9, 5 },
	[C_STATE]   = { "STATE", 10, 2 },
	[C_AGE]     = { "AGE", 7, 8 },
	[C_LEFT]    = { "LEFT", 7, 6 },
	[C_CPU]     = { "CPU%", 6, 3 },
	[C_MEM]     = { "MEM", 7, 4 },
	[C_PIDS]    = { "PIDS", 5, 7 },
	[C_DISK]    = { "DISK", 10, 10 },	/* use/limit */
	[C_FWD]     = { "FWD", 4, 9 },
};

const char *
list_col_name(int c)
{
	return c >= 0 && c < C_N ? list_cols[c].head : "?";
}

/* --- the rows and the selection ----------------------------------------- */

static void
sandbox_line(const struct m_sandbox *s, char *buf, size_t len)
{
	snprintf(buf, len, "%s %s %s %s %s", s->id, s->name, s->backend, s->state, s->now);
}

/* The list's order: by the sort column, then by id, so equal rows keep still. */
static struct tui *sort_tui;

static int
num_cmp(double a, double b)
{
	return a < b ? -1 : a > b;
}

static int
row_cmp(const void *pa, const void *pb)
{
	const struct tui *t = sort_tui;
	const struct m_sandbox *a = &t->m.sb[*(const size_t *)pa];
	const struct m_sandbox *b = &t->m.sb[*(const size_t *)pb];
	int r = 0;

	switch (t->sort_col) {
	case C_NAME: r = strcmp(a->name, b->name); break;
	case C_BACKEND: r = strcmp(a->backend, b->backend); break;
	case C_STATE: r = strcmp(a->state, b->state); break;
	/* Age: the youngest first when ascending, as a duration sorts. */
	case C_AGE: r = num_cmp((double)b->created_ms, (double)a->created_ms); break;
	case C_LEFT: r = num_cmp((double)a->expires_ms, (double)b->expires_ms); break;
	case C_CPU: r = num_cmp(a->cpu_pct, b->cpu_pct); break;
	case C_MEM: r = num_cmp((double)a->mem_bytes, (double)b->mem_bytes); break;
	case C_PIDS: r = num_cmp((double)a->pids, (double)b->pids); break;
	case C_DISK: r = num_cmp((double)a->disk_bytes, (double)b->disk_bytes); break;
	case C_FWD: r = num_cmp(a->nfwd, b->nfwd); break;
	default: break;
	}
	if (t->sort_desc)
		r = -r;
	return r ? r : strcmp(a->id, b->id);
}

void
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
	if (t->sort_col >= 0) {
		sort_tui = t;
		qsort(t->view, t->nview, sizeof *t->view, row_cmp);
	}
}

struct m_sandbox *
selected(struct tui *t)
{
	return t->m.sel[0] ? model_sandbox(&t->m, t->m.sel) : NULL;
}

size_t
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

int
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
	lines_clear(&t->dview);
	t->dstate = 0;
	t->adetail = 0;
	if (t->tab == TAB_DIFF && id && *id)
		diff_load(t);
	/* The source reads the new one's policy; the tab goes when it has none. */
	if (t->tab == TAB_NET && !tab_shown(t, TAB_NET))
		t->tab = TAB_EXEC;
	if (id && *id)
		t->m.log_path = log_path_of(t, id);
	t->sel_row = cursor(t);
	return d | DIRTY_KEYS | model_poll_logs(&t->m);
}

int
fix_selection(struct tui *t)
{
	/* The sandbox c made, once listed: the next x or s goes to it. */
	if (t->select_next[0]) {
		for (size_t i = 0; i < t->nview; i++)
			if (strcmp(t->m.sb[t->view[i]].id, t->select_next) == 0) {
				t->select_next[0] = '\0';
				t->focus = 0;
				return select_id(t, t->m.sb[t->view[i]].id) | DIRTY_LIST;
			}
	}
	if (t->nview == 0)
		return t->m.sel[0] ? select_id(t, NULL) : 0;
	for (size_t i = 0; i < t->nview; i++)
		if (strcmp(t->m.sb[t->view[i]].id, t->m.sel) == 0) {
			t->sel_row = i;
			return 0;
		}
	/* The selected one went: the row where it was (the one above, when it
	 * was the last), not the first. */
	return select_id(t, t->m.sb[t->view[t->sel_row < t->nview ? t->sel_row :
	    t->nview - 1]].id);
}

int
need_sandbox(struct tui *t)
{
	if (selected(t) == NULL) {
		model_say(&t->m, 1, "select a sandbox first (or c to create one)");
		return 0;
	}
	return 1;
}

/* --- the tabs shown for it ---------------------------------------------- */

int
net_tab_shown(struct tui *t)
{
	struct m_sandbox *s = selected(t);
	const char *nw = s ? cJSON_GetStringValue(cJSON_GetObjectItem(s->rec, "network")) : NULL;

	return nw != NULL && strcmp(nw, "rules") == 0;
}

int
tab_shown(struct tui *t, int i)
{
	return i != TAB_NET || net_tab_shown(t);
}
