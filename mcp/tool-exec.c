/* sandbox_exec: run a command in a sandbox, streaming its output as progress
 * (each message what is new since the previous one), and answer with its output (capped per stream) and exit status; or
 * start it in the background. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/utf8.h"
#include "lib/util.h"
#include "mcp/tool-util.h"

#define EXEC_KEEP	(256u << 10)	/* per stream, kept for the result */
#define TAIL_KEEP	2048		/* output not yet in a progress message */
#define TIMEOUT_DEF	120
#define TIMEOUT_MAX	3600

struct exec_ctx {
	struct mcp_call	*call;
	struct buf	 out[2];	/* stdout, stderr */
	uint64_t	 dropped[2];
	char		 tail[TAIL_KEEP];
	size_t		 taillen;
	int		 tail_cut;	/* older unsent output was dropped */
	int64_t		 start_ms;
};

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
	int i = stream == 2;
	size_t kept = buf_append_some(&x->out[i], data, len);

	x->dropped[i] += len - kept;
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

static void
add_output(cJSON *o, const char *k, struct buf *b)
{
	/* The cap may have cut a character in two: drop its first half. */
	size_t n = b->data ? utf8_complete_prefix(b->data, b->len) : 0;
	_cleanup_free_ char *t = mcp_utf8_lossy(b->data ? b->data : "", n);

	cJSON_AddStringToObject(o, k, t);
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
	buf_init(&x.out[0], EXEC_KEEP);
	buf_init(&x.out[1], EXEC_KEEP);
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
		const char *name = sigabbrev_np(res.signo);
		char num[16];
		snprintf(num, sizeof num, "%d", res.signo);
		cJSON_AddStringToObject(*result, "signal", name ? name : num);
	} else {
		cJSON_AddNumberToObject(*result, "exit_code", res.exit_code);
	}
	add_output(*result, "stdout", &x.out[0]);
	add_output(*result, "stderr", &x.out[1]);
	cJSON_AddNumberToObject(*result, "duration_ms", (double)res.duration_ms);
	cJSON_AddBoolToObject(*result, "timed_out", res.timed_out);
	cJSON_AddStringToObject(*result, "reason", core_exec_reason(&res));
	cJSON_AddBoolToObject(*result, "truncated", res.truncated || x.dropped[0] || x.dropped[1]);
	cJSON_AddNumberToObject(*result, "stdout_dropped_bytes", (double)x.dropped[0]);
	cJSON_AddNumberToObject(*result, "stderr_dropped_bytes", (double)x.dropped[1]);
	cJSON_AddStringToObject(*result, "exec_id", res.exec_id);
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
	} else if (x.dropped[0] || x.dropped[1]) {
		cJSON_AddStringToObject(*result, "note", "output over 256 KiB per stream was "
		    "dropped: redirect it to a file (cmd > out.log 2>&1) and read the parts you "
		    "need with sandbox_read_file or tail/grep");
	}
out:
	buf_free(&x.out[0]);
	buf_free(&x.out[1]);
	return rc;
}

const struct mcp_tool mcp_tool_exec = {
	.name = "sandbox_exec",
	.title = "Run a command in a sandbox",
	.description =
	    "Run a shell command (bash -c COMMAND) in the sandbox, in /workspace unless cwd "
	    "says otherwise, as an unprivileged user unless as_root, and wait for it: the "
	    "result has its exit_code (or, when a signal killed it, the signal instead), "
	    "stdout, stderr (each kept up to 256 KiB; truncated:true when more was "
	    "dropped), duration_ms, timed_out and reason (exit, signal, timeout, or oom when "
	    "the OOM killer ended it at the memory limit). Pipes, redirections and && work. "
	    "Progress notifications carry the output new since the previous one while it runs. "
	    "timeout_s defaults to 120 (max 3600): at the deadline the command is killed "
	    "and timed_out is true. For servers and anything long-running use "
	    "background:true: it returns at once with pid, log_path (read it with "
	    "sandbox_read_file) and exec_id (for sandbox_process_list / "
	    "sandbox_process_kill). Bind servers to 0.0.0.0 and reach them with "
	    "sandbox_port_forward. Cancelling the request kills the command.",
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{" MCP_SANDBOX_ID_PROP ","
	    "\"command\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":131072,"
	    "\"description\":\"Shell command line, run with bash -c.\"},"
	    "\"cwd\":{\"type\":\"string\",\"description\":\"Working directory: absolute, or "
	    "relative to /workspace (default /workspace).\"},"
	    "\"timeout_s\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":3600,\"default\":120,"
	    "\"description\":\"Kill the command after this many seconds (foreground "
	    "default 120; background default: none).\"},"
	    "\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"},"
	    "\"description\":\"Extra environment variables.\"},"
	    "\"stdin\":{\"type\":\"string\",\"description\":\"Text written to the command's "
	    "standard input (UTF-8; without it stdin is empty).\"},"
	    "\"as_root\":{\"type\":\"boolean\",\"default\":false,\"description\":\"Run as "
	    "root inside the sandbox (e.g. apt-get install).\"},"
	    "\"background\":{\"type\":\"boolean\",\"default\":false,\"description\":\"Start "
	    "it and return at once; output goes to log_path.\"}"
	    "},\"required\":[\"sandbox_id\",\"command\"],\"additionalProperties\":false}",
	.output_schema =
	    "{\"type\":\"object\",\"properties\":{"
	    "\"exit_code\":{\"type\":\"integer\",\"description\":\"Absent when a signal "
	    "ended the command.\"},"
	    "\"signal\":{\"type\":\"string\",\"description\":\"The signal that ended it "
	    "(e.g. KILL, TERM); absent when it exited.\"},"
	    "\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"
	    "\"duration_ms\":{\"type\":\"integer\"},\"timed_out\":{\"type\":\"boolean\"},"
	    "\"reason\":{\"type\":\"string\",\"enum\":[\"exit\",\"signal\",\"timeout\",\"oom\"],"
	    "\"description\":\"How it ended; oom: the kernel's OOM killer ended it at the "
	    "sandbox's memory limit.\"},"
	    "\"truncated\":{\"type\":\"boolean\"},"
	    "\"stdout_dropped_bytes\":{\"type\":\"integer\"},"
	    "\"stderr_dropped_bytes\":{\"type\":\"integer\"},"
	    "\"note\":{\"type\":\"string\",\"description\":\"What to do about a timeout, an "
	    "OOM kill or dropped output.\"},"
	    "\"background\":{\"type\":\"boolean\"},\"pid\":{\"type\":\"integer\"},"
	    "\"log_path\":{\"type\":\"string\"},\"exec_id\":{\"type\":\"string\"}},"
	    "\"anyOf\":[{\"required\":[\"stdout\",\"stderr\","
	    "\"duration_ms\",\"timed_out\",\"truncated\"]},"
	    "{\"required\":[\"background\",\"pid\",\"log_path\",\"exec_id\"]}]}",
	.hints = MCP_TASK,
	.run = run,
};
