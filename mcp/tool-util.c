/* Argument access, origins and agent-facing error hints for the tool files. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/jspec.h"
#include "lib/utf8.h"
#include "lib/util.h"
#include "mcp/budget.h"
#include "mcp/tool-util.h"

const char *
mcp_arg_str(const cJSON *args, const char *name)
{
	return jstr(args, name, NULL);
}

int64_t
mcp_arg_int(const cJSON *args, const char *name, int64_t def)
{
	return jint(args, name, def);
}

double
mcp_arg_num(const cJSON *args, const char *name, double def)
{
	return jnum(args, name, def);
}

int
mcp_arg_bool(const cJSON *args, const char *name, int def)
{
	return jbool(args, name, def);
}

int
mcp_arg_cursor(const cJSON *args, int64_t *offset, struct sbx_err *e)
{
	const char *c = mcp_arg_str(args, "cursor");

	if (mcp_cursor_offset(c, offset) < 0)
		return sbx_error(e, SBX_EINVAL, "give the next_cursor of the previous page, or "
		    "leave cursor out for the first", "cursor \"%.40s\" is not one this tool gave",
		    c);
	return 0;
}

const char *
mcp_arg_need(const cJSON *args, const char *name, struct sbx_err *e)
{
	const char *v = mcp_arg_str(args, name);

	if (v == NULL || v[0] == '\0')
		sbx_error(e, SBX_EINVAL, "see the tool's inputSchema (tools/list)",
		    "%s is required: a non-empty string", name);
	return v != NULL && v[0] != '\0' ? v : NULL;
}

const char **
mcp_arg_names(const cJSON *args, const char *name)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(args, name), *it;
	const char **v;
	size_t n = 0;

	if (!cJSON_IsArray(arr))
		return NULL;
	v = xcalloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof *v);
	cJSON_ArrayForEach(it, arr)
		if (cJSON_IsString(it))
			v[n++] = it->valuestring;
	return v;
}

int
mcp_xfer_progress(uint64_t done, uint64_t total, const char *what, void *arg)
{
	struct mcp_call *call = arg;
	char msg[96];

	if (mcp_call_cancelled(call))
		return 1;
	snprintf(msg, sizeof msg, "%s: %.1f MiB", what, (double)done / (1 << 20));
	mcp_call_progress(call, (double)done, (double)total, msg);
	return 0;
}

cJSON *
mcp_xfer_result(const char *path_key, struct core_xfer_result *res)
{
	cJSON *r = cJSON_CreateObject();

	cJSON_AddStringToObject(r, path_key, res->path);
	cJSON_AddNumberToObject(r, "bytes", (double)res->bytes);
	cJSON_AddNumberToObject(r, "files", (double)res->files);
	cJSON_AddStringToObject(r, "sha256", res->sha256);
	core_xfer_result_free(res);
	return r;
}

const char *
mcp_client_name(struct mcp_call *call)
{
	const char *n = mcp_call_client(call);

	return n != NULL && n[0] != '\0' ? n : "mcp";
}

int
mcp_call_agent(struct mcp_call *call)
{
	const char *k = mcp_call_kind(call);

	return k == NULL ? 0 : strcmp(k, "mcp") == 0 ? 1 : -1;
}

void
mcp_origin(struct mcp_call *call, char *buf, size_t len)
{
	const char *n = mcp_call_client(call), *k = mcp_call_kind(call);

	/* The operator at a console: a session of kind console, or the console's
	 * own core (a call in its process).  An MCP client names itself, so its
	 * name never says that. */
	if ((k != NULL && strcmp(k, "console") == 0) ||
	    (k == NULL && n != NULL && strcmp(n, "console") == 0)) {
		snprintf(buf, len, "console");
		return;
	}
	snprintf(buf, len, "mcp%s%s", n && n[0] ? ":" : "", n && n[0] ? n : "");
}

/* An agent's next step for each reason: tool names, never `sbxtop` commands (the
 * core's hints, in e->hint, are for a person at a shell or the console). */
static const char *const agent_hints[SBX_R_COUNT] = {
	[SBX_R_UNKNOWN_SANDBOX] = "run sandbox_list to see known sandboxes",
	[SBX_R_AMBIGUOUS] = "give the whole sandbox_id; sandbox_list shows them",
	[SBX_R_SUSPENDED] = "the sandbox is suspended: call sandbox_resume, then retry",
	[SBX_R_GONE] = "it is gone: call sandbox_destroy to drop it and sandbox_create for a "
	    "new one",
	[SBX_R_NOT_RUNNING] = "sandbox_status shows its state",
	[SBX_R_NOT_SUSPENDED] = "sandbox_status shows its state",
	[SBX_R_NAME_TAKEN] = "choose another name, or call sandbox_destroy on the sandbox "
	    "that has it",
	[SBX_R_IS_DIR] = "it is a directory: sandbox_list_files lists it, sandbox_download "
	    "copies it out",
	[SBX_R_NOT_DIR] = "it is a file: read it with sandbox_read_file",
	[SBX_R_NOT_EMPTY] = "the directory is not empty: pass recursive:true to delete it "
	    "with its contents",
	[SBX_R_NOT_TEXT] = "it is binary: ask for encoding \"base64\"",
	[SBX_R_BAD_BASE64] = "base64 content: standard alphabet, padded, no line breaks",
	[SBX_R_NO_SPACE] = "the sandbox's disk is full: free some with sandbox_delete_path, "
	    "then retry",
};

void
mcp_err_fix(struct sbx_err *e)
{
	const char *h = NULL;

	if (e->tool_hint[0] != '\0')
		return;		/* the tool's own, which knows more */
	if ((unsigned)e->reason < SBX_R_COUNT)
		h = agent_hints[e->reason];
	if (h == NULL && strstr(e->hint, "sbxtop") != NULL)
		/* CLI advice means nothing to an agent: point at the tools. */
		h = e->code == SBX_EAGENT || e->code == SBX_ETIMEOUT ?
		    "call sandbox_status; sandbox_vm_logs shows what the sandbox logged" :
		    "sandbox_status and sandbox_vm_logs say more";
	if (h != NULL)
		snprintf(e->tool_hint, sizeof e->tool_hint, "%s", h);
}

const char *
mcp_err_hint(const struct sbx_err *e)
{
	return e->tool_hint[0] != '\0' ? e->tool_hint : e->hint;
}

char *
mcp_utf8_lossy(const char *s, size_t n)
{
	struct buf b;
	size_t i = 0;

	buf_init(&b, n * 3 + 1);
	buf_append(&b, "", 0);
	while (i < n) {
		unsigned char c = (unsigned char)s[i];
		size_t k = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
		if (c != 0 && i + k <= n && utf8_valid(s + i, k)) {
			buf_append(&b, s + i, k);
			i += k;
		} else {
			buf_append(&b, "\xef\xbf\xbd", 3);
			i++;
		}
	}
	return buf_steal(&b);
}
