/* sandbox_exec: run a command in a sandbox, streaming its output as progress
 * (each message what is new since the previous one), and answer with its status
 * first and, within the call's budget, the head and the larger tail of each
 * stream; the agent keeps the whole output in the sandbox, where
 * sandbox_read_file pages through it.  Or start it in the background. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/jspec.h"
#include "lib/sig.h"
#include "lib/utf8.h"
#include "lib/util.h"
#include "mcp/budget.h"
#include "mcp/tool-util.h"

#define TAIL_KEEP	2048		/* output not yet in a progress message */
#define TIMEOUT_DEF	120
#define TIMEOUT_MAX	3600
#define STATUS_ROOM	1500		/* of the budget: the status, the headers, a note */
#define HEAD_SHARE	8		/* a cut stream's head gets 1/8 of its share */

static const char *const stream_name[2] = { "stdout", "stderr" };

/* What a stream's result may show: its first and its last budget bytes. */
struct capture {
	struct buf	 head;
	char		*ring;
	size_t		 cap, len, pos;	/* the ring: its size, bytes held, next write */
	uint64_t	 total;
};

struct exec_ctx {
	struct mcp_call	*call;
	struct capture	 out[2];
	char		 tail[TAIL_KEEP];
	size_t		 taillen;
	int		 tail_cut;	/* older unsent output was dropped */
	int64_t		 start_ms;
};

static void
capture_init(struct capture *c, size_t cap)
{
	buf_init(&c->head, cap);
	c->ring = xmalloc(cap);
	c->cap = cap;
	c->len = c->pos = 0;
	c->total = 0;
}

static void
capture_free(struct capture *c)
{
	buf_free(&c->head);
	free(c->ring);
}

static void
capture_add(struct capture *c, const char *p, size_t n)
{
	c->total += n;
	buf_append_some(&c->head, p, n);
	if (n >= c->cap) {
		memcpy(c->ring, p + n - c->cap, c->cap);
		c->len = c->cap;
		c->pos = 0;
		return;
	}
	for (size_t k; n > 0; p += k, n -= k) {
		k = c->cap - c->pos < n ? c->cap - c->pos : n;
		memcpy(c->ring + c->pos, p, k);
		c->pos = (c->pos + k) % c->cap;
		c->len = c->len + k > c->cap ? c->cap : c->len + k;
	}
}

/* The ring's bytes, oldest first (caller frees). */
static char *
capture_last(const struct capture *c)
{
	char *s = xmalloc(c->len + 1);
	size_t first = (c->pos + c->cap - c->len) % c->cap, k = c->cap - first;

	if (k > c->len)
		k = c->len;
	memcpy(s, c->ring + first, k);
	memcpy(s + k, c->ring, c->len - k);
	s[c->len] = '\0';
	return s;
}

static void
tail_add(struct exec_ctx *x, const char *p, size_t n)
{
	if (n >= TAIL_KEEP) {
		memcpy(x->tail, p + n - TAIL_KEEP, TAIL_KEEP);
		x->taillen = TAIL_KEEP;
		x->tail_cut = 1;
		return;
	}
	if (x->taillen + n > TAIL_KEEP) {
		size_t drop = x->taillen + n - TAIL_KEEP;
		memmove(x->tail, x->tail + drop, x->taillen - drop);
		x->taillen -= drop;
		x->tail_cut = 1;
	}
	memcpy(x->tail + x->taillen, p, n);
	x->taillen += n;
}

/* The output no progress message has carried yet (its last TAIL_KEEP bytes,
 * from a line start when cut), for the next one (caller frees). */
static char *
tail_new(const struct exec_ctx *x)
{
	size_t start = 0, end = x->taillen;

	if (x->tail_cut) {
		const char *nl = memchr(x->tail, '\n', end);
		if (nl != NULL && (size_t)(nl - x->tail) + 1 < end)
			start = (size_t)(nl - x->tail) + 1;
	}
	while (end > start && x->tail[end - 1] == '\n')
		end--;
	return mcp_utf8_lossy(x->tail + start, end - start);
}

static int
on_output(int stream, const char *data, size_t len, void *arg)
{
	struct exec_ctx *x = arg;

	capture_add(&x->out[stream == 2], data, len);
	tail_add(x, data, len);
	if (mcp_call_cancelled(x->call))
		return -1;
	_cleanup_free_ char *msg = tail_new(x);
	if (mcp_call_progress(x->call, (double)(now_ms() - x->start_ms) / 1000.0, 0, msg)) {
		x->taillen = 0;
		x->tail_cut = 0;
	}
	return 0;
}

