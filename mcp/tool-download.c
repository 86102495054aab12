/* sandbox_download: a sandbox directory or file to the host. */
#include <errno.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/util.h"
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
	{
		_cleanup_free_ char *copy = xstrdup(local);
		const char *parent = dirname(copy);
		if (stat(parent, &st) < 0 || !S_ISDIR(st.st_mode)) {
			sbx_error(e, SBX_ENOTFOUND, "create that directory first, or choose a "
			    "local_path whose parent exists", "the host directory %s does not exist",
			    parent);
			goto out;
		}
	}
	mcp_origin(call, origin, sizeof origin);
	o.origin = origin;
	o.exclude = exclude;
	if (core_download(mcp_call_core(call), id, mcp_arg_str(args, "remote_path"), local,
	    &o, &res, e) < 0) {
		if (mcp_call_cancelled(call))
			sbx_error(e, SBX_EIO, NULL, "the download was cancelled");
		mcp_err_fix(e);
		goto out;
	}
	*result = mcp_xfer_result("local_path", &res);
	rc = 0;
out:
	free(exclude);
	return rc;
}

const struct mcp_tool mcp_tool_download = {
	.name = "sandbox_download",
	.title = "Download",
	.description =
	    "Copy remote_path (default /workspace) to the host's local_path "
	    "(absolute; its parent exists). exclude as for upload.",
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{" MCP_SANDBOX_ID_PROP
	    ",\"local_path\":{\"type\":\"string\"},\"remote_path\":{\"type\":\""
	    "string\"},\"exclude\":{\"type\":\"array\",\"items\":{\"type\":\"st"
	    "ring\",\"pattern\":\"^[^/,]+$\"}}},\"required\":[\"sandbox_id\","
	    "\"local_path\"]}",
	.output_schema =
	    "{\"type\":\"object\",\"properties\":{\"local_path\":{\"type\":\"st"
	    "ring\"},\"bytes\":{\"type\":\"integer\"},\"files\":{\"type\":\"int"
	    "eger\"},\"sha256\":{\"type\":\"string\"}},\"required\":[\"local_pa"
	    "th\",\"bytes\",\"files\",\"sha256\"]}",
	.hints = MCP_DESTRUCTIVE | MCP_IDEMPOTENT | MCP_TASK,
	.run = run,
};
