/* sandbox_list: every known sandbox, a page within the call's budget with the
 * total and a cursor, and the ones found gone since last asked. */
#include "mcp/budget.h"
#include "mcp/tool-util.h"

#define STATUS_ROOM	600	/* of the budget: the first line, the vanished */

static int
run(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	struct core *c = mcp_call_core(call);
	struct sandbox **v;
	struct core_vanished *gone;
	size_t n, ngone, budget = mcp_call_budget(call), used = 0, i;
	int64_t offset;
	cJSON *arr, *van;
	char cur[32];

	if (mcp_arg_cursor(args, &offset, e) < 0)
		return -1;
	if (core_list(c, &v, &n, e) < 0) {
		mcp_err_fix(e);
		return -1;
	}
	*result = cJSON_CreateObject();
	/* After the list: what it found dead is among what is handed out now. */
	core_vanished_take(c, &gone, &ngone);
	van = cJSON_AddArrayToObject(*result, "vanished");
	for (i = 0; i < ngone; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "sandbox_id", gone[i].id);
		cJSON_AddStringToObject(o, "reason", gone[i].reason);
		cJSON_AddItemToArray(van, o);
	}
	core_vanished_free(gone, ngone);
	used = mcp_json_size(van);
	arr = cJSON_AddArrayToObject(*result, "sandboxes");
	for (i = offset < 0 ? 0 : (size_t)offset; i < n; i++) {
		cJSON *o = mcp_summary(v[i]);
		size_t sz = mcp_json_size(o) + 1;
		if (used + sz + STATUS_ROOM > budget) {
			cJSON_Delete(o);
			break;
		}
		used += sz;
		cJSON_AddItemToArray(arr, o);
	}
	core_list_free(v, n);
	cJSON_AddNumberToObject(*result, "total", (double)n);
	cJSON_AddNumberToObject(*result, "offset", (double)offset);
	if (i < n)
		cJSON_AddStringToObject(*result, "next_cursor", mcp_cursor_make((int64_t)i, cur,
		    sizeof cur));
	return 0;
}

const struct mcp_tool mcp_tool_list = {
	.name = "sandbox_list",
	.title = "List sandboxes",
	.description =
	    "Every sandbox, with state and time left, and those gone since "
	    "the last call.",
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{\"cursor\":{\"type\":\"string"
	    "\"}}}",
	.output_schema =
	    "{\"type\":\"object\",\"properties\":{\"sandboxes\":{\"type\":\"arr"
	    "ay\",\"items\":" MCP_SUMMARY_SCHEMA
	    "},\"vanished\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
	    "\"properties\":{\"sandbox_id\":{\"type\":\"string\"},\"reason\":{\""
	    "type\":\"string\"}},\"required\":[\"sandbox_id\",\"reason\"]}},"
	    "\"total\":{\"type\":\"integer\"},\"offset\":{\"type\":\"integer\"}"
	    ",\"next_cursor\":{\"type\":\"string\"}},\"required\":[\"sandboxes\""
	    ",\"vanished\",\"total\"]}",
	.hints = MCP_READONLY,
	.run = run,
	.render = mcp_render_sandboxes,
};
