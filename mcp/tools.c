/* The tool table: every MCP tool, one file each (mcp/tool-<name>.c), in the order
 * an agent meets them: lifecycle, commands, files, transfers, ports, state.
 *
 * Annotations follow one rule.  readOnly: changes nothing anywhere.  destructive:
 * may remove or replace something that cannot be got back (a sandbox, a running
 * process, a file in the sandbox or on the host); sandbox_exec is not marked,
 * since it only ever touches the disposable sandbox and marking it would put
 * every command behind an approval.  idempotent: the same call again changes
 * nothing more.  openWorld: never, since every backend here is local. */
#include <string.h>

#include "mcp/tool.h"

extern const struct mcp_tool mcp_tool_create, mcp_tool_exec, mcp_tool_process_list,
    mcp_tool_process_kill, mcp_tool_read_file, mcp_tool_write_file, mcp_tool_list_files,
    mcp_tool_delete_path, mcp_tool_upload_dir, mcp_tool_download, mcp_tool_port_forward,
    mcp_tool_port_forward_stop, mcp_tool_suspend, mcp_tool_resume, mcp_tool_status,
    mcp_tool_list, mcp_tool_vm_logs, mcp_tool_destroy, mcp_tool_net_request,
    mcp_tool_diff, mcp_tool_fork;

const struct mcp_tool *const mcp_tools[] = {
	&mcp_tool_create,
	&mcp_tool_fork,
	&mcp_tool_exec,
	&mcp_tool_process_list,
	&mcp_tool_process_kill,
	&mcp_tool_read_file,
	&mcp_tool_write_file,
	&mcp_tool_list_files,
	&mcp_tool_delete_path,
	&mcp_tool_upload_dir,
	&mcp_tool_download,
	&mcp_tool_port_forward,
	&mcp_tool_port_forward_stop,
	&mcp_tool_suspend,
	&mcp_tool_resume,
	&mcp_tool_status,
	&mcp_tool_list,
	&mcp_tool_vm_logs,
	&mcp_tool_diff,
	&mcp_tool_destroy,
	&mcp_tool_net_request,
	NULL,
};

static int fixtures_on;

int
mcp_tools_fixtures(int on)
{
	if (on >= 0)
		__atomic_store_n(&fixtures_on, on != 0, __ATOMIC_RELAXED);
	return __atomic_load_n(&fixtures_on, __ATOMIC_RELAXED);
}

const struct mcp_tool *
mcp_tool_find(const char *name)
{
	for (size_t i = 0; name != NULL && mcp_tools[i] != NULL; i++)
		if (strcmp(mcp_tools[i]->name, name) == 0)
			return mcp_tools[i];
	for (size_t i = 0; name != NULL && mcp_tools_fixtures(-1) &&
	    mcp_fixture_tools[i] != NULL; i++)
		if (strcmp(mcp_fixture_tools[i]->name, name) == 0)
			return mcp_fixture_tools[i];
	return NULL;
}
