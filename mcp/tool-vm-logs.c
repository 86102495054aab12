/* sandbox_vm_logs: the most recent lines of a sandbox's agent and console logs,
 * merged in time order, optionally only the last since_s seconds: the newest that
 * fit the call's budget, with how many there are and a cursor to older ones. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "lib/utf8.h"
#include "lib/util.h"
#include "mcp/budget.h"
#include "mcp/tool-util.h"

#define TAIL_BYTES	(4u << 20)	/* read at most this much of each log's end */
#define LIMIT_DEF	200
#define LIMIT_MAX	5000
#define LINE_SHOWN	1000		/* bytes of one line given */
#define STATUS_ROOM	400		/* of the budget: the first line */

struct line {
	int64_t		 ts;	/* ms; -1: unknown */
	const char	*src;
	size_t		 seq;	/* place in its file */
	char		*text;
};

struct lines {
	struct line	*v;
	size_t		 n, cap;
};

/* "2025-01-31T12:00:00.123Z ..." at the start of a line: its time in ms, or -1. */
static int64_t
line_time(const char *s, size_t n)
{
	struct tm tm = { 0 };
	int ms = 0, used = 0;
	char frac[4] = "";

	if (n < 20 || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon,
	    &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &used) != 6 || used != 19)
		return -1;
	if (s[19] == '.' && n >= 23) {
		memcpy(frac, s + 20, 3);
		ms = atoi(frac);
	}
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (int64_t)timegm(&tm) * 1000 + ms;
}

/* The last TAIL_BYTES of path, split into lines (the first, cut, dropped). */
static void
read_tail(const char *path, const char *src, struct lines *out)
{
	/* Never through a symlink the sandbox put there (tail_read). */
	size_t len = 0;
	_cleanup_free_ char *buf = tail_read(path, TAIL_BYTES, &len);
	int64_t last_ts = -1;
	char *p = buf, *end = buf != NULL ? buf + len : NULL;

	while (p != NULL && p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t k = nl ? (size_t)(nl - p) : (size_t)(end - p);
		int64_t ts = line_time(p, k);
		if (k > 0) {
			if (ts < 0)
				ts = last_ts;	/* a continuation goes with its line */
			last_ts = ts;
			if (out->n == out->cap) {
				out->cap = out->cap ? 2 * out->cap : 256;
				out->v = xrealloc(out->v, out->cap * sizeof *out->v);
			}
			_cleanup_free_ char *t = mcp_utf8_lossy(p, k);
			out->v[out->n].ts = ts;
			out->v[out->n].src = src;
			out->v[out->n].seq = out->n;
			out->v[out->n].text = xasprintf("%s: %s", src, t);
			out->n++;
		}
		p = nl ? nl + 1 : end;
	}
}

