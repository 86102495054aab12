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
	.title = "Ask for a network destination",
	.description =
	    "Ask the operator to let a sandbox with network rules reach a destination its "
	    "policy does not cover (a connection to it fails with a 403 from the sandbox's "
	    "proxy that names the host). Give the host and port and say why; the call waits "
	    "until the operator answers (or the ask timeout passes) and returns the verdict. "
	    "Allowed \"once\" lasts ten minutes, \"always\" for the sandbox's life. You cannot "
	    "change the policy yourself: this is the only way to widen it.",
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{" MCP_SANDBOX_ID_PROP ","
	    "\"destination\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":300,"
	    "\"description\":\"One host and port: \\\"pypi.org:443\\\", \\\"10.1.2.3:5432\\\" "
	    "(no port: 443 is assumed for the check, and any port is granted).\"},"
	    "\"reason\":{\"type\":\"string\",\"maxLength\":500,\"description\":\"Why the "
	    "sandbox needs it, shown to the operator.\"}},"
	    "\"required\":[\"sandbox_id\",\"destination\",\"reason\"],"
	    "\"additionalProperties\":false}",
	.output_schema =
	    "{\"type\":\"object\",\"properties\":{"
	    "\"verdict\":{\"type\":\"string\",\"enum\":[\"allowed\",\"denied\"]},"
	    "\"destination\":{\"type\":\"string\"},\"rule\":{\"type\":\"string\"},"
	    "\"asked\":{\"type\":\"boolean\"},\"message\":{\"type\":\"string\"}},"
	    "\"required\":[\"verdict\",\"destination\",\"asked\",\"message\"]}",
	.hints = MCP_OPENWORLD,
	.run = run,
};
