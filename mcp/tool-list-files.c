/* sandbox_list_files: a directory of the sandbox, or its tree breadth first (the
 * workspace first, big directories and dependency or cache folders counted but
 * not entered), a page within the call's budget with the listing's total and a
 * cursor for the next. */
#include <math.h>
#include <string.h>

#include "lib/jspec.h"
#include "lib/util.h"
#include "mcp/budget.h"
#include "mcp/tool-util.h"

#define FOLD		100	/* a directory with more entries is not entered */
#define STATUS_ROOM	600	/* of the budget: the line before the entries */
#define ENTRY_MIN	60	/* the least an entry costs, for asking the agent */

/* Directories a tree listing counts but does not enter: what tools made, not
 * the agent's own work. */
static const char *const fold_names[] = { "node_modules", "__pycache__", ".git", ".venv",
	"venv", ".cache", ".npm", ".tox", ".mypy_cache", ".pytest_cache", NULL };

static cJSON *
entry(const cJSON *it)
{
	cJSON *o = cJSON_CreateObject();
	const char *p = cJSON_GetStringValue(cJSON_GetObjectItem(it, "path"));
	const char *t = cJSON_GetStringValue(cJSON_GetObjectItem(it, "type"));
	const char *target = cJSON_GetStringValue(cJSON_GetObjectItem(it, "target"));
	const char *folded = cJSON_GetStringValue(cJSON_GetObjectItem(it, "folded"));
	double size = cJSON_GetNumberValue(cJSON_GetObjectItem(it, "size"));
	double mt = cJSON_GetNumberValue(cJSON_GetObjectItem(it, "mtime_ms"));
	double n = cJSON_GetNumberValue(cJSON_GetObjectItem(it, "entries"));
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
	if (!isnan(n))
		cJSON_AddNumberToObject(o, "entries", n);
	if (folded != NULL)
		cJSON_AddStringToObject(o, "folded", folded);
	for (const char *const *k = (const char *const[]){ "path_b64", "target_b64", NULL };
	    *k != NULL; k++)
		if (cJSON_IsString(cJSON_GetObjectItem(it, *k)) && !cJSON_HasObjectItem(o, *k))
			cJSON_AddStringToObject(o, *k, cJSON_GetObjectItem(it, *k)->valuestring);
	return o;
}

static int
run(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	const char *id = mcp_arg_need(args, "sandbox_id", e), *path;
	size_t budget = mcp_call_budget(call), used = 0, room;
	int64_t offset, max = mcp_arg_int(args, "max_entries", 100000), shown = 0;
	char origin[96], cur[32];
	cJSON *req, *ans = NULL, *arr, *names;
	const cJSON *it;
	int rc, more;

	if (id == NULL)
		return -1;
	if (mcp_arg_cursor(args, &offset, e) < 0)
		return -1;
	room = budget > 2 * STATUS_ROOM ? budget - STATUS_ROOM : budget / 2;
	if (max > (int64_t)(room / ENTRY_MIN))
		max = (int64_t)(room / ENTRY_MIN);
	req = cJSON_CreateObject();
	if ((path = mcp_arg_str(args, "path")) != NULL)
		cJSON_AddStringToObject(req, "path", path);
	cJSON_AddBoolToObject(req, "recursive", mcp_arg_bool(args, "recursive", 0));
	cJSON_AddBoolToObject(req, "hidden", mcp_arg_bool(args, "include_hidden", 0));
	cJSON_AddNumberToObject(req, "max_entries", (double)max);
	cJSON_AddStringToObject(req, "order", "breadth");
	cJSON_AddNumberToObject(req, "offset", (double)offset);
	cJSON_AddNumberToObject(req, "fold", FOLD);
	names = cJSON_AddArrayToObject(req, "fold_names");
	for (size_t i = 0; fold_names[i] != NULL; i++)
		cJSON_AddItemToArray(names, cJSON_CreateString(fold_names[i]));
	mcp_origin(call, origin, sizeof origin);
	rc = core_files(mcp_call_core(call), id, "list", req, origin, &ans, e);
	cJSON_Delete(req);
	if (rc < 0) {
		if (e->reason == SBX_R_NOT_DIR)
			snprintf(e->tool_hint, sizeof e->tool_hint, "it is a file: read it with "
			    "sandbox_read_file");
		else if (e->reason == SBX_R_NOT_FOUND)
			snprintf(e->tool_hint, sizeof e->tool_hint, "relative paths start at "
			    "/workspace; list its parent to see what is there");
		mcp_err_fix(e);
		return -1;
	}
	*result = cJSON_CreateObject();
	cJSON_AddItemToObject(*result, "path", cJSON_DetachItemFromObject(ans, "path"));
	cJSON_AddBoolToObject(*result, "recursive", mcp_arg_bool(args, "recursive", 0));
	arr = cJSON_AddArrayToObject(*result, "entries");
	/* As many as the budget holds: the rest is the next page. */
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(ans, "entries")) {
		cJSON *o = entry(it);
		size_t n = mcp_json_size(o) + 1;
		if (used + n > room) {
			cJSON_Delete(o);
			break;
		}
		used += n;
		cJSON_AddItemToArray(arr, o);
		shown++;
	}
	cJSON_AddNumberToObject(*result, "total",
	    cJSON_GetNumberValue(cJSON_GetObjectItem(ans, "total")));
	if (cJSON_IsTrue(cJSON_GetObjectItem(ans, "total_capped")))
		cJSON_AddBoolToObject(*result, "total_capped", 1);
	cJSON_AddNumberToObject(*result, "offset", (double)offset);
	more = shown < cJSON_GetArraySize(cJSON_GetObjectItem(ans, "entries")) ||
	    cJSON_IsTrue(cJSON_GetObjectItem(ans, "truncated"));
	cJSON_AddBoolToObject(*result, "truncated", more);
	if (more)
		cJSON_AddStringToObject(*result, "next_cursor",
		    mcp_cursor_make(offset + shown, cur, sizeof cur));
	cJSON_Delete(ans);
	return 0;
}

