/* sandbox_list_files: a directory of the sandbox, optionally the whole tree. */
#include <math.h>
#include <string.h>

#include "lib/jspec.h"
#include "mcp/tool-util.h"

static int
run(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	const char *id = mcp_arg_need(args, "sandbox_id", e), *path;
	int64_t max = mcp_arg_int(args, "max_entries", 1000);
	char origin[96];
	cJSON *req, *ans = NULL, *arr;
	const cJSON *it;
	int rc;

	if (id == NULL)
		return -1;
	if (max < 0 || max > 100000)
		return sbx_error(e, SBX_EINVAL, NULL, "max_entries must be between 0 and 100000");
	req = cJSON_CreateObject();
	if ((path = mcp_arg_str(args, "path")) != NULL)
		cJSON_AddStringToObject(req, "path", path);
	cJSON_AddBoolToObject(req, "recursive", mcp_arg_bool(args, "recursive", 0));
	cJSON_AddBoolToObject(req, "hidden", mcp_arg_bool(args, "include_hidden", 0));
	cJSON_AddNumberToObject(req, "max_entries", (double)max);
	mcp_origin(call, origin, sizeof origin);
	rc = core_files(mcp_call_core(call), id, "list", req, origin, &ans, e);
	cJSON_Delete(req);
	if (rc < 0) {
		mcp_err_fix(e);
		return -1;
	}
	*result = cJSON_CreateObject();
	cJSON_AddItemToObject(*result, "path", cJSON_DetachItemFromObject(ans, "path"));
	arr = cJSON_AddArrayToObject(*result, "entries");
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(ans, "entries")) {
		cJSON *o = cJSON_CreateObject();
		const char *p = cJSON_GetStringValue(cJSON_GetObjectItem(it, "path"));
		const char *t = cJSON_GetStringValue(cJSON_GetObjectItem(it, "type"));
		const char *target = cJSON_GetStringValue(cJSON_GetObjectItem(it, "target"));
		double size = cJSON_GetNumberValue(cJSON_GetObjectItem(it, "size"));
		double mt = cJSON_GetNumberValue(cJSON_GetObjectItem(it, "mtime_ms"));
		char ts[40] = "";

		if (!isnan(mt))
			mcp_iso8601((int64_t)mt, ts, sizeof ts);
		/* Names that are not UTF-8 come as U+FFFD plus their bytes in *_b64
		 * (the agent's, or made here from what an older agent sent). */
		jadd_name(o, "path", p ? p : "");
		cJSON_AddStringToObject(o, "type", t ? t : "other");
		cJSON_AddNumberToObject(o, "size", isnan(size) ? 0 : size);
		cJSON_AddStringToObject(o, "mtime", ts);
		if (target != NULL)
			jadd_name(o, "target", target);
		for (const char *const *k = (const char *const[]){ "path_b64", "target_b64", NULL };
		    *k != NULL; k++)
			if (cJSON_IsString(cJSON_GetObjectItem(it, *k)) && !cJSON_HasObjectItem(o, *k))
				cJSON_AddStringToObject(o, *k, cJSON_GetObjectItem(it, *k)->valuestring);
		cJSON_AddItemToArray(arr, o);
	}
	cJSON_AddBoolToObject(*result, "truncated",
	    cJSON_IsTrue(cJSON_GetObjectItem(ans, "truncated")));
	cJSON_Delete(ans);
	return 0;
}

const struct mcp_tool mcp_tool_list_files = {
	.name = "sandbox_list_files",
	.title = "List files in a sandbox",
	.description =
	    "List a directory of the sandbox (default /workspace; relative paths start "
	    "there): each entry's absolute path, type (file, dir, symlink, other), size "
	    "and mtime. recursive:true walks the whole tree (symlinked directories are "
	    "listed, not entered); names starting with '.' are left out unless "
	    "include_hidden:true. At most max_entries (default 1000) are returned, with "
	    "truncated:true when there were more: list a subdirectory instead.",
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{" MCP_SANDBOX_ID_PROP ","
	    "\"path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096,"
	    "\"default\":\"/workspace\",\"description\":\"Directory, absolute or relative "
	    "to /workspace.\"},"
	    "\"recursive\":{\"type\":\"boolean\",\"default\":false},"
	    "\"include_hidden\":{\"type\":\"boolean\",\"default\":false},"
	    "\"max_entries\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":100000,"
	    "\"default\":1000}"
	    "},\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
	.output_schema =
	    "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
	    "\"entries\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
	    "\"path\":{\"type\":\"string\"},"
	    "\"type\":{\"type\":\"string\",\"enum\":[\"file\",\"dir\",\"symlink\",\"other\"]},"
	    "\"size\":{\"type\":\"integer\"},"
	    "\"mtime\":{\"type\":\"string\",\"format\":\"date-time\"},"
	    "\"target\":{\"type\":\"string\",\"description\":\"symlinks only\"},"
	    "\"path_b64\":{\"type\":\"string\",\"description\":\"only when the name is "
	    "not UTF-8: its bytes in base64 (path then has U+FFFD in their place)\"},"
	    "\"target_b64\":{\"type\":\"string\"}},"
	    "\"required\":[\"path\",\"type\",\"size\",\"mtime\"]}},"
	    "\"truncated\":{\"type\":\"boolean\"}},\"required\":[\"path\",\"entries\",\"truncated\"]}",
	.hints = MCP_READONLY | MCP_IDEMPOTENT,
	.run = run,
};
