/* sandbox_delete_path: remove a file, symlink or directory of the sandbox. */
#include <string.h>

#include "mcp/tool-util.h"

static int
run(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	const char *id = mcp_arg_need(args, "sandbox_id", e), *path;
	char origin[96];
	cJSON *req, *ans = NULL;
	int rc;

	if (id == NULL || (path = mcp_arg_need(args, "path", e)) == NULL)
		return -1;
	req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "path", path);
	cJSON_AddBoolToObject(req, "recursive", mcp_arg_bool(args, "recursive", 0));
	mcp_origin(call, origin, sizeof origin);
	rc = core_files(mcp_call_core(call), id, "delete", req, origin, &ans, e);
	cJSON_Delete(req);
	if (rc < 0) {
		mcp_err_fix(e);
		return -1;
	}
	*result = cJSON_CreateObject();
	cJSON_AddItemToObject(*result, "path", cJSON_DetachItemFromObject(ans, "path"));
	cJSON_AddItemToObject(*result, "deleted", cJSON_DetachItemFromObject(ans, "deleted"));
	cJSON_Delete(ans);
	return 0;
}

const struct mcp_tool mcp_tool_delete_path = {
	.name = "sandbox_delete_path",
	.title = "Delete a path",
	.description =
	    "Delete a file, symlink or directory (recursive:true for a "
	    "non-empty one).",
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{" MCP_SANDBOX_ID_PROP
	    ",\"path\":{\"type\":\"string\"},\"recursive\":{\"type\":\"boolean\""
	    "}},\"required\":[\"sandbox_id\",\"path\"]}",
	.output_schema =
	    "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\""
	    "},\"deleted\":{\"type\":\"integer\"}},\"required\":[\"path\","
	    "\"deleted\"]}",
	.hints = MCP_DESTRUCTIVE | MCP_IDEMPOTENT,
	.run = run,
};
