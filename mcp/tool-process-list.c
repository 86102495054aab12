/* sandbox_process_list: the sandbox's running and recent commands (the agent's
 * exec journal), background jobs included. */
#include <math.h>

#include "mcp/tool-util.h"

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

static int
run(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	const char *id = mcp_arg_need(args, "sandbox_id", e);
	cJSON *execs = NULL, *arr;
	const cJSON *x;

	if (id == NULL)
		return -1;
	if (core_execs(mcp_call_core(call), id, &execs, e) < 0) {
		mcp_err_fix(e);
		return -1;
	}
	*result = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(*result, "processes");
	cJSON_ArrayForEach(x, execs) {
		cJSON *o = cJSON_CreateObject();
		double started = cJSON_GetNumberValue(cJSON_GetObjectItem(x, "started_ms"));
		char t[40];
		const char *lp = cJSON_GetStringValue(cJSON_GetObjectItem(x, "log_path"));

		const char *xid = cJSON_GetStringValue(cJSON_GetObjectItem(x, "id"));

		cJSON_AddStringToObject(o, "exec_id", xid ? xid : "");
		copy_num(o, "pid", x, "pid");
		copy_str(o, "command", x);
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
		cJSON_AddBoolToObject(o, "background",
		    cJSON_IsTrue(cJSON_GetObjectItem(x, "background")));
		cJSON_AddBoolToObject(o, "timed_out",
		    cJSON_IsTrue(cJSON_GetObjectItem(x, "timed_out")));
		if (lp != NULL)
			cJSON_AddStringToObject(o, "log_path", lp);
		cJSON_AddItemToArray(arr, o);
	}
	cJSON_Delete(execs);
	return 0;
}

const struct mcp_tool mcp_tool_process_list = {
	.name = "sandbox_process_list",
	.title = "List commands in a sandbox",
	.description =
	    "The sandbox's running and recent commands (the last 128), oldest first: "
	    "exec_id, pid, command, who started it (origin), state (running or exited), "
	    "exit_code or signal and reason (oom when the OOM killer ended it), start time, duration, and log_path for background jobs. "
	    "Use it to check on background:true jobs and to find the exec_id or pid for "
	    "sandbox_process_kill.",
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{" MCP_SANDBOX_ID_PROP "},"
	    "\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
	.output_schema =
	    "{\"type\":\"object\",\"properties\":{\"processes\":{\"type\":\"array\","
	    "\"items\":{\"type\":\"object\",\"properties\":{"
	    "\"exec_id\":{\"type\":\"string\"},\"pid\":{\"type\":\"integer\"},"
	    "\"command\":{\"type\":\"string\"},"
	    "\"origin\":{\"type\":\"string\"},"
	    "\"state\":{\"type\":\"string\",\"description\":\"running or exited\"},"
	    "\"exit_code\":{\"type\":\"integer\",\"description\":\"Absent while it "
	    "runs, and when a signal ended it.\"},"
	    "\"signal\":{\"type\":\"string\",\"description\":\"The signal that ended it, "
	    "if one did.\"},"
	    "\"reason\":{\"type\":\"string\",\"description\":\"Once it ended: exit, signal, "
	    "timeout, or oom (the OOM killer ended it at the sandbox's memory limit).\"},"
	    "\"started_at\":{\"type\":\"string\",\"format\":\"date-time\","
	    "\"description\":\"RFC 3339, UTC.\"},"
	    "\"duration_ms\":{\"type\":\"integer\"},"
	    "\"background\":{\"type\":\"boolean\"},\"timed_out\":{\"type\":\"boolean\"},"
	    "\"log_path\":{\"type\":\"string\"}},"
	    "\"required\":[\"exec_id\",\"background\"]}}},\"required\":[\"processes\"]}",
	.hints = MCP_READONLY | MCP_IDEMPOTENT,
	.run = run,
};
