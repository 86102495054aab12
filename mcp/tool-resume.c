/* sandbox_resume: continue a suspended sandbox. */
#include "mcp/tool-util.h"

static int
run(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	struct core *c = mcp_call_core(call);
	struct sandbox *s = NULL;
	const char *id = mcp_arg_need(args, "sandbox_id", e);

	if (id == NULL)
		return -1;
	if (core_resume(c, id, e) < 0 || core_status(c, id, &s, NULL, e) < 0) {
		mcp_err_fix(e);
		return -1;
	}
	*result = mcp_summary(s);
	sandbox_free(s);
	return 0;
}

const struct mcp_tool mcp_tool_resume = {
	.name = "sandbox_resume",
	.title = "Resume a sandbox",
	.description =
	    "Continue a suspended sandbox.",
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{" MCP_SANDBOX_ID_PROP
	    "},\"required\":[\"sandbox_id\"]}",
	.output_schema = MCP_SUMMARY_SCHEMA,
	.hints = MCP_IDEMPOTENT,
	.run = run,
	.render = mcp_render_summary_result,
};
