/* The console's network policy (docs/network.md): the selected sandbox's
 * policy and recent connections (the Network tab), and what every sandbox's
 * policy holds for the operator, beside the held tool calls in one queue
 * ("sbx-7f3a9c wants pypi.org:443 — [y] once [a] always [n] deny"): the
 * answers and the drawing.  What they read is folded in by model-net.c from
 * core_net_show's object on selection, core_net_pending's list and the net.*
 * events (a connection is added as its log line is written, a policy change
 * replaces the rules shown). */
#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jspec.h"
#include "lib/util.h"
#include "tui/theme.h"
#include "tui/tui-int.h"

/* --- answers --------------------------------------------------------------- */

int
net_answer(struct tui *t, const cJSON *a, const char *answer)
{
	char sb[32], req[32], dest[300];
	cJSON *p = cJSON_CreateObject();
	struct sbx_err e;
	int i;

	snprintf(sb, sizeof sb, "%s", jstr(a, "sandbox", ""));
	snprintf(req, sizeof req, "%s", jstr(a, "req", ""));
	model_net_dest(a, dest, sizeof dest);
	cJSON_AddStringToObject(p, "sandbox", sb);
	cJSON_AddStringToObject(p, "req", req);
	cJSON_AddStringToObject(p, "answer", answer);
	if (source_net(t->src, "decide", p, NULL, &e) < 0) {
		/* Answered elsewhere, or timed out: it is not waiting any more. */
		if (e.code == SBX_ENOTFOUND && (i = model_net_ask_find(t->m.net_asks, sb, req)) >= 0)
			cJSON_DeleteItemFromArray(t->m.net_asks, i);
		return model_say(&t->m, 1, "%s", e.msg) | DIRTY_TITLE;
	}
	if ((i = model_net_ask_find(t->m.net_asks, sb, req)) >= 0)
		cJSON_DeleteItemFromArray(t->m.net_asks, i);
	return model_say(&t->m, 0, "%s: %s %s", sb, dest, strcmp(answer, "once") == 0 ?
	    "allowed once" : strcmp(answer, "always") == 0 ? "allowed (an allow rule added)" :
	    "denied") | DIRTY_TITLE | DIRTY_RIGHT;
}

int
net_change(struct tui *t, const char *arg)
{
	char verb[16], entry[300];
	cJSON *p;
	struct sbx_err e;

	if (!need_sandbox(t))
		return DIRTY_PROMPT;
	if (arg == NULL || sscanf(arg, "%15s %299s", verb, entry) != 2)
		return model_say(&t->m, 1, ":net takes allow, deny or remove and an entry "
		    "(api.github.com, *.npmjs.org:443, 10.0.0.0/8)");
	p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "sandbox", t->m.sel);
	cJSON_AddStringToObject(p, "verb", verb);
	cJSON_AddStringToObject(p, "entry", entry);
	if (source_net(t->src, "change", p, NULL, &e) < 0)
		return model_say(&t->m, 1, "%s%s%s", e.msg, e.hint[0] ? " \xe2\x80\x94 " : "",
		    e.hint);
	return model_say(&t->m, 0, "%s: %s %s", t->m.sel, verb, entry) | DIRTY_RIGHT;
}

/* --- the Network tab ------------------------------------------------------- */

void
net_load(struct tui *t)
{
	cJSON *p;

	if (!t->m.sel[0])
		return;
	p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "sandbox", t->m.sel);
	cJSON_AddNumberToObject(p, "recent", NET_RECENT);
	source_net_async(t->src, "show", p);
}

/* Entries one after another, wrapped at w; returns the rows used. */
static int
draw_entries(int y, int x, int w, int hmax, const char *label, const cJSON *arr, int attr)
{
	int r = 0, cx = x + 8;
	const cJSON *v;

	put_from(y, x, w, label, theme_attr(TH_DIM), 0);
	if (cJSON_GetArraySize(arr) == 0) {
		put_from(y, cx, w - 8, "(none)", theme_attr(TH_DIM), 0);
		return 1;
	}
	cJSON_ArrayForEach(v, arr) {
		const char *s = cJSON_GetStringValue(v);
		int n = s ? (int)strlen(s) : 0;
		if (s == NULL)
			continue;
		if (cx > x + 8 && cx + n > x + w) {
			if (++r >= hmax)
				return r;
			cx = x + 8;
		}
		cx += put_from(y + r, cx, x + w - cx, s, attr, 0) + 2;
	}
	return r + 1;
}

/* The rules (ask, the proxy, allow, deny, grants still running) and the
 * counts, from row y on; returns the rows used. */
