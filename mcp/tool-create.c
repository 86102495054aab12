/* sandbox_create: a new sandbox owned by the calling client. */
#include <string.h>

#include "mcp/tool-util.h"

static int
run(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	struct core *c = mcp_call_core(call);
	struct core_create_opts o;
	struct sandbox *s = NULL;
	const cJSON *env = cJSON_GetObjectItemCaseSensitive(args, "env");
	cJSON *net = NULL;
	int rc = -1;

	core_create_opts_init(&o);
	o.name = mcp_arg_str(args, "name");
	o.backend = mcp_arg_str(args, "backend");
	o.host = mcp_arg_str(args, "host");
	o.image = mcp_arg_str(args, "image");
	o.network = mcp_arg_str(args, "network");
	o.max_duration_s = mcp_arg_int(args, "max_duration_s", -1);
	o.idle_s = mcp_arg_int(args, "idle_s", -1);
	o.memory_mib = mcp_arg_int(args, "memory_mib", -1);
	o.disk_mib = mcp_arg_int(args, "disk_mib", -1);
	o.cpus = mcp_arg_num(args, "cpus", -1);
	o.env = cJSON_IsObject(env) ? env : NULL;
	o.from_snapshot = mcp_arg_str(args, "from_snapshot");
	o.owner = mcp_client_name(call);
	o.idle_suspend_s = mcp_arg_int(args, "idle_suspend_s", -1);
	o.agent = mcp_call_agent(call);
	/* Network rules: the entries as given, bounded by the operator's net_limit;
	 * secrets by name, as `create --secret NAME`. */
	for (int i = 0; i < 4; i++) {
		static const char *const keys[] = { "allow", "deny", "ask", "secrets" };
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, keys[i]);
		if (v == NULL)
			continue;
		if (net == NULL)
			net = cJSON_CreateObject();
		cJSON_AddItemToObject(net, keys[i], cJSON_Duplicate(v, 1));
	}
	o.net = net;
	mcp_call_progress(call, 0, 2, "creating");
	if (core_create(c, &o, &s, e) < 0) {
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
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\""
	    "},\"backend\":{\"type\":\"string\"},\"host\":{\"type\":\"string\"}"
	    ",\"image\":{\"type\":\"string\",\"maxLength\":600,\"description\":"
	    "\"An allowed OCI image (sbx://images), e.g. python:3.12.\"},"
	    "\"max_duration_s\":{\"type\":\"integer\"},\"idle_s\":{\"type\":\"i"
	    "nteger\"},\"idle_suspend_s\":{\"type\":\"integer\"},\"network\":{\""
	    "enum\":[\"none\",\"egress\",\"rules\"]},\"allow\":{\"type\":\"arra"
	    "y\",\"items\":{\"type\":\"string\"}},\"deny\":{\"type\":\"array\","
	    "\"items\":{\"type\":\"string\"}},\"ask\":{\"type\":\"boolean\"},"
	    "\"secrets\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
	    "\"memory_mib\":{\"type\":\"integer\"},\"disk_mib\":{\"type\":\"int"
	    "eger\"},\"cpus\":{\"type\":\"number\"},\"env\":{\"type\":\"object\""
	    ",\"additionalProperties\":{\"type\":\"string\"}},\"from_snapshot\""
	    ":{\"type\":\"string\"}}}",
	.output_schema = MCP_SUMMARY_SCHEMA,
	.hints = 0,
	.run = run,
	.render = mcp_render_summary_result,
};
