/* sandbox_port_forward_stop: close a sandbox's port forwards (issue 6; until it
 * lands the tool says so). */
#include "mcp/tool-util.h"

static int
run(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	(void)call;
	(void)args;
	(void)result;
	return sbx_error(e, SBX_EUNSUPPORTED, "run the server inside the sandbox and curl "
	    "it with sandbox_exec", "port forwarding is not available yet in this build");
}

const struct mcp_tool mcp_tool_port_forward_stop = {
	.name = "sandbox_port_forward_stop",
	.title = "Stop port forwards of a sandbox",
	.description =
	    "Close the port forward of remote_port, or every forward of the sandbox when "
	    "remote_port is absent; the result lists what was stopped.",
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{" MCP_SANDBOX_ID_PROP ","
	    "\"remote_port\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":65535}"
	    "},\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
	.output_schema =
	    "{\"type\":\"object\",\"properties\":{\"stopped\":{\"type\":\"array\",\"items\":"
	    "{\"type\":\"object\",\"properties\":{\"local_port\":{\"type\":\"integer\"},"
	    "\"remote_port\":{\"type\":\"integer\"}},"
	    "\"required\":[\"local_port\",\"remote_port\"]}}},\"required\":[\"stopped\"]}",
	.hints = MCP_IDEMPOTENT,
	.run = run,
};
