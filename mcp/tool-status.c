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
	    "The current summary of one sandbox: state (running, suspended, terminated, ...) "
	    "with the reason, time left before it destroys itself, limits, network. Use it "
	    "when a call fails in a way that suggests the sandbox stopped, or to see how much "
	    "time is left. usage is what it uses now (cpu_pct, mem_bytes, pids, disk_bytes, "
	    "net_rx_bytes, net_tx_bytes, oom_kills) where its backend can tell.",
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{" MCP_SANDBOX_ID_PROP "},"
	    "\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
	.output_schema = MCP_SUMMARY_SCHEMA,
	.hints = MCP_READONLY | MCP_IDEMPOTENT,
	.run = run,
};
