/* sandbox_net_request: ask the operator for a destination the sandbox's network
 * policy does not cover, with a reason; waits for the answer (core_net_request). */
#include "core/net.h"
#include "mcp/tool-util.h"

static int
call_cancelled(void *arg)
{
	return mcp_call_cancelled(arg);
}

static int
run(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	const char *id = mcp_arg_need(args, "sandbox_id", e), *dest;
	struct sandbox *s;

	if (id == NULL)
		return -1;
	/* The sandbox first: an unknown one says where to find the known ones. */
	if ((s = core_get(mcp_call_core(call), id, e)) == NULL) {
		mcp_err_fix(e);
		return -1;
	}
	sandbox_free(s);
	if ((dest = mcp_arg_need(args, "destination", e)) == NULL)
		return -1;
	mcp_call_progress(call, 0, 1, "waiting for the operator");
	if (core_net_request(mcp_call_core(call), id, dest, mcp_arg_str(args, "reason"),
	    mcp_client_name(call), call_cancelled, call, result, e) < 0) {
		mcp_err_fix(e);
		return -1;
	}
	mcp_call_progress(call, 1, 1, NULL);
	return 0;
}

const struct mcp_tool mcp_tool_net_request = {
	.name = "sandbox_net_request",
	.title = "Ask for network access",
	.description =
	    "Ask the operator for a host:port the network rules do not "
	    "allow; waits for the verdict.",
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{" MCP_SANDBOX_ID_PROP
	    ",\"destination\":{\"type\":\"string\",\"minLength\":1,\"maxLength\""
	    ":300},\"reason\":{\"type\":\"string\",\"maxLength\":500}},"
	    "\"required\":[\"sandbox_id\",\"destination\",\"reason\"]}",
	.output_schema =
	    "{\"type\":\"object\",\"properties\":{\"verdict\":{\"enum\":[\"allo"
	    "wed\",\"denied\"]},\"destination\":{\"type\":\"string\"},\"rule\":"
	    "{\"type\":\"string\"},\"asked\":{\"type\":\"boolean\"},\"message\""
	    ":{\"type\":\"string\"}},\"required\":[\"verdict\",\"destination\","
	    "\"asked\",\"message\"]}",
	.hints = MCP_OPENWORLD,
	.run = run,
};