static int
poll_cancel(void *arg)
{
	struct exec_ctx *x = arg;

	return mcp_call_cancelled(x->call);
}

/* Stream i into the result: all of it when its share holds it, else a head and
 * a tail (stdout and stdout_tail), with its size and where it is kept whole. */
static void
add_stream(cJSON *o, int i, const struct capture *c, size_t give,
    const struct core_exec_result *res)
{
	const char *name = stream_name[i];
	int whole = c->total == c->head.len;
	const char *h = c->head.data ? c->head.data : "";
	_cleanup_free_ char *last = whole ? NULL : capture_last(c);
	const char *t = whole ? h : last;
	size_t tn = whole ? c->head.len : c->len, hn, ts;
	char k[32];

	hn = mcp_fit_head(h, c->head.len, whole && mcp_json_cost(h, c->head.len) <= give ?
	    give : give / HEAD_SHARE);
	if (hn == c->head.len && whole) {
		_cleanup_free_ char *all = mcp_utf8_lossy(h, hn);
		cJSON_AddStringToObject(o, name, all);
	} else {
		ts = mcp_fit_tail(t, tn, give - mcp_json_cost(h, hn));
		_cleanup_free_ char *a = mcp_utf8_lossy(h, hn);
		_cleanup_free_ char *b = mcp_utf8_lossy(t + ts, tn - ts);
		/* The bytes of the stream neither shows: what to read back. */
		uint64_t from = c->total - (tn - ts);
		cJSON *gap;
		cJSON_AddStringToObject(o, name, a);
		snprintf(k, sizeof k, "%s_tail", name);
		cJSON_AddStringToObject(o, k, b);
		snprintf(k, sizeof k, "%s_omitted", name);
		gap = cJSON_AddObjectToObject(o, k);
		cJSON_AddNumberToObject(gap, "offset", (double)hn);
		cJSON_AddNumberToObject(gap, "length", (double)(from - hn));
	}
	snprintf(k, sizeof k, "%s_bytes", name);
	cJSON_AddNumberToObject(o, k, (double)c->total);
	if (res->kept_path[i][0] != '\0') {
		snprintf(k, sizeof k, "%s_path", name);
		cJSON_AddStringToObject(o, k, res->kept_path[i]);
		snprintf(k, sizeof k, "%s_kept", name);
		cJSON_AddNumberToObject(o, k, (double)res->kept[i]);
	}
}

