/* sandbox_create: a new sandbox owned by the calling client. */
#include <string.h>

#include "core/create-opts.h"
#include "mcp/tool-util.h"

static int
run(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	struct core_create_opts o;
	struct sandbox *s = NULL;
	cJSON *net;
	int rc = -1;

	/* The option table's, as every create's; the network entries bounded by
	 * the operator's net_limit (agent), secrets by name as `create --secret`. */
	if (core_create_opts_from_json(&o, args, &net, e) < 0)
		return -1;
	o.owner = mcp_client_name(call);
	o.agent = mcp_call_agent(call);
	mcp_call_progress(call, 0, 2, "creating");
	if (core_create(mcp_call_core(call), &o, &s, e) < 0) {
		mcp_err_fix(e);
		goto out;
	}
	mcp_call_progress(call, 2, 2, "ready");
	*result = mcp_summary(s);
	sandbox_free(s);
	rc = 0;
out:
	cJSON_Delete(net);
	return rc;
}

const struct mcp_tool mcp_tool_create = {
	.name = "sandbox_create",
	.title = "Create a sandbox",
	.description =
	    "A new disposable Linux sandbox, gone after max_duration_s "
	    "(default 4 h). network: none (the default), egress, or rules: "
	    "only the allow entries (\"pypi.org\", \"*.npmjs.org\", CIDR,"
	    " :PORT).",
	/* The numbers' ranges are the option table's, added to the schema calls
	 * are checked against (input_fill); tools/list leaves them out. */
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string"
	    "\"},\"backend\":{\"type\":\"string\"},\"host\":{\"type\":\"strin"
	    "g\"},\"image\":{\"type\":\"string\",\"maxLength\":600,\"descript"
	    "ion\":\"An allowed OCI image (sbx://images), e.g. python:3.12.\""
	    "},\"max_duration_s\":{\"type\":\"integer\"},\"idle_s\":{\"type\""
	    ":\"integer\"},\"idle_suspend_s\":{\"type\":\"integer\"},\"networ"
	    "k\":{\"enum\":[\"none\",\"egress\",\"rules\"]},\"allow\":{\"type"
	    "\":\"array\",\"items\":{\"type\":\"string\"}},\"deny\":{\"type\""
	    ":\"array\",\"items\":{\"type\":\"string\"}},\"ask\":{\"type\":\""
	    "boolean\"},\"secrets\":{\"type\":\"array\",\"items\":{\"type\":"
	    "\"string\"}},\"memory_mib\":{\"type\":\"integer\"},\"disk_mib\":"
	    "{\"type\":\"integer\"},\"cpus\":{\"type\":\"number\"},\"pids\":{"
	    "\"type\":\"integer\"},\"env\":{\"type\":\"object\",\"additionalP"
	    "roperties\":{\"type\":\"string\"}},\"from_snapshot\":{\"type\":"
	    "\"string\"}}}",
	.output_schema = MCP_SUMMARY_SCHEMA,
	.hints = 0,
	.run = run,
	.render = mcp_render_summary_result,
	.input_fill = create_options_ranges,
};
