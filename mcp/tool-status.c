/* sandbox_status: one sandbox's summary, checked with its backend. */
#include "mcp/tool-util.h"

static int
run(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	struct sandbox *s = NULL;
	const char *id = mcp_arg_need(args, "sandbox_id", e);

	if (id == NULL)
		return -1;
	if (core_status(mcp_call_core(call), id, &s, NULL, e) < 0) {
		mcp_err_fix(e);
		return -1;
	}
	*result = mcp_summary(s);
	if (s->usage != NULL)
		cJSON_AddItemToObject(*result, "usage", cJSON_Duplicate(s->usage, 1));
	sandbox_free(s);
	return 0;
}

const struct mcp_tool mcp_tool_status = {
	.name = "sandbox_status",
	.title = "Sandbox status",
	.description =
	    "A sandbox's state and why, time left, limits and current usage.",
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{" MCP_SANDBOX_ID_PROP
	    "},\"required\":[\"sandbox_id\"]}",
	.output_schema = MCP_SUMMARY_SCHEMA,
	.hints = MCP_READONLY | MCP_IDEMPOTENT,
	.run = run,
	.render = mcp_render_summary_result,
};