static int
run(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	struct core *c = mcp_call_core(call);
	struct core_exec_opts o = { 0 };
	struct core_exec_result res;
	struct exec_ctx x = { .call = call };
	const cJSON *env = cJSON_GetObjectItemCaseSensitive(args, "env");
	const char *id = mcp_arg_need(args, "sandbox_id", e), *in;
	size_t budget = mcp_call_budget(call), need[2], give[2];
	char origin[96];
	int rc;

	if (id == NULL || (o.command = mcp_arg_need(args, "command", e)) == NULL)
		return -1;
	o.cwd = mcp_arg_str(args, "cwd");
	o.env = cJSON_IsObject(env) ? env : NULL;
	if ((in = mcp_arg_str(args, "stdin")) != NULL) {
		o.stdin_data = in;
		o.stdin_len = strlen(in);
	}
	o.background = mcp_arg_bool(args, "background", 0);
	o.as_root = mcp_arg_bool(args, "as_root", 0);
	o.timeout_s = mcp_arg_int(args, "timeout_s", o.background ? 0 : TIMEOUT_DEF);
	if (o.timeout_s < 0 || o.timeout_s > TIMEOUT_MAX || (!o.background && o.timeout_s == 0))
		return sbx_error(e, SBX_EINVAL, "run longer work with background:true",
		    "timeout_s must be between 1 and %d seconds", TIMEOUT_MAX);
	mcp_origin(call, origin, sizeof origin);
	o.origin = origin;
	o.cancelled = poll_cancel;
	capture_init(&x.out[0], budget);
	capture_init(&x.out[1], budget);
	x.start_ms = now_ms();
	rc = core_exec(c, id, &o, on_output, &x, &res, e);
	if (rc < 0) {
		if (mcp_call_cancelled(call))
			sbx_error(e, SBX_EIO, NULL, "the command was cancelled (and killed)");
		mcp_err_fix(e);
		goto out;
	}
	*result = cJSON_CreateObject();
	if (o.background) {
		cJSON_AddBoolToObject(*result, "background", 1);
		cJSON_AddNumberToObject(*result, "pid", res.pid);
		cJSON_AddStringToObject(*result, "log_path", res.log_path ? res.log_path : "");
		cJSON_AddStringToObject(*result, "exec_id", res.exec_id);
		free(res.log_path);
		goto out;
	}
	if (res.signo > 0) {
		const char *name = sig_name(res.signo);
		char num[16];
		snprintf(num, sizeof num, "%d", res.signo);
		cJSON_AddStringToObject(*result, "signal", name ? name : num);
	} else {
		cJSON_AddNumberToObject(*result, "exit_code", res.exit_code);
	}
	cJSON_AddStringToObject(*result, "reason", core_exec_reason(&res));
	cJSON_AddNumberToObject(*result, "duration_ms", (double)res.duration_ms);
	cJSON_AddBoolToObject(*result, "timed_out", res.timed_out);
	cJSON_AddStringToObject(*result, "exec_id", res.exec_id);
	/* The streams share what the budget leaves: one that needs little gets
	 * it, the other the rest. */
	for (int i = 0; i < 2; i++)
		need[i] = x.out[i].total == x.out[i].head.len ?
		    mcp_json_cost(x.out[i].head.data ? x.out[i].head.data : "", x.out[i].head.len) :
		    SIZE_MAX / 4;
	mcp_share(need, give, 2, budget > 2 * STATUS_ROOM ? budget - STATUS_ROOM : budget / 2);
	for (int i = 0; i < 2; i++)
		add_stream(*result, i, &x.out[i], give[i], &res);
	cJSON_AddBoolToObject(*result, "truncated", cJSON_HasObjectItem(*result, "stdout_tail") ||
	    cJSON_HasObjectItem(*result, "stderr_tail"));
	if (res.timed_out) {
		char note[200];
		snprintf(note, sizeof note, "the command timed out after %lld s and was killed: "
		    "raise timeout_s (max %d) or run it with background:true",
		    (long long)o.timeout_s, TIMEOUT_MAX);
		cJSON_AddStringToObject(*result, "note", note);
	} else if (res.oom) {
		cJSON_AddStringToObject(*result, "note", "the kernel's OOM killer ended the command "
		    "at the sandbox's memory limit (signal KILL, status 137): use less memory, or "
		    "create the sandbox with more (memory_mib); /tmp and /dev/shm count against it");
	}
out:
	capture_free(&x.out[0]);
	capture_free(&x.out[1]);
	return rc;
}

/* --- the text ------------------------------------------------------------- */

static const char *
field(const char *stream, const char *what, char *buf, size_t len)
{
	snprintf(buf, len, "%s_%s", stream, what);
	return buf;
}

/* A cut stream's omitted part: bytes [*off, *off + *len) of it. */
static int
omitted(const cJSON *r, const char *s, double *off, double *len)
{
	char k[32];
	const cJSON *g = cJSON_GetObjectItemCaseSensitive(r, field(s, "omitted", k, sizeof k));

	if (!cJSON_IsObject(g))
		return 0;
	*off = jnum(g, "offset", NAN);
	*len = jnum(g, "length", NAN);
	return 1;
}

/* "stdout: 2,000,000 bytes; the first 2,240 and the last 16,128 below" */
static void
stream_line(struct mcp_text *t, const cJSON *r, const char *s)
{
	char k[32], a[32], b[32];
	double total = jnum(r, field(s, "bytes", k, sizeof k), NAN), off, len;

	if (total == 0)
		return;
	mcp_text_printf(t, "%s: %s bytes", s, mcp_fmt_count((uint64_t)total, a, sizeof a));
	if (!omitted(r, s, &off, &len)) {
		mcp_text_add(t, ", all below\n", 12);
		return;
	}
	mcp_text_printf(t, "; the first %s and the last %s below\n",
	    mcp_fmt_count((uint64_t)off, a, sizeof a),
	    mcp_fmt_count((uint64_t)(total - off - len), b, sizeof b));
}

