/* The operator console: the main loop and what comes from the source.
 *
 * One thread owns the terminal and the model.  It sleeps in poll() on the
 * terminal and the source's wake descriptor, so a new sandbox, an exec line or
 * a tool call shows without a keypress and an idle console costs nothing.  Key
 * handlers change the model and return what changed (DIRTY_*); only those parts
 * of the screen are drawn again, at most about 30 times a second.  Drawing is
 * draw.c, keys and the palette keys.c, the prompt line prompt.c. */
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

#include "lib/jspec.h"
#include "lib/log.h"
#include "core/paths.h"
#include "lib/util.h"
#include "tui/theme.h"
#include "tui/tui.h"
#include "tui/tui-int.h"

static volatile sig_atomic_t got_signal;

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
	int ok = cJSON_IsTrue(cJSON_GetObjectItem(r, "ok")), current = 0;

	if (what == NULL)
		return 0;
	if (!ok) {
		const char *msg = cJSON_GetStringValue(cJSON_GetObjectItem(r, "message"));
		const char *hint = cJSON_GetStringValue(cJSON_GetObjectItem(r, "hint"));
		if (strcmp(what, "files") == 0 && t->fentries == NULL)
			t->fentries = cJSON_CreateArray();
		if (diff_page_of(t, what, &current)) {
			if (!current)
				return 0;
			if (t->dpages == 0)
				lines_clear(&t->dview);
			t->dstate = 2;
			lines_append(&t->dview, msg ? msg : "failed", msg ? strlen(msg) : 6);
			what = "diff";
		}
		return model_say(&t->m, 1, "%s: %s%s%s", what, msg ? msg : "failed",
		    hint ? " \xe2\x80\x94 " : "", hint ? hint : "") | DIRTY_RIGHT;
	}
	if (diff_page_of(t, what, &current)) {
		if (current)
			diff_loaded(t, what, d);
		return current ? DIRTY_RIGHT : 0;
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
		int dd = 0;
		if (id != NULL) {
			snprintf(t->select_next, sizeof t->select_next, "%s", id);
			dd = fix_selection(t);
		}
		return dd | model_say(&t->m, 0, "created %s", id ? id : "a sandbox");
	}
	if (strcmp(what, "exec") == 0 && cJSON_IsTrue(cJSON_GetObjectItem(d, "background"))) {
		const char *x = cJSON_GetStringValue(cJSON_GetObjectItem(d, "exec_id"));
		const char *sb = cJSON_GetStringValue(cJSON_GetObjectItem(r, "sandbox"));
		return x && sb ? model_watch_exec(&t->m, sb, x) | DIRTY_PROMPT : 0;
	}
	if (strcmp(what, "exec") == 0) {
		const cJSON *ec = cJSON_GetObjectItem(d, "exit_code");
		const char *sig = cJSON_GetStringValue(cJSON_GetObjectItem(d, "signal"));
		const char *why = cJSON_GetStringValue(cJSON_GetObjectItem(d, "reason"));
		if (why && strcmp(why, "oom") == 0)
			return model_say(&t->m, 0, "command ended by the OOM killer (memory limit)");
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
	if (strcmp(what, "unforward") == 0) {
		const cJSON *st = cJSON_GetArrayItem(cJSON_GetObjectItem(d, "stopped"), 0);
		if (st == NULL)
			return model_say(&t->m, 1, "no such forward any more");
		return model_say(&t->m, 0, "stopped the forward of port %d (local %d)",
		    (int)jnum(st, "remote_port", 0), (int)jnum(st, "local_port", 0));
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
			t->dirty |= tui_key(t, r == KEY_CODE_YES, ch);
			if (t->quit)
				return;
		}
		if (p[1].revents & POLLIN) {
			cJSON *m;
			int d = 0, relist = 0;
			if (!t->follow && t->scroll > 0 && (t->tab == TAB_EXEC || t->tab == TAB_LOGS))
				t->seen_total = viewer_total(t, t->tab == TAB_EXEC, t->cols - t->cols * 48 / 100 - 2);
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
			/* Paused (follow off): what came keeps the view where it was. */
			if (!t->follow && t->scroll > 0 && (t->tab == TAB_EXEC || t->tab == TAB_LOGS)) {
				size_t now_total = viewer_total(t, t->tab == TAB_EXEC, t->cols - t->cols * 48 / 100 - 2);
				if (now_total > t->seen_total)
					t->scroll += now_total - t->seen_total;
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

/* The console was given --approve want, and the core server it found runs in
 * mode had: the console is the operator's, so the server takes it (a
 * read-only console changes nothing, and says how). */
static void
apply_approve(struct tui *t, const char *want, const char *had)
{
	struct sbx_err e;

	if (t->readonly) {
		model_say(&t->m, 1, "--approve %s not applied: a --readonly console changes "
		    "nothing; the core server keeps %s (:approve in a console that is not "
		    "read-only sets it)", want, had);
		return;
	}
	if (source_approve_mode(t->src, want, &e) < 0) {
		model_say(&t->m, 1, "--approve %s not applied: %s; the core server keeps %s "
		    "(:approve %s sets it)", want, e.msg, had, want);
		return;
	}
	snprintf(t->m.approve_mode, sizeof t->m.approve_mode, "%s", want);
	model_say(&t->m, 0, "approvals: %s, as --approve says (the running core server had %s)",
	    want, had);
}

/* The source the console reads: the core server, or a core in this process
 * (--standalone, or no core server to start); NULL after saying why. */
static struct source *
open_source(struct config *cfg, const struct tui_opts *o)
{
	struct source *src;
	struct sbx_err e;

	if (o->standalone) {
		src = source_standalone_new(cfg, &e);
	} else {
		src = source_remote_new(&e);
		if (src == NULL && e.code == SBX_EUNSUPPORTED) {
			/* Until the core server is merged: run the core here. */
			log_info("console: %s; running the core in this process", e.msg);
			src = source_standalone_new(cfg, &e);
		} else {
			config_free(cfg);
		}
	}
	if (src == NULL)
		fprintf(stderr, "sbxtop: %s%s%s\n", e.msg, e.hint[0] ? " \xe2\x80\x94 " : "",
		    e.hint);
	return src;
}

/* The terminal, the console's: keys as they come, no echo, the mouse, the
 * theme's colours.  -1 after saying why when it cannot be used. */
static int
open_terminal(struct tui *t)
{
	if (initscr() == NULL) {
		fprintf(stderr, "sbxtop: cannot use the terminal (TERM=%s)\n",
		    getenv("TERM") ? getenv("TERM") : "");
		return -1;
	}
	cbreak();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	set_escdelay(25);
	curs_set(0);
	/* Every button event, releases included: ncurses drops an event outside
	 * the mask and then waits for the next byte, whatever nodelay says, so a
	 * release left out froze the console until a key came.  No click
	 * interval either: a press acts at once, nothing waits for its release. */
	mousemask(ALL_MOUSE_EVENTS, NULL);
	mouseinterval(0);
	theme_apply();
	getmaxyx(stdscr, t->rows, t->cols);
	return 0;
}

/* The approvals pending and the mode: the core server knows them, standalone
 * does not.  approve, given to this console (approve_given), wins. */
static void
load_approvals(struct tui *t, const char *approve, int approve_given)
{
	cJSON *list = NULL;
	struct sbx_err e;

	if (source_approvals(t->src, &list, &e) == 0) {
		t->m.approvals = cJSON_Duplicate(cJSON_IsArray(list) ? list :
		    cJSON_GetObjectItem(list, "approvals"), 1);
		const char *mode = cJSON_GetStringValue(cJSON_GetObjectItem(list, "mode"));
		snprintf(t->m.approve_mode, sizeof t->m.approve_mode, "%s", mode ? mode :
		    approve);
		if (approve_given && mode != NULL && strcmp(mode, approve) != 0)
			apply_approve(t, approve, mode);
	}
	cJSON_Delete(list);
}

static void
tui_free(struct tui *t)
{
	source_free(t->src);
	filter_free(t->lfilter);
	filter_free(t->rfilter);
	filter_free(t->search);
	lines_free(&t->dview);
	cJSON_Delete(t->fentries);
	lines_free(&t->fview);
	free(t->view);
	free(t->filter_before);
	model_free(&t->m);
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
	/* --approve or SBXTOP_APPROVE given to this console. */
	int approve_given;

	memset(&t, 0, sizeof t);
	setlocale(LC_ALL, "");
	/* The terminal is the console's: logs go to a file. */
	if ((logf = paths_file(PATHS_STATE, "console.log", 1, &e)) != NULL)
		log_open("sbxtop", logf);
	snprintf(approve, sizeof approve, "%s", config_str(cfg, "approve"));
	approve_given = config_source_of(cfg, "approve") >= CONFIG_ENV;
	if (theme_load(theme, &e) < 0) {
		fprintf(stderr, "sbxtop: %s%s%s\n", e.msg, e.hint[0] ? ": " : "", e.hint);
		config_free(cfg);
		return 2;
	}
	if ((t.src = open_source(cfg, o)) == NULL)
		return 1;
	model_init(&t.m);
	lines_init(&t.fview, 20000);
	lines_init(&t.dview, 50000);
	t.sort_col = -1;	/* as created, until < > o or :sort */
	viewer_settings_load(&t);
	t.readonly = o->readonly;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: poll returns and the loop ends cleanly. */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	fatal_set_hook(restore_terminal);

	if (open_terminal(&t) < 0) {
		source_free(t.src);
		model_free(&t.m);
		return 1;
	}
	load_approvals(&t, approve, approve_given);
	rebuild_view(&t);
	t.dirty = DIRTY_ALL;
	loop(&t);

	endwin();
	fatal_set_hook(NULL);
	lat_write(&t);
	tui_free(&t);
	return got_signal ? 128 + got_signal : 0;
}
