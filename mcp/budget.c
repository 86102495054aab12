/* The result budget's shared mechanism (budget.h): a call's budget, text that
 * never grows past its budget, the sizes and cuts the tools shape their results
 * with, the rendering of a result no tool drew itself, and the last guard on a
 * line. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "lib/utf8.h"
#include "lib/util.h"
#include "mcp/budget.h"
#include "mcp/session-int.h"

#define NOTE_ROOM	200	/* kept for the line that says what was cut */

/* --- a call's budget ------------------------------------------------------ */

size_t
mcp_call_budget(struct mcp_call *call)
{
	size_t b;

	if (call->local_core != NULL)
		return call->local_budget ? call->local_budget : MCP_BUDGET_LOCAL;
	b = call->ri.budget ? call->ri.budget : MCP_BUDGET_DEFAULT;
	/* Checked with the request (sess_tools_call_check). */
	(void)sess_meta_budget(call->params, &b, NULL, 0);
	return b;
}

int
sess_meta_budget(const cJSON *params, size_t *budget, char *msg, size_t len)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
	    params, "_meta"), MCP_BUDGET_META);

	if (v == NULL)
		return 0;
	if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) ||
	    v->valuedouble < MCP_BUDGET_MIN || v->valuedouble > MCP_BUDGET_MAX) {
		if (msg != NULL)
			snprintf(msg, len, "Invalid params: _meta[\"" MCP_BUDGET_META "\"] is the "
			    "result budget in bytes of text: an integer from %d to %d (default %d)",
			    MCP_BUDGET_MIN, MCP_BUDGET_MAX, MCP_BUDGET_DEFAULT);
		return -1;
	}
	*budget = (size_t)v->valuedouble;
	return 0;
}

void
mcp_call_local_set_budget(struct mcp_call *call, size_t budget)
{
	call->local_budget = budget < MCP_BUDGET_MIN ? MCP_BUDGET_MIN :
	    budget > MCP_BUDGET_LOCAL ? MCP_BUDGET_LOCAL : budget;
}

/* --- text within a budget ------------------------------------------------ */

void
mcp_text_init(struct mcp_text *t, size_t budget)
{
	buf_init(&t->b, budget);
	t->budget = budget;
	t->max = budget > 2 * NOTE_ROOM ? budget - NOTE_ROOM : budget / 2;
	t->cut = 0;
}

void
mcp_text_free(struct mcp_text *t)
{
	buf_free(&t->b);
}

size_t
mcp_text_room(const struct mcp_text *t)
{
	return t->b.len < t->max ? t->max - t->b.len : 0;
}

void
mcp_text_add(struct mcp_text *t, const char *s, size_t n)
{
	size_t room = mcp_text_room(t), k = n;

	if (n > room)
		k = utf8_complete_prefix(s, room);
	if (k > 0)
		buf_append(&t->b, s, k);
	t->cut += n - k;
}

void
mcp_text_printf(struct mcp_text *t, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		fatal("out of memory");
	mcp_text_add(t, s, (size_t)n);
	free(s);
}

char *
mcp_text_finish(struct mcp_text *t)
{
	if (t->cut > 0) {
		char a[32], b[32];
		/* Past max: the room kept for this line. */
		buf_printf(&t->b, "\n[%s more did not fit this result's budget of %s bytes: "
		    "ask for less, or page]", mcp_fmt_size(t->cut, a, sizeof a),
		    mcp_fmt_count(t->budget, b, sizeof b));
	}
	if (t->b.data == NULL)
		return xstrdup("");
	return buf_steal(&t->b);
}

/* --- numbers ------------------------------------------------------------- */

char *
mcp_fmt_size(uint64_t n, char *buf, size_t len)
{
	static const char *const unit[] = { "KB", "MB", "GB", "TB" };
	double v = (double)n;
	size_t u = 0;

	if (n < 1024) {
		snprintf(buf, len, "%" PRIu64 " B", n);
		return buf;
	}
	v /= 1024;
	while (v >= 1024 && u + 1 < ARRAY_SIZE(unit)) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%.1f %s", v, unit[u]);
	return buf;
}

