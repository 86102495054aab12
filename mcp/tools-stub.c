/* STUB, replaced at merge: the tool table and two minimal tools, so the protocol
 * layer can be tested end to end before the real tools (mcp/tool-*.c and
 * mcp/tools.c, another branch) land.  Delete this file when they do. */
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/utf8.h"
#include "core/util.h"
#include "mcp/tool.h"

#define STUB_OUTPUT_MAX	(1u << 20)

/* --- sandbox_list ------------------------------------------------------- */

static cJSON *
summary(const struct sandbox *s)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "sandbox_id", s->id);
	if (s->name)
		cJSON_AddStringToObject(o, "name", s->name);
	cJSON_AddStringToObject(o, "backend", s->backend ? s->backend : "");
	cJSON_AddStringToObject(o, "state", sbx_state_name(s->state));
	cJSON_AddNumberToObject(o, "created_at", (double)s->created_at);
	cJSON_AddNumberToObject(o, "expires_at", (double)s->expires_at);
	return o;
}

static int
list_run(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	struct sandbox **v;
	size_t n;
	cJSON *a;

	if (core_list(mcp_call_core(call), &v, &n, e) < 0)
		return -1;
	*result = cJSON_CreateObject();
	a = cJSON_AddArrayToObject(*result, "sandboxes");
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(a, summary(v[i]));
	cJSON_AddArrayToObject(*result, "vanished");
	core_list_free(v, n);
	return 0;
}

static const struct mcp_tool stub_list = {
	.name = "sandbox_list",
	.title = "List sandboxes",
	.description = "Every known sandbox with its state and deadline.",
	.input_schema = "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
	.output_schema = "{\"type\":\"object\",\"properties\":{"
	    "\"sandboxes\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}},"
	    "\"vanished\":{\"type\":\"array\"}},\"required\":[\"sandboxes\",\"vanished\"]}",
	.hints = MCP_READONLY | MCP_IDEMPOTENT,
	.run = list_run,
};

/* --- sandbox_exec ------------------------------------------------------- */

struct exec_out {
	struct mcp_call	*call;
	struct buf	 out[2];
	size_t		 bytes;
	char		 last[256];	/* the latest line, for progress */
};

static int
exec_output(int stream, const char *data, size_t len, void *arg)
{
	struct exec_out *x = arg;
	const char *p = data + len;

	if (mcp_call_cancelled(x->call))
		return -1;
	buf_append_some(&x->out[stream == 2], data, len);
	x->bytes += len;
	/* The last complete line of this chunk, or its start. */
	while (p > data && p[-1] == '\n')
		p--;
	const char *q = p;
	while (q > data && q[-1] != '\n')
		q--;
	snprintf(x->last, sizeof x->last, "%.*s", (int)(p - q), q);
	x->last[utf8_complete_prefix(x->last, strlen(x->last))] = '\0';
	mcp_call_progress(x->call, (double)x->bytes, 0, x->last);
	return 0;
}

static cJSON *
text_or_empty(struct buf *b)
{
	if (b->data == NULL || !utf8_valid(b->data, b->len))
		return cJSON_CreateString("");
	return cJSON_CreateString(b->data);
}

static int
exec_run(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	struct core_exec_opts o = { .origin = "mcp" };
	struct core_exec_result res;
	struct exec_out x = { .call = call };
	int rc;

	o.command = cJSON_GetStringValue(cJSON_GetObjectItem(args, "command"));
	o.cwd = cJSON_GetStringValue(cJSON_GetObjectItem(args, "cwd"));
	o.timeout_s = (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(args, "timeout_s"));
	if (o.timeout_s <= 0)
		o.timeout_s = 120;
	o.cancel = mcp_call_cancel_flag(call);
	buf_init(&x.out[0], STUB_OUTPUT_MAX);
	buf_init(&x.out[1], STUB_OUTPUT_MAX);
	rc = core_exec(mcp_call_core(call), cJSON_GetStringValue(cJSON_GetObjectItem(args,
	    "sandbox_id")), &o, exec_output, &x, &res, e);
	if (rc == 0) {
		*result = cJSON_CreateObject();
		cJSON_AddNumberToObject(*result, "exit_code", res.exit_code);
		cJSON_AddNumberToObject(*result, "signal", res.signo);
		cJSON_AddItemToObject(*result, "stdout", text_or_empty(&x.out[0]));
		cJSON_AddItemToObject(*result, "stderr", text_or_empty(&x.out[1]));
		cJSON_AddNumberToObject(*result, "duration_ms", (double)res.duration_ms);
		cJSON_AddBoolToObject(*result, "timed_out", res.timed_out);
		cJSON_AddBoolToObject(*result, "truncated", res.truncated);
		cJSON_AddStringToObject(*result, "exec_id", res.exec_id);
		free(res.log_path);
	}
	buf_free(&x.out[0]);
	buf_free(&x.out[1]);
	return rc;
}

static const struct mcp_tool stub_exec = {
	.name = "sandbox_exec",
	.title = "Run a command",
	.description = "Run a shell command in a sandbox and return its output and exit "
	    "code; output streams as progress.",
	.input_schema = "{\"type\":\"object\",\"properties\":{"
	    "\"sandbox_id\":{\"type\":\"string\",\"minLength\":1},"
	    "\"command\":{\"type\":\"string\",\"minLength\":1},"
	    "\"cwd\":{\"type\":\"string\"},"
	    "\"timeout_s\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":3600}},"
	    "\"required\":[\"sandbox_id\",\"command\"],\"additionalProperties\":false}",
	.output_schema = "{\"type\":\"object\",\"properties\":{"
	    "\"exit_code\":{\"type\":\"integer\"},\"signal\":{\"type\":\"integer\"},"
	    "\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"
	    "\"duration_ms\":{\"type\":\"integer\"},\"timed_out\":{\"type\":\"boolean\"},"
	    "\"truncated\":{\"type\":\"boolean\"},\"exec_id\":{\"type\":\"string\"}},"
	    "\"required\":[\"exit_code\",\"stdout\",\"stderr\"]}",
	.hints = MCP_DESTRUCTIVE | MCP_OPENWORLD,
	.run = exec_run,
};

const struct mcp_tool *const mcp_tools[] = {
	&stub_list,
	&stub_exec,
	NULL,
};

const struct mcp_tool *
mcp_tool_find(const char *name)
{
	for (size_t i = 0; mcp_tools[i] != NULL; i++)
		if (strcmp(mcp_tools[i]->name, name) == 0)
			return mcp_tools[i];
	return NULL;
}
