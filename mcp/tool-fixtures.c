/* TEST ONLY: the fixture tools the official MCP conformance suites call
 * (test_simple_text, test_error_handling, test_tool_with_logging,
 * test_tool_with_progress; for 2026-07-28 also test_logging_tool,
 * test_missing_capability, and the tasks extension's greet, slow_compute and
 * failing_job).  They touch no sandbox; mcp_tool_find and tools/list see them
 * only under `sbxtop serve --conformance-fixtures`. */
#include <stdio.h>
#include <time.h>

#include "lib/util.h"
#include "mcp/tool.h"
#include "mcp/tool-util.h"

static void
pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0)
		;
}

static int
simple_text(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	*result = cJSON_CreateObject();
	cJSON_AddStringToObject(*result, "text", "This is a simple text response for testing.");
	return 0;
}

static int
error_handling(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	return sbx_error(e, SBX_EINVAL, NULL, "This tool intentionally returns an error for "
	    "testing");
}

static int
with_logging(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	mcp_call_log(call, "info", "Tool execution started");
	pause_ms(50);
	mcp_call_log(call, "info", "Tool processing data");
	pause_ms(50);
	mcp_call_log(call, "info", "Tool execution completed");
	*result = cJSON_CreateObject();
	cJSON_AddNumberToObject(*result, "logged", 3);
	return 0;
}

static int
with_progress(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	/* Spaced beyond the server's progress rate limit (100 ms). */
	for (int i = 0; i <= 2; i++) {
		if (i > 0)
			pause_ms(120);
		mcp_call_progress(call, i * 50, 100, NULL);
	}
	*result = cJSON_CreateObject();
	cJSON_AddNumberToObject(*result, "progress", 100);
	return 0;
}

static int
text_result(cJSON **result, const char *text)
{
	*result = cJSON_CreateObject();
	cJSON_AddStringToObject(*result, "text", text);
	return 0;
}

static int
greet(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	const char *name = mcp_arg_str(args, "name");
	char text[200];

	snprintf(text, sizeof text, "Hello, %.150s!", name ? name : "world");
	return text_result(result, text);
}

/* Sleeps its seconds, a tenth at a time, so a cancel ends it soon. */
static int
slow_compute(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	double secs = mcp_arg_num(args, "seconds", 1);
	int64_t end = now_ms() + (int64_t)(secs * 1000);
	char text[200];

	while (now_ms() < end) {
		if (mcp_call_cancelled(call))
			return sbx_error(e, SBX_EIO, NULL, "cancelled");
		pause_ms(100);
	}
	snprintf(text, sizeof text, "Computed %.100s after %g s", mcp_arg_str(args, "label") ?
	    mcp_arg_str(args, "label") : "result", secs);
	return text_result(result, text);
}

static int
failing_job(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	pause_ms(1000);
	return sbx_error(e, SBX_EIO, NULL, "The job failed, as this fixture always does");
}

static int
missing_capability(struct mcp_call *call, const cJSON *args, cJSON **result,
    struct sbx_err *e)
{
	return text_result(result, "The client declared sampling.");
}

#define NO_ARGS "{\"type\":\"object\",\"properties\":{}}"

static const struct mcp_tool fx_simple_text = {
	"test_simple_text", "Simple text (test fixture)", "Returns a simple text.",
	NO_ARGS, NULL, MCP_READONLY, simple_text, NULL, NULL,
};
static const struct mcp_tool fx_error = {
	"test_error_handling", "Error (test fixture)", "Always fails.",
	NO_ARGS, NULL, MCP_READONLY, error_handling, NULL, NULL,
};
static const struct mcp_tool fx_logging = {
	"test_tool_with_logging", "Logging (test fixture)", "Sends three log messages.",
	NO_ARGS, NULL, MCP_READONLY, with_logging, NULL, NULL,
};
static const struct mcp_tool fx_progress = {
	"test_tool_with_progress", "Progress (test fixture)", "Reports progress 0, 50, 100.",
	NO_ARGS, NULL, MCP_READONLY, with_progress, NULL, NULL,
};

/* Listed, to show JSON Schema 2020-12 keywords ($anchor, allOf and anyOf,
 * if/then/else) pass through tools/list as written (SEP-1613, SEP-2106). */
static const struct mcp_tool fx_schema_2020_12 = {
	"json_schema_2020_12_tool", "JSON Schema 2020-12 (test fixture)",
	"Tool with JSON Schema 2020-12 features",
	"{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\","
	"\"$defs\":{\"address\":{\"$anchor\":\"addressDef\",\"type\":\"object\","
	"\"properties\":{\"street\":{\"type\":\"string\"},\"city\":{\"type\":\"string\"}}}},"
	"\"properties\":{\"name\":{\"type\":\"string\"},\"address\":{\"$ref\":\"#/$defs/address\"},"
	"\"contactMethod\":{\"type\":\"string\",\"enum\":[\"phone\",\"email\"]},"
	"\"phone\":{\"type\":\"string\"},\"email\":{\"type\":\"string\"}},"
	"\"allOf\":[{\"anyOf\":[{\"required\":[\"phone\"]},{\"required\":[\"email\"]}]}],"
	"\"if\":{\"properties\":{\"contactMethod\":{\"const\":\"phone\"}},"
	"\"required\":[\"contactMethod\"]},\"then\":{\"required\":[\"phone\"]},"
	"\"else\":{\"required\":[\"email\"]},\"additionalProperties\":false}",
	NULL, MCP_READONLY, simple_text, NULL, NULL,
};

static const struct mcp_tool fx_logging_2026 = {
	"test_logging_tool", "Logging (test fixture)", "Sends three log messages.",
	NO_ARGS, NULL, MCP_READONLY, with_logging, NULL, NULL,
};
static const struct mcp_tool fx_missing_cap = {
	"test_missing_capability", "Needs sampling (test fixture)",
	"Refused to a client that does not declare sampling.",
	NO_ARGS, NULL, MCP_READONLY | MCP_NEEDS_SAMPLING, missing_capability, NULL, NULL,
};
static const struct mcp_tool fx_greet = {
	"greet", "Greet (test fixture)", "Returns Hello, NAME! at once (never a task).",
	"{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}}}", NULL,
	MCP_READONLY, greet, NULL, NULL,
};
static const struct mcp_tool fx_slow = {
	"slow_compute", "Slow compute (test fixture)",
	"Sleeps for seconds, then answers; a task for a client with the tasks extension.",
	"{\"type\":\"object\",\"properties\":{\"seconds\":{\"type\":\"number\","
	"\"minimum\":0,\"maximum\":600},\"label\":{\"type\":\"string\"}}}", NULL,
	MCP_READONLY | MCP_TASK, slow_compute, NULL, NULL,
};
static const struct mcp_tool fx_failing = {
	"failing_job", "Failing job (test fixture)",
	"Fails after a second; runs only as a task.",
	NO_ARGS, NULL, MCP_READONLY | MCP_TASK | MCP_NEEDS_TASKS, failing_job, NULL, NULL,
};

const struct mcp_tool *const mcp_fixture_tools[] = {
	&fx_simple_text, &fx_error, &fx_logging, &fx_progress, &fx_schema_2020_12,
	&fx_logging_2026, &fx_missing_cap, &fx_greet, &fx_slow, &fx_failing, NULL,
};