static int
draw_rules(const cJSON *n, const cJSON *pol, int y, int x, int w)
{
	const cJSON *k = cJSON_GetObjectItem(n, "counts"), *a;
	char row[1024], b1[24], b2[24];
	int r = 0;

	put_from(y + r++, x, w, fmt(row, sizeof row, "network rules \xe2\x80\x94 ask %s%s "
	    "\xe2\x80\x94 proxy %s", cJSON_IsTrue(cJSON_GetObjectItem(pol, "ask")) ? "on" : "off",
	    cJSON_IsTrue(cJSON_GetObjectItem(pol, "ask")) ? fmt(b1, sizeof b1, " (%d s)",
	    jnum(pol, "ask_timeout_s", 0) > 0 ? (int)jnum(pol, "ask_timeout_s", 0) :
	    60) : "",
	    cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(n, "proxy"), "running")) ?
	    fmt(b2, sizeof b2, "pid %d", (int)jnum(cJSON_GetObjectItem(n, "proxy"), "pid", 0)) :
	    "not running"), theme_attr(TH_HEADER), 0);
	r += draw_entries(y + r, x, w, 3, "allow", cJSON_GetObjectItem(pol, "allow"),
	    theme_attr(TH_OK));
	r += draw_entries(y + r, x, w, 3, "deny", cJSON_GetObjectItem(pol, "deny"),
	    theme_attr(TH_FAIL));
	if (cJSON_GetArraySize(cJSON_GetObjectItem(pol, "grants")) > 0) {
		cJSON *g = cJSON_CreateArray();
		cJSON_ArrayForEach(a, cJSON_GetObjectItem(pol, "grants"))
			if (jnum(a, "until", 0) > (double)wall_ms())
				cJSON_AddItemToArray(g, cJSON_CreateString(jstr(a, "rule", "")));
		if (cJSON_GetArraySize(g) > 0)
			r += draw_entries(y + r, x, w, 2, "grants", g, theme_attr(TH_OK));
		cJSON_Delete(g);
	}
	human_bytes(b1, sizeof b1, (uint64_t)jnum(k, "bytes_up", 0));
	human_bytes(b2, sizeof b2, (uint64_t)jnum(k, "bytes_down", 0));
	put_from(y + r++, x, w, fmt(row, sizeof row, "allowed %.0f  denied %.0f  asked %.0f  "
	    "up %s  down %s", jnum(k, "allowed", 0), jnum(k, "denied", 0),
	    jnum(k, "asked", 0), b1, b2),
	    theme_attr(TH_NORMAL), 0);
	return r;
}

/* What of the selected sandbox waits, answered with the prompt line's keys,
 * in at most room rows from y; returns the rows used. */
static int
draw_waiting(struct tui *t, int y, int x, int w, int room)
{
	char row[1024], dest[300];
	const cJSON *q;
	int r = 0, isnet;

	for (size_t i = 0; (q = model_queue_at(&t->m, i, &isnet)) != NULL && r < room; i++) {
		if (!isnet || strcmp(jstr(q, "sandbox", ""), t->m.sel) != 0)
			continue;
		model_net_dest(q, dest, sizeof dest);
		put_from(y + r++, x, w, fmt(row, sizeof row, "waiting: %s (%s)  y once  "
		    "a always  n deny", dest, jstr(q, "kind", "")), theme_attr(TH_APPROVAL), 0);
	}
	return r;
}

/* One recent connection or ask at row y, on one row where the pane is wide,
 * else two (the second: the address connected to, the bytes, how long, any
 * error) when room allows; returns the rows used. */
