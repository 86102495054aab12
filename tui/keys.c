/* The console's keys: the keymap table, the actions it names, the command
 * palette, the mouse, and what each mode does with a key.  Handlers change
 * the model and struct tui and return what to redraw (DIRTY_*); they never
 * draw. */
#include <ctype.h>
#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <wchar.h>

#include "core/client/pty-term.h"
#include "lib/util.h"
#include "tui/theme.h"
#include "tui/tui.h"
#include "tui/tui-int.h"

/* --- the keymap ---------------------------------------------------------- */

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

/* The selected sandbox's i-th forward, or NULL. */
static const struct m_forward *
port_row(struct tui *t, size_t want)
{
	size_t seen = 0;

	for (size_t i = 0; i < t->m.nfwd; i++)
		if (strcmp(t->m.fwd[i].sandbox, t->m.sel) == 0 && seen++ == want)
			return &t->m.fwd[i];
	return NULL;
}

static int
scroll_right(struct tui *t, long d)
{
	if (t->tab == TAB_FILES && !t->fviewing) {
		long n = t->fentries ? cJSON_GetArraySize(t->fentries) : 0, to = (long)t->fcur + d;
		t->fcur = to < 0 ? 0 : to >= n ? (size_t)(n > 0 ? n - 1 : 0) : (size_t)to;
		return DIRTY_RIGHT;
	}
	if (t->tab == TAB_PORTS) {
		long n = 0, to = (long)t->pcur + d;
		while (port_row(t, (size_t)n) != NULL)
			n++;
		t->pcur = to < 0 || n == 0 ? 0 : to >= n ? (size_t)(n - 1) : (size_t)to;
		return DIRTY_RIGHT;
	}
	/* Exec and logs scroll up from the bottom; the others down from the top. */
	if (t->tab == TAB_EXEC || t->tab == TAB_LOGS || t->tab == TAB_ACTIVITY)
		d = -d;
	long to = (long)t->scroll + d;
	t->scroll = to < 0 ? 0 : (size_t)to;
	/* Activity: a cursor on a row (0 the newest), kept on one. */
	if (t->tab == TAB_ACTIVITY && !t->adetail)
		while (t->scroll > 0 && activity_row(t, t->scroll) == NULL)
			t->scroll--;
	return DIRTY_RIGHT;
}

int
page(const struct tui *t)
{
	return t->rows > 10 ? t->rows - 8 : 1;
}

static int do_down(struct tui *t, const char *arg) { return t->focus ? scroll_right(t, 1) : move_list(t, 1); }
static int do_up(struct tui *t, const char *arg) { return t->focus ? scroll_right(t, -1) : move_list(t, -1); }
static int do_pgdn(struct tui *t, const char *arg) { return t->focus ? scroll_right(t, page(t)) : move_list(t, page(t)); }
static int do_pgup(struct tui *t, const char *arg) { return t->focus ? scroll_right(t, -page(t)) : move_list(t, -page(t)); }

static int
do_top(struct tui *t, const char *arg)
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
do_bottom(struct tui *t, const char *arg)
{
	if (!t->focus)
		return move_list(t, (long)t->nview);
	t->scroll = 0;
	if (t->fentries)
		t->fcur = (size_t)cJSON_GetArraySize(t->fentries) - 1;
	return DIRTY_RIGHT;
}

void
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
	/* A tab not shown for this sandbox is stepped over, the way Tab went. */
	int step = tab < (int)t->tab || (tab == TAB_N - 1 && t->tab == 0) ? -1 : 1;

	tab = (tab + TAB_N) % TAB_N;
	for (int i = 0; i < TAB_N && !tab_shown(t, tab); i++)
		tab = (tab + step + TAB_N) % TAB_N;
	t->tab = (enum tab)tab;
	t->scroll = 0;
	t->adetail = 0;
	t->hoff = 0;
	if (t->tab == TAB_FILES && t->fentries == NULL && t->m.sel[0])
		files_load(t);
	/* Read again each time the tab is shown: the proxy may have started or
	 * stopped since (the events carry connections and rules, not that). */
	if (t->tab == TAB_NET)
		net_load(t);
	/* The changes are read again each time the tab is shown. */
	if (t->tab == TAB_DIFF && t->dstate != 1 && t->m.sel[0])
		diff_load(t);
	if ((t->tab == TAB_EXEC || t->tab == TAB_LOGS) && t->search) {
		filter_free(t->search);
		t->search = NULL;
		t->search_n = 0;
	}
	return DIRTY_RIGHT | DIRTY_KEYS;
}

static int do_tab_next(struct tui *t, const char *arg) { return set_tab(t, (int)t->tab + 1); }
static int do_tab_prev(struct tui *t, const char *arg) { return set_tab(t, (int)t->tab - 1); }

