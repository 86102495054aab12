/* A validator for the JSON Schema subset the tools' schemas use: type (object,
 * string, integer, number, boolean, array, null, or a list of them), properties,
 * required, enum, minimum/maximum, minLength/maxLength, items, minItems/maxItems,
 * additionalProperties (false or a schema).  Anything else in a schema is
 * ignored, so a schema may say more than is checked here but never less. */
#ifndef SBX_MCP_SCHEMA_H
#define SBX_MCP_SCHEMA_H

#include <stddef.h>
#include <cjson/cJSON.h>

/* 0 when value matches schema; -1 with a message naming the field (as a path,
 * "env.PATH", "exclude[2]") and what was expected. */
int schema_check(const cJSON *schema, const cJSON *value, char *msg, size_t len);

#endif