static int
draw_recent(const cJSON *c, int y, int x, int w, int room, int wide)
{
	const char *type = *jstr(c, "type", "") ? jstr(c, "type", "") : "connection";
	const char *addr = *jstr(c, "addr", "") ? jstr(c, "addr", "") : "-";
	char row[1024], b1[24], b2[24], when[16], dur[16], dest[300];
	int deny, at;

	clock_of(when, sizeof when, (int64_t)jnum(c, "time_ms", 0));
	if (strcmp(type, "ask") == 0) {
		const char *why = strcmp(jstr(c, "kind", ""), "request") == 0 ?
		    "asked ahead by the agent" : "held for the operator";
		if (wide) {
			put_from(y, x, w, fmt(row, sizeof row, "%-8.8s  %-28.28s %-15s %5d  "
			    "%-7s %s", when, jstr(c, "host", ""), "", (int)jnum(c, "port", 0), "ask", why),
			    theme_attr(TH_DIM), 0);
		} else {
			model_net_dest(c, dest, sizeof dest);
			put_from(y, x, w, fmt(row, sizeof row, "%-8.8s  %-30.30s %-7s %s",
			    when, dest, "ask", why), theme_attr(TH_DIM), 0);
		}
		return 1;
	}
	deny = strcmp(jstr(c, "verdict", ""), "allow") != 0;
	at = theme_attr(deny ? TH_FAIL : TH_NORMAL);
	human_bytes(b1, sizeof b1, (uint64_t)jnum(c, "up", 0));
	human_bytes(b2, sizeof b2, (uint64_t)jnum(c, "down", 0));
	if (jnum(c, "ms", 0) < 1000)
		snprintf(dur, sizeof dur, "%dms", (int)jnum(c, "ms", 0));
	else
		human_dur(dur, sizeof dur, (int64_t)jnum(c, "ms", 0));
	if (wide) {
		put_from(y, x, w, fmt(row, sizeof row, "%-8.8s  %-28.28s %-15.15s %5d  "
		    "%-7s %-22.22s %8s %8s %6s%s%s", when, jstr(c, "host", ""), addr,
		    (int)jnum(c, "port", 0), deny ? "deny" : "allow", jstr(c, "rule", ""), b1, b2, dur,
		    *jstr(c, "error", "") ? "  " : "", jstr(c, "error", "")), at, 0);
		return 1;
	}
	model_net_dest(c, dest, sizeof dest);
	put_from(y, x, w, fmt(row, sizeof row, "%-8.8s  %-30.30s %-7s %s", when, dest,
	    deny ? "deny" : "allow", jstr(c, "rule", "")), at, 0);
	if (room < 2)
		return 1;
	put_from(y + 1, x, w, fmt(row, sizeof row, "          \xe2\x86\x92 %s  up %s  "
	    "down %s  %s%s%s", addr, b1, b2, dur, *jstr(c, "error", "") ? "  " : "",
	    jstr(c, "error", "")), theme_attr(TH_DIM), 0);
	return 2;
}

void
draw_network(struct tui *t, int y0, int x, int w, int h)
{
	const cJSON *n = t->m.net, *pol, *recent;
	char row[1024];
	int r = 0, shown = 0, wide = w >= 110;
	size_t skip = t->scroll;

	if (n == NULL) {
		put_from(y0, x, w, "(reading the policy\xe2\x80\xa6)", theme_attr(TH_DIM), 0);
		return;
	}
	pol = cJSON_GetObjectItem(n, "policy");
	if (!cJSON_IsObject(pol)) {
		put_from(y0, x, w, fmt(row, sizeof row, "network %s: no rules to show (sbxtop create "
		    "--allow HOST makes a sandbox with rules)", jstr(n, "network", "")),
		    theme_attr(TH_DIM), 0);
		return;
	}
	r += draw_rules(n, pol, y0 + r, x, w);
	r += draw_waiting(t, y0 + r, x, w, h - r);
	if (r >= h)
		return;
	/* One row a connection where the pane is wide; two where it is not. */
	if (wide)
		put_from(y0 + r++, x, w, fmt(row, sizeof row, "%-8s  %-28s %-15s %5s  %-7s %-22s "
		    "%8s %8s %6s", "TIME", "DESTINATION", "ADDRESS", "PORT", "VERDICT", "RULE", "UP",
		    "DOWN", "TOOK"), theme_attr(TH_HEADER), 0);
	else
		put_from(y0 + r++, x, w, fmt(row, sizeof row, "%-8s  %-30s %-7s %s", "TIME",
		    "DESTINATION", "VERDICT", "RULE"), theme_attr(TH_HEADER), 0);
	/* Newest first; the connections and the asks (a decision shows in the
	 * connection it let through, a policy change in the rules above). */
	recent = cJSON_GetObjectItem(n, "recent");
	for (int i = cJSON_GetArraySize(recent) - 1; i >= 0 && r < h; i--) {
		const cJSON *c = cJSON_GetArrayItem(recent, i);
		const char *type = *jstr(c, "type", "") ? jstr(c, "type", "") : "connection";
		if (strcmp(type, "ask") != 0 && strcmp(type, "connection") != 0)
			continue;
		shown++;
		if (skip > 0) {
			skip--;
			continue;
		}
		r += draw_recent(c, y0 + r, x, w, h - r, wide);
	}
	if (shown == 0 && r < h)
		put_from(y0 + r, x, w, "no connections yet \xe2\x80\x94 they show here as the proxy "
		    "decides them", theme_attr(TH_DIM), 0);
}
