/* sandbox_process_list: the sandbox's running and recent commands (the agent's
 * exec journal), background jobs included: the running ones first, then the
 * newest that ended, a page within the call's budget with the totals and a
 * cursor. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/utf8.h"
#include "lib/util.h"
#include "mcp/budget.h"
#include "mcp/tool-util.h"

#define STATUS_ROOM	600	/* of the budget: the line before the commands */
#define COMMAND_SHOWN	300	/* bytes of a command line shown */

static void
copy_num(cJSON *to, const char *k, const cJSON *from, const char *fk)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(from, fk);

	if (cJSON_IsNumber(v))
		cJSON_AddNumberToObject(to, k, v->valuedouble);
}

static void
copy_str(cJSON *to, const char *k, const cJSON *from)
{
	const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(from, k));

	if (v != NULL)
		cJSON_AddStringToObject(to, k, v);
}

static cJSON *
process(const cJSON *x)
{
	cJSON *o = cJSON_CreateObject();
	double started = cJSON_GetNumberValue(cJSON_GetObjectItem(x, "started_ms"));
	const char *xid = cJSON_GetStringValue(cJSON_GetObjectItem(x, "id"));
	const char *cmd = cJSON_GetStringValue(cJSON_GetObjectItem(x, "command"));
	char t[40];

	cJSON_AddStringToObject(o, "exec_id", xid ? xid : "");
	copy_num(o, "pid", x, "pid");
	if (cmd != NULL && strlen(cmd) > COMMAND_SHOWN) {
		/* A long command line says little more than its start. */
		_cleanup_free_ char *c = xasprintf("%.*s...",
		    (int)utf8_complete_prefix(cmd, COMMAND_SHOWN), cmd);
		cJSON_AddStringToObject(o, "command", c);
	} else if (cmd != NULL) {
		cJSON_AddStringToObject(o, "command", cmd);
	}
	copy_str(o, "origin", x);
	copy_str(o, "state", x);
	copy_num(o, "exit_code", x, "exit_code");
	copy_str(o, "signal", x);
	copy_str(o, "reason", x);
	if (!isnan(started)) {
		mcp_iso8601((int64_t)started, t, sizeof t);
		cJSON_AddStringToObject(o, "started_at", t);
	}
	copy_num(o, "duration_ms", x, "duration_ms");
	cJSON_AddBoolToObject(o, "background", cJSON_IsTrue(cJSON_GetObjectItem(x, "background")));
	cJSON_AddBoolToObject(o, "timed_out", cJSON_IsTrue(cJSON_GetObjectItem(x, "timed_out")));
	copy_str(o, "log_path", x);
	copy_str(o, "stdout_path", x);
	copy_str(o, "stderr_path", x);
	return o;
}

static int
running(const cJSON *x)
{
	const char *st = cJSON_GetStringValue(cJSON_GetObjectItem(x, "state"));

	return st != NULL && strcmp(st, "running") == 0;
}

static int
run(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	const char *id = mcp_arg_need(args, "sandbox_id", e);
	size_t budget = mcp_call_budget(call), used = 0, room, n, k = 0;
	int64_t offset, nrun = 0;
	cJSON *execs = NULL, *arr, **order;
	const cJSON *x;
	char cur[32];

	if (id == NULL)
		return -1;
	if (mcp_arg_cursor(args, &offset, e) < 0)
		return -1;
	if (core_execs(mcp_call_core(call), id, &execs, e) < 0) {
		mcp_err_fix(e);
		return -1;
	}
	/* The journal is oldest first: the running ones in that order, then the
	 * ended ones newest first. */
	n = (size_t)cJSON_GetArraySize(execs);
	order = xcalloc(n ? n : 1, sizeof *order);
	cJSON_ArrayForEach(x, execs)
		if (running(x))
			order[k++] = (cJSON *)x;
	nrun = (int64_t)k;
	for (int i = (int)n - 1; i >= 0; i--)
		if (!running(cJSON_GetArrayItem(execs, i)))
			order[k++] = cJSON_GetArrayItem(execs, i);
	room = budget > 2 * STATUS_ROOM ? budget - STATUS_ROOM : budget / 2;
	*result = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(*result, "processes");
	for (k = offset < 0 ? 0 : (size_t)offset; k < n; k++) {
		cJSON *o = process(order[k]);
		size_t sz = mcp_json_size(o) + 1;
		if (used + sz > room) {
			cJSON_Delete(o);
			break;
		}
		used += sz;
		cJSON_AddItemToArray(arr, o);
	}
	cJSON_AddNumberToObject(*result, "total", (double)n);
	cJSON_AddNumberToObject(*result, "running", (double)nrun);
	cJSON_AddNumberToObject(*result, "offset", (double)offset);
	cJSON_AddBoolToObject(*result, "truncated", k < n);
	if (k < n)
		cJSON_AddStringToObject(*result, "next_cursor", mcp_cursor_make((int64_t)k, cur,
		    sizeof cur));
	free(order);
	cJSON_Delete(execs);
	return 0;
}

