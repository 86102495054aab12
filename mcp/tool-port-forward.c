/* sandbox_port_forward: a host port to a port inside the sandbox.  Port
 * forwarding is its own piece of work (issue 6); until it lands the tool says so
 * and what to do instead. */
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

const struct mcp_tool mcp_tool_port_forward = {
	.name = "sandbox_port_forward",
	.title = "Forward a port of a sandbox",
	.description =
	    "Make a TCP port inside the sandbox reachable from the host at "
	    "http://127.0.0.1:LOCAL_PORT (the result's url). Start the server with "
	    "sandbox_exec background:true, bound to 0.0.0.0 (or 127.0.0.1) on remote_port, "
	    "then forward it. local_port 0 or absent picks a free one. Stop it with "
	    "sandbox_port_forward_stop; sandbox_destroy stops them all.",
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{" MCP_SANDBOX_ID_PROP ","
	    "\"remote_port\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":65535,"
	    "\"description\":\"The port the server listens on inside the sandbox.\"},"
	    "\"local_port\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":65535,"
	    "\"description\":\"Host port on 127.0.0.1 (0 or absent: any free port).\"}"
	    "},\"required\":[\"sandbox_id\",\"remote_port\"],\"additionalProperties\":false}",
	.output_schema =
	    "{\"type\":\"object\",\"properties\":{\"url\":{\"type\":\"string\"},"
	    "\"local_port\":{\"type\":\"integer\"},\"remote_port\":{\"type\":\"integer\"}},"
	    "\"required\":[\"url\",\"local_port\",\"remote_port\"]}",
	.hints = 0,
	.run = run,
};