/* Where what was left out is, and how to read it. */
static void
kept_line(struct mcp_text *t, const cJSON *r, const char *s)
{
	char k[32], a[32], b[32], c[32];
	const char *path = jstr(r, field(s, "path", k, sizeof k), NULL);
	double total = jnum(r, field(s, "bytes", k, sizeof k), NAN);
	double kept = jnum(r, field(s, "kept", k, sizeof k), NAN), off, len;

	if (!omitted(r, s, &off, &len))
		return;
	if (path == NULL) {
		mcp_text_printf(t, "The %s bytes of %s left out are not kept: run the command "
		    "again with its output redirected to a file (> out.log 2>&1) and read that "
		    "with sandbox_read_file.\n", mcp_fmt_count((uint64_t)len, a, sizeof a), s);
		return;
	}
	mcp_text_printf(t, "The %s bytes of %s left out are in the sandbox: sandbox_read_file "
	    "path %s offset %s length %s (pages of up to the budget)",
	    mcp_fmt_count((uint64_t)len, a, sizeof a), s, path,
	    mcp_cursor_make((int64_t)off, b, sizeof b), mcp_cursor_make((int64_t)len, c,
	    sizeof c));
	if (kept < total)
		mcp_text_printf(t, "; the file holds the first %s of %s", mcp_fmt_size(
		    (uint64_t)kept, a, sizeof a), mcp_fmt_size((uint64_t)total, b, sizeof b));
	mcp_text_add(t, ".\n", 2);
}

static void
stream_body(struct mcp_text *t, const cJSON *r, const char *s)
{
	char k[32], a[32], b[32];
	const char *head = jstr(r, s, NULL), *tail = jstr(r, field(s, "tail", k, sizeof k), NULL);
	double total = jnum(r, field(s, "bytes", k, sizeof k), NAN), off, len;
	size_t hn = head ? strlen(head) : 0;

	if (total == 0 || head == NULL)
		return;
	if (!omitted(r, s, &off, &len) || tail == NULL) {
		mcp_text_printf(t, "\n--- %s ---\n", s);
		mcp_text_add(t, head, hn);
		return;
	}
	mcp_text_printf(t, "\n--- %s: bytes 0 to %s ---\n", s,
	    mcp_fmt_count((uint64_t)off, a, sizeof a));
	mcp_text_add(t, head, hn);
	if (hn > 0 && head[hn - 1] != '\n')
		mcp_text_add(t, "\n", 1);
	mcp_text_printf(t, "--- %s: bytes %s to %s left out ---\n", s,
	    mcp_fmt_count((uint64_t)off, a, sizeof a),
	    mcp_fmt_count((uint64_t)(off + len), b, sizeof b));
	mcp_text_printf(t, "--- %s: bytes %s to %s ---\n", s,
	    mcp_fmt_count((uint64_t)(off + len), a, sizeof a),
	    mcp_fmt_count((uint64_t)total, b, sizeof b));
	mcp_text_add(t, tail, strlen(tail));
}

static void
render(const cJSON *r, struct mcp_text *t)
{
	const char *sig = jstr(r, "signal", NULL), *why = jstr(r, "reason", NULL), *note = jstr(r, "note", NULL);
	char d[32];

	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "background"))) {
		mcp_text_printf(t, "started in the background: exec %s, pid %.0f\nIts output "
		    "goes to %s: read it with sandbox_read_file (offset, length to page). "
		    "sandbox_process_list shows whether it still runs; sandbox_process_kill "
		    "stops it.", jstr(r, "exec_id", NULL), jnum(r, "pid", NAN), jstr(r, "log_path", NULL));
		return;
	}
	mcp_fmt_ms((int64_t)jnum(r, "duration_ms", NAN), d, sizeof d);
	if (why != NULL && strcmp(why, "timeout") == 0)
		mcp_text_printf(t, "timed out after %s and was killed", d);
	else if (why != NULL && strcmp(why, "oom") == 0)
		mcp_text_printf(t, "killed by the OOM killer after %s", d);
	else if (sig != NULL)
		mcp_text_printf(t, "killed by signal %s after %s", sig, d);
	else
		mcp_text_printf(t, "exit %.0f after %s", jnum(r, "exit_code", NAN), d);
	mcp_text_printf(t, " (exec %s)", jstr(r, "exec_id", NULL));
	if (jnum(r, "stdout_bytes", NAN) == 0 && jnum(r, "stderr_bytes", NAN) == 0)
		mcp_text_add(t, "; no output", 11);
	mcp_text_add(t, "\n", 1);
	if (note != NULL)
		mcp_text_printf(t, "Note: %s.\n", note);
	for (int i = 0; i < 2; i++)
		stream_line(t, r, stream_name[i]);
	for (int i = 0; i < 2; i++)
		kept_line(t, r, stream_name[i]);
	/* stderr last: where a build's error is, the end of what a client keeps. */
	for (int i = 0; i < 2; i++)
		stream_body(t, r, stream_name[i]);
	while (t->b.len > 0 && t->b.data[t->b.len - 1] == '\n')
		t->b.data[--t->b.len] = '\0';
}

