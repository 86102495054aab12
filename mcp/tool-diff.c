/* sandbox_diff: the files added, changed and removed in a sandbox since it was
 * created, with unified diffs of changed text files. */
#include "mcp/tool-util.h"

static int
run(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	struct core_diff_opts o = { 0 };
	const char *id = mcp_arg_need(args, "sandbox_id", e);

	if (id == NULL)
		return -1;
	o.path = mcp_arg_str(args, "path");
	o.content = mcp_arg_bool(args, "content", 1);
	o.max_files = (size_t)mcp_arg_int(args, "max_files", 1000);
	if (core_diff(mcp_call_core(call), id, &o, result, e) < 0) {
		mcp_err_fix(e);
		return -1;
	}
	return 0;
}

const struct mcp_tool mcp_tool_diff = {
	.name = "sandbox_diff",
	.title = "What changed in a sandbox",
	.description =
	    "The files added, changed and removed in the sandbox since it was created (its "
	    "whole filesystem: /workspace, packages installed, files edited), each with its "
	    "size, and a unified diff for text files (binary files: sizes only). Use it to "
	    "review what was done before copying results out with sandbox_download. "
	    "path limits it to a file or directory (relative paths are under /workspace). "
	    "ns sandboxes only.",
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{" MCP_SANDBOX_ID_PROP ","
	    "\"path\":{\"type\":\"string\",\"maxLength\":4096,\"description\":\"Only changes "
	    "at or under this sandbox path.\"},"
	    "\"content\":{\"type\":\"boolean\",\"description\":\"Include unified diffs of text "
	    "files (default true).\"},"
	    "\"max_files\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":5000,"
	    "\"description\":\"At most this many changes (default 1000); truncated says when "
	    "there were more.\"}},"
	    "\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
	.output_schema =
	    "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
	    "\"changes\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
	    "\"path\":{\"type\":\"string\"},\"change\":{\"enum\":[\"added\",\"changed\","
	    "\"removed\"]},\"type\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\"},"
	    "\"lower_size\":{\"type\":\"integer\"},\"binary\":{\"type\":\"boolean\"},"
	    "\"diff\":{\"type\":\"string\"}},\"required\":[\"path\",\"change\",\"type\"]}},"
	    "\"truncated\":{\"type\":\"boolean\"}},\"required\":[\"sandbox_id\",\"changes\","
	    "\"truncated\"]}",
	.hints = MCP_READONLY | MCP_IDEMPOTENT,
	.run = run,
};
