/* sandbox_upload_dir: a host directory's contents into the sandbox. */
#include <stdlib.h>
#include <sys/stat.h>

#include "mcp/tool-util.h"

static int
run(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	const char *id = mcp_arg_need(args, "sandbox_id", e), *local;
	const char **exclude = mcp_arg_names(args, "exclude");
	struct core_xfer_opts o = { .progress = mcp_xfer_progress, .arg = call };
	struct core_xfer_result res;
	struct stat st;
	char origin[96];
	int rc = -1;

	if (id == NULL || (local = mcp_arg_need(args, "local_path", e)) == NULL)
		goto out;
	if (local[0] != '/') {
		sbx_error(e, SBX_EINVAL, "give the absolute path on the machine where the MCP "
		    "server runs", "local_path must be absolute: %s", local);
		goto out;
	}
	if (stat(local, &st) < 0) {
		sbx_error_errno(e, SBX_ENOTFOUND, "check local_path: it is a path on the host, "
		    "not in the sandbox", "cannot upload %s", local);
		goto out;
	}
	mcp_origin(call, origin, sizeof origin);
	o.origin = origin;
	o.exclude = exclude;
	mcp_call_progress(call, 0, 0, "packing");
	if (core_upload(mcp_call_core(call), id, local, mcp_arg_str(args, "remote_path"), &o,
	    &res, e) < 0) {
		if (mcp_call_cancelled(call))
			sbx_error(e, SBX_EIO, NULL, "the upload was cancelled");
		mcp_err_fix(e);
		goto out;
	}
	*result = mcp_xfer_result("remote_path", &res);
	rc = 0;
out:
	free(exclude);
	return rc;
}

const struct mcp_tool mcp_tool_upload_dir = {
	.name = "sandbox_upload_dir",
	.title = "Upload",
	.description =
	    "Copy a host directory or file (absolute local_path) into remote_pa"
	    "th (default /workspace), skipping exclude (default .git node_modul"
	    "es .venv __pycache__ dist target).",
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{" MCP_SANDBOX_ID_PROP
	    ",\"local_path\":{\"type\":\"string\"},\"remote_path\":{\"type\":\""
	    "string\"},\"exclude\":{\"type\":\"array\",\"items\":{\"type\":\"st"
	    "ring\",\"pattern\":\"^[^/,]+$\"}}},\"required\":[\"sandbox_id\","
	    "\"local_path\"]}",
	.output_schema =
	    "{\"type\":\"object\",\"properties\":{\"remote_path\":{\"type\":\"s"
	    "tring\"},\"bytes\":{\"type\":\"integer\"},\"files\":{\"type\":\"in"
	    "teger\"},\"sha256\":{\"type\":\"string\"}},\"required\":[\"remote_"
	    "path\",\"bytes\",\"files\",\"sha256\"]}",
	.hints = MCP_DESTRUCTIVE | MCP_IDEMPOTENT | MCP_TASK,
	.run = run,
};
