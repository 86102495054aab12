/* sandbox_port_forward_stop: close a sandbox's port forwards (core_forward_stop),
 * listing what was stopped. */
#include <stdlib.h>

#include "mcp/tool-util.h"

static int
run(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	struct core *c = mcp_call_core(call);
	const char *key = mcp_arg_str(args, "sandbox_id");
	int remote = (int)mcp_arg_int(args, "remote_port", 0);
	struct core_forward *v = NULL;
	size_t n = 0;
	cJSON *stopped;

	/* What is there before stopping, for the answer. */
	if (core_forward_list(c, key, &v, &n, e) < 0)
		return -1;
	if (core_forward_stop(c, key, remote, NULL, e) < 0) {
		free(v);
		return -1;
	}
	*result = cJSON_CreateObject();
	stopped = cJSON_AddArrayToObject(*result, "stopped");
	for (size_t i = 0; i < n; i++) {
		if (remote > 0 && v[i].remote_port != remote)
			continue;
		cJSON *f = cJSON_CreateObject();
		cJSON_AddNumberToObject(f, "local_port", v[i].local_port);
		cJSON_AddNumberToObject(f, "remote_port", v[i].remote_port);
		cJSON_AddItemToArray(stopped, f);
	}
	free(v);
	return 0;
}

const struct mcp_tool mcp_tool_port_forward_stop = {
	.name = "sandbox_port_forward_stop",
	.title = "Stop port forwards",
	.description =
	    "Close the forward of remote_port, or all of the sandbox's.",
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{" MCP_SANDBOX_ID_PROP
	    ",\"remote_port\":{\"type\":\"integer\"}},\"required\":[\"sandbox_i"
	    "d\"]}",
	.output_schema =
	    "{\"type\":\"object\",\"properties\":{\"stopped\":{\"type\":\"array"
	    "\",\"items\":{\"type\":\"object\",\"properties\":{\"local_port\":{"
	    "\"type\":\"integer\"},\"remote_port\":{\"type\":\"integer\"}},"
	    "\"required\":[\"local_port\",\"remote_port\"]}}},\"required\":[\"s"
	    "topped\"]}",
	.hints = MCP_IDEMPOTENT,
	.run = run,
};
