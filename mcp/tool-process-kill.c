/* sandbox_process_kill: signal a command of the sandbox (its whole process
 * group), found by exec_id or by pid. */
#include <stdio.h>
#include <string.h>

#include "mcp/tool-util.h"

/* The running exec whose pid (its process group) is pid. */
static int
exec_of_pid(struct core *c, const char *id, int64_t pid, char out[32], struct sbx_err *e)
{
	cJSON *execs = NULL;
	const cJSON *x;
	int found = 0, exited = 0;

	if (core_execs(c, id, &execs, e) < 0)
		return -1;
	cJSON_ArrayForEach(x, execs) {
		const char *xid = cJSON_GetStringValue(cJSON_GetObjectItem(x, "id"));
		const char *st = cJSON_GetStringValue(cJSON_GetObjectItem(x, "state"));
		if (xid == NULL || cJSON_GetNumberValue(cJSON_GetObjectItem(x, "pid")) != (double)pid)
			continue;
		if (st != NULL && strcmp(st, "running") == 0) {
			snprintf(out, 32, "%s", xid);
			found = 1;	/* the newest running one wins: pids are reused */
		} else {
			exited = 1;
		}
	}
	cJSON_Delete(execs);
	if (found)
		return 0;
	return sbx_error(e, exited ? SBX_ESTATE : SBX_ENOTFOUND,
	    "sandbox_process_list shows the commands and their pids",
	    exited ? "the command with pid %lld has already exited" :
	    "no command with pid %lld was started through the sandbox's agent", (long long)pid);
}

static int
run(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	struct core *c = mcp_call_core(call);
	const char *id = mcp_arg_need(args, "sandbox_id", e);
	const char *xid = mcp_arg_str(args, "exec_id");
	const char *sig = mcp_arg_str(args, "signal");
	int64_t pid = mcp_arg_int(args, "pid", -1);
	char found[32], origin[96];

	if (id == NULL)
		return -1;
	if (sig == NULL)
		sig = "TERM";
	if ((xid == NULL) == (pid < 0))
		return sbx_error(e, SBX_EINVAL, "sandbox_process_list shows both",
		    "give exactly one of exec_id and pid");
	if (xid == NULL) {
		if (exec_of_pid(c, id, pid, found, e) < 0) {
			mcp_err_fix(e);
			return -1;
		}
		xid = found;
	}
	mcp_origin(call, origin, sizeof origin);
	if (core_exec_signal(c, id, xid, sig, origin, e) < 0) {
		if (e->code == SBX_ESTATE && e->reason == SBX_R_NONE)
			snprintf(e->tool_hint, sizeof e->tool_hint, "it has already exited: "
			    "nothing to kill");
		else if (e->code == SBX_ENOTFOUND && e->reason != SBX_R_UNKNOWN_SANDBOX)
			snprintf(e->tool_hint, sizeof e->tool_hint, "sandbox_process_list shows "
			    "the exec_ids");
		mcp_err_fix(e);
		return -1;
	}
	*result = cJSON_CreateObject();
	cJSON_AddStringToObject(*result, "exec_id", xid);
	if (pid >= 0)
		cJSON_AddNumberToObject(*result, "pid", (double)pid);
	cJSON_AddStringToObject(*result, "signal", sig);
	cJSON_AddBoolToObject(*result, "sent", 1);
	return 0;
}

const struct mcp_tool mcp_tool_process_kill = {
	.name = "sandbox_process_kill",
	.title = "Signal a command",
	.description =
	    "Signal (TERM by default, or KILL...) a command and what it "
	    "started, by exec_id or pid.",
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{" MCP_SANDBOX_ID_PROP
	    ",\"exec_id\":{\"type\":\"string\"},\"pid\":{\"type\":\"integer\"},"
	    "\"signal\":{\"type\":\"string\"}},\"required\":[\"sandbox_id\"]}",
	.output_schema =
	    "{\"type\":\"object\",\"properties\":{\"exec_id\":{\"type\":\"strin"
	    "g\"},\"pid\":{\"type\":\"integer\"},\"signal\":{\"type\":\"string\""
	    "},\"sent\":{\"type\":\"boolean\"}},\"required\":[\"exec_id\","
	    "\"signal\",\"sent\"]}",
	.hints = MCP_DESTRUCTIVE,
	.run = run,
};
