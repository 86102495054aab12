/* The console's prompt line: editing it, and what each kind of prompt does
 * with its line when Enter ends it (a filter, a command, a create, a port, a
 * reason to deny). */
#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include <wctype.h>

#include "lib/util.h"
#include "tui/tui-int.h"

int
prompt_open(struct tui *t, enum prompt_kind k, const char *label, key_fn done)
{
	struct filter *f = t->focus ? t->rfilter : t->lfilter;

	t->mode = M_PROMPT;
	t->pkind = k;
	t->pdone = done;
	t->pcomplete = NULL;
	snprintf(t->plabel, sizeof t->plabel, "%s", label);
	t->plen = 0;
	t->pcands[0] = '\0';
	free(t->filter_before);
	t->filter_before = k == P_FILTER ? xstrdup(f ? filter_text(f) : "") : NULL;
	curs_set(1);
	return DIRTY_PROMPT;
}

/* The prompt's line as UTF-8. */
static void
prompt_line(const struct tui *t, char *line, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < t->plen && o + MB_CUR_MAX < len; i++) {
		size_t k = wcrtomb(line + o, t->pbuf[i], NULL);
		if (k != (size_t)-1)
			o += k;
	}
	line[o] = '\0';
}

/* A filter follows the line as it is typed; a regex not yet whole (an open
 * parenthesis) leaves the last one that was. */
static int
filter_live(struct tui *t)
{
	char line[PROMPT_MAX * 4], err[200];
	struct filter *f;

	prompt_line(t, line, sizeof line);
	if (*line && (f = filter_new(line, err, sizeof err)) == NULL)
		return DIRTY_PROMPT;
	if (*line)
		filter_free(f);
	return set_filter(t, line) | DIRTY_PROMPT;
}

int
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

	prompt_line(t, line, sizeof line);
	t->mode = M_NORMAL;
	t->pcands[0] = '\0';
	curs_set(0);
	return t->pdone(t, line) | DIRTY_PROMPT;
}

int
prompt_key(struct tui *t, int is_key, wint_t ch)
{
	if (!is_key && (ch == L'\n' || ch == L'\r'))
		return prompt_done(t) | DIRTY_KEYS;
	if (is_key && ch == KEY_ENTER)
		return prompt_done(t) | DIRTY_KEYS;
	if (!is_key && ch == 27) {
		t->mode = M_NORMAL;
		t->pcands[0] = '\0';
		curs_set(0);
		/* A filter typed and not taken: the one before comes back. */
		if (t->pkind == P_FILTER && t->filter_before != NULL)
			return set_filter(t, t->filter_before) | DIRTY_PROMPT | DIRTY_KEYS;
		return DIRTY_PROMPT | DIRTY_KEYS;
	}
	if (!is_key && ch == '\t' && t->pcomplete != NULL)
		return t->pcomplete(t);
	if ((is_key && ch == KEY_BACKSPACE) || (!is_key && (ch == 127 || ch == 8))) {
		if (t->plen > 0)
			t->plen--;
		else if (t->pkind != P_CREATE) {
			t->mode = M_NORMAL;
			curs_set(0);
		}
		return t->pkind == P_FILTER ? filter_live(t) : DIRTY_PROMPT;
	}
	if (!is_key && ch == 21) {	/* ^U */
		t->plen = 0;
		return t->pkind == P_FILTER ? filter_live(t) : DIRTY_PROMPT;
	}
	if (!is_key && !iswcntrl(ch) && t->plen < PROMPT_MAX - 1) {
		t->pbuf[t->plen++] = (wchar_t)ch;
		if (t->pkind == P_FILTER)
			return filter_live(t);
	}
	return DIRTY_PROMPT;
}

/* The deny prompt's line: the reason given with the denial. */
static int
deny_done(struct tui *t, const char *reason)
{
	struct sbx_err e;

	if (source_approve(t->src, t->deny_id, 0, reason, &e) < 0)
		return model_say(&t->m, 1, "%s", e.msg);
	return model_say(&t->m, 0, "denied %s", t->deny_id);
}

int
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
		return prompt_open(t, P_DENY, " deny: reason (optional): ", deny_done) | DIRTY_ALL;
	}
	if (source_approve(t->src, id, 1, NULL, &e) < 0)
		return model_say(&t->m, 1, "%s", e.msg);
	cJSON_DeleteItemFromArray(t->m.approvals, (int)i);
	return model_say(&t->m, 0, "approved %s", id) | DIRTY_TITLE;
}

