/* Fuzz target: the JSON-RPC reader of the MCP server, the first code a client's
 * bytes meet.  Arbitrary bytes go through jsonrpc_parse; whatever it accepts must
 * hold what it promised (a request has a method and a string or integer id,
 * params an object), and the error or result it would answer with must itself
 * be a well-formed response.  The params then go through the schema validator
 * with a schema shaped like sandbox_exec's. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/jsonrpc.h"
#include "mcp/schema.h"

static const char exec_schema[] = "{\"type\":\"object\",\"properties\":{"
	"\"sandbox_id\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":64},"
	"\"command\":{\"type\":\"string\"},"
	"\"timeout_s\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":3600},"
	"\"network\":{\"type\":\"string\",\"enum\":[\"none\",\"egress\"]},"
	"\"cpus\":{\"type\":\"number\",\"minimum\":0.1},"
	"\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
	"\"exclude\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"maxItems\":8},"
	"\"as_root\":{\"type\":\"boolean\"},"
	"\"opt\":{\"type\":[\"string\",\"null\"]}},"
	"\"required\":[\"sandbox_id\"],\"additionalProperties\":false}";

static cJSON *schema;

static void
check_response(char *text, const cJSON *want_id)
{
	struct jsonrpc_msg m;
	struct jsonrpc_fault f;

	if (text == NULL || jsonrpc_parse(text, strlen(text), &m, &f) < 0)
		abort();
	if (m.kind != JSONRPC_RESPONSE)
		abort();
	if (want_id != NULL && !jsonrpc_id_equal(m.id, want_id))
		abort();
	jsonrpc_msg_free(&m);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jsonrpc_msg m;
	struct jsonrpc_fault f;
	char msg[256];

	if (schema == NULL && (schema = cJSON_Parse(exec_schema)) == NULL)
		abort();
	if (jsonrpc_parse((const char *)data, size, &m, &f) < 0) {
		if (f.code != JSONRPC_PARSE_ERROR && f.code != JSONRPC_INVALID_REQUEST &&
		    f.code != JSONRPC_INVALID_PARAMS)
			abort();
		if (f.message[0] == '\0' || f.message[sizeof f.message - 1] != '\0')
			abort();
		check_response(jsonrpc_error(f.id, f.code, f.message, NULL), f.id);
		cJSON_Delete(f.id);
		return 0;
	}
	switch (m.kind) {
	case JSONRPC_REQUEST:
		if (m.method == NULL || m.method[0] == '\0' || m.id == NULL)
			abort();
		if (!cJSON_IsString(m.id) && !(cJSON_IsNumber(m.id) &&
		    floor(m.id->valuedouble) == m.id->valuedouble))
			abort();
		check_response(jsonrpc_result(m.id, cJSON_Duplicate(m.params, 1)), m.id);
		break;
	case JSONRPC_NOTIFICATION:
		if (m.method == NULL || m.id != NULL)
			abort();
		break;
	case JSONRPC_RESPONSE:
		if (m.id == NULL || m.method != NULL)
			abort();
		break;
	}
	if (m.params != NULL && !cJSON_IsObject(m.params))
		abort();
	memset(msg, 0x55, sizeof msg);
	if (m.params != NULL && schema_check(schema, m.params, msg, sizeof msg) < 0) {
		size_t n = strnlen(msg, sizeof msg);
		if (n == 0 || n == sizeof msg)
			abort();	/* a refusal says why, within the buffer */
	} else if (m.params != NULL) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(m.params, "sandbox_id");
		if (!cJSON_IsString(id) || id->valuestring[0] == '\0')
			abort();	/* accepted: the required field is there */
	}
	jsonrpc_msg_free(&m);
	return 0;
}