char *
mcp_fmt_ms(int64_t ms, char *buf, size_t len)
{
	int64_t s = ms / 1000;

	if (ms < 0)
		ms = 0;
	if (ms < 100)
		snprintf(buf, len, "%" PRId64 " ms", ms);
	else if (ms < 60000)
		snprintf(buf, len, "%.1f s", (double)ms / 1000);
	else if (s < 3600)
		snprintf(buf, len, "%" PRId64 " min %" PRId64 " s", s / 60, s % 60);
	else
		snprintf(buf, len, "%" PRId64 " h %" PRId64 " min", s / 3600, s / 60 % 60);
	return buf;
}

char *
mcp_fmt_count(uint64_t n, char *buf, size_t len)
{
	char d[24];
	size_t k = (size_t)snprintf(d, sizeof d, "%" PRIu64, n), o = 0;

	for (size_t i = 0; i < k && o + 2 < len; i++) {
		if (i > 0 && (k - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = d[i];
	}
	buf[o < len ? o : len - 1] = '\0';
	return buf;
}

/* --- cuts ----------------------------------------------------------------- */

/* The unit of s at i: a valid character, or one byte that is not one (and
 * becomes U+FFFD, as mcp_utf8_lossy makes it); its length, and in *cost what it
 * costs in a JSON string once made text. */
static size_t
unit(const char *s, size_t n, size_t i, size_t *cost)
{
	unsigned char c = (unsigned char)s[i];
	size_t k = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;

	if (c == 0 || (c >= 0x80 && (i + k > n || !utf8_valid(s + i, k)))) {
		*cost = 3;
		return 1;
	}
	if (c >= 0x80)
		*cost = k;
	else if (c == '"' || c == '\\')
		*cost = 2;
	else if (c >= 0x20)
		*cost = 1;
	else
		*cost = c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t' ? 2 : 6;
	return k;
}

size_t
mcp_json_cost(const char *s, size_t n)
{
	size_t c = 0, u;

	for (size_t i = 0; i < n; c += u)
		i += unit(s, n, i, &u);
	return c;
}

size_t
mcp_json_size(const cJSON *v)
{
	char *t = cJSON_PrintUnformatted(v);
	size_t n;

	if (t == NULL)
		fatal("out of memory");
	n = strlen(t);
	free(t);
	return n;
}

size_t
mcp_fit_head(const char *s, size_t n, size_t max)
{
	size_t c = 0, k = 0, u, len;

	while (k < n) {
		len = unit(s, n, k, &u);
		if (c + u > max)
			break;
		c += u;
		k += len;
	}
	if (k == n)
		return n;
	for (size_t i = k; i > k - k / 4; i--)
		if (s[i - 1] == '\n')
			return i;
	return k;
}

size_t
mcp_fit_tail(const char *s, size_t n, size_t max)
{
	/* Every byte costs at least 1: the tail starts no earlier than n - max. */
	size_t st = n > max ? n - max : 0, c = 0, u;

	for (int k = 0; st > 0 && st < n && k < 3 && ((unsigned char)s[st] & 0xc0) == 0x80; k++)
		st++;
	for (size_t i = st; i < n; c += u)
		i += unit(s, n, i, &u);
	while (c > max && st < n) {
		st += unit(s, n, st, &u);
		c -= u;
	}
	if (st == 0)
		return 0;
	for (size_t i = st; i < n && i < st + (n - st) / 4; i++)
		if (s[i] == '\n')
			return i + 1;
	return st;
}

void
mcp_share(const size_t *need, size_t *give, size_t n, size_t budget)
{
	size_t left = budget, *order = xcalloc(n ? n : 1, sizeof *order);

	for (size_t i = 0; i < n; i++)
		order[i] = i;
	/* Smallest need first (n is a handful). */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && need[order[j]] < need[order[j - 1]]; j--) {
			size_t x = order[j];
			order[j] = order[j - 1];
			order[j - 1] = x;
		}
	for (size_t i = 0; i < n; i++) {
		size_t even = left / (n - i), k = order[i];
		give[k] = need[k] < even ? need[k] : even;
		left -= give[k];
	}
	free(order);
}

/* --- cursors -------------------------------------------------------------- */

int
mcp_cursor_offset(const char *cursor, int64_t *offset)
{
	size_t n = cursor ? strlen(cursor) : 0;

	*offset = 0;
	if (n == 0)
		return 0;
	if (n > 15 || strspn(cursor, "0123456789") != n)
		return -1;
	*offset = strtoll(cursor, NULL, 10);
	return 0;
}

const char *
mcp_cursor_make(int64_t offset, char *buf, size_t len)
{
	snprintf(buf, len, "%" PRId64, offset);
	return buf;
}

void
mcp_text_page(struct mcp_text *t, uint64_t off, size_t n, const char *next)
{
	char a[32], b[32];

	if (n > 0 && (off > 0 || next != NULL))
		mcp_text_printf(t, "; %s to %s below", mcp_fmt_count(off + 1, a, sizeof a),
		    mcp_fmt_count(off + n, b, sizeof b));
	else if (n == 0 && off > 0)
		mcp_text_printf(t, "; none after entry %s", mcp_fmt_count(off, a, sizeof a));
	if (next != NULL)
		mcp_text_printf(t, "; the next page: cursor \"%s\"", next);
}

/* --- the generic rendering ------------------------------------------------ */

static void
scalar(struct mcp_text *t, const cJSON *v)
{
	if (cJSON_IsString(v))
		mcp_text_add(t, v->valuestring, strlen(v->valuestring));
	else if (cJSON_IsBool(v))
		mcp_text_add(t, cJSON_IsTrue(v) ? "true" : "false", cJSON_IsTrue(v) ? 4 : 5);
	else if (cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) &&
	    fabs(v->valuedouble) < 1e15)
		mcp_text_printf(t, "%.0f", v->valuedouble);
	else if (cJSON_IsNumber(v))
		mcp_text_printf(t, "%g", v->valuedouble);
	else {
		char *j = cJSON_PrintUnformatted(v);
		if (j == NULL)
			fatal("out of memory");
		mcp_text_add(t, j, strlen(j));
		free(j);
	}
}

