/* sandbox_destroy: stop a sandbox and delete everything in it. */
#include "mcp/tool-util.h"

static int
run(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	char id[32];
	const char *key = mcp_arg_need(args, "sandbox_id", e);

	if (key == NULL)
		return -1;
	if (core_destroy(mcp_call_core(call), key, id, e) < 0) {
		mcp_err_fix(e);
		return -1;
	}
	*result = cJSON_CreateObject();
	cJSON_AddStringToObject(*result, "sandbox_id", id);
	cJSON_AddStringToObject(*result, "state", "terminated");
	return 0;
}

const struct mcp_tool mcp_tool_destroy = {
	.name = "sandbox_destroy",
	.title = "Destroy a sandbox",
	.description =
	    "Delete the sandbox and all in it, for good. Call it when done.",
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{" MCP_SANDBOX_ID_PROP
	    "},\"required\":[\"sandbox_id\"]}",
	.output_schema =
	    "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"st"
	    "ring\"},\"state\":{\"enum\":[\"terminated\"]}},\"required\":[\"san"
	    "dbox_id\",\"state\"]}",
	.hints = MCP_DESTRUCTIVE | MCP_IDEMPOTENT,
	.run = run,
};
