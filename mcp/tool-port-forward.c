/* sandbox_port_forward: a host port on 127.0.0.1 relayed to a port inside the
 * sandbox (core_forward_start).  The forward lives as long as the core that runs
 * it. */
#include <stdio.h>

#include "mcp/tool-util.h"

static int
run(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	struct core_forward_opts o = {
		.remote_port = (int)mcp_arg_int(args, "remote_port", 0),
		.local_port = (int)mcp_arg_int(args, "local_port", 0),
	};
	struct core_forward f;
	char url[96];

	if (core_forward_start(mcp_call_core(call), mcp_arg_str(args, "sandbox_id"), &o, &f,
	    e) < 0)
		return -1;
	snprintf(url, sizeof url, "http://127.0.0.1:%d", f.local_port);
	*result = cJSON_CreateObject();
	cJSON_AddStringToObject(*result, "url", url);
	cJSON_AddNumberToObject(*result, "local_port", f.local_port);
	cJSON_AddNumberToObject(*result, "remote_port", f.remote_port);
	return 0;
}

const struct mcp_tool mcp_tool_port_forward = {
	.name = "sandbox_port_forward",
	.title = "Forward a port",
	.description =
	    "Reach a port of the sandbox from the host at the result's "
	    "url; bind the server to 0.0.0.0.",
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{" MCP_SANDBOX_ID_PROP
	    ",\"remote_port\":{\"type\":\"integer\"},\"local_port\":{\"type\":\""
	    "integer\"}},\"required\":[\"sandbox_id\",\"remote_port\"]}",
	.output_schema =
	    "{\"type\":\"object\",\"properties\":{\"url\":{\"type\":\"string\"}"
	    ",\"local_port\":{\"type\":\"integer\"},\"remote_port\":{\"type\":\""
	    "integer\"}},\"required\":[\"url\",\"local_port\",\"remote_port\"]}",
	.hints = 0,
	.run = run,
};