static int
do_enter(struct tui *t, const char *arg)
{
	if (model_queue_n(&t->m) > 0 && !t->readonly) {
		t->mode = M_APPROVALS;
		t->acur = 0;
		return DIRTY_ALL;
	}
	if (t->focus && t->tab == TAB_ACTIVITY && !t->adetail) {
		if (activity_row(t, t->scroll) == NULL)
			return model_say(&t->m, 1, "no call to show");
		t->adetail = 1;
		return DIRTY_RIGHT;
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
			cJSON_AddNumberToObject(a, "length", 1 << 20);
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
	if (t->focus && t->tab == TAB_ACTIVITY && t->adetail) {
		t->adetail = 0;
		return DIRTY_RIGHT;
	}
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
do_escape(struct tui *t, const char *arg)
{
	int d = do_back(t);

	if (d)
		return d;
	if (t->focus && t->search) {
		filter_free(t->search);
		t->search = NULL;
		t->search_n = 0;
		return DIRTY_RIGHT;
	}
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

/* The handlers below take arg NULL from a key, and the words after the
 * command from the palette ("" when there are none) or a prompt's line. */

static int
pane_w(const struct tui *t)
{
	struct layout L;

	layout(t, &L);
	return L.rw - 2;
}

/* Search the Exec or Logs pane (a PCRE2 regex): matches shown reversed, n and
 * N go from one to the next, the tab row counts them. */
static int
do_search(struct tui *t, const char *arg)
{
	char err[200];
	struct filter *f = NULL;
	int exec = t->tab == TAB_EXEC;

	if (t->tab != TAB_EXEC && t->tab != TAB_LOGS)
		return model_say(&t->m, 1, "search: in Exec or Logs (/ filters the list)");
	if (arg == NULL)
		return prompt_open(t, P_SEARCH, " / search (PCRE2; n next, N previous): ",
		    do_search);
	if (*arg && (f = filter_new(arg, err, sizeof err)) == NULL)
		return model_say(&t->m, 1, "search: %s", err);
	filter_free(t->search);
	t->search = f;
	t->search_at = 1;
	if (f == NULL)
		return DIRTY_RIGHT;
	viewer_search(t, exec, pane_w(t), 1);
	if (t->search_n == 0)
		return model_say(&t->m, 1, "search: no line matches '%s'", arg) | DIRTY_RIGHT;
	return model_say(&t->m, 0, "match 1 of %zu", t->search_n) | DIRTY_RIGHT;
}

static int
search_step(struct tui *t, int d)
{
	if (t->search == NULL)
		return model_say(&t->m, 1, "no search: / in Exec or Logs starts one");
	viewer_search(t, t->tab == TAB_EXEC, pane_w(t), 0);
	if (t->search_n == 0)
		return model_say(&t->m, 1, "search: nothing matches") | DIRTY_RIGHT;
	t->search_at = d > 0 ? (t->search_at % t->search_n) + 1 :
	    (t->search_at > 1 ? t->search_at - 1 : t->search_n);
	viewer_search(t, t->tab == TAB_EXEC, pane_w(t), 1);
	return model_say(&t->m, 0, "match %zu of %zu", t->search_at, t->search_n) | DIRTY_RIGHT;
}

static int do_next(struct tui *t, const char *arg) { return search_step(t, 1); }
static int do_prev(struct tui *t, const char *arg) { return search_step(t, -1); }

static int
do_filter(struct tui *t, const char *arg)
{
	if (arg != NULL)
		return set_filter(t, arg);
	/* In the Exec or Logs pane, / searches; | filters its lines. */
	if (t->focus && (t->tab == TAB_EXEC || t->tab == TAB_LOGS))
		return do_search(t, NULL);
	return prompt_open(t, P_FILTER, t->focus ? " / filter output (PCRE2, !inverts): " :
	    " / filter sandboxes (PCRE2, !inverts): ", do_filter);
}

static int
do_line_filter(struct tui *t, const char *arg)
{
	return prompt_open(t, P_FILTER, t->focus ? " | filter output (PCRE2, !inverts): " :
	    " / filter sandboxes (PCRE2, !inverts): ", do_filter);
}

static int palette(struct tui *t, const char *line);
static int palette_complete(struct tui *t);

static int
do_palette(struct tui *t, const char *arg)
{
	int d = prompt_open(t, P_PALETTE, " :", palette);

	t->pcomplete = palette_complete;
	return d;
}

/* [NAME] [backend=B] [host=H|auto] [image=I] [snapshot=S] [network=N]: the
 * words of sandbox_create an operator reaches for; the tool checks them. */
static int
do_create(struct tui *t, const char *arg)
{
	static const struct { const char *word, *field; int num; } keys[] = {
		{ "backend", "backend", 0 }, { "host", "host", 0 }, { "image", "image", 0 },
		{ "snapshot", "from_snapshot", 0 }, { "network", "network", 0 },
		{ "memory", "memory_mib", 1 }, { "cpus", "cpus", 2 }, { "disk", "disk_mib", 1 },
	};
	char words[PROMPT_MAX * 4], name[PROMPT_MAX * 4] = "", *save = NULL;
	cJSON *a;

	if (arg == NULL)
		return prompt_open(t, P_CREATE, " create sandbox, name (Enter: none): ", do_create);
	a = cJSON_CreateObject();
	snprintf(words, sizeof words, "%s", arg);
	for (char *w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(w, '=');
		size_t k;
		if (eq == NULL) {
			/* The words of a name stay together: the core's name rule
			 * judges "bad name!" whole, not its last word. */
			size_t nl = strlen(name);
			snprintf(name + nl, sizeof name - nl, "%s%s", nl ? " " : "", w);
			continue;
		}
		*eq = '\0';
		for (k = 0; k < ARRAY_SIZE(keys) && strcmp(w, keys[k].word) != 0; k++)
			;
		if (k == ARRAY_SIZE(keys)) {
			cJSON_Delete(a);
			return model_say(&t->m, 1, ":create takes [NAME] backend= host= "
			    "image= snapshot= network= memory= cpus= disk=, not '%s='", w);
		}
		cJSON_DeleteItemFromObjectCaseSensitive(a, keys[k].field);
		if (keys[k].num) {
			char *end;
			double v = strtod(eq + 1, &end);
			/* memory=512M and disk=2G as well as plain MiB. */
			if (keys[k].num == 1 && (*end == 'M' || *end == 'm'))
				end++;
			else if (keys[k].num == 1 && (*end == 'G' || *end == 'g'))
				v *= 1024, end++;
			if (end == eq + 1 || *end != '\0' || v <= 0) {
				cJSON_Delete(a);
				return model_say(&t->m, 1, "%s= takes a positive number%s, not '%s'",
				    w, keys[k].num == 1 ? " of MiB (or 512M, 2G)" : "", eq + 1);
			}
			cJSON_AddNumberToObject(a, keys[k].field, keys[k].num == 1 ?
			    (double)(int64_t)v : v);
		} else {
			cJSON_AddStringToObject(a, keys[k].field, eq + 1);
		}
	}
	if (name[0])
		cJSON_AddStringToObject(a, "name", name);
	source_call_async(t->src, "sandbox_create", a, "create");
	return model_say(&t->m, 0, "creating a sandbox\xe2\x80\xa6");
}

/* The exec and forward prompts' lines: an empty one does nothing. */
static int exec_line(struct tui *t, const char *line);
static int forward_line(struct tui *t, const char *line);

static int
do_exec(struct tui *t, const char *arg)
{
	char l[96];
	cJSON *a;

	if (!need_sandbox(t))
		return DIRTY_PROMPT;
	if (arg == NULL || *arg == '\0')
		return prompt_open(t, P_EXEC, fmt(l, sizeof l, " run in %s: ", t->m.sel), exec_line);
	/* The sandbox's, in its agent's journal: it runs on whatever becomes of
	 * this console or the core server (a dev server and its forward), its
	 * output followed in Exec and its end said on the prompt line. */
	a = cJSON_CreateObject();
	cJSON_AddStringToObject(a, "sandbox_id", t->m.sel);
	cJSON_AddStringToObject(a, "command", arg);
	cJSON_AddBoolToObject(a, "background", 1);
	source_call_async(t->src, "sandbox_exec", a, "exec");
	t->tab = TAB_EXEC;
	t->scroll = 0;
	return model_say(&t->m, 0, "running: %s", arg) | DIRTY_RIGHT | DIRTY_KEYS;
}

static int
do_forward(struct tui *t, const char *arg)
{
	char l[96];
	int rp = 0, lp = 0;
	cJSON *a;

	if (!need_sandbox(t))
		return DIRTY_PROMPT;
	if (arg == NULL || *arg == '\0')
		return prompt_open(t, P_FORWARD, fmt(l, sizeof l, " forward a port of %s "
		    "(PORT or PORT:LOCAL): ", t->m.sel), forward_line);
	if (sscanf(arg, "%d:%d", &rp, &lp) < 1 || rp < 1 || rp > 65535 || lp < 0 ||
	    lp > 65535)
		return model_say(&t->m, 1, "forward: PORT or PORT:LOCAL, 1 to 65535");
	a = cJSON_CreateObject();
	cJSON_AddStringToObject(a, "sandbox_id", t->m.sel);
	cJSON_AddNumberToObject(a, "remote_port", rp);
	if (lp)
		cJSON_AddNumberToObject(a, "local_port", lp);
	source_call_async(t->src, "sandbox_port_forward", a, "forward");
	return model_say(&t->m, 0, "forwarding port %d\xe2\x80\xa6", rp);
}

static int
exec_line(struct tui *t, const char *line)
{
	return *line ? do_exec(t, line) : 0;
}

static int
forward_line(struct tui *t, const char *line)
{
	return *line ? do_forward(t, line) : 0;
}

static int
do_help(struct tui *t, const char *arg)
{
	t->mode = M_HELP;
	t->help_top = 0;
	return DIRTY_ALL;
}

static int
do_quit(struct tui *t, const char *arg)
{
	size_t n = t->readonly ? 0 : model_queue_n(&t->m);
	size_t calls = (size_t)cJSON_GetArraySize(t->m.approvals), conns = n - calls;
	char what[96];

	/* What waits for the operator would wait on with nobody to answer it,
	 * then get the default answer: ask first. */
	if (n > 0) {
		t->mode = M_CONFIRM;
		t->confirm = C_QUIT;
		snprintf(what, sizeof what, "%s%s%s", calls ? fmt((char[40]){ 0 }, 40, "%zu call%s",
		    calls, calls == 1 ? "" : "s") : "", calls && conns ? " and " : "", conns ?
		    fmt((char[40]){ 0 }, 40, "%zu connection%s", conns, conns == 1 ? "" : "s") : "");
		fmt(t->confirm_q, sizeof t->confirm_q, "%s wait%s for your answer: quit anyway?",
		    what, n == 1 ? "s" : "");
		return DIRTY_PROMPT;
	}
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
do_kill(struct tui *t, const char *arg)
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
do_suspend(struct tui *t, const char *arg)
{
	struct m_sandbox *s = selected(t);

	if (!need_sandbox(t))
		return DIRTY_PROMPT;
	/* The key toggles; :suspend and :resume say which. */
	if (arg == NULL && strcmp(s->state, "suspended") == 0)
		return run_tool(t, "sandbox_resume", "resume", NULL, NULL);
	return run_tool(t, "sandbox_suspend", "suspend", NULL, NULL);
}

static int
do_resume(struct tui *t, const char *arg)
{
	if (!need_sandbox(t))
		return DIRTY_PROMPT;
	return run_tool(t, "sandbox_resume", "resume", NULL, NULL);
}

static int
do_destroy(struct tui *t, const char *arg)
{
	const struct m_forward *f;

	if (!need_sandbox(t))
		return DIRTY_PROMPT;
	t->mode = M_CONFIRM;
	snprintf(t->confirm_id, sizeof t->confirm_id, "%s", t->m.sel);
	/* In Ports, the forward under the cursor is what d takes away. */
	if (t->focus && t->tab == TAB_PORTS && arg == NULL) {
		if ((f = port_row(t, t->pcur)) == NULL) {
			t->mode = M_NORMAL;
			return model_say(&t->m, 1, "no forward here: p forwards a port");
		}
		t->confirm = C_UNFORWARD;
		t->confirm_port = f->remote;
		fmt(t->confirm_q, sizeof t->confirm_q, "stop the forward %s:%d \xe2\x86\x92 %s:%d?",
		    f->bind, f->local, t->m.sel, f->remote);
		return DIRTY_PROMPT;
	}
	t->confirm = C_DESTROY;
	fmt(t->confirm_q, sizeof t->confirm_q, "destroy %s?", t->m.sel);
	return DIRTY_PROMPT;
}

static int
do_shell(struct tui *t, const char *arg)
{
	struct sbx_err e;
	int rc, fd, cols, rows;

	if (!need_sandbox(t))
		return DIRTY_PROMPT;
	/* Leave curses for the shell, as a shell escape in vi does. */
	def_prog_mode();
	endwin();
	printf("\r\n[sbxtop] shell in %s \xe2\x80\x94 exit it to come back to the console\r\n",
	    t->m.sel);
	fflush(stdout);
	pty_term_size(&cols, &rows);
	if ((rc = fd = source_pty_open(t->src, t->m.sel, cols, rows, &e)) >= 0) {
		(void)pty_term_relay(fd, 1);
		close(fd);
	}
	reset_prog_mode();
	clearok(stdscr, TRUE);
	if (rc < 0)
		model_say(&t->m, 1, "shell: %s", e.msg);
	else
		model_say(&t->m, 0, "back from the shell in %s", t->m.sel);
	return DIRTY_ALL;
}

static int
do_approvals(struct tui *t, const char *arg)
{
	struct sbx_err e;
	cJSON *list = NULL;

	if (source_approvals(t->src, &list, &e) < 0) {
		/* Standalone: no held calls, but the network asks are ours. */
		if (model_queue_n(&t->m) > 0) {
			t->mode = M_APPROVALS;
			t->acur = 0;
			return DIRTY_ALL;
		}
		return model_say(&t->m, 1, "%s%s%s", e.msg, e.hint[0] ? " \xe2\x80\x94 " : "",
		    e.hint);
	}
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
do_wrap(struct tui *t, const char *arg)
{
	t->wrap = !t->wrap;
	t->scroll = 0;
	viewer_settings_save(t);
	return model_say(&t->m, 0, "wrap %s", t->wrap ? "on" : "off") | DIRTY_RIGHT;
}

static int
do_stamps(struct tui *t, const char *arg)
{
	t->stamps = !t->stamps;
	viewer_settings_save(t);
	return model_say(&t->m, 0, "timestamps %s", t->stamps ? "on" : "off") | DIRTY_RIGHT;
}

/* Follow on: the newest output stays in view.  Off: the view holds still. */
static int
do_follow(struct tui *t, const char *arg)
{
	t->follow = !t->follow;
	if (t->follow)
		t->scroll = 0;
	viewer_settings_save(t);
	return model_say(&t->m, 0, "follow %s", t->follow ? "on" : "off (paused)") |
	    DIRTY_RIGHT;
}

static int
hscroll(struct tui *t, int d)
{
	if (!t->focus || t->wrap)
		return t->focus && t->wrap ? model_say(&t->m, 1, "wrap is on: w turns it off") : 0;
	t->hoff = t->hoff + d < 0 ? 0 : t->hoff + d;
	return DIRTY_RIGHT;
}

static int do_left(struct tui *t, const char *arg) { return hscroll(t, -8); }
static int do_right(struct tui *t, const char *arg) { return hscroll(t, 8); }
static int do_copy_line(struct tui *t, const char *arg) { return viewer_copy(t, 0); }
static int do_copy_all(struct tui *t, const char *arg) { return viewer_copy(t, 1); }

static int
sort_by(struct tui *t, int col, int desc)
{
	t->sort_col = col < -1 ? C_N - 1 : col >= C_N ? 0 : col;
	t->sort_desc = desc;
	rebuild_view(t);
	if (t->sort_col < 0)
		return model_say(&t->m, 0, "the list in the order the sandboxes were made") |
		    DIRTY_LIST;
	return model_say(&t->m, 0, "sorted by %s, %s", list_col_name(t->sort_col),
	    t->sort_desc ? "descending" : "ascending") | DIRTY_LIST;
}

static int do_sort_prev(struct tui *t, const char *arg) { return sort_by(t, t->sort_col <= 0 ? C_N - 1 : t->sort_col - 1, t->sort_desc); }
static int do_sort_next(struct tui *t, const char *arg) { return sort_by(t, t->sort_col + 1, t->sort_desc); }
static int do_sort_turn(struct tui *t, const char *arg) { return sort_by(t, t->sort_col < 0 ? C_ID : t->sort_col, !t->sort_desc); }

/* :sort COLUMN [asc|desc]: by name, as the header says it. */
static int
do_sort(struct tui *t, const char *arg)
{
	char col[32] = "", dir[16] = "";

	if (arg == NULL || sscanf(arg, "%31s %15s", col, dir) < 1)
		return model_say(&t->m, 1, ":sort takes a column (ID NAME BACKEND STATE AGE LEFT "
		    "CPU%% MEM PIDS FWD, or none) and asc or desc");
	if (strcasecmp(col, "none") == 0)
		return sort_by(t, -1, 0);
	for (int c = 0; c < C_N; c++)
		if (strcasecmp(col, list_col_name(c)) == 0 ||
		    (strcasecmp(col, "cpu") == 0 && c == C_CPU))
			return sort_by(t, c, strcmp(dir, "desc") == 0 ||
			    (dir[0] == '\0' && (c == C_CPU || c == C_MEM || c == C_PIDS)));
	return model_say(&t->m, 1, "sort: no column '%s' (ID NAME BACKEND STATE AGE LEFT CPU%% "
	    "MEM PIDS FWD)", col);
}

/* :client NAME: Activity shows that client's calls only; none: everyone's. */
static int
do_client(struct tui *t, const char *arg)
{
	snprintf(t->aclient, sizeof t->aclient, "%s", arg ? arg : "");
	t->scroll = 0;
	t->adetail = 0;
	if (t->tab != TAB_ACTIVITY)
		t->tab = TAB_ACTIVITY;
	return model_say(&t->m, 0, t->aclient[0] ? "Activity: client %s only" :
	    "Activity: every client%s", t->aclient) | DIRTY_RIGHT | DIRTY_KEYS;
}

static int
do_refresh(struct tui *t, const char *arg)
{
	if (t->tab != TAB_DIFF || !need_sandbox(t))
		return t->tab == TAB_DIFF ? DIRTY_PROMPT : 0;
	diff_load(t);
	return model_say(&t->m, 0, "reading the changes of %s\xe2\x80\xa6", t->m.sel) |
	    DIRTY_RIGHT;
}

static int do_backspace(struct tui *t, const char *arg) { return do_back(t); }

static int
do_theme(struct tui *t, const char *arg)
{
	struct sbx_err e;

	if (theme_load(arg && *arg ? arg : "default", &e) < 0)
		return model_say(&t->m, 1, "%s%s%s", e.msg, e.hint[0] ? ": " : "", e.hint);
	theme_apply();
	clearok(stdscr, TRUE);
	return model_say(&t->m, 0, "theme %s", theme_name()) | DIRTY_ALL;
}

static int
do_approve_mode(struct tui *t, const char *arg)
{
	struct sbx_err e;

	if (arg == NULL || *arg == '\0')
		return model_say(&t->m, 1, ":approve takes none, destructive or all");
	if (source_approve_mode(t->src, arg, &e) < 0)
		return model_say(&t->m, 1, "%s%s%s", e.msg, e.hint[0] ? " \xe2\x80\x94 " : "",
		    e.hint);
	snprintf(t->m.approve_mode, sizeof t->m.approve_mode, "%s", arg);
	return model_say(&t->m, 0, "approvals: %s", arg) | DIRTY_TITLE;
}

/* The tests' way to check that a fatal error restores the terminal. */
static int
do_fatal_test(struct tui *t, const char *arg)
{
	if (getenv("SBXTOP_TEST_HOOKS") == NULL)
		return model_say(&t->m, 1, "unknown command ':fatal-test' (? lists them)");
	fatal("a fatal error asked for by :fatal-test");
}

/* Every action of the console, whether a key or the palette reaches it: the
 * key bar, the help and both dispatchers are made from this table. */
const struct keybind keymap[] = {
	/* keys			label		command		usage		bar	help */
	{ { 'j', KEY_DOWN }, "j \xe2\x86\x93", NULL, NULL, NULL, "move down (scroll in the right pane)", 0, do_down },
	{ { 'k', KEY_UP }, "k \xe2\x86\x91", NULL, NULL, NULL, "move up", 0, do_up },
	{ { KEY_NPAGE, ' ' }, "PgDn Space", NULL, NULL, NULL, "page down", 0, do_pgdn },
	{ { KEY_PPAGE }, "PgUp", NULL, NULL, NULL, "page up", 0, do_pgup },
	{ { 'g', KEY_HOME }, "g Home", NULL, NULL, NULL, "first row / oldest output", 0, do_top },
	{ { 'G', KEY_END }, "G End", NULL, NULL, NULL, "last row / follow the newest output", 0, do_bottom },
	{ { '\n', KEY_ENTER, '\r' }, "Enter", NULL, NULL, NULL, "focus the right pane; open a directory or file; approval details", 0, do_enter },
	{ { 27 }, "Esc", NULL, NULL, NULL, "back: close the file, clear the filter, focus the list", 0, do_escape },
	{ { KEY_BACKSPACE, 127, 8 }, "Backspace", NULL, NULL, NULL, "Files: the parent directory", 0, do_backspace },
	{ { '\t', ']' }, "Tab ]", NULL, NULL, NULL, "next tab: Exec Logs Ports Network (network rules only) Files Activity Diff Info", 0, do_tab_next },
	{ { KEY_BTAB, '[' }, "S-Tab [", NULL, NULL, NULL, "previous tab", 0, do_tab_prev },
	{ { '/', KEY_F(3) }, "/ F3", "filter", "[REGEX]", "filter", "filter the list, or the output, with a PCRE2 regex (! inverts; none clears)", K_BAR, do_filter },
	{ { ':' }, ":", NULL, NULL, "command", "command palette", K_BAR, do_palette },
	{ { 'f' }, "f", "follow", "", NULL, "Exec/Logs: follow the newest output, or pause (kept)", 0, do_follow },
	{ { 'w' }, "w", "wrap", "", NULL, "Exec/Logs: wrap long lines (kept)", 0, do_wrap },
	{ { 'c' }, "c", "create", "[NAME] [K=V]", "create", "create a sandbox (K: backend host image snapshot network memory cpus disk)", K_MUTATES | K_BAR, do_create },
	{ { 'x' }, "x", "exec", "CMD", "exec", "run a command in the sandbox; its output shows in Exec", K_MUTATES | K_BAR, do_exec },
	{ { 's' }, "s", "shell", "", "shell", "open a shell in the sandbox (full screen; exit to return)", K_MUTATES | K_BAR, do_shell },
	{ { 'p' }, "p", "forward", "PORT[:LOCAL]", "forward", "forward a port of the sandbox to this machine", K_MUTATES | K_BAR, do_forward },
	{ { 'K', KEY_F(9) }, "K F9", "kill", "", "kill", "kill the newest running command (TERM; again: KILL)", K_MUTATES | K_BAR, do_kill },
	{ { 'z' }, "z", "suspend", "", "suspend", "suspend the sandbox (the key: or resume it)", K_MUTATES | K_BAR, do_suspend },
	{ { 0 }, NULL, "resume", "", NULL, "resume the suspended sandbox", K_MUTATES, do_resume },
	{ { 'd', KEY_F(8), KEY_DC }, "d F8 Del", "destroy", "", "destroy", "destroy the sandbox (asks to confirm); in Ports, stop the forward under the cursor", K_MUTATES | K_BAR, do_destroy },
	{ { 'a' }, "a", "approvals", "", NULL, "pending approvals and network asks: y approve (once), a always (a network ask), n deny", K_MUTATES, do_approvals },
	{ { '|' }, "|", NULL, NULL, NULL, "Exec/Logs: filter the lines with a PCRE2 regex (/ searches there)", 0, do_line_filter },
	{ { 0 }, NULL, "search", "[REGEX]", NULL, "Exec/Logs: search (n next, N previous; a count on the tab row)", 0, do_search },
	{ { 'n' }, "n", NULL, NULL, NULL, "Exec/Logs: the next match of the search", 0, do_next },
	{ { 'N' }, "N", NULL, NULL, NULL, "Exec/Logs: the previous match", 0, do_prev },
	{ { 't' }, "t", "timestamps", "", NULL, "Exec/Logs: when each line came (kept)", 0, do_stamps },
	{ { KEY_LEFT }, "\xe2\x86\x90", NULL, NULL, NULL, "Exec/Logs/Diff: scroll left", 0, do_left },
	{ { KEY_RIGHT }, "\xe2\x86\x92", NULL, NULL, NULL, "Exec/Logs/Diff: scroll right", 0, do_right },
	{ { 'y' }, "y", "copy", "", NULL, "Exec/Logs: copy the top line (the match) to the clipboard (OSC 52) or a file", 0, do_copy_line },
	{ { 'Y' }, "Y", "copy-all", "", NULL, "copy the newest command's whole output, or the whole log", 0, do_copy_all },
	{ { '<' }, "<", NULL, NULL, NULL, "sort the list by the column to the left", 0, do_sort_prev },
	{ { '>' }, ">", NULL, NULL, NULL, "sort the list by the column to the right", 0, do_sort_next },
	{ { 'o' }, "o", NULL, NULL, NULL, "turn the list's order (ascending, descending)", 0, do_sort_turn },
	{ { 0 }, NULL, "sort", "COLUMN [asc|desc]", NULL, "sort the list (CPU% MEM PIDS: the most first; none: as made)", 0, do_sort },
	{ { 0 }, NULL, "client", "[NAME]", NULL, "Activity: only the calls of client NAME, or key:NAME of an API key (none: all)", 0, do_client },
	{ { 'r' }, "r", "refresh", "", NULL, "Diff: read the changes again", 0, do_refresh },
	{ { 0 }, NULL, "net", "allow|deny|remove ENTRY", NULL, "Network: change the sandbox's rules (as sbxtop net ID allow ENTRY)", K_MUTATES, net_change },
	{ { 0 }, NULL, "approve", "none|destructive|all", NULL, "which agent calls wait for the operator", K_MUTATES, do_approve_mode },
	{ { 0 }, NULL, "theme", "NAME", NULL, "switch theme (default, light, high-contrast, monochrome)", 0, do_theme },
	{ { '?', KEY_F(1), 'h' }, "? F1 h", "help", "", "help", "this help", K_BAR | K_KEEP, do_help },
	{ { 'q', KEY_F(10) }, "q F10", "quit", "", "quit", "quit", K_BAR | K_KEEP, do_quit },
	{ { 0 }, NULL, "q", "", NULL, "quit", K_HIDDEN, do_quit },
	{ { 0 }, NULL, "fatal-test", "", NULL, "end with a fatal error", K_HIDDEN, do_fatal_test },
	{ { 0 }, NULL, NULL, NULL, NULL, NULL, 0, NULL },
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

static const struct keybind *
command_find(const char *name)
{
	for (const struct keybind *k = keymap; k->fn; k++)
		if (k->cmd && strcmp(k->cmd, name) == 0)
			return k;
	return NULL;
}

/* --- the palette ----------------------------------------------------------- */

/* ":NAME WORDS": the table's command NAME with WORDS ("" when none). */
/* Run the palette's line (":theme light"): the table's command by name. */
static int
palette(struct tui *t, const char *text)
{
	char line[PROMPT_MAX * 4];
	const struct keybind *k;
	char *cmd = line, *arg;

	snprintf(line, sizeof line, "%s", text);
	while (*cmd == ' ' || *cmd == ':')
		cmd++;
	arg = cmd + strcspn(cmd, " ");
	if (*arg) {
		*arg++ = '\0';
		while (*arg == ' ')
			arg++;
	}
	/* Tab leaves a space after a whole word. */
	for (size_t n = strlen(arg); n > 0 && arg[n - 1] == ' '; n--)
		arg[n - 1] = '\0';
	if (*cmd == '\0')
		return 0;
	if ((k = command_find(cmd)) == NULL)
		return model_say(&t->m, 1, "unknown command ':%s' (? lists them)", cmd);
	if (t->readonly && (k->flags & K_MUTATES))
		return model_say(&t->m, 1, "read-only console: '%s' is not available", cmd);
	return k->fn(t, arg);
}

/* The words an argument of a palette command can be, space-separated, into
 * buf ("" when any). */
static void
arg_words(struct tui *t, const char *cmd, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	if (strcmp(cmd, "theme") == 0) {
		char list[1024];
		theme_list(list, sizeof list);
		for (char *p = list; *p; p++)
			if (*p == ',')
				*p = ' ';
		snprintf(buf, len, "%s", list);
	} else if (strcmp(cmd, "sort") == 0) {
		for (int c = 0; c < C_N && n < len; c++)
			n += (size_t)snprintf(buf + n, len - n, "%s ", list_col_name(c));
		if (n < len)
			snprintf(buf + n, len - n, "none");
	} else if (strcmp(cmd, "approve") == 0) {
		snprintf(buf, len, "none destructive all");
	} else if (strcmp(cmd, "net") == 0) {
		snprintf(buf, len, "allow deny remove");
	} else if (strcmp(cmd, "create") == 0) {
		snprintf(buf, len, "backend= host= image= snapshot= network= memory= cpus= disk=");
	} else if (strcmp(cmd, "client") == 0) {
		/* The clients Activity has seen, each once. */
		for (size_t i = 0; i < t->m.nact && n < len; i++) {
			const char *c = model_activity(&t->m, i)->client;
			char key[64];
			snprintf(key, sizeof key, " %s ", c);
			if (*c && strstr(fmt((char[2048]){ 0 }, 2048, " %s", buf), key) == NULL)
				n += (size_t)snprintf(buf + n, len - n, "%s ", c);
		}
	}
}

static int
palette_complete(struct tui *t)
{
	char line[PROMPT_MAX * 4], words[2048], common[256] = "", shown[512] = "";
	const char *space, *word;
	size_t wl, o = 0, nfit = 0, sl = 0;

	for (size_t i = 0; i < t->plen && o + MB_CUR_MAX < sizeof line; i++) {
		size_t k = wcrtomb(line + o, t->pbuf[i], NULL);
		if (k != (size_t)-1)
			o += k;
	}
	line[o] = '\0';
	/* The command's name, or (after a space) its last word. */
	if ((space = strchr(line, ' ')) == NULL) {
		size_t n = 0;
		for (const struct keybind *k = keymap; k->fn && n < sizeof words; k++)
			if (k->cmd && !(k->flags & K_HIDDEN) &&
			    !(t->readonly && (k->flags & K_MUTATES)))
				n += (size_t)snprintf(words + n, sizeof words - n, "%s ", k->cmd);
		word = line;
	} else {
		char cmd[64];
		snprintf(cmd, sizeof cmd, "%.*s", (int)(space - line), line);
		arg_words(t, cmd, words, sizeof words);
		word = strrchr(line, ' ') + 1;
	}
	wl = strlen(word);
	for (char *save = NULL, *w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ",
	    &save)) {
		if (strncasecmp(w, word, wl) != 0)
			continue;
		if (nfit++ == 0) {
			snprintf(common, sizeof common, "%s", w);
		} else {
			size_t k = 0;
			while (common[k] && tolower((unsigned char)common[k]) ==
			    tolower((unsigned char)w[k]))
				k++;
			common[k] = '\0';
		}
		if (sl < sizeof shown)
			sl += (size_t)snprintf(shown + sl, sizeof shown - sl, "%s%s", sl ? " " : "", w);
	}
	if (nfit == 0)
		return model_say(&t->m, 1, "nothing to complete '%s' with", word);
	/* The word becomes their common start, and a space after a whole one. */
	snprintf(line + (word - line), sizeof line - (size_t)(word - line), "%s%s", common,
	    nfit == 1 && common[strlen(common) - 1] != '=' ? " " : "");
	t->plen = 0;
	for (const char *p = line; *p && t->plen < PROMPT_MAX - 1;) {
		wchar_t wc;
		size_t k = mbrtowc(&wc, p, strlen(p), NULL);
		if (k == (size_t)-1 || k == (size_t)-2 || k == 0)
			break;
		t->pbuf[t->plen++] = wc;
		p += k;
	}
	snprintf(t->pcands, sizeof t->pcands, "%s", nfit > 1 ? shown : "");
	return DIRTY_PROMPT | DIRTY_KEYS;
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
	/* A press selects; its release (and other buttons) change nothing. */
	if (!(me.bstate & (BUTTON1_PRESSED | BUTTON1_CLICKED)))
		return 0;
	if (me.x < L.lw && me.y >= L.top + 2 && me.y < L.top + L.list_h - 1) {
		size_t i = t->top + (size_t)(me.y - L.top - 2);
		t->focus = 0;
		if (i < t->nview)
			return select_id(t, t->m.sb[t->view[i]].id) | DIRTY_LIST | DIRTY_RIGHT;
		return DIRTY_LIST | DIRTY_RIGHT;
	}
	if (me.x >= L.rx && me.y == L.top + 1) {
		for (int i = 0; i < TAB_N; i++) {
			int tx, tw;
			tab_span(t, &L, i, &tx, &tw);
			if (me.x >= tx && me.x < tx + tw) {
				t->focus = 1;
				return set_tab(t, i) | DIRTY_LIST;
			}
		}
	}
	if (me.x >= L.rx) {
		t->focus = 1;
		return DIRTY_LIST | DIRTY_RIGHT | DIRTY_KEYS;
	}
	return 0;
}

int
tui_key(struct tui *t, int is_key, wint_t ch)
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
	case M_CONFIRM: {
		cJSON *a;
		t->mode = M_NORMAL;
		if (code != 'y' && code != 'Y')
			return model_say(&t->m, 0, "%s", t->confirm == C_QUIT ? "not quitting" :
			    t->confirm == C_UNFORWARD ? "the forward goes on" : "not destroyed");
		if (t->confirm == C_QUIT) {
			t->quit = 1;
			return 0;
		}
		a = cJSON_CreateObject();
		cJSON_AddStringToObject(a, "sandbox_id", t->confirm_id);
		if (t->confirm == C_UNFORWARD) {
			cJSON_AddNumberToObject(a, "remote_port", t->confirm_port);
			source_call_async(t->src, "sandbox_port_forward_stop", a, "unforward");
			return model_say(&t->m, 0, "stopping the forward of port %d\xe2\x80\xa6",
			    t->confirm_port);
		}
		source_call_async(t->src, "sandbox_destroy", a, "destroy");
		return model_say(&t->m, 0, "destroying %s\xe2\x80\xa6", t->confirm_id);
	}
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
		int n = (int)model_queue_n(&t->m), isnet = 0;
		const cJSON *q = model_queue_at(&t->m, t->acur, &isnet);
		/* A network ask takes a (always); otherwise a goes back. */
		if (q != NULL && isnet && (code == 'y' || code == 'n' || code == 'a'))
			return net_answer(t, q, code == 'y' ? "once" : code == 'a' ? "always" :
			    "deny") | DIRTY_ALL;
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
	/* The first thing waiting for the operator takes y and n (and a, when
	 * it is a network ask: always). */
	if ((code == 'y' || code == 'n' || code == 'a') && !t->readonly &&
	    model_queue_n(&t->m) > 0) {
		int isnet;
		const cJSON *q = model_queue_at(&t->m, 0, &isnet);
		if (q != NULL && isnet)
			return net_answer(t, q, code == 'y' ? "once" : code == 'a' ? "always" :
			    "deny");
		if (q != NULL && code != 'a')
			return approve_first(t, 0, code == 'y');
	}
	if ((k = key_find(code)) == NULL)
		return 0;
	if (t->readonly && (k->flags & K_MUTATES))
		return model_say(&t->m, 1, "read-only console");
	return k->fn(t, NULL);
}

