/* sandbox_list: every known sandbox, and the ones found gone since last asked. */
#include "mcp/tool-util.h"

static int
run(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	struct core *c = mcp_call_core(call);
	struct sandbox **v;
	struct core_vanished *gone;
	size_t n, ngone;
	cJSON *arr, *van;

	(void)args;
	if (core_list(c, &v, &n, e) < 0) {
		mcp_err_fix(e);
		return -1;
	}
	*result = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(*result, "sandboxes");
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(arr, mcp_summary(v[i]));
	core_list_free(v, n);
	/* After the list: what it found dead is among what is handed out now. */
	core_vanished_take(c, &gone, &ngone);
	van = cJSON_AddArrayToObject(*result, "vanished");
	for (size_t i = 0; i < ngone; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "sandbox_id", gone[i].id);
		cJSON_AddStringToObject(o, "reason", gone[i].reason);
		cJSON_AddItemToArray(van, o);
	}
	core_vanished_free(gone, ngone);
	return 0;
}

const struct mcp_tool mcp_tool_list = {
	.name = "sandbox_list",
	.title = "List sandboxes",
	.description =
	    "Every known sandbox with its summary (including ones created by other clients "
	    "and terminated ones not yet cleaned up), plus \"vanished\": sandboxes found dead "
	    "since the last sandbox_list (deadline reached, killed, host restarted), each "
	    "reported once with the reason. Use it to find a sandbox_id or to check that you "
	    "left nothing running.",
	.input_schema = "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
	.output_schema =
	    "{\"type\":\"object\",\"properties\":{"
	    "\"sandboxes\":{\"type\":\"array\",\"items\":" MCP_SUMMARY_SCHEMA "},"
	    "\"vanished\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
	    "\"sandbox_id\":{\"type\":\"string\"},\"reason\":{\"type\":\"string\"}},"
	    "\"required\":[\"sandbox_id\",\"reason\"]}}},"
	    "\"required\":[\"sandboxes\",\"vanished\"]}",
	.hints = MCP_READONLY,
	.run = run,
};
