/* sandbox_fork: copies of a sandbox, each a sandbox of its own. */
#include "mcp/tool-util.h"

static int
run(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	struct core *c = mcp_call_core(call);
	const char *id = mcp_arg_need(args, "sandbox_id", e);
	int64_t n = mcp_arg_int(args, "count", 1);
	struct sandbox **v = NULL;
	size_t nv = 0;
	cJSON *arr;
	int rc;

	if (id == NULL)
		return -1;
	/* The copies are the caller's, bounded as its own creates are. */
	struct core_fork_by by = { mcp_client_name(call), mcp_call_agent(call) };
	rc = core_fork(c, id, (int)n, &by, &v, &nv, e);
	if (rc < 0 && nv == 0) {
		mcp_err_fix(e);
		core_list_free(v, 0);
		return -1;
	}
	if (rc < 0) {
		/* The copies made so far are real sandboxes: name them, so the agent
		 * can use or destroy them. */
		mcp_err_fix(e);
		char made[256] = "";
		size_t k = 0;
		for (size_t i = 0; i < nv && k < sizeof made - 32; i++)
			k += (size_t)snprintf(made + k, sizeof made - k, "%s%s", i ? ", " : "",
			    v[i]->id);
		snprintf(e->tool_hint, sizeof e->tool_hint, "%zu copies were made and run (%s): "
		    "use them, or sandbox_destroy them", nv, made);
		core_list_free(v, nv);
		return -1;
	}
	*result = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(*result, "sandboxes");
	for (size_t i = 0; i < nv; i++)
		cJSON_AddItemToArray(arr, mcp_summary(v[i]));
	core_list_free(v, nv);
	return 0;
}

const struct mcp_tool mcp_tool_fork = {
	.name = "sandbox_fork",
	.title = "Fork a sandbox",
	.description =
	    "Copy a sandbox count times, to try approaches side by side.",
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{" MCP_SANDBOX_ID_PROP
	    ",\"count\":{\"type\":\"integer\"}},\"required\":[\"sandbox_id\"]}",
	.output_schema =
	    "{\"type\":\"object\",\"properties\":{\"sandboxes\":{\"type\":\"arr"
	    "ay\",\"items\":" MCP_SUMMARY_SCHEMA
	    "}},\"required\":[\"sandboxes\"]}",
	.hints = 0,
	.run = run,
	.render = mcp_render_sandboxes,
};