static void
render(const cJSON *r, struct mcp_text *t)
{
	const cJSON *it, *arr = cJSON_GetObjectItem(r, "entries");
	double total = cJSON_GetNumberValue(cJSON_GetObjectItem(r, "total"));
	double off = cJSON_GetNumberValue(cJSON_GetObjectItem(r, "offset"));
	const char *next = cJSON_GetStringValue(cJSON_GetObjectItem(r, "next_cursor"));
	int n = cJSON_GetArraySize(arr);
	char a[32];

	mcp_text_printf(t, "%s%s: %s%s entr%s in total", cJSON_GetStringValue(cJSON_GetObjectItem(r,
	    "path")), cJSON_IsTrue(cJSON_GetObjectItem(r, "recursive")) ?
	    " (its tree, level by level, the workspace first)" : "",
	    cJSON_IsTrue(cJSON_GetObjectItem(r, "total_capped")) ? "more than " : "",
	    mcp_fmt_count((uint64_t)total, a, sizeof a), total == 1 ? "y" : "ies");
	mcp_text_page(t, (uint64_t)off, (size_t)n, next);
	cJSON_ArrayForEach(it, arr) {
		const char *p = cJSON_GetStringValue(cJSON_GetObjectItem(it, "path"));
		const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(it, "type"));
		const char *target = cJSON_GetStringValue(cJSON_GetObjectItem(it, "target"));
		const char *folded = cJSON_GetStringValue(cJSON_GetObjectItem(it, "folded"));
		double size = cJSON_GetNumberValue(cJSON_GetObjectItem(it, "size"));
		double cnt = cJSON_GetNumberValue(cJSON_GetObjectItem(it, "entries"));

		mcp_text_printf(t, "\n%s", p);
		if (strcmp(type, "dir") == 0) {
			mcp_text_add(t, "/", 1);
			if (!isnan(cnt))
				mcp_text_printf(t, "  %s entr%s", mcp_fmt_count((uint64_t)cnt, a,
				    sizeof a), cnt == 1 ? "y" : "ies");
			if (folded == NULL)
				continue;
			if (strcmp(folded, "big") == 0 || strcmp(folded, "depth") == 0)
				mcp_text_add(t, ", not listed: list it on its own", 32);
			else if (strcmp(folded, "name") == 0)
				mcp_text_add(t, ", not listed: tools' files", 26);
			else if (strcmp(folded, "filesystem") == 0)
				mcp_text_add(t, ", not listed: a kernel filesystem", 33);
			else
				mcp_text_add(t, "  (cannot be read)", 18);
		} else if (strcmp(type, "symlink") == 0) {
			mcp_text_printf(t, " -> %s", target ? target : "?");
		} else if (strcmp(type, "file") == 0) {
			mcp_text_printf(t, "  %s", mcp_fmt_size((uint64_t)size, a, sizeof a));
		} else {
			mcp_text_add(t, "  (not a file, directory or link)", 33);
		}
	}
}

const struct mcp_tool mcp_tool_list_files = {
	.name = "sandbox_list_files",
	.title = "List files",
	.description =
	    "List a directory (default /workspace), or with recursive:true "
	    "its tree level by level, big and dependency folders counted,"
	    " not entered.",
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{" MCP_SANDBOX_ID_PROP
	    ",\"path\":{\"type\":\"string\"},\"recursive\":{\"type\":\"boolean\""
	    "},\"include_hidden\":{\"type\":\"boolean\"},\"cursor\":{\"type\":\""
	    "string\"},\"max_entries\":{\"type\":\"integer\"}},\"required\":[\""
	    "sandbox_id\"]}",
	.output_schema =
	    "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\""
	    "},\"recursive\":{\"type\":\"boolean\"},\"entries\":{\"type\":\"arr"
	    "ay\",\"items\":{\"type\":\"object\",\"properties\":{\"path\":{\"ty"
	    "pe\":\"string\"},\"type\":{\"enum\":[\"file\",\"dir\",\"symlink\","
	    "\"other\"]},\"size\":{\"type\":\"integer\"},\"mtime\":{\"type\":\""
	    "string\"},\"entries\":{\"type\":\"integer\"},\"folded\":{\"type\":"
	    "\"string\"},\"target\":{\"type\":\"string\"},\"path_b64\":{\"type\""
	    ":\"string\"},\"target_b64\":{\"type\":\"string\"}},\"required\":[\""
	    "path\",\"type\",\"size\",\"mtime\"]}},\"total\":{\"type\":\"intege"
	    "r\"},\"total_capped\":{\"type\":\"boolean\"},\"offset\":{\"type\":"
	    "\"integer\"},\"truncated\":{\"type\":\"boolean\"},\"next_cursor\":"
	    "{\"type\":\"string\"}},\"required\":[\"path\",\"entries\","
	    "\"total\",\"truncated\"]}",
	.hints = MCP_READONLY | MCP_IDEMPOTENT,
	.run = run,
	.render = render,
};
