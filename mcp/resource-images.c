/* The resource sbx://images: the OCI images the operator lets agents create
 * sandboxes from (images_allowed), each with whether the store has it, so an
 * agent can choose sandbox_create's `image` without a tool of its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/image/image.h"
#include "mcp/jsonrpc.h"
#include "mcp/session-int.h"
#include "lib/util.h"

#define IMAGES_URI "sbx://images"

void
mcp_images_resource(struct mcp_call *call, cJSON *resources)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "uri", IMAGES_URI);
	cJSON_AddStringToObject(o, "name", "images");
	/* Titles came with 2025-06-18, as the logs' do (server.c). */
	if (call->ri.rev >= REV_2025_06_18)
		cJSON_AddStringToObject(o, "title", "Images for sandbox_create");
	cJSON_AddStringToObject(o, "description", "The images the operator allows as "
	    "sandbox_create's image (a reference, NAME:* any tag, PREFIX/* any below), and "
	    "which are pulled already");
	cJSON_AddStringToObject(o, "mimeType", "application/json");
	cJSON_AddItemToArray(resources, o);
}

cJSON *
mcp_images_read(struct mcp_call *call, const char *uri, int *code, char *msg, size_t len)
{
	cJSON *allowed = NULL, *r, *c;
	struct sbx_err e;
	char *text;

	*code = 0;
	if (strcmp(uri, IMAGES_URI) != 0)
		return NULL;
	if (core_image_allowed(call->core, &allowed, &e) < 0) {
		*code = JSONRPC_INTERNAL_ERROR;
		snprintf(msg, len, "%s", e.msg);
		return NULL;
	}
	cJSON_AddStringToObject(allowed, "note", cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
	    allowed, "images")) > 0 ? "Pass one as sandbox_create's image; one not pulled yet is "
	    "pulled by that create (slower)." : "The operator allows no image: leave out "
	    "sandbox_create's image (the backend's own system).");
	text = cJSON_PrintUnformatted(allowed);
	cJSON_Delete(allowed);
	r = cJSON_CreateObject();
	c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "uri", uri);
	cJSON_AddStringToObject(c, "mimeType", "application/json");
	cJSON_AddStringToObject(c, "text", text);
	free(text);
	cJSON_AddItemToArray(cJSON_AddArrayToObject(r, "contents"), c);
	return r;
}
