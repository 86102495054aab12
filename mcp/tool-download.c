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
	.title = "Download from a sandbox",
	.description =
	    "Copy a directory or a file from the sandbox to the host where this server "
	    "runs. remote_path defaults to /workspace. local_path must be absolute and its "
	    "parent directory must exist. A directory's contents go into local_path "
	    "(created when missing, merged into it when it is already a directory); a file "
	    "is written to local_path, or inside it under its own name when local_path is "
	    "a directory. Nothing is written outside local_path: archive entries that "
	    "would escape it are refused. Names in exclude are skipped (default: .git "
	    "node_modules .venv __pycache__ dist target; [] for everything). The result "
	    "gives files and bytes written and the sha256 of the data moved (of the "
	    "archive for a directory, of the file's content for a file), checked against "
	    "the sandbox's.",
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{" MCP_SANDBOX_ID_PROP ","
	    "\"local_path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096,"
	    "\"description\":\"Absolute host path to write (its parent must exist).\"},"
	    "\"remote_path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096,"
	    "\"default\":\"/workspace\",\"description\":\"Sandbox directory or file "
	    "(absolute or relative to /workspace).\"},"
	    "\"exclude\":{\"type\":\"array\",\"maxItems\":64,\"items\":{\"type\":\"string\","
	    "\"minLength\":1,\"pattern\":\"^[^/,]+$\"},\"description\":\"File or directory "
	    "names to skip.\"}"
	    "},\"required\":[\"sandbox_id\",\"local_path\"],\"additionalProperties\":false}",
	.output_schema =
	    "{\"type\":\"object\",\"properties\":{\"local_path\":{\"type\":\"string\"},"
	    "\"bytes\":{\"type\":\"integer\"},\"files\":{\"type\":\"integer\"},"
	    "\"sha256\":{\"type\":\"string\",\"pattern\":\"^[0-9a-f]{64}$\"}},"
	    "\"required\":[\"local_path\",\"bytes\",\"files\",\"sha256\"]}",
	.hints = MCP_DESTRUCTIVE | MCP_IDEMPOTENT | MCP_TASK,
	.run = run,
};
