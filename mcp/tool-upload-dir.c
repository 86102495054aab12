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
	.title = "Upload a directory into a sandbox",
	.description =
	    "Copy a directory (or one file) from the host where this server runs into the "
	    "sandbox, in one archive: its contents land in remote_path (default "
	    "/workspace, so your project's files are then at /workspace/...), created if "
	    "missing; same-named files there are replaced, others are kept. local_path "
	    "must be an absolute host path that exists. Names in exclude are skipped at "
	    "any depth (default: .git node_modules .venv __pycache__ dist target; pass [] "
	    "to copy everything). Symlinks are copied as symlinks; modes are kept. The "
	    "result gives the files and bytes written and the sha256 of the archive sent.",
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{" MCP_SANDBOX_ID_PROP ","
	    "\"local_path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096,"
	    "\"description\":\"Absolute path of a directory (or file) on the host.\"},"
	    "\"remote_path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096,"
	    "\"default\":\"/workspace\",\"description\":\"Sandbox directory that receives "
	    "the contents (absolute or relative to /workspace).\"},"
	    "\"exclude\":{\"type\":\"array\",\"maxItems\":64,\"items\":{\"type\":\"string\","
	    "\"minLength\":1,\"pattern\":\"^[^/,]+$\"},\"description\":\"File or directory "
	    "names to skip.\"}"
	    "},\"required\":[\"sandbox_id\",\"local_path\"],\"additionalProperties\":false}",
	.output_schema =
	    "{\"type\":\"object\",\"properties\":{\"remote_path\":{\"type\":\"string\"},"
	    "\"bytes\":{\"type\":\"integer\"},\"files\":{\"type\":\"integer\"},"
	    "\"sha256\":{\"type\":\"string\",\"pattern\":\"^[0-9a-f]{64}$\"}},"
	    "\"required\":[\"remote_path\",\"bytes\",\"files\",\"sha256\"]}",
	.hints = MCP_DESTRUCTIVE | MCP_IDEMPOTENT | MCP_TASK,
	.run = run,
};
