/* sandbox_write_file: create or replace a file of the sandbox, atomically. */
#include <stdlib.h>
#include <string.h>

#include "lib/jspec.h"
#include "mcp/tool-util.h"

/* mode as a number (420) or an octal string ("0644", "755"); -1 when absent. */
static int
get_mode(const cJSON *args, long *mode, struct sbx_err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, "mode");
	char *end;

	*mode = -1;
	if (v == NULL)
		return 0;
	if (cJSON_IsNumber(v))
		*mode = (long)jint_of(v, -1, -1, 07777 + 1);
	else if (cJSON_IsString(v) && v->valuestring[0] != '\0') {
		*mode = strtol(v->valuestring, &end, 8);
		if (*end != '\0')
			*mode = -2;
	} else {
		*mode = -2;
	}
	if (*mode < 0 || *mode > 07777 || (cJSON_IsNumber(v) && v->valuedouble != *mode))
		return sbx_error(e, SBX_EINVAL, "e.g. \"0755\" for an executable script",
		    "mode must be permission bits: an octal string such as \"0644\" or a "
		    "number from 0 to 4095");
	return 0;
}

static int
run(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	const char *id = mcp_arg_need(args, "sandbox_id", e), *path, *content, *enc;
	char origin[96];
	cJSON *req, *ans = NULL;
	long mode;
	int rc;

	if (id == NULL || (path = mcp_arg_need(args, "path", e)) == NULL)
		return -1;
	if ((content = mcp_arg_str(args, "content")) == NULL)
		return sbx_error(e, SBX_EINVAL, NULL, "content is required (a string; \"\" for "
		    "an empty file)");
	if (get_mode(args, &mode, e) < 0)
		return -1;
	req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "path", path);
	cJSON_AddStringToObject(req, "content", content);
	if ((enc = mcp_arg_str(args, "encoding")) != NULL)
		cJSON_AddStringToObject(req, "encoding", enc);
	if (mode >= 0)
		cJSON_AddNumberToObject(req, "mode", (double)mode);
	mcp_origin(call, origin, sizeof origin);
	rc = core_files(mcp_call_core(call), id, "write", req, origin, &ans, e);
	cJSON_Delete(req);
	if (rc < 0) {
		mcp_err_fix(e);
		return -1;
	}
	*result = cJSON_CreateObject();
	cJSON_AddItemToObject(*result, "path", cJSON_DetachItemFromObject(ans, "path"));
	cJSON_AddItemToObject(*result, "size", cJSON_DetachItemFromObject(ans, "size"));
	cJSON_Delete(ans);
	return 0;
}

const struct mcp_tool mcp_tool_write_file = {
	.name = "sandbox_write_file",
	.title = "Write a file",
	.description =
	    "Create or replace a file atomically, making directories. encoding "
	    "\"base64\" for binary; mode as \"0755\".",
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{" MCP_SANDBOX_ID_PROP
	    ",\"path\":{\"type\":\"string\"},\"content\":{\"type\":\"string\"},"
	    "\"encoding\":{\"enum\":[\"utf-8\",\"base64\"]},\"mode\":{\"type\":"
	    "\"string\"}},\"required\":[\"sandbox_id\",\"path\",\"content\"]}",
	.output_schema =
	    "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\""
	    "},\"size\":{\"type\":\"integer\"}},\"required\":[\"path\","
	    "\"size\"]}",
	.hints = MCP_DESTRUCTIVE | MCP_IDEMPOTENT,
	.run = run,
};
