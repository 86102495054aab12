/* TEST ONLY: the fixture tools the official MCP conformance suite calls
 * (test_simple_text, test_error_handling, test_tool_with_logging,
 * test_tool_with_progress).  They touch no sandbox; mcp_tool_find and tools/list
 * see them only under `sbxtop serve --conformance-fixtures`. */
#include <time.h>

#include "mcp/tool.h"

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

#define NO_ARGS "{\"type\":\"object\",\"properties\":{}}"

static const struct mcp_tool fx_simple_text = {
	"test_simple_text", "Simple text (test fixture)", "Returns a simple text.",
	NO_ARGS, NULL, MCP_READONLY, simple_text,
};
static const struct mcp_tool fx_error = {
	"test_error_handling", "Error (test fixture)", "Always fails.",
	NO_ARGS, NULL, MCP_READONLY, error_handling,
};
static const struct mcp_tool fx_logging = {
	"test_tool_with_logging", "Logging (test fixture)", "Sends three log messages.",
	NO_ARGS, NULL, MCP_READONLY, with_logging,
};
static const struct mcp_tool fx_progress = {
	"test_tool_with_progress", "Progress (test fixture)", "Reports progress 0, 50, 100.",
	NO_ARGS, NULL, MCP_READONLY, with_progress,
};

/* Listed, to show JSON Schema 2020-12 keywords pass through tools/list intact. */
static const struct mcp_tool fx_schema_2020_12 = {
	"json_schema_2020_12_tool", "JSON Schema 2020-12 (test fixture)",
	"Tool with JSON Schema 2020-12 features",
	"{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\","
	"\"$defs\":{\"address\":{\"type\":\"object\",\"properties\":{\"street\":{\"type\":"
	"\"string\"},\"city\":{\"type\":\"string\"}}}},\"properties\":{\"name\":{\"type\":"
	"\"string\"},\"address\":{\"$ref\":\"#/$defs/address\"}},\"additionalProperties\":false}",
	NULL, MCP_READONLY, simple_text,
};

const struct mcp_tool *const mcp_fixture_tools[] = {
	&fx_simple_text, &fx_error, &fx_logging, &fx_progress, &fx_schema_2020_12, NULL,
};
