/* The activity journal of tool calls: tool.started and tool.finished events
 * on the core's event ring, with the arguments cut down to what a reader of
 * the journal needs (see session-int.h). */
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "lib/utf8.h"
#include "lib/util.h"
#include "mcp/session-int.h"

#define ARG_STR_MAX	200		/* longest argument string kept in an event */
#define ARG_GATE_MAX	8192		/* ... shown to an operator who approves */

/* Arguments as the journal keeps them: file contents and stdin as their size,
 * env values hidden, long strings cut, deep or long structures bounded. */
static cJSON *
elide(const cJSON *v, const char *name, int depth, size_t max)
{
	cJSON *o, *x;
	int i = 0;

	if (cJSON_IsString(v)) {
		size_t n = strlen(v->valuestring);
		if (name != NULL && (strcmp(name, "content") == 0 || strcmp(name, "stdin") == 0)) {
			char t[64];
			snprintf(t, sizeof t, "<%zu bytes>", n);
			return cJSON_CreateString(t);
		}
		if (n <= max)
			return cJSON_CreateString(v->valuestring);
		size_t k = utf8_complete_prefix(v->valuestring, max);
		_cleanup_free_ char *t = xasprintf("%.*s... (%zu bytes)", (int)k, v->valuestring,
		    n);
		return cJSON_CreateString(t);
	}
	if (depth >= 4 && (cJSON_IsObject(v) || cJSON_IsArray(v)))
		return cJSON_CreateString("...");
	if (cJSON_IsObject(v)) {
		int secret = name != NULL && strcmp(name, "env") == 0;
		o = cJSON_CreateObject();
		cJSON_ArrayForEach(x, v) {
			if (i++ == 32)
				break;
			cJSON_AddItemToObject(o, x->string, secret ? cJSON_CreateString("***") :
			    elide(x, x->string, depth + 1, max));
		}
		return o;
	}
	if (cJSON_IsArray(v)) {
		o = cJSON_CreateArray();
		cJSON_ArrayForEach(x, v) {
			if (i++ == 20)
				break;
			cJSON_AddItemToArray(o, elide(x, NULL, depth + 1, max));
		}
		return o;
	}
	return cJSON_Duplicate(v, 1);
}

cJSON *
sess_journal_args(const cJSON *args)
{
	return elide(args, NULL, 0, ARG_STR_MAX);
}

cJSON *
sess_gate_args(const cJSON *args)
{
	/* The operator decides on what the call would do: paths whole. */
	return elide(args, NULL, 0, ARG_GATE_MAX);
}

static const char *
call_sandbox(const cJSON *args)
{
	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(args, "sandbox_id"));
}

/* Who called, as every tool event says it: the client, its kind and
 * transport, and for a 2026-07-28 request its protocol and task. */
static void
add_caller(cJSON *d, const struct mcp_call *call)
{
	cJSON_AddStringToObject(d, "tool", call->tool->name);
	cJSON_AddStringToObject(d, "client", call->ri.client[0] ? call->ri.client : "unknown");
	cJSON_AddStringToObject(d, "kind", call->kind ? call->kind : "mcp");
	cJSON_AddStringToObject(d, "origin", call->origin ? call->origin : "local");
	if (call->key_name != NULL) {
		/* The API key it came with: its name, never the key. */
		cJSON_AddStringToObject(d, "key", call->key_name);
		cJSON_AddStringToObject(d, "key_id", call->key_id);
	}
	cJSON_AddStringToObject(d, "protocol", sess_rev_names[call->ri.rev]);
	cJSON_AddItemToObject(d, "request_id", cJSON_Duplicate(call->id, 1));
	if (call->task != NULL)
		cJSON_AddStringToObject(d, "task_id", sess_task_id(call->task));
}

void
sess_journal_started(struct mcp_call *call, const cJSON *args)
{
	cJSON *d = cJSON_CreateObject();

	add_caller(d, call);
	cJSON_AddItemToObject(d, "arguments", elide(args, NULL, 0, ARG_STR_MAX));
	core_events_emit(call->core, "tool.started", call_sandbox(args), d);
}

void
sess_journal_finished(struct mcp_call *call, const cJSON *args, int64_t t0,
    const char *outcome, const char *message)
{
	cJSON *d = cJSON_CreateObject();

	/* The client sees its own calls too, at debug level (logging/setLevel). */
	if (strcmp(outcome, "cancelled") != 0)
		mcp_call_log(call, "debug", "%s: %s in %lld ms%s%.300s", call->tool->name,
		    outcome, (long long)(now_ms() - t0), message ? ": " : "",
		    message ? message : "");

	add_caller(d, call);
	cJSON_AddNumberToObject(d, "duration_ms", (double)(now_ms() - t0));
	cJSON_AddStringToObject(d, "outcome", outcome);
	if (message != NULL)
		cJSON_AddStringToObject(d, "message", message);
	core_events_emit(call->core, "tool.finished", call_sandbox(args), d);
}
