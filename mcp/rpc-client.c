/* MCP from the client's side (rpc-client.h): initialize and tools/call over
 * the core server's connection. */
#include <stdio.h>
#include <string.h>

#include "lib/util.h"
#include "mcp/budget.h"
#include "mcp/rpc-client.h"

int
mcp_client_initialize(struct client *c, const char *name, const char *version,
    struct sbx_err *e)
{
	cJSON *p = cJSON_CreateObject(), *ci;
	int rc;

	cJSON_AddStringToObject(p, "protocolVersion", MCP_CLIENT_PROTOCOL);
	cJSON_AddObjectToObject(p, "capabilities");
	/* A person scrolls: the largest results the server gives. */
	cJSON_AddNumberToObject(cJSON_AddObjectToObject(p, "_meta"), MCP_BUDGET_META,
	    MCP_BUDGET_MAX);
	ci = cJSON_AddObjectToObject(p, "clientInfo");
	cJSON_AddStringToObject(ci, "name", name);
	cJSON_AddStringToObject(ci, "version", version);
	rc = client_call(c, "initialize", p, NULL, e);
	cJSON_Delete(p);
	return rc;
}

int
mcp_client_tool_result(cJSON *res, cJSON **result, struct sbx_err *e)
{
	const cJSON *content = cJSON_GetObjectItem(res, "content");
	const cJSON *c0 = cJSON_GetArrayItem(content, 0);
	const char *text = cJSON_GetStringValue(cJSON_GetObjectItem(c0, "text"));
	cJSON *sc;

	if (result)
		*result = NULL;
	if (!cJSON_IsObject(res)) {
		cJSON_Delete(res);
		return sbx_error(e, SBX_EINTERNAL, NULL, "a tool's answer is not an object");
	}
	if (cJSON_IsTrue(cJSON_GetObjectItem(res, "isError"))) {
		sbx_error(e, SBX_EINTERNAL, NULL, "%s", text && *text ? text : "the tool failed");
		cJSON_Delete(res);
		return -1;
	}
	sc = cJSON_DetachItemFromObject(res, "structuredContent");
	/* A server that gives text alone carries the same object as JSON text. */
	if (sc == NULL && text != NULL)
		sc = cJSON_Parse(text);
	cJSON_Delete(res);
	if (result)
		*result = sc;
	else
		cJSON_Delete(sc);
	return 0;
}

int
mcp_client_call_tool(struct client *c, const char *tool, cJSON *args, cJSON **result,
    struct sbx_err *e)
{
	cJSON *p = cJSON_CreateObject(), *res = NULL;
	int rc;

	if (result)
		*result = NULL;
	cJSON_AddStringToObject(p, "name", tool);
	cJSON_AddItemToObject(p, "arguments", args ? args : cJSON_CreateObject());
	rc = client_call(c, "tools/call", p, &res, e);
	cJSON_Delete(p);
	if (rc < 0)
		return -1;
	return mcp_client_tool_result(res, result, e);
}
