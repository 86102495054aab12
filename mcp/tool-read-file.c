/* sandbox_read_file: a file of the sandbox as text or base64. */
#include <string.h>

#include "mcp/tool-util.h"

#define READ_DEFAULT	(1 << 20)
#define READ_MAX	(8 << 20)

static int
run(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	const char *id = mcp_arg_need(args, "sandbox_id", e), *path, *enc;
	int64_t max = mcp_arg_int(args, "max_bytes", READ_DEFAULT);
	char origin[96];
	cJSON *req, *ans = NULL;
	int rc;

	if (id == NULL || (path = mcp_arg_need(args, "path", e)) == NULL)
		return -1;
	if (max < 0 || max > READ_MAX)
		return sbx_error(e, SBX_EINVAL, "use sandbox_download for larger files",
		    "max_bytes must be between 0 and %d", READ_MAX);
	req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "path", path);
	if ((enc = mcp_arg_str(args, "encoding")) != NULL)
		cJSON_AddStringToObject(req, "encoding", enc);
	cJSON_AddNumberToObject(req, "max_bytes", (double)max);
	mcp_origin(call, origin, sizeof origin);
	rc = core_files(mcp_call_core(call), id, "read", req, origin, &ans, e);
	cJSON_Delete(req);
	if (rc < 0) {
		if (e->reason == SBX_R_IS_DIR)
			snprintf(e->tool_hint, sizeof e->tool_hint, "use sandbox_list_files for "
			    "directories");
		else if (e->reason == SBX_R_NOT_FOUND)
			snprintf(e->tool_hint, sizeof e->tool_hint, "relative paths start at "
			    "/workspace; sandbox_list_files shows what is there");
		mcp_err_fix(e);
		return -1;
	}
	*result = cJSON_CreateObject();
	cJSON_AddItemToObject(*result, "path", cJSON_DetachItemFromObject(ans, "path"));
	cJSON_AddItemToObject(*result, "content", cJSON_DetachItemFromObject(ans, "content"));
	cJSON_AddItemToObject(*result, "encoding", cJSON_DetachItemFromObject(ans, "encoding"));
	cJSON_AddItemToObject(*result, "size", cJSON_DetachItemFromObject(ans, "size"));
	cJSON_AddItemToObject(*result, "truncated", cJSON_DetachItemFromObject(ans, "truncated"));
	cJSON_Delete(ans);
	return 0;
}

const struct mcp_tool mcp_tool_read_file = {
	.name = "sandbox_read_file",
	.title = "Read a file in a sandbox",
	.description =
	    "Read a file of the sandbox. Relative paths start at /workspace. Text comes as "
	    "UTF-8; binary files (or encoding \"base64\") come base64-encoded, and the "
	    "result's encoding says which. At most max_bytes (default 1 MiB, max 8 MiB) "
	    "are returned, with truncated:true and the full size when the file is larger: "
	    "use sandbox_download for big or many files, and sandbox_exec with "
	    "head/tail/grep for parts of big logs.",
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{" MCP_SANDBOX_ID_PROP ","
	    "\"path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096,"
	    "\"description\":\"File path, absolute or relative to /workspace.\"},"
	    "\"encoding\":{\"type\":\"string\",\"enum\":[\"utf-8\",\"base64\"],"
	    "\"description\":\"Default: utf-8 when the content is text, else base64.\"},"
	    "\"max_bytes\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":8388608,"
	    "\"default\":1048576}"
	    "},\"required\":[\"sandbox_id\",\"path\"],\"additionalProperties\":false}",
	.output_schema =
	    "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
	    "\"content\":{\"type\":\"string\"},"
	    "\"encoding\":{\"type\":\"string\",\"enum\":[\"utf-8\",\"base64\"]},"
	    "\"size\":{\"type\":\"integer\",\"description\":\"The file's whole size.\"},"
	    "\"truncated\":{\"type\":\"boolean\"}},"
	    "\"required\":[\"path\",\"content\",\"encoding\",\"size\",\"truncated\"]}",
	.hints = MCP_READONLY | MCP_IDEMPOTENT,
	.run = run,
};