/* An object on one line: "k=v, k=v" (nested values as JSON). */
static void
inline_object(struct mcp_text *t, const cJSON *o)
{
	const cJSON *m;
	int first = 1;

	cJSON_ArrayForEach(m, o) {
		if (cJSON_IsNull(m))
			continue;
		mcp_text_printf(t, "%s%s=", first ? "" : ", ", m->string);
		scalar(t, m);
		first = 0;
	}
}

static void
member(struct mcp_text *t, const char *prefix, const cJSON *m)
{
	const cJSON *x;

	if (cJSON_IsNull(m))
		return;
	if (cJSON_IsObject(m)) {
		char *p = xasprintf("%s%s.", prefix, m->string);
		cJSON_ArrayForEach(x, m)
			member(t, p, x);
		free(p);
		return;
	}
	mcp_text_printf(t, "%s%s:", prefix, m->string);
	if (cJSON_IsArray(m) && cJSON_IsObject(m->child)) {
		mcp_text_printf(t, " %d\n", cJSON_GetArraySize(m));
		cJSON_ArrayForEach(x, m) {
			mcp_text_add(t, "- ", 2);
			inline_object(t, x);
			mcp_text_add(t, "\n", 1);
		}
		return;
	}
	if (cJSON_IsArray(m)) {
		int first = 1;
		cJSON_ArrayForEach(x, m) {
			mcp_text_add(t, first ? " " : ", ", first ? 1 : 2);
			scalar(t, x);
			first = 0;
		}
		mcp_text_add(t, "\n", 1);
		return;
	}
	if (cJSON_IsString(m) && strchr(m->valuestring, '\n') != NULL) {
		mcp_text_add(t, "\n", 1);
		scalar(t, m);
		if (m->valuestring[strlen(m->valuestring) - 1] != '\n')
			mcp_text_add(t, "\n", 1);
		return;
	}
	mcp_text_add(t, " ", 1);
	scalar(t, m);
	mcp_text_add(t, "\n", 1);
}