static void
render(const cJSON *r, struct mcp_text *t)
{
	const cJSON *it, *arr = cJSON_GetObjectItem(r, "processes");
	double total = cJSON_GetNumberValue(cJSON_GetObjectItem(r, "total"));
	double nrun = cJSON_GetNumberValue(cJSON_GetObjectItem(r, "running"));
	double off = cJSON_GetNumberValue(cJSON_GetObjectItem(r, "offset"));
	const char *next = cJSON_GetStringValue(cJSON_GetObjectItem(r, "next_cursor"));
	int n = cJSON_GetArraySize(arr);
	char a[32], b[32], c[32];

	mcp_text_printf(t, "%s command%s: %s running, %s ended (the newest 128 ended are kept)",
	    mcp_fmt_count((uint64_t)total, a, sizeof a), total == 1 ? "" : "s",
	    mcp_fmt_count((uint64_t)nrun, b, sizeof b),
	    mcp_fmt_count((uint64_t)(total - nrun), c, sizeof c));
	mcp_text_page(t, (uint64_t)off, (size_t)n, next);
	cJSON_ArrayForEach(it, arr) {
		const char *xid = cJSON_GetStringValue(cJSON_GetObjectItem(it, "exec_id"));
		const char *sig = cJSON_GetStringValue(cJSON_GetObjectItem(it, "signal"));
		const char *why = cJSON_GetStringValue(cJSON_GetObjectItem(it, "reason"));
		const char *cmd = cJSON_GetStringValue(cJSON_GetObjectItem(it, "command"));
		const char *log = cJSON_GetStringValue(cJSON_GetObjectItem(it, "log_path"));
		const cJSON *ec = cJSON_GetObjectItem(it, "exit_code");
		double dur = cJSON_GetNumberValue(cJSON_GetObjectItem(it, "duration_ms"));

		mcp_text_printf(t, "\n%s pid %.0f ", xid,
		    cJSON_GetNumberValue(cJSON_GetObjectItem(it, "pid")));
		if (running(it))
			mcp_text_printf(t, "running for %s", mcp_fmt_ms((int64_t)dur, a, sizeof a));
		else if (why != NULL && strcmp(why, "timeout") == 0)
			mcp_text_printf(t, "timed out after %s", mcp_fmt_ms((int64_t)dur, a, sizeof a));
		else if (why != NULL && strcmp(why, "oom") == 0)
			mcp_text_printf(t, "OOM-killed after %s", mcp_fmt_ms((int64_t)dur, a, sizeof a));
		else if (sig != NULL)
			mcp_text_printf(t, "killed by %s after %s", sig, mcp_fmt_ms((int64_t)dur, a,
			    sizeof a));
		else
			mcp_text_printf(t, "exit %.0f after %s", cJSON_IsNumber(ec) ? ec->valuedouble :
			    -1, mcp_fmt_ms((int64_t)dur, a, sizeof a));
		if (cJSON_IsTrue(cJSON_GetObjectItem(it, "background")))
			mcp_text_printf(t, ", background, log %s", log ? log : "?");
		mcp_text_printf(t, ": %s", cmd ? cmd : "");
	}
}

const struct mcp_tool mcp_tool_process_list = {
	.name = "sandbox_process_list",
	.title = "List commands",
	.description =
	    "The sandbox's commands, running ones first, with exec_id, "
	    "pid, state and log_path.",
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{" MCP_SANDBOX_ID_PROP
	    ",\"cursor\":{\"type\":\"string\"}},\"required\":[\"sandbox_id\"]}",
	.output_schema =
	    "{\"type\":\"object\",\"properties\":{\"processes\":{\"type\":\"arr"
	    "ay\",\"items\":{\"type\":\"object\",\"properties\":{\"exec_id\":{\""
	    "type\":\"string\"},\"pid\":{\"type\":\"integer\"},\"command\":{\"t"
	    "ype\":\"string\",\"description\":\"Its first 300 bytes.\"},"
	    "\"origin\":{\"type\":\"string\",\"description\":\"Who started "
	    "it.\"},\"state\":{\"enum\":[\"running\",\"exited\"]},\"exit_code\""
	    ":{\"type\":\"integer\",\"description\":\"Absent while it runs,"
	    " and when a signal ended it.\"},\"signal\":{\"type\":\"string\","
	    "\"description\":\"The signal that ended it, if one did.\"},"
	    "\"reason\":{\"type\":\"string\",\"description\":\"Once it "
	    "ended: exit, signal, timeout, or oom.\"},\"started_at\":{\"type\":"
	    "\"string\",\"description\":\"RFC 3339, UTC.\",\"format\":\"date-ti"
	    "me\"},\"duration_ms\":{\"type\":\"integer\"},\"background\":{\"typ"
	    "e\":\"boolean\"},\"timed_out\":{\"type\":\"boolean\"},\"log_path\""
	    ":{\"type\":\"string\"},\"stdout_path\":{\"type\":\"string\"},"
	    "\"stderr_path\":{\"type\":\"string\"}},\"required\":[\"exec_id\","
	    "\"background\"]}},\"total\":{\"type\":\"integer\",\"description\":"
	    "\"Commands in the journal: the running ones and the last 128 "
	    "that ended.\"},\"running\":{\"type\":\"integer\"},\"offset\":{\"ty"
	    "pe\":\"integer\"},\"truncated\":{\"type\":\"boolean\",\"descriptio"
	    "n\":\"More follow: next_cursor pages on.\"},\"next_cursor\":{\"typ"
	    "e\":\"string\"}},\"required\":[\"processes\",\"total\",\"truncated"
	    "\"]}",
	.hints = MCP_READONLY | MCP_IDEMPOTENT,
	.run = run,
	.render = render,
};