static int
by_time(const void *a, const void *b)
{
	const struct line *x = a, *y = b;

	/* Untimed lines sort first; qsort is not stable, so ties fall back to the
	 * source and then the order within the file. */
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->src != y->src)
		return strcmp(x->src, y->src);
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int
run(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	struct core *c = mcp_call_core(call);
	const char *id = mcp_arg_need(args, "sandbox_id", e);
	int64_t limit = mcp_arg_int(args, "limit", LIMIT_DEF), skip;
	double since = mcp_arg_num(args, "since_s", -1);
	_cleanup_free_ char *agent = NULL, *console = NULL;
	struct lines l = { NULL, 0, 0 };
	struct sbx_err sub;
	int64_t cutoff = since >= 0 ? wall_ms() - (int64_t)(since * 1000) : -1;
	size_t budget = mcp_call_budget(call), used = 0, first, nwin = 0, k;
	cJSON *arr;
	char cur[32];

	if (id == NULL)
		return -1;
	if (limit < 1 || limit > LIMIT_MAX)
		return sbx_error(e, SBX_EINVAL, NULL, "limit must be between 1 and %d", LIMIT_MAX);
	if (mcp_arg_cursor(args, &skip, e) < 0)
		return -1;
	if ((agent = core_log_path(c, id, "agent", e)) == NULL) {
		mcp_err_fix(e);
		return -1;
	}
	console = core_log_path(c, id, "console", &sub);
	read_tail(agent, "agent", &l);
	if (console != NULL)
		read_tail(console, "console", &l);
	if (l.n > 1)	/* l.v is NULL when both logs are empty or unreadable */
		qsort(l.v, l.n, sizeof *l.v, by_time);
	/* The window: since_s's lines, newest last; the page ends skip lines
	 * before its end and holds what limit and the budget allow. */
	for (size_t i = 0; i < l.n; i++)
		if (cutoff < 0 || l.v[i].ts < 0 || l.v[i].ts >= cutoff)
			l.v[nwin++] = l.v[i];
		else
			free(l.v[i].text);
	k = (size_t)skip < nwin ? nwin - (size_t)skip : 0;
	first = k;
	while (first > 0 && k - first < (size_t)limit) {
		size_t n = strlen(l.v[first - 1].text), cost;
		cost = n > LINE_SHOWN ? mcp_json_cost(l.v[first - 1].text, LINE_SHOWN) + 6 :
		    mcp_json_cost(l.v[first - 1].text, n) + 3;
		if (used + cost + STATUS_ROOM > budget)
			break;
		used += cost;
		first--;
	}
	*result = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(*result, "lines");
	for (size_t i = first; i < k; i++) {
		char *t = l.v[i].text;
		if (strlen(t) > LINE_SHOWN) {
			_cleanup_free_ char *cut = xasprintf("%.*s...",
			    (int)utf8_complete_prefix(t, LINE_SHOWN), t);
			cJSON_AddItemToArray(arr, cJSON_CreateString(cut));
		} else {
			cJSON_AddItemToArray(arr, cJSON_CreateString(t));
		}
	}
	for (size_t i = 0; i < nwin; i++)
		free(l.v[i].text);
	free(l.v);
	cJSON_AddNumberToObject(*result, "total", (double)nwin);
	cJSON_AddNumberToObject(*result, "newer", (double)(nwin - k));
	if (first > 0)
		cJSON_AddStringToObject(*result, "next_cursor",
		    mcp_cursor_make((int64_t)(nwin - first), cur, sizeof cur));
	return 0;
}

static void
render(const cJSON *r, struct mcp_text *t)
{
	const cJSON *it, *arr = cJSON_GetObjectItem(r, "lines");
	double total = cJSON_GetNumberValue(cJSON_GetObjectItem(r, "total"));
	double newer = cJSON_GetNumberValue(cJSON_GetObjectItem(r, "newer"));
	const char *next = cJSON_GetStringValue(cJSON_GetObjectItem(r, "next_cursor"));
	int n = cJSON_GetArraySize(arr);
	char a[32], b[32];

	mcp_text_printf(t, "%s log line%s", mcp_fmt_count((uint64_t)total, a, sizeof a),
	    total == 1 ? "" : "s");
	if (n < total)
		mcp_text_printf(t, "; %s below%s%s", mcp_fmt_count((uint64_t)n, a, sizeof a),
		    newer > 0 ? ", before the newest " : ", the newest",
		    newer > 0 ? mcp_fmt_count((uint64_t)newer, b, sizeof b) : "");
	if (next != NULL)
		mcp_text_printf(t, "; older ones: cursor \"%s\"", next);
	cJSON_ArrayForEach(it, arr)
		mcp_text_printf(t, "\n%s", it->valuestring);
}

const struct mcp_tool mcp_tool_vm_logs = {
	.name = "sandbox_vm_logs",
	.title = "Sandbox logs",
	.description =
	    "The sandbox's own logs (not your commands' output): why it "
	    "stopped or a call failed.",
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{" MCP_SANDBOX_ID_PROP
	    ",\"limit\":{\"type\":\"integer\"},\"since_s\":{\"type\":\"number\""
	    "},\"cursor\":{\"type\":\"string\"}},\"required\":[\"sandbox_id\"]}",
	.output_schema =
	    "{\"type\":\"object\",\"properties\":{\"lines\":{\"type\":\"array\""
	    ",\"items\":{\"type\":\"string\"}},\"total\":{\"type\":\"integer\"}"
	    ",\"newer\":{\"type\":\"integer\"},\"next_cursor\":{\"type\":\"stri"
	    "ng\"}},\"required\":[\"lines\",\"total\"]}",
	.hints = MCP_READONLY | MCP_IDEMPOTENT,
	.run = run,
	.render = render,
};