const struct mcp_tool mcp_tool_exec = {
	.name = "sandbox_exec",
	.title = "Run a command",
	.description =
	    "Run bash -c COMMAND in /workspace and wait (timeout_s 120 "
	    "by default): the exit status, then each stream, or its head "
	    "and tail (the whole stays in the sandbox). background:true "
	    "returns at once.",
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{" MCP_SANDBOX_ID_PROP
	    ",\"command\":{\"type\":\"string\"},\"cwd\":{\"type\":\"string\"},"
	    "\"timeout_s\":{\"type\":\"integer\"},\"env\":{\"type\":\"object\","
	    "\"additionalProperties\":{\"type\":\"string\"}},\"stdin\":{\"type\""
	    ":\"string\"},\"as_root\":{\"type\":\"boolean\"},\"background\":{\""
	    "type\":\"boolean\"}},\"required\":[\"sandbox_id\",\"command\"]}",
	.output_schema =
	    "{\"type\":\"object\",\"properties\":{\"exit_code\":{\"type\":\"int"
	    "eger\",\"description\":\"Absent when a signal ended the command.\""
	    "},\"signal\":{\"type\":\"string\",\"description\":\"The signal "
	    "that ended it (KILL, TERM, ...); absent when it exited.\"},"
	    "\"reason\":{\"enum\":[\"exit\",\"signal\",\"timeout\",\"oom\"],"
	    "\"description\":\"How it ended; oom: the kernel's OOM killer,"
	    " at the sandbox's memory limit.\"},\"duration_ms\":{\"type\":\"int"
	    "eger\"},\"timed_out\":{\"type\":\"boolean\"},\"stdout\":{\"type\":"
	    "\"string\",\"description\":\"All of stdout, or its head when "
	    "stdout_tail is there.\"},\"stdout_tail\":{\"type\":\"string\","
	    "\"description\":\"The end of a long stdout.\"},\"stdout_omitted\":"
	    "{\"type\":\"object\",\"properties\":{\"offset\":{\"type\":\"intege"
	    "r\"},\"length\":{\"type\":\"integer\"}},\"required\":[\"offset\","
	    "\"length\"],\"description\":\"The bytes of stdout between "
	    "its head and its tail: read them from stdout_path with sandbox_rea"
	    "d_file.\"},\"stdout_bytes\":{\"type\":\"integer\",\"description\":"
	    "\"stdout's whole size.\"},\"stdout_path\":{\"type\":\"string\","
	    "\"description\":\"Where the agent keeps all of stdout, inside "
	    "the sandbox.\"},\"stdout_kept\":{\"type\":\"integer\",\"descriptio"
	    "n\":\"How many of stdout's first bytes that file holds (at "
	    "most 16 MiB).\"},\"stderr\":{\"type\":\"string\",\"description\":\""
	    "As stdout, for stderr.\"},\"stderr_tail\":{\"type\":\"string\"},"
	    "\"stderr_omitted\":{\"type\":\"object\",\"properties\":{\"offset\""
	    ":{\"type\":\"integer\"},\"length\":{\"type\":\"integer\"}},"
	    "\"required\":[\"offset\",\"length\"]},\"stderr_bytes\":{\"type\":\""
	    "integer\"},\"stderr_path\":{\"type\":\"string\"},\"stderr_kept\":{"
	    "\"type\":\"integer\"},\"truncated\":{\"type\":\"boolean\","
	    "\"description\":\"A stream is cut here (stdout_tail or stderr_tail"
	    ").\"},\"note\":{\"type\":\"string\",\"description\":\"What "
	    "to do about a timeout or an OOM kill.\"},\"background\":{\"type\":"
	    "\"boolean\"},\"pid\":{\"type\":\"integer\"},\"log_path\":{\"type\""
	    ":\"string\",\"description\":\"Background: where its output "
	    "goes.\"},\"exec_id\":{\"type\":\"string\"}},\"required\":[\"exec_i"
	    "d\"],\"anyOf\":[{\"required\":[\"stdout\",\"stderr\",\"stdout_byte"
	    "s\",\"stderr_bytes\",\"duration_ms\",\"timed_out\",\"reason\","
	    "\"truncated\"]},{\"required\":[\"background\",\"pid\",\"log_path\""
	    ",\"exec_id\"]}]}",
	.hints = MCP_TASK,
	.run = run,
	.render = render,
};