void
mcp_render_generic(const cJSON *result, struct mcp_text *t)
{
	const cJSON *m;

	if (cJSON_IsObject(result) && result->child != NULL && result->child->next == NULL &&
	    cJSON_IsString(result->child)) {
		scalar(t, result->child);
		return;
	}
	if (!cJSON_IsObject(result)) {
		scalar(t, result);
		return;
	}
	cJSON_ArrayForEach(m, result)
		member(t, "", m);
	/* No trailing newline: a text block ends where its content does. */
	while (t->b.len > 0 && t->b.data[t->b.len - 1] == '\n')
		t->b.data[--t->b.len] = '\0';
}

/* --- the line guard ------------------------------------------------------- */

char *
mcp_line_cut(const char *text, size_t len)
{
	cJSON *m = cJSON_ParseWithLength(text, len), *r, *o;
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "id");
	const char *method = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "method"));
	const cJSON *content;
	char size[48], lim[48], a[32], *out;

	snprintf(size, sizeof size, "%s bytes", mcp_fmt_count(len, a, sizeof a));
	snprintf(lim, sizeof lim, "%s bytes", mcp_fmt_count(MCP_LINE_OUT_MAX, a, sizeof a));
	if (m == NULL) {
		log_warnx("mcp: dropped a message of %s that is not JSON", size);
		return NULL;
	}
	if (method != NULL) {
		log_warnx("mcp: a %s message of %s is over the %s line limit: not sent", method,
		    size, lim);
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "jsonrpc", "2.0");
		cJSON_AddStringToObject(o, "method", "notifications/message");
		r = cJSON_AddObjectToObject(o, "params");
		cJSON_AddStringToObject(r, "level", "warning");
		cJSON_AddStringToObject(r, "logger", "sbxtop");
		out = xasprintf("a %s message of %s was not sent: it is over the %s a line may "
		    "hold", method, size, lim);
		cJSON_AddStringToObject(r, "data", out);
		free(out);
		goto done;
	}
	r = cJSON_GetObjectItemCaseSensitive(m, "result");
	content = cJSON_GetObjectItemCaseSensitive(r, "content");
	log_warnx("mcp: an answer of %s is over the %s line limit: cut", size, lim);
	if (cJSON_IsArray(content)) {
		/* A tool result: its text's start, and what happened to the rest. */
		const char *t0 = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		    cJSON_GetArrayItem(content, 0), "text"));
		struct mcp_text t;
		cJSON *c, *b;
		char *said;

		mcp_text_init(&t, MCP_BUDGET_DEFAULT);
		mcp_text_printf(&t, "This result was cut: it was %s, over the %s a line may "
		    "hold, so its structuredContent and the rest of its text were left out. "
		    "Ask for less (a narrower path, a page, a smaller budget). Its text "
		    "began:\n", size, lim);
		if (t0 != NULL)
			mcp_text_add(&t, t0, mcp_fit_head(t0, strlen(t0), mcp_text_room(&t)));
		said = mcp_text_finish(&t);
		cJSON_DeleteItemFromObjectCaseSensitive(r, "structuredContent");
		cJSON_DeleteItemFromObjectCaseSensitive(r, "content");
		cJSON_DeleteItemFromObjectCaseSensitive(r, "isError");
		c = cJSON_AddArrayToObject(r, "content");
		b = cJSON_CreateObject();
		cJSON_AddStringToObject(b, "type", "text");
		cJSON_AddStringToObject(b, "text", said);
		cJSON_AddItemToArray(c, b);
		cJSON_AddBoolToObject(r, "isError", 1);
		free(said);
		o = steal_pointer(&m);
		goto done;
	}
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "jsonrpc", "2.0");
	cJSON_AddItemToObject(o, "id", id ? cJSON_Duplicate(id, 1) : cJSON_CreateNull());
	r = cJSON_AddObjectToObject(o, "error");
	cJSON_AddNumberToObject(r, "code", -32603);
	out = xasprintf("Internal error: the answer was %s, over the %s a line may hold, and "
	    "was not sent; ask for less", size, lim);
	cJSON_AddStringToObject(r, "message", out);
	free(out);
done:
	cJSON_Delete(m);
	out = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (out == NULL)
		fatal("out of memory");
	return out;
}
