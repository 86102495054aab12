/* sandbox_vm_logs: the most recent lines of a sandbox's agent and console logs,
 * merged in time order, optionally only the last since_s seconds. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "lib/util.h"
#include "mcp/tool-util.h"

#define TAIL_BYTES	(4u << 20)	/* read at most this much of each log's end */
#define LIMIT_DEF	200
#define LIMIT_MAX	5000

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
	/* Never through a symlink the sandbox put there (open_regular_nofollow). */
	_cleanup_close_ int fd = open_regular_nofollow(path);
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	off_t from;
	ssize_t got;
	size_t len = 0;
	int64_t last_ts = -1;
	char *p, *end;

	if (fd < 0 || fstat(fd, &st) < 0)
		return;
	from = st.st_size > (off_t)TAIL_BYTES ? st.st_size - (off_t)TAIL_BYTES : 0;
	buf = xmalloc(TAIL_BYTES + 1);
	while (len < TAIL_BYTES && (got = pread(fd, buf + len, TAIL_BYTES - len,
	    from + (off_t)len)) != 0) {
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return;
		len += (size_t)got;
	}
	buf[len] = '\0';
	p = buf;
	end = buf + len;
	if (from > 0 && (p = memchr(buf, '\n', len)) != NULL)
		p++;
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
	int64_t limit = mcp_arg_int(args, "limit", LIMIT_DEF);
	double since = mcp_arg_num(args, "since_s", -1);
	_cleanup_free_ char *agent = NULL, *console = NULL;
	struct lines l = { NULL, 0, 0 };
	struct sbx_err sub;
	int64_t cutoff = since >= 0 ? wall_ms() - (int64_t)(since * 1000) : -1;
	size_t first;
	cJSON *arr;

	if (id == NULL)
		return -1;
	if (limit < 1 || limit > LIMIT_MAX)
		return sbx_error(e, SBX_EINVAL, NULL, "limit must be between 1 and %d", LIMIT_MAX);
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
	*result = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(*result, "lines");
	first = l.n > (size_t)limit ? l.n - (size_t)limit : 0;
	for (size_t i = 0; i < l.n; i++) {
		if (i >= first && (cutoff < 0 || l.v[i].ts < 0 || l.v[i].ts >= cutoff))
			cJSON_AddItemToArray(arr, cJSON_CreateString(l.v[i].text));
		free(l.v[i].text);
	}
	free(l.v);
	return 0;
}

const struct mcp_tool mcp_tool_vm_logs = {
	.name = "sandbox_vm_logs",
	.title = "Sandbox logs",
	.description =
	    "The most recent lines of the sandbox's own logs (not your commands' output): "
	    "its agent log (each command started and how it ended, file operations, "
	    "errors) and its console log, merged in time order, each line prefixed with "
	    "\"agent: \" or \"console: \". limit (default 200, max 5000) caps the lines; "
	    "since_s keeps only lines from the last since_s seconds (lines without a "
	    "timestamp are kept). Works on suspended and terminated sandboxes too: use it "
	    "to find out why a sandbox stopped or a call failed.",
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{" MCP_SANDBOX_ID_PROP ","
	    "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":5000,\"default\":200},"
	    "\"since_s\":{\"type\":\"number\",\"minimum\":0,\"description\":\"Only lines from "
	    "the last since_s seconds.\"}"
	    "},\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
	.output_schema =
	    "{\"type\":\"object\",\"properties\":{\"lines\":{\"type\":\"array\","
	    "\"items\":{\"type\":\"string\"}}},\"required\":[\"lines\"]}",
	.hints = MCP_READONLY | MCP_IDEMPOTENT,
	.run = run,
};
